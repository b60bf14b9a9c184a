// posewire subscriber for browsers (and any runtime with a WHATWG WebSocket): connects to
// a relay with the posewire.v1 subprotocol (spec §5.1), says hello as a consumer
// (§5.3), and turns the relay's messages into callbacks. Masked frames are merged into
// one current vector (a dim absent from a frame keeps its last value; NaN until first
// seen, which the decoder reads as the default, spec §3.5); conditions and calibration
// replace the current state (§5.5, §5.6). Reconnects with a capped backoff.

import { N, BY_ID, mpEncode, encodeMessage, decodeMessage } from './codec.mjs';

export const SUBPROTOCOL = 'posewire.v1';

export class Subscriber {
  /**
   * @param {string} url relay websocket URL
   * @param {string} stream stream name
   * @param {object} opts {registryVersion, registryHash (16 hex digits), token, client,
   *   onFrame(frame), onCalibration(cal), onConditions(c), onStatus(text), onError(err)}
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
    this.delay = 250;
    this.ws = null;
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
      this._status(`disconnected (${ev.code}${ev.reason ? ' ' + ev.reason : ''}); retrying`);
      setTimeout(() => this._open(), this.delay);
      this.delay = Math.min(this.delay * 2, 4000);
    };
  }

  _dispatch(msg, nbytes) {
    switch (msg.type) {
      case 'welcome':
        this.maxSize = msg.max_message_bytes;
        this.delay = 250;
        this._status(`subscribed to ${this.stream}`);
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
        for (const [id, n] of Object.entries(msg.values)) this.values[BY_ID.get(id).index] = n;
        if (msg.conditions) this.conditions = msg.conditions;
        this.opts.onFrame?.({
          seq: Number(msg.seq), timestampUs: Number(msg.timestamp_us), values: this.values.slice(),
          present: Object.keys(msg.values).length, conditions: this.conditions, bytes: nbytes,
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
