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
const median = (xs) => { // xs: a Float64Array (sorted numerically in place, NaN last)
  xs.sort();
  let n = xs.length;
  while (n > 0 && !Number.isFinite(xs[n - 1])) n -= 1;
  let lo = 0;
  while (lo < n && !Number.isFinite(xs[lo])) lo += 1; // −Infinity first
  const v = xs.subarray(lo, n);
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
const N_GAINS = DEPTH_GAINS.length;
const N_BONES = HAND_BONES.length;
const GB = N_GAINS * N_BONES; // one hand's (gain, bone) ratios, gain-major
const GAIN_SQUARES = Float64Array.from(DEPTH_GAINS, (g) => g * g);
const BONE_A = Int32Array.from(HAND_BONES, ([a]) => a);
const BONE_B = Int32Array.from(HAND_BONES, ([, b]) => b);
const ACROSS = new Float64Array(N_BONES); // scratch: Δx² + Δy² and Δz² of the bones
const ALONG = new Float64Array(N_BONES);

/** The bones' squared lengths across (Δx² + Δy²) and along (Δz²) the camera axis of one
 * frame's hand into ACROSS, ALONG; false where not usable (a point missing, or a bone of length 0). */
function boneLengths(hand) {
  if (!hand || hand.length < 21) return false;
  for (let i = 0; i < 21; i++) {
    const p = hand[i];
    if (!p || !Number.isFinite(p[0]) || !Number.isFinite(p[1]) || !Number.isFinite(p[2])) return false;
  }
  for (let b = 0; b < N_BONES; b++) {
    const p = hand[BONE_A[b]]; const q = hand[BONE_B[b]];
    const dx = q[0] - p[0]; const dy = q[1] - p[1]; const dz = q[2] - p[2];
    ACROSS[b] = dx * dx + dy * dy; ALONG[b] = dz * dz;
    if (!(ACROSS[b] + ALONG[b] > 0.0)) return false;
  }
  return true;
}

/** hand.bone_length_ratios of one frame's hand into `out` from `at` (GB values, gain-major): per gain, ℓ²
 * of every bone over the frame's mean over its bones (ℓ² = Δx² + Δy² + g²·Δz², the mean summed
 * bone by bone in their order); false where not usable (a point missing, or a bone of length 0). */
export function boneLengthRatiosInto(hand, out, at = 0) {
  if (!boneLengths(hand)) return false;
  for (let k = 0, o = at; k < N_GAINS; k++, o += N_BONES) {
    const g2 = GAIN_SQUARES[k];
    let total = 0;
    for (let b = 0; b < N_BONES; b++) {
      const x = ACROSS[b] + g2 * ALONG[b];
      out[o + b] = x;
      total += x;
    }
    const mean = total / N_BONES;
    for (let b = 0; b < N_BONES; b++) out[o + b] /= mean;
  }
  return true;
}

/** hand.estimate_depth_gain's choice from its per-(gain, bone) terms: per gain the mean over
 * bones of sqrt(max(v − w/6, 0)) / m, the gain with the least, the first of those within
 * DEPTH_GAIN_TIE of it (spec §4.3). `m`, `v`, `w` (GB values): mean, variance and mean squared
 * second difference (w = 0 without a run of three). */
function leastGain(m, v, w) {
  let least = Infinity;
  const measure = new Float64Array(N_GAINS);
  for (let k = 0, o = 0; k < N_GAINS; k++, o += N_BONES) {
    let total = 0;
    for (let b = 0; b < N_BONES; b++) total += Math.sqrt(Math.max(v[o + b] - w[o + b] / 6.0, 0.0)) / m[o + b];
    measure[k] = total / N_BONES;
    if (measure[k] < least) least = measure[k];
    else if (Number.isNaN(measure[k])) return DEPTH_GAINS[0]; // as least_gain: NaN is numpy's min, nothing within it
  }
  for (let k = 0; k < N_GAINS; k++) if (measure[k] <= least + DEPTH_GAIN_TIE) return DEPTH_GAINS[k];
  return DEPTH_GAINS[0];
}

/** hand.estimate_depth_gain over frames in their order, each its ratios (GB values, gain-major)
 * or null (not usable), by two passes over the frames: the gain with the least mean over
 * bones of sqrt(max(v − w/6, 0)) / m, with m, v the mean and variance over the usable frames
 * and w the mean squared second difference over runs of three usable frames (0 without one);
 * null with fewer than 10 usable frames (spec §4.3). The reference the running sums of
 * DepthGainSums are checked against (tests/test_js_live.py). */
export function estimateDepthGain(frames) {
  const usable = frames.filter((f) => f !== null);
  if (usable.length < DEPTH_GAIN_MIN_FRAMES) return null;
  const m = new Float64Array(GB); const v = new Float64Array(GB); const w = new Float64Array(GB);
  for (const f of usable) for (let j = 0; j < GB; j++) m[j] += f[j];
  for (let j = 0; j < GB; j++) m[j] /= usable.length;
  for (const f of usable) for (let j = 0; j < GB; j++) v[j] += (f[j] - m[j]) ** 2;
  for (let j = 0; j < GB; j++) v[j] /= usable.length;
  let runs = 0;
  for (let t = 2; t < frames.length; t++) {
    const a = frames[t]; const b = frames[t - 1]; const c = frames[t - 2];
    if (a === null || b === null || c === null) continue;
    runs += 1;
    for (let j = 0; j < GB; j++) w[j] += (a[j] - 2.0 * b[j] + c[j]) ** 2;
  }
  if (runs) for (let j = 0; j < GB; j++) w[j] /= runs;
  return leastGain(m, v, w);
}

/** One hand's depth gain over the last `window` rows kept as running sums (spec §4.3, as
 * producers/live.py LiveCalibration): per (gain, bone) the count, Σd and Σd² of d = ratio − the
 * hand's reference row (its first usable row, so that no cancellation occurs) and the Σ of the
 * squared second differences, each kept on the last row of its run of three. A row adds its
 * terms as it enters and takes them out as it leaves the window; an estimate leaves out the
 * runs of the window's first two rows (they reach before it). The variance is Σd²/n − (Σd/n)²,
 * the window's two-pass value to round-off, so the least measure is the same gain but for ties
 * within round-off. Per row the work is one pass over its 81 × 20 ratios (in, and out). */
class DepthGainSums {
  constructor(window) {
    this.window = window;
    this.size = window + 2; // a row is kept two rows past the window: the runs of three ending after it
    this.ratios = new Float64Array(this.size * GB);
    this.second = new Float64Array(this.size * GB); // squared second difference of the run ending on the row
    this.usable = new Uint8Array(this.size);
    this.ran = new Uint8Array(this.size);
    this.reference = null;
    this.count = 0; // rows so far
    this.n = 0; this.n3 = 0;
    this.s1 = new Float64Array(GB); this.s2 = new Float64Array(GB); this.s3 = new Float64Array(GB);
  }

  /** One row: `hand` (21 points or null). One pass over its 81 × 20 ratios (boneLengthRatiosInto's
   * values, computed in the same pass) takes them and its run of three into the sums and the
   * row that leaves the window out of them. */
  push(hand) {
    const { size, ratios, second, s1, s2, s3 } = this;
    const k = this.count;
    this.count = k + 1;
    const row = k % size; const o = row * GB;
    // the row that leaves the window (-1: none, or not usable), and whether it ended a run
    const leaving = k >= this.window ? (k - this.window) % size : -1;
    const out = leaving >= 0 && this.usable[leaving] ? leaving * GB : -1;
    const outRan = out >= 0 && this.ran[leaving] === 1;
    if (out >= 0) this.n -= 1;
    if (outRan) this.n3 -= 1;
    const usable = boneLengths(hand);
    this.usable[row] = usable ? 1 : 0;
    this.ran[row] = 0;
    if (usable && this.reference === null) { // the hand's first usable row: the sums' reference
      boneLengthRatiosInto(hand, ratios, o);
      this.reference = ratios.slice(o, o + GB);
    }
    const ref = this.reference;
    if (!usable) {
      if (out >= 0) {
        for (let j = 0; j < GB; j++) {
          const e = ratios[out + j] - ref[j];
          s1[j] -= e; s2[j] -= e * e;
          if (outRan) s3[j] -= second[out + j];
        }
      }
      return;
    }
    this.n += 1;
    const r1 = (k - 1 + size) % size; const r2 = (k - 2 + size) % size;
    const ran = k >= 2 && this.usable[r1] === 1 && this.usable[r2] === 1;
    if (ran) { this.ran[row] = 1; this.n3 += 1; }
    const o1 = r1 * GB; const o2 = r2 * GB;
    for (let g = 0, base = 0; g < N_GAINS; g++, base += N_BONES) {
      const g2 = GAIN_SQUARES[g];
      let total = 0;
      for (let b = 0; b < N_BONES; b++) total += ACROSS[b] + g2 * ALONG[b];
      const mean = total / N_BONES;
      for (let b = 0; b < N_BONES; b++) {
        const j = base + b;
        const r = (ACROSS[b] + g2 * ALONG[b]) / mean; // boneLengthRatiosInto's value
        ratios[o + j] = r;
        let d = r - ref[j]; let dd = d * d;
        let c2 = 0.0;
        if (ran) {
          const c = r - 2.0 * ratios[o1 + j] + ratios[o2 + j];
          c2 = c * c;
          second[o + j] = c2;
        }
        if (out >= 0) {
          const e = ratios[out + j] - ref[j];
          d -= e; dd -= e * e;
          if (outRan) c2 -= second[out + j];
        }
        s1[j] += d; s2[j] += dd; s3[j] += c2;
      }
    }
  }

  /** The depth gain of the window's rows (hand.estimate_depth_gain), or null with fewer than
   * DEPTH_GAIN_MIN_FRAMES usable rows. */
  gain() {
    const { n, size, second, reference: ref } = this;
    if (n < DEPTH_GAIN_MIN_FRAMES) return null;
    const first = Math.max(0, this.count - this.window);
    const m = new Float64Array(GB); const v = new Float64Array(GB); const w = new Float64Array(GB);
    for (let j = 0; j < GB; j++) {
      const mean = this.s1[j] / n;
      m[j] = ref[j] + mean;
      v[j] = this.s2[j] / n - mean * mean;
    }
    // the runs that end on the window's first two rows reach before it
    let runs = this.n3; const before = [];
    for (let t = first; t < Math.min(first + 2, this.count); t++) {
      if (this.ran[t % size]) { runs -= 1; before.push((t % size) * GB); }
    }
    if (runs > 0) {
      for (let j = 0; j < GB; j++) {
        let s = this.s3[j];
        for (const o of before) s -= second[o + j];
        w[j] = s / runs;
      }
    }
    return leastGain(m, v, w);
  }
}

/** The running robust estimate of the performer's calibration (producers/live.py
 * LiveCalibration): medians over the last `window` frames with a body, re-estimated every
 * `every` such frames; a new estimate replaces the one in use once the last `settle`
 * estimates agree within `tolerance` and differ from it by more. The hands' depth gains are
 * kept as running sums (DepthGainSums), so that no frame pays for a whole window (spec §4.3). */
export class LiveCalibration {
  constructor({ window = 150, every = 15, settle = 3, tolerance = 0.03, visibilityThreshold = 0.5 } = {}) {
    Object.assign(this, { window, every, settle, tolerance, visibilityThreshold });
    this.shoulders = new Float64Array(window); // a ring of the last `window` shoulder widths
    this.seen = 0; // frames with a body so far
    this.sorted = new Float64Array(window); // scratch for the median
    this.gainSums = [new DepthGainSums(window), new DepthGainSums(window)]; // right, left
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
    const P = POSE_POINTS; const world = frame.pose_world;
    const sl = yUp(world[P.shoulder_l]); const sr = yUp(world[P.shoulder_r]);
    const hl = yUp(world[P.hip_l]); const hr = yUp(world[P.hip_r]);
    if (!(okPoint(sl) && okPoint(sr) && okPoint(hl) && okPoint(hr))) return null;
    // spec §4.1 "A camera producer's units": the shoulder width (the units' only measure) and the
    // hands' bones (their depth gains, §4.3)
    this.shoulders[this.seen % this.window] = dist(sl, sr);
    this.seen += 1;
    this.gainSums[0].push(frame.right_hand);
    this.gainSums[1].push(frame.left_hand);
    this.since += 1;
    if (this.current !== null && this.since < this.every) return null;
    this.since = 0;
    const estimate = this._estimate();
    if (estimate === null) return null;
    const gains = this.gainSums.map((sums) => sums.gain());
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
    const n = Math.min(this.seen, this.window);
    this.sorted.set(this.shoulders.subarray(0, n));
    const S = median(this.sorted.subarray(0, n));
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

/** The width of the visibility hold (spec §7.3 "Visibility hysteresis"; producers/filter.py VISIBILITY_HOLD). */
export const VISIBILITY_HOLD = 0.15;

/** Hysteresis on the pose landmarks' visibility of a stream (spec §7.3 "Visibility
 * hysteresis"; producers/filter.py VisibilityHold): a backlash of width `width` per landmark.
 * The held value starts at the first visibility and moves to a new one only where that differs
 * from it by more than `width`; the encoder's visibility cuts are taken on the held value. */
export class VisibilityHold {
  constructor(width = VISIBILITY_HOLD) {
    if (!(width >= 0 && width < 1)) throw new RangeError(`the visibility hold's width must be in [0, 1), got ${width}`);
    this.width = width;
    this.held = null;
  }

  /** The held visibility (a new array of 33) after this frame's `visibility` (33 numbers) and,
   * where known, whether each landmark lies inside the image, `inFrame` (33 booleans): a missing
   * visibility and a landmark outside the image count 0. */
  apply(visibility, inFrame = null) {
    if (visibility.length !== 33) throw new RangeError(`visibility must have 33 values, got ${visibility.length}`);
    if (inFrame !== null && inFrame.length !== 33) throw new RangeError(`inFrame must have 33 values, got ${inFrame.length}`);
    const v = Array.from(visibility, (x, i) => (Number.isFinite(x) && (inFrame === null || inFrame[i]) ? x : 0));
    if (this.held === null) this.held = v;
    else this.held = v.map((x, i) => (Math.abs(x - this.held[i]) > this.width ? x : this.held[i]));
    return this.held.slice();
  }
}
