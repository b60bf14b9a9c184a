// posewire encoder in JavaScript: MediaPipe landmarks (+ face blendshapes) -> the normalized
// pose vector, its tracking states and the producer's report (spec §2.2–§2.4, §3.1,
// §4.1–§4.6). A plain ES module (no build step), for a browser page or Node.
//
// It is the reference encoder's single-frame path (producers/landmarks_single.py,
// producers/hand_single.py, producers/face.py blendshape_dims1) written again: the same
// steps, formulas, order of operations, thresholds and reports. The conformance op
// `encoder.landmarks` (spec §6.10, spec/conformance/encoder.json) pins it, within 1e-7.
//
// Also here, for the live producer (the capture page): LiveCalibration (spec §4.1, running
// medians as producers/live.py) and the One-Euro filter (producers/filter.py).

import { REGISTRY, units as calibrationUnits, arkitToDims, CodecError, PALM_CLAMP_TARGET } from './codec.mjs';

const DIMS = REGISTRY.dimensions;
export const N_DIMS = DIMS.length;
const INDEX = new Map(DIMS.map((d) => [d.id, d.index]));
const idx = (id) => INDEX.get(id);
const LOWER = DIMS.map((d) => (d.polarity === 'unipolar' ? 0 : -1)); // spec §3.1 bounds
const UPPER = DIMS.map(() => 1);
export const TRACKING_PARTS = REGISTRY.conditions.find((c) => c.id === 'tracking').keys;
const ARKIT = REGISTRY.arkit_channels;
const FACE_DIMS = DIMS.filter((d) => d.group === 'face' || d.group === 'mouth');
const UNOBSERVED_BY_BLENDSHAPES = ['m_tongue']; // spec §4.6: no tongue in MediaPipe's blendshapes
const maxOf = (id) => DIMS[idx(id)].max;

// ---------------------------------------------------------------------------- tables
// landmarks.py (spec §2.2, §4.1, §4.5)
export const POSE_POINTS = { nose: 0, ear_l: 7, ear_r: 8, shoulder_l: 11, shoulder_r: 12, elbow_l: 13, elbow_r: 14,
  wrist_l: 15, wrist_r: 16, hip_l: 23, hip_r: 24 };
export const FACE_POINTS = { eye_outer_r: 33, eye_outer_l: 263, forehead: 10, chin: 152 };
// spec §4.4 "The face's rotation": landmarks.HEAD_REFERENCE (mesh index -> the reference point, cm)
const HEAD_REFERENCE = [[4, [0.0, -0.3699, 7.5917]], [6, [0.0, 2.5442, 5.7578]], [9, [0.0, 4.9518, 5.3248]],
  [10, [0.0, 8.3162, 4.3797]], [33, [-4.4459, 2.7028, 3.1405]], [127, [-7.7431, 2.3402, -2.0341]],
  [133, [-1.8564, 2.6312, 3.7259]], [151, [0.0, 6.6067, 4.9465]], [168, [0.0, 3.3351, 5.1954]],
  [195, [0.0, 1.1426, 6.7611]], [197, [0.0, 1.8058, 6.295]], [263, [4.4459, 2.7028, 3.1405]],
  [356, [7.7431, 2.3402, -2.0341]], [362, [1.8564, 2.6312, 3.7259]]];
const HEAD_FIT_MIN = 6;
const HEAD_FIT_SQUARINGS = 8;
const TRUNK_MODEL = [[0.1, 0.0], [0.08, 0.1], [0.08, 0.25], [0.08, 0.5], [0.08, 0.75], [0.08, 1.0]]; // spec §4.5
const EPS = 1e-9;
const MIN_LENGTH = 1e-6;
const MIN_CROSS = 1e-9;
const STRAIGHT_ARM = 0.01;
const SECANT_STEPS = 6;
const SECANT_TOL = 1e-13;
const SECANT_MIN_DENOM = 1e-15;
const BODY_PLAUSIBLE = 1.5;
const MIRROR_MIN_SINE = 0.3;
const SWAP_DISTANCE_RATIO = 0.5;
const TRUNK_LENGTH = TRUNK_MODEL.reduce((a, [l]) => a + l, 0); // 0.5
// Σ w·C / Σ w, summed as numpy's dot then divided (0.41600000000000004)
const TRUNK_SHARE = TRUNK_MODEL.reduce((a, [l, c]) => a + l * c, 0) / TRUNK_LENGTH;
const TRUNK_STILL = TRUNK_MODEL.filter(([, c]) => c === 0).reduce((a, [l]) => a + l, 0);
const TRUNK_TURNING = TRUNK_MODEL.filter(([, c]) => c !== 0);
const BODY_MAX = ['b_yaw', 'b_pitch', 'b_roll'].map(maxOf);
const HEAD_MAX = ['h_yaw', 'h_pitch', 'h_roll'].map(maxOf);
const GIMBAL_EPS = 1e-9;
const CLAMP_REPORT_TOL = 1e-9;
const ARM_MAX = 2.5; // spec §4.1: n = sign · p / (2.5 L)
const ARM_SIGN = { r: [-1, 1, 1], l: [1, 1, 1] }; // spec §3.2
const PALM_CLAMP = 0.98; // spec §3.3, §4.2
// elbow.py (spec §4.1 "Elbow spread")
const ELBOW_REFERENCE = [0.0, -1.0, -0.25];
const ELBOW_LATERAL = { l: [1, 0, 0], r: [-1, 0, 0] };
const FIXED_SENSE = { l: 1, r: -1 };
const REF_PARALLEL = 1e-9;
const Z_PARALLEL = 1e-6;
const SENSE_MIN = 1e-6;
// hand.py (spec §2.4, §4.2, §4.3)
// finger rows (no side suffix) as producers/hand.py _FINGER_ROWS: curl, fold, side per finger,
// the thumb roll, then each finger's distal bend (the registry's order, spec §4.3)
const FINGERS5 = ['thumb', 'index', 'middle', 'ring', 'pinky'];
const FINGER_ROWS = [...FINGERS5.flatMap((f) => ['curl', 'fold', 'side'].map((k) => `g_${f}_${k}`)), 'g_thumb_roll',
  ...FINGERS5.map((f) => `g_${f}_distal`)];
const angleDeg = (row) => DIMS[idx(`${row}_r`)].angle_deg; // the same on both sides
const FINGER_DEG = FINGER_ROWS.map(angleDeg);
const FINGER_NEUTRAL = FINGER_ROWS.map((r) => DIMS[idx(`${r}_r`)].neutral_deg ?? 0);
const SIDE_SLOTS = [5, 8, 11, 14];
const ROLL = FINGER_ROWS.indexOf('g_thumb_roll');
// (curl, distal, fold, side) slots of each finger in the finger rows, thumb first
const SLOTS = FINGERS5.map((f) => ['curl', 'distal', 'fold', 'side'].map((k) => FINGER_ROWS.indexOf(`g_${f}_${k}`)));
const CHAINS = [[5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16], [17, 18, 19, 20]];
const THUMB_CHAIN = [1, 2, 3, 4];
const THUMB_REST = [0.6, 0.8, 0.0];
const THUMB_SIDE_AXIS = [0.8, -0.6, 0.0];
const FLAT_LATERAL = 1e-18;
const OBSERVABLE_BEND = 0.2783462019201309; // 2·sin(8°): the bend axis is seen past ~16° of bend
const PALM_MIN_SINE = 1e-6;
const DEPTH_FLIP_FOLD_DEG = 60.0;
const DEPTH_REPAIR_SCALES = [0.5, 2.0, 0.0, -1.0]; // spec §4.3 "Depth repair"
const SPLAY = [20, 10, 10, 5]; // index…pinky relaxed splay σ (the side rows' neutral_deg)
// index…pinky [PIP (curl), DIP (distal)] ranges, degrees at |n| = 1 (spec §4.3 "Joint ranges")
// how far a PIP, a DIP and a base knuckle bend backward in a real hand, spec §4.3 "Joint ranges"
const PIP_EXTENSION_DEG = 10.0; const DIP_EXTENSION_DEG = 20.0; const MCP_EXTENSION_DEG = 45.0;
const RANGES = FINGERS5.slice(1).map((f) => [angleDeg(`g_${f}_curl`), angleDeg(`g_${f}_distal`)]);
const SIDE_RANGE_DEG = 30.0; const FOLD_RANGE_DEG = 120.0;
const W_WRIST = 0; const W_INDEX = 5; const W_MIDDLE = 9; const W_PINKY = 17;
const DEG = 180.0 / Math.PI; // np.degrees' factor

