// posewire codec for JavaScript (plain ES module: Node 20+ and browsers, no build step).
//
// Written from spec/ and schemas/ alone (no code of the Python implementation was read):
// registry lookups (§4), vector validation and mirroring (§3.1, §3.2, §3.5), body frame
// (§2.3), palm quaternions (§3.3, §4.2), calibration units (§4.1), Euler/head/body/spine
// (§4.4, §4.5), ARKit morphs (§4.6), mouthing (§3.4.1, §4.7), affect (§3.4.4), msgpack and
// the posewire.v1 wire messages (§5). Every table comes from the generated registry
// export schemas/registry.json (./registry.mjs). Used by the conformance adapter
// tests/interop/kit.mjs, by the decoder (./decoder.mjs) and by the browser viewer.
//
// Errors: CodecError with a stable code (usage.* for caller mistakes, decode.* for peer data).

import { REGISTRY } from './registry.mjs';

// ---------------------------------------------------------------------------------------
// errors

export class CodecError extends Error {
  constructor(code, path = '', detail = '') {
    super(`${code}${path ? ' at ' + path : ''}${detail ? ': ' + detail : ''}`);
    this.code = code;
    this.path = path;
  }
}
const usage = (kind, detail = '') => new CodecError(`usage.${kind}`, '', detail);
const decodeErr = (kind, path = '$', detail = '') => new CodecError(`decode.${kind}`, path, detail);

// ---------------------------------------------------------------------------------------
// registry (schemas/registry.json, spec §4, §4.T)

const DIMS = REGISTRY.dimensions;
const N = DIMS.length;
const BY_ID = new Map(DIMS.map((d) => [d.id, d]));
const lo = (d) => (d.polarity === 'unipolar' ? 0 : -1);
const HI = 1;
const CONDITIONS = new Map(REGISTRY.conditions.map((c) => [c.id, c]));
const VISEMES = CONDITIONS.get('mouthing').keys;
const TRACK_PARTS = CONDITIONS.get('tracking').keys;
const TRACK_STATES = CONDITIONS.get('tracking').values;
const CONTACT_HANDS = CONDITIONS.get('contact').keys;
const CONTACT_SITES = CONDITIONS.get('contact').values;
const AFFECT_LABELS = CONDITIONS.get('affect').values;
const AFFECT_MODES = ['add', 'blend'];
const REF = REGISTRY.reference_avatar;
const SPINE = REGISTRY.spine_shares;
const SEED_T = new Map(REGISTRY.mouthing_seed_table.map((r) => [r.viseme, r.baseline]));
const PRESETS = new Map(REGISTRY.affect_presets.map((p) => [p.label, p.targets]));
const FACE_DIMS = DIMS.filter((d) => d.group === 'face' || d.group === 'mouth');
const MOUTH_DIMS = DIMS.filter((d) => d.group === 'mouth');
// ARKit order of the 52 channels (the "ARKit channel coverage" table of 04-registry-tables.md);
// channel reports (clipped, clamped) are listed in this order.
const ARKIT_ORDER = REGISTRY.arkit_channels ?? [
  'eyeBlinkLeft', 'eyeLookDownLeft', 'eyeLookInLeft', 'eyeLookOutLeft', 'eyeLookUpLeft', 'eyeSquintLeft', 'eyeWideLeft',
  'eyeBlinkRight', 'eyeLookDownRight', 'eyeLookInRight', 'eyeLookOutRight', 'eyeLookUpRight', 'eyeSquintRight', 'eyeWideRight',
  'jawForward', 'jawLeft', 'jawRight', 'jawOpen', 'mouthClose', 'mouthFunnel', 'mouthPucker', 'mouthLeft', 'mouthRight',
  'mouthSmileLeft', 'mouthSmileRight', 'mouthFrownLeft', 'mouthFrownRight', 'mouthDimpleLeft', 'mouthDimpleRight',
  'mouthStretchLeft', 'mouthStretchRight', 'mouthRollLower', 'mouthRollUpper', 'mouthShrugLower', 'mouthShrugUpper',
  'mouthPressLeft', 'mouthPressRight', 'mouthLowerDownLeft', 'mouthLowerDownRight', 'mouthUpperUpLeft', 'mouthUpperUpRight',
  'browDownLeft', 'browDownRight', 'browInnerUp', 'browOuterUpLeft', 'browOuterUpRight', 'cheekPuff', 'cheekSquintLeft',
  'cheekSquintRight', 'noseSneerLeft', 'noseSneerRight', 'tongueOut',
];
const CHANNELS = new Map(); // channel -> its primary driver {dim, sign, gain: 1} (§4.6)
for (const d of DIMS) {
  for (const c of d.positive) if (c.gain === 1) CHANNELS.set(c.channel, { dim: d.id, sign: 1, gain: 1 });
  for (const c of d.negative) if (c.gain === 1) CHANNELS.set(c.channel, { dim: d.id, sign: -1, gain: 1 });
}

// §4.6 weights -> dims: joint least squares over every (face/mouth dim, direction) column
// of the 52 × 2K gain matrix G (primary gain 1, secondary gain < 1): (p, m) = G⁺ w, with
// G⁺ = (GᵀG)⁻¹Gᵀ over the columns that have channels (they are independent), computed once
// exactly (§1.5): rationals from the decimal gains, each entry rounded once to binary64.
const SOLVE_ROUNDING = 1e-12;
const bigAbs = (x) => (x < 0n ? -x : x);
function bigGcd(a, b) {
  a = bigAbs(a); b = bigAbs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}
function rat(n, d = 1n) {
  if (d < 0n) { n = -n; d = -d; }
  const g = bigGcd(n, d) || 1n;
  return [n / g, d / g];
}
const ratAdd = ([a, b], [c, d]) => rat(a * d + c * b, b * d);
const ratSub = ([a, b], [c, d]) => rat(a * d - c * b, b * d);
const ratMul = ([a, b], [c, d]) => rat(a * c, b * d);
const ratDiv = ([a, b], [c, d]) => rat(a * d, b * c);
/** A decimal JSON number (a registry gain) as an exact rational: '0.2' is 1/5. */
function ratOfDecimal(x) {
  const [mant, exp = '0'] = String(x).toLowerCase().split('e');
  const [int, frac = ''] = mant.split('.');
  const digits = BigInt(int + frac);
  const e = Number(exp) - frac.length;
  return e >= 0 ? rat(digits * 10n ** BigInt(e)) : rat(digits, 10n ** BigInt(-e));
}
/** The binary64 nearest to n/d (ties to even): the one rounding of §1.5. */
function ratToNumber([n, d]) {
  if (n === 0n) return 0;
  const neg = n < 0n;
  n = bigAbs(n);
  let e = n.toString(2).length - d.toString(2).length - 53; // n / (d·2^e) lies in [2^52, 2^54)
  const quotient = (shift) => (shift >= 0 ? [n, d << BigInt(shift)] : [n << BigInt(-shift), d]);
  let [num, den] = quotient(e);
  if (num / den >= 1n << 53n) [num, den] = quotient(++e);
  let q = num / den;
  const r2 = 2n * (num % den);
  if (r2 > den || (r2 === den && (q & 1n))) q += 1n;
  const out = Number(q) * 2 ** e; // q ≤ 2^53: exact; a power of two scales exactly
  return neg ? -out : out;
}
const SOLVE = (() => {
  const cols = [];
  FACE_DIMS.forEach((d, k) => {
    for (const [list, part] of [[d.positive, 0], [d.negative, 1]]) {
      if (!list.length) continue;
      const g = ARKIT_ORDER.map(() => rat(0n));
      for (const { channel, gain } of list) g[ARKIT_ORDER.indexOf(channel)] = ratOfDecimal(gain);
      cols.push({ k, part, g });
    }
  });
  // independent blocks: columns that share no channel are solved apart
  const block = cols.map((_, i) => i);
  const find = (i) => (block[i] === i ? i : (block[i] = find(block[i])));
  for (let c = 0; c < ARKIT_ORDER.length; c++) {
    const on = cols.map((col, i) => (col.g[c][0] !== 0n ? i : -1)).filter((i) => i >= 0);
    for (const i of on.slice(1)) block[find(i)] = find(on[0]);
  }
  const out = new Array(cols.length);
  const groups = new Map();
  cols.forEach((_, i) => groups.set(find(i), [...(groups.get(find(i)) ?? []), i]));
  for (const members of groups.values()) {
    const m = members.length;
    // augmented [GᵀG | Gᵀ], Gauss-Jordan in rationals -> [I | G⁺]
    const a = members.map((i) => [
      ...members.map((j) => cols[i].g.reduce((acc, x, c) => ratAdd(acc, ratMul(x, cols[j].g[c])), rat(0n))),
      ...cols[i].g,
    ]);
    for (let i = 0; i < m; i++) {
      const piv = a.findIndex((row, r) => r >= i && row[i][0] !== 0n);
      if (piv < 0) throw new Error('face/mouth (dim, direction) columns are linearly dependent');
      [a[i], a[piv]] = [a[piv], a[i]];
      const lead = a[i][i];
      a[i] = a[i].map((x) => ratDiv(x, lead));
      for (let r = 0; r < m; r++) {
        if (r === i || a[r][i][0] === 0n) continue;
        const f = a[r][i];
        a[r] = a[r].map((x, c) => ratSub(x, ratMul(f, a[i][c])));
      }
    }
    members.forEach((col, i) => { out[col] = { k: cols[col].k, part: cols[col].part, row: a[i].slice(m).map(ratToNumber) }; });
  }
  return out;
})();

