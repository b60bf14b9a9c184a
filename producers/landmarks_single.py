"""One frame of MediaPipe Holistic landmarks -> pose vector in Python floats (spec §2.2–§4.5).

:func:`posewire.producers.landmarks.landmarks_to_vectors` calls :func:`encode1` for a batch
of one frame: a live source encodes one frame at a time, and there numpy's per-call
overhead on tiny arrays, not arithmetic, is the cost (the live budget: ≤ 100 µs per frame, benchmarks/README.md). It
is the batch path of :mod:`posewire.producers.landmarks` on 3-tuples: the same steps, the
same formulas in the same order, the same tables and thresholds (imported from there and
from the codec's scalar kernels, never restated), the same report, notes and tracking
states. ``tests/test_encoder_single_frame.py`` pins every dim and every report entry to
the batch path at 1e-9, over ground truth with and without noise and every missing part.

Rotations are kept as their three axes (the columns ``X, Y, Z`` in world coordinates,
spec §2.3); a point is NaN in every coordinate as soon as one is not finite, as after the
batch path's axis change (a product with NaN or infinity is NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from math import atan2, cos, sin, sqrt
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from posewire.codec.calibration import arm_to_normalized1
from posewire.codec.elbow import spread_angle1
from posewire.codec.euler import BODY_MAX_DEG, matrix_to_body1, matrix_to_euler1, matrix_to_head1
from posewire.codec.quaternion import (
    Mat3,
    Quat,
    Vec3,
    as_vec1,
    cross1,
    dot1,
    norm1,
    reject1,
    rotate1,
    sub1,
    to_frame1,
    to_matrix1,
    unit1,
)
from posewire.codec.registry import REGISTRY, TRACKING_PARTS
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.producers.filter import RotationFilter
from posewire.producers.hand import _FINGER_ROWS
from posewire.producers.hand_single import Points, hand_dims1, with_depth_gain1
from posewire.producers.landmarks import (
    _EPS,
    _EX,
    _EY,
    _EZ,
    _MIN_CROSS,
    _MIN_LENGTH,
    _SECANT_MIN_DENOM,
    _SECANT_STEPS,
    _SECANT_TOL,
    _STRAIGHT_ARM,
    _TRUNK_LENGTH,
    _TRUNK_SHARE,
    BODY_CLAMP_KEY,
    BODY_PLAUSIBLE,
    CAMERA_FALLBACK_ROTATION,
    FACE_POINTS,
    HEAD_CLAMP_KEY,
    HEAD_FIT_MIN,
    HEAD_FIT_SQUARINGS,
    HEAD_REFERENCE,
    HIPS_VISIBILITY,
    IMPLAUSIBLE_NOTE,
    MIRROR_MIN_SINE,
    MIRRORED_NOTE,
    PALM_CLAMP_KEY,
    POSE_POINTS,
    SWAP_DISTANCE_RATIO,
    SWAPPED_NOTE,
    TRUNK_MODEL,
    HolisticLandmarks,
    LandmarkCalibration,
    LandmarkReport,
    LandmarkResult,
)

__all__ = ["Samples1", "encode1", "prepare1", "samples1"]

Side = Literal["l", "r"]
Axes = tuple[Vec3, Vec3, Vec3]  # X, Y, Z: a rotation's columns in world coordinates

_NAN3: Vec3 = (math.nan, math.nan, math.nan)
_EX1, _EY1, _EZ1 = as_vec1(_EX), as_vec1(_EY), as_vec1(_EZ)
_CAMERA: Axes = (as_vec1(CAMERA_FALLBACK_ROTATION[:, 0]), as_vec1(CAMERA_FALLBACK_ROTATION[:, 1]),
                 as_vec1(CAMERA_FALLBACK_ROTATION[:, 2]))
_TRUNK_STILL = sum(float(length) for length, share in TRUNK_MODEL if share == 0.0)
_TRUNK_TURNING = tuple((float(length), float(share)) for length, share in TRUNK_MODEL if share != 0.0)
_PLAUSIBLE = as_vec1(BODY_PLAUSIBLE * BODY_MAX_DEG)
#: The pose sites used (POSE_POINTS) and the face-mesh points of the head frame, gathered at once.
_POSE_NAMES = tuple(POSE_POINTS)
_POSE_AT = np.array([POSE_POINTS[n] for n in _POSE_NAMES], dtype=np.intp)
_WRISTS_AT = np.array([POSE_POINTS["wrist_l"], POSE_POINTS["wrist_r"]], dtype=np.intp)
_HIPS_AT = np.array([POSE_POINTS["hip_l"], POSE_POINTS["hip_r"]], dtype=np.intp)
_FACE_AT = np.array([FACE_POINTS[k] for k in ("eye_outer_l", "eye_outer_r", "forehead", "chin")]
                    + list(HEAD_REFERENCE), dtype=np.intp)
_FIT_REF: list[Vec3] = [(float(x), float(y), float(z)) for x, y, z in HEAD_REFERENCE.values()]
_LOWER, _UPPER = LOWER.tolist(), UPPER.tolist()
_IDS = [d.id for d in REGISTRY.dimensions]
_BODY_COLS = [REGISTRY.index(i) for i in ("b_yaw", "b_pitch", "b_roll")]
_HEAD_COLS = [REGISTRY.index(i) for i in ("h_yaw", "h_pitch", "h_roll")]
_ARM_COLS = {s: [REGISTRY.index(f"a_{a}_{s}") for a in ("x", "y", "z", "spread")] for s in ("l", "r")}
_SPREAD_MAX = {s: REGISTRY.by_id[f"a_spread_{s}"].row.max for s in ("l", "r")}
_HAND_COLS = {s: [REGISTRY.index(f"w_q{a}_{s}") for a in "xyz"] + [REGISTRY.index(f"{r}_{s}") for r in _FINGER_ROWS]
              for s in ("l", "r")}


def _state(value: str, dtype: str) -> NDArray[np.str_]:
    out = np.array([value], dtype=dtype)
    out.flags.writeable = False
    return out


#: One frame's tracking states, shared read-only (the batch path's dtypes).
_STATES = {"tracked": _state("tracked", "<U7"), "lost": _state("lost", "<U7"),
           "not_estimated": _state("not_estimated", "<U13")}


# ---------------------------------------------------------------------------- geometry


def _mid(a: Vec3, b: Vec3) -> Vec3:
    return (0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]))


def _finite(v: Vec3) -> bool:
    return v[0] * 0.0 + v[1] * 0.0 + v[2] * 0.0 == 0.0


def _points(arr: NDArray[np.float64], x_sign: float) -> list[Vec3]:
    """Points ``(K, 3)`` in MediaPipe camera axes -> y-up 3-tuples (spec §2.3,
    landmarks.MEDIAPIPE_TO_Y_UP), x negated for ``mirrored="flip"``; a point with any
    non-finite coordinate is NaN. ``+ 0.0``: the product with the diagonal matrix sums from
    +0.0, so a zero coordinate is +0.0."""
    it = iter(arr.ravel().tolist())
    return [(x_sign * (x + 0.0), -y + 0.0, -z + 0.0) if x * 0.0 + y * 0.0 + z * 0.0 == 0.0 else _NAN3
            for x, y, z in zip(it, it, it, strict=True)]


def _hand(arr: NDArray[np.float64], x_sign: float) -> tuple[Points | None, Vec3]:
    """One hand's 21 points when all are present (else None) and its wrist."""
    points = _points(arr, x_sign)
    for p in points:  # _points makes a point with a non-finite coordinate NaN throughout
        if p[0] != p[0]:
            return None, points[0]
    return points, points[0]


