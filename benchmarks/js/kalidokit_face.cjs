// Run the npm kalidokit face solver (1.1.5, pinned by package-lock.json) on MediaPipe face-mesh
// landmarks: stdin = JSON {"width": W, "height": H, "frames": [[[x, y, z] x 468+] | null, ...]}
// (normalized image coordinates, as MediaPipe gives them); stdout = JSON
// {"frames": [[x, y, z] | null, ...], "us_per_frame": number}: kalidokit's raw head rotation
// (radians, its x = pitch, y = yaw, z = roll), no smoothing.
"use strict";
const Kalidokit = require("kalidokit/dist/kalidokit.umd.js");

let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const { width, height, frames } = JSON.parse(input);
  const out = [];
  let solved = 0;
  const started = process.hrtime.bigint();
  for (const frame of frames) {
    if (frame === null) { out.push(null); continue; }
    const lm = frame.map(([x, y, z]) => ({ x, y, z }));
    const rig = Kalidokit.Face.solve(lm, { runtime: "mediapipe", imageSize: { width, height }, smoothBlink: false });
    if (!rig || !rig.head) { out.push(null); continue; }
    solved += 1;
    out.push([rig.head.x, rig.head.y, rig.head.z]);
  }
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  process.stdout.write(JSON.stringify({ frames: out, us_per_frame: solved ? elapsed / solved : null }));
});
