// The live producer's pieces around the encoder (js/posewire/encoder.mjs), for the browser
// capture page: MediaPipe results -> the encoder's frame object (as producers/mediapipe_source.py
// and producers/live.py build it), the live calibration (spec §4.1, as producers/live.py
// LiveCalibration) and the One-Euro filter (producers/filter.py).
//
// What differs from the Python producer, and why (spec/07-camera.md §7.5):
// * live calibration measures the shoulder width like the Python estimate (its units are the
//   shoulder width in adult proportions, spec §4.1), in world coordinates rather than the body
//   frame;

import { POSE_POINTS, FACE_POINTS, N_DIMS } from './encoder.mjs';
import { REGISTRY } from './codec.mjs';

// ---------------------------------------------------------------------------- MediaPipe -> frame
const pt = (l, w, h) => [l.x * w, l.y * h, l.z * w]; // isotropic pixels (the z of image landmarks has x's scale)

/**
 * Holistic results (`poseLandmarks`, world landmarks `za`, `leftHandLandmarks`,
 * `rightHandLandmarks`) and a FaceLandmarker result -> the encoder's frame object (spec §6.10)
 * of an un-mirrored image `width` × `height`. The head comes from the facial transformation
 * matrix (its rotation spans the four face points of the head frame, as producers/live.py).
 */
export function frameFromResults(holistic, face, width, height) {
  const world = holistic?.za ?? holistic?.poseWorldLandmarks;
  const image = holistic?.poseLandmarks;
  const frame = {
    pose_world: world ? world.map((p) => [p.x, p.y, p.z]) : new Array(33).fill(null),
    pose_visibility: image ? image.map((p) => p.visibility ?? 0) : new Array(33).fill(0),
    // normalized image coordinates: inside the image within [0, 1] (spec §4.5)
    pose_in_frame: image ? image.map((p) => p.x >= 0 && p.x <= 1 && p.y >= 0 && p.y <= 1) : null,
    left_hand: holistic?.leftHandLandmarks ? holistic.leftHandLandmarks.map((l) => pt(l, width, height)) : null,
    right_hand: holistic?.rightHandLandmarks ? holistic.rightHandLandmarks.map((l) => pt(l, width, height)) : null,
  };
  if (world && image) { // visibility is the world landmark's where it has one
    frame.pose_visibility = world.map((p, i) => p.visibility ?? image[i].visibility ?? 0);
  }
  const rot = faceRotation(face);
  if (rot !== null) {
    const X = [rot[0][0], rot[1][0], rot[2][0]]; const Y = [rot[0][1], rot[1][1], rot[2][1]];
    const toMp = (v) => [v[0], -v[1], -v[2]];
    const pts = new Array(478).fill(null);
    pts[FACE_POINTS.eye_outer_l] = toMp(X);
    pts[FACE_POINTS.eye_outer_r] = toMp(X.map((x) => -x));
    pts[FACE_POINTS.forehead] = toMp(Y);
    pts[FACE_POINTS.chin] = toMp(Y.map((x) => -x));
    frame.face = pts;
  }
  if (face) {
    const cats = face.faceBlendshapes?.[0]?.categories;
    frame.blendshapes = cats ? Object.fromEntries(cats.map((c) => [c.categoryName, c.score])) : null;
  }
  return frame;
}

/** The rotation (rows of a 3×3 matrix, y-up camera axes; columns X = subject's left, Y = up,
 * Z = forward) of a FaceLandmarker result's facial transformation matrix, made orthonormal
 * (Gram–Schmidt on X, Y), or null without a face. */
export function faceRotation(face) {
  const m = face?.facialTransformationMatrixes?.[0];
  if (!m || m.data?.length !== 16) return null;
  const R = (r, c) => m.data[c * 4 + r]; // packed column-major (MatrixData's default layout)
  const un = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
  const X = un([R(0, 0), R(1, 0), R(2, 0)]);
  let Y = [R(0, 1), R(1, 1), R(2, 1)];
  const k = X[0] * Y[0] + X[1] * Y[1] + X[2] * Y[2];
  Y = un([Y[0] - k * X[0], Y[1] - k * X[1], Y[2] - k * X[2]]);
  const Z = [X[1] * Y[2] - X[2] * Y[1], X[2] * Y[0] - X[0] * Y[2], X[0] * Y[1] - X[1] * Y[0]];
  if (![...X, ...Y].every(Number.isFinite)) return null;
  return [[X[0], Y[0], Z[0]], [X[1], Y[1], Z[1]], [X[2], Y[2], Z[2]]];
}

