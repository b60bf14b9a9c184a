"""Conformance operations for spec §4.1 (arm, calibration), §4.2 (palm), §4.4–4.5 (Euler).

Inputs and results are plain JSON: vectors as lists, booleans for the reports,
``null`` for a missing calibration distance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posewire.codec import calibration, euler, quaternion
from posewire.codec.errors import UsageError

__all__ = ["OPS"]


def _list(values: Any) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=np.float64).reshape(-1)]


def _cal(inp: dict[str, Any]) -> calibration.Calibration:
    return calibration.Calibration(
        hand_length=inp.get("hand_length"), torso_length=inp.get("torso_length"),
        arm_length=inp.get("arm_length"), shoulder_width=inp.get("shoulder_width"))


def _clamp(inp: dict[str, Any]) -> float | None:
    value = inp.get("clamp", quaternion.PALM_CLAMP)
    return None if value is None else float(value)


def _palm_reconstruct(inp: dict[str, Any]) -> Any:
    q, changed = quaternion.reconstruct_w(inp["v"], clamp=_clamp(inp))
    return {"q": _list(q), "changed": bool(changed)}


def _palm_decode(inp: dict[str, Any]) -> Any:
    q, changed = quaternion.palm_decode(inp["v"], side=inp["side"], clamp=_clamp(inp))
    return {"q": _list(q), "changed": bool(changed)}


def _palm_encode(inp: dict[str, Any]) -> Any:
    v, clamped = quaternion.palm_encode(inp["q"], side=inp["side"], clamp=_clamp(inp))
    return {"v": _list(v), "clamped": bool(clamped)}


def _palm_directions(inp: dict[str, Any]) -> Any:
    d = quaternion.palm_directions(inp["q"], side=inp["side"])
    return {"fingers": _list(d.fingers), "palm_normal": _list(d.palm_normal),
            "thumb": _list(d.thumb)}


def _palm_from_directions(inp: dict[str, Any]) -> Any:
    q = quaternion.palm_from_directions(inp["fingers"], inp["palm_normal"], side=inp["side"])
    return {"q": _list(q)}


def _units(inp: dict[str, Any]) -> Any:
    u = calibration.units(_cal(inp))
    return {"L": _list(u.L), "fallback_axes": list(u.fallback_axes)}


def _measure(inp: dict[str, Any]) -> Any:
    cal = calibration.measure_calibration(inp["sites"])
    return {"hand_length": cal.hand_length, "torso_length": cal.torso_length,
            "arm_length": cal.arm_length, "shoulder_width": cal.shoulder_width}


def _side(inp: dict[str, Any]) -> None:
    # the side (an option) before the calibration's own checks, as the JS kit does
    if inp["side"] not in ("l", "r"):
        raise UsageError("usage.bad_option", "side must be 'l' or 'r'", path="side")


def _arm_to_physical(inp: dict[str, Any]) -> Any:
    _side(inp)
    u = calibration.units(_cal(inp["calibration"]))
    return {"p": _list(calibration.arm_to_physical(inp["n"], u, side=inp["side"]))}


def _arm_to_normalized(inp: dict[str, Any]) -> Any:
    _side(inp)
    u = calibration.units(_cal(inp["calibration"]))
    return {"n": _list(calibration.arm_to_normalized(inp["p"], u, side=inp["side"]))}


def _euler_to_quat(inp: dict[str, Any]) -> Any:
    return {"q": _list(euler.euler_to_quat(inp["yaw"], inp["pitch"], inp["roll"]))}


def _euler_from_quat(inp: dict[str, Any]) -> Any:
    yaw, pitch, roll = euler.quat_to_euler(inp["q"])
    return {"yaw": float(yaw), "pitch": float(pitch), "roll": float(roll)}


def _head_to_quat(inp: dict[str, Any]) -> Any:
    return {"q": _list(euler.head_to_quat(inp["n"]))}


def _head_from_quat(inp: dict[str, Any]) -> Any:
    n, clamped = euler.quat_to_head(inp["q"])
    return {"n": _list(n), "clamped": bool(clamped)}


def _body_to_quat(inp: dict[str, Any]) -> Any:
    return {"q": _list(euler.body_to_quat(inp["n"]))}


def _spine_rotations(inp: dict[str, Any]) -> Any:
    rot = euler.spine_rotations(inp["n"], joints=inp.get("joints"))
    return {"rotations": {j: _list(q) for j, q in rot.items()}}


OPS = {
    "palm.reconstruct": _palm_reconstruct,
    "palm.decode": _palm_decode,
    "palm.encode": _palm_encode,
    "palm.directions": _palm_directions,
    "palm.from_directions": _palm_from_directions,
    "calibration.units": _units,
    "calibration.measure": _measure,
    "arm.to_physical": _arm_to_physical,
    "arm.to_normalized": _arm_to_normalized,
    "euler.to_quat": _euler_to_quat,
    "euler.from_quat": _euler_from_quat,
    "head.to_quat": _head_to_quat,
    "head.from_quat": _head_from_quat,
    "body.to_quat": _body_to_quat,
    "spine.rotations": _spine_rotations,
}
