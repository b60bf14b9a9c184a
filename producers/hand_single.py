"""One frame of the hand maths in Python floats (spec §2.4, §3.2, §4.2, §4.3).

:func:`hand_dims1` is :func:`posewire.producers.hand.hand_dims` and :func:`finger_angles1` is
:func:`posewire.producers.hand.finger_angles` for a single frame whose 21 common-layout
points are all present, written on 3-tuples: the live producer encodes one frame at a
time, where numpy's per-call overhead on tiny arrays, not arithmetic, is the cost (issue
8). The formulas, their order of operations, the tables and the thresholds are those of
:mod:`posewire.producers.hand` (imported from it, never restated); only ``sin``, ``cos``
and ``atan2`` come from libm instead of numpy, so the two agree to float round-off
(``tests/test_encoder_single_frame.py`` pins every dim to the batch row at 1e-9). A change
of convention in ``finger_angles`` must be made here too: those tests fail until it is.
Hot spots are written out in scalars (one frame is a few hundred operations, and a call
costs as much as several of them).

The NaN rules of the batch code carry over: a segment of zero length has no direction
(its cross products count as 0, as ``np.nan_to_num`` makes them), a degenerate hand frame
gives NaN for every angle.
"""

from __future__ import annotations

import itertools
import math
from math import asin, atan2, cos, isfinite, sin, sqrt
from typing import Literal, NamedTuple

from posewire.codec.quaternion import (
    Vec3,
    as_vec1,
    cross1,
    dot1,
    palm_encode1,
    palm_from_axes1,
    reject1,
    sub1,
    to_frame1,
    unit1,
)
from posewire.producers.hand import (
    _CURL_RANGE_DEG,
    _DISTAL_RANGE_DEG,
    _EPS,
    _FINGER_DEG,
    _FINGER_NEUTRAL,
    _FINGER_ROWS,
    _FLAT_LATERAL,
    _FOLD_RANGE_DEG,
    _OBSERVABLE_BEND,
    _PALM_MIN_SINE,
    _SIDE_COLUMNS,
    _SIDE_RANGE_DEG,
    _SPLAY,
    DEPTH_FLIP_FOLD_DEG,
    DEPTH_REPAIR_SCALES,
    DIP_EXTENSION_DEG,
    FINGER_CHAINS,
    HAND_POINTS,
    MCP_EXTENSION_DEG,
    PIP_EXTENSION_DEG,
    THUMB_CHAIN,
    THUMB_REST,
    THUMB_SIDE_AXIS,
)

__all__ = ["HandDims1", "finger_angles1", "hand_dims1", "with_depth_gain1"]

Side = Literal["l", "r"]
Points = list[Vec3]

_NAN3: Vec3 = (math.nan, math.nan, math.nan)
_ZERO3: Vec3 = (0.0, 0.0, 0.0)  # np.nan_to_num of a NaN cross product
_TY, _TX = as_vec1(THUMB_REST), as_vec1(THUMB_SIDE_AXIS)
_WRIST, _INDEX, _MIDDLE, _PINKY = (HAND_POINTS[k] for k in ("wrist", "index_mcp", "middle_mcp", "pinky_mcp"))
_CHAINS = tuple(FINGER_CHAINS.values())
_FINGER_DEG1 = {s: tuple(v.tolist()) for s, v in _FINGER_DEG.items()}
_FINGER_NEUTRAL1 = {s: tuple(v.tolist()) for s, v in _FINGER_NEUTRAL.items()}
#: index…pinky relaxed splay σ (degrees)
_SPLAY1 = tuple(_SPLAY.tolist())
#: index…pinky PIP and DIP flexion limits (degrees, spec §4.3 "Joint ranges")
_RANGES1 = tuple(zip(_CURL_RANGE_DEG.tolist(), _DISTAL_RANGE_DEG.tolist(), strict=True))
#: index…pinky: the side slots (the side-range count of spec §4.3)
_SIDE_SLOTS = tuple(_SIDE_COLUMNS.tolist())
_ROW = {row: k for k, row in enumerate(_FINGER_ROWS)}
#: (curl, distal, fold, side) slots of each finger in the finger rows, thumb first; the roll's slot.
_SLOTS = tuple(tuple(_ROW[f"g_{f}_{k}"] for k in ("curl", "distal", "fold", "side")) for f in ("thumb", *FINGER_CHAINS))
_ROLL = _ROW["g_thumb_roll"]
#: np.degrees' factor (math.degrees multiplies by the same double)
_DEG = 180.0 / math.pi


