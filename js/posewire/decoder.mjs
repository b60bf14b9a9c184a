// posewire decoder for JavaScript: pose vectors -> local bone rotations of an avatar
// skeleton (spec §3.5, §4.1–§4.5) and face weights (spec §4.6, §4.7).
//
// The same conventions as the Python consumer (posewire.consumers.pose, documented in its
// module docstring); the viewer test and tests/test_js_decoder.py check the results
// against it to 1e-9 (Node) and 1e-4 (browser). Frame: the body frame of spec §2.1 (metres,
// +Y up, +Z forward, +X = the character's left). Quaternions (w, x, y, z).
//
// With G_j the rotation applied to joint j's rest world orientation (W_j = G_j · W_rest,j;
// a joint without its own driver inherits its parent's G), local rotations are
//   L_j = L_rest,j · W_rest,j⁻¹ · G_parent⁻¹ · G_j · W_rest,j.
//   spine (§4.5): G = Q^c (cumulative spine shares of the torso rotation Q)
//   head (§4.4): neck_01, neck_02, head: G = Q · H^c (shares 0.25, 0.25, 0.5)
//   arms (§4.1): two-bone IK to neck + arm_to_physical(a, units(avatar calibration)),
//     pole = ref·cos φ + toward·sin φ, φ = a_spread · 90° (the elbow spread frame)
//   hands (§4.2): G = Q · palm_decode(w) · P⁻¹ (P: hand-local frame at rest)
//   fingers (§4.3): G = Q · palm · mirror(chain of elementary rotations) · P⁻¹, with
//     index..pinky *_01 = R_Z(α − β + σ + side) · R_X(fold): σ = neutral_deg, the relaxed splay
// Every table (dims, maxima, finger angles, spine shares, ARKit gains, viseme baselines)
// comes from the registry export via ./codec.mjs.

import {
  BY_ID, DIMS, N, REGISTRY, VISEMES, ARKIT_ORDER, PALM_CLAMP, PALM_CLAMP_TARGET, qmul, rotate, qfromMatrix, units,
  calibrationMeasure, cross, dot, sub, add, scale,
} from './codec.mjs';

const IDENTITY = [1, 0, 0, 0];
const conj = (q) => [q[0], -q[1], -q[2], -q[3]];
const DOWN = [0, -1, 0];
const EPS = 1e-9;
/** Seed 003: arm chains with a bone shorter than this (metres) are not solved. */
export const MIN_BONE_LENGTH = 0.03;
/** Share of the head rotation per joint (neck_01, neck_02, head), renormalized over the
 * joints present (posewire.consumers.pose.HEAD_SHARES). */
export const HEAD_SHARES = [['neck_01', 0.25], ['neck_02', 0.25], ['head', 0.5]];
/** The five fingers, thumb first (spec §4.3). */
export const FINGERS = ['thumb', 'index', 'middle', 'ring', 'pinky'];
const SIDES = ['l', 'r'];
const LATERAL = { l: [1, 0, 0], r: [-1, 0, 0] };
const FIXED_SENSE = { l: 1, r: -1 };
/** Zero-spread elbow direction before removing its component along the arm (spec §4.1,
 * posewire.codec.elbow.ELBOW_REFERENCE: down, a little back). */
export const ELBOW_REFERENCE = [0, -1, -0.25];
const ARM_SIGN = { l: [1, 1, 1], r: [-1, 1, 1] }; // spec §3.2: right lateral is -X
const NAVEL_SITES = ['shoulder_l', 'shoulder_r', 'hip_mid'];

const idx = (id) => BY_ID.get(id).index;
const radians = (deg) => (deg * Math.PI) / 180;
const maxOf = (ids) => ids.map((id) => BY_ID.get(id).max);
const BODY_MAX = maxOf(['b_yaw', 'b_pitch', 'b_roll']);
const HEAD_MAX = maxOf(['h_yaw', 'h_pitch', 'h_roll']);
const ARM_MAX = BY_ID.get('a_x_l').max;
const LOWER = DIMS.map((d) => (d.polarity === 'unipolar' ? 0 : -1));
const DEFAULTS = DIMS.map((d) => d.default);

