// posewire conformance kit adapter for the JavaScript client (js/posewire/codec.mjs).
//
// The codec itself is the importable ES module js/posewire/codec.mjs, written from spec/
// and schemas/ alone (no code of the reference implementation was read); this file only
// speaks the kit's protocol.
//
// Protocol (spec/06-conformance.md §6.4): one JSON object {"op", "input"} per line on
// stdin; exactly one JSON line per request on stdout:
//   {"result": ...} | {"error": "<stable code>"} | {"unsupported": true}
//
// Plain Node.js (v20), no npm dependencies.

import { createInterface } from 'node:readline';
import {
  CodecError, num, vec, registryRow, vectorValidate, vectorMirror, frameBody, conditionsMirror,
  palmReconstruct, palmDecode, palmEncode, palmDirections, palmFromDirections, units,
  calibrationMeasure, armToPhysical, armToNormalized, eulerToQ, eulerFromQ, normalizedToQ,
  qToNormalized, HEAD_MAX, BODY_MAX, spineRotations, dimsToArkit, arkitToDims, delta,
  mouthingApply, mouthingNormalize, affectApply, wireEncode, wireDecode, wireQuantize,
} from '../../js/posewire/codec.mjs';

// ---------------------------------------------------------------------------------------
// dispatch

const OPS = {
  'registry.row': registryRow,
  'vector.validate': vectorValidate,
  'vector.mirror': vectorMirror,
  'frame.body': frameBody,
  'conditions.mirror': conditionsMirror,
  'palm.reconstruct': palmReconstruct,
  'palm.decode': palmDecode,
  'palm.encode': palmEncode,
  'palm.directions': palmDirections,
  'palm.from_directions': palmFromDirections,
  'calibration.units': (i) => units(i),
  'calibration.measure': calibrationMeasure,
  'arm.to_physical': armToPhysical,
  'arm.to_normalized': armToNormalized,
  'euler.to_quat': ({ yaw, pitch, roll }) => ({ q: eulerToQ(num(yaw), num(pitch), num(roll)) }),
  'euler.from_quat': ({ q }) => eulerFromQ(vec(q, 4, 'q')),
  'head.to_quat': ({ n }) => ({ q: normalizedToQ(n, HEAD_MAX) }),
  'head.from_quat': ({ q }) => qToNormalized(q, HEAD_MAX),
  'body.to_quat': ({ n }) => ({ q: normalizedToQ(n, BODY_MAX) }),
  'spine.rotations': spineRotations,
  'morph.dims_to_arkit': ({ values, policy }) => dimsToArkit(values, policy),
  'morph.arkit_to_dims': arkitToDims,
  'mouthing.delta': ({ authored, baseline }) => {
    const d = delta(num(authored), num(baseline));
    return { delta: d, effective: baseline + d };
  },
  'mouthing.apply': mouthingApply,
  'mouthing.normalize': mouthingNormalize,
  'affect.apply': affectApply,
  'wire.encode': wireEncode,
  'wire.decode': wireDecode,
  'wire.quantize': wireQuantize,
};

/** JSON with BigInt support (integers written exactly) and no -0. */
function toJSON(x) {
  if (typeof x === 'bigint') return x.toString();
  if (typeof x === 'number') return JSON.stringify(x === 0 ? 0 : x);
  if (x === null || typeof x !== 'object') return JSON.stringify(x ?? null);
  if (Array.isArray(x)) return `[${x.map(toJSON).join(',')}]`;
  return `{${Object.entries(x)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}:${toJSON(v)}`)
    .join(',')}}`;
}

function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return { error: 'usage.shape' };
  }
  const fn = OPS[req.op];
  if (!fn) return { unsupported: true };
  try {
    return { result: fn(req.input ?? {}) };
  } catch (e) {
    if (e instanceof CodecError) return { error: e.code };
    // a bug of this implementation, not a spec code: make it visible
    process.stderr.write(`kit.mjs: ${req.op}: ${e.stack}\n`);
    return { error: `internal: ${e.message}` };
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  process.stdout.write(toJSON(handle(line)) + '\n');
});
