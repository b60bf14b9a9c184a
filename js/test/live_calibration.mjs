// The JavaScript live calibration (js/posewire/live.mjs) over a recording, for
// tests/test_js_live.py: reads {"frames": [frame objects of spec §6.10], "hand_scale": [...]}
// on stdin and prints {"current": calibration, "updates": n, "first_at": frame index,
// "hand_depth_gain": {l, r}, "estimates": [{"at": frame index, "running": {l, r}, "batch": {l, r}}]}:
// at every estimate, the gains from the running sums and from estimateDepthGain (two passes over
// the same window's frames with a body, spec §4.3).
import { LiveCalibration, boneLengthRatiosInto, estimateDepthGain } from '../posewire/live.mjs';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const { frames, hand_scale: scales } = JSON.parse(text);
const live = new LiveCalibration();
const ratios = (hand) => {
  const out = new Float64Array(81 * 20);
  return boneLengthRatiosInto(hand, out) ? out : null;
};
const window = []; // the frames with a body the calibration holds: [right, left] ratios
let firstAt = null;
let seen = 0;
const estimates = [];
frames.forEach((f, i) => {
  const changed = live.update(f, scales[i] ?? NaN);
  if (changed && firstAt === null) firstAt = i;
  if (live.seen > seen) { // a frame with a body: into the window
    seen = live.seen;
    window.push([ratios(f.right_hand), ratios(f.left_hand)]);
    if (window.length > live.window) window.shift();
    if (live.since === 0) { // an estimate ran on this frame
      const batch = [0, 1].map((c) => estimateDepthGain(window.map((w) => w[c])) ?? 1.0);
      estimates.push({ at: i, running: live.handDepthGain, batch: { r: batch[0], l: batch[1] } });
    }
  }
});
process.stdout.write(JSON.stringify({ current: live.current, updates: live.updates, first_at: firstAt,
  hand_depth_gain: live.handDepthGain, estimates }) + '\n');