// spec §7.3: the gaze yaw from the irises (producers/face.py iris_gaze1)
const EYE_POINTS = [[33, 133, 468, 159, 145], [263, 362, 473, 386, 374]]; // r, l: outer, inner corner, iris, lids
const EYEBALL_RADIUS_EYE_WIDTHS = 0.4;
const GAZE_FULL_DEG = 30.0;
function asinDeg(offset, radius) {
  let ratio;
  if (radius === 0.0) ratio = offset === 0.0 || Number.isNaN(offset) ? NaN : (offset < 0 ? -Infinity : Infinity);
  else ratio = offset / radius;
  if (ratio > 1.0) ratio = 1.0; else if (ratio < -1.0) ratio = -1.0;
  return Math.asin(ratio) * (180.0 / Math.PI);
}

/** `[f_gaze_yaw, f_gaze_pitch]` and the clip flag from a 478-point face mesh (MediaPipe
 * normalized landmarks of a `width` × `height` image) and the head rotation (rows, y-up
 * camera axes): producers/face.py iris_gaze1. */
export function irisGaze(mesh, width, height, rot) {
  const colX = [rot[0][0], rot[1][0], rot[2][0]]; const colY = [rot[0][1], rot[1][1], rot[2][1]];
  const at = (i) => [mesh[i].x * width, -(mesh[i].y * height), -(mesh[i].z * width)]; // isotropic, y-up
  const d3 = (a, b) => 0.0 + a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  let yaw = 0.0; let pitch = 0.0;
  for (const [o, n, c, u, l] of EYE_POINTS) {
    const [po, pn, iris, pu, pl] = [o, n, c, u, l].map(at);
    const corners = [0.5 * (po[0] + pn[0]), 0.5 * (po[1] + pn[1]), 0.5 * (po[2] + pn[2])];
    const lids = [0.5 * (pu[0] + pl[0]), 0.5 * (pu[1] + pl[1]), 0.5 * (pu[2] + pl[2])];
    const w = Math.sqrt((po[0] - pn[0]) ** 2 + (po[1] - pn[1]) ** 2 + (po[2] - pn[2]) ** 2);
    const radius = EYEBALL_RADIUS_EYE_WIDTHS * (w > 0 ? w : NaN);
    yaw += asinDeg(d3(colX, [iris[0] - corners[0], iris[1] - corners[1], iris[2] - corners[2]]), radius);
    pitch += asinDeg(d3(colY, [iris[0] - lids[0], iris[1] - lids[1], iris[2] - lids[2]]), radius);
  }
  const nYaw = 0.5 * yaw / GAZE_FULL_DEG; const nPitch = 0.5 * pitch / GAZE_FULL_DEG;
  const clipped = (Number.isFinite(nYaw) && Math.abs(nYaw) > 1.0) || (Number.isFinite(nPitch) && Math.abs(nPitch) > 1.0);
  const clip = (x) => (x > 1.0 ? 1.0 : x < -1.0 ? -1.0 : x);
  return [[clip(nYaw), clip(nPitch)], clipped];
}

/** Metres per image unit from the shoulder segment (landmarks.image_to_world_scale). */
export function handScale(holistic, width, height) {
  const world = holistic?.za ?? holistic?.poseWorldLandmarks;
  const image = holistic?.poseLandmarks;
  if (!world || !image) return NaN;
  const a = POSE_POINTS.shoulder_l; const b = POSE_POINTS.shoulder_r;
  const pa = pt(image[a], width, height); const pb = pt(image[b], width, height);
  const di = Math.hypot(pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]);
  const dw = Math.hypot(world[a].x - world[b].x, world[a].y - world[b].y, world[a].z - world[b].z);
  return di > 1e-9 ? dw / di : NaN;
}

