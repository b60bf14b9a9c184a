"""Unit quaternions and the palm-facing encoding (spec §3.3, §4.2).

Conventions (spec §3.3):

* Component order ``(w, x, y, z)``; arrays are batch first, shape ``(..., 4)``.
* Rotations act on column vectors in the body frame (metres, +Y up, +Z forward,
  +X = the character's left; right-handed), right-hand rule about each axis.
* Hamilton product: ``rotate(multiply(a, b), v) == rotate(a, rotate(b, v))``.
* Canonical form: ``w >= 0`` (``q`` and ``-q`` are the same rotation). When ``w == 0``
  exactly, the first non-zero of ``(x, y, z)`` is made positive so that the canonical
  form is still unique.

Palm encoding (spec §4.2): the stored dims ``(w_qx, w_qy, w_qz)`` are the vector part of
the canonical quaternion of the hand's global (body-frame) orientation. The hand-local
frame is +Y fingers (wrist -> middle-finger base), +Z palm normal (out of the palm),
+X = Y × Z, which points toward the thumb on the right hand and away from it on the
left hand. The stored value of the left hand is the sagittal mirror of its physical
quaternion: ``physical_l = mirror_sagittal(stored_l)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .ieee import (
    _SAFE_HIGH,
    _SAFE_LOW,
    ordered_norm,
    ordered_norm1,
    ordered_scale_to,
    ordered_scale_to1,
    ordered_sum,
    ordered_unit,
    ordered_unit1,
)

__all__ = [
    "CLAMP_TARGET_FACTOR",
    "CONJUGATE_SIGNS",
    "HAMILTON_TABLE",
    "IDENTITY",
    "PALM_CLAMP",
    "PALM_CLAMP_TARGET",
    "PALM_HEMISPHERE",
    "ZERO_NORM_EPS",
    "Mat3",
    "PalmDirections",
    "Quat",
    "Vec3",
    "as_quaternion",
    "as_vec1",
    "canonicalize",
    "canonicalize1",
    "canonicalize_unchecked",
    "clamp_target",
    "conjugate",
    "conjugate_unchecked",
    "cross1",
    "cross_unchecked",
    "dot1",
    "from_axis_angle",
    "from_matrix",
    "from_matrix1",
    "from_matrix_unchecked",
    "mirror_sagittal",
    "multiply",
    "multiply1",
    "multiply_unchecked",
    "norm1",
    "normalize",
    "palm_decode",
    "palm_directions",
    "palm_encode",
    "palm_encode1",
    "palm_encode_unchecked",
    "palm_from_axes1",
    "palm_from_axes_unchecked",
    "palm_from_directions",
    "reconstruct_w",
    "reconstruct_w1",
    "reconstruct_w_unchecked",
    "reject1",
    "rotate",
    "rotate1",
    "rotate_unchecked",
    "sub1",
    "to_axis_angle",
    "to_frame1",
    "to_matrix",
    "to_matrix1",
    "unit1",
]

Side = Literal["l", "r"]
F64 = NDArray[np.float64]

#: The identity rotation ``(1, 0, 0, 0)``.
IDENTITY: F64 = np.array([1.0, 0.0, 0.0, 0.0])
#: Largest stored vector-part length (spec §4.2 SHOULD: clamp slightly below 1).
PALM_CLAMP = 0.98
#: Spec §3.3 clamp arithmetic: a vector part longer than the limit ``L`` is scaled to the
#: target ``T = L · (1 − 2⁻⁴⁹)`` (one rounded product), not to ``L`` itself: ``v · (T / |v|)``
#: is within 7 units of 2⁻⁵³ (relative) of ``T`` when measured with §1.5's norm, so its length
#: is never above ``L``, whereas ``v · (L / |v|)`` is above it for about 19 % of palms.
CLAMP_TARGET_FACTOR = 1.0 - 2.0**-49


def clamp_target(limit: float) -> float:
    """The length ``T = limit · (1 − 2⁻⁴⁹)`` a clamped vector part is scaled to (spec §3.3)."""
    return limit * CLAMP_TARGET_FACTOR


#: ``clamp_target(0.98) = 0.98 − 2⁻⁴⁹`` exactly: ``0.9799999999999982`` (``0x1.f5c28f5c28f4cp-1``).
PALM_CLAMP_TARGET = clamp_target(PALM_CLAMP)
#: Hemisphere of the stored palm vector part in the clamp band: the default's axis
#: ``(1, 0, 1)/√2`` (spec §3.3, §4.2).
PALM_HEMISPHERE: NDArray[np.float64] = np.array([1.0, 0.0, 1.0]) / np.sqrt(2.0)
#: Spec §6.5 rule 4: a vector an op *derives* from another (an orthogonalized part) is
#: degenerate (``usage.zero_norm``) when its length is at most this times the length of the
#: vector it came from; a vector the caller gives is zero only when it is exactly 0.
ZERO_NORM_EPS = 1e-12


def _as_array(values: ArrayLike, k: int, what: str) -> F64:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != k:
        raise UsageError("usage.shape", f"{what} must have shape (..., {k}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise UsageError("usage.not_finite", f"{what} contains NaN or infinity")
    return arr


def _check_side(side: str) -> None:
    if side not in ("l", "r"):
        raise UsageError("usage.bad_option", f"side must be 'l' or 'r', not {side!r}")


def _unit(vectors: F64, what: str, of: F64 | None = None) -> F64:
    """``v / |v|`` (spec §1.5). Spec §6.5 rule 4: a vector the caller gives (``of`` None)
    is zero only when every component is exactly 0, so 5e-324 normalizes (scale-free); a
    derived one is degenerate at ``|v| <= ZERO_NORM_EPS · of``."""
    norm = ordered_norm(vectors)  # spec §1.5: the stated order, no BLAS
    zero = norm == 0.0 if of is None else norm <= ZERO_NORM_EPS * of
    if np.any(zero):
        raise UsageError("usage.zero_norm", f"{what} has zero length")
    return ordered_unit(vectors)


# -- unchecked kernels -------------------------------------------------------------------
# The one implementation of the Hamilton product, conjugate, cross product and rotation:
# the public functions above validate once and call these; hot paths that validated
# their inputs already (consumers, per frame) call them directly.
# Tiny arrays are dominated by numpy's per-call overhead, large ones by memory traffic:
# ``multiply_unchecked`` takes the 16 pairwise products in one broadcast and gathers them per
# component while the operands are small, and the per-component formula otherwise; both add
# the same terms in the same order, so they agree bit for bit (spec §1.5).

#: ``HAMILTON_TABLE[4·i + j, k]``: sign of ``a_i · b_j`` in component ``k`` of ``a · b``.
HAMILTON_TABLE: F64 = np.zeros((16, 4))
for _i, _j, _k, _sign in (
        (0, 0, 0, 1), (1, 1, 0, -1), (2, 2, 0, -1), (3, 3, 0, -1),
        (0, 1, 1, 1), (1, 0, 1, 1), (2, 3, 1, 1), (3, 2, 1, -1),
        (0, 2, 2, 1), (1, 3, 2, -1), (2, 0, 2, 1), (3, 1, 2, 1),
        (0, 3, 3, 1), (1, 2, 3, 1), (2, 1, 3, -1), (3, 0, 3, 1)):
    HAMILTON_TABLE[4 * _i + _j, _k] = _sign
#: ``_HAMILTON_TERMS[k]``: the 4 products ``4·i + j`` of component ``k``, in the order of the
#: per-component formula of :func:`multiply_unchecked`, and their signs.
_HAMILTON_TERMS = np.array([[0, 5, 10, 15], [1, 4, 11, 14], [2, 7, 8, 13], [3, 6, 9, 12]])
_HAMILTON_SIGNS = np.array([[1.0, -1.0, -1.0, -1.0], [1.0, 1.0, 1.0, -1.0],
                            [1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]])
#: Most quaternions per operand for the matrix-product form of ``multiply_unchecked`` (measured
#: crossover about 400); above it the per-component form is faster.
_HAMILTON_SMALL = 256
CONJUGATE_SIGNS: F64 = np.array([1.0, -1.0, -1.0, -1.0])
_YZX = np.array([1, 2, 0])
_ZXY = np.array([2, 0, 1])


def multiply_unchecked(a: F64, b: F64) -> F64:
    """Hamilton product ``a · b`` of float64 ``(..., 4)`` arrays, no validation."""
    if max(a.size, b.size) <= 4 * _HAMILTON_SMALL:
        prod = (a[..., :, None] * b[..., None, :]).reshape((*np.broadcast_shapes(a.shape, b.shape)[:-1], 16))
        terms = prod[..., _HAMILTON_TERMS] * _HAMILTON_SIGNS  # (..., 4 components, 4 terms)
        # the per-component formula's additions, in its order (spec §1.5): no BLAS
        out: F64 = ((terms[..., 0] + terms[..., 1]) + terms[..., 2]) + terms[..., 3]
        return out
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def conjugate_unchecked(q: F64) -> F64:
    """``(w, -x, -y, -z)`` of a float64 ``(..., 4)`` array, no validation."""
    out: F64 = q * CONJUGATE_SIGNS
    return out


def cross_unchecked(a: F64, b: F64) -> F64:
    """Cross product of float64 ``(..., 3)`` arrays, no validation."""
    # same operations, in the same order, as np.cross on (..., 3), without its overhead
    out: F64 = a[..., _YZX] * b[..., _ZXY] - a[..., _ZXY] * b[..., _YZX]
    return out


def rotate_unchecked(q: F64, v: F64) -> F64:
    """Rotate float64 vectors ``(..., 3)`` by unit quaternions ``(..., 4)``, no validation."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross_unchecked(u, v)
    out: F64 = v + w * t + cross_unchecked(u, t)
    return out




