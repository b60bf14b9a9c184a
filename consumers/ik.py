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

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.elbow import ELBOW_REFERENCE, FIXED_SENSE, LATERAL, spread_basis1, spread_basis_unchecked
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import (
    Quat,
    Vec3,
    cross1,
    cross_unchecked,
    dot1,
    multiply_unchecked,
    reject1,
    rotate_unchecked,
)

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
_EPS = 1e-9


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


# -- one frame in Python floats (posewire.consumers.pose, batch of 1) ----------------------------
# The same formulas as _pole / _solve / _min_rotation on 3-tuples, in the same order of
# operations (the scalar kernels of posewire.codec.quaternion and posewire.codec.elbow);
# only sin/cos come from libm instead of numpy (agree to a few ulp).


def _unit1(v: Vec3) -> tuple[Vec3, float]:
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    d = n if n > 0.0 else 1.0
    return (v[0] / d, v[1] / d, v[2] / d), n


def _min_rotation1(va: Vec3, vb: Vec3) -> Quat:
    w = 1.0 + dot1(va, vb)
    xyz = cross1(va, vb)
    if w < 1e-12:
        alt = cross1(va, (0.0, 0.0, 1.0))
        if math.sqrt(alt[0] * alt[0] + alt[1] * alt[1] + alt[2] * alt[2]) < 1e-6:
            alt = cross1(va, (1.0, 0.0, 0.0))
        xyz, _ = _unit1(alt)
        w = 0.0
    n = math.sqrt(w * w + xyz[0] * xyz[0] + xyz[1] * xyz[1] + xyz[2] * xyz[2])
    return (w / n, xyz[0] / n, xyz[1] / n, xyz[2] / n)


_REF1 = (float(ELBOW_REFERENCE[0]), float(ELBOW_REFERENCE[1]), float(ELBOW_REFERENCE[2]))
_HALF_PI = math.pi / 2.0


