"""Conformance operations for spec §3.1–3.2 (vector layout, validation, mirroring)."""

from __future__ import annotations

from typing import Any

from posewire.codec import calibration, vector
from posewire.codec.conditions import conditions_from_obj, conditions_to_obj, mirror_conditions
from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY

__all__ = ["OPS"]


def _validate(inp: dict[str, Any]) -> Any:
    vec = vector.from_dict(inp["values"])
    out, report = vector.validate(vec, policy=inp.get("policy", "raise"))
    changed = {k: v for k, v in vector.to_dict(out).items() if k in inp["values"]}
    return {"values": changed, **report.dims()}


def _mirror(inp: dict[str, Any]) -> Any:
    out = vector.to_dict(vector.mirror(vector.from_dict(inp["values"])))
    for key in inp["expect_ids"]:
        if key not in out:
            raise UsageError("usage.unknown_id", f"no dimension {key!r}", path="expect_ids")
    return {"values": {k: out[k] for k in inp["expect_ids"]}}


def _registry(inp: dict[str, Any]) -> Any:
    dim = REGISTRY.by_id.get(inp["id"])
    if dim is None:
        raise UsageError("usage.unknown_id", f"no dimension {inp['id']!r}", path="id")
    return {"index": dim.index, "default": dim.row.default, "polarity": dim.row.polarity,
            "max": dim.row.max}


def _body_frame(inp: dict[str, Any]) -> Any:
    frame = calibration.body_frame(inp["shoulder_l"], inp["shoulder_r"], inp["hip_mid"])
    axes = frame.rotation.T.tolist()  # rows: X, Y, Z in world coordinates
    points = inp.get("points") or []
    body = calibration.to_body_frame(points, frame).tolist() if points else []
    return {"origin": frame.origin.tolist(), "x": axes[0], "y": axes[1], "z": axes[2],
            "points": body}


def _conditions_mirror(inp: dict[str, Any]) -> Any:
    conditions = conditions_from_obj(inp["conditions"], error_family="usage")
    return {"conditions": conditions_to_obj(mirror_conditions(conditions))}


OPS = {"vector.validate": _validate, "vector.mirror": _mirror, "registry.row": _registry,
       "frame.body": _body_frame, "conditions.mirror": _conditions_mirror}
