"""Arm units, calibration and the neck-centric body frame (spec §2, §4.1).

The arm dims ``a_x, a_y, a_z`` are bipolar with max 2.5 in units ``L = (L_x, L_y, L_z)``
metres. ``L_axis = 2 · r_axis · d_axis`` where ``d`` are the avatar's calibrated reference
distances (hand length, torso length, arm length; measured on the RIGHT side in fixed
reference poses, never from the animated pose) and ``r`` the reference ratios of
:data:`posewire.codec.registry.REFERENCE_AVATAR`. An axis without a valid ``d`` falls back to the
legacy shoulder-width unit ``L_axis = S`` and the fallback is reported.

Physical displacement from the neck origin in the body frame (metres, +X = the
character's left, +Y up, +Z forward), spec §3.2: the right arm's lateral direction is
``-X``, so ``p_r = (-n_x, n_y, n_z) · 2.5 · L`` and ``p_l = (+n_x, n_y, n_z) · 2.5 · L``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .ieee import ordered_norm, ordered_sum, ordered_unit
from .quaternion import ZERO_NORM_EPS, Vec3, as_vec1
from .registry import REFERENCE_AVATAR, REGISTRY

__all__ = [
    "ARM_MAX",
    "AXES",
    "MAX_DISTANCE",
    "MEASURE_SITES",
    "NAVEL_FRACTION",
    "REFERENCE_CALIBRATION",
    "BodyFrame",
    "Calibration",
    "CalibrationUnits",
    "arm_to_normalized",
    "arm_to_normalized1",
    "arm_to_physical",
    "body_frame",
    "from_body_frame",
    "measure_calibration",
    "to_body_frame",
    "units",
]

Side = Literal["l", "r"]
F64 = NDArray[np.float64]

#: Axis names, in the order of ``CalibrationUnits.L``.
AXES: tuple[str, str, str] = ("x", "y", "z")
#: Physical magnitude of ``|n| = 1`` in units of L (registry rows a_x, a_y, a_z).
ARM_MAX: float = REGISTRY.by_id["a_x_r"].row.max
#: navel = neck + NAVEL_FRACTION · (hip_mid - neck) (spec §2 body sites).
NAVEL_FRACTION = 0.8

_SIDE_SIGN = {"r": np.array([-1.0, 1.0, 1.0]), "l": np.array([1.0, 1.0, 1.0])}
_SIDE_SIGN1 = {s: as_vec1(v) for s, v in _SIDE_SIGN.items()}


@dataclass(frozen=True, slots=True)
class Calibration:
    """Reference distances of one avatar in metres (spec §4.1); ``None`` = not measured.

    ``hand_length`` d_x: wrist_r -> middle_tip_r, hand open. ``torso_length`` d_y:
    neck -> navel. ``arm_length`` d_z: shoulder_r -> wrist_r, arm extended.
    ``shoulder_width`` S: shoulder_l -> shoulder_r (the legacy fallback unit).
    """

    hand_length: float | None = None
    torso_length: float | None = None
    arm_length: float | None = None
    shoulder_width: float | None = None


#: The calibration of the official reference avatar (spec §4.1).
REFERENCE_CALIBRATION = Calibration(
    hand_length=REFERENCE_AVATAR.hand_length,
    torso_length=REFERENCE_AVATAR.torso_length,
    arm_length=REFERENCE_AVATAR.arm_length,
    shoulder_width=REFERENCE_AVATAR.shoulder_width,
)


@dataclass(frozen=True)
class CalibrationUnits:
    """Arm units ``L`` (shape ``(3,)``, metres, order x, y, z) and the report of which
    axes fell back to the shoulder-width unit (spec §4.1 SHOULD: report)."""

    L: F64  # the spec's symbol: arm units (x, y, z), metres
    fallback_axes: tuple[str, ...]

    @property
    def calibrated(self) -> bool:
        """True when no axis fell back (calibrated-axis conformance, spec §4.1)."""
        return not self.fallback_axes


#: Longest valid calibration distance in metres (spec §4.1, §5.6 ``metres``).
MAX_DISTANCE = 10.0


def _valid_length(value: float | None) -> bool:
    # spec §4.1: a distance is valid when it is in (0, 10] m, as on the wire (§5.6)
    return value is not None and math.isfinite(value) and 0.0 < value <= MAX_DISTANCE


def units(cal: Calibration) -> CalibrationUnits:
    """Arm units of an avatar: ``L_axis = 2 · r_axis · d_axis`` (spec §4.1).

    An axis whose distance is ``None`` or outside ``(0, 10]`` m uses the legacy
    unit ``L_axis = S`` (shoulder width) and is named in ``fallback_axes``. When an axis
    needs the fallback and ``S`` is not valid either, raises ``usage.calibration``.
    On the reference avatar ``L = (0.360012, 0.36, 0.359968)``.
    """
    ratios = REFERENCE_AVATAR.r
    distances = (cal.hand_length, cal.torso_length, cal.arm_length)
    lengths: list[float] = []
    fallback: list[str] = []
    for axis, r, d in zip(AXES, ratios, distances, strict=True):
        if d is not None and _valid_length(d):
            lengths.append(2.0 * r * d)
            continue
        if cal.shoulder_width is None or not _valid_length(cal.shoulder_width):
            raise UsageError(
                "usage.calibration",
                f"axis {axis}: reference distance {d!r} is not valid and the shoulder-width "
                f"fallback {cal.shoulder_width!r} is not valid either",
                path=f"L_{axis}",
            )
        lengths.append(cal.shoulder_width)
        fallback.append(axis)
    return CalibrationUnits(np.array(lengths, dtype=np.float64), tuple(fallback))


def _check_side(side: str) -> None:
    if side not in _SIDE_SIGN:
        raise UsageError("usage.bad_option", f"side must be 'l' or 'r', not {side!r}")


def _as3(values: ArrayLike, what: str) -> F64:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != 3:
        raise UsageError("usage.shape", f"{what} must have shape (..., 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise UsageError("usage.not_finite", f"{what} contains NaN or infinity")
    return arr


def arm_to_physical(n: ArrayLike, units: CalibrationUnits, *, side: Side) -> F64:
    """Hand displacement from the neck (metres, body frame) ``(..., 3)`` from normalized
    ``(a_x, a_y, a_z)`` ``(..., 3)`` (spec §4.1, §3.2):
    ``p = sign_side · n · 2.5 · L`` with ``sign_r = (-1, 1, 1)``, ``sign_l = (1, 1, 1)``.
    Linear; range checking is :func:`posewire.codec.vector.validate`'s job."""
    _check_side(side)
    out: F64 = _as3(n, "n") * _SIDE_SIGN[side] * ARM_MAX * units.L
    return out