export const MIRRORED_NOTE = 'mirrored';
const PALM_CLAMP_KEY = (s) => `w_q_${s} (|v| > 0.98)`;
const HEAD_CLAMP_KEY = 'h_* (angle beyond max)';
const BODY_CLAMP_KEY = 'b_* (angle beyond max)';

// ---------------------------------------------------------------------------- 3-vectors
const NAN3 = [NaN, NaN, NaN];
const HIPS_VISIBILITY = 0.8; // spec §4.5
const EX = [1, 0, 0]; const EY = [0, 1, 0]; const EZ = [0, 0, 1];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const dot = (a, b) => 0.0 + a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const norm = (v) => Math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
const mid = (a, b) => [0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])];
const finite3 = (v) => v[0] * 0.0 + v[1] * 0.0 + v[2] * 0.0 === 0.0;
function unit(v, eps) {
  const n = Math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  return n > eps ? [v[0] / n, v[1] / n, v[2] / n] : NAN3;
}
function reject(v, u) {
  const k = 0.0 + v[0] * u[0] + v[1] * u[1] + v[2] * u[2];
  return [v[0] - k * u[0], v[1] - k * u[1], v[2] - k * u[2]];
}
/** Rᵀ·v for the rotation whose columns are `axes` (spec §2.3). */
function toFrame(axes, v) {
  const [[x0, x1, x2], [y0, y1, y2], [z0, z1, z2]] = axes;
  return [0.0 + x0 * v[0] + x1 * v[1] + x2 * v[2], 0.0 + y0 * v[0] + y1 * v[1] + y2 * v[2],
    0.0 + z0 * v[0] + z1 * v[1] + z2 * v[2]];
}
function rotate(q, v) {
  const u = [q[1], q[2], q[3]];
  const c = cross(u, v);
  const t = [2.0 * c[0], 2.0 * c[1], 2.0 * c[2]];
  const c2 = cross(u, t);
  return [v[0] + q[0] * t[0] + c2[0], v[1] + q[0] * t[1] + c2[1], v[2] + q[0] * t[2] + c2[2]];
}
function toMatrix(q) {
  const n = Math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const w = q[0] / n; const x = q[1] / n; const y = q[2] / n; const z = q[3] / n;
  return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]];
}
function canonicalize(q) { // spec §3.3: unit, leading nonzero component positive
  const n = Math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const [w, x, y, z] = [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
  const lead = w !== 0 ? w : (x !== 0 ? x : (y !== 0 ? y : z));
  return lead < 0 ? [-w, -x, -y, -z] : [w, x, y, z];
}
function fromMatrix(m) { // the stable branch of the largest of w, x, y, z (first on ties)
  const [m00, m11, m22] = [m[0][0], m[1][1], m[2][2]];
  const sq = [1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22];
  let branch = 0;
  for (let k = 1; k < 4; k++) if (sq[k] > sq[branch]) branch = k;
  const big = Math.sqrt(Math.max(sq[branch], 0.0));
  const b2 = big * big;
  const d21 = m[2][1] - m[1][2]; const d02 = m[0][2] - m[2][0]; const d10 = m[1][0] - m[0][1];
  let q;
  if (branch === 0) q = [b2, d21, d02, d10];
  else if (branch === 1) q = [d21, b2, m[0][1] + m[1][0], m[0][2] + m[2][0]];
  else if (branch === 2) q = [d02, m[0][1] + m[1][0], b2, m[1][2] + m[2][1]];
  else q = [d10, m[0][2] + m[2][0], m[1][2] + m[2][1], b2];
  return canonicalize(q);
}
function palmFromAxes(y, z) { // spec §4.2 "Building q": columns X = Y × Z, Y fingers, Z palm normal
  const x = cross(y, z);
  return fromMatrix([[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]]);
}
function palmEncode(q, side) { // spec §3.3, §4.2: left mirrored, canonical, clamp 0.98 with the hemisphere rule
  let [, x, y, z] = canonicalize(side === 'l' ? [q[0], q[1], -q[2], -q[3]] : q);
  const n = Math.sqrt(x * x + y * y + z * z);
  const clamped = n > PALM_CLAMP;
  if (clamped && x + z < 0.0) { x = -x; y = -y; z = -z; }
  if (!clamped) return [[x, y, z], false];
  const scale = PALM_CLAMP_TARGET / n; // §3.3 clamp: v · (T / |v|), T = 0.98 − 2^-49
  return [[x * scale, y * scale, z * scale], true];
}
function matrixToEuler(m) { // spec §4.4: YXZ, degrees, with the gimbal rule
  const cosPitch = Math.hypot(m[1][0], m[1][1]);
  if (cosPitch <= GIMBAL_EPS) {
    const sign = m[1][2] <= 0.0 ? 1.0 : -1.0;
    return [Math.atan2(sign * m[0][1], m[0][0]) * DEG, sign * (Math.PI / 2) * DEG, 0.0];
  }
  return [Math.atan2(m[0][2], m[2][2]) * DEG, Math.atan2(-m[1][2], cosPitch) * DEG, Math.atan2(m[1][0], m[1][1]) * DEG];
}
function normalizedAngles(m, maxima) {
  const [yaw, pitch, roll] = matrixToEuler(m);
  const n = [yaw / maxima[0], pitch / maxima[1], roll / maxima[2]];
  const limit = 1.0 + CLAMP_REPORT_TOL;
  const clamped = Math.abs(n[0]) > limit || Math.abs(n[1]) > limit || Math.abs(n[2]) > limit;
  return [n.map((v) => Math.min(Math.max(v, -1.0), 1.0)), clamped];
}
/** Normalized (h_yaw, h_pitch, h_roll) and the clamp of a head rotation given as rows of a
 * 3×3 matrix in y-up camera axes: the head relative to the camera, for a frame without a body
 * frame (producers/face.py head_from_face_matrix, spec §4.4). */
export function headFromRotation(m) {
  return normalizedAngles(m, HEAD_MAX);
}
function spreadAngle(u, offset, side) { // spec §4.1 "Elbow spread"
  let r = reject(ELBOW_REFERENCE, u);
  let n = Math.sqrt(dot(r, r));
  if (n < REF_PARALLEL) {
    r = reject(EZ, u);
    if (Math.sqrt(dot(r, r)) < Z_PARALLEL) r = reject([0, -1, 0], u);
    n = Math.sqrt(dot(r, r));
  }
  r = [r[0] / n, r[1] / n, r[2] / n];
  const t = cross(u, r);
  const toward = dot(t, ELBOW_LATERAL[side]);
  const sense = Math.abs(toward) > SENSE_MIN ? (toward < 0 ? -1 : 1) : FIXED_SENSE[side];
  const ts = [t[0] * sense, t[1] * sense, t[2] * sense];
  return Math.atan2(dot(offset, ts), dot(offset, r)) * DEG;
}
/** Python's float modulo (the result has the divisor's sign). */
function pymod(a, m) {
  let r = a % m;
  if (r !== 0 && (r < 0) !== (m < 0)) r += m;
  return r;
}

// ---------------------------------------------------------------------------- points
/** MediaPipe camera axes -> y-up (spec §2.3), x negated for mirrored "flip"; a point that is
 * missing (null) or has a non-finite coordinate is NaN. */
function points(arr, xSign) {
  return arr.map((p) => {
    if (p == null || p.includes(null)) return NAN3; // a missing coordinate: a missing point (§6.10)
    const [x, y, z = 0] = p;
    return x * 0.0 + y * 0.0 + z * 0.0 === 0.0 ? [xSign * (x + 0.0), -y + 0.0, -z + 0.0] : NAN3;
  });
}
function handPoints(arr, xSign) {
  if (arr == null) return [null, NAN3];
  const p = points(arr, xSign);
  return [p.every(finite3) ? p : null, p[0]];
}

// ---------------------------------------------------------------------------- chest (spec §4.5)
function cameraUp(trunk) { // spec §4.5: the image axis nearest the guessed trunk, +Y if NaN
  if (Math.abs(trunk[0]) > Math.abs(trunk[1])) return [trunk[0] < 0 ? -1.0 : 1.0, 0.0, 0.0];
  return [0.0, trunk[1] < 0 ? -1.0 : 1.0, 0.0];
}

function trunkVector(w, x, y, z) { // Σ w_k · R(u, C_k·θ)·e_y by Rodrigues
  const sinHalf = Math.sqrt(x * x + y * y + z * z);
  const d = sinHalf > 0 ? sinHalf : 1.0;
  const ax = x / d; const ay = y / d; const az = z / d;
  const theta = 2.0 * Math.atan2(sinHalf, w);
  let sCos = TRUNK_STILL; let sSin = 0.0;
  for (const [length, share] of TRUNK_TURNING) {
    sCos += Math.cos(theta * share) * length;
    sSin += Math.sin(theta * share) * length;
  }
  const k = ay * (TRUNK_LENGTH - sCos);
  return [sCos * 0.0 + sSin * -az + k * ax, sCos * 1.0 + sSin * 0.0 + k * ay, sCos * 0.0 + sSin * ax + k * az];
}

function chest(sl, sr, hl, hr) {
  const xP = [hl[0] - hr[0], 0.0, hl[2] - hr[2]]; // hip line made horizontal
  const across = sub(sl, sr);
  const trunk = sub(mid(sl, sr), mid(hl, hr));
  if (!(finite3(hl) && finite3(hr) && finite3(across) && norm(xP) > MIN_LENGTH && norm(across) > MIN_LENGTH
        && norm(cross(across, trunk)) > MIN_CROSS)) return null;
  const xp = unit(xP, EPS);
  const zp = cross(xp, EY);
  const pelvis = [xp, EY, zp];
  const a = unit(toFrame(pelvis, across), EPS);
  const t = unit(toFrame(pelvis, trunk), EPS);
  // Q0: the smallest rotation e_x -> a; Q(ψ) = Q0 · R_X(ψ)
  const w0 = 1.0 + dot(EX, a);
  const c = cross(EX, a);
  let q0 = w0 < EPS ? [0.0, 0.0, 1.0, 0.0] : [w0, c[0], c[1], c[2]];
  const n = Math.sqrt(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3]);
  q0 = [q0[0] / n, q0[1] / n, q0[2] / n, q0[3] / n];
  const y0 = rotate(q0, EY); const z0 = rotate(q0, EZ);
  const q1 = [-q0[1], q0[0], q0[3], -q0[2]];
  const tP = reject(t, a);
  const [a0, a1, a2] = cross(tP, a);
  const [p0, p1, p2] = tP;
  const qOf = (psi) => {
    const ch = Math.cos(0.5 * psi); const sh = Math.sin(0.5 * psi);
    return [ch * q0[0] + sh * q1[0], ch * q0[1] + sh * q1[1], ch * q0[2] + sh * q1[2], ch * q0[3] + sh * q1[3]];
  };
  const miss = (psi) => { // the signed angle about a from the model trunk to t
    const [d0, d1, d2] = trunkVector(...qOf(psi));
    return Math.atan2(0.0 + d0 * a0 + d1 * a1 + d2 * a2, 0.0 + d0 * p0 + d1 * p1 + d2 * p2);
  };
  // the twist ψ about the shoulder line by the secant method
  let psi0 = Math.atan2(dot(t, z0), dot(t, y0));
  let f0 = miss(psi0);
  let psi1 = psi0 + f0 / TRUNK_SHARE;
  let f1 = miss(psi1);
  for (let i = 0; i < SECANT_STEPS; i++) {
    if (!(Math.abs(f1) > SECANT_TOL)) break;
    const denom = f1 - f0;
    const step = Math.abs(denom) > SECANT_MIN_DENOM ? f1 * (psi1 - psi0) / denom : 0.0;
    psi0 = psi1; f0 = f1;
    psi1 -= step;
    f1 = miss(psi1);
  }
  const q = qOf(psi1);
  const m = toMatrix(q[0] < 0 ? [-q[0], -q[1], -q[2], -q[3]] : q);
  const col = (k) => [xp[0] * m[0][k] + EY[0] * m[1][k] + zp[0] * m[2][k],
    xp[1] * m[0][k] + EY[1] * m[1][k] + zp[1] * m[2][k], xp[2] * m[0][k] + EY[2] * m[1][k] + zp[2] * m[2][k]];
  return [[col(0), col(1), col(2)], m];
}