function unitLen(v) {
  const n = Math.sqrt(dot(v, v));
  const d = n > 0 ? n : 1;
  return [[v[0] / d, v[1] / d, v[2] / d], n];
}
const reject = (v, u) => sub(v, scale(u, dot(v, u)));

// ---------------------------------------------------------------------------------------
// skeleton

/**
 * A skeleton from rest WORLD positions (J×3) and bind rotations (J×4, default identity);
 * parents precede children, the root first. `sites`: {name: [joint name, world point]}.
 */
export function skeletonFromWorld({ names, parents, positions, rotations = null, sites = {} }) {
  const J = names.length;
  const rot = rotations ?? names.map(() => IDENTITY);
  const offsets = [];
  const rest = [];
  for (let j = 0; j < J; j++) {
    const p = parents[j];
    if (p < 0) {
      offsets.push([...positions[j]]);
      rest.push([...rot[j]]);
    } else {
      const inv = conj(rot[p]);
      offsets.push(rotate(inv, sub(positions[j], positions[p])));
      rest.push(qmul(inv, rot[j]));
    }
  }
  const index = new Map(names.map((n, i) => [n, i]));
  const local = {};
  for (const [name, [joint, point]] of Object.entries(sites)) {
    const j = index.get(joint);
    local[name] = [j, rotate(conj(rot[j]), sub(point, positions[j]))];
  }
  return { names: [...names], parents: [...parents], offsets, rest, sites: local, index };
}

/** Forward kinematics: world positions (J×3) and rotations (J×4) from local rotations. */
export function fk(skel, local) {
  const pos = [];
  const rot = [];
  for (let j = 0; j < skel.names.length; j++) {
    const p = skel.parents[j];
    if (p < 0) {
      pos.push([...skel.offsets[j]]);
      rot.push(local[j]);
    } else {
      pos.push(add(pos[p], rotate(rot[p], skel.offsets[j])));
      rot.push(qmul(rot[p], local[j]));
    }
  }
  return { positions: pos, rotations: rot };
}

/** The §4.1 reference distances of an avatar (posewire.consumers.skeleton.calibration_of):
 * arm and hand as chain lengths (arm extended, hand open), torso |navel − neck| and the
 * shoulder width at rest. */
export function calibrationOf(skel, restPos = null, restRot = null) {
  if (!restPos) ({ positions: restPos, rotations: restRot } = fk(skel, skel.rest));
  const point = (name) => {
    if (skel.index.has(name)) return restPos[skel.index.get(name)];
    if (name in skel.sites) {
      const [j, off] = skel.sites[name];
      return add(restPos[j], rotate(restRot[j], off));
    }
    return null;
  };
  const chain = (names) => {
    const pts = names.map(point);
    if (!pts[0] || !pts[pts.length - 1]) return null;
    const present = pts.filter((p) => p);
    let total = 0;
    for (let i = 1; i < present.length; i++) total += Math.sqrt(dot(sub(present[i], present[i - 1]), sub(present[i], present[i - 1])));
    return total;
  };
  const sl = point('upperarm_l');
  const sr = point('upperarm_r');
  const tl = point('thigh_l');
  const tr = point('thigh_r');
  const sites = {};
  if (sl && sr) Object.assign(sites, { shoulder_l: sl, shoulder_r: sr });
  if (sl && sr && tl && tr) sites.hip_mid = scale(add(tl, tr), 0.5);
  const measured = calibrationMeasure({ sites: Object.fromEntries(NAVEL_SITES.filter((k) => k in sites).map((k) => [k, sites[k]])) });
  return {
    hand_length: chain(['hand_r', 'middle_01_r', 'middle_02_r', 'middle_03_r', 'middle_tip_r']),
    torso_length: measured.torso_length,
    arm_length: chain(['upperarm_r', 'lowerarm_r', 'hand_r']),
    shoulder_width: measured.shoulder_width,
  };
}

