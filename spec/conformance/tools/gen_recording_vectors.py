"""Vectors for §8, the recording container: encode -> bytes, bytes -> messages, cut and
corrupted files -> stable codes, a cut file read to its last whole record.

Expected bytes are built here from the byte layout of §8.2–8.5 with ``struct``, ``zlib``
and plain ``msgpack`` (never with posewire's codec); expected results and codes are
written out by hand from the spec text.

Run: python spec/conformance/tools/gen_recording_vectors.py  (rewrites recording.json)
"""

import json
import re
import struct
import zlib
from pathlib import Path

import msgpack

OUT = Path(__file__).resolve().parent.parent
MAGIC = b"\x89PWR\r\n\x1a\n"


def crc(b):
    return struct.pack(">I", zlib.crc32(b) & 0xFFFFFFFF)


def header(h, version=1, flags=0):
    head = MAGIC + struct.pack(">HH", version, flags) + h
    return head + crc(head)


def record(kind, t_us, payload):
    head = struct.pack(">IBQ", len(payload), kind, t_us) + payload
    return head + crc(head)


def pk(obj):
    return msgpack.packb(obj, use_bin_type=True)


def index_payload(records, frames, t_first, t_last, entries):
    out = struct.pack(">IIQQI", records, frames, t_first, t_last, len(entries))
    for e in entries:
        out += struct.pack(">IQQQQ", *e)
    return out


def trailer(offset):
    t = b"PWRI" + struct.pack(">Q", offset)
    return t + crc(t)


def registry_hash():
    # the reference registry's sha256, as spec/04-registry-tables.md prints it (§4.9)
    text = (OUT.parent / "04-registry-tables.md").read_text(encoding="utf-8")
    return bytes.fromhex(re.search(r"\b([0-9a-f]{64})\b", text).group(1))


H = registry_hash()
H8 = H[:8]


def hello(stream="demo", **over):
    msg = {"t": "hello", "pv": 1, "ro": "producer", "s": stream, "rv": "1.0.0", "rh": H8, "cn": "kit"}
    msg.update(over)
    return msg


J_HELLO = {"type": "hello", "role": "producer", "stream": "demo", "client": "kit", "registry_version": "1.0.0",
           "registry_hash": H8.hex()}
D_HELLO = {"type": "hello", "protocol": 1, "role": "producer", "stream": "demo", "client": "kit", "token": None,
           "registry_version": "1.0.0", "registry_hash": H8.hex()}
CAL = {"t": "cal", "hl": 0.19, "tl": 0.52, "al": 0.6, "sw": 0.36}
J_CAL = {"type": "cal", "hand_length": 0.19, "torso_length": 0.52, "arm_length": 0.6, "shoulder_width": 0.36}
COND = {"t": "cond", "ts": 0, "c": {"tracking": {"hand_l": "lost"}}}
J_COND = {"type": "cond", "timestamp_us": 0, "conditions": {"tracking": {"hand_l": "lost"}}}
# h_yaw (index 56, 16 bit) = 0.5 -> q 16384 (spec §5.4 worked example)
MASK = bytes(7) + b"\x01"


def frame(seq, ts, c=None):
    msg = {"t": "f", "s": seq, "ts": ts, "m": MASK, "v": b"\x40\x00"}
    if c is not None:
        msg["c"] = c
    return msg


def j_frame(seq, ts, c=None, decoded=False):
    out = {"type": "f", "seq": seq, "timestamp_us": ts, "values": {"h_yaw": 16384 / 32767 if decoded else 0.5}}
    if c is not None:
        out["conditions"] = c
    if decoded:
        out["unknown_dims"] = 0
    return out


# the small recording: hello, cal, cond, four frames (the third carries c; the fourth is
# 1 s after the first: a second seek point)
TIMES = [0, 0, 0, 0, 40_000, 80_000, 1_000_000]
C3 = {"tracking": {"hand_l": "lost", "hand_r": "lost"}}
WIRE = [hello(), CAL, COND, frame(0, 0), frame(1, 40_000), frame(2, 80_000, C3), frame(3, 1_000_000)]
JSON_IN = [J_HELLO, J_CAL, J_COND, j_frame(0, 0), j_frame(1, 40_000), j_frame(2, 80_000, C3),
           j_frame(3, 1_000_000)]
JSON_OUT = [D_HELLO, J_CAL, J_COND, j_frame(0, 0, decoded=True), j_frame(1, 40_000, decoded=True),
            j_frame(2, 80_000, C3, decoded=True), j_frame(3, 1_000_000, decoded=True)]