function nearerOther(wrist, own, other) { // spec §4.3: in image axes (x right, y down)
  const x = wrist[0]; const y = -wrist[1];
  const [ox, oy] = other; const [wx, wy] = own;
  return Math.sqrt((x - ox) * (x - ox) + (y - oy) * (y - oy))
    < SWAP_DISTANCE_RATIO * Math.sqrt((x - wx) * (x - wx) + (y - wy) * (y - wy));
}

function prepare(frame, xSign, threshold) {
  const all = points(frame.pose_world, xSign);
  const pose = {}; const vis = {};
  for (const [name, i] of Object.entries(POSE_POINTS)) {
    pose[name] = all[i];
    const v = frame.pose_visibility[i];
    vis[name] = v == null ? NaN : v;
  }
  const [left, wristL] = handPoints(frame.left_hand, xSign);
  const [right, wristR] = handPoints(frame.right_hand, xSign);
  const { shoulder_l: sl, shoulder_r: sr, hip_l: hl, hip_r: hr } = pose;
  const hipThreshold = Math.max(threshold, HIPS_VISIBILITY); // spec §4.5: hips at the frame's edge
  const inFrame = frame.pose_in_frame; // a hip outside the image is a guess (spec §4.5)
  const hipsSeen = vis.hip_l >= hipThreshold && vis.hip_r >= hipThreshold && [...hl, ...hr].every(Number.isFinite)
    && (inFrame == null || (inFrame[POSE_POINTS.hip_l] === true && inFrame[POSE_POINTS.hip_r] === true));
  const solved = hipsSeen ? chest(sl, sr, hl, hr) : null;
  let axes = [NAN3, NAN3, NAN3];
  let body = null; let bodyClamped = false; let implausible = false;
  if (solved !== null) {
    let local;
    [axes, local] = solved;
    const [yaw, pitch, roll] = matrixToEuler(local);
    // a torso turned far beyond the registry range: the hips are misplaced (reported)
    implausible = Math.abs(yaw) > BODY_PLAUSIBLE * BODY_MAX[0] || Math.abs(pitch) > BODY_PLAUSIBLE * BODY_MAX[1]
      || Math.abs(roll) > BODY_PLAUSIBLE * BODY_MAX[2];
    if (!implausible) [body, bodyClamped] = normalizedAngles(local, BODY_MAX);
  }
  let valid = solved !== null;
  let up = null;
  if (body === null) { // hips out of view or misplaced: an upright torso from the shoulders
    const trunk = sub(mid(sl, sr), mid(hl, hr));
    const x = unit(sub(sl, sr), EPS);
    up = cameraUp(trunk);
    const y = unit(reject(up, x), EPS);
    valid = finite3(x) && finite3(y);
    axes = valid ? [x, y, cross(x, y)] : [NAN3, NAN3, NAN3];
    if (!valid) up = null;
  }
  const neck = valid ? mid(sl, sr) : NAN3;
  // spec §2.2: a flipped selfie turns the head inside out
  const handed = cross(unit(sub(pose.ear_l, pose.ear_r), EPS), unit(sub(pose.nose, mid(pose.ear_l, pose.ear_r)), EPS));
  const mirrored = valid && dot(handed, axes[1]) > MIRROR_MIN_SINE;
  // spec §4.3: a hand at the other pose wrist was mislabelled
  let swapped;
  if (frame.pose_image != null) {
    const wl = frame.pose_image[POSE_POINTS.wrist_l]; const wr = frame.pose_image[POSE_POINTS.wrist_r];
    const imageL = [xSign * wl[0], wl[1]]; const imageR = [xSign * wr[0], wr[1]];
    const otherL = left !== null && nearerOther(wristL, imageL, imageR);
    const otherR = right !== null && nearerOther(wristR, imageR, imageL);
    swapped = (otherL && otherR) || (otherL && right === null) || (otherR && left === null);
  } else {
    swapped = dot(sub(wristL, wristR), sub(pose.wrist_l, pose.wrist_r)) < 0.0;
  }
  const hands = swapped ? { l: right, r: left } : { l: left, r: right };
  return { pose, vis, hands, axes, neck, valid, body, bodyClamped, implausible, mirrored, swapped, up };
}

