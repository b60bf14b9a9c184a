"""Elbow spread frame shared by encoder and decoder (spec §4.1 "Elbow spread").

For a unit shoulder→wrist direction ``u`` in the chest frame (spec §2.3: +X the
character's left, +Y up, +Z forward) the spread angle is measured in the plane
orthogonal to ``u``:

* ``ref`` — the zero-spread elbow direction: :data:`ELBOW_REFERENCE` = ``(0, −1, −0.25)``
  (down, a little back) with its component along ``u`` removed, normalized. Where it
  is parallel to ``u`` the component of +Z (forward) orthogonal to ``u`` is used, then
  that of −Y (the two-bone IK's own fallbacks, :mod:`posewire.consumers.ik`).
* ``toward`` — ``sense · (u × ref)``, the unit direction the elbow swings to as the
  spread grows: ``sense = sign((u × ref) · lateral)`` with lateral −X for the right arm
  and +X for the left; where that product is below 1e−6 in magnitude the sense is fixed
  per side (−1 right, +1 left), which keeps the left/right mirror law.

Decoder: the elbow pole is ``ref · cos φ + toward · sin φ`` with ``φ = a_spread · 90°``.
Encoder: ``φ = atan2(e · toward, e · ref)`` for the elbow's offset ``e`` from the
shoulder→wrist line. The two are exact inverses; ``ELBOW_REFERENCE`` has no x
component, so it is its own sagittal mirror.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .quaternion import Vec3, as_vec1, cross1, dot1, reject1

__all__ = ["ELBOW_REFERENCE", "FIXED_SENSE", "LATERAL", "spread_angle", "spread_angle1", "spread_angle_unchecked",
           "spread_basis", "spread_basis1", "spread_basis_unchecked"]

F64 = NDArray[np.float64]
Side = Literal["l", "r"]

#: Zero-spread elbow direction before removing its component along the arm (spec §4.1).
ELBOW_REFERENCE: F64 = np.array([0.0, -1.0, -0.25])
#: Lateral direction per side (spec §3.2): +X for the left arm, −X for the right.
LATERAL: dict[str, F64] = {"l": np.array([1.0, 0.0, 0.0]), "r": np.array([-1.0, 0.0, 0.0])}
#: Fixed swing sense where ``(u × ref) · lateral`` vanishes (spec §4.1).
FIXED_SENSE: dict[str, float] = {"l": 1.0, "r": -1.0}

#: |ref| under which the reference is along the arm, |+Z rejected| under which +Z is too,
#: and |(u × ref) · lateral| under which the swing sense is fixed (module docstring).
_REF_PARALLEL, _Z_PARALLEL, _SENSE_MIN = 1e-9, 1e-6, 1e-6
_Z = np.array([0.0, 0.0, 1.0])
_DOWN = np.array([0.0, -1.0, 0.0])


def _reject(v: F64, u: F64) -> F64:
    out: F64 = v - (v * u).sum(axis=-1, keepdims=True) * u
    return out


def _norm(v: F64) -> F64:
    out: F64 = np.sqrt((v * v).sum(axis=-1))
    return out


def spread_basis_unchecked(u: F64, lateral: F64, fixed: F64 | float) -> tuple[F64, F64]:
    """:func:`spread_basis` for unit ``u (..., 3)``, ``lateral (..., 3)`` and the fixed
    sense (broadcastable); no validation."""
    r = _reject(np.broadcast_to(ELBOW_REFERENCE, u.shape), u)
    n = _norm(r)
    bad = n < _REF_PARALLEL
    if bad.any():
        alt = _reject(np.broadcast_to(_Z, u.shape), u)
        alt = np.where((_norm(alt) < _Z_PARALLEL)[..., None], _reject(np.broadcast_to(_DOWN, u.shape), u), alt)
        r = np.where(bad[..., None], alt, r)
        n = _norm(r)
    r = r / n[..., None]
    t = np.cross(u, r)
    toward = (t * lateral).sum(axis=-1)
    sense = np.where(np.abs(toward) > _SENSE_MIN, np.sign(toward), fixed)
    return r, t * sense[..., None]


def _check(axis: ArrayLike, side: str) -> F64:
    if side not in ("l", "r"):
        raise UsageError("usage.bad_option", f"side must be 'l' or 'r', not {side!r}")
    u = np.asarray(axis, dtype=np.float64)
    if u.ndim == 0 or u.shape[-1] != 3:
        raise UsageError("usage.shape", f"axis must have shape (..., 3), got {u.shape}")
    if not np.isfinite(u).all():
        raise UsageError("usage.not_finite", "axis contains NaN or infinity")
    n = _norm(u)
    if (n < 1e-12).any():
        raise UsageError("usage.zero_norm", "axis has zero length")
    out: F64 = u / n[..., None]
    return out


def spread_basis(axis: ArrayLike, *, side: Side) -> tuple[F64, F64]:
    """``(ref, toward)`` unit directions ``(..., 3)`` for shoulder→wrist directions
    ``axis (..., 3)`` (any length, normalized here) of the ``side`` arm (module
    docstring). Raises ``usage.shape``, ``usage.not_finite``, ``usage.zero_norm``,
    ``usage.bad_option``."""
    u = _check(axis, side)
    return spread_basis_unchecked(u, LATERAL[side], FIXED_SENSE[side])


def spread_angle(axis: ArrayLike, elbow_offset: ArrayLike, *, side: Side) -> F64:
    """Spread angle in degrees ``(...,)`` (spec §4.1) of an elbow whose offset from the
    shoulder is ``elbow_offset (..., 3)`` for shoulder→wrist ``axis (..., 3)``:
    ``atan2(e · toward, e · ref)``, in (−180°, 180°]; a producer clamps it to
    ``[0°, 90°]`` and reports the clamp."""
    return spread_angle_unchecked(_check(axis, side), np.asarray(elbow_offset, dtype=np.float64), side=side)


def spread_angle_unchecked(u: F64, elbow_offset: F64, *, side: Side) -> F64:
    """:func:`spread_angle` for a unit float64 ``u (..., 3)`` and a float64 offset, no
    validation (callers that checked their rows already: the per-frame encoder)."""
    r, t = spread_basis_unchecked(u, LATERAL[side], FIXED_SENSE[side])
    out: F64 = np.degrees(np.arctan2((elbow_offset * t).sum(axis=-1), (elbow_offset * r).sum(axis=-1)))
    return out


# -- one arm in Python floats (the single-frame encoder and decoder) ---------------------
_REF1, _Z1, _DOWN1 = as_vec1(ELBOW_REFERENCE), as_vec1(_Z), as_vec1(_DOWN)
_LATERAL1: dict[str, Vec3] = {s: as_vec1(v) for s, v in LATERAL.items()}


def spread_basis1(u: Vec3, lateral: Vec3, fixed: float) -> tuple[Vec3, Vec3]:
    """:func:`spread_basis_unchecked` of one unit direction ``u``: ``(ref, toward)``."""
    r = reject1(_REF1, u)
    n = math.sqrt(dot1(r, r))
    if n < _REF_PARALLEL:  # the reference is along the arm: +Z, then -Y (module docstring)
        r = reject1(_Z1, u)
        if math.sqrt(dot1(r, r)) < _Z_PARALLEL:
            r = reject1(_DOWN1, u)
        n = math.sqrt(dot1(r, r))
    r = (r[0] / n, r[1] / n, r[2] / n)
    t = cross1(u, r)
    toward = dot1(t, lateral)
    sense = math.copysign(1.0, toward) if abs(toward) > _SENSE_MIN else fixed
    return r, (t[0] * sense, t[1] * sense, t[2] * sense)


def spread_angle1(u: Vec3, elbow_offset: Vec3, *, side: Side) -> float:
    """:func:`spread_angle_unchecked` of one unit direction ``u`` and one elbow offset
    (degrees, spec §4.1)."""
    r, t = spread_basis1(u, _LATERAL1[side], FIXED_SENSE[side])
    return math.degrees(math.atan2(dot1(elbow_offset, t), dot1(elbow_offset, r)))