def as_quaternion(q: ArrayLike) -> F64:
    """``q`` as a finite float64 array of shape ``(..., 4)``; raises ``usage.shape`` /
    ``usage.not_finite``."""
    return _as_array(q, 4, "quaternion")


def normalize(q: ArrayLike) -> F64:
    """``q / |q|`` for shape ``(..., 4)``; a zero-norm quaternion raises ``usage.zero_norm``."""
    return _unit(as_quaternion(q), "quaternion")


def canonicalize(q: ArrayLike) -> F64:
    """The canonical unit form of ``q`` (spec §3.3): normalized, ``w >= 0``.

    Ties at ``w == 0`` are broken by making the first non-zero of ``(x, y, z)``
    positive, so ``canonicalize(q) == canonicalize(-q)`` for every ``q``.
    Zero-norm input raises ``usage.zero_norm``.
    """
    return canonicalize_unchecked(normalize(q))


def canonicalize_unchecked(q: F64) -> F64:
    """:func:`canonicalize` of a finite float64 ``(..., 4)`` array with no zero-norm
    quaternion, no validation."""
    unit = ordered_unit(q)  # spec §1.5, §3.3
    # First non-zero component decides the sign (w first): lexicographic sign rule.
    w, x, y, z = unit[..., 0], unit[..., 1], unit[..., 2], unit[..., 3]
    lead = np.where(w != 0.0, w, np.where(x != 0.0, x, np.where(y != 0.0, y, z)))
    out: F64 = np.where((lead < 0.0)[..., None], -unit, unit)
    return out