// ---------------------------------------------------------------------------- hands (spec §2.4, §4.2, §4.3)
function chainAngles(chain, axis) {
  const [ax, ay, az] = axis;
  const p = chain.map((v) => {
    const k = 0.0 + v[0] * ax + v[1] * ay + v[2] * az;
    return [v[0] - k * ax, v[1] - k * ay, v[2] - k * az];
  });
  const out = [];
  for (let i = 0; i + 1 < p.length; i++) {
    const [ux, uy, uz] = p[i]; const [vx, vy, vz] = p[i + 1];
    out.push(Math.atan2(0.0 + (uy * vz - uz * vy) * ax + (uz * vx - ux * vz) * ay + (ux * vy - uy * vx) * az,
      0.0 + ux * vx + uy * vy + uz * vz));
  }
  return out;
}
const angleBetween = (c, u, v) => Math.atan2(Math.sqrt(dot(c, c)), dot(u, v));

function handFrame(pts, side) { // fingers = wrist -> middle MCP; palm normal out of the palm
  const wrist = pts[W_WRIST];
  const toIndex = sub(pts[W_INDEX], wrist); const toPinky = sub(pts[W_PINKY], wrist);
  const normal = side === 'r' ? cross(toIndex, toPinky) : cross(toPinky, toIndex);
  return [sub(pts[W_MIDDLE], wrist), normal];
}

function localPoints(pts, fingers, normal, side) { // the canonical right-hand local frame (§3.2)
  const y = unit(fingers, EPS);
  const z = unit(reject(normal, y), EPS);
  if (!(y[0] === y[0] && z[0] === z[0])) return null;
  const [x0, x1, x2] = cross(y, z);
  const [y0, y1, y2] = y; const [z0, z1, z2] = z;
  const [w0, w1, w2] = pts[W_WRIST];
  const sign = side === 'l' ? -1.0 : 1.0;
  return pts.map((p) => {
    const v0 = p[0] - w0; const v1 = p[1] - w1; const v2 = p[2] - w2;
    return [sign * (0.0 + x0 * v0 + x1 * v1 + x2 * v2), 0.0 + y0 * v0 + y1 * v1 + y2 * v2, 0.0 + z0 * v0 + z1 * v1 + z2 * v2];
  });
}

const signedAngle = (u, v, axis) => chainAngles([u, v], axis)[0]; // hand._signed_angle of one pair

function pcaLateral(v1, v2, v3, mx, my) { // hand._pca_lateral: d_pca × Z (signed along m) and the spread
  const mxx = 0.0 + v1[0] * v1[0] + v2[0] * v2[0] + v3[0] * v3[0];
  const myy = 0.0 + v1[1] * v1[1] + v2[1] * v2[1] + v3[1] * v3[1];
  const mxy = 0.0 + v1[0] * v1[1] + v2[0] * v2[1] + v3[0] * v3[1];
  const theta = 0.5 * Math.atan2(2.0 * mxy, mxx - myy);
  const dx = Math.cos(theta); const dy = Math.sin(theta);
  const sign = dx * mx + dy * my < 0.0 ? -1.0 : 1.0;
  const half = 0.5 * (mxx - myy);
  return [dy * sign, -dx * sign, Math.sqrt(0.5 * (mxx + myy) + Math.sqrt(half * half + mxy * mxy))];
}

function lateralSide(lx, ly, metaTurn) { // hand._lateral_side: unit lateral axis and side (degrees)
  const n = Math.sqrt(lx * lx + ly * ly);
  if (!(n > 0.0)) return [NaN, NaN, NaN];
  const ux = lx / n; const uy = ly / n;
  const turn = Math.atan2(uy, ux) - metaTurn;
  return [ux, uy, (pymod(turn + Math.PI, 2.0 * Math.PI) - Math.PI) * DEG];
}

function otherReadings(b1, b2, b3, p2, tip, n1, n2, n3, lpx, lpy, spread, mx, my, metaTurn) {
  // readings (1)–(4) of hand._finger_reading: bend axis + spread, phalanges' spread, joints' spread, bend axis
  const [ptx, pty, spreadPts] = pcaLateral(b1, p2, tip, mx, my);
  let length = n1 + n2 + n3;
  if (!(length > EPS)) length = NaN;
  let c12 = [0, 0, 0]; let c23 = [0, 0, 0];
  if (n2 > EPS) {
    const v = [b2[0] / n2, b2[1] / n2, b2[2] / n2];
    if (n1 > EPS) c12 = cross([b1[0] / n1, b1[1] / n1, b1[2] / n1], v);
    if (n3 > EPS) c23 = cross(v, [b3[0] / n3, b3[1] / n3, b3[2] / n3]);
  }
  let bx = c12[0] + c23[0]; let by = c12[1] + c23[1];
  if (bx * lpx + by * lpy < 0.0) { bx = -bx; by = -by; }
  const w2 = 2.0 * (spread / length);
  const cx = bx + w2 * lpx; const cy = by + w2 * lpy;
  const weight = spread / length; const ptsWeight = spreadPts / length;
  return [[cx, cy, 0.0 + cx * cx + cy * cy], [lpx, lpy, weight * weight],
    [ptx, pty, ptsWeight * ptsWeight], [bx, by, bx * bx + by * by]]
    .map(([lx, ly, seen]) => [...lateralSide(lx, ly, metaTurn), seen >= FLAT_LATERAL]);
}