// ---------------------------------------------------------------------------- live calibration (§4.1)
const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return null;
  const h = v.length >> 1;
  return v.length % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
};
const yUp = (p) => (p ? [p[0], -p[1], -p[2]] : null);
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const okPoint = (p) => p !== null && p.every(Number.isFinite);
// spec §4.1: the proportions a camera gives the performer, metres (landmarks.CAMERA_PROPORTIONS)
const CAMERA_PROPORTIONS = { hand_length: 0.19, torso_length: 0.40, arm_length: 0.56, shoulder_width: 0.36 };
// spec §4.3 "Hand depth gain" (producers/hand.py): gains 1.00, 1.05 … 5.00 tried on the 20 bones
const DEPTH_GAINS = Array.from({ length: 81 }, (_, k) => Math.round((1.0 + 0.05 * k) * 100) / 100);
const DEPTH_GAIN_MIN_FRAMES = 10;
const DEPTH_GAIN_TIE = 1e-9; // measures this close are a tie (spec §4.3)
const HAND_BONES = [[0, 1], [1, 2], [2, 3], [3, 4], [0, 5], [0, 9], [0, 13], [0, 17], [5, 6], [6, 7], [7, 8],
  [9, 10], [10, 11], [11, 12], [13, 14], [14, 15], [15, 16], [17, 18], [18, 19], [19, 20]];
/** hand.bone_length_ratios of one frame's hand: per gain, ℓ² of every bone over the frame's
 * mean over its bones (ℓ² = Δx² + Δy² + g²·Δz²); null where not usable. */
function boneLengthRatios(hand) {
  if (!hand || !hand.every((p) => p && p.every(Number.isFinite))) return null;
  const across = []; const along = [];
  for (const [a, b] of HAND_BONES) {
    const dx = hand[b][0] - hand[a][0]; const dy = hand[b][1] - hand[a][1]; const dz = hand[b][2] - hand[a][2];
    across.push(dx * dx + dy * dy); along.push(dz * dz);
    if (!(across.at(-1) + along.at(-1) > 0.0)) return null;
  }
  return DEPTH_GAINS.map((g) => {
    const squares = across.map((c, i) => c + g * g * along[i]);
    const mean = squares.reduce((t, x) => t + x, 0) / squares.length;
    return squares.map((x) => x / mean);
  });
}
/** hand.estimate_depth_gain over frames in their order (null: not usable): the gain with the
 * least mean over bones of sqrt(max(v − w/6, 0)) / m, with m, v the mean and variance over the
 * usable frames and w the mean squared second difference over runs of three usable frames
 * (0 without one); the first of those within DEPTH_GAIN_TIE of the least; null with fewer
 * than 10 usable frames (spec §4.3). */
function estimateDepthGain(frames) {
  const usable = frames.filter((f) => f !== null);
  if (usable.length < DEPTH_GAIN_MIN_FRAMES) return null;
  const runs = [];
  for (let t = 2; t < frames.length; t++) {
    if (frames[t] !== null && frames[t - 1] !== null && frames[t - 2] !== null) runs.push(t);
  }
  const spreads = DEPTH_GAINS.map((g, k) => {
    let total = 0;
    for (let b = 0; b < HAND_BONES.length; b++) {
      let mean = 0;
      for (const f of usable) mean += f[k][b];
      mean /= usable.length;
      let v = 0;
      for (const f of usable) v += (f[k][b] - mean) ** 2;
      v /= usable.length;
      let w = 0;
      for (const t of runs) w += (frames[t][k][b] - 2.0 * frames[t - 1][k][b] + frames[t - 2][k][b]) ** 2;
      if (runs.length) w /= runs.length;
      total += Math.sqrt(Math.max(v - w / 6.0, 0.0)) / mean;
    }
    return total / HAND_BONES.length;
  });
  const least = Math.min(...spreads);
  return DEPTH_GAINS[spreads.findIndex((s) => s <= least + DEPTH_GAIN_TIE)];
}

/** The running robust estimate of the performer's calibration (producers/live.py
 * LiveCalibration): medians over the last `window` frames with a body, re-estimated every
 * `every` such frames; a new estimate replaces the one in use once the last `settle`
 * estimates agree within `tolerance` and differ from it by more. */
export class LiveCalibration {
  constructor({ window = 150, every = 15, settle = 3, tolerance = 0.03, visibilityThreshold = 0.5 } = {}) {
    Object.assign(this, { window, every, settle, tolerance, visibilityThreshold });
    this.samples = [];
    this.estimates = [];
    this.since = 0;
    this.current = null;
    this.updates = 0;
    this.handDepthGain = { l: 1.0, r: 1.0 }; // spec §4.3: the producer's own, never sent
  }