def multiply(a: ArrayLike, b: ArrayLike) -> F64:
    """Hamilton product ``a · b`` of shape-broadcast ``(..., 4)`` arrays (apply b, then a)."""
    qa, qb = np.broadcast_arrays(as_quaternion(a), as_quaternion(b))
    return multiply_unchecked(qa, qb)


def conjugate(q: ArrayLike) -> F64:
    """``(w, -x, -y, -z)``: the inverse rotation for a unit quaternion."""
    return conjugate_unchecked(as_quaternion(q))


def rotate(q: ArrayLike, v: ArrayLike) -> F64:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)`` (broadcast)."""
    return rotate_unchecked(as_quaternion(q), _as_array(v, 3, "vector"))


def to_matrix(q: ArrayLike) -> F64:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)`` (normalized first)."""
    w, x, y, z = np.moveaxis(normalize(q), -1, 0)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def from_matrix(m: ArrayLike) -> F64:
    """Canonical quaternions ``(..., 4)`` of rotation matrices ``(..., 3, 3)``.

    Uses the numerically stable branch per matrix (largest of ``w, x, y, z``); the input
    is assumed orthonormal with determinant +1.
    """
    mat = np.asarray(m, dtype=np.float64)
    if mat.ndim < 2 or mat.shape[-2:] != (3, 3):
        raise UsageError("usage.shape", f"matrix must have shape (..., 3, 3), got {mat.shape}")
    if not np.isfinite(mat).all():
        raise UsageError("usage.not_finite", "matrix contains NaN or infinity")
    return from_matrix_unchecked(mat)