// hand._finger_reading: [curl, distal, fold, side] degrees of one of index…pinky, in range
// (spec §4.3 "Finger geometry", joint ranges by withinJointRanges)
function fingerReading(m, b1, b2, b3, splay, ranges) {
  const [mx, my] = m;
  const [lpx, lpy, spread] = pcaLateral(b1, b2, b3, mx, my);
  const p2 = [b1[0] + b2[0], b1[1] + b2[1], b1[2] + b2[2]];
  const tip = [p2[0] + b3[0], p2[1] + b3[1], p2[2] + b3[2]];
  const n1 = norm(b1); const n2 = norm(b2); const n3 = norm(b3);
  const metaTurn = Math.atan2(-mx, my);
  const tn = norm(tip);
  let tlx = NaN; let tly = NaN;
  if (tn > 0.0) {
    tlx = tip[1] / tn; tly = -(tip[0] / tn);
    if (tlx * lpx + tly * lpy < 0.0) { tlx = -tlx; tly = -tly; }
  }
  const tipReading = [...lateralSide(tlx, tly, metaTurn), tlx * tlx + tly * tly >= FLAT_LATERAL];
  let pick = -1; let best = Infinity; let sides;
  if (tipReading[3] && Math.abs(tipReading[2] - splay) <= SIDE_RANGE_DEG) { // the tip, within range
    pick = 0; sides = [tipReading];
  } else {
    sides = [tipReading, ...otherReadings(b1, b2, b3, p2, tip, n1, n2, n3, lpx, lpy, spread, mx, my, metaTurn)];
    const [, , tipSide, tipValid] = tipReading;
    sides.forEach(([, , sideK, valid], k) => {
      if (valid && Math.abs(sideK - splay) <= SIDE_RANGE_DEG) {
        const distance = tipValid ? Math.abs(sideK - tipSide) : 0.0;
        if (distance < best || pick < 0) { pick = k; best = distance; }
      }
    });
  }
  const within = pick >= 0;
  if (!within) {
    best = Infinity;
    sides.forEach(([, , sideK, valid], k) => {
      if (valid && (Math.abs(sideK - splay) < best || pick < 0)) { pick = k; best = Math.abs(sideK - splay); }
    });
  }
  let lateral; let side;
  if (pick >= 0) {
    lateral = [sides[pick][0], sides[pick][1], 0.0]; side = sides[pick][2];
  } else { // a straight finger along the palm normal shows no direction: side 0 (its metacarpal)
    lateral = unit([my, -mx, 0.0], EPS); side = 0.0;
  }
  const d = [-lateral[1], lateral[0], 0.0]; // Z × lateral
  // hand._signed_angle of (d, b1), (b1, b2), (b2, b3) about the lateral axis, each vector
  // projected off it once (spec §4.3 "Finger geometry": each joint's own bend)
  const [aFold, aCurl, aDistal] = chainAngles([d, b1, b2, b3], lateral);
  const [fold, curl, distal] = withinJointRanges(aFold * DEG, aCurl * DEG, aDistal * DEG, ranges);
  return [curl, distal, fold, side, (within || pick < 0) && fold >= -MCP_EXTENSION_DEG && fold <= FOLD_RANGE_DEG];
}

// hand._within_joint_ranges of one finger (degrees; ranges = its PIP and DIP flexion limits): the
// DIP's bend beyond [−DIP_EXTENSION_DEG, its limit] passed on to the PIP, then the PIP's beyond
// [−PIP_EXTENSION_DEG, its limit] to the fold
// (spec §4.3 "Joint ranges"); a missing joint (NaN) passes nothing on
function withinJointRanges(fold, curl0, distal, [curlRange, distalRange]) {
  const kept = distal === distal ? Math.min(Math.max(distal, -DIP_EXTENSION_DEG), distalRange) : distal;
  let excess = distal - kept;
  const curl = curl0 + (Number.isFinite(excess) ? excess : 0.0);
  const curlKept = curl === curl ? Math.min(Math.max(curl, -PIP_EXTENSION_DEG), curlRange) : curl;
  excess = curl - curlKept;
  return [fold + (Number.isFinite(excess) ? excess : 0.0), curlKept, kept];
}

// (curl, distal, fold, side) degrees of index…pinky, whether it was depth-repaired, and its fold as
// measured (before any depth repair), spec §4.3
function fingerAngles(local, chain, splay, ranges, depth) { // ranges: [PIP, DIP] degrees
  const [m, p, q, t] = chain.map((k) => local[k]);
  const bones = [sub(p, m), sub(q, p), sub(t, q)];
  const reading = fingerReading(m, ...bones, splay, ranges);
  const within = (r) => [r[0], r[1], Math.max(r[2], -MCP_EXTENSION_DEG), r[3]]; // NaN stays NaN
  if (reading[4] || depth === null) return [...within(reading), false, reading[2]];
  const [kx, ky, kz] = depth;
  for (const scale of DEPTH_REPAIR_SCALES) { // spec §4.3 "Depth repair"
    const f = scale - 1.0;
    const scaled = bones.map(([bx, by, bz]) => {
      const a = f * (0.0 + bx * kx + by * ky + bz * kz);
      return [bx + a * kx, by + a * ky, bz + a * kz];
    });
    const repaired = fingerReading(m, ...scaled, splay, ranges);
    if (repaired[4]) return [...repaired.slice(0, 4), true, reading[2]];
  }
  return [...within(reading), false, reading[2]];
}

function depthAxis(fingers, normal, side) { // the camera's depth axis (third world axis), canonical local
  const y = unit(fingers, EPS);
  const z = unit(reject(normal, y), EPS);
  const x = cross(y, z);
  return [(side === 'l' ? -1.0 : 1.0) * x[2], y[2], z[2]];
}

function thumbAngles(local) { // (curl, distal, fold, side, roll) degrees, spec §4.3
  const [t1, t2, t3, t4] = THUMB_CHAIN.map((k) => local[k]);
  const a1 = unit(sub(t2, t1), EPS); const a2 = unit(sub(t3, t2), EPS); const a3 = unit(sub(t4, t3), EPS);
  const side = a1[2] === a1[2] ? Math.asin(Math.min(Math.max(a1[2], -1.0), 1.0)) : NaN;
  const TY = THUMB_REST; const TX = THUMB_SIDE_AXIS;
  const fold = Math.atan2(TY[0] * a1[1] - TY[1] * a1[0], TY[0] * a1[0] + TY[1] * a1[1]);
  const cf = Math.cos(fold); const sf = Math.sin(fold); const cs = Math.cos(side); const ss = Math.sin(side);
  const e1 = [TX[0] * cf - TX[1] * sf, TX[0] * sf + TX[1] * cf, TX[2]];
  const r0 = -TY[0] * ss; const r1 = -TY[1] * ss;
  const e2 = [r0 * cf - r1 * sf, r0 * sf + r1 * cf, cs];
  const c12 = cross(a1, a2); const c23 = cross(a2, a3);
  // spec §4.3 "Thumb": the larger cross product plus the other turned to its side
  const [first, second] = dot(c12, c12) >= dot(c23, c23) ? [c12, c23] : [c23, c12];
  const k = dot(first, second) < 0.0 ? -1.0 : 1.0;
  const bend = [first[0] + k * second[0], first[1] + k * second[1], first[2] + k * second[2]];
  const bendN = Math.sqrt(dot(bend, bend));
  let curl; let distal; let roll;
  if (bendN >= OBSERVABLE_BEND) { // curl: the MCP joint (a1 -> a2), distal: the IP joint (a2 -> a3)
    let n = [bend[0] / bendN, bend[1] / bendN, bend[2] / bendN];
    if (dot(n, e2) < 0.0) n = [-n[0], -n[1], -n[2]];
    [curl, distal] = chainAngles([a1, a2, a3], n);
    roll = Math.atan2(dot(n, e1), dot(n, e2)) * DEG;
  } else { // too straight to see the bend axis: each bend's size, signed by its own side of e2
    curl = angleBetween(c12, a1, a2) * (dot(c12, e2) < 0.0 ? -1.0 : 1.0);
    distal = angleBetween(c23, a2, a3) * (dot(c23, e2) < 0.0 ? -1.0 : 1.0);
    roll = NaN;
  }
  return [curl * DEG, distal * DEG, fold * DEG, side * DEG, roll];
}