def arm_to_normalized(p: ArrayLike, units: CalibrationUnits, *, side: Side) -> F64:
    """Inverse of :func:`arm_to_physical`: normalized ``(a_x, a_y, a_z)`` ``(..., 3)`` from
    displacements ``p (..., 3)`` in metres. Not clamped (values may leave [-1, 1])."""
    _check_side(side)
    out: F64 = _as3(p, "p") * _SIDE_SIGN[side] / (ARM_MAX * units.L)
    return out


def arm_to_normalized1(p: Vec3, units: CalibrationUnits, *, side: Side) -> Vec3:
    """:func:`arm_to_normalized` of one finite displacement (Python floats, no validation:
    the single-frame encoder)."""
    lx, ly, lz = units.L.tolist()
    sx, sy, sz = _SIDE_SIGN1[side]
    return (p[0] * sx / (ARM_MAX * lx), p[1] * sy / (ARM_MAX * ly), p[2] * sz / (ARM_MAX * lz))


def _site(sites: Mapping[str, ArrayLike], name: str) -> F64 | None:
    if name not in sites:
        return None
    arr = np.asarray(sites[name], dtype=np.float64)
    if arr.shape != (3,):
        raise UsageError("usage.shape", f"site {name} must have shape (3,), got {arr.shape}",
                         path=name)
    if not np.isfinite(arr).all():
        raise UsageError("usage.not_finite", f"site {name} is not finite", path=name)
    return arr


def _distance(a: F64 | None, b: F64 | None) -> float | None:
    if a is None or b is None:
        return None
    return float(ordered_norm(a - b))  # spec §1.5


#: The sites :func:`measure_calibration` reads (spec §4.1, §6.5).
MEASURE_SITES: tuple[str, ...] = ("shoulder_l", "shoulder_r", "neck", "hip_mid", "navel",
                                  "wrist_r", "middle_tip_r")


