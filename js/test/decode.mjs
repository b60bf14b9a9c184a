// Decodes pose vectors with the JavaScript client for tests/test_js_decoder.py and the
// decode benchmark. stdin: one JSON document
//   {skeleton: {names, parents, positions, rotations?, sites?}, frames: [[N values, null = NaN]],
//    mouthing: [15 shares | null] (per frame, optional), repeat: R (timing runs, optional)}
// stdout: {local: [[J×4] per frame], arkit: [{channel: w}], visemes: [{viseme: w}],
//          report: [...], us_per_frame: {pose, face}, cpu_us_per_frame: {pose, face}}

import { readFileSync } from 'node:fs';
import { skeletonFromWorld, decodePlan, decodePose, faceWeights } from '../posewire/decoder.mjs';

const input = JSON.parse(readFileSync(0, 'utf8'));
const plan = decodePlan(skeletonFromWorld(input.skeleton));
const frames = input.frames.map((f) => Float64Array.from(f, (x) => (x === null ? NaN : x)));
const mouthing = input.mouthing ?? frames.map(() => null);
const out = { local: [], arkit: [], visemes: [], report: [] };
for (let i = 0; i < frames.length; i++) {
  const pose = decodePose(frames[i], plan);
  const face = faceWeights(frames[i], mouthing[i]);
  out.local.push(pose.local);
  out.report.push(pose.report);
  out.arkit.push(face.arkit);
  out.visemes.push(face.visemes);
}
const repeat = input.repeat ?? 0;
if (repeat > 0) {
  const time = (fn) => {
    for (let i = 0; i < Math.min(repeat, 2000); i++) fn(frames[i % frames.length], i); // warm up the JIT
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < repeat; i++) fn(frames[i % frames.length], i);
    return Number(process.hrtime.bigint() - t0) / 1e3 / repeat;
  };
  out.us_per_frame = {
    pose: time((f) => decodePose(f, plan)),
    face: time((f, i) => faceWeights(f, mouthing[i % frames.length])),
  };
  // the same, CPU time (user + system) of the timed calls: a shared machine's preemption not counted
  const cpu = (fn) => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < repeat; i++) fn(frames[i % frames.length], i);
    const used = process.cpuUsage(t0);
    return (used.user + used.system) / repeat;
  };
  out.cpu_us_per_frame = {
    pose: cpu((f) => decodePose(f, plan)),
    face: cpu((f, i) => faceWeights(f, mouthing[i % frames.length])),
  };
}
process.stdout.write(JSON.stringify(out));