  /** Feed one frame object (`scale`, metres per hand unit: handScale(), is not used since the
   * units come from the shoulder width, spec §4.1; kept for callers);
   * returns the new calibration when it changed (to be sent). */
  update(frame, scale = NaN) {
    const P = POSE_POINTS;
    const get = (k) => yUp(frame.pose_world[P[k]]);
    const [sl, sr, hl, hr] = ['shoulder_l', 'shoulder_r', 'hip_l', 'hip_r'].map(get);
    if (![sl, sr, hl, hr].every(okPoint)) return null;
    // spec §4.1 "A camera producer's units": the shoulder width (the units' only measure) and the
    // hands' bones (their depth gains, §4.3)
    const sample = { shoulder: dist(sl, sr), bones: [boneLengthRatios(frame.right_hand), boneLengthRatios(frame.left_hand)] };
    this.samples.push(sample);
    if (this.samples.length > this.window) this.samples.shift();
    this.since += 1;
    if (this.current !== null && this.since < this.every) return null;
    this.since = 0;
    const estimate = this._estimate();
    if (estimate === null) return null;
    const gains = ['r', 'l'].map((s, column) => estimateDepthGain(this.samples.map((x) => x.bones[column])));
    this.handDepthGain = { r: gains[0] ?? 1.0, l: gains[1] ?? 1.0 }; // updated even when not sent (as Python)
    this.estimates.push(estimate);
    if (this.estimates.length > this.settle) this.estimates.shift();
    if (this.current === null) return this._use(estimate);
    const settled = this.estimates.length === this.settle && this.estimates.every((e) => this._close(e, estimate));
    if (settled && !this._close(estimate, this.current)) return this._use(estimate);
    return null;
  }

  _use(estimate) {
    this.current = estimate;
    this.updates += 1;
    return estimate;
  }

  _close(a, b) {
    return ['hand_length', 'torso_length', 'arm_length', 'shoulder_width'].every((k) => {
      if ((a[k] === null) !== (b[k] === null)) return false;
      return a[k] === null || Math.abs(a[k] - b[k]) <= this.tolerance * Math.abs(b[k]);
    });
  }

  _estimate() {
    const S = median(this.samples.map((s) => s.shoulder));
    if (S === null) return null;
    // spec §4.1 "A camera producer's units": the units from the shoulder width in adult
    // proportions (landmarks.CAMERA_PROPORTIONS); the camera's hand, torso and arm are not used
    const k = S / CAMERA_PROPORTIONS.shoulder_width;
    return { hand_length: CAMERA_PROPORTIONS.hand_length * k, torso_length: CAMERA_PROPORTIONS.torso_length * k,
      arm_length: CAMERA_PROPORTIONS.arm_length * k, shoulder_width: S };
  }
}

// ---------------------------------------------------------------------------- One-Euro (producers/filter.py)
const PARAMS = { // per registry group: min_cutoff Hz, beta, d_cutoff Hz (filter.py DEFAULT_PARAMS)
  fingers: [0.5, 0.1, 1.0], palm: [1.0, 0.3, 1.0], arm: [1.5, 0.5, 1.0], head: [1.5, 0.5, 1.0], body: [1.5, 0.5, 1.0],
  face: [3.0, 1.0, 1.0], mouth: [3.0, 1.0, 1.0],
};
const alpha = (fc, dt) => 1.0 / (1.0 + 1.0 / (2.0 * Math.PI * fc * dt));
const DIM_INDEX = new Map(REGISTRY.dimensions.map((d) => [d.id, d.index]));
const PALM = ['l', 'r'].map((s) => ['x', 'y', 'z'].map((a) => DIM_INDEX.get(`w_q${a}_${s}`)));
// (roll, curl, distal) columns of each thumb, l then r (spec §4.3 double cover)
const THUMB = ['l', 'r'].map((s) => ['roll', 'curl', 'distal'].map((k) => DIM_INDEX.get(`g_thumb_${k}_${s}`)));
const dot4 = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
function slerp(a, b, t) {
  const theta = Math.acos(Math.min(1.0, Math.max(-1.0, dot4(a, b))));
  let out;
  if (theta < 1e-9) out = a.map((x, i) => x + t * (b[i] - x));
  else {
    const sa = Math.sin((1.0 - t) * theta); const sb = Math.sin(t * theta); const s = Math.sin(theta);
    out = a.map((x, i) => (sa * x + sb * b[i]) / s);
  }
  const n = Math.sqrt(dot4(out, out));
  return out.map((x) => x / n);
}

