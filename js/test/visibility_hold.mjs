// The JavaScript visibility hold (js/posewire/live.mjs VisibilityHold) over a sequence, for
// tests/test_js_live.py: reads {"width": w, "visibility": [[33 numbers or null]...], "in_frame":
// [[33 booleans]...]} on stdin and prints the held visibilities.
import { VisibilityHold } from '../posewire/live.mjs';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const { width, visibility, in_frame: inFrame } = JSON.parse(text);
const hold = new VisibilityHold(width);
const out = visibility.map((v, i) => hold.apply(v.map((x) => (x === null ? NaN : x)), inFrame[i]));
process.stdout.write(JSON.stringify(out) + '\n');