def from_matrix_unchecked(mat: F64) -> F64:
    """:func:`from_matrix` of a finite float64 ``(..., 3, 3)`` array, no validation."""
    m00, m11, m22 = mat[..., 0, 0], mat[..., 1, 1], mat[..., 2, 2]
    # 4·(w², x², y², z²) from the diagonal; pick the largest for stability.
    sq = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22,
                   1 - m00 + m11 - m22, 1 - m00 - m11 + m22], axis=-1)
    branch = np.argmax(sq, axis=-1)
    big = np.sqrt(np.maximum(np.take_along_axis(sq, branch[..., None], axis=-1)[..., 0], 0.0))
    d21 = mat[..., 2, 1] - mat[..., 1, 2]
    d02 = mat[..., 0, 2] - mat[..., 2, 0]
    d10 = mat[..., 1, 0] - mat[..., 0, 1]
    s01 = mat[..., 0, 1] + mat[..., 1, 0]
    s02 = mat[..., 0, 2] + mat[..., 2, 0]
    s12 = mat[..., 1, 2] + mat[..., 2, 1]
    cand = np.stack([
        np.stack([big * big, d21, d02, d10], axis=-1),
        np.stack([d21, big * big, s01, s02], axis=-1),
        np.stack([d02, s01, big * big, s12], axis=-1),
        np.stack([d10, s02, s12, big * big], axis=-1),
    ], axis=-2)
    q = np.take_along_axis(cand, branch[..., None, None], axis=-2)[..., 0, :]
    return canonicalize_unchecked(q)


def from_axis_angle(axis: ArrayLike, angle_rad: ArrayLike) -> F64:
    """Quaternion ``(..., 4)`` of a rotation by ``angle_rad`` (radians, right-hand rule)
    about ``axis (..., 3)`` (normalized here; zero length raises ``usage.zero_norm``)."""
    unit = _unit(_as_array(axis, 3, "axis"), "axis")
    half = 0.5 * np.asarray(angle_rad, dtype=np.float64)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * unit], axis=-1)


def to_axis_angle(q: ArrayLike) -> tuple[F64, F64]:
    """``(axis (..., 3), angle (...,) radians in [0, π])`` of the canonical form of ``q``.

    The identity gives axis ``(1, 0, 0)`` and angle 0.
    """
    quat = canonicalize(q)
    vec = quat[..., 1:]
    # pre-scale by the largest component so tiny angles do not underflow in the norm
    big = np.max(np.abs(vec), axis=-1, keepdims=True)
    scaled = vec / np.where(big > 0.0, big, 1.0)
    scaled_norm = ordered_norm(scaled)[..., None]
    sin_half = (big * scaled_norm)[..., 0]
    angle = 2.0 * np.arctan2(sin_half, quat[..., 0])
    axis = np.where(big > 0.0, scaled / np.where(big > 0.0, scaled_norm, 1.0),
                    np.array([1.0, 0.0, 0.0]))
    return axis, angle


