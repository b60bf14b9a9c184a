// posewire subscriber for browsers (and any runtime with a WHATWG WebSocket): connects to
// a relay with the posewire.v1 subprotocol (spec §5.1), says hello as a consumer
// (§5.3), and turns the relay's messages into callbacks. Masked frames are merged into
// one current vector (a dim absent from a frame keeps its last value; NaN until first
// seen, which the decoder reads as the default, spec §3.5); conditions and calibration
// replace the current state (§5.5, §5.6). Reconnects with a capped backoff; a link that
// ends within STABLE_MS of its welcome counts as a failed attempt (§5.10), so a relay
// that fails every link at once (a message over the limit, a crash on hello) is retried
// ever more slowly instead of at the first delay each time.
//
// Sequence numbers (§5.10): a relay forwards one producer's frames in order and drops the
// rest (§5.7 rule 2), so on one link a frame numbered at or behind the newest is a new
// producer (a restart, a takeover, a producer on another relay of a cluster): it is
// delivered at once with `reset: true` and the merged vector starts afresh from it.

import { N, BY_ID, mpEncode, encodeMessage, decodeMessage } from './codec.mjs';

export const SUBPROTOCOL = 'posewire.v1';
/** Close codes a reconnect cannot fix (spec §5.10: decode.version, decode.registry, decode.auth). */
export const FINAL_CLOSE = new Set([4010, 4011, 4012]);

const U32 = 2 ** 32;
/** A link must last this long after its welcome for the backoff to start again (§5.10). */
export const STABLE_MS = 3000;
/** The first and the longest reconnect delay of the Subscriber. */
export const BACKOFF_MS = [250, 4000];

/**
 * What a frame numbered `seq` is on a link in producer order (spec §5.10), after the newest
 * `last` (null: the link's first frame): `{kind: 'first' | 'in_order' | 'gap' | 'reset',
 * missing}`. A step back or a repeated number is a new producer ('reset'), never a reorder.
 */
export function sequenceStep(last, seq) {
  if (last === null) return { kind: 'first', missing: 0 };
  const ahead = ((seq - last) % U32 + U32) % U32;
  if (ahead === 1) return { kind: 'in_order', missing: 0 };
  if (ahead > 1 && ahead < U32 / 2) return { kind: 'gap', missing: ahead - 1 };
  return { kind: 'reset', missing: 0 };
}

export class Subscriber {
  /**
   * @param {string} url relay websocket URL
   * @param {string} stream stream name
   * @param {object} opts {registryVersion, registryHash (16 hex digits), token, client,
   *   onFrame(frame), onCalibration(cal), onConditions(c), onStatus(text), onError(err),
   *   onWelcome(), onClose(code, reason) (the relay's close reason, spec §5.8)}
   */
  constructor(url, stream, opts = {}) {
    this.url = url;
    this.stream = stream;
    this.opts = opts;
    this.values = new Float64Array(N).fill(NaN);
    this.conditions = {};
    this.calibration = null;
    this.maxSize = 4096;
    this.closed = false;
    this.delay = BACKOFF_MS[0];
    this.welcomedAt = null; // when the current link was welcomed (performance.now())
    this.reconnects = 0;
    this.ws = null;
    this.lastSeq = null; // the newest sequence number on the current link (§5.10)
    this.resets = 0; // new producers seen (sequence resets)
  }

  start() {
    this.closed = false;
    this._open();
    return this;
  }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close(1000);
  }

  _status(text) {
    this.opts.onStatus?.(text);
  }

  _open() {
    const ws = new WebSocket(this.url, SUBPROTOCOL);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      const hello = encodeMessage({
        type: 'hello', role: 'consumer', stream: this.stream, client: this.opts.client ?? 'posewire-js',
        token: this.opts.token ?? null, registry_version: this.opts.registryVersion,
        registry_hash: this.opts.registryHash,
      });
      ws.send(mpEncode(hello));
      this._status('hello sent');
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === 'string') return;
      const bytes = new Uint8Array(ev.data);
      let msg;
      try {
        msg = decodeMessage(bytes, this.maxSize);
      } catch (e) {
        this.opts.onError?.(e);
        return;
      }
      this._dispatch(msg, bytes.length);
    };
    ws.onclose = (ev) => {
      if (this.closed) return;
      this.opts.onClose?.(ev.code, ev.reason);
      if (FINAL_CLOSE.has(ev.code)) { // spec §5.10: a final error is not retried
        this._status(`refused (${ev.code}${ev.reason ? ' ' + ev.reason : ''}); not retrying`);
        return;
      }
      // §5.10: only a link that lasted STABLE_MS after its welcome starts the backoff again
      const lived = this.welcomedAt === null ? 0 : performance.now() - this.welcomedAt;
      this.welcomedAt = null;
      if (lived >= STABLE_MS) this.delay = BACKOFF_MS[0];
      const delay = this.delay;
      this._status(`disconnected (${ev.code}${ev.reason ? ' ' + ev.reason : ''}); retrying in ${delay} ms`);
      this.reconnects += 1;
      setTimeout(() => { if (!this.closed) this._open(); }, delay);
      this.delay = Math.min(this.delay * 2, BACKOFF_MS[1]);
    };
  }

  _dispatch(msg, nbytes) {
    switch (msg.type) {
      case 'welcome':
        this.maxSize = msg.max_message_bytes;
        this.lastSeq = null; // a new link: its first frame is the baseline
        this.welcomedAt = performance.now(); // the backoff starts again once it lasts
        this._status(`subscribed to ${this.stream}`);
        this.opts.onWelcome?.();
        break;
      case 'cal':
        this.calibration = msg;
        this.opts.onCalibration?.(msg);
        break;
      case 'cond':
        this.conditions = msg.conditions;
        this.opts.onConditions?.(msg.conditions);
        break;
      case 'f': {
        const seq = Number(msg.seq);
        const step = sequenceStep(this.lastSeq, seq);
        this.lastSeq = seq;
        if (step.kind === 'reset') {
          // a new producer: its state is not mixed with its predecessor's (§5.7 rule 3)
          this.resets += 1;
          this.values.fill(NaN);
        }
        for (const [id, n] of Object.entries(msg.values)) this.values[BY_ID.get(id).index] = n;
        if (msg.conditions) this.conditions = msg.conditions;
        this.opts.onFrame?.({
          seq, timestampUs: Number(msg.timestamp_us), values: this.values.slice(),
          present: Object.keys(msg.values).length, conditions: this.conditions, bytes: nbytes,
          reset: step.kind === 'reset', missing: step.missing,
        });
        break;
      }
      case 'err':
        this._status(`relay error ${msg.code}: ${msg.message}`);
        this.opts.onError?.(msg);
        break;
      default:
        break;
    }
  }
}

