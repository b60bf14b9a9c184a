// The kalidokit peer of posewire's live encoder (benchmarks/fidelity_bench.py) and decoder
// (benchmarks/decode_bench.py), issue 22: per frame Kalidokit.Face.solve + Pose.solve +
// Hand.solve of both hands (npm kalidokit 1.1.5, pinned by package-lock.json) — what a
// kalidokit avatar client runs per frame to get its rig — on the frames posewire encodes or
// decodes in the same run.
// stdin = JSON {"width": W, "height": H, "passes": P, "timing": "frame" | "pass" (default
// "frame"), "frames": [{"face": [[x, y, z] x 468] | null, "pose3d": [[x, y, z, visibility] x 33]
// | null, "pose2d": [[x, y, z, visibility] x 33] | null, "left": [[x, y, z] x 21] | null,
// "right": ... | null}, ...]} (normalized image coordinates for the face, pose2d and hands,
// metres for pose3d, as MediaPipe gives them). "frame": one untimed warm-up pass (the JIT),
// then P timed passes, each frame timed alone; "pass": warm-up passes for at least 2 000
// frames, then P passes timed whole (as decode_bench.py times Python). stdout = JSON {"us":
// [CPU µs per frame (process.cpuUsage, user + system) of each frame, or the mean of each pass]}.
"use strict";
const Kalidokit = require("kalidokit/dist/kalidokit.umd.js");

let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const { width, height, passes, frames, timing = "frame" } = JSON.parse(input);
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
  const us = [];
  if (timing === "pass") {
    for (let n = 0; n < 2000; n += prepared.length) for (const f of prepared) solve(f);  // the JIT
    for (let p = 0; p < passes; p += 1) {
      const start = process.cpuUsage();
      for (const f of prepared) solve(f);
      const used = process.cpuUsage(start);
      us.push((used.user + used.system) / prepared.length);
    }
  } else {
    for (const f of prepared) solve(f);  // warm-up: the JIT
    for (let p = 0; p < passes; p += 1) {
      for (const f of prepared) {
        const start = process.cpuUsage();
        solve(f);
        const used = process.cpuUsage(start);
        us.push(used.user + used.system);
      }
    }
  }
  process.stdout.write(JSON.stringify({ us, solved: sink }));
});