// ---------------------------------------------------------------------------------------
// plan: everything that depends only on the skeleton

const EX = [1, 0, 0];
const EZ = [0, 0, 1];

/** Build the decode plan of a skeleton (from skeletonFromWorld); throws for a skeleton
 * without a spine joint or arm bones. */
export function decodePlan(skel) {
  const { positions: pos, rotations: rot } = fk(skel, skel.rest);
  const ix = skel.index;
  const skipped = [];
  const spineAll = REGISTRY.spine_shares.map((r) => [r.joint, r.share]);
  const spine = spineAll.filter(([j]) => ix.has(j));
  skipped.push(...spineAll.filter(([j]) => !ix.has(j)).map(([j]) => j));
  if (!spine.length) throw new Error('usage.bad_option: skeleton has no spine joint');
  const head = HEAD_SHARES.filter(([j]) => ix.has(j));
  skipped.push(...HEAD_SHARES.filter(([j]) => !ix.has(j)).map(([j]) => j));
  const arm = {};
  for (const s of SIDES) {
    const names = [`upperarm_${s}`, `lowerarm_${s}`, `hand_${s}`];
    const missing = names.filter((n) => !ix.has(n));
    if (missing.length) throw new Error(`usage.bad_option: skeleton lacks arm bones ${missing}`);
    const [u, l, h] = names.map((n) => ix.get(n));
    const [upperDir, upperLen] = unitLen(sub(pos[l], pos[u]));
    const [lowerDir, lowerLen] = unitLen(sub(pos[h], pos[l]));
    arm[s] = { joints: [u, l, h], shoulder: pos[u], upperDir, upperLen, lowerDir, lowerLen };
  }
  const neck = scale(add(arm.l.shoulder, arm.r.shoulder), 0.5);
  const fallback = SIDES.some((s) => arm[s].upperLen < MIN_BONE_LENGTH || arm[s].lowerLen < MIN_BONE_LENGTH);

  // hand-local frame at rest per side (spec §2.4): fingers = wrist -> middle_01,
  // thumb side = index_01 - pinky_01 (left: away from the thumb)
  const restInv = {};
  for (const s of SIDES) {
    const wrist = pos[arm[s].joints[2]];
    let y = ix.has(`middle_01_${s}`) ? sub(pos[ix.get(`middle_01_${s}`)], wrist) : sub(wrist, pos[arm[s].joints[1]]);
    y = unitLen(y)[0];
    let across = ix.has(`index_01_${s}`) && ix.has(`pinky_01_${s}`)
      ? sub(pos[ix.get(`index_01_${s}`)], pos[ix.get(`pinky_01_${s}`)]) : [0, 0, 1];
    if (s === 'l') across = scale(across, -1);
    const x = unitLen(reject(across, y))[0];
    const z = cross(x, y);
    const P = qfromMatrix([[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]]);
    restInv[s] = conj(P);
  }

  // finger joints: elementary rotations in right-like hand-local coordinates (spec §4.3)
  const fingers = []; // {joint, side, parent (index in fingers or -1), factors: [[axis, dimIndex, halfGain]]}
  for (const s of SIDES) {
    const mirror = s === 'l' ? [-1, 1, 1] : [1, 1, 1];
    for (const f of FINGERS) {
      const joints = [1, 2, 3].map((n) => `${f}_0${n}_${s}`);
      skipped.push(...joints.filter((j) => !ix.has(j)));
      let specs;
      if (f === 'thumb') {
        let t;
        if (ix.has(joints[0]) && ix.has(joints[1])) {
          const r = rotate(restInv[s], sub(pos[ix.get(joints[1])], pos[ix.get(joints[0])]));
          t = [mirror[0] * r[0], mirror[1] * r[1], 0];
        } else t = [0.6, 0.8, 0];
        const ty = unitLen(t)[0];
        const tx = cross(ty, EZ);
        specs = [[[EZ, `g_thumb_fold_${s}`], [tx, `g_thumb_side_${s}`], [ty, `g_thumb_roll_${s}`]],
          [[EZ, `g_thumb_curl_${s}`]], [[EZ, `g_thumb_distal_${s}`]]];
      } else {
        specs = [[[EZ, `g_${f}_side_${s}`], [EX, `g_${f}_fold_${s}`]],
          [[EX, `g_${f}_curl_${s}`]], [[EX, `g_${f}_distal_${s}`]]];
      }
      // spec §4.3: side is measured from the finger's metacarpal (wrist -> *_01) in the palm
      // plane; the bone's bind direction may differ: R_Z(α − β + σ + side)
      let offset = 0;
      if (f !== 'thumb' && ix.has(joints[0]) && ix.has(joints[1])) {
        const local = (v) => { const r = rotate(restInv[s], v); return [mirror[0] * r[0], r[1], r[2]]; };
        const meta = local(sub(pos[ix.get(joints[0])], pos[arm[s].joints[2]]));
        const bone = local(sub(pos[ix.get(joints[1])], pos[ix.get(joints[0])]));
        offset = Math.atan2(-meta[0], meta[1]) - Math.atan2(-bone[0], bone[1]);
      }
      // spec §4.3: θ_side = neutral_deg + side · angle_deg
      if (f !== 'thumb') offset += radians(BY_ID.get(`g_${f}_side_${s}`).neutral_deg ?? 0);
      let parent = -1;
      joints.forEach((name, k) => {
        if (!ix.has(name)) return;
        const factors = specs[k].map(([axis, dim], m) => [axis, idx(dim), 0.5 * radians(BY_ID.get(dim).angle_deg ?? 0),
          k === 0 && m === 0 ? 0.5 * offset : 0]);
        fingers.push({ joint: ix.get(name), side: s, parent, factors });
        parent = fingers.length - 1;
      });
    }
  }

  // spec §4.5 spine and §4.4 head: cumulative fractional powers
  const spineTotal = spine.reduce((a, [, x]) => a + x, 0);
  let acc = 0;
  const spinePowers = spine.map(([j, x]) => [ix.get(j), (acc += x / spineTotal)]);
  const headTotal = head.reduce((a, [, x]) => a + x, 0);
  acc = 0;
  const headPowers = head.map(([j, x]) => [ix.get(j), (acc += x / headTotal)]);

  // rest factors: L_rest · W_rest⁻¹ and W_rest (identity for world-aligned bind frames)
  const restLeft = skel.rest.map((l, j) => qmul(l, conj(rot[j])));
  const identityRest = restLeft.every((q, j) => isIdentity(q) && isIdentity(rot[j]));
  return {
    skel, skipped, calibration: calibrationOf(skel, pos, rot), restPos: pos, neck, arm, fallback,
    restInv, fingers, spinePowers, headPowers,
    restLeft: identityRest ? null : restLeft, restWorld: identityRest ? null : rot,
  };
}