function allAngles(pts, fingers, normal, side, depthAmbiguous = false) {
  const out = new Array(FINGER_ROWS.length).fill(NaN);
  const local = localPoints(pts, fingers, normal, side);
  if (local === null) return [out, 0, NaN];
  const [c, t, f, s] = SLOTS[0];
  [out[c], out[t], out[f], out[s], out[ROLL]] = thumbAngles(local);
  const depth = depthAmbiguous ? depthAxis(fingers, normal, side) : null;
  let repaired = 0;
  const measured = [];
  CHAINS.forEach((chain, k) => {
    const [ck, tk, fk, sk] = SLOTS[k + 1];
    let fixed; let seen;
    [out[ck], out[tk], out[fk], out[sk], fixed, seen] = fingerAngles(local, chain, SPLAY[k], RANGES[k], depth);
    if (fixed) repaired += 1;
    measured.push(seen);
  });
  // the mean fold as measured, before depth repair (the depth-flip check, spec §4.3)
  return [out, repaired, (measured[0] + measured[1] + measured[2] + measured[3]) / 4.0];
}

/** One present hand (21 finite y-up points) in the body axes -> palm and finger dims (not yet
 * clamped to the registry bounds), or null where the palm frame is degenerate (spec §4.2, §4.3). */
export function handDims(pts, axes, side, depthAmbiguous = false) {
  let [fingers, normal] = handFrame(pts, side);
  let fBody = toFrame(axes, fingers); let nBody = toFrame(axes, normal);
  const fn = Math.sqrt(dot(fBody, fBody));
  const ortho = cross(fBody, nBody);
  if (!(fn > EPS && Math.sqrt(dot(ortho, ortho)) > PALM_MIN_SINE * Math.max(fn * Math.sqrt(dot(nBody, nBody)), EPS))) {
    return null;
  }
  let [angles, repaired, measuredFold] = allAngles(pts, fingers, normal, side, depthAmbiguous);
  let flipped = false;
  if (depthAmbiguous && measuredFold < -DEPTH_FLIP_FOLD_DEG) {
    // spec §4.3 "Producer checks": monocular depth read backward, taken mirrored
    const z2 = 2.0 * pts[W_WRIST][2];
    pts = pts.map(([x, y, z]) => [x, y, z * -1.0 + z2]);
    [fingers, normal] = handFrame(pts, side);
    [angles, repaired] = allAngles(pts, fingers, normal, side, depthAmbiguous);
    fBody = toFrame(axes, fingers); nBody = toFrame(axes, normal);
    flipped = true;
  }
  const y = unit(fBody, EPS);
  const [stored, palmClamped] = palmEncode(palmFromAxes(y, unit(reject(nBody, y), EPS)), side);
  const values = angles.map((a, k) => (a - FINGER_NEUTRAL[k]) / FINGER_DEG[k]);
  const sideClamped = SIDE_SLOTS.filter((k) => Math.abs(values[k]) > 1.0).length;
  const unobservable = !Number.isFinite(values[ROLL]);
  if (unobservable) values[ROLL] = 0.0;
  return { values: [...stored, ...values], palmClamped, rollUnobservable: unobservable, sideClamped, flipped, repaired };
}

function withDepthGain(pts, gain) { // spec §4.3 "Hand depth gain"
  if (gain === 1.0) return pts;
  const wz = pts[0][2];
  return pts.map(([x, y, z]) => [x, y, wz + gain * (z - wz)]);
}

// ---------------------------------------------------------------------------- the encoder
const BODY_COLS = ['b_yaw', 'b_pitch', 'b_roll'].map(idx);
const HEAD_COLS = ['h_yaw', 'h_pitch', 'h_roll'].map(idx);
const ARM_COLS = { l: ['a_x_l', 'a_y_l', 'a_z_l', 'a_spread_l'].map(idx), r: ['a_x_r', 'a_y_r', 'a_z_r', 'a_spread_r'].map(idx) };
const HAND_COLS = Object.fromEntries(['l', 'r'].map((s) => [s,
  [...['x', 'y', 'z'].map((a) => idx(`w_q${a}_${s}`)), ...FINGER_ROWS.map((r) => idx(`${r}_${s}`))]]));
const SPREAD_MAX = { l: maxOf('a_spread_l'), r: maxOf('a_spread_r') };

/** Calibration (spec §4.1): `{hand_length, torso_length, arm_length, shoulder_width}` (metres,
 * null = not measured) -> `{calibration, L, fallback_axes, hand_depth_gain}`. */
export function makeCalibration(cal = null, handDepthGain = { l: 1.0, r: 1.0 }) {
  const c = cal ?? REGISTRY_REFERENCE;
  const u = calibrationUnits(c);
  return { calibration: c, L: u.L, fallback_axes: u.fallback_axes, hand_depth_gain: handDepthGain };
}
const REF = REGISTRY.reference_avatar;
export const REGISTRY_REFERENCE = { hand_length: REF.hand_length, torso_length: REF.torso_length,
  arm_length: REF.arm_length, shoulder_width: REF.shoulder_width };

/** spec §4.1 "The arm at its calibrated length" (producers/landmarks_single.py _rigid_wrist1):
 * the seen shoulder -> wrist at the calibrated arm length d_z (the wrist as seen without an elbow). */
function rigidWrist(shoulder, elbow, wrist, armLength) {
  if (armLength === null || armLength === undefined) return wrist;
  const length = norm(sub(elbow, shoulder)) + norm(sub(wrist, elbow));
  if (!(Number.isFinite(length) && length > MIN_LENGTH)) return wrist;
  const k = armLength / length;
  return [shoulder[0] + (wrist[0] - shoulder[0]) * k, shoulder[1] + (wrist[1] - shoulder[1]) * k,
    shoulder[2] + (wrist[2] - shoulder[2]) * k];
}

function put(row, cols, values, clamped) { // spec §3.1: only in-bounds values leave; clamps counted
  cols.forEach((col, k) => {
    let v = values[k];
    if (v < LOWER[col]) { v = LOWER[col]; clamped.push(col); } else if (v > UPPER[col]) { v = UPPER[col]; clamped.push(col); }
    row[col] = v;
  });
}