# ---------------------------------------------------------------------------- chest (spec §4.5)


def _camera_up1(trunk: Vec3) -> Vec3:
    """landmarks.camera_up of one trunk (spec §4.5): the image axis nearest it, +Y if NaN."""
    tx, ty = trunk[0], trunk[1]
    if abs(tx) > abs(ty):
        return (-1.0 if tx < 0.0 else 1.0, 0.0, 0.0)
    return (0.0, -1.0 if ty < 0.0 else 1.0, 0.0)


def _trunk_vector(w: float, x: float, y: float, z: float) -> Vec3:
    """landmarks._trunk_vector of one quaternion: Σ w_k · R(u, C_k·θ)·e_y by Rodrigues."""
    sin_half = sqrt(x * x + y * y + z * z)
    d = sin_half if sin_half > 0 else 1.0
    ax, ay, az = x / d, y / d, z / d
    theta = 2.0 * atan2(sin_half, w)
    s_cos, s_sin = _TRUNK_STILL, 0.0  # segments with C_k = 0: cos 0 = 1, sin 0 = 0
    for length, share in _TRUNK_TURNING:
        s_cos += cos(theta * share) * length
        s_sin += sin(theta * share) * length
    k = ay * (_TRUNK_LENGTH - s_cos)
    # s_cos·e_y + s_sin·(a × e_y) + k·a, term by term as the batch path
    return (s_cos * 0.0 + s_sin * -az + k * ax, s_cos * 1.0 + s_sin * 0.0 + k * ay, s_cos * 0.0 + s_sin * ax + k * az)


