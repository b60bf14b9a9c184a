// The kalidokit peer of posewire's decoder (benchmarks/decode_bench.py, issue 22): what a
// kalidokit avatar client runs per frame to get its rig (bone rotations and face) —
// Kalidokit.Face.solve + Pose.solve + Hand.solve of both hands (npm kalidokit 1.1.5,
// pinned by package-lock.json) — on the frames posewire decodes in the same run, timed the
// way decode_bench.py times Python: CPU time over whole passes.
// stdin = JSON {"width": W, "height": H, "passes": P, "frames": [{"face": [[x, y, z] x 468] | null,
// "pose3d": [[x, y, z, visibility] x 33] | null, "pose2d": [[x, y, z, visibility] x 33] | null,
// "left": [[x, y, z] x 21] | null, "right": ... | null}, ...]} (as benchmarks/js/kalidokit_frame.cjs);
// warm-up passes (the JIT) for at least 2 000 frames, then P timed passes over all frames;
// stdout = JSON {"us": [CPU µs per frame of each pass (process.cpuUsage, user + system)], "solved": count}.
"use strict";
const Kalidokit = require("kalidokit/dist/kalidokit.umd.js");

let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const { width, height, passes, frames } = JSON.parse(input);
  const points = (list) => list && list.map(([x, y, z, visibility]) => ({ x, y, z, visibility }));
  const prepared = frames.map((f) => ({
    face: points(f.face), pose3d: points(f.pose3d), pose2d: points(f.pose2d),
    left: points(f.left), right: points(f.right),
  }));
  const imageSize = { width, height };
  let sink = 0;
  const solve = (f) => {
    if (f.face) sink += Kalidokit.Face.solve(f.face, { runtime: "mediapipe", imageSize, smoothBlink: false }) ? 1 : 0;
    if (f.pose3d) sink += Kalidokit.Pose.solve(f.pose3d, f.pose2d, { runtime: "mediapipe", imageSize }) ? 1 : 0;
    if (f.left) sink += Kalidokit.Hand.solve(f.left, "Left") ? 1 : 0;
    if (f.right) sink += Kalidokit.Hand.solve(f.right, "Right") ? 1 : 0;
  };
  for (let n = 0; n < 2000; n += prepared.length) for (const f of prepared) solve(f);  // the JIT
  const us = [];
  for (let p = 0; p < passes; p += 1) {
    const start = process.cpuUsage();
    for (const f of prepared) solve(f);
    const used = process.cpuUsage(start);
    us.push((used.user + used.system) / prepared.length);
  }
  process.stdout.write(JSON.stringify({ us, solved: sink }));
});
