// posewire conformance kit adapter for the JavaScript client (js/posewire/codec.mjs).
//
// The codec itself is the importable ES module js/posewire/codec.mjs, written from spec/
// and schemas/ alone (no code of the reference implementation was read); this file only
// speaks the kit's protocol. Exception: encoder.landmarks (spec §6.10) runs
// js/posewire/encoder.mjs, a port of the reference encoder (the browser producer's encoder).
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
import { encoderLandmarks } from '../../js/posewire/encoder.mjs';
import { recordingEncode, recordingDecode } from './recording.mjs';

const usage = (kind, path = '') => new CodecError(`usage.${kind}`, path);

// ---------------------------------------------------------------------------------------
// dispatch

const OPS = {
  'registry.row': registryRow,
  'vector.validate': vectorValidate,
  'vector.mirror': (i) => {
    for (const id of i.expect_ids) registryRow({ id }); // §6.5 an unknown id is usage.unknown_id
    return vectorMirror(i);
  },
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
  'encoder.landmarks': encoderLandmarks, // §6.10: js/posewire/encoder.mjs
  'recording.encode': recordingEncode, // §8.9: ./recording.mjs
  'recording.decode': recordingDecode,
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

// §6.5 the one rule for op input: key table per op; a missing required key, an unknown key,
// a wrong JSON type (a boolean is never a number) or null where not allowed is
// usage.bad_option; a number is finite (else usage.not_finite) and inside its stated range
// (else usage.out_of_range). Kinds: n number, i integer, s string, o object, N numbers,
// P array of number arrays, S strings, V object of numbers, X object of number arrays,
// H shares (object of numbers or numbers), b boolean, a any (checked by the op). '?' = optional, '~' = may be null.
const DIST = 'n?~';
const INPUTS = {
  'registry.row': { id: 's' },
  'vector.validate': { values: 'V', policy: 's?' },
  'vector.mirror': { values: 'V', expect_ids: 'S' },
  'frame.body': { shoulder_l: 'N', shoulder_r: 'N', hip_mid: 'N', points: 'P?' },
  'conditions.mirror': { conditions: 'o' },
  'palm.reconstruct': { v: 'N', clamp: ['n?~', 0, 1] },
  'palm.decode': { v: 'N', side: 's' },
  'palm.encode': { q: 'N', side: 's' },
  'palm.directions': { q: 'N', side: 's' },
  'palm.from_directions': { fingers: 'N', palm_normal: 'N', side: 's' },
  'calibration.units': { hand_length: DIST, torso_length: DIST, arm_length: DIST, shoulder_width: DIST },
  'calibration.measure': { sites: 'X' },
  'arm.to_physical': { n: 'N', side: 's', calibration: 'o' },
  'arm.to_normalized': { p: 'N', side: 's', calibration: 'o' },
  'euler.to_quat': { yaw: 'n', pitch: 'n', roll: 'n' },
  'euler.from_quat': { q: 'N' },
  'head.to_quat': { n: 'N' },
  'head.from_quat': { q: 'N' },
  'body.to_quat': { n: 'N' },
  'spine.rotations': { n: 'N', joints: 'S?' },
  'morph.dims_to_arkit': { values: 'V', policy: 's?' },
  'morph.arkit_to_dims': { weights: 'V', policy: 's?', into: 'V?' },
  'mouthing.delta': { authored: ['n', -1, 1], baseline: ['n', -1, 1] },
  'mouthing.apply': { values: 'V', shares: 'H' },
  'mouthing.normalize': { shares: 'H' },
  'affect.apply': { values: 'V', label: 's', intensity: ['n', 0, 1], mode: 's' },
  'wire.quantize': { values: 'V' },
  'wire.encode': { message: 'o' },
  'wire.decode': { hex: 's', max_size: ['i?', 1, Infinity] },
  'encoder.landmarks': { frames: 'a', calibration: 'o?~', mirrored: 's?', visibility_threshold: ['n?', 0, 1] },
  'recording.encode': { records: 'a', registry_hash: 's?', close: 'b?' },
  'recording.decode': { hex: 's', strict: 'b?' },
};
const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
function checkNumber(x, path, range) {
  if (typeof x !== 'number') throw usage('bad_option', path);
  if (!Number.isFinite(x)) throw usage('not_finite', path);
  if (range && (x < range[0] || x > range[1])) throw usage('out_of_range', path);
}
function checkNumbers(x, path) {
  if (!Array.isArray(x)) throw usage('bad_option', path);
  x.forEach((y, i) => checkNumber(y, `${path}[${i}]`));
}
function checkKeys(inp, table) {
  if (!isObj(inp)) throw usage('bad_option', '$');
  for (const k of Object.keys(inp)) if (!(k in table)) throw usage('bad_option', k);
  for (const [k, spec] of Object.entries(table)) {
    const [kind, ...range] = Array.isArray(spec) ? spec : [spec];
    if (!(k in inp)) {
      if (kind.includes('?')) continue;
      throw usage('bad_option', k);
    }
    const x = inp[k];
    if (x === null) {
      if (kind.includes('~')) continue;
      throw usage('bad_option', k);
    }
    switch (kind[0]) {
      case 'n': checkNumber(x, k, range.length ? range : null); break;
      case 'i':
        if (typeof x !== 'number') throw usage('bad_option', k);
        if (!Number.isFinite(x)) throw usage('not_finite', k); // rule 2 before the fraction
        if (!Number.isInteger(x)) throw usage('bad_option', k);
        if (x < range[0] || x > range[1]) throw usage('out_of_range', k);
        break;
      case 's': if (typeof x !== 'string') throw usage('bad_option', k); break;
      case 'b': if (typeof x !== 'boolean') throw usage('bad_option', k); break;
      case 'o': if (!isObj(x)) throw usage('bad_option', k); break;
      case 'N': checkNumbers(x, k); break;
      case 'P':
        if (!Array.isArray(x)) throw usage('bad_option', k);
        x.forEach((p, i) => checkNumbers(p, `${k}[${i}]`));
        break;
      case 'S': if (!Array.isArray(x) || !x.every((y) => typeof y === 'string')) throw usage('bad_option', k); break;
      case 'V':
        if (!isObj(x)) throw usage('bad_option', k);
        for (const [j, y] of Object.entries(x)) checkNumber(y, `${k}.${j}`);
        break;
      case 'X':
        if (!isObj(x)) throw usage('bad_option', k);
        for (const [j, y] of Object.entries(x)) checkNumbers(y, `${k}.${j}`);
        break;
      case 'H':
        if (isObj(x)) for (const [j, y] of Object.entries(x)) checkNumber(y, `${k}.${j}`);
        else checkNumbers(x, k);
        break;
      case 'a': break; // any JSON value: the op checks it
      default: throw new Error(`bad kind ${kind}`);
    }
  }
}
// §6.5 rule 2 at any depth: a JSON number beyond float64 (JSON.parse makes it ±Infinity)
function checkDeepFinite(x, path) {
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) throw usage('not_finite', path);
  } else if (Array.isArray(x)) x.forEach((y, i) => checkDeepFinite(y, `${path}[${i}]`));
  else if (isObj(x)) for (const [k, y] of Object.entries(x)) checkDeepFinite(y, path ? `${path}.${k}` : k);
}
function checkResult(x, path) {
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) throw usage('out_of_range', path);
  } else if (Array.isArray(x)) x.forEach((y, i) => checkResult(y, `${path}[${i}]`));
  else if (isObj(x)) for (const [k, y] of Object.entries(x)) checkResult(y, `${path}.${k}`);
}
function checkInput(op, inp) {
  checkKeys(inp, INPUTS[op]);
  if (op.startsWith('arm.')) checkKeys(inp.calibration, INPUTS['calibration.units']);
  if (op === 'encoder.landmarks' && isObj(inp.calibration)) checkKeys(inp.calibration, INPUTS['calibration.units']);
  checkDeepFinite(inp, '');
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
    checkInput(req.op, req.input);
    const result = fn(req.input);
    checkResult(result, '$'); // §6.5 rule 5: never a non-finite number in a result
    return { result };
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