def _chest(sl: Vec3, sr: Vec3, hl: Vec3, hr: Vec3) -> tuple[Axes, Mat3, Quat] | None:
    """landmarks._chest of one frame whose hips are seen: the chest axes, the matrix of
    the torso rotation ``Q`` relative to the pelvis and ``Q`` (w ≥ 0); None where degenerate."""
    x_p = (hl[0] - hr[0], 0.0, hl[2] - hr[2])  # hip line made horizontal
    across = sub1(sl, sr)
    trunk = sub1(_mid(sl, sr), _mid(hl, hr))
    if not (_finite(hl) and _finite(hr) and _finite(across) and norm1(x_p) > _MIN_LENGTH
            and norm1(across) > _MIN_LENGTH and norm1(cross1(across, trunk)) > _MIN_CROSS):
        return None
    xp = unit1(x_p, _EPS)
    zp = cross1(xp, _EY1)
    pelvis: Axes = (xp, _EY1, zp)
    a = unit1(to_frame1(pelvis, across), _EPS)
    t = unit1(to_frame1(pelvis, trunk), _EPS)
    # Q0: the smallest rotation e_x -> a; Q(ψ) = Q0 · R_X(ψ) = cos ψ/2 · Q0 + sin ψ/2 · Q0·i
    w = 1.0 + dot1(_EX1, a)
    c = cross1(_EX1, a)
    q0: Quat = (0.0, 0.0, 1.0, 0.0) if w < _EPS else (w, c[0], c[1], c[2])
    n = sqrt(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3])
    q0 = (q0[0] / n, q0[1] / n, q0[2] / n, q0[3] / n)
    y0, z0 = rotate1(q0, _EY1), rotate1(q0, _EZ1)
    q0i = (-q0[1], q0[0], q0[3], -q0[2])
    # the miss: the signed angle about a from the model trunk d to t (both off a)
    t_p = reject1(t, a)
    t_pxa = cross1(t_p, a)
    (a0, a1, a2), (p0, p1, p2) = t_pxa, t_p

    (q0w, q0x, q0y, q0z), (q1w, q1x, q1y, q1z) = q0, q0i

    def q_of(psi: float) -> Quat:
        ch, sh = cos(0.5 * psi), sin(0.5 * psi)
        return (ch * q0w + sh * q1w, ch * q0x + sh * q1x, ch * q0y + sh * q1y, ch * q0z + sh * q1z)

    def miss(psi: float) -> float:
        ch, sh = cos(0.5 * psi), sin(0.5 * psi)  # q_of, written out
        d0, d1, d2 = _trunk_vector(ch * q0w + sh * q1w, ch * q0x + sh * q1x, ch * q0y + sh * q1y, ch * q0z + sh * q1z)
        return atan2(0.0 + d0 * a0 + d1 * a1 + d2 * a2, 0.0 + d0 * p0 + d1 * p1 + d2 * p2)

    # the twist ψ about the shoulder line by the secant method
    psi0 = atan2(dot1(t, z0), dot1(t, y0))
    f0 = miss(psi0)
    psi1 = psi0 + f0 / _TRUNK_SHARE
    f1 = miss(psi1)
    for _ in range(_SECANT_STEPS):
        if not abs(f1) > _SECANT_TOL:
            break
        denom = f1 - f0
        step = f1 * (psi1 - psi0) / denom if abs(denom) > _SECANT_MIN_DENOM else 0.0
        psi0, f0 = psi1, f1
        psi1 = psi1 - step
        f1 = miss(psi1)
    q = q_of(psi1)
    if q[0] < 0:
        q = (-q[0], -q[1], -q[2], -q[3])
    m = to_matrix1(q)
    # chest = pelvis · Q
    chest = [(xp[0] * m[0][k] + _EY1[0] * m[1][k] + zp[0] * m[2][k],
              xp[1] * m[0][k] + _EY1[1] * m[1][k] + zp[1] * m[2][k],
              xp[2] * m[0][k] + _EY1[2] * m[1][k] + zp[2] * m[2][k]) for k in range(3)]
    return (chest[0], chest[1], chest[2]), m, q