def _chain_angles(chain: tuple[Vec3, ...], axis: Vec3) -> list[float]:
    """hand._signed_angle (from ``u`` to ``v`` about the unit ``axis``, both projected off
    it, right-hand rule) of each consecutive pair of ``chain``, each vector projected once."""
    ax, ay, az = axis
    p = []
    for v in chain:
        k = 0.0 + v[0] * ax + v[1] * ay + v[2] * az
        p.append((v[0] - k * ax, v[1] - k * ay, v[2] - k * az))
    return [atan2(0.0 + (uy * vz - uz * vy) * ax + (uz * vx - ux * vz) * ay + (ux * vy - uy * vx) * az,
                  0.0 + ux * vx + uy * vy + uz * vz)
            for (ux, uy, uz), (vx, vy, vz) in itertools.pairwise(p)]


def _angle(cross: Vec3, u: Vec3, v: Vec3) -> float:
    # hand._angle: unsigned angle between u and v, given their cross product
    return atan2(sqrt(dot1(cross, cross)), dot1(u, v))


def _frame(points: Points, side: Side) -> tuple[Vec3, Vec3]:
    # hand.hand_frame: fingers = wrist -> middle MCP; palm normal out of the palm (spec §2.4)
    wrist = points[_WRIST]
    to_index, to_pinky = sub1(points[_INDEX], wrist), sub1(points[_PINKY], wrist)
    normal = cross1(to_index, to_pinky) if side == "r" else cross1(to_pinky, to_index)
    return sub1(points[_MIDDLE], wrist), normal


def _local(points: Points, fingers: Vec3, normal: Vec3, side: Side) -> Points | None:
    """hand._local_basis + hand._to_canonical: every point relative to the wrist in the
    canonical right-hand local frame (spec §2.4, §3.2: the left hand's x negated); None
    where the hand frame is degenerate (every angle NaN)."""
    y = unit1(fingers, _EPS)
    z = unit1(reject1(normal, y), _EPS)
    if not (y[0] == y[0] and z[0] == z[0]):
        return None
    x0, x1, x2 = cross1(y, z)
    y0, y1, y2 = y
    z0, z1, z2 = z
    w0, w1, w2 = points[_WRIST]
    sign = -1.0 if side == "l" else 1.0
    out: Points = []
    for p in points:  # einsum's sums, from +0.0
        v0, v1, v2 = p[0] - w0, p[1] - w1, p[2] - w2
        out.append((sign * (0.0 + x0 * v0 + x1 * v1 + x2 * v2), 0.0 + y0 * v0 + y1 * v1 + y2 * v2,
                    0.0 + z0 * v0 + z1 * v1 + z2 * v2))
    return out


def _project(v: Vec3, axis: Vec3) -> Vec3:
    """``v`` with its component along the unit ``axis`` removed (hand._signed_angle's step)."""
    ax, ay, az = axis
    k = 0.0 + v[0] * ax + v[1] * ay + v[2] * az
    return v[0] - k * ax, v[1] - k * ay, v[2] - k * az


def _angle_about(p: Vec3, q: Vec3, axis: Vec3) -> float:
    """hand._signed_angle from ``p`` to ``q`` (both already projected off the unit ``axis``)."""
    p0, p1, p2 = p
    q0, q1, q2 = q
    ax, ay, az = axis
    return atan2(0.0 + (p1 * q2 - p2 * q1) * ax + (p2 * q0 - p0 * q2) * ay + (p0 * q1 - p1 * q0) * az,
                 0.0 + p0 * q0 + p1 * q1 + p2 * q2)


def _pca_lateral(v1: Vec3, v2: Vec3, v3: Vec3, mx: float, my: float) -> tuple[float, float, float]:
    """hand._pca_lateral of one finger: ``(ℓx, ℓy)`` = ``d_pca × Z`` of the major axis of the
    palm-plane projections of three vectors (signed along the metacarpal) and the spread."""
    mxx = 0.0 + v1[0] * v1[0] + v2[0] * v2[0] + v3[0] * v3[0]
    myy = 0.0 + v1[1] * v1[1] + v2[1] * v2[1] + v3[1] * v3[1]
    mxy = 0.0 + v1[0] * v1[1] + v2[0] * v2[1] + v3[0] * v3[1]
    theta = 0.5 * atan2(2.0 * mxy, mxx - myy)
    dx, dy = cos(theta), sin(theta)
    sign = -1.0 if dx * mx + dy * my < 0.0 else 1.0
    half = 0.5 * (mxx - myy)
    return dy * sign, -dx * sign, sqrt(0.5 * (mxx + myy) + sqrt(half * half + mxy * mxy))


