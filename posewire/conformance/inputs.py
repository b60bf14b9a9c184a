"""One rule for every op's input (spec §6.5): the key table of each op and its check.

Before an op runs, its ``input`` object is checked against the op's row here, so every
op treats a missing key, an unknown key, a value of the wrong JSON type and a boolean in
a number's place the same way: ``usage.bad_option`` with the key as path. Numbers are
finite float64 values (an integer too large for float64 is ``usage.not_finite``); a
number outside the row's stated range is ``usage.out_of_range``. What is left to the op
itself is stated per op in §6.5 (array lengths ``usage.shape``, unknown ids
``usage.unknown_id``, options ``usage.bad_option``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from posewire.codec.errors import UsageError

__all__ = ["CALIBRATION_KEYS", "INPUTS", "Key", "check_input", "check_integers", "check_keys",
           "check_result"]


@dataclass(frozen=True)
class Key:
    """One input key: its JSON ``kind``, whether it may be left out, and for numbers an
    inclusive range.

    Kinds: ``number``, ``integer``, ``string``, ``boolean``, ``object``, ``numbers`` (an array of
    numbers), ``points`` (an array of arrays of numbers), ``strings``, ``values`` (an
    object of numbers), ``vectors`` (an object of arrays of numbers), ``shares`` (an
    object of numbers or an array of numbers), ``any``. A ``nullable`` key may be ``null``.
    """

    kind: str
    optional: bool = False
    nullable: bool = False
    lo: float | None = None
    hi: float | None = None


def _bad(message: str, path: str) -> UsageError:
    return UsageError("usage.bad_option", message, path=path)


def _number(value: object, path: str, key: Key | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad("expected a number (a boolean is not a number)", path)
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise UsageError("usage.not_finite", "a number must be finite", path=path)
    if key is not None and ((key.lo is not None and x < key.lo)
                            or (key.hi is not None and x > key.hi)):
        raise UsageError("usage.out_of_range", f"expected a number in [{key.lo}, {key.hi}]",
                         path=path)


def check_integers(value: object, path: str = "") -> None:
    """Spec §6.5 rule 2 at any depth of an op's input: an integer that float64 cannot hold
    (beyond ±1.8e308) is ``usage.not_finite``, whatever key or array it sits in."""
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        # 1e400 spelled as a float reads as inf: the same number as 10**400 in digits
        raise UsageError("usage.not_finite", "a number too large for float64", path=path)
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise UsageError("usage.not_finite", "an integer too large for float64", path=path) from None
    elif isinstance(value, dict):
        for k, x in value.items():
            check_integers(x, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, x in enumerate(value):
            check_integers(x, f"{path}[{i}]")


def check_result(value: object, path: str = "$") -> None:
    """Spec §6.5 rule 5: an op never answers a number that is not finite. Where finite
    inputs take a step this spec does not scale (§1.5 scales lengths only) beyond binary64
    — ``arm.to_physical`` of ``n = 1e308`` on a 10 m unit, ``frame.body`` of sites 2e308
    apart — the op fails with ``usage.out_of_range`` instead."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError("usage.out_of_range", "the result is beyond binary64", path=path)
    elif isinstance(value, dict):
        for k, x in value.items():
            check_result(x, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, x in enumerate(value):
            check_result(x, f"{path}[{i}]")


def _numbers(value: object, path: str) -> None:
    if not isinstance(value, list):
        raise _bad("expected an array of numbers", path)
    for i, x in enumerate(value):
        _number(x, f"{path}[{i}]")


def _check(value: object, key: Key, path: str) -> None:
    if value is None:
        if key.nullable:
            return
        raise _bad("null is not allowed here", path)
    kind = key.kind
    if kind == "any":
        return
    if kind == "number":
        _number(value, path, key)
    elif kind == "integer":
        # spec §6.5 rule 1: a number's JSON spelling never matters: 4096.0 is an integer
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad("expected an integer", path)
        _number(value, path)  # rule 2 before the fraction: 10**400 is usage.not_finite
        if not isinstance(value, int):
            raise _bad("expected an integer", path)
        if (key.lo is not None and value < key.lo) or (key.hi is not None and value > key.hi):
            raise UsageError("usage.out_of_range",
                             f"expected an integer in [{key.lo}, {key.hi}]", path=path)
    elif kind == "string":
        if not isinstance(value, str):
            raise _bad("expected a string", path)
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise _bad("expected a boolean", path)
    elif kind == "object":
        if not isinstance(value, dict):
            raise _bad("expected an object", path)
    elif kind == "numbers":
        _numbers(value, path)
    elif kind == "points":
        if not isinstance(value, list):
            raise _bad("expected an array of points", path)
        for i, p in enumerate(value):
            _numbers(p, f"{path}[{i}]")
    elif kind == "strings":
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise _bad("expected an array of strings", path)
    elif kind in ("values", "vectors"):
        if not isinstance(value, dict):
            raise _bad("expected an object", path)
        for k, x in value.items():
            (_number if kind == "values" else _numbers)(x, f"{path}.{k}")
    elif kind == "shares":
        if isinstance(value, dict):
            for k, x in value.items():
                _number(x, f"{path}.{k}")
        else:
            _numbers(value, path)
    else:  # pragma: no cover - a table error, not an input error
        raise AssertionError(kind)


_V = Key("values")
_SIDE = Key("string")
_POLICY = Key("string", optional=True)
_DIST = Key("number", optional=True, nullable=True)
_CAL = Key("object")

#: op name -> {key: Key}: the input keys of every op of spec §6.5.
INPUTS: dict[str, dict[str, Key]] = {
    "registry.row": {"id": Key("string")},
    "vector.validate": {"values": _V, "policy": _POLICY},
    "vector.mirror": {"values": _V, "expect_ids": Key("strings")},
    "frame.body": {"shoulder_l": Key("numbers"), "shoulder_r": Key("numbers"),
                   "hip_mid": Key("numbers"), "points": Key("points", optional=True)},
    "conditions.mirror": {"conditions": Key("object")},
    "palm.reconstruct": {"v": Key("numbers"),
                         "clamp": Key("number", optional=True, nullable=True, lo=0.0, hi=1.0)},
    "palm.decode": {"v": Key("numbers"), "side": _SIDE},
    "palm.encode": {"q": Key("numbers"), "side": _SIDE},
    "palm.directions": {"q": Key("numbers"), "side": _SIDE},
    "palm.from_directions": {"fingers": Key("numbers"), "palm_normal": Key("numbers"),
                             "side": _SIDE},
    "calibration.units": {"hand_length": _DIST, "torso_length": _DIST, "arm_length": _DIST,
                          "shoulder_width": _DIST},
    "calibration.measure": {"sites": Key("vectors")},
    "arm.to_physical": {"n": Key("numbers"), "side": _SIDE, "calibration": _CAL},
    "arm.to_normalized": {"p": Key("numbers"), "side": _SIDE, "calibration": _CAL},
    "euler.to_quat": {"yaw": Key("number"), "pitch": Key("number"), "roll": Key("number")},
    "euler.from_quat": {"q": Key("numbers")},
    "head.to_quat": {"n": Key("numbers")},
    "head.from_quat": {"q": Key("numbers")},
    "body.to_quat": {"n": Key("numbers")},
    "spine.rotations": {"n": Key("numbers"), "joints": Key("strings", optional=True)},
    "morph.dims_to_arkit": {"values": _V, "policy": _POLICY},
    "morph.arkit_to_dims": {"weights": Key("values"), "policy": _POLICY,
                            "into": Key("values", optional=True)},
    "mouthing.delta": {"authored": Key("number", lo=-1.0, hi=1.0),
                       "baseline": Key("number", lo=-1.0, hi=1.0)},
    "mouthing.apply": {"values": _V, "shares": Key("shares")},
    "mouthing.normalize": {"shares": Key("shares")},
    "affect.apply": {"values": _V, "label": Key("string"),
                     "intensity": Key("number", lo=0.0, hi=1.0), "mode": Key("string")},
    "wire.quantize": {"values": _V},
    "wire.encode": {"message": Key("object")},
    "wire.decode": {"hex": Key("string"), "max_size": Key("integer", optional=True, lo=1)},
    # spec §8.9: each record is checked by the op
    "recording.encode": {"records": Key("any"), "registry_hash": Key("string", optional=True),
                         "close": Key("boolean", optional=True)},
    "recording.decode": {"hex": Key("string"), "strict": Key("boolean", optional=True)},
    # spec §6.10: each frame object is checked by the op (points may be null: missing)
    "encoder.landmarks": {"frames": Key("any"), "calibration": Key("object", optional=True, nullable=True),
                          "mirrored": Key("string", optional=True),
                          "visibility_threshold": Key("number", optional=True, lo=0.0, hi=1.0)},
}

#: The calibration object of ``arm.*`` (the four ``calibration.units`` keys).
CALIBRATION_KEYS: dict[str, Key] = dict(INPUTS["calibration.units"])


def check_keys(inp: object, table: Mapping[str, Key], prefix: str = "") -> None:
    """Check one input object against ``table`` (spec §6.5): the object itself, every
    required key present, no unknown key, and each value's JSON type and range."""
    where = prefix or "$"
    if not isinstance(inp, dict):
        raise _bad("the input must be a JSON object", where)
    for name in inp:
        if name not in table:
            raise _bad(f"unknown key {name!r}", f"{prefix}{name}")
    for name, key in table.items():
        if name not in inp:
            if key.optional:
                continue
            raise _bad(f"{name!r} is required", f"{prefix}{name}")
        _check(inp[name], key, f"{prefix}{name}")


def check_input(op: str, inp: object) -> None:
    """Raise the §6.5 ``usage.*`` error for a malformed input of ``op`` (known ops only)."""
    table = INPUTS.get(op)
    if table is None:
        return
    check_keys(inp, table)
    if op.startswith("arm.") and isinstance(inp, dict):
        check_keys(inp["calibration"], CALIBRATION_KEYS, "calibration.")
    if op == "encoder.landmarks" and isinstance(inp, dict) and inp.get("calibration") is not None:
        check_keys(inp["calibration"], CALIBRATION_KEYS, "calibration.")