/**
 * posewire publisher for browsers: connects as a producer (spec §5.3 hello, role producer,
 * with the relay's token when it needs one), sends the calibration (§5.6) before the first
 * frame and again whenever it changes, conditions when they change (§5.5), and frames of
 * the dims present (§5.4: the mask leaves out what is not sent). Counts the bytes sent.
 */
export class Publisher {
  /** @param {object} opts {registryVersion, registryHash, token, client, onStatus(text), onError(err),
   * onWelcome(), onClose(code, reason) (the relay's close reason, spec §5.8)} */
  constructor(url, stream, opts = {}) {
    this.url = url;
    this.stream = stream;
    this.opts = opts;
    this.ws = null;
    this.ready = false;
    this.seq = 0;
    this.bytes = 0;
    this.calibration = null;
    this.lastConditions = null;
    this.closed = false;
  }

  /** Resolves once the relay has welcomed this producer (or after `ms`, false). A page that
   * is about to block its main thread (model warm-up) waits for it: the hello must leave
   * within the relay's hello deadline (spec §5.8). */
  whenReady(ms = 15000) {
    if (this.ready) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      (this.waiters ??= []).push(() => { clearTimeout(timer); resolve(true); });
    });
  }

  start() {
    const ws = new WebSocket(this.url, SUBPROTOCOL);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      this._send({
        type: 'hello', role: 'producer', stream: this.stream, client: this.opts.client ?? 'posewire-capture',
        token: this.opts.token ?? null, registry_version: this.opts.registryVersion,
        registry_hash: this.opts.registryHash,
      });
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === 'string') return;
      let msg;
      try {
        msg = decodeMessage(new Uint8Array(ev.data), 1 << 20);
      } catch (e) {
        this.opts.onError?.(e);
        return;
      }
      if (msg.type === 'welcome') {
        this.ready = true;
        this.lastConditions = null; // a new session: the relay learns the state afresh
        this.opts.onStatus?.(`publishing to ${this.stream}`);
        this.opts.onWelcome?.();
        if (this.calibration) this._send({ type: 'cal', ...this.calibration });
        for (const w of this.waiters?.splice(0) ?? []) w();
      } else if (msg.type === 'err') {
        this.opts.onStatus?.(`relay error ${msg.code}: ${msg.message}`);
        this.opts.onError?.(msg);
      }
    };
    ws.onerror = () => this.opts.onStatus?.(`cannot reach the relay at ${this.url}`);
    ws.onclose = (ev) => {
      this.ready = false;
      if (this.closed) return;
      this.opts.onClose?.(ev.code, ev.reason);
      if (FINAL_CLOSE.has(ev.code)) { // spec §5.10: a final error is not retried
        this.opts.onStatus?.(`relay refused (${ev.code}${ev.reason ? ' ' + ev.reason : ''}); not retrying`);
        return;
      }
      this.opts.onStatus?.(`relay closed (${ev.code}${ev.reason ? ' ' + ev.reason : ''}); retrying`);
      setTimeout(() => { if (!this.closed) this.start(); }, 1000); // frames meanwhile are dropped, never queued
    };
    return this;
  }

  close() {
    this.closed = true;
    this.ws?.close(1000);
  }

  _send(m) {
    const bytes = mpEncode(encodeMessage(m));
    this.ws.send(bytes);
    this.bytes += bytes.length;
  }

  /** The calibration {hand_length, torso_length, arm_length, shoulder_width} (spec §5.6). */
  sendCalibration(cal) {
    this.calibration = cal;
    if (this.ready) this._send({ type: 'cal', ...cal });
  }

  /** One frame: `vector` (NaN = not sent) and the tracking conditions {part: state} of the
   * parts not tracked; returns false while the relay has not welcomed us. */
  sendFrame(vector, tracking, timestampUs) {
    if (!this.ready || this.ws.readyState !== WebSocket.OPEN) return false;
    const values = {};
    for (let i = 0; i < N; i++) if (Number.isFinite(vector[i])) values[DIM_IDS[i]] = vector[i];
    const conditions = { tracking };
    const key = JSON.stringify(conditions);
    if (key !== this.lastConditions) { // §5.5: conditions only when they change
      this._send({ type: 'cond', timestamp_us: timestampUs, conditions });
      this.lastConditions = key;
    }
    this._send({ type: 'f', seq: this.seq, timestamp_us: timestampUs, values });
    this.seq = (this.seq + 1) >>> 0;
    return true;
  }
}
const DIM_IDS = [...BY_ID.values()].sort((a, b) => a.index - b.index).map((d) => d.id);