function dimOf(id) {
  const d = BY_ID.get(id);
  if (!d) throw usage('unknown_id', id);
  return d;
}
function side(s) {
  if (s !== 'l' && s !== 'r') throw usage('bad_option', `side ${s}`);
  return s;
}
function num(x, what = 'value') {
  if (typeof x !== 'number') {
    if (x === null || x === 'nan' || x === 'NaN' || x === 'inf' || x === '-inf') throw usage('not_finite', what);
    throw usage('shape', what);
  }
  if (!Number.isFinite(x)) throw usage('not_finite', what);
  return x;
}
function vec(a, n, what = 'vector') {
  if (!Array.isArray(a) || a.length !== n) throw usage('shape', what);
  return a.map((x) => num(x, what));
}
const byIndex = (ids) => [...ids].sort((a, b) => BY_ID.get(a).index - BY_ID.get(b).index);
const byArkit = (chs) => [...chs].sort((a, b) => ARKIT_ORDER.indexOf(a) - ARKIT_ORDER.indexOf(b));
const clip = (x, a, b) => Math.min(b, Math.max(a, x));

/** Check every (id, value) of a pose object: known id, finite, in bounds. */
function checkValues(values, what = 'values') {
  if (values === null || typeof values !== 'object' || Array.isArray(values)) throw usage('shape', what);
  // §6.5 rule 4: every id first (usage.unknown_id), then every value's bounds
  for (const [id, v] of Object.entries(values)) {
    dimOf(id);
    num(v, id);
  }
  for (const [id, v] of Object.entries(values)) {
    const d = dimOf(id);
    if (v < lo(d) || v > HI) throw usage('out_of_range', id);
  }
  return values;
}

/** Known ids and finite numbers, bounds not checked. */
function checkIds(values, what = 'values') {
  if (values === null || typeof values !== 'object' || Array.isArray(values)) throw usage('shape', what);
  for (const [id, v] of Object.entries(values)) {
    dimOf(id);
    num(v, id);
  }
  return values;
}

// ---------------------------------------------------------------------------------------
// small linear algebra

const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
// §1.5: |v| = sqrt(v0·v0 + v1·v1 + …) summed left to right; outside [2^-500, 2^500] the
// vector is scaled by an exact power of two first (no overflow to ∞, no underflow to 0)
const SAFE_LOW = 2 ** -500;
const SAFE_HIGH = 2 ** 500;
function norm(a) {
  const big = Math.max(...a.map(Math.abs));
  let e = 0;
  if ((big > SAFE_HIGH || (big < SAFE_LOW && big > 0)) && Number.isFinite(big)) {
    e = Math.floor(Math.log2(big)) + 1; // big = f · 2^e, 0.5 ≤ f < 1 (any e near it scales exactly)
    a = a.map((x) => ldexp(x, -e));
  }
  let acc = a[0] * a[0];
  for (let i = 1; i < a.length; i++) acc += a[i] * a[i];
  return ldexp(Math.sqrt(acc), e);
}
/** x · 2^n, exact, in steps that never overflow the factor. */
function ldexp(x, n) {
  while (n > 1000) { x *= 2 ** 1000; n -= 1000; }
  while (n < -1000) { x *= 2 ** -1000; n += 1000; }
  return x * 2 ** n;
}
const sub = (a, b) => a.map((x, i) => x - b[i]);
const add = (a, b) => a.map((x, i) => x + b[i]);
const scale = (a, s) => a.map((x) => x * s);
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
/** §1.5 v / |v| (the exactly scaled v divided by its length). §6.5 rule 4: a vector the
 * caller gives is zero only when every component is exactly 0 (`of` null); a vector derived
 * from another (an orthogonalized part) is degenerate when its length is at most 1e-12 times
 * the length `of` the vector it came from. */
function unit(a, of = null) {
  // §6.5 rule 5: a step of the formula as written overflowed (a difference of huge sites)
  if (!a.every(Number.isFinite)) throw usage('out_of_range');
  const n = norm(a);
  if (!(of === null ? n > 0 : n > ZERO_REL * of)) throw usage('zero_norm');
  const big = Math.max(...a.map(Math.abs));
  if ((big > SAFE_HIGH || big < SAFE_LOW) && Number.isFinite(big)) {
    const e = Math.floor(Math.log2(big)) + 1;
    a = a.map((x) => ldexp(x, -e));
  }
  const m = norm(a);
  return a.map((x) => x / m);
}
const ZERO_REL = 1e-12;

// quaternions (w, x, y, z), Hamilton product (spec §3.3)
function qmul(a, b) {
  const [aw, ax, ay, az] = a;
  const [bw, bx, by, bz] = b;
  return [
    aw * bw - ax * bx - ay * by - az * bz,
    aw * bx + ax * bw + ay * bz - az * by,
    aw * by - ax * bz + ay * bw + az * bx,
    aw * bz + ax * by - ay * bx + az * bw,
  ];
}
function qnormalize(q) {
  // §1.5: divide the exactly scaled q by its length, so a length beyond float64 still
  // normalizes; §6.5 rule 4: zero only when every component is exactly 0
  return unit(q);
}
/** Canonical form: unit, w >= 0; at w == 0 the first non-zero of (x, y, z) is positive. */
function qcanonical(q) {
  q = qnormalize(q);
  let neg = q[0] < 0;
  if (q[0] === 0) {
    const first = q.slice(1).find((c) => c !== 0);
    neg = first !== undefined && first < 0;
  }
  return neg ? q.map((x) => (x === 0 ? 0 : -x)) : q;
}
function qmatrix(q) {
  const [w, x, y, z] = q;
  return [
    [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
  ];
}
const rotate = (q, v) => {
  const R = qmatrix(q);
  return [0, 1, 2].map((i) => R[i][0] * v[0] + R[i][1] * v[1] + R[i][2] * v[2]);
};
/** Quaternion of a rotation matrix R (columns = images of the axes). */
function qfromMatrix(R) {
  const tr = R[0][0] + R[1][1] + R[2][2];
  let q;
  if (tr > 0) {
    const s = Math.sqrt(tr + 1) * 2;
    q = [0.25 * s, (R[2][1] - R[1][2]) / s, (R[0][2] - R[2][0]) / s, (R[1][0] - R[0][1]) / s];
  } else if (R[0][0] > R[1][1] && R[0][0] > R[2][2]) {
    const s = Math.sqrt(1 + R[0][0] - R[1][1] - R[2][2]) * 2;
    q = [(R[2][1] - R[1][2]) / s, 0.25 * s, (R[0][1] + R[1][0]) / s, (R[0][2] + R[2][0]) / s];
  } else if (R[1][1] > R[2][2]) {
    const s = Math.sqrt(1 + R[1][1] - R[0][0] - R[2][2]) * 2;
    q = [(R[0][2] - R[2][0]) / s, (R[0][1] + R[1][0]) / s, 0.25 * s, (R[1][2] + R[2][1]) / s];
  } else {
    const s = Math.sqrt(1 + R[2][2] - R[0][0] - R[1][1]) * 2;
    q = [(R[1][0] - R[0][1]) / s, (R[0][2] + R[2][0]) / s, (R[1][2] + R[2][1]) / s, 0.25 * s];
  }
  return qcanonical(q);
}
const DEG = Math.PI / 180;
const qaxis = (axis, deg) => {
  const h = (deg * DEG) / 2;
  const q = [Math.cos(h), 0, 0, 0];
  q[axis + 1] = Math.sin(h);
  return q;
};

// ---------------------------------------------------------------------------------------
// §3.1, §3.5 vector; §3.2 mirror; §2.3 body frame; §3.2 condition mirroring

function registryRow({ id }) {
  const d = dimOf(id);
  return { index: d.index, default: d.default, polarity: d.polarity, max: d.max };
}

function vectorValidate({ values, policy = 'raise' }) {
  if (policy !== 'raise' && policy !== 'clamp') throw usage('bad_option', `policy ${policy}`);
  if (values === null || typeof values !== 'object' || Array.isArray(values)) throw usage('shape');
  const out = {};
  const clamped = [];
  const replaced = [];
  for (const id of Object.keys(values)) dimOf(id); // §6.5 rule 4: every id before any bound
  for (const [id, v] of Object.entries(values)) {
    const d = dimOf(id);
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      if (policy === 'raise') throw usage('not_finite', id);
      out[id] = d.default;
      replaced.push(id);
      continue;
    }
    if (v < lo(d) || v > HI) {
      if (policy === 'raise') throw usage('out_of_range', id);
      out[id] = clip(v, lo(d), HI);
      clamped.push(id);
      continue;
    }
    out[id] = v;
  }
  return { values: out, clamped: byIndex(clamped), replaced: byIndex(replaced) };
}