_MIRROR_SIGNS = np.array([1.0, 1.0, -1.0, -1.0])


def mirror_sagittal(q: ArrayLike) -> F64:
    """Reflect a rotation across the sagittal plane (spec §3.2): ``(w, x, -y, -z)``.

    For ``M = diag(-1, 1, 1)`` the mirrored rotation matrix is ``M·R·M``. An involution.
    """
    out: F64 = as_quaternion(q) * _MIRROR_SIGNS
    return out


def reconstruct_w(v: ArrayLike, *, clamp: float | None = PALM_CLAMP) -> tuple[F64, NDArray[np.bool_]]:
    """Unit quaternions ``(..., 4)`` from stored vector parts ``v (..., 3)`` (spec §3.3, §4.2).

    MUST: when ``|v| > 1`` the vector part is rescaled, ``v / |v|`` (§1.5). SHOULD: when
    ``|v| > clamp`` (default 0.98) it is clamped instead, ``v · (T / |v|)`` with the target
    ``T = clamp · (1 − 2⁻⁴⁹)`` (:func:`clamp_target`), so its length never exceeds ``clamp``;
    ``clamp=None`` applies only the MUST. One scaling of the received ``v`` in either case.
    Then ``w = sqrt(max(0, 1 − ((x·x + y·y) + z·z))) >= 0``. Returns the quaternion and a
    boolean ``(...,)`` mask of the entries whose vector part was rescaled or clamped (the
    report: never silent).
    """
    vec = _as_array(v, 3, "vector part")
    if clamp is not None and not 0.0 <= float(clamp) <= 1.0:  # spec §6.5 rule 3: clamp in [0, 1]
        raise UsageError("usage.out_of_range", f"clamp must be in [0, 1], not {clamp!r}")
    return reconstruct_w_unchecked(vec, clamp=None if clamp is None else float(clamp))


def reconstruct_w_unchecked(vec: F64, *, clamp: float | None = PALM_CLAMP) -> tuple[F64, NDArray[np.bool_]]:
    """:func:`reconstruct_w` of finite float64 vector parts ``(..., 3)`` with ``clamp`` in
    [0, 1] or None, no validation."""
    norm = ordered_norm(vec)  # spec §3.3: the decision is taken on the stated arithmetic
    if clamp is None:  # the MUST rescale: v / |v|, §1.5's normalized vector
        changed = norm > 1.0
        vec = np.where(changed[..., None], ordered_unit(vec), vec)
    else:  # the SHOULD clamp: v · (T / |v|)
        changed = norm > clamp
        vec = ordered_scale_to(vec, changed, clamp_target(clamp))
    w = np.sqrt(np.maximum(0.0, 1.0 - ordered_sum(vec * vec)))  # spec §1.5: squares in order
    return np.concatenate([w[..., None], vec], axis=-1), changed


def reconstruct_w1(v: Vec3, *, clamp: float | None = PALM_CLAMP) -> tuple[Quat, bool]:
    """:func:`reconstruct_w_unchecked` of one finite stored vector part (the same operations)."""
    x, y, z = v
    norm = ordered_norm1(v)
    if clamp is None:
        changed = norm > 1.0
        if changed:
            x, y, z = ordered_unit1((x, y, z))
    else:
        changed = norm > clamp
        if changed:
            x, y, z = ordered_scale_to1((x, y, z), clamp * CLAMP_TARGET_FACTOR)
    w = math.sqrt(max(0.0, 1.0 - (x * x + y * y + z * z)))
    return (w, x, y, z), changed