def build(wire, times, *, close=True, h=H):
    data = header(h)
    offsets = []
    for msg, t in zip(wire, times, strict=True):
        offsets.append(len(data))
        data += record(1, t, pk(msg))
    if not close:
        return data, offsets, None
    # spec §8.5: the index the records give
    entries, frames, cal, cond, last = [], 0, 0, 0, None
    for off, msg, t in zip(offsets, wire, times, strict=True):
        if msg["t"] == "cal":
            cal = off
        elif msg["t"] == "cond":
            cond = off
        elif msg["t"] == "f":
            if "c" in msg:
                cond = off
            if last is None or t - last >= 1_000_000:
                entries.append((frames, t, off, cal, cond))
                last = t
            frames += 1
    idx_at = len(data)
    data += record(2, times[-1], index_payload(len(wire), frames, times[0], times[-1], entries))
    data += trailer(idx_at)
    return data, offsets, (idx_at, entries, frames)


def decoded(offsets, upto=None, *, out=JSON_OUT, times=TIMES):
    n = len(offsets) if upto is None else upto
    return [{"offset": offsets[i], "t_us": times[i], "message": out[i]} for i in range(n)]


def index_json(entries, frames, n, t_first, t_last):
    return {"records": n, "frames": frames, "t_first": t_first, "t_last": t_last,
            "entries": [{"frame": f, "t_us": t, "offset": o, "calibration": c, "conditions": d}
                        for f, t, o, c, d in entries]}


cases = []


def case(id_, op, rule, inp, expect=None, error=None):
    c = {"id": id_, "op": op, "rule": rule, "input": inp}
    if error:
        c["expect_error"] = error
    else:
        c["expect"] = expect
        c["tolerance"] = 0
    cases.append(c)


def result(data, offsets, upto, idx, error, end):
    return {"version": 1, "flags": 0, "registry_hash": H.hex(), "records": decoded(offsets, upto),
            "index": idx, "error": error, "end": end}


FULL, OFFS, (IDX_AT, ENTRIES, NFRAMES) = build(WIRE, TIMES)
IDX = index_json(ENTRIES, NFRAMES, len(WIRE), TIMES[0], TIMES[-1])
R_ENC = "§8.2–8.5 a writer's bytes: header, one record per message (the canonical wire bytes), the index, the trailer"
case("encode-small", "recording.encode", R_ENC,
     {"records": [{"t_us": t, "message": m} for t, m in zip(TIMES, JSON_IN, strict=True)], "registry_hash": H.hex()},
     {"hex": FULL.hex()})
ONE, ONE_OFFS, _ = build([hello()], [5])
case("encode-hello-only", "recording.encode", R_ENC + "; no frame: an index without entries",
     {"records": [{"t_us": 5, "message": J_HELLO}], "registry_hash": H.hex()}, {"hex": ONE.hex()})
OPEN, _, _ = build(WIRE[:4], TIMES[:4], close=False)
case("encode-open", "recording.encode", "§8.7 a writer that has not closed has written no index (close: false)",
     {"records": [{"t_us": t, "message": m} for t, m in zip(TIMES[:4], JSON_IN[:4], strict=True)], "close": False,
      "registry_hash": H.hex()}, {"hex": OPEN.hex()})

R_W = "§8.7 a writer refuses what a recording cannot hold"
case("encode-first-not-hello", "recording.encode", R_W + ": the first record is the producer's hello",
     {"records": [{"t_us": 0, "message": J_CAL}]}, error="usage.bad_option")
case("encode-hello-consumer", "recording.encode", R_W + ": the first record is the producer's hello",
     {"records": [{"t_us": 0, "message": {**J_HELLO, "role": "consumer"}}]}, error="usage.bad_option")
case("encode-token", "recording.encode", R_W + ": never an auth token",
     {"records": [{"t_us": 0, "message": {**J_HELLO, "token": "s3cret"}}]}, error="usage.bad_option")
case("encode-welcome", "recording.encode", R_W + ": after the hello only cal, cond and f",
     {"records": [{"t_us": 0, "message": J_HELLO}, {"t_us": 0, "message": {"type": "welcome", "session": "x"}}]},
     error="usage.bad_option")
case("encode-time-backwards", "recording.encode", R_W + ": t_us never decreases",
     {"records": [{"t_us": 10, "message": J_HELLO}, {"t_us": 9, "message": J_CAL}]}, error="usage.out_of_range")
case("encode-registry-hash-short", "recording.encode", "§8.9 registry_hash is 64 lowercase hex digits (usage.out_of_range)",
     {"records": [{"t_us": 5, "message": J_HELLO}], "registry_hash": H8.hex()}, error="usage.out_of_range")
case("encode-no-records", "recording.encode", R_W + ": at least the hello",
     {"records": []}, error="usage.bad_option")

R_DEC = "§8.6 a reader gives every record's message (the JSON form of §6.5), the index, no error"
case("decode-small", "recording.decode", R_DEC, {"hex": FULL.hex()},
     result(FULL, OFFS, None, IDX, None, len(FULL)))