function fullVector(values) {
  const v = DIMS.map((d) => d.default);
  for (const [id, x] of Object.entries(values || {})) v[dimOf(id).index] = num(x, id);
  return v;
}

function mirrorVector(v) {
  return DIMS.map((d) => {
    if (d.side) return v[BY_ID.get(`${d.base}_${d.side === 'l' ? 'r' : 'l'}`).index];
    return d.lateral ? -v[d.index] : v[d.index];
  });
}

function vectorMirror({ values, expect_ids: ids }) {
  const m = mirrorVector(fullVector(values));
  const out = {};
  for (const id of ids ?? DIMS.map((d) => d.id)) out[id] = m[dimOf(id).index] + 0; // +0: no -0
  return { values: out };
}

function bodyFrame(shoulderL, shoulderR, hipMid) {
  const neck = scale(add(shoulderL, shoulderR), 0.5);
  const X = unit(sub(shoulderL, shoulderR));
  const u = sub(neck, hipMid);
  const Y = unit(sub(u, scale(X, dot(u, X))), norm(u)); // §6.5 rule 4: derived, relative
  const Z = cross(X, Y);
  return { neck, X, Y, Z };
}

function frameBody({ shoulder_l: sl, shoulder_r: sr, hip_mid: hm, points = [] }) {
  const f = bodyFrame(vec(sl, 3, 'shoulder_l'), vec(sr, 3, 'shoulder_r'), vec(hm, 3, 'hip_mid'));
  if (!Array.isArray(points)) throw usage('shape', 'points');
  const pts = points.map((p) => {
    const d = sub(vec(p, 3, 'points'), f.neck);
    return [dot(f.X, d), dot(f.Y, d), dot(f.Z, d)];
  });
  return { origin: f.neck, x: f.X, y: f.Y, z: f.Z, points: pts };
}

const swapSide = (s) => (s.endsWith('_l') ? s.slice(0, -2) + '_r' : s.endsWith('_r') ? s.slice(0, -2) + '_l' : s);

function conditionsMirror({ conditions }) {
  const c = checkConditionsUsage(conditions); // only active, known channels
  const out = {};
  for (const [k, v] of Object.entries(c)) {
    if (k === 'tracking') out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [swapSide(p), s]));
    else if (k === 'contact') out[k] = Object.fromEntries(Object.entries(v).map(([h, s]) => [swapSide(h), swapSide(s)]));
    else if (k === 'mouthing' || k === 'affect') out[k] = v; // unchanged
    // unknown condition ids are ignored (dropped), §3.4
  }
  return { conditions: out };
}

/**
 * Condition object from a local caller (usage.* codes), judged as §3.4 states in its one
 * place: unknown channels are ignored and a null channel is inactive (dropped from the
 * result); tracking/contact keys are enumeration values (unknown: usage.unknown_id); the
 * affect record ignores keys other than label, intensity, mode. Order of checks: channels
 * mouthing, tracking, contact, affect; mouthing list type, length, each share (type,
 * finiteness, range), sum; map entries in their order, each completely (key known, value
 * type, value known); affect: all three fields present, then label, intensity, mode.
 * Returns the normalized object (only active, known channels; affect with its three fields).
 */
function checkConditionsUsage(c) {
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObj(c)) throw usage('bad_option', 'conditions');
  const out = {};
  const on = (k) => k in c && c[k] !== null && c[k] !== undefined;
  if (on('mouthing')) out.mouthing = mouthingListUsage(c.mouthing);
  for (const [k, keys, vals] of [['tracking', TRACK_PARTS, TRACK_STATES], ['contact', CONTACT_HANDS, CONTACT_SITES]]) {
    if (!on(k)) continue;
    const v = c[k];
    if (!isObj(v)) throw usage('bad_option', k);
    for (const [kk, vv] of Object.entries(v)) {
      if (!keys.includes(kk)) throw usage('unknown_id', `${k}.${kk}`);
      if (typeof vv !== 'string') throw usage('bad_option', `${k}.${kk}`);
      if (!vals.includes(vv)) throw usage('unknown_id', `${k}.${kk}`);
    }
    if (Object.keys(v).length) out[k] = v;
  }
  if (on('affect')) {
    const v = c.affect;
    if (!isObj(v)) throw usage('bad_option', 'affect');
    for (const f of ['label', 'intensity', 'mode']) if (!(f in v)) throw usage('bad_option', `affect.${f}`);
    if (typeof v.label !== 'string') throw usage('bad_option', 'affect.label');
    if (!AFFECT_LABELS.includes(v.label)) throw usage('unknown_id', 'affect.label');
    if (typeof v.intensity !== 'number') throw usage('bad_option', 'affect.intensity');
    if (!Number.isFinite(v.intensity)) throw usage('not_finite', 'affect.intensity');
    if (v.intensity < 0 || v.intensity > 1) throw usage('out_of_range', 'affect.intensity');
    if (typeof v.mode !== 'string') throw usage('bad_option', 'affect.mode');
    if (!AFFECT_MODES.includes(v.mode)) throw usage('unknown_id', 'affect.mode');
    out.affect = { label: v.label, intensity: v.intensity, mode: v.mode };
  }
  return out;
}
function mouthingListUsage(v) {
  if (!Array.isArray(v)) throw usage('bad_option', 'mouthing');
  if (v.length !== VISEMES.length) throw usage('out_of_range', 'mouthing');
  v.forEach((x, i) => {
    if (typeof x !== 'number') throw usage('bad_option', `mouthing.${VISEMES[i]}`);
    if (!Number.isFinite(x)) throw usage('not_finite', `mouthing.${VISEMES[i]}`);
    if (x < 0 || x > 1) throw usage('out_of_range', `mouthing.${VISEMES[i]}`);
  });
  if (v.reduce((a, b) => a + b, 0) > 1 + MIX_EPS) throw usage('out_of_range', 'mouthing');
  return v;
}

// ---------------------------------------------------------------------------------------
// §3.3, §4.2 palm

const PALM_CLAMP = 0.98;
// §3.3 clamp arithmetic: a vector part longer than the limit L is scaled to the target
// T = L · (1 − 2^-49) (one rounded product; for 0.98 exactly 0.98 − 2^-49), never to L itself:
// v · (T / |v|) measured with §1.5's norm is never above L, v · (L / |v|) often is by an ulp
const CLAMP_TARGET_FACTOR = 1 - 2 ** -49;
const clampTarget = (limit) => limit * CLAMP_TARGET_FACTOR;
const PALM_CLAMP_TARGET = clampTarget(PALM_CLAMP);
/** §1.5, §3.3: v · s with s = target / |v| (one division, one product per component), on the
 * exactly scaled v where its largest component lies outside [2^-500, 2^500]. */
function scaleTo(v, target) {
  const big = Math.max(...v.map(Math.abs));
  if ((big > SAFE_HIGH || (big < SAFE_LOW && big > 0)) && Number.isFinite(big)) {
    const e = Math.floor(Math.log2(big)) + 1;
    v = v.map((x) => ldexp(x, -e));
  }
  return scale(v, target / norm(v));
}

function reconstruct(v, clampTo) {
  // §3.3 consumer: one scaling of the received v, decided on its §1.5 length: the SHOULD clamp
  // v · (T / |v|) when |v| > L; without the clamp, the MUST rescale v / |v| when |v| > 1
  v = vec(v, 3, 'v');
  const n = norm(v);
  const changed = clampTo !== null ? n > clampTo : n > 1;
  if (changed) v = clampTo !== null ? scaleTo(v, clampTarget(clampTo)) : unit(v);
  const w = Math.sqrt(Math.max(0, 1 - dot(v, v))); // squares summed in order (§1.5)
  return { q: [w, ...v], changed };
}
const mirrorQ = (q) => [q[0], q[1], -q[2] + 0, -q[3] + 0];

function palmReconstruct({ v, clamp = PALM_CLAMP }) {
  return reconstruct(v, clamp === null ? null : num(clamp, 'clamp'));
}
function palmDecode({ v, side: s }) {
  side(s);
  const r = reconstruct(v, PALM_CLAMP);
  return { q: s === 'l' ? mirrorQ(r.q) : r.q, changed: r.changed };
}
function palmEncode({ q, side: s }) {
  side(s);
  // the stored quaternion (after the left hand's mirror) is made canonical, §4.2
  let c = vec(q, 4, 'q');
  if (s === 'l') c = mirrorQ(c);
  c = qcanonical(c);
  let v = c.slice(1);
  let clamped = false;
  const n = norm(v);
  // §3.3 hemisphere rule: in the clamp band, v points into the default's hemisphere h = (1, 0, 1)/√2
  if (n > PALM_CLAMP && v[0] + v[2] < 0) v = v.map((x) => -x + 0);
  if (n > PALM_CLAMP) {
    v = scaleTo(v, PALM_CLAMP_TARGET); // §3.3 clamp: v · (T / |v|)
    clamped = true;
  }
  return { v, clamped };
}
function palmDirections({ q, side: s }) {
  side(s);
  const u = qnormalize(vec(q, 4, 'q'));
  const x = rotate(u, [1, 0, 0]);
  return {
    fingers: rotate(u, [0, 1, 0]),
    palm_normal: rotate(u, [0, 0, 1]),
    thumb: s === 'r' ? x : scale(x, -1),
  };
}
function palmFromDirections({ fingers, palm_normal: pn, side: s }) {
  side(s);
  const Y = unit(vec(fingers, 3, 'fingers'));
  const m = vec(pn, 3, 'palm_normal');
  unit(m); // a zero palm normal is usage.zero_norm whatever the fingers
  const Z = unit(sub(m, scale(Y, dot(m, Y))), norm(m)); // §6.5 rule 4: derived, relative
  const X = cross(Y, Z);
  const R = [0, 1, 2].map((i) => [X[i], Y[i], Z[i]]);
  return { q: qfromMatrix(R) };
}

