"""Two-bone arm IK with body-local, side-specific poles (spec §4.1; seed 003).

Frame: the body frame of spec §2.1 (metres, +Y up, +Z forward, +X = the character's
left). Everything here is **body-local**: a consumer that turns the body rotates target
and pole together (seed ``003_95e5af7f8bdf5a13.txt`` "Pole direction body-local space —
world-space pole breaks when body rotates").

Seed 003's pole vectors ``[-1, 0, -1]`` (left) and ``[1, 0, -1]`` (right) are written in
that engine's frame, where the avatar faces −Z (``initial_body_yaw: π``) and +X is the
character's right. Conversion to ours is a half turn about +Y:
``(x, y, z)_ours = (−x, y, −z)_seed``, so :data:`SEED003_POLE` is ``(1, 0, 1)/√2`` for the
left arm and ``(−1, 0, 1)/√2`` for the right: lateral and forward, mirror images
(spec appendix A31: only the principle is normative). The decoder's pole is spec §4.1's
spread frame (:mod:`posewire.codec.elbow`): the zero-spread direction ``ref`` (down and a
little back, orthogonal to the shoulder→target axis) swung by ``a_spread · 90°`` toward
lateral (:func:`arm_pole`), with nothing added, so a producer that measures the spread in
the same frame gets its value back exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.elbow import ELBOW_REFERENCE, FIXED_SENSE, LATERAL, spread_basis_unchecked
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import (
    cross_unchecked,
    multiply_unchecked,
    rotate_unchecked,
)
from posewire.consumers.ik_single import AT_SHOULDER as _EPS

__all__ = [
    "DOWN",
    "ELBOW_REFERENCE",
    "MIN_BONE_LENGTH",
    "SEED003_POLE",
    "IKResult",
    "arm_pole",
    "min_rotation",
    "two_bone_ik",
]

F64 = NDArray[np.float64]
Side = Literal["l", "r"]

#: Seed 003: arm chains whose bones are shorter than this (metres) fall back (no IK).
MIN_BONE_LENGTH = 0.03
#: Spec §4.1 default pole: the elbow hangs down.
DOWN: F64 = np.array([0.0, -1.0, 0.0])
#: Seed 003 side poles converted to the body frame (module docstring), unit length.
SEED003_POLE: dict[str, F64] = {
    "l": np.array([1.0, 0.0, 1.0]) / np.sqrt(2.0),
    "r": np.array([-1.0, 0.0, 1.0]) / np.sqrt(2.0),
}
_LATERAL: dict[str, F64] = LATERAL


def _dot(a: F64, b: F64) -> F64:
    out: F64 = (a * b).sum(axis=-1)
    return out


def _unit(v: F64) -> tuple[F64, F64]:
    # same sum of squares as np.linalg.norm(v, axis=-1), without its overhead
    n = np.sqrt((v * v).sum(axis=-1, keepdims=True))
    out: F64 = v / np.where(n > 0.0, n, 1.0)
    return out, n[..., 0]


_Z: F64 = np.array([0.0, 0.0, 1.0])
_X: F64 = np.array([1.0, 0.0, 0.0])


def _min_rotation(va: F64, vb: F64) -> F64:
    # min_rotation without input conversion; va, vb (..., 3) unit, broadcastable
    w = 1.0 + _dot(va, vb)
    xyz = cross_unchecked(va, vb)
    flip = w < 1e-12
    if flip.any():
        va = np.broadcast_to(va, xyz.shape)
        alt = cross_unchecked(va, _Z)
        small = np.sqrt((alt * alt).sum(axis=-1)) < 1e-6
        alt = np.where(small[..., None], cross_unchecked(va, _X), alt)
        alt, _ = _unit(alt)
        xyz = np.where(flip[..., None], alt, xyz)
        w = np.where(flip, 0.0, w)
    q = np.concatenate([w[..., None], xyz], axis=-1)
    out: F64 = q / np.sqrt((q * q).sum(axis=-1, keepdims=True))
    return out


def min_rotation(a: ArrayLike, b: ArrayLike) -> F64:
    """The smallest rotation ``(..., 4)`` taking unit directions ``a`` to ``b`` (``(..., 3)``).

    Antiparallel inputs turn 180° about an axis perpendicular to ``a`` (the one nearest
    the cross with +Z, else +X). Mirror-equivariant: ``min_rotation(Ma, Mb)`` is the
    sagittal mirror of ``min_rotation(a, b)``.
    """
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    va, vb = np.broadcast_arrays(va, vb)
    return _min_rotation(va, vb)


def _pole(axis: F64, spread: F64, lateral: F64, fixed: F64 | float) -> F64:
    # arm_pole without validation; axis (..., 3), spread (...,), lateral (..., 3)
    # broadcastable, fixed the per-side fallback sense (spec §4.1, codec.elbow)
    u, _ = _unit(axis)
    ref, toward = spread_basis_unchecked(u, lateral, fixed)
    phi = (spread * (np.pi / 2.0))[..., None]
    out: F64 = ref * np.cos(phi) + toward * np.sin(phi)
    return out


def arm_pole(axis: ArrayLike, spread: ArrayLike, *, side: Side) -> F64:
    """Body-local elbow pole ``(B, 3)`` for shoulder→target directions ``axis (B, 3)``
    and ``a_spread`` values ``spread (B,)`` in [0, 1] (spec §4.1).

    ``ref · cos φ + toward · sin φ`` with ``φ = spread · 90°`` and ``(ref, toward)`` the
    spread frame of :func:`posewire.codec.elbow.spread_basis`: ``ref`` is
    :data:`ELBOW_REFERENCE` (down, a little back) made orthogonal to the axis, ``toward``
    the lateral swing direction. The pole is orthogonal to the axis and at exactly ``φ``
    from ``ref``, so the solved elbow's spread equals ``a_spread``. Mirror law: the left
    pole is the sagittal mirror of the right one.
    """
    if side not in ("l", "r"):
        raise UsageError("usage.bad_option", f"side must be 'l' or 'r', not {side!r}")
    return _pole(np.asarray(axis, dtype=np.float64), np.asarray(spread, dtype=np.float64),
                 LATERAL[side], FIXED_SENSE[side])


@dataclass(frozen=True)
class IKResult:
    """Two-bone IK solution (body frame).

    ``upper``, ``lower`` ``(B, 4)``: rotations applied to the rest **world** orientation
    of the upper and lower arm (``W = G · W_rest``); ``elbow``, ``wrist`` ``(B, 3)``
    solved positions (metres); ``clamped`` ``(B,)``: the target was out of reach (farther
    than ``a + b`` → arm straight toward it; nearer than ``|a − b|`` → folded) and the
    wrist stops short — reported; ``fallback``: a bone is shorter than
    :data:`MIN_BONE_LENGTH` (seed 003): no IK, identity rotations, rest positions.
    """

    upper: F64
    lower: F64
    elbow: F64
    wrist: F64
    clamped: NDArray[np.bool_]
    fallback: bool


def two_bone_ik(shoulder: ArrayLike, elbow: ArrayLike, wrist: ArrayLike, target: ArrayLike,
                pole: ArrayLike, *, min_bone_length: float = MIN_BONE_LENGTH) -> IKResult:
    """Solve shoulder→elbow→wrist so the wrist reaches ``target (B, 3)``.

    ``shoulder``, ``elbow``, ``wrist``: rest positions ``(3,)`` or ``(B, 3)`` (metres);
    bone lengths ``a = |elbow − shoulder|``, ``b = |wrist − elbow|``. With
    ``d = clip(|target − shoulder|, |a − b|, a + b)`` and ``u`` the unit shoulder→target
    direction, the elbow is ``shoulder + a·(cos α·u + sin α·v)``, ``cos α = (a² + d² −
    b²)/(2ad)``, ``v`` the unit component of ``pole`` perpendicular to ``u`` (so the
    elbow lies in the pole half-plane). A pole parallel to ``u`` uses the component of +Z
    (forward; else −Y) perpendicular to ``u``, which keeps the mirror law. Rotations: the
    upper arm turns its rest direction onto the solved one by the smallest rotation; the
    lower arm is carried by it and then turned by the smallest rotation onto its solved direction (an elbow hinge about
    ``u × v`` for a straight rest arm). A target at the shoulder points the arm along
    its rest direction.
    """
    s0 = np.asarray(shoulder, dtype=np.float64)
    e0 = np.asarray(elbow, dtype=np.float64)
    w0 = np.asarray(wrist, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    p = np.asarray(pole, dtype=np.float64)
    if t.ndim != 2 or t.shape[-1] != 3:
        raise UsageError("usage.shape", f"target must be (B, 3), got {t.shape}")
    if not (np.isfinite(t).all() and np.isfinite(p).all()):
        raise UsageError("usage.not_finite", "target or pole is not finite")
    batch = t.shape[0]
    s0, e0, w0, p = (np.broadcast_to(x, (batch, 3)) for x in (s0, e0, w0, p))
    upper_dir0, a_len = _unit(e0 - s0)
    lower_dir0, b_len = _unit(w0 - e0)
    if (a_len < min_bone_length).any() or (b_len < min_bone_length).any():
        # seed 003: an arm chain with a bone under 3 cm is not solved
        identity = np.tile([1.0, 0.0, 0.0, 0.0], (batch, 1))
        return IKResult(identity, identity.copy(), np.array(e0), np.array(w0),
                        np.zeros(batch, dtype=bool), True)
    return _solve(s0, upper_dir0, a_len, lower_dir0, b_len, t, p)


def _solve(s0: F64, upper_dir0: F64, a_len: F64, lower_dir0: F64, b_len: F64,
           t: F64, p: F64) -> IKResult:
    # two_bone_ik without validation or the short-bone fallback; every argument
    # (..., 3) or (...,) and broadcastable to the target's shape (formulas: two_bone_ik)
    u, dist = _unit(t - s0)
    u = np.where((dist < _EPS)[..., None], upper_dir0, u)
    lo, hi = np.abs(a_len - b_len), a_len + b_len
    d = np.minimum(np.maximum(dist, lo), hi)  # = np.clip(dist, lo, hi), lo ≤ hi
    clamped = (dist > hi * (1.0 + 1e-12)) | (dist < lo * (1.0 - 1e-12))
    cos_a = np.minimum(np.maximum(
        (a_len**2 + d**2 - b_len**2) / (2.0 * a_len * np.maximum(d, _EPS)), -1.0), 1.0)
    sin_a = np.sqrt(1.0 - cos_a**2)
    v = p - (p * u).sum(axis=-1, keepdims=True) * u
    v, vn = _unit(v)
    # a pole nearly along u leaves v noisy: project once more so v ⟂ u to rounding
    v, _ = _unit(v - (v * u).sum(axis=-1, keepdims=True) * u)
    bad = vn < 1e-9
    if bad.any():
        # sagittal-plane fallbacks (+Z, else −Y) keep the mirror law
        alt = _Z - (_Z * u).sum(axis=-1, keepdims=True) * u
        alt_down = DOWN - (DOWN * u).sum(axis=-1, keepdims=True) * u
        alt = np.where((np.sqrt((alt * alt).sum(axis=-1)) < 1e-6)[..., None], alt_down, alt)
        v = np.where(bad[..., None], _unit(alt)[0], v)
    elbow_new = s0 + a_len[..., None] * (cos_a[..., None] * u + sin_a[..., None] * v)
    wrist_new = s0 + d[..., None] * u
    upper_dir1 = (elbow_new - s0) / a_len[..., None]
    lower_dir1, _ = _unit(wrist_new - elbow_new)
    g_upper = _min_rotation(upper_dir0, upper_dir1)
    carried = rotate_unchecked(g_upper, lower_dir0)
    g_lower = multiply_unchecked(_min_rotation(carried, lower_dir1), g_upper)
    return IKResult(g_upper, g_lower, elbow_new, wrist_new, clamped, False)