case("decode-hello-only", "recording.decode", R_DEC, {"hex": ONE.hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(),
      "records": [{"offset": 48, "t_us": 5, "message": D_HELLO}],
      "index": index_json([], 0, 1, 5, 5), "error": None, "end": len(ONE)})
case("decode-unknown-kind-skipped", "recording.decode", "§8.3 a record of an unknown kind is skipped",
     {"hex": (header(H) + record(1, 0, pk(hello())) + record(9, 0, b"note")).hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(),
      "records": [{"offset": 48, "t_us": 0, "message": D_HELLO}], "index": None,
      "error": "recording.truncated", "end": 48 + 17 + len(pk(hello())) + 17 + 4})

R_CUT = ("§8.6 a file cut mid-write is read to its last whole record: error recording.truncated, "
         "the records before the cut")
END = {i: OFFS[i] for i in range(len(OFFS))}
END[len(OFFS)] = IDX_AT
for name, cut, upto in (("after-header", 48, 0), ("inside-record-0", OFFS[0] + 5, 0),
                        ("inside-record-4", OFFS[4] + 20, 4), ("before-index", IDX_AT, len(OFFS)),
                        ("inside-index", IDX_AT + 30, len(OFFS))):
    case(f"decode-cut-{name}", "recording.decode", R_CUT, {"hex": FULL[:cut].hex()},
         result(FULL, OFFS, upto, None, "recording.truncated", END[upto]))
TR = len(FULL) - 16
case("decode-cut-inside-trailer", "recording.decode", R_CUT + " (the index read, the trailer not whole)",
     {"hex": FULL[:TR + 7].hex()}, result(FULL, OFFS, None, IDX, "recording.truncated", TR))
case("decode-cut-inside-header", "recording.decode", "§8.6 a file that ends inside its header: recording.truncated",
     {"hex": FULL[:30].hex()}, error="recording.truncated")
case("decode-cut-strict", "recording.decode", "§8.6 a strict reader raises the fault that ended reading",
     {"hex": FULL[:OFFS[4] + 20].hex(), "strict": True}, error="recording.truncated")
case("decode-empty", "recording.decode", "§8.6 no bytes: recording.truncated", {"hex": ""},
     error="recording.truncated")

R_COR = "§8.6 a corrupt record ends reading there: its code, the records before it"


def flip(data, at, bit=0x01):
    b = bytearray(data)
    b[at] ^= bit
    return bytes(b)


case("decode-corrupt-payload", "recording.decode", R_COR + " (CRC32 of a record)",
     {"hex": flip(FULL, OFFS[5] + 20).hex()}, result(FULL, OFFS, 5, None, "recording.corrupt", OFFS[5]))
case("decode-corrupt-crc", "recording.decode", R_COR + " (CRC32 of a record)",
     {"hex": flip(FULL, OFFS[2] - 1).hex()}, result(FULL, OFFS, 1, None, "recording.corrupt", OFFS[1]))
case("decode-corrupt-length", "recording.decode", R_COR + " (a length over 2^20)",
     {"hex": (FULL[:OFFS[3]] + b"\x00\x10\x00\x01" + FULL[OFFS[3] + 4:]).hex()},
     result(FULL, OFFS, 3, None, "recording.corrupt", OFFS[3]))
case("decode-corrupt-after-trailer", "recording.decode", "§8.5 nothing follows the trailer (recording.corrupt)",
     {"hex": (FULL + b"\x00").hex()}, result(FULL, OFFS, None, IDX, "recording.corrupt", len(FULL)))
BAD_TR = FULL[:TR] + trailer(IDX_AT - 1)
case("decode-trailer-offset", "recording.decode", "§8.5 the trailer names the index record's offset (recording.index)",
     {"hex": BAD_TR.hex()}, result(FULL, OFFS, None, IDX, "recording.index", TR))
wrong = list(ENTRIES)
wrong[1] = (wrong[1][0], wrong[1][1], wrong[1][2], 0, wrong[1][4])
BAD_IDX = FULL[:IDX_AT] + record(2, TIMES[-1], index_payload(len(WIRE), NFRAMES, TIMES[0], TIMES[-1], wrong)) \
    + trailer(IDX_AT)
case("decode-index-mismatch", "recording.decode", "§8.5 the index is exactly the one the records give (recording.index)",
     {"hex": BAD_IDX.hex()}, result(FULL, OFFS, None, None, "recording.index", IDX_AT))

R_HEAD = "§8.2 header checks in order: length, magic, CRC32, version"
case("decode-magic", "recording.decode", R_HEAD, {"hex": flip(FULL, 1).hex()}, error="recording.not_recording")
case("decode-magic-crlf", "recording.decode", R_HEAD + " (line ends rewritten by a text transfer)",
     {"hex": (FULL[:4] + b"\n" + FULL[6:]).hex()}, error="recording.not_recording")
