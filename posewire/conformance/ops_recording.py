"""Conformance operations for spec §8 (the recording container).

* ``recording.encode``: ``{"records": [{"t_us", "message": <JSON message>}], "registry_hash"?: hex,
  "close"?: bool}`` → ``{"hex": <the file's bytes>}``.
* ``recording.decode``: ``{"hex", "strict"?: bool}`` → ``{version, flags, registry_hash, records:
  [{offset, t_us, message}], index, error, end}`` (messages in the JSON form of §6.5).
"""

from __future__ import annotations

import re
from typing import Any

from posewire.codec import container, wire
from posewire.codec.errors import UsageError

__all__ = ["OPS"]

_HEX_RE = re.compile(r"(?:[0-9a-f]{2})*")
_U64 = 2**64


def _hex(text: str, path: str, *, length: int | None = None) -> bytes:
    # spec §6.5: byte strings are lowercase hex, two digits a byte (else usage.out_of_range)
    if not _HEX_RE.fullmatch(text) or (length is not None and len(text) != 2 * length):
        raise UsageError("usage.out_of_range", "expected lowercase hex digit pairs", path=path)
    return bytes.fromhex(text)


def _encode(inp: dict[str, Any]) -> Any:
    records = inp["records"]
    if not isinstance(records, list):
        raise UsageError("usage.bad_option", "records must be an array", path="records")
    h = inp.get("registry_hash")
    enc = container.RecordingEncoder(registry_hash=None if h is None else _hex(h, "registry_hash", length=32))
    parsed: list[tuple[int, wire.Message]] = []
    for i, rec in enumerate(records):  # spec §6.5: the shape of every record first
        where = f"records[{i}]"
        if not isinstance(rec, dict) or set(rec) != {"t_us", "message"}:
            raise UsageError("usage.bad_option", "a record is {t_us, message}", path=where)
        t_us = rec["t_us"]
        if isinstance(t_us, float) and t_us.is_integer():
            t_us = int(t_us)
        if isinstance(t_us, bool) or not isinstance(t_us, int):
            raise UsageError("usage.bad_option", "t_us must be an integer", path=f"{where}.t_us")
        if not 0 <= t_us < _U64:
            raise UsageError("usage.out_of_range", "t_us must be in [0, 2^64)", path=f"{where}.t_us")
        if not isinstance(rec["message"], dict):
            raise UsageError("usage.bad_option", "message must be an object", path=f"{where}.message")
        parsed.append((t_us, wire.message_from_json(rec["message"])))
    if not parsed:
        raise UsageError("usage.bad_option", "a recording holds at least its hello", path="records")
    data = enc.start() + b"".join(enc.message(t, m) for t, m in parsed)
    if inp.get("close", True):
        data += enc.finish()
    return {"hex": data.hex()}


def _decode(inp: dict[str, Any]) -> Any:
    got = container.read(_hex(inp["hex"], "hex"), strict=bool(inp.get("strict", False)))
    index = got.index
    return {
        "version": got.header.version, "flags": got.header.flags, "registry_hash": got.header.registry_hash.hex(),
        "records": [{"offset": r.offset, "t_us": r.t_us, "message": wire.message_to_json(r.message)}
                    for r in got.records],
        "index": None if index is None else {
            "records": index.records, "frames": index.frames, "t_first": index.t_first, "t_last": index.t_last,
            "entries": [{"frame": e.frame, "t_us": e.t_us, "offset": e.offset, "calibration": e.calibration,
                         "conditions": e.conditions} for e in index.entries]},
        "error": None if got.error is None else got.error.code,
        "end": got.end,
    }


OPS = {"recording.encode": _encode, "recording.decode": _decode}