def _nearer_other(wrist: Vec3, own: tuple[float, float], other: tuple[float, float]) -> bool:
    """landmarks._prepare's check: a hand's wrist (y-up, back to image axes: x right, y
    down) lies nearer the other pose wrist by SWAP_DISTANCE_RATIO than its own."""
    x, y = wrist[0], -wrist[1]
    (ox, oy), (wx, wy) = other, own
    return (sqrt((x - ox) * (x - ox) + (y - oy) * (y - oy))
            < SWAP_DISTANCE_RATIO * sqrt((x - wx) * (x - wx) + (y - wy) * (y - wy)))


class _Frame(NamedTuple):
    """landmarks._Prepared of one frame."""

    pose: dict[str, Vec3]  # the POSE_POINTS sites, y-up world
    visibility: dict[str, float]
    hands: dict[str, Points | None]  # "l", "r" after the swap check; None = not present
    axes: Axes  # chest axes (NaN where not valid)
    neck: Vec3
    valid: bool
    body: Vec3 | None  # normalized (b_yaw, b_pitch, b_roll)
    body_clamped: bool
    implausible: bool
    mirrored: bool
    swapped: bool
    quat: Quat | None = None  # the torso rotation Q (landmarks._Prepared.quat), None where NaN there
    up: Vec3 | None = None  # the camera's up of an upright chest (no body dims, spec §4.5)


def _prepare(lm: HolisticLandmarks, x_sign: float, visibility_threshold: float) -> _Frame:
    """landmarks._prepare of a batch of one frame."""
    pose = dict(zip(_POSE_NAMES, _points(lm.pose_world[0].take(_POSE_AT, axis=0), x_sign), strict=True))
    vis = dict(zip(_POSE_NAMES, lm.pose_visibility[0].take(_POSE_AT).tolist(), strict=True))
    (left, wrist_l), (right, wrist_r) = _hand(lm.left_hand, x_sign), _hand(lm.right_hand, x_sign)

    # spec §4.5: the chest from the pelvis and the torso rotation Q
    sl, sr, hl, hr = pose["shoulder_l"], pose["shoulder_r"], pose["hip_l"], pose["hip_r"]
    # a hip point that is missing (NaN) is not seen, whatever its visibility says
    hip_threshold = max(visibility_threshold, HIPS_VISIBILITY)  # spec §4.5
    hips_seen = (vis["hip_l"] >= hip_threshold and vis["hip_r"] >= hip_threshold
                 and all(math.isfinite(c) for c in (*hl, *hr))
                 and (lm.pose_in_frame is None  # a hip outside the image is a guess (spec §4.5)
                      or bool(lm.pose_in_frame[0, _HIPS_AT].all())))
    solved = _chest(sl, sr, hl, hr) if hips_seen else None
    axes: Axes = (_NAN3, _NAN3, _NAN3)
    body: Vec3 | None = None
    body_clamped = implausible = False
    quat: Quat | None = None
    if solved is not None:
        axes, local, quat = solved
        # a torso turned far beyond the registry range: the hips are misplaced (reported)
        yaw, pitch, roll = matrix_to_euler1(local)
        implausible = abs(yaw) > _PLAUSIBLE[0] or abs(pitch) > _PLAUSIBLE[1] or abs(roll) > _PLAUSIBLE[2]
        if not implausible:
            body, body_clamped = matrix_to_body1(local)
        else:
            quat = None
    valid = solved is not None
    up: Vec3 | None = None
    if body is None:  # hips out of view or misplaced: an upright torso from the shoulders
        trunk = sub1(_mid(sl, sr), _mid(hl, hr))
        x = unit1(sub1(sl, sr), _EPS)
        up = _camera_up1(trunk)
        y = unit1(reject1(up, x), _EPS)
        valid = _finite(x) and _finite(y)
        axes = (x, y, cross1(x, y)) if valid else (_NAN3, _NAN3, _NAN3)
        up = up if valid else None
    neck = _mid(sl, sr) if valid else _NAN3

    # spec §2.2: a flipped selfie turns the head inside out
    ear_l, ear_r = pose["ear_l"], pose["ear_r"]
    handed = cross1(unit1(sub1(ear_l, ear_r), _EPS), unit1(sub1(pose["nose"], _mid(ear_l, ear_r)), _EPS))
    mirrored = valid and dot1(handed, axes[1]) > MIRROR_MIN_SINE
    # spec §4.3: a hand at the other pose wrist was mislabelled
    if lm.pose_image is not None:  # each hand against both pose wrists, in the image plane
        (ul, vl), (ur, vr) = lm.pose_image[0].take(_WRISTS_AT, axis=0)[:, :2].tolist()
        image_l, image_r = (x_sign * ul, vl), (x_sign * ur, vr)
        other_l = left is not None and _nearer_other(wrist_l, image_l, image_r)
        other_r = right is not None and _nearer_other(wrist_r, image_r, image_l)
        swapped = (other_l and other_r) or (other_l and right is None) or (other_r and left is None)
    else:  # both hands against the pose wrists' left-right order
        swapped = dot1(sub1(wrist_l, wrist_r), sub1(pose["wrist_l"], pose["wrist_r"])) < 0.0
    hands = {"l": right, "r": left} if swapped else {"l": left, "r": right}
    return _Frame(pose, vis, hands, axes, neck, valid, body, body_clamped, implausible, mirrored, swapped, quat, up)


