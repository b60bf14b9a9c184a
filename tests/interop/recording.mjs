// The recording container of spec §8 (recording.encode, recording.decode), written from
// spec/08-recording.md alone, over the wire messages of js/posewire/codec.mjs (§5).
// Plain Node.js (v20), no npm dependencies.

import { readFileSync } from 'node:fs';
import { CodecError, REGISTRY, wireEncode, wireDecode, hexToBytes, bytesToHex } from '../../js/posewire/codec.mjs';

const MAGIC = [0x89, 0x50, 0x57, 0x52, 0x0d, 0x0a, 0x1a, 0x0a];
const TRAILER_MAGIC = [0x50, 0x57, 0x52, 0x49]; // "PWRI"
const HEADER = 48;
const MAX_PAYLOAD = 2 ** 20;
const SEEK_US = 1000000;
const usage = (kind, path = '') => new CodecError(`usage.${kind}`, path);
const fault = (kind, path = '') => new CodecError(`recording.${kind}`, path);
const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

// the registry sha256 as §4.9 prints it in the registry tables (04-registry-tables.md)
const OWN_HASH = /\b([0-9a-f]{64})\b/.exec(
  readFileSync(new URL('../../spec/04-registry-tables.md', import.meta.url), 'utf8'))[1];

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

class Out {
  constructor() { this.parts = []; this.length = 0; }
  bytes(b) { this.parts.push(Uint8Array.from(b)); this.length += b.length; }
  concat() {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) { out.set(p, at); at += p.length; }
    return out;
  }
}
const u16 = (v) => [(v >> 8) & 0xff, v & 0xff];
const u32 = (v) => [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
function u64(v) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(v));
  return [...b];
}
const withCrc = (bytes) => [...bytes, ...u32(crc32(bytes))];
const record = (kind, t, payload) => withCrc([...u32(payload.length), kind, ...u64(t), ...payload]);

// §8.5: the index the message records give
function indexOf(records) {
  const entries = [];
  let frames = 0, cal = 0, cond = 0, last = null;
  for (const r of records) {
    const type = r.message.type;
    if (type === 'cal') cal = r.offset;
    else if (type === 'cond') cond = r.offset;
    else if (type === 'f') {
      if (r.message.conditions !== undefined) cond = r.offset;
      if (last === null || r.t_us - last >= SEEK_US) {
        entries.push({ frame: frames, t_us: r.t_us, offset: r.offset, calibration: cal, conditions: cond });
        last = r.t_us;
      }
      frames++;
    }
  }
  return {
    records: records.length, frames, t_first: records.length ? records[0].t_us : 0,
    t_last: records.length ? records[records.length - 1].t_us : 0, entries,
  };
}
function indexPayload(ix) {
  const p = [...u32(ix.records), ...u32(ix.frames), ...u64(ix.t_first), ...u64(ix.t_last), ...u32(ix.entries.length)];
  for (const e of ix.entries) p.push(...u32(e.frame), ...u64(e.t_us), ...u64(e.offset), ...u64(e.calibration), ...u64(e.conditions));
  return p;
}