// ---------------------------------------------------------------------------------------
// §4.1 calibration and arm

const AXES = ['x', 'y', 'z'];
const DIST_KEYS = ['hand_length', 'torso_length', 'arm_length'];
const validDist = (d) => typeof d === 'number' && Number.isFinite(d) && d > 0 && d <= 10; // (0, 10] m, §4.1

function units(cal) {
  if (cal === null || typeof cal !== 'object') throw usage('shape', 'calibration');
  const S = cal.shoulder_width;
  const L = [];
  const fallback = [];
  DIST_KEYS.forEach((k, i) => {
    const d = cal[k];
    if (validDist(d)) {
      L.push(2 * REF.r[i] * d);
    } else {
      if (!validDist(S)) throw usage('calibration', `${k} and shoulder_width`);
      L.push(S);
      fallback.push(AXES[i]);
    }
  });
  return { L, fallback_axes: fallback };
}

const MEASURE_SITES = ['shoulder_l', 'shoulder_r', 'neck', 'hip_mid', 'navel', 'wrist_r', 'middle_tip_r'];
function calibrationMeasure({ sites }) {
  const s = {};
  for (const k of Object.keys(sites)) if (!MEASURE_SITES.includes(k)) throw usage('unknown_id', k); // §6.5
  for (const [k, v] of Object.entries(sites || {})) s[k] = vec(v, 3, k);
  if (!s.neck && s.shoulder_l && s.shoulder_r) s.neck = scale(add(s.shoulder_l, s.shoulder_r), 0.5);
  if (!s.navel && s.neck && s.hip_mid) s.navel = add(s.neck, scale(sub(s.hip_mid, s.neck), 0.8));
  const dist = (a, b) => (s[a] && s[b] ? norm(sub(s[a], s[b])) : null);
  return {
    hand_length: dist('middle_tip_r', 'wrist_r'),
    torso_length: dist('navel', 'neck'),
    arm_length: dist('wrist_r', 'shoulder_r'),
    shoulder_width: dist('shoulder_l', 'shoulder_r'),
  };
}

function armToPhysical({ n, side: s, calibration }) {
  side(s);
  n = vec(n, 3, 'n'); // not range-checked: the maths works for any n (spec §6.5)
  const { L } = units(calibration);
  const sx = s === 'r' ? -1 : 1;
  return { p: [sx * n[0] * 2.5 * L[0], n[1] * 2.5 * L[1], n[2] * 2.5 * L[2]] };
}
function armToNormalized({ p, side: s, calibration }) {
  side(s);
  p = vec(p, 3, 'p');
  const { L } = units(calibration);
  const sx = s === 'r' ? -1 : 1;
  return { n: [(sx * p[0]) / (2.5 * L[0]), p[1] / (2.5 * L[1]), p[2] / (2.5 * L[2])] };
}

// ---------------------------------------------------------------------------------------
// §4.4, §4.5 Euler, head, body, spine

function eulerToQ(yaw, pitch, roll) {
  return qcanonical(qmul(qmul(qaxis(1, yaw), qaxis(0, pitch)), qaxis(2, roll)));
}
function eulerFromQ(q) {
  const R = qmatrix(qnormalize(q));
  const h = Math.hypot(R[1][0], R[1][1]);
  const pitch = Math.atan2(-R[1][2], h);
  let yaw;
  let roll;
  if (h <= 1e-9) {
    roll = 0;
    yaw = Math.atan2(Math.sign(pitch) * R[0][1], R[0][0]);
  } else {
    yaw = Math.atan2(R[0][2], R[2][2]);
    roll = Math.atan2(R[1][0], R[1][1]);
  }
  return { yaw: yaw / DEG, pitch: pitch / DEG, roll: roll / DEG };
}
const HEAD_MAX = ['h_yaw', 'h_pitch', 'h_roll'].map((id) => BY_ID.get(id).max);
const BODY_MAX = ['b_yaw', 'b_pitch', 'b_roll'].map((id) => BY_ID.get(id).max);

function normalizedToQ(n, max) {
  n = vec(n, 3, 'n');
  n.forEach((x) => {
    if (x < -1 || x > 1) throw usage('out_of_range', 'n');
  });
  return eulerToQ(n[0] * max[0], n[1] * max[1], n[2] * max[2]);
}
function qToNormalized(q, max) {
  const e = eulerFromQ(vec(q, 4, 'q'));
  const raw = [e.yaw / max[0], e.pitch / max[1], e.roll / max[2]];
  const n = raw.map((x) => clip(x, -1, 1));
  return { n, clamped: raw.some((x, i) => x !== n[i]) };
}

function spineRotations({ n, joints }) {
  const present = joints ?? SPINE.map((s) => s.joint);
  if (!Array.isArray(present)) throw usage('shape', 'joints');
  if (present.length === 0) throw usage('bad_option', 'joints: none present');
  const shares = present.map((j) => {
    const s = SPINE.find((x) => x.joint === j);
    if (!s) throw usage('bad_option', `joint ${j}`);
    return s.share;
  });
  const total = shares.reduce((a, b) => a + b, 0);
  const Q = normalizedToQ(n, BODY_MAX); // canonical, w >= 0
  const vn = norm(Q.slice(1));
  const theta = 2 * Math.atan2(vn, Q[0]);
  const u = vn > 0 ? scale(Q.slice(1), 1 / vn) : [0, 0, 0];
  const rotations = {};
  present.forEach((j, i) => {
    const a = ((shares[i] / total) * theta) / 2;
    rotations[j] = [Math.cos(a), ...scale(u, Math.sin(a))];
  });
  return { rotations };
}

// ---------------------------------------------------------------------------------------
// §4.6 morph

function dimsToArkit(values, policy = 'clamp') {
  if (policy !== 'raise' && policy !== 'clamp') throw usage('bad_option', `policy ${policy}`);
  const weights = {};
  const clipped = [];
  for (const [id, n] of Object.entries(values)) {
    const d = dimOf(id);
    if (d.group !== 'face' && d.group !== 'mouth') continue; // other dims are ignored
    num(n, id);
    if ((n < lo(d) || n > HI) && policy === 'raise') throw usage('out_of_range', id);
    for (const [list, s] of [
      [d.positive, 1],
      [d.negative, -1],
    ]) {
      // primary and secondary drives of a channel are summed (§4.6, §4.7)
      for (const { channel, gain } of list) {
        const w = gain * Math.max(s * n, 0);
        if (w !== 0) weights[channel] = (weights[channel] ?? 0) + w;
      }
    }
  }
  for (const [channel, w] of Object.entries(weights)) {
    if (w > 1) {
      weights[channel] = 1;
      clipped.push(channel);
    }
  }
  return { weights, clipped: byArkit(clipped) };
}

function arkitToDims({ weights, policy = 'raise', into = {} }) {
  if (policy !== 'raise' && policy !== 'clamp') throw usage('bad_option', `policy ${policy}`);
  if (weights === null || typeof weights !== 'object' || Array.isArray(weights)) throw usage('shape', 'weights');
  checkIds(into, 'into');
  const w = new Map();
  const clamped = [];
  const replaced = [];
  for (const [ch, x] of Object.entries(weights)) {
    if (ch === '_neutral') continue;
    if (!CHANNELS.has(ch)) throw usage('unknown_id', ch);
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      if (policy === 'raise') throw usage('not_finite', ch);
      replaced.push(ch);
      w.set(ch, 0);
      continue;
    }
    if (x < 0 || x > 1) {
      if (policy === 'raise') throw usage('out_of_range', ch);
      clamped.push(ch);
      w.set(ch, clip(x, 0, 1));
      continue;
    }
    w.set(ch, x);
  }
  const values = { ...into };
  const dimsClipped = [];
  const wv = ARKIT_ORDER.map((c) => w.get(c) ?? 0);
  const parts = FACE_DIMS.map(() => [0, 0]); // (p, m) per face dim
  for (const { k, part, row } of SOLVE) {
    const x = row.reduce((acc, g, c) => acc + wv[c] * g, 0); // channel order from +0 (§1.5)
    parts[k][part] = x > SOLVE_ROUNDING ? x : 0; // p, m ≥ 0 (rounding -> 0)
  }
  FACE_DIMS.forEach((d, k) => {
    const raw = parts[k][0] - parts[k][1];
    const n = clip(raw, -1, 1);
    if (Math.abs(raw) > 1 + SOLVE_ROUNDING) dimsClipped.push(d.id);
    if (n !== d.default || d.id in values) values[d.id] = n;
  });
  return { values, clamped: byArkit(clamped), replaced: byArkit(replaced), dims_clipped: byIndex(dimsClipped) };
}