/** The streaming One-Euro filter of producers/filter.py VectorFilter: per dim with the
 * parameters of its registry group; the palm as a rotation (angular speed, slerp, w ≥ 0); the
 * thumb's roll on its double cover (spec §4.3); NaN passes through and restarts that dim. */
export class VectorFilter {
  constructor() {
    const groups = REGISTRY.dimensions.map((d) => d.group);
    this.scalar = REGISTRY.dimensions.filter((d) => d.group !== 'palm').map((d) => d.index);
    this.params = groups.map((g) => PARAMS[g]);
    this.x = new Float64Array(N_DIMS).fill(NaN);
    this.dx = new Float64Array(N_DIMS).fill(0);
    this.q = [[NaN, NaN, NaN, NaN], [NaN, NaN, NaN, NaN]];
    this.dq = [0, 0];
    this.t = null;
  }

  /** Filter `vector` at time `t` (seconds, strictly increasing); returns a new Float64Array. */
  apply(t, vector) {
    const v = Float64Array.from(vector);
    const out = Float64Array.from(vector);
    if (this.t !== null && !(t > this.t)) throw new Error(`frame times must increase (${t} after ${this.t})`);
    const dt = this.t === null ? null : t - this.t;
    this.t = t;
    // spec §4.3: the double cover (roll, curl, distal) ≡ (roll ∓ 180°, −curl, −distal),
    // continuous with the filtered roll
    for (const [ri, ci, di] of THUMB) {
      const prev = this.x[ri]; const roll = v[ri]; const curl = v[ci];
      if (Number.isFinite(prev) && Number.isFinite(roll) && Number.isFinite(curl) && roll !== 0.0) {
        const other = roll - (roll < 0 || Object.is(roll, -0) ? -2.0 : 2.0);
        if (Math.abs(other - prev) < Math.abs(roll - prev)) {
          v[ri] = Math.max(-1.0, Math.min(1.0, other)); v[ci] = -curl; v[di] = -v[di];
        }
      }
    }
    for (const i of this.scalar) {
      const x = v[i]; const prev = this.x[i];
      const fresh = Number.isFinite(x) && !Number.isFinite(prev);
      let next;
      if (dt === null) {
        next = x;
        this.dx[i] = 0;
      } else {
        const [minCut, beta, dCut] = this.params[i];
        const dx = fresh ? 0.0 : (x - prev) / dt;
        const ad = alpha(dCut, dt);
        this.dx[i] = Number.isFinite(dx) ? ad * dx + (1.0 - ad) * this.dx[i] : 0.0;
        const a = alpha(minCut + beta * Math.abs(this.dx[i]), dt);
        next = fresh ? x : a * x + (1.0 - a) * prev;
      }
      this.x[i] = Number.isFinite(x) ? next : NaN;
      out[i] = this.x[i];
    }
    const [pMin, pBeta, pDcut] = PARAMS.palm;
    PALM.forEach((cols, k) => { // the palms: rotations
      const p = cols.map((c) => v[c]);
      if (!p.every(Number.isFinite)) {
        this.q[k] = [NaN, NaN, NaN, NaN];
        cols.forEach((c) => { out[c] = NaN; });
        return;
      }
      let q = [Math.sqrt(Math.max(0.0, 1.0 - (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]))), ...p];
      const n = Math.sqrt(dot4(q, q));
      q = q.map((x) => x / n);
      const prev = this.q[k];
      if (dt === null || !prev.every(Number.isFinite)) {
        this.q[k] = q; this.dq[k] = 0.0;
        cols.forEach((c, j) => { out[c] = p[j]; });
        return;
      }
      if (dot4(q, prev) < 0.0) q = q.map((x) => -x);
      const angle = 2.0 * Math.acos(Math.min(1.0, Math.abs(dot4(q, prev))));
      const ad = alpha(pDcut, dt);
      this.dq[k] = ad * angle / dt + (1.0 - ad) * this.dq[k];
      const a = alpha(pMin + pBeta * this.dq[k], dt);
      this.q[k] = slerp(prev, q, a);
      const r = this.q[k][0] >= 0 ? this.q[k] : this.q[k].map((x) => -x);
      cols.forEach((c, j) => { out[c] = r[j + 1]; });
    });
    return out;
  }
}