# ---------------------------------------------------------------------------- calibration samples


class Samples1(NamedTuple):
    """landmarks.CalibrationSamples of one frame (spec §4.1) without ``bones``: ``shoulders``
    (l, r) in the body frame, ``valid``, ``trunk``, ``arm`` (4) and ``hand`` (2), NaN where
    not measured, as the batch rows; ``right``, ``left``: the hands (after the swap check)
    whose bones :func:`posewire.producers.hand.bone_length_ratios` measures, None where absent."""

    shoulders: tuple[Vec3, Vec3]
    valid: bool
    trunk: float
    arm: tuple[float, float, float, float]
    hand: tuple[float, float]
    right: Points | None
    left: Points | None


_UPRIGHT_TRUNK = sum(length for length, _ in TRUNK_MODEL)
_HAND_CHAIN = (0, 9, 10, 11, 12)


def samples1(frame: _Frame, *, visibility_threshold: float, hand_scale: float) -> Samples1:
    """landmarks._samples of a frame prepared by :func:`prepare1` (``mirrored="report"``);
    ``hand_scale`` NaN where unknown. Pinned to the batch rows by
    ``tests/test_face_single_frame.py``."""
    pose, axes, neck, valid = frame.pose, frame.axes, frame.neck, frame.valid
    sl, sr = to_frame1(axes, sub1(pose["shoulder_l"], neck)), to_frame1(axes, sub1(pose["shoulder_r"], neck))
    trunk = math.nan
    if valid:
        hl, hr = to_frame1(axes, sub1(pose["hip_l"], neck)), to_frame1(axes, sub1(pose["hip_r"], neck))
        chord = norm1(sub1(_mid(sl, sr), _mid(hl, hr)))
        q = frame.quat
        if q is not None:
            d0, d1, d2 = _trunk_vector(*q)
            chord = chord * (_UPRIGHT_TRUNK / sqrt(d0 * d0 + d1 * d1 + d2 * d2))
        trunk = chord
    vis = frame.visibility
    arm = [math.nan] * 4
    for column, side in enumerate(("r", "l")):
        s, e, w = pose[f"shoulder_{side}"], pose[f"elbow_{side}"], pose[f"wrist_{side}"]
        length = math.nan
        if (valid and vis[f"shoulder_{side}"] >= visibility_threshold and vis[f"wrist_{side}"] >= visibility_threshold
                and _finite(s) and _finite(e) and _finite(w)):
            length = norm1(sub1(e, s)) + norm1(sub1(w, e))
        arm[column if vis[f"elbow_{side}"] >= visibility_threshold else 2 + column] = length
    hand = [math.nan, math.nan]
    for column, points in enumerate((frame.hands["r"], frame.hands["l"])):
        if points is not None:
            a, b, c, d, e5 = (points[k] for k in _HAND_CHAIN)
            hand[column] = (((norm1(sub1(b, a)) + norm1(sub1(c, b))) + norm1(sub1(d, c))) + norm1(sub1(e5, d))) \
                * hand_scale
    return Samples1((sl, sr), valid, trunk, (arm[0], arm[1], arm[2], arm[3]), (hand[0], hand[1]),
                    frame.hands["r"], frame.hands["l"])


def prepare1(lm: HolisticLandmarks, *, visibility_threshold: float) -> _Frame:
    """landmarks._prepare of a batch of one frame (``mirrored="report"``): what
    :func:`samples1` measures and :func:`encode1` encodes (``frame=``)."""
    return _prepare(lm, 1.0, visibility_threshold)


# ---------------------------------------------------------------------------- dims


