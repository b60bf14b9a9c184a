// posewire's JavaScript live path, as the capture page runs it per frame (js/capture/capture.mjs,
// from MediaPipe's results to the vector it sends): the live calibration (LiveCalibration.update,
// a new encoder calibration when it or the depth gain changed), encodeFrame, the head and gaze
// from the face (faceRotation, irisGaze) and the One-Euro filter — on the frames
// benchmarks/js/kalidokit_frame.cjs solves in the same run (benchmarks/fidelity_bench.py
// --section js-live).
// stdin = kalidokit_frame.cjs's JSON plus, per frame, "mesh" ([[x, y, z] x 478] normalized |
// null), "matrix" (16 numbers, column-major | null) and "blendshapes" ({ARKit name: weight} |
// null). One untimed pass (the JIT, the first estimate), then P timed passes with the same
// calibration running on (its window slides), each frame timed alone. stdout = JSON {"us":
// [CPU µs per frame (process.cpuUsage, user + system)]}.
import { encodeFrame, makeCalibration, headFromRotation } from '../../js/posewire/encoder.mjs';
import { LiveCalibration, VectorFilter, faceRotation, frameFromResults, handScale, irisGaze } from '../../js/posewire/live.mjs';
import { REGISTRY } from '../../js/posewire/codec.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { width, height, passes, frames } = JSON.parse(input);
const col = (id) => REGISTRY.dimensions.find((d) => d.id === id).index;
const HEAD_COLS = ['h_yaw', 'h_pitch', 'h_roll'].map(col);
const GAZE_COLS = ['f_gaze_yaw', 'f_gaze_pitch'].map(col);
const points = (list) => list && list.map(([x, y, z, visibility]) => ({ x, y, z, visibility }));
// MediaPipe's result objects (Holistic, FaceLandmarker), as the page gets them
const results = frames.map((f) => ({
  holistic: { za: points(f.pose3d), poseLandmarks: points(f.pose2d), leftHandLandmarks: points(f.left),
    rightHandLandmarks: points(f.right) },
  face: f.matrix ? { facialTransformationMatrixes: [{ data: f.matrix }], faceLandmarks: [points(f.mesh)],
    faceBlendshapes: f.blendshapes ? [{ categories: Object.entries(f.blendshapes).map(([categoryName, score]) => ({ categoryName, score })) }] : [] } : null,
}));
const prepared = results.map((r) => ({ ...r, frame: frameFromResults(r.holistic, r.face, width, height),
  scale: handScale(r.holistic, width, height) }));

const live = new LiveCalibration();
const smoothing = new VectorFilter();
let cal = makeCalibration(null);
let t = 0;
let sink = 0;
const step = ({ frame, face, scale }) => { // capture.mjs, from e0 to e1
  const gainBefore = live.handDepthGain;
  const changed = live.update(frame, scale);
  if (changed || live.handDepthGain !== gainBefore) cal = makeCalibration(live.current, live.handDepthGain);
  const enc = encodeFrame(frame, cal, { visibilityThreshold: 0.5 });
  const rot = faceRotation(face);
  if (rot !== null && enc.tracking.head !== 'tracked') {
    const [n] = headFromRotation(rot);
    HEAD_COLS.forEach((c, k) => { enc.vector[c] = n[k]; });
  }
  const mesh = face?.faceLandmarks?.[0];
  if (rot !== null && mesh?.length === 478) {
    const [[gYaw, gPitch]] = irisGaze(mesh, width, height, rot);
    if (Number.isFinite(gYaw)) enc.vector[GAZE_COLS[0]] = gYaw;
    if (frame.blendshapes == null && Number.isFinite(gPitch)) enc.vector[GAZE_COLS[1]] = gPitch;
  }
  t += 1 / 30;
  const vec = smoothing.apply(t, enc.vector);
  sink += Number.isFinite(vec[0]) ? 1 : 0;
};
for (const p of prepared) step(p); // warm-up: the JIT, the first estimate
const us = [];
for (let pass = 0; pass < passes; pass += 1) {
  for (const p of prepared) {
    const start = process.cpuUsage();
    step(p);
    const used = process.cpuUsage(start);
    us.push(used.user + used.system);
  }
}
process.stdout.write(JSON.stringify({ us, sink, updates: live.updates, hand_depth_gain: live.handDepthGain }));
