// The JavaScript live calibration (js/posewire/live.mjs) over a recording, for
// tests/test_js_live.py: reads {"frames": [frame objects of spec §6.10], "hand_scale": [...]}
// on stdin and prints {"current": calibration, "updates": n, "first_at": frame index,
// "hand_depth_gain": {l, r}}.
import { LiveCalibration } from '../posewire/live.mjs';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const { frames, hand_scale: scales } = JSON.parse(text);
const live = new LiveCalibration();
let firstAt = null;
frames.forEach((f, i) => {
  const changed = live.update(f, scales[i] ?? NaN);
  if (changed && firstAt === null) firstAt = i;
});
process.stdout.write(JSON.stringify({ current: live.current, updates: live.updates, first_at: firstAt,
  hand_depth_gain: live.handDepthGain }) + '\n');