def _put(row: list[float], cols: list[int], values: Iterable[float], clamped: list[int]) -> None:
    # spec §3.1: only in-bounds values leave the producer; clamps are counted
    for col, value in zip(cols, values, strict=True):
        if value < _LOWER[col]:
            value = _LOWER[col]
            clamped.append(col)
        elif value > _UPPER[col]:
            value = _UPPER[col]
            clamped.append(col)
        row[col] = value


def _spread(shoulder: Vec3, elbow: Vec3, wrist: Vec3, side: Side) -> tuple[float, bool]:
    """landmarks._spread of one arm in the body frame: degrees (NaN where undefined) and
    whether the arm is straight (spec §4.1 "Elbow spread")."""
    axis, offset = sub1(wrist, shoulder), sub1(elbow, shoulder)
    length = norm1(axis)
    if not (_finite(axis) and _finite(offset) and length > _MIN_LENGTH):
        return math.nan, False
    u = (axis[0] / length, axis[1] / length, axis[2] / length)
    if norm1(reject1(offset, u)) < _STRAIGHT_ARM:  # a straight arm has no elbow direction: 0, counted
        return 0.0, True
    return spread_angle1(u, offset, side=side), False


def _rigid_wrist1(shoulder: Vec3, elbow: Vec3, wrist: Vec3, arm_length: float | None) -> Vec3:
    """:func:`posewire.producers.landmarks._rigid_wrist` of one frame (spec §4.1 "The arm at its
    calibrated length"): the seen shoulder → wrist at the calibrated arm length."""
    if arm_length is None:
        return wrist
    length = norm1(sub1(elbow, shoulder)) + norm1(sub1(wrist, elbow))
    if not (math.isfinite(length) and length > _MIN_LENGTH):
        return wrist
    k = arm_length / length
    return (shoulder[0] + (wrist[0] - shoulder[0]) * k, shoulder[1] + (wrist[1] - shoulder[1]) * k,
            shoulder[2] + (wrist[2] - shoulder[2]) * k)


def _face_fit1(points: list[Vec3]) -> Mat3 | None:
    """:func:`posewire.producers.landmarks.face_fit` of one frame (spec §4.4): the face's
    rotation (rows of the matrix whose columns are the face frame's axes) from the
    ``HEAD_REFERENCE`` points in table order (NaN = missing), None with fewer than
    ``HEAD_FIT_MIN`` of them; the same operations in the same order."""
    count = 0
    cy0 = cy1 = cy2 = cx0 = cx1 = cx2 = 0.0
    for (x0, x1, x2), p in zip(_FIT_REF, points, strict=True):
        if _finite(p):
            count += 1
            cy0, cy1, cy2 = cy0 + p[0], cy1 + p[1], cy2 + p[2]
            cx0, cx1, cx2 = cx0 + x0, cx1 + x1, cx2 + x2
    if count < HEAD_FIT_MIN:
        return None
    n = float(count)
    cy0, cy1, cy2, cx0, cx1, cx2 = cy0 / n, cy1 / n, cy2 / n, cx0 / n, cx1 / n, cx2 / n
    sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = shift = 0.0
    for (x0, x1, x2), p in zip(_FIT_REF, points, strict=True):
        if _finite(p):
            a0, a1, a2 = x0 - cx0, x1 - cx1, x2 - cx2
            b0, b1, b2 = p[0] - cy0, p[1] - cy1, p[2] - cy2
            sxx, sxy, sxz = sxx + a0 * b0, sxy + a0 * b1, sxz + a0 * b2
            syx, syy, syz = syx + a1 * b0, syy + a1 * b1, syz + a1 * b2
            szx, szy, szz = szx + a2 * b0, szy + a2 * b1, szz + a2 * b2
            shift = shift + sqrt((a0 * a0 + a1 * a1) + a2 * a2) * sqrt((b0 * b0 + b1 * b1) + b2 * b2)
    m = [[((sxx + syy) + szz) + shift, syz - szy, szx - sxz, sxy - syx],
         [syz - szy, ((sxx - syy) - szz) + shift, sxy + syx, szx + sxz],
         [szx - sxz, sxy + syx, ((syy - sxx) - szz) + shift, syz + szy],
         [sxy - syx, szx + sxz, syz + szy, ((szz - sxx) - syy) + shift]]
    for _ in range(HEAD_FIT_SQUARINGS):
        m = [[((m[i][0] * m[0][j] + m[i][1] * m[1][j]) + m[i][2] * m[2][j]) + m[i][3] * m[3][j] for j in range(4)]
             for i in range(4)]
        trace = ((m[0][0] + m[1][1]) + m[2][2]) + m[3][3]
        if not (trace > 0.0 and math.isfinite(trace)):
            return None
        m = [[v / trace for v in row] for row in m]
    column = 0
    for j in range(1, 4):  # the first of equal ones
        if m[j][j] > m[column][column]:
            column = j
    return to_matrix1((m[0][column], m[1][column], m[2][column], m[3][column]))