def _lateral_side(lx: float, ly: float, meta_turn: float) -> tuple[float, float, float]:
    """hand._lateral_side: the unit lateral axis (in the palm plane) and the side in degrees
    (NaN for a zero axis)."""
    n = sqrt(lx * lx + ly * ly)
    if not n > 0.0:
        return math.nan, math.nan, math.nan
    lx, ly = lx / n, ly / n
    turn = atan2(ly, lx) - meta_turn
    return lx, ly, ((turn + math.pi) % (2.0 * math.pi) - math.pi) * _DEG


def _reading(m: Vec3, b1: Vec3, b2: Vec3, b3: Vec3, splay: float,
             ranges: tuple[float, float]) -> tuple[float, float, float, float, bool]:
    """``(curl, distal, fold, side)`` (degrees) of one of index…pinky and whether it is in
    range (spec §4.3 "Finger geometry", :func:`posewire.producers.hand._finger_reading`,
    joint ranges :func:`_within_joint_ranges`): the tip's reading first, the
    other four only when it is not within range (it is then taken)."""
    mx, my = m[0], m[1]
    lpx, lpy, spread = _pca_lateral(b1, b2, b3, mx, my)
    p2 = (b1[0] + b2[0], b1[1] + b2[1], b1[2] + b2[2])
    tip = (p2[0] + b3[0], p2[1] + b3[1], p2[2] + b3[2])
    n1 = sqrt(b1[0] * b1[0] + b1[1] * b1[1] + b1[2] * b1[2])
    n2 = sqrt(b2[0] * b2[0] + b2[1] * b2[1] + b2[2] * b2[2])
    n3 = sqrt(b3[0] * b3[0] + b3[1] * b3[1] + b3[2] * b3[2])
    meta_turn = atan2(-mx, my)
    tn = sqrt(tip[0] * tip[0] + tip[1] * tip[1] + tip[2] * tip[2])
    if tn > 0.0:
        tlx, tly = tip[1] / tn, -(tip[0] / tn)
        if tlx * lpx + tly * lpy < 0.0:
            tlx, tly = -tlx, -tly
    else:
        tlx = tly = math.nan
    tip_reading = (*_lateral_side(tlx, tly, meta_turn), tlx * tlx + tly * tly >= _FLAT_LATERAL)
    pick = -1
    if tip_reading[3] and abs(tip_reading[2] - splay) <= _SIDE_RANGE_DEG:
        pick, sides = 0, [tip_reading]
    else:
        sides = [tip_reading, *_other_readings(b1, b2, b3, p2, tip, (n1, n2, n3), (lpx, lpy, spread), mx, my,
                                               meta_turn)]
        tip_side, tip_valid = tip_reading[2], tip_reading[3]
        best = math.inf
        for k, (_, _, side_k, valid) in enumerate(sides):
            if valid and abs(side_k - splay) <= _SIDE_RANGE_DEG:
                distance = abs(side_k - tip_side) if tip_valid else 0.0
                if distance < best or pick < 0:
                    pick, best = k, distance
    within = pick >= 0
    if not within:
        best = math.inf
        for k, (_, _, side_k, valid) in enumerate(sides):
            if valid and (abs(side_k - splay) < best or pick < 0):
                pick, best = k, abs(side_k - splay)
    if pick >= 0:
        lx, ly, side, _ = sides[pick]
        lateral: Vec3 = (lx, ly, 0.0)
    else:  # a straight finger along the palm normal shows no direction: side 0 (its metacarpal)
        lateral = unit1((my, -mx, 0.0), _EPS)
        side = 0.0
    d = (-lateral[1], lateral[0], 0.0)  # Z × lateral
    # hand._signed_angle of (d, b1), (b1, b2), (b2, b3) about the lateral axis, each vector
    # projected off it once
    pd, p1, p2, p3 = (_project(v, lateral) for v in (d, b1, b2, b3))
    fold, curl, distal = _within_joint_ranges(
        _angle_about(pd, p1, lateral) * _DEG, _angle_about(p1, p2, lateral) * _DEG,
        _angle_about(p2, p3, lateral) * _DEG, ranges)
    return curl, distal, fold, side, (within or pick < 0) and -MCP_EXTENSION_DEG <= fold <= _FOLD_RANGE_DEG