const isIdentity = (q) => q[0] === 1 && q[1] === 0 && q[2] === 0 && q[3] === 0;

// ---------------------------------------------------------------------------------------
// one frame

/** spec §3.5 with policy "clamp": NaN -> default (replaced), out of range -> clamped. */
export function validateClamp(values) {
  if (values.length !== N) throw new Error(`usage.shape: vector must have ${N} values, got ${values.length}`);
  const out = new Float64Array(N);
  const replaced = [];
  const clamped = [];
  for (let i = 0; i < N; i++) {
    let x = values[i];
    if (!Number.isFinite(x)) {
      replaced.push(DIMS[i].id);
      x = DEFAULTS[i];
    }
    const c = Math.min(Math.max(x, LOWER[i]), 1);
    if (c !== x) clamped.push(DIMS[i].id);
    out[i] = c;
  }
  return { vec: out, replaced, clamped };
}

function eulerQ(v, dims, maxDeg) {
  // q_Y(yaw) · q_X(pitch) · q_Z(roll) (spec §4.4)
  const h = dims.map((d, k) => 0.5 * radians(maxDeg[k]) * v[idx(d)]);
  const qy = [Math.cos(h[0]), 0, Math.sin(h[0]), 0];
  const qx = [Math.cos(h[1]), Math.sin(h[1]), 0, 0];
  const qz = [Math.cos(h[2]), 0, 0, Math.sin(h[2])];
  return qmul(qmul(qy, qx), qz);
}