def _arm1(s0: Vec3, upper_dir0: Vec3, a_len: float, lower_dir0: Vec3, b_len: float,
          t: Vec3, spread: float, lateral: Vec3, fixed: float) -> tuple[Quat, Quat, Vec3, Vec3, bool]:
    # _solve(..., t, _pole(t - s0, spread, lateral, fixed)) for one side and frame in Python
    # floats, in one function (the decoder's one frame: call overhead is a third of the cost);
    # equal to the array path to 1e-12 (tests/test_consumer_ik_single.py); the rare
    # degenerate branches call the helpers
    sx, sy, sz = s0
    tx, ty, tz = t
    # the pole: unit shoulder -> target axis, spread basis (codec.elbow.spread_basis1)
    ax, ay, az = tx - sx, ty - sy, tz - sz
    n_axis = math.sqrt(ax * ax + ay * ay + az * az)
    d = n_axis if n_axis > 0.0 else 1.0
    ux, uy, uz = ax / d, ay / d, az / d
    rx0, ry0, rz0 = _REF1
    k = 0.0 + rx0 * ux + ry0 * uy + rz0 * uz
    rx, ry, rz = rx0 - k * ux, ry0 - k * uy, rz0 - k * uz
    n = math.sqrt(0.0 + rx * rx + ry * ry + rz * rz)
    if n < 1e-9:  # codec.elbow._REF_PARALLEL: the reference is along the arm
        (rx, ry, rz), (bx, by, bz) = spread_basis1((ux, uy, uz), lateral, fixed)
    else:
        rx, ry, rz = rx / n, ry / n, rz / n
        bx, by, bz = uy * rz - uz * ry, uz * rx - ux * rz, ux * ry - uy * rx
        toward = 0.0 + bx * lateral[0] + by * lateral[1] + bz * lateral[2]
        sense = math.copysign(1.0, toward) if abs(toward) > 1e-6 else fixed  # elbow._SENSE_MIN
        bx, by, bz = bx * sense, by * sense, bz * sense
    phi = spread * _HALF_PI
    c, s = math.cos(phi), math.sin(phi)
    px, py, pz = rx * c + bx * s, ry * c + by * s, rz * c + bz * s
    # the solve (its unit axis is the pole's u unless the target is at the shoulder; min/max
    # of finite floats written as comparisons)
    dist = n_axis
    if dist < _EPS:
        ux, uy, uz = upper_dir0
    lo, hi = abs(a_len - b_len), a_len + b_len
    d = lo if lo > dist else dist
    d = hi if hi < d else d
    clamped = dist > hi * (1.0 + 1e-12) or dist < lo * (1.0 - 1e-12)
    cos_a = (a_len * a_len + d * d - b_len * b_len) / (2.0 * a_len * (_EPS if d < _EPS else d))
    cos_a = -1.0 if cos_a < -1.0 else cos_a
    cos_a = 1.0 if cos_a > 1.0 else cos_a
    sin_a = math.sqrt(1.0 - cos_a * cos_a)
    k = px * ux + py * uy + pz * uz
    vx, vy, vz = px - k * ux, py - k * uy, pz - k * uz
    vn = math.sqrt(vx * vx + vy * vy + vz * vz)
    if vn > 0.0:
        vx, vy, vz = vx / vn, vy / vn, vz / vn
    k = vx * ux + vy * uy + vz * uz
    vx, vy, vz = vx - k * ux, vy - k * uy, vz - k * uz
    n = math.sqrt(vx * vx + vy * vy + vz * vz)
    if n > 0.0:
        vx, vy, vz = vx / n, vy / n, vz / n
    if vn < 1e-9:
        alt = reject1((0.0, 0.0, 1.0), (ux, uy, uz))
        if math.sqrt(dot1(alt, alt)) < 1e-6:
            alt = reject1((0.0, -1.0, 0.0), (ux, uy, uz))
        (vx, vy, vz), _ = _unit1(alt)
    ex = sx + a_len * (cos_a * ux + sin_a * vx)
    ey = sy + a_len * (cos_a * uy + sin_a * vy)
    ez = sz + a_len * (cos_a * uz + sin_a * vz)
    wx, wy, wz = sx + d * ux, sy + d * uy, sz + d * uz
    # g_upper = _min_rotation1(upper_dir0, (elbow - s0) / a_len)
    ax, ay, az = upper_dir0
    bx, by, bz = (ex - sx) / a_len, (ey - sy) / a_len, (ez - sz) / a_len
    w = 1.0 + (0.0 + ax * bx + ay * by + az * bz)
    if w < 1e-12:
        uw, ux, uy, uz = _min_rotation1(upper_dir0, (bx, by, bz))
    else:
        cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
        n = math.sqrt(w * w + cx * cx + cy * cy + cz * cz)
        uw, ux, uy, uz = w / n, cx / n, cy / n, cz / n
    # lower_dir1 = _unit1(wrist - elbow)
    ax, ay, az = wx - ex, wy - ey, wz - ez
    n = math.sqrt(ax * ax + ay * ay + az * az)
    dd = n if n > 0.0 else 1.0
    bx, by, bz = ax / dd, ay / dd, az / dd
    # rotate1(g_upper, lower_dir0)
    lx, ly, lz = lower_dir0
    cx, cy, cz = uy * lz - uz * ly, uz * lx - ux * lz, ux * ly - uy * lx
    t0, t1, t2 = 2.0 * cx, 2.0 * cy, 2.0 * cz
    cx, cy, cz = uy * t2 - uz * t1, uz * t0 - ux * t2, ux * t1 - uy * t0
    ax, ay, az = lx + uw * t0 + cx, ly + uw * t1 + cy, lz + uw * t2 + cz
    # _min_rotation1(rotated, lower_dir1) · g_upper
    w = 1.0 + (0.0 + ax * bx + ay * by + az * bz)
    if w < 1e-12:
        mw, mx, my, mz = _min_rotation1((ax, ay, az), (bx, by, bz))
    else:
        cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
        n = math.sqrt(w * w + cx * cx + cy * cy + cz * cz)
        mw, mx, my, mz = w / n, cx / n, cy / n, cz / n
    g_lower = (mw * uw - mx * ux - my * uy - mz * uz, mw * ux + mx * uw + my * uz - mz * uy,
               mw * uy - mx * uz + my * uw + mz * ux, mw * uz + mx * uy - my * ux + mz * uw)
    return (uw, ux, uy, uz), g_lower, (ex, ey, ez), (wx, wy, wz), clamped
