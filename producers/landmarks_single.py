"""One frame of MediaPipe Holistic landmarks -> pose vector in Python floats (spec §2.2–§4.5).

:func:`posewire.producers.landmarks.landmarks_to_vectors` calls :func:`encode1` for a batch
of one frame: a live source encodes one frame at a time, and there numpy's per-call
overhead on tiny arrays, not arithmetic, is the cost (issue 8: ≤ 100 µs per frame). It
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
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.calibration import arm_to_normalized1
from posewire.codec.elbow import spread_angle1
from posewire.codec.euler import BODY_MAX_DEG, matrix_to_body1, matrix_to_euler1, matrix_to_head1
from posewire.codec.quaternion import Mat3, Quat, Vec3, as_vec1, cross1, dot1, rotate1, to_matrix1
from posewire.codec.registry import REGISTRY, TRACKING_PARTS
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.producers.hand import _FINGER_ROWS
from posewire.producers.hand_single import hand_dims1
from posewire.producers.landmarks import (
    _EPS,
    _EX,
    _EY,
    _EZ,
    _TRUNK_LENGTH,
    _TRUNK_SHARE,
    BODY_CLAMP_KEY,
    BODY_PLAUSIBLE,
    CAMERA_FALLBACK_ROTATION,
    FACE_POINTS,
    HEAD_CLAMP_KEY,
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

__all__ = ["encode1"]

Side = Literal["l", "r"]
Axes = tuple[Vec3, Vec3, Vec3]  # X, Y, Z: a rotation's columns in world coordinates

_NAN3: Vec3 = (math.nan, math.nan, math.nan)
_EX1, _EY1, _EZ1 = as_vec1(_EX), as_vec1(_EY), as_vec1(_EZ)
_CAMERA: Axes = (as_vec1(CAMERA_FALLBACK_ROTATION[:, 0]), as_vec1(CAMERA_FALLBACK_ROTATION[:, 1]),
                 as_vec1(CAMERA_FALLBACK_ROTATION[:, 2]))
_TRUNK1 = tuple((float(length), float(share)) for length, share in TRUNK_MODEL)
_PLAUSIBLE = tuple(BODY_PLAUSIBLE * m for m in BODY_MAX_DEG.tolist())
_P = POSE_POINTS
_FACE = [FACE_POINTS[k] for k in ("eye_outer_l", "eye_outer_r", "forehead", "chin")]
_LOWER, _UPPER = LOWER.tolist(), UPPER.tolist()
_IDS = [d.id for d in REGISTRY.dimensions]
_BODY_COLS = [REGISTRY.index(i) for i in ("b_yaw", "b_pitch", "b_roll")]
_HEAD_COLS = [REGISTRY.index(i) for i in ("h_yaw", "h_pitch", "h_roll")]
_ARM_COLS = {s: [REGISTRY.index(f"a_{a}_{s}") for a in "xyz"] for s in ("l", "r")}
_SPREAD_COL = {s: REGISTRY.index(f"a_spread_{s}") for s in ("l", "r")}
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


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _mid(a: Vec3, b: Vec3) -> Vec3:
    return (0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]))


def _norm(v: Vec3) -> float:
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _unit(v: Vec3) -> Vec3:
    # landmarks._unit: NaN where the norm is at most _EPS
    n = _norm(v)
    return (v[0] / n, v[1] / n, v[2] / n) if n > _EPS else _NAN3


def _finite(v: Vec3) -> bool:
    return v[0] * 0.0 + v[1] * 0.0 + v[2] * 0.0 == 0.0


def _reject(v: Vec3, u: Vec3) -> Vec3:
    k = dot1(v, u)
    return (v[0] - k * u[0], v[1] - k * u[1], v[2] - k * u[2])


def _in(axes: Axes, v: Vec3) -> Vec3:
    # Rᵀ·v: world -> the frame of ``axes``
    return (dot1(axes[0], v), dot1(axes[1], v), dot1(axes[2], v))


def _points(rows: list[list[float]], x_sign: float) -> list[Vec3]:
    """MediaPipe camera axes -> y-up (spec §2.3, :data:`~posewire.producers.landmarks.MEDIAPIPE_TO_Y_UP`),
    x negated for ``mirrored="flip"``; a point with any non-finite coordinate is NaN."""
    return [(x_sign * x, -y, -z) if x * 0.0 + y * 0.0 + z * 0.0 == 0.0 else _NAN3 for x, y, z in rows]


# ---------------------------------------------------------------------------- chest (spec §4.5)


def _trunk_vector(q: Quat) -> Vec3:
    # landmarks._trunk_vector: Σ w_k · R(u, C_k·θ)·e_y by Rodrigues
    w, x, y, z = q
    sin_half = math.sqrt(x * x + y * y + z * z)
    d = sin_half if sin_half > 0 else 1.0
    ax, ay, az = x / d, y / d, z / d
    theta = 2.0 * math.atan2(sin_half, w)
    s_cos = s_sin = 0.0
    for length, share in _TRUNK1:
        s_cos += math.cos(theta * share) * length
        s_sin += math.sin(theta * share) * length
    k = ay * (_TRUNK_LENGTH - s_cos)
    return (s_sin * -az + k * ax, s_cos + k * ay, s_sin * ax + k * az)


def _chest(sl: Vec3, sr: Vec3, hl: Vec3, hr: Vec3) -> tuple[Axes, Quat, Mat3] | None:
    """landmarks._chest of one frame whose hips are seen: chest axes, torso rotation ``Q``
    relative to the pelvis and its matrix; None where degenerate."""
    x_p = (hl[0] - hr[0], 0.0, hl[2] - hr[2])  # hip line made horizontal
    across = _sub(sl, sr)
    trunk = _sub(_mid(sl, sr), _mid(hl, hr))
    if not (_finite(hl) and _finite(hr) and _finite(across) and _norm(x_p) > 1e-6 and _norm(across) > 1e-6
            and _norm(cross1(across, trunk)) > 1e-9):
        return None
    xp = _unit(x_p)
    zp = cross1(xp, _EY1)
    pelvis: Axes = (xp, _EY1, zp)
    a = _unit(_in(pelvis, across))
    t = _unit(_in(pelvis, trunk))
    # Q0: the smallest rotation e_x -> a; Q(ψ) = Q0 · R_X(ψ)
    w = 1.0 + dot1(_EX1, a)
    c = cross1(_EX1, a)
    q0: Quat = (0.0, 0.0, 1.0, 0.0) if w < 1e-9 else (w, c[0], c[1], c[2])
    n = math.sqrt(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3])
    q0 = (q0[0] / n, q0[1] / n, q0[2] / n, q0[3] / n)
    y0, z0 = rotate1(q0, _EY1), rotate1(q0, _EZ1)
    q0i = (-q0[1], q0[0], q0[3], -q0[2])  # Q0·i
    t_p = _reject(t, a)
    t_pxa = cross1(t_p, a)

    def q_of(psi: float) -> Quat:
        ch, sh = math.cos(0.5 * psi), math.sin(0.5 * psi)
        return (ch * q0[0] + sh * q0i[0], ch * q0[1] + sh * q0i[1], ch * q0[2] + sh * q0i[2],
                ch * q0[3] + sh * q0i[3])

    def miss(psi: float) -> float:
        d = _trunk_vector(q_of(psi))
        return math.atan2(dot1(d, t_pxa), dot1(d, t_p))

    # the twist ψ about the shoulder line by the secant method
    psi0 = math.atan2(dot1(t, z0), dot1(t, y0))
    f0 = miss(psi0)
    psi1 = psi0 + f0 / _TRUNK_SHARE
    f1 = miss(psi1)
    for _ in range(6):
        if not abs(f1) > 1e-13:
            break
        denom = f1 - f0
        step = f1 * (psi1 - psi0) / denom if abs(denom) > 1e-15 else 0.0
        psi0, f0 = psi1, f1
        psi1 = psi1 - step
        f1 = miss(psi1)
    q = q_of(psi1)
    if q[0] < 0:
        q = (-q[0], -q[1], -q[2], -q[3])
    m = to_matrix1(q)
    chest = tuple((xp[0] * m[0][k] + _EY1[0] * m[1][k] + zp[0] * m[2][k],
                   xp[1] * m[0][k] + _EY1[1] * m[1][k] + zp[1] * m[2][k],
                   xp[2] * m[0][k] + _EY1[2] * m[1][k] + zp[2] * m[2][k]) for k in range(3))
    return (chest[0], chest[1], chest[2]), q, m


# ---------------------------------------------------------------------------- the frame


def _spread(shoulder: Vec3, elbow: Vec3, wrist: Vec3, side: Side) -> tuple[float, bool]:
    """landmarks._spread of one arm in the body frame: degrees (NaN where undefined) and
    whether the arm is straight (spec §4.1 "Elbow spread")."""
    axis, offset = _sub(wrist, shoulder), _sub(elbow, shoulder)
    length = _norm(axis)
    if not (_finite(axis) and _finite(offset) and length > 1e-6):
        return math.nan, False
    u = (axis[0] / length, axis[1] / length, axis[2] / length)
    if _norm(_reject(offset, u)) < 0.01:  # a straight arm has no elbow direction: 0, counted
        return 0.0, True
    return spread_angle1(u, offset, side=side), False


def encode1(lm: HolisticLandmarks, cal: LandmarkCalibration, *, visibility_threshold: float,
            mirrored: Literal["report", "flip"]) -> LandmarkResult:
    """:func:`posewire.producers.landmarks.landmarks_to_vectors` of a batch of one frame
    with its calibration (module docstring)."""
    x_sign = -1.0 if mirrored == "flip" else 1.0  # spec §2.2: un-mirror a selfie image
    pose = _points(lm.pose_world[0].tolist(), x_sign)
    vis = lm.pose_visibility[0].tolist()
    hands: dict[str, list[Vec3] | None] = {}
    wrists: dict[str, Vec3] = {}
    for s, arr in (("l", lm.left_hand), ("r", lm.right_hand)):
        flat = arr.ravel().tolist()
        # present = all 63 coordinates finite (the sum overflows only for absurd values)
        present = math.isfinite(sum(flat)) or all(map(math.isfinite, flat))
        it = iter(flat)
        points = [(x_sign * x, -y, -z) for x, y, z in zip(it, it, it, strict=True)] if present else None
        hands[s] = points
        wrists[s] = points[0] if points is not None else _points([flat[:3]], x_sign)[0]

    # spec §4.5: the chest frame, torso rotation relative to the pelvis
    sl, sr, hl, hr = pose[_P["shoulder_l"]], pose[_P["shoulder_r"]], pose[_P["hip_l"]], pose[_P["hip_r"]]
    hips_seen = vis[_P["hip_l"]] >= visibility_threshold and vis[_P["hip_r"]] >= visibility_threshold
    solved = _chest(sl, sr, hl, hr) if hips_seen else None
    implausible = False
    axes: Axes = (_NAN3, _NAN3, _NAN3)
    body: Vec3 | None = None
    body_clamped = False
    if solved is not None:
        axes, _, local = solved
        angles = matrix_to_euler1(local)
        implausible = (abs(angles[0]) > _PLAUSIBLE[0] or abs(angles[1]) > _PLAUSIBLE[1]
                       or abs(angles[2]) > _PLAUSIBLE[2])
        if not implausible:
            body, body_clamped = matrix_to_body1(local)
    valid = solved is not None
    if body is None:  # hips out of view or misplaced: an upright torso from the shoulders
        trunk = _sub(_mid(sl, sr), _mid(hl, hr))
        if not _finite(trunk):
            trunk = _EY1
        x = _unit(_sub(sl, sr))
        y = _unit(_reject(trunk, x))
        valid = _finite(x) and _finite(y)
        axes = (x, y, cross1(x, y)) if valid else (_NAN3, _NAN3, _NAN3)
    neck = _mid(sl, sr) if valid else _NAN3

    # spec §2.2: a flipped selfie turns the head inside out
    ear_l, ear_r = pose[_P["ear_l"]], pose[_P["ear_r"]]
    handed = cross1(_unit(_sub(ear_l, ear_r)), _unit(_sub(pose[_P["nose"]], _mid(ear_l, ear_r))))
    is_mirrored = valid and dot1(handed, axes[1]) > MIRROR_MIN_SINE
    # spec §4.3: a hand at the other pose wrist was mislabelled
    has_l, has_r = hands["l"] is not None, hands["r"] is not None
    wl, wr = _P["wrist_l"], _P["wrist_r"]
    if lm.pose_image is not None:
        (ix_l, iy_l), (ix_r, iy_r) = lm.pose_image[0, wl:wr + 1, :2].tolist()
        image = {"l": (x_sign * ix_l, iy_l), "r": (x_sign * ix_r, iy_r)}

        def nearer_other(s: str, own: str, other: str) -> bool:
            hx, hy = wrists[s][0], -wrists[s][1]  # back to image axes (x right, y down)
            dx, dy, ex, ey = hx - image[other][0], hy - image[other][1], hx - image[own][0], hy - image[own][1]
            return math.sqrt(dx * dx + dy * dy) < SWAP_DISTANCE_RATIO * math.sqrt(ex * ex + ey * ey)

        other_l, other_r = has_l and nearer_other("l", "l", "r"), has_r and nearer_other("r", "r", "l")
        swapped = (has_l and has_r and other_l and other_r) or (has_l and not has_r and other_l) or (
            has_r and not has_l and other_r)
    else:
        swapped = dot1(_sub(wrists["l"], wrists["r"]), _sub(pose[wl], pose[wr])) < 0.0
    if swapped:
        hands["l"], hands["r"] = hands["r"], hands["l"]

    row = [math.nan] * N_DIMS
    written: list[int] = []
    notes: list[str] = list(cal.notes)
    degenerate: dict[str, int] = {"body_frame": 0 if valid else 1}
    if is_mirrored:
        degenerate["mirrored"] = 1
        notes.append(MIRRORED_NOTE.format(1))
    if swapped:
        degenerate["hands_swapped"] = 1
        notes.append(SWAPPED_NOTE.format(1))
    tracked: dict[str, bool] = {}

    # spec §4.5: body dims (only with the hips seen and a plausible torso)
    body_ok = valid and body is not None and _finite(body)
    tracked["body"] = body_ok
    if valid and not body_ok and not implausible:
        degenerate["body_hips_not_visible"] = 1
    if implausible:
        degenerate["body_implausible"] = 1
        notes.append(IMPLAUSIBLE_NOTE.format(1))
    if body_ok and body is not None:
        for col, value in zip(_BODY_COLS, body, strict=True):
            row[col] = value
        written += _BODY_COLS

    hand_axes = axes if valid else _CAMERA  # hand-only frames: palm in the camera frame (spec §4.2)
    palm_clamped: dict[str, bool] = {}
    for s in ("l", "r"):
        side: Side = "l" if s == "l" else "r"
        # spec §4.1: hand position relative to the neck, elbow spread
        wrist_i = _P[f"wrist_{s}"]
        wrist = _in(axes, _sub(pose[wrist_i], neck))
        arm_ok = valid and vis[wrist_i] >= visibility_threshold and _finite(wrist)
        tracked[f"arm_{s}"] = arm_ok
        if arm_ok:
            n = arm_to_normalized1(wrist, cal.units, side=side)
            cols = _ARM_COLS[s]
            row[cols[0]], row[cols[1]], row[cols[2]] = n
            shoulder = _in(axes, _sub(pose[_P[f"shoulder_{s}"]], neck))
            elbow = _in(axes, _sub(pose[_P[f"elbow_{s}"]], neck))
            spread, straight = _spread(shoulder, elbow, wrist, side)
            row[_SPREAD_COL[s]] = spread / _SPREAD_MAX[s]
            written += cols
            written.append(_SPREAD_COL[s])
            degenerate[f"spread_straight_arm_{s}"] = int(straight)
        # spec §4.2, §4.3: palm and fingers
        points = hands[s]
        dims = None if points is None else hand_dims1(points, hand_axes, side=side)
        tracked[f"hand_{s}"] = dims is not None
        degenerate[f"palm_{s}"] = int(points is not None and dims is None)
        palm_clamped[s] = False
        if dims is not None:
            values, palm_clamped[s], unobservable = dims
            if not valid:
                degenerate[f"palm_camera_frame_{s}"] = 1
            if unobservable:
                degenerate[f"thumb_roll_unobservable_{s}"] = 1
            for col, value in zip(_HAND_COLS[s], values, strict=True):
                row[col] = value
            written += _HAND_COLS[s]

    # spec §4.4: head = R_bodyᵀ · R_face
    head_clamped = False
    if lm.face is not None:
        eye_l, eye_r, forehead, chin = _points(lm.face[0, _FACE].tolist(), x_sign)
        head_ok = False
        if valid and _finite(eye_l) and _finite(eye_r) and _finite(forehead) and _finite(chin):
            x = _unit(_sub(eye_l, eye_r))
            y = _unit(_reject(_sub(forehead, chin), x))
            if _finite(x) and _finite(y):
                z = cross1(x, y)
                rel = _in(axes, x), _in(axes, y), _in(axes, z)  # columns of Rᵀ·F
                head, head_clamped = matrix_to_head1(((rel[0][0], rel[1][0], rel[2][0]),
                                                      (rel[0][1], rel[1][1], rel[2][1]),
                                                      (rel[0][2], rel[1][2], rel[2][2])))
                row[_HEAD_COLS[0]], row[_HEAD_COLS[1]], row[_HEAD_COLS[2]] = head
                written += _HEAD_COLS
                head_ok = True
        tracked["head"] = head_ok

    # spec §3.1: only finite in-bounds values leave the producer; clamps are reported
    clamped: dict[str, int] = {}
    for col in sorted(written):
        value = row[col]
        if value < _LOWER[col]:
            row[col] = _LOWER[col]
            clamped[_IDS[col]] = 1
        elif value > _UPPER[col]:
            row[col] = _UPPER[col]
            clamped[_IDS[col]] = 1
    for s in ("l", "r"):
        if palm_clamped[s]:
            clamped[PALM_CLAMP_KEY.format(s)] = 1
    if head_clamped:
        clamped[HEAD_CLAMP_KEY] = 1
    if body_clamped and body_ok:
        clamped[BODY_CLAMP_KEY] = 1

    states: dict[str, NDArray[np.str_]] = {}
    fractions: dict[str, float] = {}
    for part in TRACKING_PARTS:
        if part in tracked:
            states[part] = _STATES["tracked" if tracked[part] else "lost"]
            fractions[part] = 1.0 if tracked[part] else 0.0
        else:
            states[part] = _STATES["not_estimated"]
            fractions[part] = 0.0
    report = LandmarkReport(frames=1, tracked_fraction=fractions, clamped=clamped,
                            fallback_axes=cal.units.fallback_axes, degenerate=degenerate, notes=tuple(notes))
    return LandmarkResult(vectors=np.array([row]), tracking=states, calibration=cal, report=report)