def _head(frame: _Frame, face: list[Vec3]) -> tuple[Vec3, bool] | None:
    """landmarks._head of one frame: normalized (h_yaw, h_pitch, h_roll) and the clamp,
    None without a face or a body frame (spec §4.4: Cᵀ · F, F the rigid fit or the
    four-point face frame, C the chest or, without body dims, the camera's upright frame)."""
    if not frame.valid:
        return None
    eye_l, eye_r, forehead, chin = face[:4]
    fitted = _face_fit1(face[4:]) if len(face) > 4 else None
    if fitted is not None:
        f = fitted
    else:
        if not (_finite(eye_l) and _finite(eye_r) and _finite(forehead) and _finite(chin)):
            return None
        x = unit1(sub1(eye_l, eye_r), _EPS)
        y = unit1(reject1(sub1(forehead, chin), x), _EPS)
        if not (_finite(x) and _finite(y)):
            return None
        z = cross1(x, y)
        f = ((x[0], y[0], z[0]), (x[1], y[1], z[1]), (x[2], y[2], z[2]))
    up = frame.up
    # the camera's upright frame: X = up × +z, Y = up, Z = +z (spec §4.4)
    axes = frame.axes if up is None else (cross1(up, _EZ1), up, _EZ1)
    fx, fy, fz = (f[0][0], f[1][0], f[2][0]), (f[0][1], f[1][1], f[2][1]), (f[0][2], f[1][2], f[2][2])
    cx, cy, cz = to_frame1(axes, fx), to_frame1(axes, fy), to_frame1(axes, fz)  # Cᵀ·F by columns
    return matrix_to_head1(((cx[0], cy[0], cz[0]), (cx[1], cy[1], cz[1]), (cx[2], cy[2], cz[2])))