def palm_encode(
    q: ArrayLike, *, side: Side, clamp: float | None = PALM_CLAMP
) -> tuple[F64, NDArray[np.bool_]]:
    """Stored palm dims ``(w_qx, w_qy, w_qz)`` ``(..., 3)`` from physical body-frame hand
    quaternions ``(..., 4)`` (producer side, spec §4.2).

    The left hand is mirrored first (``stored = mirror_sagittal(physical)``), then the
    quaternion is canonicalized (``w >= 0``) and its vector part clamped to length
    ``clamp`` (0.98). Returns the vector parts and a ``(...,)`` mask of clamped entries.
    ``q`` and ``-q`` give the same stored value; ``palm_encode(mirror_sagittal(q),
    side="l") == palm_encode(q, side="r")``.
    """
    _check_side(side)
    quat = as_quaternion(q)
    _unit(quat, "quaternion")  # raises usage.zero_norm, as canonicalize would
    limit = 1.0 if clamp is None else float(clamp)
    if not 0.0 < limit <= 1.0:
        raise UsageError("usage.bad_option", f"clamp must be in (0, 1], not {clamp!r}")
    return palm_encode_unchecked(quat, side=side, limit=limit)


def palm_encode_unchecked(q: F64, *, side: Side, limit: float = PALM_CLAMP) -> tuple[F64, NDArray[np.bool_]]:
    """:func:`palm_encode` of finite non-zero float64 quaternions ``(..., 4)`` with the
    clamp ``limit`` in (0, 1], no validation."""
    quat = q * _MIRROR_SIGNS if side == "l" else q
    vec = canonicalize_unchecked(quat)[..., 1:]
    norm = ordered_norm(vec)
    # spec §3.3 hemisphere rule: in the clamp band (|v| > clamp, i.e. w near 0) the sign of
    # q is chosen so that v points into the default's hemisphere, v·h >= 0; so w = ±1e-12
    # at the hanging default store the same v (no 46° flip at the w = 0 discontinuity)
    # and ``v·h < 0`` is decided as ``x + z < 0`` (h ∝ (1, 0, 1)): one IEEE addition, whose
    # sign is the exact sum's, never a dot product whose rounding depends on the BLAS kernel
    clamped = norm > limit
    flip = clamped & (vec[..., 0] + vec[..., 2] < 0.0)
    vec = np.where(flip[..., None], -vec, vec)
    # spec §3.3 clamp: v · s with s = T / |v|, T = limit · (1 − 2⁻⁴⁹), so |v| ≤ limit after it
    out = ordered_scale_to(vec, clamped, clamp_target(limit))
    return out, clamped


def palm_decode(
    v: ArrayLike, *, side: Side, clamp: float | None = PALM_CLAMP
) -> tuple[F64, NDArray[np.bool_]]:
    """Physical body-frame hand quaternions ``(..., 4)`` (``w >= 0``) from stored palm
    dims ``(..., 3)`` (consumer side, spec §4.2): :func:`reconstruct_w`, then the
    sagittal mirror for the left hand. Returns the mask of rescaled/clamped entries."""
    _check_side(side)
    quat, changed = reconstruct_w(v, clamp=clamp)
    if side == "l":
        quat = mirror_sagittal(quat)
    return quat, changed


@dataclass(frozen=True)
class PalmDirections:
    """Unit body-frame directions ``(..., 3)`` of one hand (spec §3.3)."""

    fingers: F64  # wrist -> middle-finger base
    palm_normal: F64  # out of the palm
    thumb: F64  # toward the thumb


def palm_directions(q: ArrayLike, *, side: Side) -> PalmDirections:
    """Fingers, palm normal and thumb directions of physical hand quaternions ``(..., 4)``.

    ``fingers = R·e_y``, ``palm_normal = R·e_z``; ``thumb = R·e_x`` for the right hand
    and ``-R·e_x`` for the left hand (its local +X points away from the thumb).
    """
    _check_side(side)
    mat = to_matrix(q)
    thumb_sign = 1.0 if side == "r" else -1.0
    return PalmDirections(fingers=mat[..., :, 1], palm_normal=mat[..., :, 2],
                          thumb=thumb_sign * mat[..., :, 0])