function power(q, share) {
  const s = Math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const d = s > 0 ? s : 1;
  const a = Math.atan2(s, q[0]) * share;
  const k = Math.sin(a) / d;
  return [Math.cos(a), q[1] * k, q[2] * k, q[3] * k];
}

function minRotation(va, vb) {
  let w = 1 + dot(va, vb);
  let xyz = cross(va, vb);
  if (w < 1e-12) {
    let alt = cross(va, EZ);
    if (Math.sqrt(dot(alt, alt)) < 1e-6) alt = cross(va, EX);
    xyz = unitLen(alt)[0];
    w = 0;
  }
  const n = Math.sqrt(w * w + dot(xyz, xyz));
  return [w / n, xyz[0] / n, xyz[1] / n, xyz[2] / n];
}

function armPole(axis, spread, s) {
  // spec §4.1 elbow spread frame (posewire.codec.elbow.spread_basis): ref = the reference
  // direction orthogonal to the arm, toward = sense · (u × ref); pole = ref cos φ + toward sin φ
  const u = unitLen(axis)[0];
  let r = reject(ELBOW_REFERENCE, u);
  let n = Math.sqrt(dot(r, r));
  if (n < 1e-9) {
    r = reject(EZ, u);
    if (Math.sqrt(dot(r, r)) < 1e-6) r = reject(DOWN, u);
    n = Math.sqrt(dot(r, r));
  }
  r = [r[0] / n, r[1] / n, r[2] / n];
  const t = cross(u, r);
  const toward = dot(t, LATERAL[s]);
  const sense = Math.abs(toward) > 1e-6 ? Math.sign(toward) : FIXED_SENSE[s];
  const phi = spread * (Math.PI / 2);
  const c = Math.cos(phi);
  const sn = Math.sin(phi) * sense;
  return [r[0] * c + t[0] * sn, r[1] * c + t[1] * sn, r[2] * c + t[2] * sn];
}

function solveArm(a, target, pole) {
  // two-bone IK (posewire.consumers.ik.two_bone_ik)
  const { shoulder: s0, upperDir: ud, upperLen: aL, lowerDir: ld, lowerLen: bL } = a;
  let [u, dist] = unitLen(sub(target, s0));
  if (dist < EPS) u = ud;
  const lo = Math.abs(aL - bL);
  const hi = aL + bL;
  const d = Math.min(Math.max(dist, lo), hi);
  const clamped = dist > hi * (1 + 1e-12) || dist < lo * (1 - 1e-12);
  const cosA = Math.min(Math.max((aL * aL + d * d - bL * bL) / (2 * aL * Math.max(d, EPS)), -1), 1);
  const sinA = Math.sqrt(1 - cosA * cosA);
  let [v, vn] = unitLen(reject(pole, u));
  v = unitLen(reject(v, u))[0];
  if (vn < 1e-9) {
    let alt = reject(EZ, u);
    if (Math.sqrt(dot(alt, alt)) < 1e-6) alt = reject(DOWN, u);
    v = unitLen(alt)[0];
  }
  const elbow = [0, 1, 2].map((i) => s0[i] + aL * (cosA * u[i] + sinA * v[i]));
  const wrist = [0, 1, 2].map((i) => s0[i] + d * u[i]);
  const upperDir1 = [0, 1, 2].map((i) => (elbow[i] - s0[i]) / aL);
  const lowerDir1 = unitLen(sub(wrist, elbow))[0];
  const upper = minRotation(ud, upperDir1);
  const lower = qmul(minRotation(rotate(upper, ld), lowerDir1), upper);
  return { upper, lower, elbow, wrist, clamped };
}

