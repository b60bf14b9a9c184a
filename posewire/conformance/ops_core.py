"""Conformance operations for spec §3.1–3.2 (vector layout, validation, mirroring)."""

from __future__ import annotations

from typing import Any

from codec import vector
from codec.registry import REGISTRY

__all__ = ["OPS"]


def _validate(inp: dict[str, Any]) -> Any:
    vec = vector.from_dict(inp["values"])
    out, report = vector.validate(vec, policy=inp.get("policy", "raise"))
    changed = {k: v for k, v in vector.to_dict(out).items() if k in inp["values"]}
    return {"values": changed, **report.dims()}


def _mirror(inp: dict[str, Any]) -> Any:
    out = vector.to_dict(vector.mirror(vector.from_dict(inp["values"])))
    return {"values": {k: out[k] for k in inp["expect_ids"]}}


def _registry(inp: dict[str, Any]) -> Any:
    dim = REGISTRY.by_id[inp["id"]]
    return {"index": dim.index, "default": dim.row.default, "polarity": dim.row.polarity,
            "max": dim.row.max}


OPS = {"vector.validate": _validate, "vector.mirror": _mirror, "registry.row": _registry}