function faceFit(pts) { // spec §4.4: landmarks.face_fit of one frame, the same operations in order
  let count = 0;
  let cy0 = 0.0; let cy1 = 0.0; let cy2 = 0.0; let cx0 = 0.0; let cx1 = 0.0; let cx2 = 0.0;
  HEAD_REFERENCE.forEach(([, x], k) => {
    const p = pts[k];
    if (!finite3(p)) return;
    count += 1;
    cy0 += p[0]; cy1 += p[1]; cy2 += p[2]; cx0 += x[0]; cx1 += x[1]; cx2 += x[2];
  });
  if (count < HEAD_FIT_MIN) return null;
  cy0 /= count; cy1 /= count; cy2 /= count; cx0 /= count; cx1 /= count; cx2 /= count;
  let sxx = 0.0; let sxy = 0.0; let sxz = 0.0; let syx = 0.0; let syy = 0.0; let syz = 0.0;
  let szx = 0.0; let szy = 0.0; let szz = 0.0; let shift = 0.0;
  HEAD_REFERENCE.forEach(([, x], k) => {
    const p = pts[k];
    if (!finite3(p)) return;
    const a0 = x[0] - cx0; const a1 = x[1] - cx1; const a2 = x[2] - cx2;
    const b0 = p[0] - cy0; const b1 = p[1] - cy1; const b2 = p[2] - cy2;
    sxx += a0 * b0; sxy += a0 * b1; sxz += a0 * b2;
    syx += a1 * b0; syy += a1 * b1; syz += a1 * b2;
    szx += a2 * b0; szy += a2 * b1; szz += a2 * b2;
    shift += Math.sqrt((a0 * a0 + a1 * a1) + a2 * a2) * Math.sqrt((b0 * b0 + b1 * b1) + b2 * b2);
  });
  let m = [[((sxx + syy) + szz) + shift, syz - szy, szx - sxz, sxy - syx],
    [syz - szy, ((sxx - syy) - szz) + shift, sxy + syx, szx + sxz],
    [szx - sxz, sxy + syx, ((syy - sxx) - szz) + shift, syz + szy],
    [sxy - syx, szx + sxz, syz + szy, ((szz - sxx) - syy) + shift]];
  for (let n = 0; n < HEAD_FIT_SQUARINGS; n += 1) {
    const sq = [0, 1, 2, 3].map((i) => [0, 1, 2, 3].map((j) =>
      ((m[i][0] * m[0][j] + m[i][1] * m[1][j]) + m[i][2] * m[2][j]) + m[i][3] * m[3][j]));
    const trace = ((sq[0][0] + sq[1][1]) + sq[2][2]) + sq[3][3];
    if (!(trace > 0.0 && Number.isFinite(trace))) return null;
    m = sq.map((row) => row.map((v) => v / trace));
  }
  let column = 0;
  for (let j = 1; j < 4; j += 1) if (m[j][j] > m[column][column]) column = j; // the first of equal ones
  return toMatrix([m[0][column], m[1][column], m[2][column], m[3][column]]);
}

// spec §4.4: Cᵀ · F, F the rigid fit (else the four-point face frame), C the chest frame or,
// without body dims, the camera's upright frame (X = up × +z, Y = up, Z = +z)
function headDims(frame, face, fitPoints) {
  if (!frame.valid) return null;
  let f = fitPoints === null ? null : faceFit(fitPoints);
  if (f === null) {
    const [eyeL, eyeR, forehead, chin] = face;
    if (!(finite3(eyeL) && finite3(eyeR) && finite3(forehead) && finite3(chin))) return null;
    const x = unit(sub(eyeL, eyeR), EPS);
    const y = unit(reject(sub(forehead, chin), x), EPS);
    if (!(finite3(x) && finite3(y))) return null;
    const z = cross(x, y);
    f = [[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]];
  }
  const ez = [0.0, 0.0, 1.0];
  const axes = frame.up === null ? frame.axes : [cross(frame.up, ez), frame.up, ez];
  const cx = toFrame(axes, [f[0][0], f[1][0], f[2][0]]);
  const cy = toFrame(axes, [f[0][1], f[1][1], f[2][1]]);
  const cz = toFrame(axes, [f[0][2], f[1][2], f[2][2]]);
  return normalizedAngles([[cx[0], cy[0], cz[0]], [cx[1], cy[1], cz[1]], [cx[2], cy[2], cz[2]]], HEAD_MAX);
}

/**
 * Encode one frame of MediaPipe landmarks (the frame object of spec §6.10: pose_world,
 * pose_visibility, left_hand, right_hand, opt. pose_image, pose_in_frame, face, blendshapes).
 * `cal`: makeCalibration(...); `mirrored`: 'report' | 'flip'; `visibilityThreshold`.
 * Returns `{vector (Float64Array, NaN = not sent), tracking {part: state}, clamped {key: 1},
 * degenerate {key: count}}`.
 */
export function encodeFrame(input, cal, { mirrored = 'report', visibilityThreshold = 0.5 } = {}) {
  const xSign = mirrored === 'flip' ? -1.0 : 1.0; // spec §2.2: un-mirror a selfie image
  const frame = prepare(input, xSign, visibilityThreshold);
  const { valid } = frame;
  const row = new Float64Array(N_DIMS).fill(NaN);
  const clampedCols = [];
  const degenerate = { body_frame: valid ? 0 : 1 };
  if (frame.mirrored) degenerate.mirrored = 1;
  if (frame.swapped) degenerate.hands_swapped = 1;
  const tracked = {};
  // spec §4.5: body dims, only with the hips seen and a plausible torso
  const { body } = frame;
  const bodyOk = valid && body !== null && finite3(body);
  tracked.body = bodyOk;
  if (valid && !bodyOk && !frame.implausible) degenerate.body_hips_not_visible = 1;
  if (frame.implausible) degenerate.body_implausible = 1;
  if (bodyOk) put(row, BODY_COLS, body, clampedCols);

  const handAxes = valid ? frame.axes : [EX, EY, EZ]; // hand-only frames: palm in the camera frame (§4.2)
  const palmClamped = { l: false, r: false };
  for (const s of ['l', 'r']) {
    // spec §4.1: hand position relative to the neck in units L, elbow spread
    const wrist = toFrame(frame.axes, sub(frame.pose[`wrist_${s}`], frame.neck));
    // spec §7.4: a wrist is seen when the pose says so or the hand model found that hand
    const seen = frame.vis[`wrist_${s}`] >= visibilityThreshold || frame.hands[s] !== null;
    const armOk = valid && seen && finite3(wrist);
    tracked[`arm_${s}`] = armOk;
    if (armOk) {
      const shoulder = toFrame(frame.axes, sub(frame.pose[`shoulder_${s}`], frame.neck));
      const elbow = toFrame(frame.axes, sub(frame.pose[`elbow_${s}`], frame.neck));
      let spread = NaN; let straight = false;
      const axis = sub(wrist, shoulder); const offset = sub(elbow, shoulder);
      const length = norm(axis);
      if (finite3(axis) && finite3(offset) && length > MIN_LENGTH) {
        const u = [axis[0] / length, axis[1] / length, axis[2] / length];
        if (norm(reject(offset, u)) < STRAIGHT_ARM) { spread = 0.0; straight = true; } else spread = spreadAngle(u, offset, s);
      }
      const sign = ARM_SIGN[s]; const L = cal.L;
      const sent = rigidWrist(shoulder, elbow, wrist, cal.calibration.arm_length); // spec §4.1
      const n = [sent[0] * sign[0] / (ARM_MAX * L[0]), sent[1] * sign[1] / (ARM_MAX * L[1]),
        sent[2] * sign[2] / (ARM_MAX * L[2])];
      put(row, ARM_COLS[s], [...n, spread / SPREAD_MAX[s]], clampedCols);
      degenerate[`spread_straight_arm_${s}`] = straight ? 1 : 0;
    }
    // spec §4.2, §4.3: palm and fingers
    let pts = frame.hands[s];
    if (pts !== null) pts = withDepthGain(pts, cal.hand_depth_gain[s]);
    const dims = pts === null ? null : handDims(pts, handAxes, s, true);
    tracked[`hand_${s}`] = dims !== null;
    degenerate[`palm_${s}`] = pts !== null && dims === null ? 1 : 0;
    if (dims !== null) {
      if (dims.flipped) degenerate[`hand_depth_flipped_${s}`] = 1;
      if (dims.sideClamped) degenerate[`fingers_side_clamped_${s}`] = dims.sideClamped;
      if (dims.repaired) degenerate[`fingers_depth_repaired_${s}`] = dims.repaired;
      if (!valid) degenerate[`palm_camera_frame_${s}`] = 1;
      if (dims.rollUnobservable) degenerate[`thumb_roll_unobservable_${s}`] = 1;
      palmClamped[s] = dims.palmClamped;
      put(row, HAND_COLS[s], dims.values, clampedCols);
    }
  }
  let head = null;
  if (input.face != null) {
    const face = points(['eye_outer_l', 'eye_outer_r', 'forehead', 'chin'].map((k) => input.face[FACE_POINTS[k]]), xSign);
    const fit = input.face.length > 4 ? points(HEAD_REFERENCE.map(([i]) => input.face[i]), xSign) : null;
    head = headDims(frame, face, fit);
    tracked.head = head !== null;
    if (head !== null) put(row, HEAD_COLS, head[0], clampedCols);
  }
  // spec §3.1: every clamp is reported (never silent)
  const clamped = {};
  for (const col of [...clampedCols].sort((a, b) => a - b)) clamped[DIMS[col].id] = 1;
  for (const s of ['l', 'r']) if (palmClamped[s]) clamped[PALM_CLAMP_KEY(s)] = 1;
  if (head !== null && head[1]) clamped[HEAD_CLAMP_KEY] = 1;
  if (bodyOk && frame.bodyClamped) clamped[BODY_CLAMP_KEY] = 1;
  const tracking = {};
  for (const part of TRACKING_PARTS) {
    tracking[part] = !(part in tracked) ? 'not_estimated' : (tracked[part] ? 'tracked' : 'lost');
  }
  // spec §4.6: face and mouth from the face model's blendshapes (null: it ran and saw no face)
  if ('blendshapes' in input) {
    if (input.blendshapes === null) {
      tracking.face = tracking.mouth = 'lost';
    } else {
      for (const [name, k] of blendshapeDims(input.blendshapes, row)) clamped[name] = (clamped[name] ?? 0) + k;
      tracking.face = tracking.mouth = 'tracked';
    }
  }
  return { vector: row, tracking, clamped, degenerate };
}