function palmQ(v, s) {
  // spec §3.3, §4.2: clamp |v| > 0.98 to v · (T / |v|), T = 0.98 − 2^-49 (so |v| ≤ 0.98 after it),
  // w = sqrt(1 - |v|²) >= 0, left = sagittal mirror; wire values lie in [-1, 1]: no scaling (§1.5)
  let [x, y, z] = ['w_qx', 'w_qy', 'w_qz'].map((b) => v[idx(`${b}_${s}`)]);
  const n = Math.sqrt(x * x + y * y + z * z);
  const over = n > PALM_CLAMP;
  if (over) {
    const f = PALM_CLAMP_TARGET / n;
    x *= f;
    y *= f;
    z *= f;
  }
  const w = Math.sqrt(Math.max(0, 1 - (x * x + y * y + z * z)));
  return { q: s === 'l' ? [w, x, -y, -z] : [w, x, y, z], clamped: over };
}

/**
 * Decode one pose vector (N normalized values, NaN = default) on a plan's skeleton.
 * Returns {local: J×4 local rotations, targets, ik, palmClamped, report}. `calibration`:
 * this avatar's reference distances (default: measured from the skeleton).
 */
export function decodePose(values, plan, { calibration = null } = {}) {
  const { vec: v, replaced, clamped } = validateClamp(values);
  const J = plan.skel.names.length;
  const G = new Array(J).fill(null);
  const Q = eulerQ(v, ['b_yaw', 'b_pitch', 'b_roll'], BODY_MAX);
  const H = eulerQ(v, ['h_yaw', 'h_pitch', 'h_roll'], HEAD_MAX);
  for (const [j, share] of plan.spinePowers) G[j] = power(Q, share);
  for (const [j, share] of plan.headPowers) G[j] = qmul(Q, power(H, share));

  const { L } = units(calibration ?? plan.calibration);
  const targets = {};
  const ik = {};
  const palmClamped = {};
  const palms = {};
  for (const s of SIDES) {
    const a = plan.arm[s];
    const target = [0, 1, 2].map((i) => plan.neck[i] + v[idx(`a_${'xyz'[i]}_${s}`)] * ARM_SIGN[s][i] * ARM_MAX * L[i]);
    targets[s] = target;
    if (plan.fallback) {
      ik[s] = { upper: IDENTITY, lower: IDENTITY, elbow: plan.restPos[a.joints[1]], wrist: plan.restPos[a.joints[2]], clamped: false, fallback: true };
    } else {
      ik[s] = solveArm(a, target, armPole(sub(target, a.shoulder), v[idx(`a_spread_${s}`)], s));
    }
    G[a.joints[0]] = qmul(Q, ik[s].upper);
    G[a.joints[1]] = qmul(Q, ik[s].lower);
    const p = palmQ(v, s);
    palmClamped[s] = p.clamped;
    palms[s] = qmul(Q, p.q);
    G[a.joints[2]] = qmul(palms[s], plan.restInv[s]);
  }
  // fingers: compose down each finger, mirror for the left hand, then palm · row · P⁻¹
  const chain = [];
  plan.fingers.forEach((f, k) => {
    let r = IDENTITY;
    for (const [axis, dim, gain, offset] of f.factors) {
      const h = gain * v[dim] + offset;
      const sn = Math.sin(h);
      r = qmul(r, [Math.cos(h), axis[0] * sn, axis[1] * sn, axis[2] * sn]);
    }
    chain[k] = f.parent < 0 ? r : qmul(chain[f.parent], r);
    const c = chain[k];
    const row = f.side === 'l' ? [c[0], c[1], -c[2], -c[3]] : c;
    G[f.joint] = qmul(qmul(palms[f.side], row), plan.restInv[f.side]);
  });

  // inherit, then L_j = conj(G_parent) · G_j (· rest factors)
  const { parents } = plan.skel;
  for (let j = 0; j < J; j++) if (!G[j]) G[j] = parents[j] < 0 ? IDENTITY : G[parents[j]];
  const local = new Array(J);
  for (let j = 0; j < J; j++) {
    const p = parents[j];
    let q = qmul(conj(p < 0 ? G[j] : G[p]), G[j]);
    if (plan.restLeft) q = qmul(qmul(plan.restLeft[j], q), plan.restWorld[j]);
    local[j] = q;
  }
  local[0] = [...plan.skel.rest[0]];
  return {
    local, targets, ik, palmClamped,
    report: {
      replaced, clamped, unreachable: SIDES.filter((s) => ik[s].clamped),
      palm_clamped: SIDES.filter((s) => palmClamped[s]), skipped_joints: plan.skipped,
    },
  };
}

