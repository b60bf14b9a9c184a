// The JavaScript Subscriber (js/posewire/client.mjs) against a real relay, for
// tests/test_producer_restart.py: `node subscribe.mjs URL STREAM REGISTRY_VERSION
// REGISTRY_HASH` prints one JSON line per frame ({seq, reset, missing, hYaw}) and one per
// status line ({status}); it runs until stdin closes. Needs a WHATWG WebSocket (Node 22,
// or Node 20/21 with --experimental-websocket).
import { Subscriber } from '../posewire/client.mjs';
import { BY_ID } from '../posewire/codec.mjs';

const [url, stream, registryVersion, registryHash] = process.argv.slice(2);
const hYaw = BY_ID.get('h_yaw').index;
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const sub = new Subscriber(url, stream, {
  registryVersion, registryHash, client: 'posewire-js-test',
  onStatus: (status) => say({ status }),
  onFrame: (f) => say({ seq: f.seq, reset: f.reset, missing: f.missing,
    hYaw: Number.isFinite(f.values[hYaw]) ? f.values[hYaw] : null }),
}).start();
process.stdin.on('end', () => { sub.close(); process.exit(0); });
process.stdin.resume();