def palm_from_directions(fingers: ArrayLike, palm_normal: ArrayLike, *, side: Side) -> F64:
    """Physical hand quaternions ``(..., 4)`` (canonical) from body-frame directions.

    ``fingers`` is kept exactly (normalized); ``palm_normal`` is orthogonalized against it
    (Gram-Schmidt); local +X = Y × Z. Both sides use the same construction — the side
    only decides which way the thumb points (see :func:`palm_directions`) — so ``side``
    is validated for symmetry with it. Zero or parallel inputs raise ``usage.zero_norm``.
    """
    _check_side(side)
    y = _unit(_as_array(fingers, 3, "fingers"), "fingers")
    normal = _as_array(palm_normal, 3, "palm_normal")
    _unit(normal, "palm_normal")  # a zero palm normal is usage.zero_norm whatever the fingers
    z = _unit(normal - np.sum(normal * y, axis=-1, keepdims=True) * y,
              "palm_normal orthogonal to fingers", of=ordered_norm(normal))
    return palm_from_axes_unchecked(y, z)


def palm_from_axes_unchecked(y: F64, z: F64) -> F64:
    """:func:`palm_from_directions` of the unit fingers axis ``y`` and the unit palm
    normal ``z`` orthogonal to it (float64 ``(..., 3)``), no validation."""
    return from_matrix_unchecked(np.stack([cross_unchecked(y, z), y, z], axis=-1))


# -- one value in Python floats ----------------------------------------------------------
# The kernels above on 3- and 4-tuples, for single-frame hot paths (the decoder's and the
# landmark encoder's B = 1 paths) where numpy's per-call overhead, not arithmetic, is the
# cost. Same formulas and order of operations as the batch kernels; they agree to float
# round-off (tests/test_scalar_kernels.py). ``Mat3`` is a tuple of rows, ``m[i][j]`` as numpy's.
# Sums start from +0.0 as numpy's reductions do (``np.sum``, ``einsum``, ``matmul``), so even
# the sign of a zero result is the same: it decides atan2 at ±π on exactly degenerate input.
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Mat3 = tuple[Vec3, Vec3, Vec3]



def as_vec1(v: ArrayLike) -> Vec3:
    """A 3-vector (a shared batch constant) as a 3-tuple of Python floats."""
    x, y, z = np.asarray(v, dtype=np.float64).reshape(3).tolist()
    return (x, y, z)


def cross1(a: Vec3, b: Vec3) -> Vec3:
    """:func:`cross_unchecked` of one pair of 3-tuples."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def dot1(a: Vec3, b: Vec3) -> float:
    """Dot product of two 3-tuples (``(a * b).sum(-1)``: from +0.0)."""
    return 0.0 + a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def sub1(a: Vec3, b: Vec3) -> Vec3:
    """``a − b`` of two 3-tuples."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def norm1(v: Vec3) -> float:
    """Length of a 3-tuple (``np.linalg.norm``'s arithmetic)."""
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def unit1(v: Vec3, eps: float) -> Vec3:
    """``v / |v|``, NaN where ``|v| <= eps`` (the producers' rule for a missing direction)."""
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return (v[0] / n, v[1] / n, v[2] / n) if n > eps else (math.nan, math.nan, math.nan)


def reject1(v: Vec3, u: Vec3) -> Vec3:
    """``v − (v·u)·u``: ``v`` without its component along the unit ``u``."""
    k = 0.0 + v[0] * u[0] + v[1] * u[1] + v[2] * u[2]
    return (v[0] - k * u[0], v[1] - k * u[1], v[2] - k * u[2])


def to_frame1(axes: tuple[Vec3, Vec3, Vec3], v: Vec3) -> Vec3:
    """``Rᵀ·v`` for the rotation ``R`` whose columns are ``axes`` (a frame's X, Y, Z in world
    coordinates): ``v`` in that frame (``einsum("bji,bj->bi", R, v)``)."""
    (x0, x1, x2), (y0, y1, y2), (z0, z1, z2) = axes
    v0, v1, v2 = v
    return (0.0 + x0 * v0 + x1 * v1 + x2 * v2, 0.0 + y0 * v0 + y1 * v1 + y2 * v2, 0.0 + z0 * v0 + z1 * v1 + z2 * v2)