// ---------------------------------------------------------------------------------------
// face (spec §4.6, §4.7; seed 001 capability viseme15)

// per ARKit channel (ARKIT_ORDER): the (dim index, direction, gain) pairs driving it (§4.6)
const CHANNEL_DRIVERS = ARKIT_ORDER.map((c) => {
  const drivers = [];
  for (const d of DIMS) {
    for (const [list, sign] of [[d.positive, 1], [d.negative, -1]]) {
      for (const { channel, gain } of list) if (channel === c) drivers.push([d.index, sign, gain]);
    }
  }
  return drivers;
});
const IS_MOUTH = DIMS.map((d) => d.group === 'mouth');
// viseme baseline table (§4.7 seed table): per viseme, [dim index, value] pairs
const BASELINE = VISEMES.map((v) => (REGISTRY.mouthing_seed_table.find((r) => r.viseme === v)?.baseline ?? [])
  .map(({ dim, value }) => [idx(dim), value]));

/**
 * ARKit weights (all 52 channels, ARKIT_ORDER) and the 15 viseme weights (the mix,
 * untouched) of one pose vector under a mouthing mix (15 shares or null); a mix summing
 * over 1 is normalized (reported). Mouth dims go through the ARKit channels as the delta
 * over the viseme baseline (§4.7: same direction uses the remaining range 1 − |b|, the
 * opposite direction can cancel it); weights clip to 1 (reported).
 */
export function faceWeights(values, visemes = null) {
  const { vec: v } = validateClamp(values);
  let shares = visemes ? Array.from(visemes) : new Array(VISEMES.length).fill(0);
  let total = shares.reduce((a, b) => a + b, 0);
  const overflow = total === Infinity;
  if (overflow) { // §1.5: a sum beyond binary64 is taken of the shares times 2^-e (exact)
    const e = Math.floor(Math.log2(Math.max(...shares))) + 1;
    shares = shares.map((x) => x * 2 ** -1000 * 2 ** (1000 - e)); // e > 1020 here: two normal factors
    total = shares.reduce((a, b) => a + b, 0);
  }
  const normalized = total > 1 || overflow;
  if (normalized) shares = shares.map((x) => x / total);
  const base = new Float64Array(N);
  shares.forEach((x, k) => { if (x !== 0) for (const [i, value] of BASELINE[k]) base[i] += x * value; });
  const src = Float64Array.from(v);
  for (let i = 0; i < N; i++) {
    if (!IS_MOUTH[i]) continue;
    const a = v[i];
    const b = Math.min(Math.max(base[i], -1), 1);
    const mag = Math.abs(b);
    src[i] = Math.sign(a) * Math.sign(b) < 0 ? a * mag : a * (1 - mag);
  }
  const arkit = {};
  const clipped = [];
  ARKIT_ORDER.forEach((c, k) => {
    let w = 0;
    for (const [i, sign, gain] of CHANNEL_DRIVERS[k]) w += Math.max(src[i] * sign, 0) * gain;
    if (w > 1) clipped.push(c);
    arkit[c] = Math.min(w, 1);
  });
  const mix = {};
  VISEMES.forEach((name, k) => { mix[name] = shares[k]; });
  const report = {};
  if (normalized) report.mix_normalized = true;
  if (clipped.length) report.clipped = clipped;
  return { arkit, visemes: mix, report };
}

export { DEFAULTS, LOWER };