export function recordingEncode({ records, registry_hash: h, close = true }) {
  const hash = h === undefined ? OWN_HASH : h;
  if (!/^[0-9a-f]{64}$/.test(hash)) throw usage('out_of_range', 'registry_hash');
  if (!Array.isArray(records)) throw usage('bad_option', 'records');
  const parsed = records.map((r, i) => {
    const where = `records[${i}]`;
    if (!isObj(r) || Object.keys(r).length !== 2 || !('t_us' in r) || !('message' in r)) throw usage('bad_option', where);
    if (typeof r.t_us !== 'number' || !Number.isInteger(r.t_us)) throw usage('bad_option', `${where}.t_us`);
    if (r.t_us < 0 || r.t_us >= 2 ** 64) throw usage('out_of_range', `${where}.t_us`);
    if (!isObj(r.message)) throw usage('bad_option', `${where}.message`);
    return { t_us: r.t_us, message: r.message, payload: hexToBytes(wireEncode({ message: r.message }).hex) };
  });
  if (!parsed.length) throw usage('bad_option', 'records');
  const out = new Out();
  out.bytes(withCrc([...MAGIC, ...u16(1), ...u16(0), ...hexToBytes(hash)]));
  const written = [];
  parsed.forEach((r, i) => {
    // §8.7 the writer's checks, record by record
    if (i && r.t_us < parsed[i - 1].t_us) throw usage('out_of_range', 't_us');
    if (r.payload.length > MAX_PAYLOAD) throw usage('out_of_range', 'message');
    const m = r.message;
    if (i === 0) {
      if (m.type !== 'hello' || m.role !== 'producer') throw usage('bad_option', 'message');
      if (m.token !== undefined && m.token !== null) throw usage('bad_option', 'message.token');
      if (m.registry_hash !== hash.slice(0, 16)) throw usage('bad_option', 'message.registry_hash');
    } else if (!['cal', 'cond', 'f'].includes(m.type)) throw usage('bad_option', 'message');
    written.push({ offset: out.length, t_us: r.t_us, message: m });
    out.bytes(record(1, r.t_us, [...r.payload]));
  });
  if (close) {
    const ix = indexOf(written);
    const at = out.length;
    out.bytes(record(2, ix.t_last, indexPayload(ix)));
    out.bytes(withCrc([...TRAILER_MAGIC, ...u64(at)]));
  }
  return { hex: bytesToHex(out.concat()) };
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

export function recordingDecode({ hex, strict = false }) {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw usage('out_of_range', 'hex');
  const data = hexToBytes(hex);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const num64 = (at) => Number(view.getBigUint64(at));
  // §8.2 header: length, magic, CRC32, version
  if (data.length < HEADER) {
    if (!same([...data.subarray(0, 8)], MAGIC.slice(0, Math.min(8, data.length)))) throw fault('not_recording', 'header');
    throw fault('truncated', 'header');
  }
  if (!same([...data.subarray(0, 8)], MAGIC)) throw fault('not_recording', 'header');
  if (view.getUint32(44) !== crc32(data.subarray(0, 44))) throw fault('corrupt', 'header');
  const version = view.getUint16(8);
  if (version !== 1) throw fault('version', 'header.version');
  const flags = view.getUint16(10);
  const hash = bytesToHex(data.subarray(12, 44));
  const records = [];
  let index = null, error = null, pos = HEADER, end = HEADER, done = false, indexAt = -1;
  try {
    for (;;) {
      if (done) {
        if (pos < data.length) throw fault('corrupt', `@${pos}`);
        break;
      }
      if (index !== null) { // §8.5 the trailer follows the index record
        if (data.length - pos < 16) break;
        if (!same([...data.subarray(pos, pos + 4)], TRAILER_MAGIC) || view.getUint32(pos + 12) !== crc32(data.subarray(pos, pos + 12))) {
          throw fault('corrupt', `@${pos}`);
        }
        if (num64(pos + 4) !== indexAt) throw fault('index', `@${pos}`);
        pos += 16; end = pos; done = true;
        continue;
      }
      if (data.length - pos < 13) break;
      const length = view.getUint32(pos);
      const kind = data[pos + 4];
      const t = num64(pos + 5);
      if (length > MAX_PAYLOAD) throw fault('corrupt', `@${pos}`);
      const total = 13 + length + 4;
      if (data.length - pos < total) break;
      if (view.getUint32(pos + total - 4) !== crc32(data.subarray(pos, pos + total - 4))) throw fault('corrupt', `@${pos}`);
      const payload = data.subarray(pos + 13, pos + total - 4);
      if (kind === 1) {
        const where = `records[${records.length}]`;
        if (records.length && t < records[records.length - 1].t_us) throw fault('structure', `${where}.t_us`);
        const message = wireDecode({ hex: bytesToHex(payload), max_size: MAX_PAYLOAD });
        if (!records.length) {
          if (message.type !== 'hello' || message.role !== 'producer' || message.token !== null) throw fault('structure', where);
          // §5.9.5 against this reader's registry, then the header's hash
          const [mine, theirs] = [REGISTRY.version, message.registry_version];
          if (mine.split('.')[0] !== theirs.split('.')[0]) throw fault('registry', `${where}.rv`);
          if (theirs === mine && message.registry_hash !== OWN_HASH.slice(0, 16)) throw fault('registry', `${where}.rh`);
          if (message.registry_hash !== hash.slice(0, 16)) throw fault('registry', `${where}.rh`);
        } else if (!['cal', 'cond', 'f'].includes(message.type)) throw fault('structure', where);
        records.push({ offset: pos, t_us: t, message });
      } else if (kind === 2) {
        const p = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
        if (payload.length < 28) throw fault('index', `@${pos}`);
        const n = p.getUint32(24);
        if (payload.length !== 28 + 36 * n) throw fault('index', `@${pos}`);
        const got = {
          records: p.getUint32(0), frames: p.getUint32(4), t_first: Number(p.getBigUint64(8)),
          t_last: Number(p.getBigUint64(16)), entries: [],
        };
        for (let i = 0; i < n; i++) {
          const o = 28 + 36 * i;
          got.entries.push({
            frame: p.getUint32(o), t_us: Number(p.getBigUint64(o + 4)), offset: Number(p.getBigUint64(o + 12)),
            calibration: Number(p.getBigUint64(o + 20)), conditions: Number(p.getBigUint64(o + 28)),
          });
        }
        const want = indexOf(records);
        if (JSON.stringify(got) !== JSON.stringify(want) || t !== want.t_last) throw fault('index', `@${pos}`);
        index = got;
        indexAt = pos;
      } // other kinds: reserved, skipped (§8.3)
      pos += total;
      end = pos;
    }
    if (!done && error === null) throw fault('truncated', `@${pos}`);
  } catch (e) {
    if (!(e instanceof CodecError)) throw e;
    error = e.code;
  }
  if (strict && error !== null) throw new CodecError(error, '');
  return { version, flags, registry_hash: hash, records, index, error, end };
}
