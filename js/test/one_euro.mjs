// The JavaScript One-Euro filter (js/posewire/live.mjs VectorFilter) over a sequence, for
// tests/test_js_live.py: reads {"times": [s...], "vectors": [[v or null]...]} on stdin and
// prints the filtered vectors (null = NaN).
import { VectorFilter } from '../posewire/live.mjs';

let text = '';
for await (const chunk of process.stdin) text += chunk;
const { times, vectors } = JSON.parse(text);
const f = new VectorFilter();
const out = vectors.map((v, i) => Array.from(f.apply(times[i], v.map((x) => (x === null ? NaN : x))),
  (x) => (Number.isFinite(x) ? x : null)));
process.stdout.write(JSON.stringify(out) + '\n');
