"""Head and body Euler angles (spec §4.4, §4.5).

Order (spec §4.4): ``q = q_Y(yaw) · q_X(pitch) · q_Z(roll)`` — intrinsic Y, X', Z'' in
the body frame (+X = the character's left, +Y up, +Z forward), right-hand rule about
each axis, angles in degrees. Hence yaw+ turns the face (+Z) toward +X (the character's
left), pitch+ turns the face down (chin down), roll+ tilts the top of the head (+Y)
toward -X (the character's right).

Inverse (standard YXZ decomposition of ``R = R_Y R_X R_Z``)::

    pitch = atan2(-R[1,2], hypot(R[1,0], R[1,1]))        in [-90, 90]
    yaw   = atan2(R[0,2], R[2,2])                         in (-180, 180]
    roll  = atan2(R[1,0], R[1,1])                         in (-180, 180]

Gimbal rule: when ``cos(pitch) = hypot(R[1,0], R[1,1]) <= GIMBAL_EPS`` the pitch is
±90, ``roll = 0`` and ``yaw = atan2(sign(pitch) · R[0,1], R[0,0])`` carries the combined
angle.

Stored head/body dims are normalized: angle = n · max (h_yaw 90, h_pitch 60, h_roll 45,
b_yaw 45, b_pitch 30, b_roll 30 degrees, from the registry). Encoding (``*_to_quat``)
takes normalized values and raises ``usage.out_of_range`` outside [-1, 1]; decoding
(``quat_to_*``) clips to [-1, 1] and reports the entries with some ``|n| > 1 + 1e-9``
(``CLAMP_REPORT_TOL``; smaller excesses are float round-off at the boundary).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .quaternion import (
    Mat3,
    Vec3,
    as_quaternion,
    as_vec1,
    canonicalize,
    from_axis_angle,
    multiply,
    to_axis_angle,
    to_matrix,
)
from .registry import REGISTRY, SPINE_SHARES

__all__ = [
    "BODY_MAX_DEG",
    "CLAMP_REPORT_TOL",
    "GIMBAL_EPS",
    "HEAD_MAX_DEG",
    "body_to_quat",
    "euler_to_quat",
    "head_to_quat",
    "matrix_to_body",
    "matrix_to_body1",
    "matrix_to_euler",
    "matrix_to_euler1",
    "matrix_to_head",
    "matrix_to_head1",
    "quat_to_body",
    "quat_to_euler",
    "quat_to_head",
    "spine_product",
    "spine_rotations",
]

F64 = NDArray[np.float64]

#: cos(pitch) at or below which the decomposition takes the gimbal branch (roll = 0).
GIMBAL_EPS = 1e-9
#: Decoded |n| up to 1 + this is float round-off: clipped to 1 but not reported as a clamp.
CLAMP_REPORT_TOL = 1e-9
#: (yaw, pitch, roll) maxima in degrees, from the registry rows.
HEAD_MAX_DEG: F64 = np.array([REGISTRY.by_id[i].row.max for i in ("h_yaw", "h_pitch", "h_roll")])
BODY_MAX_DEG: F64 = np.array([REGISTRY.by_id[i].row.max for i in ("b_yaw", "b_pitch", "b_roll")])


def _axis_quat(angle_deg: F64, axis: int) -> F64:
    half = np.radians(angle_deg) * 0.5
    out = np.zeros((*half.shape, 4))
    out[..., 0] = np.cos(half)
    out[..., axis] = np.sin(half)
    return out


def _finite(values: ArrayLike, what: str) -> F64:
    arr = np.asarray(values, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise UsageError("usage.not_finite", f"{what} contains NaN or infinity")
    return arr


def euler_to_quat(yaw: ArrayLike, pitch: ArrayLike, roll: ArrayLike) -> F64:
    """Canonical (``w >= 0``) quaternions ``(..., 4)`` of ``q_Y(yaw)·q_X(pitch)·q_Z(roll)``
    for broadcast arrays of angles in degrees (spec §4.4)."""
    y, p, r = np.broadcast_arrays(_finite(yaw, "yaw"), _finite(pitch, "pitch"),
                                  _finite(roll, "roll"))
    q = multiply(multiply(_axis_quat(y, 2), _axis_quat(p, 1)), _axis_quat(r, 3))
    return canonicalize(q)


def quat_to_euler(q: ArrayLike) -> tuple[F64, F64, F64]:
    """``(yaw, pitch, roll)`` in degrees, each ``(...,)``, of quaternions ``(..., 4)``
    (any sign, normalized here). Pitch in [-90, 90], yaw and roll in (-180, 180];
    at the gimbal (``|pitch| = 90``) roll is 0 (module docstring)."""
    return matrix_to_euler(to_matrix(as_quaternion(q)))


def matrix_to_euler(m: ArrayLike) -> tuple[F64, F64, F64]:
    """``(yaw, pitch, roll)`` in degrees of rotation matrices ``(..., 3, 3)`` (orthonormal,
    determinant +1; not checked), as :func:`quat_to_euler` (spec §4.4 inverse)."""
    m = np.asarray(m, dtype=np.float64)
    cos_pitch = np.hypot(m[..., 1, 0], m[..., 1, 1])
    pitch = np.arctan2(-m[..., 1, 2], cos_pitch)
    gimbal = cos_pitch <= GIMBAL_EPS
    sign = np.where(m[..., 1, 2] <= 0.0, 1.0, -1.0)  # sign(pitch) = sign(-R[1,2])
    yaw = np.where(gimbal, np.arctan2(sign * m[..., 0, 1], m[..., 0, 0]),
                   np.arctan2(m[..., 0, 2], m[..., 2, 2]))
    roll = np.where(gimbal, 0.0, np.arctan2(m[..., 1, 0], m[..., 1, 1]))
    pitch = np.where(gimbal, sign * (np.pi / 2), pitch)
    return np.degrees(yaw), np.degrees(pitch), np.degrees(roll)


def _normalized(n: ArrayLike, what: str) -> F64:
    arr = _finite(n, what)
    if arr.ndim == 0 or arr.shape[-1] != 3:
        raise UsageError("usage.shape", f"{what} must have shape (..., 3), got {arr.shape}")
    if (np.abs(arr) > 1.0).any():
        raise UsageError("usage.out_of_range", f"{what} has values outside [-1, 1]")
    return arr


def _to_quat(n: ArrayLike, maxima: F64, what: str) -> F64:
    angles = _normalized(n, what) * maxima
    return euler_to_quat(angles[..., 0], angles[..., 1], angles[..., 2])


def _from_quat(q: ArrayLike, maxima: F64) -> tuple[F64, NDArray[np.bool_]]:
    return _from_matrix(to_matrix(as_quaternion(q)), maxima)


def _from_matrix(m: ArrayLike, maxima: F64) -> tuple[F64, NDArray[np.bool_]]:
    n = np.stack(matrix_to_euler(m), axis=-1) / maxima
    clamped: NDArray[np.bool_] = np.asarray((np.abs(n) > 1.0 + CLAMP_REPORT_TOL).any(axis=-1))
    return np.clip(n, -1.0, 1.0), clamped


def head_to_quat(n: ArrayLike) -> F64:
    """Head rotation ``(..., 4)`` from normalized ``(h_yaw, h_pitch, h_roll)`` ``(..., 3)``
    in [-1, 1] (spec §4.4); outside raises ``usage.out_of_range``."""
    return _to_quat(n, HEAD_MAX_DEG, "head n")


def quat_to_head(q: ArrayLike) -> tuple[F64, NDArray[np.bool_]]:
    """Normalized ``(h_yaw, h_pitch, h_roll)`` ``(..., 3)`` of head rotations ``(..., 4)``,
    each component clamped to [-1, 1], and a ``(...,)`` mask of the clamped entries."""
    return _from_quat(q, HEAD_MAX_DEG)


def matrix_to_head(m: ArrayLike) -> tuple[F64, NDArray[np.bool_]]:
    """:func:`quat_to_head` of rotation matrices ``(..., 3, 3)`` (orthonormal, det +1)."""
    return _from_matrix(m, HEAD_MAX_DEG)


def body_to_quat(n: ArrayLike) -> F64:
    """Nominal whole-torso rotation ``(..., 4)`` from normalized ``(b_yaw, b_pitch,
    b_roll)`` ``(..., 3)`` (spec §4.5); see :func:`spine_rotations` for the per-joint split."""
    return _to_quat(n, BODY_MAX_DEG, "body n")


def quat_to_body(q: ArrayLike) -> tuple[F64, NDArray[np.bool_]]:
    """Normalized ``(b_yaw, b_pitch, b_roll)`` ``(..., 3)`` of torso rotations, clamped
    to [-1, 1], and a ``(...,)`` mask of the clamped entries."""
    return _from_quat(q, BODY_MAX_DEG)


def matrix_to_body(m: ArrayLike) -> tuple[F64, NDArray[np.bool_]]:
    """:func:`quat_to_body` of rotation matrices ``(..., 3, 3)`` (orthonormal, det +1)."""
    return _from_matrix(m, BODY_MAX_DEG)


def spine_rotations(
    n_body: ArrayLike,
    *,
    joints: Iterable[str] | None = None,
) -> dict[str, F64]:
    """Per-joint spine rotations (spec §4.5) from normalized ``(b_yaw, b_pitch, b_roll)``.

    ``joints``: the spine joints the avatar has (default: all of :data:`SPINE_SHARES`).
    Shares are renormalized over the present joints: ``s_j' = s_j / Σ_present s``.
    Joint ``j`` gets the fractional power ``Q^{s_j'}`` of the full rotation
    ``Q = body_to_quat(n)`` (same axis, angle × s_j'); the chain product
    ``q_1 · q_2 · … · q_k`` (:func:`spine_product`) is exactly ``Q``. Rotations use
    body-frame axes at rest (the consumer conjugates by each bone's bind orientation) and
    are returned in hips -> neck order.

    Unknown joint names or an empty set raise ``usage.bad_option``.
    """
    known = [j for j, _ in SPINE_SHARES]
    present = set(known if joints is None else joints)
    unknown = present.difference(known)
    if unknown:
        raise UsageError("usage.bad_option", f"unknown spine joints {sorted(unknown)}")
    if not present:
        raise UsageError("usage.bad_option", "no spine joint present")
    angles = _normalized(n_body, "body n") * BODY_MAX_DEG
    total = sum(s for j, s in SPINE_SHARES if j in present)
    # spec §4.5: fractional powers of the full rotation multiply back to it exactly
    axis, angle = to_axis_angle(euler_to_quat(angles[..., 0], angles[..., 1], angles[..., 2]))
    return {j: canonicalize(from_axis_angle(axis, angle * (s / total)))
            for j, s in SPINE_SHARES if j in present}


def spine_product(rotations: dict[str, F64]) -> F64:
    """The chain product ``q_1 · q_2 · … · q_k`` (hips -> neck, canonical) of
    :func:`spine_rotations` output: the torso rotation the joints produce together."""
    order = [j for j, _ in SPINE_SHARES if j in rotations]
    if not order:
        raise UsageError("usage.bad_option", "no spine joint present")
    total = rotations[order[0]]
    for j in order[1:]:
        total = multiply(total, rotations[j])
    return canonicalize(total)


# -- one matrix in Python floats (the single-frame encoder) --------------------------------
_HEAD_MAX1, _BODY_MAX1 = as_vec1(HEAD_MAX_DEG), as_vec1(BODY_MAX_DEG)


def matrix_to_euler1(m: Mat3) -> Vec3:
    """:func:`matrix_to_euler` of one rotation matrix (rows): ``(yaw, pitch, roll)`` degrees."""
    cos_pitch = math.hypot(m[1][0], m[1][1])
    if cos_pitch <= GIMBAL_EPS:  # the gimbal rule (module docstring)
        sign = 1.0 if m[1][2] <= 0.0 else -1.0
        return (math.degrees(math.atan2(sign * m[0][1], m[0][0])), math.degrees(sign * (math.pi / 2)), 0.0)
    return (math.degrees(math.atan2(m[0][2], m[2][2])), math.degrees(math.atan2(-m[1][2], cos_pitch)),
            math.degrees(math.atan2(m[1][0], m[1][1])))


def _from_matrix1(m: Mat3, maxima: Vec3) -> tuple[Vec3, bool]:
    yaw, pitch, roll = matrix_to_euler1(m)
    n = (yaw / maxima[0], pitch / maxima[1], roll / maxima[2])
    limit = 1.0 + CLAMP_REPORT_TOL
    clamped = abs(n[0]) > limit or abs(n[1]) > limit or abs(n[2]) > limit
    return (min(max(n[0], -1.0), 1.0), min(max(n[1], -1.0), 1.0), min(max(n[2], -1.0), 1.0)), clamped


def matrix_to_head1(m: Mat3) -> tuple[Vec3, bool]:
    """:func:`matrix_to_head` of one rotation matrix (rows): normalized and clamped."""
    return _from_matrix1(m, _HEAD_MAX1)


def matrix_to_body1(m: Mat3) -> tuple[Vec3, bool]:
    """:func:`matrix_to_body` of one rotation matrix (rows): normalized and clamped."""
    return _from_matrix1(m, _BODY_MAX1)
