"""Hyper conditions: the discrete channels beside the vector (spec §3.4).

Four channels, all optional (registry :data:`~posewire.codec.registry.CONDITIONS`):

* ``mouthing`` (§3.4.1) — a viseme mix: 15 shares in :data:`~posewire.codec.registry.VISEMES`
  order, each in ``[0, 1]``, sum ``<= 1`` (tolerance ``1e-6``); ``None`` = inactive.
* ``tracking`` (§3.4.2) — ``{part: state}`` over ``TRACKING_PARTS`` x
  ``TRACKING_STATES``; an absent part is ``tracked``.
* ``contact`` (§3.4.3) — ``{hand_l | hand_r: site}`` over ``CONTACT_SITES``; an absent
  hand (or ``"none"``) touches nothing.
* ``affect`` (§3.4.4) — :class:`Affect` ``(label, intensity in [0, 1], mode add|blend)``.

The plain-object form (:func:`conditions_to_obj` / :func:`conditions_from_obj`) is the
JSON/msgpack form used on the wire (spec §5.5) and in conformance files: a map with the
channel ids as keys, channels that are inactive left out, map entries in registry order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from .errors import DecodeError, UsageError
from .ieee import ordered_sum1
from .registry import (
    AFFECT_LABELS,
    AFFECT_MODES,
    CONTACT_SITES,
    TRACKING_PARTS,
    TRACKING_STATES,
    VISEMES,
)

__all__ = [
    "CONTACT_HANDS",
    "MOUTHING_SUM_TOLERANCE",
    "Affect",
    "Conditions",
    "conditions_from_obj",
    "conditions_to_obj",
    "mirror_conditions",
]

#: Tolerance on the mouthing sum (spec §3.4.1): ``sum(s) <= 1 + 1e-6``.
MOUTHING_SUM_TOLERANCE = 1e-6
#: Keys of the contact channel (spec §3.4.3).
CONTACT_HANDS: tuple[str, ...] = ("hand_l", "hand_r")

ErrorFamily = Literal["usage", "decode"]

# decode code -> usage code, for errors raised with error_family="usage"
_USAGE_CODE = {
    "decode.type": "usage.bad_option",
    "decode.missing_field": "usage.bad_option",
    "decode.unknown_id": "usage.unknown_id",
    "decode.not_finite": "usage.not_finite",
    "decode.out_of_range": "usage.out_of_range",
}


@dataclass(frozen=True, slots=True)
class Affect:
    """The affect layer (spec §3.4.4): preset ``label``, ``intensity`` in ``[0, 1]``,
    ``mode`` ``"add"`` (``n' = n + i·A``) or ``"blend"`` (``n' = n + i·(A − n)``)."""

    label: str
    intensity: float
    mode: str = "blend"

    def __post_init__(self) -> None:
        _check_affect(self.label, self.intensity, self.mode, "usage", "affect")


def _sorted_map(values: Mapping[str, str], order: tuple[str, ...]) -> Mapping[str, str]:
    rank = {k: i for i, k in enumerate(order)}
    return MappingProxyType(dict(sorted(values.items(), key=lambda kv: rank.get(kv[0], -1))))


@dataclass(frozen=True, slots=True, eq=False)
class Conditions:
    """The full hyper-condition state (spec §3.4). Immutable; validated on construction
    (invalid values raise :class:`~posewire.codec.errors.UsageError`).

    ``mouthing``: 15 shares (``VISEMES`` order) or ``None``; ``tracking``: part → state;
    ``contact``: hand → site; ``affect``: :class:`Affect` or ``None``. Maps are stored
    read-only in registry order; an explicit ``"tracked"`` / ``"none"`` entry is kept as
    given (it means the same as an absent key, spec §3.4.2–3).
    """

    mouthing: tuple[float, ...] | None = None
    tracking: Mapping[str, str] = field(default_factory=dict)
    contact: Mapping[str, str] = field(default_factory=dict)
    affect: Affect | None = None

    def __post_init__(self) -> None:
        if self.mouthing is not None:
            mouthing = _check_mouthing(tuple(self.mouthing), "usage", "mouthing")
            object.__setattr__(self, "mouthing", mouthing)
        _check_enum_map(self.tracking, TRACKING_PARTS, TRACKING_STATES, "usage", "tracking")
        _check_enum_map(self.contact, CONTACT_HANDS, CONTACT_SITES, "usage", "contact")
        object.__setattr__(self, "tracking", _sorted_map(self.tracking, TRACKING_PARTS))
        object.__setattr__(self, "contact", _sorted_map(self.contact, CONTACT_HANDS))
        if self.affect is not None and not isinstance(self.affect, Affect):
            raise UsageError("usage.bad_option", "affect must be an Affect", path="affect")

    def _key(self) -> tuple[object, ...]:
        return (self.mouthing, tuple(self.tracking.items()), tuple(self.contact.items()),
                self.affect)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conditions):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def empty(self) -> bool:
        """True when no channel is set (nothing to send, spec §5.5)."""
        return (self.mouthing is None and not self.tracking and not self.contact
                and self.affect is None)

    def tracking_state(self, part: str) -> str:
        """State of ``part``; an absent part is ``"tracked"`` (spec §3.4.2)."""
        return self.tracking.get(part, "tracked")


def _fail(family: ErrorFamily, code: str, message: str, path: str) -> Exception:
    if family == "decode":
        return DecodeError(code, message, path=path)
    return UsageError(_USAGE_CODE[code], message, path=path)


def _number(value: object, family: ErrorFamily, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(family, "decode.type", "expected a number", path)
    try:
        x = float(value)
    except OverflowError:  # an integer beyond float64 (spec §6.5 rule 2)
        x = math.inf
    if not math.isfinite(x):
        raise _fail(family, "decode.not_finite", "value is not finite", path)
    return x


def _check_mouthing(shares: tuple[object, ...], family: ErrorFamily, path: str) -> tuple[float, ...]:
    # spec §3.4 order of checks: the length, then each share completely (type, finiteness,
    # range) in index order, then the sum
    if len(shares) != len(VISEMES):
        raise _fail(family, "decode.out_of_range",
                    f"expected {len(VISEMES)} viseme shares, got {len(shares)}", path)
    out = []
    for i, raw in enumerate(shares):
        s = _number(raw, family, f"{path}[{i}]")
        if not 0.0 <= s <= 1.0:
            raise _fail(family, "decode.out_of_range", "a share is outside [0, 1]",
                        f"{path}[{i}]")
        out.append(s)
    # spec §1.5: the sum a rule decides on runs left to right from +0.0 (not fsum, not pairwise)
    if ordered_sum1(out) > 1.0 + MOUTHING_SUM_TOLERANCE:
        raise _fail(family, "decode.out_of_range", "viseme shares sum to more than 1", path)
    return tuple(out)


def _check_enum_map(values: object, keys: tuple[str, ...], allowed: tuple[str, ...],
                    family: ErrorFamily, path: str) -> None:
    if not isinstance(values, Mapping):
        raise _fail(family, "decode.type", "expected a map", path)
    for key, value in values.items():
        if not isinstance(key, str):
            raise _fail(family, "decode.type", "keys must be strings", path)
        if key not in keys:
            raise _fail(family, "decode.unknown_id", "unknown key", f"{path}.{key}")
        if not isinstance(value, str):
            raise _fail(family, "decode.type", "expected a string", f"{path}.{key}")
        if value not in allowed:
            raise _fail(family, "decode.unknown_id", "unknown value", f"{path}.{key}")


def _check_affect(label: object, intensity: object, mode: object, family: ErrorFamily,
                  path: str) -> None:
    # spec §3.4.4
    if not isinstance(label, str):
        raise _fail(family, "decode.type", "expected a string", f"{path}.label")
    if label not in AFFECT_LABELS:
        raise _fail(family, "decode.unknown_id", "unknown affect label", f"{path}.label")
    i = _number(intensity, family, f"{path}.intensity")
    if not 0.0 <= i <= 1.0:
        raise _fail(family, "decode.out_of_range", "intensity is outside [0, 1]",
                    f"{path}.intensity")
    if not isinstance(mode, str):
        raise _fail(family, "decode.type", "expected a string", f"{path}.mode")
    if mode not in AFFECT_MODES:
        raise _fail(family, "decode.unknown_id", "unknown affect mode", f"{path}.mode")


def conditions_from_obj(obj: object, *, error_family: ErrorFamily = "decode",
                        path: str = "conditions") -> Conditions:
    """Validate the plain-object form (spec §3.4, §5.5) and build :class:`Conditions`.

    ``obj`` is ``{"mouthing"?: [15 numbers], "tracking"?: {part: state},
    "contact"?: {hand: site}, "affect"?: {"label", "intensity", "mode"}}``; unknown
    top-level keys are ignored (evolution, spec §5.9). Bad data raises
    :class:`~posewire.codec.errors.DecodeError` (``error_family="decode"``, peer data) or
    :class:`~posewire.codec.errors.UsageError` (``"usage"``) with a path such as
    ``conditions.tracking.hand_q``.
    """
    if not isinstance(obj, Mapping):
        raise _fail(error_family, "decode.type", "expected a map", path)
    mouthing: tuple[float, ...] | None = None
    raw_m = obj.get("mouthing")
    if raw_m is not None:
        if not isinstance(raw_m, list | tuple):
            raise _fail(error_family, "decode.type", "expected an array", f"{path}.mouthing")
        mouthing = _check_mouthing(tuple(raw_m), error_family, f"{path}.mouthing")
    # spec §5.5: a channel whose value is nil is inactive, exactly as if it were left out
    tracking = obj.get("tracking")
    tracking = {} if tracking is None else tracking
    _check_enum_map(tracking, TRACKING_PARTS, TRACKING_STATES, error_family, f"{path}.tracking")
    contact = obj.get("contact")
    contact = {} if contact is None else contact
    _check_enum_map(contact, CONTACT_HANDS, CONTACT_SITES, error_family, f"{path}.contact")
    affect: Affect | None = None
    raw_a = obj.get("affect")
    if raw_a is not None:
        if not isinstance(raw_a, Mapping):
            raise _fail(error_family, "decode.type", "expected a map", f"{path}.affect")
        for key in ("label", "intensity", "mode"):
            if key not in raw_a:
                raise _fail(error_family, "decode.missing_field", f"{key} is required",
                            f"{path}.affect.{key}")
        _check_affect(raw_a["label"], raw_a["intensity"], raw_a["mode"], error_family,
                      f"{path}.affect")
        affect = Affect(raw_a["label"], float(raw_a["intensity"]), raw_a["mode"])
    return Conditions(mouthing=mouthing, tracking=dict(tracking), contact=dict(contact),
                      affect=affect)


def conditions_to_obj(conditions: Conditions) -> dict[str, Any]:
    """The plain-object form of ``conditions`` (inverse of :func:`conditions_from_obj`).

    Inactive channels (``None`` / empty map) are left out; keys in the order
    mouthing, tracking, contact, affect; map entries in registry order (spec §5.5).
    """
    out: dict[str, Any] = {}
    if conditions.mouthing is not None:
        out["mouthing"] = list(conditions.mouthing)
    if conditions.tracking:
        out["tracking"] = dict(conditions.tracking)
    if conditions.contact:
        out["contact"] = dict(conditions.contact)
    if conditions.affect is not None:
        a = conditions.affect
        out["affect"] = {"label": a.label, "intensity": a.intensity, "mode": a.mode}
    return out


def _swap_side(name: str) -> str:
    if name.endswith("_l"):
        return name[:-2] + "_r"
    if name.endswith("_r"):
        return name[:-2] + "_l"
    return name


def mirror_conditions(conditions: Conditions) -> Conditions:
    """Mirror image of the conditions (spec §3.2): tracking ``hand_l``↔``hand_r`` and
    ``arm_l``↔``arm_r``; contact keys swap and sided site values swap ``_l``↔``_r``;
    mouthing and affect unchanged. An involution."""
    return Conditions(
        mouthing=conditions.mouthing,
        tracking={_swap_side(k): v for k, v in conditions.tracking.items()},
        contact={_swap_side(k): _swap_side(v) for k, v in conditions.contact.items()},
        affect=conditions.affect,
    )