def encode1(lm: HolisticLandmarks, cal: LandmarkCalibration, *, visibility_threshold: float,
            mirrored: Literal["report", "flip"], frame: _Frame | None = None,
            chest: RotationFilter | None = None, t: float | None = None,
            face_points: list[Vec3] | None = None) -> LandmarkResult:
    """:func:`posewire.producers.landmarks.landmarks_to_vectors` of a batch of one frame
    with its calibration (module docstring); ``frame``: :func:`prepare1` of ``lm`` already
    taken (``mirrored="report"``, the same threshold); ``chest``/``t``: a time series' chest
    filter and this frame's time in seconds (spec §7.3 "Smoothing"); ``face_points``: the
    head frame's face points (``eye_outer_l, eye_outer_r, forehead, chin``, y-up, un-mirrored)
    in place of ``lm.face`` (the live encoder's face transform, spec §4.4)."""
    x_sign = -1.0 if mirrored == "flip" else 1.0  # spec §2.2: un-mirror a selfie image
    if frame is None or mirrored == "flip":
        frame = _prepare(lm, x_sign, visibility_threshold)
    if chest is not None and t is not None:
        if frame.valid:  # spec §7.3: the chest frame of a time series smoothed
            smoothed = chest(t, np.array(frame.axes).T).T.tolist()
            frame = frame._replace(axes=(tuple(smoothed[0]), tuple(smoothed[1]), tuple(smoothed[2])))
        else:
            chest.reset()
    valid = frame.valid
    row = [math.nan] * N_DIMS
    clamped_cols: list[int] = []
    notes: list[str] = list(cal.notes)
    degenerate: dict[str, int] = {"body_frame": 0 if valid else 1}
    if frame.mirrored:
        degenerate["mirrored"] = 1
        notes.append(MIRRORED_NOTE.format(1))
    if frame.swapped:
        degenerate["hands_swapped"] = 1
        notes.append(SWAPPED_NOTE.format(1))
    tracked: dict[str, bool] = {}

    # spec §4.5: body dims, only with the hips seen and a plausible torso
    body = frame.body
    body_ok = valid and body is not None and _finite(body)
    tracked["body"] = body_ok
    if valid and not body_ok and not frame.implausible:
        degenerate["body_hips_not_visible"] = 1
    if frame.implausible:
        degenerate["body_implausible"] = 1
        notes.append(IMPLAUSIBLE_NOTE.format(1))
    if body_ok and body is not None:
        _put(row, _BODY_COLS, body, clamped_cols)

    hand_axes = frame.axes if valid else _CAMERA  # hand-only frames: palm in the camera frame (spec §4.2)
    palm_clamped = {"l": False, "r": False}
    for side in ("l", "r"):
        s: Side = "l" if side == "l" else "r"
        # spec §4.1: hand position relative to the neck in units L, elbow spread
        wrist = to_frame1(frame.axes, sub1(frame.pose[f"wrist_{s}"], frame.neck))
        # spec §7.4: a wrist is seen when the pose says so or the hand model found that hand
        seen = frame.visibility[f"wrist_{s}"] >= visibility_threshold or frame.hands[s] is not None
        arm_ok = valid and seen and _finite(wrist)
        tracked[f"arm_{s}"] = arm_ok
        if arm_ok:
            shoulder = to_frame1(frame.axes, sub1(frame.pose[f"shoulder_{s}"], frame.neck))
            elbow = to_frame1(frame.axes, sub1(frame.pose[f"elbow_{s}"], frame.neck))
            spread, straight = _spread(shoulder, elbow, wrist, s)
            sent = _rigid_wrist1(shoulder, elbow, wrist, cal.calibration.arm_length)  # spec §4.1
            _put(row, _ARM_COLS[s], (*arm_to_normalized1(sent, cal.units, side=s), spread / _SPREAD_MAX[s]),
                 clamped_cols)
            degenerate[f"spread_straight_arm_{s}"] = int(straight)
        # spec §4.2, §4.3: palm and fingers (posewire.producers.hand_single)
        points = frame.hands[s]
        if points is not None:  # spec §4.3 "Hand depth gain"
            points = with_depth_gain1(points, cal.hand_depth_gain[s])
        # spec §4.3: monocular depth, so a depth-flipped hand is read mirrored (reported)
        dims = None if points is None else hand_dims1(points, hand_axes, side=s, depth_ambiguous=True)
        tracked[f"hand_{s}"] = dims is not None
        degenerate[f"palm_{s}"] = int(points is not None and dims is None)
        if dims is not None:
            if dims.depth_flipped:
                degenerate[f"hand_depth_flipped_{s}"] = 1
            if dims.fingers_side_clamped:
                degenerate[f"fingers_side_clamped_{s}"] = dims.fingers_side_clamped
            if dims.fingers_depth_repaired:
                degenerate[f"fingers_depth_repaired_{s}"] = dims.fingers_depth_repaired
            if not valid:
                degenerate[f"palm_camera_frame_{s}"] = 1
            if dims.roll_unobservable:
                degenerate[f"thumb_roll_unobservable_{s}"] = 1
            palm_clamped[s] = dims.palm_clamped
            _put(row, _HAND_COLS[s], dims.values, clamped_cols)

    head = None
    face = [(x_sign * x, y, z) for x, y, z in face_points] if face_points is not None else \
        None if lm.face is None else _points(lm.face[0].take(_FACE_AT, axis=0), x_sign)
    if face is not None:
        head = _head(frame, face)
        tracked["head"] = head is not None
        if head is not None:
            _put(row, _HEAD_COLS, head[0], clamped_cols)

    # spec §3.1: every clamp is reported (never silent)
    clamped = {_IDS[col]: 1 for col in sorted(clamped_cols)}
    for s in ("l", "r"):
        if palm_clamped[s]:
            clamped[PALM_CLAMP_KEY.format(s)] = 1
    if head is not None and head[1]:
        clamped[HEAD_CLAMP_KEY] = 1
    if body_ok and frame.body_clamped:
        clamped[BODY_CLAMP_KEY] = 1
    states = {part: _STATES["not_estimated" if part not in tracked else "tracked" if tracked[part] else "lost"]
              for part in TRACKING_PARTS}
    fractions = {part: 1.0 if tracked.get(part) else 0.0 for part in TRACKING_PARTS}
    report = LandmarkReport(frames=1, tracked_fraction=fractions, clamped=clamped,
                            fallback_axes=cal.units.fallback_axes, degenerate=degenerate, notes=tuple(notes))
    return LandmarkResult(vectors=np.array([row]), tracking=states, calibration=cal, report=report)