def _within_joint_ranges(fold: float, curl: float, distal: float,
                         ranges: tuple[float, float]) -> tuple[float, float, float]:
    """hand._within_joint_ranges of one finger (degrees; ``ranges`` = its PIP and DIP ranges)."""
    curl_range, distal_range = ranges
    kept = min(max(distal, -DIP_EXTENSION_DEG), distal_range) if distal == distal else distal
    excess = distal - kept
    curl = curl + (excess if isfinite(excess) else 0.0)
    curl_kept = min(max(curl, -PIP_EXTENSION_DEG), curl_range) if curl == curl else curl
    excess = curl - curl_kept
    return fold + (excess if isfinite(excess) else 0.0), curl_kept, kept


def _other_readings(b1: Vec3, b2: Vec3, b3: Vec3, p2: Vec3, tip: Vec3, lengths: Vec3, pca: Vec3, mx: float,
                    my: float, meta_turn: float) -> list[tuple[float, float, float, bool]]:
    """Readings (1)–(4) of hand._finger_reading: ``(ℓx, ℓy, side, valid)`` of the bend axis
    plus spread, the phalanges' spread, the joints' spread and the bend axis."""
    n1, n2, n3 = lengths
    lpx, lpy, spread = pca
    ptx, pty, spread_pts = _pca_lateral(b1, p2, tip, mx, my)
    length = n1 + n2 + n3
    if not length > _EPS:
        length = math.nan
    # the bend axis of the two distal joints (a zero-length phalanx adds 0)
    c12 = c23 = _ZERO3
    if n2 > _EPS:
        vx, vy, vz = b2[0] / n2, b2[1] / n2, b2[2] / n2
        if n1 > _EPS:  # cross(u1, u2)
            ux, uy, uz = b1[0] / n1, b1[1] / n1, b1[2] / n1
            c12 = (uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
        if n3 > _EPS:  # cross(u2, u3)
            wx, wy, wz = b3[0] / n3, b3[1] / n3, b3[2] / n3
            c23 = (vy * wz - vz * wy, vz * wx - vx * wz, vx * wy - vy * wx)
    bx, by = c12[0] + c23[0], c12[1] + c23[1]
    if bx * lpx + by * lpy < 0.0:  # bend · (d_pca × Z), Z-term 0
        bx, by = -bx, -by
    w2 = 2.0 * (spread / length)
    cx, cy = bx + w2 * lpx, by + w2 * lpy
    weight = spread / length
    pts_weight = spread_pts / length
    readings = ((cx, cy, 0.0 + cx * cx + cy * cy), (lpx, lpy, weight * weight),
                (ptx, pty, pts_weight * pts_weight), (bx, by, bx * bx + by * by))
    return [(*_lateral_side(lx, ly, meta_turn), seen >= _FLAT_LATERAL) for lx, ly, seen in readings]


def _finger(local: Points, chain: tuple[int, int, int, int], splay: float, ranges: tuple[float, float],
            depth: Vec3 | None) -> tuple[float, float, float, float, bool, float]:
    """``(curl, distal, fold, side)`` degrees of one of index…pinky (spec §4.3 "Finger geometry",
    :func:`posewire.producers.hand.finger_angles`), whether it was depth-repaired (with
    ``depth``, the camera's depth axis in the canonical local frame), and its fold as measured
    (before any depth repair)."""
    m, p, q, t = chain
    (mx, my, mz), (px, py, pz), (qx, qy, qz), (tx, ty, tz) = local[m], local[p], local[q], local[t]
    bones = ((px - mx, py - my, pz - mz), (qx - px, qy - py, qz - pz), (tx - qx, ty - qy, tz - qz))
    reading = _reading(local[m], *bones, splay, ranges)
    if reading[4] or depth is None:
        return reading[0], reading[1], _fold_within(reading[2]), reading[3], False, reading[2]
    kx, ky, kz = depth
    for scale in DEPTH_REPAIR_SCALES:  # spec §4.3 "Depth repair"
        f = scale - 1.0
        s1, s2_, s3 = ((bx + a * kx, by + a * ky, bz + a * kz)
                       for bx, by, bz in bones for a in (f * (0.0 + bx * kx + by * ky + bz * kz),))
        repaired = _reading(local[m], s1, s2_, s3, splay, ranges)
        if repaired[4]:
            return *repaired[:4], True, reading[2]
    return reading[0], reading[1], _fold_within(reading[2]), reading[3], False, reading[2]


def _fold_within(fold: float) -> float:
    # spec §4.3 "Joint ranges": no base knuckle bent back beyond MCP_EXTENSION_DEG (NaN stays)
    return fold if fold != fold or fold >= -MCP_EXTENSION_DEG else -MCP_EXTENSION_DEG


def _thumb(local: Points) -> tuple[float, float, float, float, float]:
    """``(curl, distal, fold, side, roll)`` degrees of the thumb (spec §4.3, roll NaN where the
    thumb is too straight to show it)."""
    c, m, i, t = THUMB_CHAIN
    t1, t2, t3, t4 = local[c], local[m], local[i], local[t]
    a1, a2, a3 = unit1(sub1(t2, t1), _EPS), unit1(sub1(t3, t2), _EPS), unit1(sub1(t4, t3), _EPS)
    # hand._thumb_swing: S = R_Z(fold)·R_tx(side); e1 = S·t_x, e2 = S·Z
    side = asin(min(max(a1[2], -1.0), 1.0)) if a1[2] == a1[2] else math.nan
    fold = atan2(_TY[0] * a1[1] - _TY[1] * a1[0], _TY[0] * a1[0] + _TY[1] * a1[1])
    cf, sf, cs, ss = cos(fold), sin(fold), cos(side), sin(side)
    e1 = (_TX[0] * cf - _TX[1] * sf, _TX[0] * sf + _TX[1] * cf, _TX[2])
    r0, r1 = -_TY[0] * ss, -_TY[1] * ss  # R_tx(side)·Z = Z·cos(side) − t_y·sin(side)
    e2 = (r0 * cf - r1 * sf, r0 * sf + r1 * cf, cs)
    c12, c23 = cross1(a1, a2), cross1(a2, a3)
    # hand._finger_angles: the larger cross product plus the other turned to its side
    first, second = (c12, c23) if dot1(c12, c12) >= dot1(c23, c23) else (c23, c12)
    k = -1.0 if dot1(first, second) < 0.0 else 1.0
    bend = (first[0] + k * second[0], first[1] + k * second[1], first[2] + k * second[2])
    bend_n = sqrt(dot1(bend, bend))
    if bend_n >= _OBSERVABLE_BEND:
        n = (bend[0] / bend_n, bend[1] / bend_n, bend[2] / bend_n)
        if dot1(n, e2) < 0.0:
            n = (-n[0], -n[1], -n[2])
        curl, distal = _chain_angles((a1, a2, a3), n)
        roll = atan2(dot1(n, e1), dot1(n, e2)) * _DEG
    else:  # too straight to see the bend axis: each bend's size, signed by its own side of e2
        curl = _angle(c12, a1, a2) * (-1.0 if dot1(c12, e2) < 0.0 else 1.0)
        distal = _angle(c23, a2, a3) * (-1.0 if dot1(c23, e2) < 0.0 else 1.0)
        roll = math.nan
    return curl * _DEG, distal * _DEG, fold * _DEG, side * _DEG, roll


def _depth_axis(fingers: Vec3, normal: Vec3, side: Side) -> Vec3:
    """The camera's depth axis (the world's third) in the canonical local frame: the third
    world components of X, Y, Z (hand._finger_angles: ``basis[:, 2, :]``, left x negated)."""
    y = unit1(fingers, _EPS)
    z = unit1(reject1(normal, y), _EPS)
    x = cross1(y, z)
    return ((-1.0 if side == "l" else 1.0) * x[2], y[2], z[2])


def _angles(points: Points, fingers: Vec3, normal: Vec3, side: Side,
            depth_ambiguous: bool = False) -> tuple[list[float], int, float]:
    # the angles, the count of depth-repaired fingers and the mean fold of index…pinky as
    # measured (before depth repair: the depth-flip check, spec §4.3 "Producer checks")
    out = [math.nan] * len(_FINGER_ROWS)
    local = _local(points, fingers, normal, side)
    if local is None:
        return out, 0, math.nan
    (curl, distal, fold, side_k), roll = _SLOTS[0], _ROLL
    out[curl], out[distal], out[fold], out[side_k], out[roll] = _thumb(local)
    depth = _depth_axis(fingers, normal, side) if depth_ambiguous else None
    repaired = 0
    measured = []
    for (curl, distal, fold, side_k), chain, splay, ranges in zip(_SLOTS[1:], _CHAINS, _SPLAY1, _RANGES1, strict=True):
        out[curl], out[distal], out[fold], out[side_k], fixed, seen = _finger(local, chain, splay, ranges, depth)
        repaired += fixed
        measured.append(seen)
    m0, m1, m2, m3 = measured
    return out, repaired, (m0 + m1 + m2 + m3) / 4.0


def finger_angles1(points: Points, *, side: Side, depth_ambiguous: bool = False) -> list[float]:
    """:func:`posewire.producers.hand.finger_angles` of one frame's 21 points (3-tuples, any
    isotropic unit, right-handed axes): the angles in degrees in the order of the hand's
    finger rows (``g_thumb_curl, g_thumb_fold, g_thumb_side, g_index_curl, …,
    g_thumb_roll, g_thumb_distal, …, g_pinky_distal``)."""
    return _angles(points, *_frame(points, side), side, depth_ambiguous)[0]


def _depth_mirrored(points: Points) -> Points:
    # hand._depth_mirrored: z -> 2·z_wrist − z (the palm normal turns over)
    z2 = 2.0 * points[_WRIST][2]
    return [(x, y, z * -1.0 + z2) for x, y, z in points]


class HandDims1(NamedTuple):
    """:class:`posewire.producers.hand.HandDims` of one tracked hand: ``values`` the
    normalized palm dims ``(w_qx, w_qy, w_qz)`` then the finger rows (order of
    :func:`finger_angles1`), not yet clamped to the registry bounds."""

    values: list[float]
    palm_clamped: bool
    roll_unobservable: bool
    fingers_side_clamped: int
    depth_flipped: bool
    fingers_depth_repaired: int = 0


def hand_dims1(points: Points, axes: tuple[Vec3, Vec3, Vec3], *, side: Side,
               depth_ambiguous: bool = False) -> HandDims1 | None:
    """:func:`posewire.producers.hand.hand_dims` of one present hand (all 21 points finite)
    given the body axes ``(X, Y, Z)`` in world coordinates (spec §2.3); None where the
    palm frame is degenerate (not tracked)."""
    fingers, normal = _frame(points, side)
    f_body, n_body = to_frame1(axes, fingers), to_frame1(axes, normal)
    fn = sqrt(dot1(f_body, f_body))
    ortho = cross1(f_body, n_body)
    if not (fn > _EPS and sqrt(dot1(ortho, ortho)) > _PALM_MIN_SINE * max(fn * sqrt(dot1(n_body, n_body)), _EPS)):
        return None
    angles, repaired, measured_fold = _angles(points, fingers, normal, side, depth_ambiguous)
    flipped = False
    if depth_ambiguous and measured_fold < -DEPTH_FLIP_FOLD_DEG:
        # spec §4.3 "Producer checks": monocular depth read backward (the folds before depth
        # repair), taken mirrored
        points = _depth_mirrored(points)
        fingers, normal = _frame(points, side)
        angles, repaired, _ = _angles(points, fingers, normal, side, depth_ambiguous)
        f_body, n_body = to_frame1(axes, fingers), to_frame1(axes, normal)
        flipped = True
    # spec §4.2: palm_from_directions / palm_encode (left mirrored, canonical, clamp 0.98)
    y = unit1(f_body, _EPS)
    stored, clamped = palm_encode1(palm_from_axes1(y, unit1(reject1(n_body, y), _EPS)), side=side)
    # spec §4.3: (angle − neutral_deg) / angle_deg; thumb roll 0 where unobservable (seed 000 §4.3)
    values = [(a - n) / d for a, n, d in zip(angles, _FINGER_NEUTRAL1[side], _FINGER_DEG1[side], strict=True)]
    # spec §4.3: a finger turned past the side range keeps fold and curl; its side is counted
    side_clamped = sum(1 for k in _SIDE_SLOTS if abs(values[k]) > 1.0)
    unobservable = not isfinite(values[_ROLL])
    if unobservable:
        values[_ROLL] = 0.0
    return HandDims1([*stored, *values], clamped, unobservable, side_clamped, flipped, repaired)


def with_depth_gain1(points: Points, gain: float) -> Points:
    """:func:`posewire.producers.hand.with_depth_gain` of one frame's 21 points: the depth
    (third coordinate) scaled by ``gain`` about the wrist; the same list when ``gain`` is 1."""
    if gain == 1.0:
        return points
    wrist_z = points[0][2]
    return [(x, y, wrist_z + gain * (z - wrist_z)) for x, y, z in points]
