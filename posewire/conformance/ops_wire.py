"""Conformance operations for spec §5 (wire format).

* ``wire.encode``: ``{"message": <JSON message>}`` → ``{"hex": <canonical bytes>}``.
* ``wire.decode``: ``{"hex": ..., "max_size"?: int}`` → the message as JSON
  (:func:`posewire.codec.wire.message_to_json`: long field names, bytes as hex, frame values as
  ``{dim id: value}``).
* ``wire.quantize``: ``{"values": {dim id: n}}`` → ``{"q": {dim id: integer}}``.
"""

from __future__ import annotations

import re
from typing import Any

from posewire.codec import wire
from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import from_dict

__all__ = ["OPS"]


def _encode(inp: dict[str, Any]) -> Any:
    return {"hex": wire.encode(wire.message_from_json(inp["message"])).hex()}


_HEX_RE = re.compile(r"(?:[0-9a-f]{2})*")


def _decode(inp: dict[str, Any]) -> Any:
    # spec §6.5: byte strings are lowercase hex, two digits a byte (else usage.out_of_range)
    if not _HEX_RE.fullmatch(inp["hex"]):
        raise UsageError("usage.out_of_range", "hex must be lowercase hex digit pairs",
                         path="hex")
    data = bytes.fromhex(inp["hex"])
    max_size = int(inp.get("max_size", wire.DEFAULT_MAX_MESSAGE_BYTES))
    return wire.message_to_json(wire.decode(data, max_size=max_size))


def _quantize(inp: dict[str, Any]) -> Any:
    q = wire.quantize(from_dict(inp["values"]))
    return {"q": {k: int(q[REGISTRY.index(k)]) for k in inp["values"]}}


OPS = {"wire.encode": _encode, "wire.decode": _decode, "wire.quantize": _quantize}