const ALL_FACE_ZERO = Object.fromEntries(FACE_DIMS.map((d) => [d.id, 0]));
/** ARKit weights -> the face and mouth dims written into `row` (m_tongue NaN: not observed);
 * returns the names clamped or clipped, each with count 1 (spec §4.6, policy clamp). */
function blendshapeDims(weights, row) {
  const r = arkitToDims({ weights, policy: 'clamp', into: ALL_FACE_ZERO });
  for (const d of FACE_DIMS) row[d.index] = r.values[d.id];
  for (const id of UNOBSERVED_BY_BLENDSHAPES) row[idx(id)] = NaN;
  return [...r.clamped, ...r.replaced, ...r.dims_clipped].map((n) => [n, 1]);
}

// ---------------------------------------------------------------------------- the kit op (spec §6.10)
const usage = (kind, path) => new CodecError(`usage.${kind}`, path);
const FRAME_KEYS = new Set(['pose_world', 'pose_visibility', 'pose_image', 'pose_in_frame', 'left_hand', 'right_hand',
  'face', 'blendshapes']);
// spec §6.5 rules 1 and 4: not an array is a wrong JSON type (bad_option), another length shape
function checkArray(raw, counts, path) {
  if (!Array.isArray(raw)) throw usage('bad_option', path);
  if (!counts.includes(raw.length)) throw usage('shape', path);
}
function checkPoints(raw, counts, path, widths = [3]) {
  checkArray(raw, counts, path);
  raw.forEach((p, i) => {
    if (p === null) return;
    if (!Array.isArray(p)) throw usage('bad_option', `${path}[${i}]`);
    if (!widths.includes(p.length)) throw usage('shape', `${path}[${i}]`);
    // a null coordinate makes the point missing (spec §6.10)
    p.forEach((x, k) => { if (x !== null && typeof x !== 'number') throw usage('bad_option', `${path}[${i}][${k}]`); });
  });
}

/** The conformance op `encoder.landmarks` (spec §6.10). */
export function encoderLandmarks({ frames, calibration = null, mirrored = 'report', visibility_threshold: vt = 0.5 }) {
  if (!Array.isArray(frames)) throw usage('bad_option', 'frames');
  if (frames.length === 0) throw usage('shape', 'frames');
  if (mirrored !== 'report' && mirrored !== 'flip') throw usage('bad_option', 'mirrored');
  const cal = makeCalibration(calibration);
  const outFrames = [];
  const clamped = {}; const degenerate = {};
  const add = (into, from) => { for (const [k, v] of Object.entries(from)) if (v) into[k] = (into[k] ?? 0) + v; };
  frames.forEach((f, i) => {
    const at = `frames[${i}]`;
    if (f === null || typeof f !== 'object' || Array.isArray(f)) throw usage('bad_option', at);
    for (const k of Object.keys(f)) if (!FRAME_KEYS.has(k)) throw usage('bad_option', `${at}.${k}`);
    for (const k of ['pose_world', 'pose_visibility', 'left_hand', 'right_hand']) if (!(k in f)) throw usage('bad_option', `${at}.${k}`);
    checkPoints(f.pose_world, [33], `${at}.pose_world`);
    checkArray(f.pose_visibility, [33], `${at}.pose_visibility`);
    f.pose_visibility.forEach((v, k) => { if (v !== null && typeof v !== 'number') throw usage('bad_option', `${at}.pose_visibility[${k}]`); });
    // spec §6.10 order of the checks: pose_world, pose_visibility, pose_in_frame, the hands, face, pose_image
    if (f.pose_in_frame != null) {
      checkArray(f.pose_in_frame, [33], `${at}.pose_in_frame`);
      f.pose_in_frame.forEach((b, k) => { if (typeof b !== 'boolean') throw usage('bad_option', `${at}.pose_in_frame[${k}]`); });
    }
    for (const k of ['left_hand', 'right_hand']) if (f[k] !== null) checkPoints(f[k], [21], `${at}.${k}`);
    if (f.face != null) checkPoints(f.face, [468, 478], `${at}.face`);
    if (f.pose_image != null) checkPoints(f.pose_image, [33], `${at}.pose_image`, [2, 3]);
    if ('blendshapes' in f && f.blendshapes !== null) {
      if (typeof f.blendshapes !== 'object' || Array.isArray(f.blendshapes)) throw usage('bad_option', `${at}.blendshapes`);
      for (const [k, v] of Object.entries(f.blendshapes)) {
        if (k !== '_neutral' && !ARKIT.includes(k)) throw usage('unknown_id', `${at}.blendshapes.${k}`);
        // spec §6.5 rule 1: numbers only, MediaPipe's _neutral included (its value is not used)
        if (typeof v !== 'number') throw usage('bad_option', `${at}.blendshapes.${k}`);
      }
    }
    const r = encodeFrame(f, cal, { mirrored, visibilityThreshold: vt });
    const values = {};
    DIMS.forEach((d, k) => { if (Number.isFinite(r.vector[k])) values[d.id] = r.vector[k]; });
    outFrames.push({ values, tracking: r.tracking });
    add(clamped, r.clamped);
    add(degenerate, r.degenerate);
  });
  const sorted = (o) => Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  return { frames: outFrames, clamped: sorted(clamped), degenerate: sorted(degenerate), fallback_axes: cal.fallback_axes };
}