// ---------------------------------------------------------------------------------------
// §3.4.1, §4.7 mouthing

/** Shares as a 15-list from the object form {viseme: share} or the list form. */
function sharesToList(shares) {
  const s = new Array(VISEMES.length).fill(0);
  if (Array.isArray(shares)) {
    if (shares.length === 0) return s;
    if (shares.length !== VISEMES.length) throw usage('shape', 'shares');
    shares.forEach((x, i) => {
      s[i] = num(x, VISEMES[i]);
    });
  } else if (shares && typeof shares === 'object') {
    for (const [v, x] of Object.entries(shares)) {
      const i = VISEMES.indexOf(v);
      if (i < 0) throw usage('unknown_id', v);
      s[i] = num(x, v);
    }
  } else if (shares !== null && shares !== undefined) {
    throw usage('shape', 'shares');
  }
  return s;
}
const MIX_EPS = 1e-6;

function delta(a, b) {
  // §4.7/§1.5: the direction is decided on the signs, never on the rounded product a·b
  // (which underflows to -0 for a = 0.5, b = -5e-324)
  const opposite = Math.sign(a) * Math.sign(b) < 0;
  return opposite ? a * Math.abs(b) : a * (1 - Math.abs(b));
}

function mouthingApply({ values = {}, shares }) {
  checkValues(values);
  const s = sharesToList(shares);
  s.forEach((x, i) => {
    if (x < 0 || x > 1) throw usage('out_of_range', VISEMES[i]);
  });
  if (s.reduce((a, b) => a + b, 0) > 1 + MIX_EPS) throw usage('out_of_range', 'shares sum');
  const base = new Map();
  s.forEach((x, i) => {
    for (const { dim, value } of SEED_T.get(VISEMES[i]) ?? []) base.set(dim, (base.get(dim) ?? 0) + x * value);
  });
  const baseline = {};
  const deltas = {};
  const effective = {};
  const drive = {};
  for (const [id, n] of Object.entries(values)) if (BY_ID.get(id).group === 'face') drive[id] = n;
  for (const d of MOUTH_DIMS) {
    const b = clip(base.get(d.id) ?? 0, -1, 1);
    const a = values[d.id] ?? d.default;
    const dl = delta(a, b);
    const e = b + dl;
    if (b !== 0) baseline[d.id] = b;
    if (dl !== 0) deltas[d.id] = dl;
    if (e !== 0) effective[d.id] = e;
    if (dl !== 0) drive[d.id] = dl;
  }
  const visemes = {};
  s.forEach((x, i) => {
    if (x !== 0) visemes[VISEMES[i]] = x;
  });
  const arkit = dimsToArkit(drive); // §3.5: a clipped weight is reported, never silent
  return { baseline, delta: deltas, effective, arkit: arkit.weights, visemes, clipped: arkit.clipped };
}

function mouthingNormalize({ shares }) {
  const s = sharesToList(shares);
  s.forEach((x, i) => {
    if (x < 0) throw usage('out_of_range', VISEMES[i]);
  });
  let sum = s.reduce((a, b) => a + b, 0);
  const overflow = sum === Infinity;
  if (overflow) { // §1.5: a sum beyond binary64 is taken of the shares times 2^-e (exact)
    const e = Math.floor(Math.log2(Math.max(...s))) + 1;
    s.forEach((x, i) => { s[i] = ldexp(x, -e); });
    sum = s.reduce((a, b) => a + b, 0);
  }
  const normalized = sum > 1 || overflow;
  const out = {};
  s.forEach((x, i) => {
    const y = normalized ? x / sum : x; // "non-zero only" on the divided share (5e-324/2 is 0)
    if (y !== 0) out[VISEMES[i]] = y;
  });
  return { shares: out, normalized };
}

// ---------------------------------------------------------------------------------------
// §3.4.4 affect

function affectApply({ values = {}, label, intensity, mode }) {
  // §6.5: one code for an unknown enumeration value
  if (!PRESETS.has(label)) throw usage('unknown_id', `label ${label}`);
  if (!AFFECT_MODES.includes(mode)) throw usage('unknown_id', `mode ${mode}`);
  const i = num(intensity, 'intensity');
  if (i < 0 || i > 1) throw usage('out_of_range', 'intensity');
  checkIds(values); // bounds are not checked: listed dims are clamped after the law
  const out = { ...values };
  const clamped = [];
  for (const { dim, value: A } of PRESETS.get(label)) {
    const d = BY_ID.get(dim);
    const n = values[dim] ?? d.default;
    const raw = mode === 'add' ? n + i * A : (1 - i) * n + i * A;
    const c = clip(raw, lo(d), HI);
    if (c !== raw) clamped.push(dim);
    out[dim] = c;
  }
  return { values: out, clamped: byIndex(clamped) };
}

// ---------------------------------------------------------------------------------------
// msgpack (https://github.com/msgpack/msgpack/blob/master/spec.md)
// Decoded representation: int -> BigInt, float -> Number (tagged via Float wrapper not
// needed: BigInt vs Number distinguishes), str -> string, bin -> Uint8Array,
// nil -> null, bool -> boolean, array -> Array, map -> MPMap, ext -> {ext, data}.

class MPMap {
  constructor(entries) {
    this.entries = entries; // [key, value][]
  }
}
class F64 {
  // encoder marker: always write as float 64
  constructor(v) {
    this.v = v;
  }
}

const MAX_DEPTH = 64;

function mpDecode(buf) {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let pos = 0;
  const need = (n) => {
    if (pos + n > buf.length) throw decodeErr('malformed', '$', 'truncated');
  };
  const u8 = () => (need(1), buf[pos++]);
  const u16 = () => (need(2), (pos += 2), dv.getUint16(pos - 2));
  const u32 = () => (need(4), (pos += 4), dv.getUint32(pos - 4));
  const bytes = (n) => (need(n), (pos += n), buf.subarray(pos - n, pos));
  const str = (n) => {
    try {
      return utf8.decode(bytes(n));
    } catch (e) {
      if (e instanceof KitError) throw e;
      throw decodeErr('malformed', '$', 'invalid utf-8');
    }
  };
  const arr = (n, depth) => {
    const a = [];
    for (let i = 0; i < n; i++) a.push(item(depth + 1));
    return a;
  };
  const map = (n, depth) => {
    const e = [];
    for (let i = 0; i < n; i++) {
      const k = item(depth + 1);
      // posewire maps have str keys only (§5.2): any other key is not a posewire document
      if (typeof k !== 'string') throw decodeErr('malformed', '$', 'map key is not a str');
      e.push([k, item(depth + 1)]);
    }
    return new MPMap(e);
  };
  const item = (depth) => {
    if (depth > MAX_DEPTH) throw decodeErr('malformed', '$', 'nesting too deep');
    const b = u8();
    if (b <= 0x7f) return BigInt(b);
    if (b <= 0x8f) return map(b & 0x0f, depth);
    if (b <= 0x9f) return arr(b & 0x0f, depth);
    if (b <= 0xbf) return str(b & 0x1f);
    if (b >= 0xe0) return BigInt(b - 0x100);
    switch (b) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return bytes(u8());
      case 0xc5: return bytes(u16());
      case 0xc6: return bytes(u32());
      case 0xc7: { const n = u8(); return { ext: dv.getInt8((need(1), pos++)), data: bytes(n) }; }
      case 0xc8: { const n = u16(); return { ext: dv.getInt8((need(1), pos++)), data: bytes(n) }; }
      case 0xc9: { const n = u32(); return { ext: dv.getInt8((need(1), pos++)), data: bytes(n) }; }
      case 0xca: need(4); pos += 4; return dv.getFloat32(pos - 4);
      case 0xcb: need(8); pos += 8; return dv.getFloat64(pos - 8);
      case 0xcc: return BigInt(u8());
      case 0xcd: return BigInt(u16());
      case 0xce: return BigInt(u32());
      case 0xcf: need(8); pos += 8; return dv.getBigUint64(pos - 8);
      case 0xd0: need(1); pos += 1; return BigInt(dv.getInt8(pos - 1));
      case 0xd1: need(2); pos += 2; return BigInt(dv.getInt16(pos - 2));
      case 0xd2: need(4); pos += 4; return BigInt(dv.getInt32(pos - 4));
      case 0xd3: need(8); pos += 8; return dv.getBigInt64(pos - 8);
      case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: {
        const n = 1 << (b - 0xd4);
        need(1);
        const t = dv.getInt8(pos++);
        return { ext: t, data: bytes(n) };
      }
      case 0xd9: return str(u8());
      case 0xda: return str(u16());
      case 0xdb: return str(u32());
      case 0xdc: return arr(u16(), depth);
      case 0xdd: return arr(u32(), depth);
      case 0xde: return map(u16(), depth);
      case 0xdf: return map(u32(), depth);
      default: throw decodeErr('malformed', '$', `byte 0x${b.toString(16)}`); // 0xc1
    }
  };
  const doc = item(0);
  if (pos !== buf.length) throw decodeErr('malformed', '$', 'trailing bytes');
  return doc;
}