def multiply1(a: Quat, b: Quat) -> Quat:
    """:func:`multiply_unchecked` (Hamilton product ``a · b``) of one pair of 4-tuples."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


def rotate1(q: Quat, v: Vec3) -> Vec3:
    """:func:`rotate_unchecked` of one vector by one unit quaternion."""
    w, u = q[0], (q[1], q[2], q[3])
    c = cross1(u, v)
    t = (2.0 * c[0], 2.0 * c[1], 2.0 * c[2])
    c2 = cross1(u, t)
    return (v[0] + w * t[0] + c2[0], v[1] + w * t[1] + c2[1], v[2] + w * t[2] + c2[2])


def to_matrix1(q: Quat) -> Mat3:
    """:func:`to_matrix` of one finite non-zero quaternion (normalized first)."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    return ((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
            (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
            (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)))


def canonicalize1(q: Quat) -> Quat:
    """:func:`canonicalize_unchecked` of one finite non-zero quaternion (spec §3.3)."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if not _SAFE_LOW <= n <= _SAFE_HIGH:  # squares out of range: normalize the scaled q (spec §1.5)
        e = math.frexp(max(abs(c) for c in q))[1]
        q = (math.ldexp(q[0], -e), math.ldexp(q[1], -e), math.ldexp(q[2], -e), math.ldexp(q[3], -e))
        n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    lead = w if w != 0.0 else (x if x != 0.0 else (y if y != 0.0 else z))
    return (-w, -x, -y, -z) if lead < 0.0 else (w, x, y, z)


def from_matrix1(m: Mat3) -> Quat:
    """:func:`from_matrix_unchecked` of one finite rotation matrix (rows): the stable
    branch of the largest of ``w, x, y, z`` (the first on ties, as ``np.argmax``)."""
    m00, m11, m22 = m[0][0], m[1][1], m[2][2]
    sq = (1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22)
    branch = 0
    for k in (1, 2, 3):
        if sq[k] > sq[branch]:
            branch = k
    big = math.sqrt(max(sq[branch], 0.0))
    b2 = big * big
    d21, d02, d10 = m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1]
    q: Quat
    if branch == 0:
        q = (b2, d21, d02, d10)
    elif branch == 1:
        q = (d21, b2, m[0][1] + m[1][0], m[0][2] + m[2][0])
    elif branch == 2:
        q = (d02, m[0][1] + m[1][0], b2, m[1][2] + m[2][1])
    else:
        q = (d10, m[0][2] + m[2][0], m[1][2] + m[2][1], b2)
    return canonicalize1(q)


def palm_from_axes1(y: Vec3, z: Vec3) -> Quat:
    """:func:`palm_from_axes_unchecked` of one unit fingers axis and unit palm normal."""
    x = cross1(y, z)
    return from_matrix1(((x[0], y[0], z[0]), (x[1], y[1], z[1]), (x[2], y[2], z[2])))


def palm_encode1(q: Quat, *, side: Side, limit: float = PALM_CLAMP) -> tuple[Vec3, bool]:
    """:func:`palm_encode_unchecked` of one finite non-zero quaternion: the stored vector
    part and whether it was clamped (spec §3.3 hemisphere rule, §4.2)."""
    _, x, y, z = canonicalize1((q[0], q[1], -q[2], -q[3]) if side == "l" else q)
    norm = math.sqrt(x * x + y * y + z * z)
    if not _SAFE_LOW <= norm <= _SAFE_HIGH:  # a unit quaternion's part: only underflow (spec §1.5)
        norm = ordered_norm1((x, y, z))
    clamped = norm > limit
    if clamped and x + z < 0.0:  # spec §3.3: v·h < 0 decided as x + z < 0
        x, y, z = -x, -y, -z
    if not clamped:
        return (x, y, z), False
    # spec §3.3 clamp: v · s with s = T / |v|, T = limit · (1 − 2⁻⁴⁹)
    return ordered_scale_to1((x, y, z), limit * CLAMP_TARGET_FACTOR), True
