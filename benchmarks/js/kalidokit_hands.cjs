// Run the npm kalidokit hand solver (1.1.5, pinned by package-lock.json) on MediaPipe hand
// landmarks: stdin = JSON {"side": "Left"|"Right", "frames": [[[x, y, z] x 21] | null, ...]}
// (normalized image coordinates, as MediaPipe gives them); stdout = JSON
// {"keys": [...], "frames": [[angle, ...] | null, ...], "us_per_frame": number}
// with every Euler component of every hand joint kalidokit returns, in radians.
"use strict";
const Kalidokit = require("kalidokit/dist/kalidokit.umd.js");

let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const { side, frames } = JSON.parse(input);
  let keys = null;
  const out = [];
  let solved = 0;
  const started = process.hrtime.bigint();
  for (const frame of frames) {
    if (frame === null) { out.push(null); continue; }
    const lm = frame.map(([x, y, z]) => ({ x, y, z }));
    const rig = Kalidokit.Hand.solve(lm, side);
    if (!rig) { out.push(null); continue; }
    solved += 1;
    if (keys === null) {
      keys = [];
      for (const joint of Object.keys(rig).sort()) {
        for (const axis of ["x", "y", "z"]) keys.push(`${joint}.${axis}`);
      }
    }
    out.push(keys.map((k) => { const [j, a] = k.split("."); return rig[j][a]; }));
  }
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  process.stdout.write(JSON.stringify({ keys: keys || [], frames: out, us_per_frame: solved ? elapsed / solved : null }));
});