function mpEncode(value) {
  const out = [];
  const te = new TextEncoder();
  const be = (n, bytes) => {
    for (let i = bytes - 1; i >= 0; i--) out.push(Number((BigInt(n) >> BigInt(8 * i)) & 0xffn));
  };
  const f64 = (x) => {
    const b = new DataView(new ArrayBuffer(8));
    b.setFloat64(0, x);
    out.push(0xcb, ...new Uint8Array(b.buffer));
  };
  const int = (n) => {
    n = BigInt(n);
    if (n >= 0n) {
      if (n <= 0x7fn) out.push(Number(n));
      else if (n <= 0xffn) (out.push(0xcc), be(n, 1));
      else if (n <= 0xffffn) (out.push(0xcd), be(n, 2));
      else if (n <= 0xffffffffn) (out.push(0xce), be(n, 4));
      else if (n <= 0xffffffffffffffffn) (out.push(0xcf), be(n, 8));
      else throw usage('out_of_range', 'integer too large');
    } else {
      if (n >= -32n) out.push(Number(n + 0x100n));
      else if (n >= -0x80n) (out.push(0xd0), be(n & 0xffn, 1));
      else if (n >= -0x8000n) (out.push(0xd1), be(n & 0xffffn, 2));
      else if (n >= -0x80000000n) (out.push(0xd2), be(n & 0xffffffffn, 4));
      else if (n >= -0x8000000000000000n) (out.push(0xd3), be(n & 0xffffffffffffffffn, 8));
      else throw usage('out_of_range', 'integer too small');
    }
  };
  const enc = (v) => {
    if (v === null || v === undefined) out.push(0xc0);
    else if (v === false) out.push(0xc2);
    else if (v === true) out.push(0xc3);
    else if (v instanceof F64) f64(v.v);
    else if (typeof v === 'bigint') int(v);
    else if (typeof v === 'number') (Number.isInteger(v) ? int(v) : f64(v));
    else if (typeof v === 'string') {
      const b = te.encode(v);
      if (b.length < 32) out.push(0xa0 | b.length);
      else if (b.length <= 0xff) (out.push(0xd9), be(b.length, 1));
      else if (b.length <= 0xffff) (out.push(0xda), be(b.length, 2));
      else (out.push(0xdb), be(b.length, 4));
      out.push(...b);
    } else if (v instanceof Uint8Array) {
      if (v.length <= 0xff) (out.push(0xc4), be(v.length, 1));
      else if (v.length <= 0xffff) (out.push(0xc5), be(v.length, 2));
      else (out.push(0xc6), be(v.length, 4));
      out.push(...v);
    } else if (Array.isArray(v)) {
      if (v.length < 16) out.push(0x90 | v.length);
      else if (v.length <= 0xffff) (out.push(0xdc), be(v.length, 2));
      else (out.push(0xdd), be(v.length, 4));
      v.forEach(enc);
    } else if (v instanceof MPMap) {
      const n = v.entries.length;
      if (n < 16) out.push(0x80 | n);
      else if (n <= 0xffff) (out.push(0xde), be(n, 2));
      else (out.push(0xdf), be(n, 4));
      for (const [k, x] of v.entries) (enc(k), enc(x));
    } else throw new Error(`cannot encode ${typeof v}`);
  };
  enc(value);
  return Uint8Array.from(out);
}

// ---------------------------------------------------------------------------------------
// §5 wire messages

const PROTOCOL = 1;
const DEFAULT_MAX_SIZE = 4096;
const hexToBytes = (h) => {
  if (typeof h !== 'string' || h.length % 2 || /[^0-9a-fA-F]/.test(h)) throw usage('shape', 'hex');
  return Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
};
const bytesToHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const STREAM_RE = /^[A-Za-z0-9._-]{1,64}$/;
const SEMVER_RE = /^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$/;
const codepoints = (s) => [...s].length;
const scaleOf = (bits) => 2 ** (bits - 1) - 1;

function roundHalfEven(x) {
  const r = Math.round(x); // rounds .5 up
  if (Math.abs(x - Math.trunc(x)) === 0.5) return 2 * Math.round(x / 2);
  return r;
}

// --- encode (local caller: usage.* codes) ---

function checkUint(x, bits, what) {
  if (typeof x !== 'number' || !Number.isInteger(x)) throw usage('bad_option', what); // booleans too
  if (x < 0 || x > 2 ** bits - 1) throw usage('out_of_range', what);
  return x;
}
function checkText(x, n, what, nullable = false) {
  if (nullable && (x === null || x === undefined)) return null;
  if (typeof x !== 'string') throw usage('bad_option', what);
  if (codepoints(x) > n) throw usage('out_of_range', what);
  return x;
}
// §6.5: an encoder writes pv = 1 only
function checkPv1(pv = PROTOCOL) {
  if (pv !== PROTOCOL) throw usage('bad_option', 'protocol');
  return pv;
}
function checkPattern(x, re, what) {
  if (typeof x !== 'string') throw usage('bad_option', what);
  if (!re.test(x)) throw usage('out_of_range', what);
  return x;
}
function rhBytes(h) {
  if (typeof h !== 'string') throw usage('bad_option', 'registry_hash');
  if (!/^[0-9a-f]{16}$/.test(h)) throw usage('out_of_range', 'registry_hash'); // §6.5 lowercase hex
  const b = hexToBytes(h);
  if (b.length !== 8) throw usage('shape', 'registry_hash');
  return b;
}

function quantize(values) {
  checkValues(values);
  const q = {};
  for (const [id, n] of Object.entries(values)) q[id] = roundHalfEven(n * scaleOf(BY_ID.get(id).bits));
  // §5.4 palm rule: a palm vector part with |v| <= 0.98 keeps |q/s| <= 0.98; where rounding to
  // nearest would exceed it, the three components are rounded toward zero instead
  for (const s of ['l', 'r']) {
    const ids = ['x', 'y', 'z'].map((a) => `w_q${a}_${s}`);
    if (!ids.every((id) => id in values)) continue;
    const sc = ids.map((id) => scaleOf(BY_ID.get(id).bits));
    // lengths as sqrt(a·a + b·b + c·c), summed in that order (not Math.hypot): §5.4
    const length = ([a, b, c]) => Math.sqrt(a * a + b * b + c * c);
    const nv = length(ids.map((id) => values[id]));
    const nq = length(ids.map((id, i) => q[id] / sc[i]));
    if (nq > PALM_CLAMP && nv <= PALM_CLAMP) ids.forEach((id, i) => (q[id] = Math.trunc(values[id] * sc[i]) + 0));
  }
  return q;
}

function conditionsToMap(c0) {
  const c = checkConditionsUsage(c0);
  const e = [];
  if (c.mouthing) e.push(['mouthing', c.mouthing.map((x) => (x === 0 ? 0 : new F64(x)))]);
  if (c.tracking) {
    const t = TRACK_PARTS.filter((p) => p in c.tracking).map((p) => [p, c.tracking[p]]);
    e.push(['tracking', new MPMap(t)]);
  }
  if (c.contact) {
    const t = CONTACT_HANDS.filter((p) => p in c.contact).map((p) => [p, c.contact[p]]);
    e.push(['contact', new MPMap(t)]);
  }
  if (c.affect) {
    const a = c.affect;
    e.push(['affect', new MPMap([['label', a.label], ['intensity', new F64(a.intensity)], ['mode', a.mode]])]);
  }
  return new MPMap(e);
}

const metres = (x, what) => {
  if (x === null || x === undefined) return null;
  num(x, what);
  if (!(x > 0 && x <= 10)) throw usage('out_of_range', what);
  return new F64(x);
};