def measure_calibration(sites: Mapping[str, ArrayLike]) -> Calibration:
    """Reference distances from named body sites ``(3,)`` in metres (spec §2, §4.1).

    Sites (all optional): ``shoulder_l``, ``shoulder_r``, ``neck``, ``hip_mid``, ``navel``,
    ``wrist_r``, ``middle_tip_r``. ``neck`` defaults to the shoulder midpoint and
    ``navel`` to ``neck + 0.8 · (hip_mid - neck)``. The caller supplies sites taken in the
    fixed reference poses (open hand, extended arm, bind pose) — never the animated pose.
    A distance whose sites are missing is ``None`` (then :func:`units` falls back).
    Any other site name is ``usage.unknown_id`` (spec §6.5).
    """
    for name in sites:
        if name not in MEASURE_SITES:
            raise UsageError("usage.unknown_id", f"no calibration site {name!r}; one of "
                             f"{MEASURE_SITES}", path=str(name))
    shoulder_l = _site(sites, "shoulder_l")
    shoulder_r = _site(sites, "shoulder_r")
    neck = _site(sites, "neck")
    if neck is None and shoulder_l is not None and shoulder_r is not None:
        neck = 0.5 * (shoulder_l + shoulder_r)
    navel = _site(sites, "navel")
    hip_mid = _site(sites, "hip_mid")
    if navel is None and neck is not None and hip_mid is not None:
        navel = neck + NAVEL_FRACTION * (hip_mid - neck)
    wrist_r = _site(sites, "wrist_r")
    return Calibration(
        hand_length=_distance(wrist_r, _site(sites, "middle_tip_r")),
        torso_length=_distance(neck, navel),
        arm_length=_distance(shoulder_r, wrist_r),
        shoulder_width=_distance(shoulder_l, shoulder_r),
    )


@dataclass(frozen=True)
class BodyFrame:
    """The neck-centric body frame in some right-handed world frame (spec §2).

    ``rotation (..., 3, 3)`` has the body axes X, Y, Z (world coordinates) as columns, so
    ``world = origin + rotation @ body``; ``origin (..., 3)`` is the neck.
    """

    rotation: F64
    origin: F64


def body_frame(shoulder_l: ArrayLike, shoulder_r: ArrayLike, hip_mid: ArrayLike) -> BodyFrame:
    """The body frame from sites ``(..., 3)`` (spec §2): X = normalize(shoulder_l -
    shoulder_r); Y = (neck - hip_mid) orthogonalized against X; Z = X × Y; origin = neck
    = shoulder midpoint. Degenerate sites raise ``usage.zero_norm``.

    The world frame must be right-handed (else the body frame comes out mirrored).
    """
    sl, sr, hip = _as3(shoulder_l, "shoulder_l"), _as3(shoulder_r, "shoulder_r"), _as3(
        hip_mid, "hip_mid")
    neck = 0.5 * (sl + sr)
    x = sl - sr
    if not np.isfinite(x).all():  # spec §6.5 rule 5: sl - sr overflowed binary64
        raise UsageError("usage.out_of_range", "the shoulder sites are too far apart")
    x_norm = ordered_norm(x)[..., None]
    if (x_norm == 0.0).any():  # spec §6.5 rule 4: given points, exactly equal
        raise UsageError("usage.zero_norm", "shoulder sites coincide")
    x = ordered_unit(x)  # spec §1.5: the scaled x over its scaled length (subnormal too)
    up = neck - hip
    if not np.isfinite(neck).all() or not np.isfinite(up).all():  # spec §6.5 rule 5
        raise UsageError("usage.out_of_range", "the sites are too far apart for binary64")
    y = up - np.sum(up * x, axis=-1, keepdims=True) * x
    y_norm = ordered_norm(y)[..., None]
    # spec §6.5 rule 4: a derived direction, degenerate relative to the one it came from
    if (y_norm <= ZERO_NORM_EPS * ordered_norm(up)[..., None]).any():
        raise UsageError("usage.zero_norm", "neck - hip_mid is parallel to the shoulder line")
    y = ordered_unit(y)
    z = np.cross(x, y)
    return BodyFrame(rotation=np.stack([x, y, z], axis=-1), origin=neck)


def to_body_frame(points: ArrayLike, frame: BodyFrame) -> F64:
    """World points ``(..., 3)`` into body-frame coordinates: ``Rᵀ · (p - origin)``.

    Batch dims broadcast numpy-style against the frame's batch dims (for K points per
    frame, pass points ``(B, K, 3)`` with a frame built from ``(B, 1, 3)`` sites).
    """
    rel = _as3(points, "points") - frame.origin
    rot = frame.rotation  # Rᵀ·rel: column i of R dotted with rel, summed in order (spec §1.5)
    out: F64 = ordered_sum(np.swapaxes(rot * rel[..., :, None], -1, -2))
    return out


def from_body_frame(points: ArrayLike, frame: BodyFrame) -> F64:
    """Inverse of :func:`to_body_frame`: ``origin + R · p``."""
    body = _as3(points, "points")
    out: F64 = frame.origin + ordered_sum(frame.rotation * body[..., None, :])  # R·p (spec §1.5)
    return out