case("decode-json-lines", "recording.decode", R_HEAD + " (a JSON-lines recording is not a container)",
     {"hex": b'{"format":"posewire-recording","version":2}\n'.hex()}, error="recording.not_recording")
case("decode-header-crc", "recording.decode", R_HEAD, {"hex": flip(FULL, 20).hex()}, error="recording.corrupt")
V2 = header(H, version=2) + FULL[48:]
case("decode-version-2", "recording.decode", R_HEAD, {"hex": V2.hex()}, error="recording.version")
F1 = header(H, flags=1) + FULL[48:]
case("decode-flags-ignored", "recording.decode", "§8.2 a reader ignores flags it does not know",
     {"hex": F1.hex()}, {**result(FULL, OFFS, None, IDX, None, len(FULL)), "flags": 1})

R_ST = "§8.4 the records' order: a producer hello first, then cal, cond and f; t_us never decreasing"
NOHELLO = header(H) + record(1, 0, pk(CAL))
case("decode-first-not-hello", "recording.decode", R_ST + " (recording.structure)", {"hex": NOHELLO.hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(), "records": [], "index": None,
      "error": "recording.structure", "end": 48})
BACK = header(H) + record(1, 10, pk(hello())) + record(1, 9, pk(CAL))
case("decode-time-backwards", "recording.decode", R_ST + " (recording.structure)", {"hex": BACK.hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(),
      "records": [{"offset": 48, "t_us": 10, "message": D_HELLO}], "index": None,
      "error": "recording.structure", "end": 48 + 17 + len(pk(hello()))})
WEL = header(H) + record(1, 0, pk(hello())) + record(1, 0, pk({"t": "bye", "why": ""}))
case("decode-bye-inside", "recording.decode", R_ST + " (recording.structure)", {"hex": WEL.hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(),
      "records": [{"offset": 48, "t_us": 0, "message": D_HELLO}], "index": None,
      "error": "recording.structure", "end": 48 + 17 + len(pk(hello()))})
TOK = header(H) + record(1, 0, pk(hello(tk="s3cret")))
case("decode-token", "recording.decode", R_ST + "; a hello with a token is refused (recording.structure)",
     {"hex": TOK.hex()}, {"version": 1, "flags": 0, "registry_hash": H.hex(), "records": [], "index": None,
                          "error": "recording.structure", "end": 48})
BADMSG = header(H) + record(1, 0, pk(hello())) + record(1, 0, b"\xc1")
case("decode-message-malformed", "recording.decode",
     "§8.6 a record whose message does not decode ends reading with the code of §5.2",
     {"hex": BADMSG.hex()}, {"version": 1, "flags": 0, "registry_hash": H.hex(),
                             "records": [{"offset": 48, "t_us": 0, "message": D_HELLO}], "index": None,
                             "error": "decode.malformed", "end": 48 + 17 + len(pk(hello()))})

R_REG = "§8.4 the hello's registry: §5.9.5 against the reader's, and its rh the header's first 8 bytes (recording.registry)"
OTHER = bytes(range(32))
case("decode-registry-hello-header", "recording.decode", R_REG,
     {"hex": (header(OTHER) + record(1, 0, pk(hello()))).hex()},
     {"version": 1, "flags": 0, "registry_hash": OTHER.hex(), "records": [], "index": None,
      "error": "recording.registry", "end": 48})
case("decode-registry-major", "recording.decode", R_REG,
     {"hex": (header(H) + record(1, 0, pk(hello(rv="2.0.0")))).hex()},
     {"version": 1, "flags": 0, "registry_hash": H.hex(), "records": [], "index": None,
      "error": "recording.registry", "end": 48})
case("decode-registry-same-version-other-hash", "recording.decode", R_REG,
     {"hex": (header(OTHER) + record(1, 0, pk(hello(rh=OTHER[:8])))).hex()},
     {"version": 1, "flags": 0, "registry_hash": OTHER.hex(), "records": [], "index": None,
      "error": "recording.registry", "end": 48})
MINOR = hello(rv="1.1.0", rh=OTHER[:8])
case("decode-registry-newer-minor", "recording.decode", "§8.4 a newer MINOR registry is read (§5.9.5)",
     {"hex": (header(OTHER) + record(1, 0, pk(MINOR))).hex()},
     {"version": 1, "flags": 0, "registry_hash": OTHER.hex(),
      "records": [{"offset": 48, "t_us": 0,
                   "message": {**D_HELLO, "registry_version": "1.1.0", "registry_hash": OTHER[:8].hex()}}],
      "index": None, "error": "recording.truncated", "end": 48 + 17 + len(pk(MINOR))})

doc = {"section": "§8", "title": "Recordings: the container's bytes, messages, cut and corrupted files",
       "cases": cases}
(OUT / "recording.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
print(f"recording.json: {len(cases)} cases")