// §6.5 JSON form: keys of each message type, and those an encoder needs
const MESSAGE_KEYS = {
  hello: [['role', 'stream'], ['protocol', 'registry_version', 'registry_hash', 'client', 'token']],
  welcome: [['session'], ['protocol', 'registry_version', 'registry_hash', 'max_message_bytes', 'max_fps']],
  bye: [[], ['reason']],
  err: [['number', 'code'], ['path', 'message']],
  cal: [[], ['hand_length', 'torso_length', 'arm_length', 'shoulder_width']],
  cond: [['conditions'], ['timestamp_us']],
  f: [['seq', 'timestamp_us', 'values'], ['conditions', 'unknown_dims']],
};
// §6.5: the keys of each message's JSON form in the table's order (JSON types checked so)
const JSON_ORDER = {
  hello: ['protocol', 'role', 'stream', 'registry_version', 'registry_hash', 'client', 'token'],
  welcome: ['protocol', 'session', 'registry_version', 'registry_hash', 'max_message_bytes', 'max_fps'],
  bye: ['reason'],
  err: ['number', 'code', 'path', 'message'],
  cal: ['hand_length', 'torso_length', 'arm_length', 'shoulder_width'],
  cond: ['timestamp_us', 'conditions'],
  f: ['seq', 'timestamp_us', 'values', 'conditions', 'unknown_dims'],
};
function encodeMessage(m) {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) throw usage('bad_option', 'message');
  if (typeof m.type !== 'string') throw usage('bad_option', 'type');
  const keys = MESSAGE_KEYS[m.type];
  if (!keys) throw usage('unknown_id', 'type');
  for (const k of Object.keys(m)) if (k !== 'type' && !keys[0].includes(k) && !keys[1].includes(k)) throw usage('bad_option', k);
  for (const k of keys[0]) if (!(k in m)) throw usage('bad_option', k);
  // §6.5 wire.encode, each step over the whole message before the next: (2) JSON types of
  // every key in the message's key order; (3) frame values finite; (4) protocol 1; (5) dim
  // ids, role, the condition object (§3.4, whole); (6) ranges (the switch below)
  const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
  const isNum = (x) => typeof x === 'number';
  const isInt = (x) => typeof x === 'number' && Number.isInteger(x);
  const TYPES = {
    role: (x) => typeof x === 'string', stream: (x) => typeof x === 'string',
    protocol: isInt, registry_version: (x) => typeof x === 'string',
    registry_hash: (x) => typeof x === 'string', client: (x) => typeof x === 'string',
    token: (x) => x === null || typeof x === 'string', session: (x) => typeof x === 'string',
    max_message_bytes: isInt, max_fps: isInt, reason: (x) => typeof x === 'string',
    number: isInt, code: (x) => typeof x === 'string', path: (x) => typeof x === 'string',
    message: (x) => typeof x === 'string', timestamp_us: isInt, seq: isInt, unknown_dims: isInt,
    values: (x) => isObj(x) && Object.values(x).every(isNum),
    conditions: (x) => isObj(x) || (m.type === 'f' && x === null),
  };
  for (const k of JSON_ORDER[m.type]) {
    if (!(k in m)) continue;
    const ok = m.type === 'cal' ? m[k] === null || isNum(m[k]) : TYPES[k](m[k]);
    if (!ok) throw usage('bad_option', k);
  }
  if (m.type === 'f') for (const [id, x] of Object.entries(m.values)) if (!Number.isFinite(x)) throw usage('not_finite', id);
  if ('protocol' in m && m.protocol !== PROTOCOL) throw usage('bad_option', 'protocol');
  if (m.type === 'f') for (const id of Object.keys(m.values)) dimOf(id);
  if (m.type === 'hello' && m.role !== 'producer' && m.role !== 'consumer') throw usage('unknown_id', 'role');
  if (m.conditions !== undefined && m.conditions !== null) checkConditionsUsage(m.conditions);
  switch (m.type) {
    case 'hello': {
      const e = [
        ['t', 'hello'],
        ['pv', checkPv1(m.protocol)],
        ['ro', m.role === 'producer' || m.role === 'consumer' ? m.role : (() => { throw usage('unknown_id', 'role'); })()],
        ['s', checkPattern(m.stream, STREAM_RE, 'stream')],
        ['rv', checkPattern(m.registry_version ?? REGISTRY.version, SEMVER_RE, 'registry_version')],
        ['rh', rhBytes(m.registry_hash)],
        ['cn', checkText(m.client ?? '', 64, 'client')],
      ];
      const tk = checkText(m.token, 256, 'token', true);
      if (tk !== null) e.push(['tk', tk]);
      return new MPMap(e);
    }
    case 'welcome': {
      const mb = checkUint(m.max_message_bytes ?? 4096, 32, 'max_message_bytes');
      const mf = checkUint(m.max_fps ?? 120, 32, 'max_fps');
      if (mb < 256 || mb > 2 ** 20) throw usage('out_of_range', 'max_message_bytes');
      if (mf < 1 || mf > 1000) throw usage('out_of_range', 'max_fps');
      return new MPMap([
        ['t', 'welcome'],
        ['pv', checkPv1(m.protocol)],
        ['sid', checkText(m.session, 64, 'session')],
        ['rv', checkPattern(m.registry_version ?? REGISTRY.version, SEMVER_RE, 'registry_version')],
        ['rh', rhBytes(m.registry_hash)],
        ['mb', mb],
        ['mf', mf],
      ]);
    }
    case 'bye':
      return new MPMap([['t', 'bye'], ['why', checkText(m.reason ?? '', 256, 'reason')]]);
    case 'err':
      return new MPMap([
        ['t', 'err'],
        ['n', checkUint(m.number, 16, 'number')],
        ['co', checkText(m.code, 64, 'code')],
        ['pa', checkText(m.path ?? '', 256, 'path')],
        ['msg', checkText(m.message ?? '', 256, 'message')],
      ]);
    case 'cal':
      return new MPMap([
        ['t', 'cal'],
        ['hl', metres(m.hand_length, 'hand_length')],
        ['tl', metres(m.torso_length, 'torso_length')],
        ['al', metres(m.arm_length, 'arm_length')],
        ['sw', metres(m.shoulder_width, 'shoulder_width')],
      ]);
    case 'cond':
      return new MPMap([
        ['t', 'cond'],
        ['ts', checkUint(m.timestamp_us ?? 0, 64, 'timestamp_us')],
        ['c', conditionsToMap(m.conditions ?? {})],
      ]);
    case 'f': {
      const values = checkValues(m.values ?? {});
      const qs = quantize(values);
      const ids = byIndex(Object.keys(values));
      const mask = new Uint8Array(32);
      let maskLen = 0;
      const v = [];
      for (const id of ids) {
        const d = BY_ID.get(id);
        mask[d.index >> 3] |= 1 << (d.index & 7);
        maskLen = Math.max(maskLen, (d.index >> 3) + 1);
        const q = qs[id];
        const nb = d.bits / 8;
        for (let i = nb - 1; i >= 0; i--) v.push((q >> (8 * i)) & 0xff);
      }
      const e = [
        ['t', 'f'],
        ['s', checkUint(m.seq, 32, 'seq')],
        ['ts', checkUint(m.timestamp_us, 64, 'timestamp_us')],
        ['m', mask.slice(0, maskLen)],
        ['v', Uint8Array.from(v)],
      ];
      if (m.conditions !== undefined && m.conditions !== null) e.push(['c', conditionsToMap(m.conditions)]);
      return new MPMap(e);
    }
    default:
      throw usage('bad_option', `type ${m.type}`);
  }
}

// --- decode (peer data: decode.* codes) ---

class Fields {
  constructor(map, prefix = '') {
    this.f = new Map();
    this.prefix = prefix;
    for (const [k, v] of map.entries) if (typeof k === 'string') this.f.set(k, v);
  }
  p(k) {
    return this.prefix ? `${this.prefix}.${k}` : k;
  }
  has(k) {
    return this.f.has(k);
  }
  raw(k, required = true) {
    if (!this.f.has(k)) {
      if (required) throw decodeErr('missing_field', this.p(k));
      return undefined;
    }
    return this.f.get(k);
  }
  int(k, min, max, { required = true, dflt } = {}) {
    const v = this.raw(k, required);
    if (v === undefined) return dflt;
    if (typeof v !== 'bigint') throw decodeErr('type', this.p(k));
    if (v < BigInt(min) || v > BigInt(max)) throw decodeErr('out_of_range', this.p(k));
    return v;
  }
  real(k, { required = true, nullable = false, dflt } = {}) {
    const v = this.raw(k, required);
    if (v === undefined) return dflt;
    if (v === null && nullable) return null;
    if (typeof v === 'bigint') return Number(v);
    if (typeof v !== 'number') throw decodeErr('type', this.p(k));
    if (!Number.isFinite(v)) throw decodeErr('not_finite', this.p(k));
    return v;
  }
  str(k, { required = true, dflt, max, re } = {}) {
    const v = this.raw(k, required);
    if (v === undefined) return dflt;
    if (typeof v !== 'string') throw decodeErr('type', this.p(k));
    if (max !== undefined && codepoints(v) > max) throw decodeErr('out_of_range', this.p(k));
    if (re && !re.test(v)) throw decodeErr('out_of_range', this.p(k));
    return v;
  }
  bin(k, { len, maxLen } = {}) {
    const v = this.raw(k);
    if (!(v instanceof Uint8Array)) throw decodeErr('type', this.p(k));
    if (len !== undefined && v.length !== len) throw decodeErr('length', this.p(k));
    if (maxLen !== undefined && v.length > maxLen) throw decodeErr('length', this.p(k));
    return v;
  }
  map(k, { required = true } = {}) {
    const v = this.raw(k, required);
    if (v === undefined) return undefined;
    if (!(v instanceof MPMap)) throw decodeErr('type', this.p(k));
    return v;
  }
}

const jsInt = (b) => (b === undefined ? undefined : Number(b));

function decodeEnumMap(m, path, keys, vals) {
  if (!(m instanceof MPMap)) throw decodeErr('type', path);
  const out = {};
  for (const [k, v] of m.entries) {
    if (typeof k !== 'string') throw decodeErr('type', path);
    if (!keys.includes(k)) throw decodeErr('unknown_id', `${path}.${k}`);
    if (typeof v !== 'string') throw decodeErr('type', `${path}.${k}`);
    if (!vals.includes(v)) throw decodeErr('unknown_id', `${path}.${k}`);
    out[k] = v;
  }
  return out;
}

function decodeConditions(m, path = 'c') {
  if (!(m instanceof MPMap)) throw decodeErr('type', path);
  const f = new Fields(m, path);
  const out = {};
  // §5.5: a channel whose value is nil is inactive, as if it were left out
  const on = (k) => f.has(k) && f.raw(k) !== null;
  if (on('mouthing')) {
    const p = `${path}.mouthing`;
    const a = f.raw('mouthing');
    if (!Array.isArray(a)) throw decodeErr('type', p);
    if (a.length !== VISEMES.length) throw decodeErr('out_of_range', p);
    const s = a.map((x, i) => {
      const pi = `${p}.${VISEMES[i]}`;
      if (typeof x === 'bigint') x = Number(x);
      else if (typeof x !== 'number') throw decodeErr('type', pi);
      if (!Number.isFinite(x)) throw decodeErr('not_finite', pi);
      if (x < 0 || x > 1) throw decodeErr('out_of_range', pi);
      return x;
    });
    if (s.reduce((x, y) => x + y, 0) > 1 + MIX_EPS) throw decodeErr('out_of_range', p);
    out.mouthing = s;
  }
  // §3.4: an empty tracking or contact map is the channel left out (the JSON form leaves it out)
  const nonEmpty = (m) => (Object.keys(m).length ? m : undefined);
  if (on('tracking')) out.tracking = nonEmpty(decodeEnumMap(f.raw('tracking'), `${path}.tracking`, TRACK_PARTS, TRACK_STATES));
  if (on('contact')) out.contact = nonEmpty(decodeEnumMap(f.raw('contact'), `${path}.contact`, CONTACT_HANDS, CONTACT_SITES));
  if (out.tracking === undefined) delete out.tracking;
  if (out.contact === undefined) delete out.contact;
  if (on('affect')) {
    const a = new Fields(f.map('affect'), `${path}.affect`);
    // §3.4 order of checks: the three fields present first, then label, intensity, mode
    for (const k of ['label', 'intensity', 'mode']) a.raw(k);
    const label = a.str('label');
    if (!AFFECT_LABELS.includes(label)) throw decodeErr('unknown_id', `${path}.affect.label`);
    const intensity = a.real('intensity');
    if (intensity < 0 || intensity > 1) throw decodeErr('out_of_range', `${path}.affect.intensity`);
    const mode = a.str('mode');
    if (!AFFECT_MODES.includes(mode)) throw decodeErr('unknown_id', `${path}.affect.mode`);
    out.affect = { label, intensity, mode };
  }
  return out;
}

function checkPv(f) {
  const pv = f.raw('pv');
  if (typeof pv !== 'bigint') throw decodeErr('type', 'pv');
  if (pv !== BigInt(PROTOCOL)) throw decodeErr('version', 'pv');
}

function decodeMessage(bytes, maxSize = DEFAULT_MAX_SIZE) {
  if (bytes.length > maxSize) throw decodeErr('too_large', '$');
  const doc = mpDecode(bytes);
  if (!(doc instanceof MPMap)) throw decodeErr('type', '$');
  const f = new Fields(doc);
  const t = f.raw('t');
  if (typeof t !== 'string') throw decodeErr('type', 't');
  const metresField = (k) => {
    const v = f.real(k, { required: false, nullable: true, dflt: null });
    if (v !== null && !(v > 0 && v <= 10)) throw decodeErr('out_of_range', k);
    return v;
  };
  const registry = () => ({
    registry_version: f.str('rv', { re: SEMVER_RE }),
    registry_hash: bytesToHex(f.bin('rh', { len: 8 })),
  });
  switch (t) {
    case 'hello': {
      checkPv(f);
      const role = f.str('ro');
      if (role !== 'producer' && role !== 'consumer') throw decodeErr('unknown_id', 'ro'); // §5.2 enumeration
      const stream = f.str('s', { re: STREAM_RE });
      const reg = registry();
      const client = f.str('cn', { required: false, dflt: '', max: 64 });
      const token = f.raw('tk', false) === null ? null : f.str('tk', { required: false, dflt: null, max: 256 });
      return { type: 'hello', role, stream, client, token, ...reg, protocol: 1 };
    }
    case 'welcome': {
      checkPv(f);
      const session = f.str('sid', { max: 64 });
      const reg = registry();
      const mb = jsInt(f.int('mb', 256, 2 ** 20));
      const mf = jsInt(f.int('mf', 1, 1000));
      return { type: 'welcome', session, max_message_bytes: mb, max_fps: mf, ...reg, protocol: 1 };
    }
    case 'bye':
      return { type: 'bye', reason: f.str('why', { required: false, dflt: '', max: 256 }) };
    case 'err':
      return {
        type: 'err',
        number: jsInt(f.int('n', 0, 65535)),
        code: f.str('co', { max: 64 }),
        path: f.str('pa', { required: false, dflt: '', max: 256 }),
        message: f.str('msg', { required: false, dflt: '', max: 256 }),
      };
    case 'cal':
      return {
        type: 'cal',
        hand_length: metresField('hl'),
        torso_length: metresField('tl'),
        arm_length: metresField('al'),
        shoulder_width: metresField('sw'),
      };
    case 'cond': {
      const ts = f.int('ts', 0, 2n ** 64n - 1n, { required: false, dflt: 0n });
      const c = f.map('c');
      return { type: 'cond', timestamp_us: ts, conditions: decodeConditions(c) };
    }
    case 'f': {
      const seq = f.int('s', 0, 2 ** 32 - 1);
      const ts = f.int('ts', 0, 2n ** 64n - 1n);
      const mask = f.bin('m', { maxLen: 32 });
      const v = f.bin('v');
      // expected length first (decode.length), then the values
      let need = 0;
      let unknown = 0;
      for (let i = 0; i < mask.length * 8; i++) {
        if (!(mask[i >> 3] & (1 << (i & 7)))) continue;
        if (i < N) need += DIMS[i].bits / 8;
        else {
          need += 2;
          unknown += 1;
        }
      }
      if (v.length !== need) throw decodeErr('length', 'v');
      const values = {};
      let pos = 0;
      for (let i = 0; i < N && i < mask.length * 8; i++) {
        if (!(mask[i >> 3] & (1 << (i & 7)))) continue;
        const d = DIMS[i];
        const nb = d.bits / 8;
        let q = 0;
        for (let k = 0; k < nb; k++) q = q * 256 + v[pos + k];
        pos += nb;
        const half = 2 ** (d.bits - 1);
        if (q >= half) q -= 2 * half;
        if (q === -half || (q < 0 && d.polarity === 'unipolar')) throw decodeErr('out_of_range', `v.${d.id}`);
        values[d.id] = q / scaleOf(d.bits);
      }
      // c after v (its length and code points), §5.2 order of checks; nil reads as absent (§5.4)
      const c = f.has('c') && f.raw('c') !== null ? decodeConditions(f.map('c')) : undefined;
      const out = { type: 'f', seq, timestamp_us: ts, values, unknown_dims: unknown };
      if (c !== undefined) out.conditions = c;
      return out;
    }
    default:
      throw decodeErr('unknown_type', 't');
  }
}

function wireEncode({ message }) {
  return { hex: bytesToHex(mpEncode(encodeMessage(message))) };
}
function wireDecode({ hex, max_size: maxSize = DEFAULT_MAX_SIZE }) {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw usage('out_of_range', 'hex'); // §6.5 lowercase hex
  return decodeMessage(hexToBytes(hex), maxSize);
}
function wireQuantize({ values }) {
  return { q: quantize(values) };
}

// ---------------------------------------------------------------------------------------
// public API

export { REGISTRY };
export {
  DIMS, N, BY_ID, VISEMES, TRACK_PARTS, TRACK_STATES, ARKIT_ORDER, PALM_CLAMP, PALM_CLAMP_TARGET, PROTOCOL,
  DEFAULT_MAX_SIZE, MPMap, F64, num, vec,
  // quaternions (w, x, y, z) and small vectors
  qmul, qnormalize, qcanonical, qmatrix, rotate, qfromMatrix, eulerToQ, normalizedToQ, HEAD_MAX, BODY_MAX,
  dot, norm, sub, add, scale, cross, unit,
  // §3 vector, §2.3 body frame, §4.2 palm, §4.1 calibration, §4.4/4.5 Euler and spine
  registryRow, vectorValidate, vectorMirror, frameBody, conditionsMirror, palmReconstruct, palmDecode,
  palmEncode, palmDirections, palmFromDirections, units, calibrationMeasure, armToPhysical,
  armToNormalized, eulerFromQ, qToNormalized, spineRotations,
  // §4.6 morph, §4.7 mouthing, §3.4.4 affect
  dimsToArkit, arkitToDims, delta, mouthingApply, mouthingNormalize, affectApply,
  // §5 wire
  mpDecode, mpEncode, hexToBytes, bytesToHex, quantize, encodeMessage, decodeMessage, wireEncode,
  wireDecode, wireQuantize,
};
