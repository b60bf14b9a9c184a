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
    _EPS,
    _FINGER_DEG,
    _FINGER_NEUTRAL,
    _FINGER_ROWS,
    _FLAT_LATERAL,
    _FOLD_COLUMNS,
    _OBSERVABLE_BEND,
    _PALM_MIN_SINE,
    _SIDE_COLUMNS,
    DEPTH_FLIP_FOLD_DEG,
    FINGER_CHAINS,
    HAND_POINTS,
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
_FOLDS = tuple(_FOLD_COLUMNS.tolist())
#: index…pinky: the side slots (the side-range count of spec §4.3)
_SIDE_SLOTS = tuple(_SIDE_COLUMNS.tolist())
_ROW = {row: k for k, row in enumerate(_FINGER_ROWS)}
#: (curl, fold, side) slots of each finger in the finger rows, thumb first; the roll's slot.
_SLOTS = tuple(tuple(_ROW[f"g_{f}_{k}"] for k in ("curl", "fold", "side")) for f in ("thumb", *FINGER_CHAINS))
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


def _finger(local: Points, chain: tuple[int, int, int, int]) -> tuple[float, float, float]:
    """``(curl, fold, side)`` degrees of one of index…pinky (spec §4.3 "Finger geometry",
    :func:`posewire.producers.hand.finger_angles`)."""
    m, p, q, t = chain
    (mx, my, mz), (px, py, pz), (qx, qy, qz), (tx, ty, tz) = local[m], local[p], local[q], local[t]
    b1 = (px - mx, py - my, pz - mz)
    b2 = (qx - px, qy - py, qz - pz)
    b3 = (tx - qx, ty - qy, tz - qz)
    # the in-plane direction d: major axis of the palm-plane projections of the phalanges,
    # along the metacarpal
    mxx = 0.0 + b1[0] * b1[0] + b2[0] * b2[0] + b3[0] * b3[0]
    myy = 0.0 + b1[1] * b1[1] + b2[1] * b2[1] + b3[1] * b3[1]
    mxy = 0.0 + b1[0] * b1[1] + b2[0] * b2[1] + b3[0] * b3[1]
    theta = 0.5 * atan2(2.0 * mxy, mxx - myy)
    dx, dy = cos(theta), sin(theta)
    if dx * mx + dy * my < 0.0:
        dx, dy = -dx, -dy
    # the bend axis of the two distal joints (a zero-length phalanx adds 0), weighted
    # against d × Z by how well d is seen
    n1 = sqrt(b1[0] * b1[0] + b1[1] * b1[1] + b1[2] * b1[2])
    n2 = sqrt(b2[0] * b2[0] + b2[1] * b2[1] + b2[2] * b2[2])
    n3 = sqrt(b3[0] * b3[0] + b3[1] * b3[1] + b3[2] * b3[2])
    length = n1 + n2 + n3
    c12 = c23 = _ZERO3
    if n2 > _EPS:
        vx, vy, vz = b2[0] / n2, b2[1] / n2, b2[2] / n2
        if n1 > _EPS:  # cross(u1, u2)
            ux, uy, uz = b1[0] / n1, b1[1] / n1, b1[2] / n1
            c12 = (uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
        if n3 > _EPS:  # cross(u2, u3)
            wx, wy, wz = b3[0] / n3, b3[1] / n3, b3[2] / n3
            c23 = (vy * wz - vz * wy, vz * wx - vx * wz, vx * wy - vy * wx)
    bend = (c12[0] + c23[0], c12[1] + c23[1], c12[2] + c23[2])
    flip = -1.0 if bend[0] * dy + bend[1] * -dx < 0.0 else 1.0  # bend · (d × Z), Z-term 0
    half = 0.5 * (mxx - myy)
    spread_len = sqrt(0.5 * (mxx + myy) + sqrt(half * half + mxy * mxy))
    w2 = 2.0 * (spread_len / length if length > _EPS else math.nan)
    # the lateral axis, in the palm plane
    lateral = (bend[0] * flip + w2 * dy, bend[1] * flip + w2 * -dx, (bend[2] * flip + w2 * 0.0) * 0.0)
    squared = lateral[0] * lateral[0] + lateral[1] * lateral[1] + lateral[2] * lateral[2]
    if squared < _FLAT_LATERAL:  # a straight finger along the palm normal: side 0
        lateral = (my, -mx, 0.0)
        squared = my * my + mx * mx
    ln = sqrt(squared)
    lateral = (lateral[0] / ln, lateral[1] / ln, lateral[2] / ln) if ln > 0.0 else _NAN3
    d = (-lateral[1], lateral[0], 0.0)  # Z × lateral
    # side: the angle of d minus the metacarpal's, + toward the pinky
    turn = atan2(-d[0], d[1]) - atan2(-mx, my)
    side = ((turn + math.pi) % (2.0 * math.pi) - math.pi) * _DEG
    # _chain_angles((d, b1, b2, b3), lateral) written out: each vector projected off the
    # lateral axis once, then the signed angle of each consecutive pair (the same operations)
    ax, ay, az = lateral
    k = 0.0 + d[0] * ax + d[1] * ay + d[2] * az
    p0, p1, p2 = d[0] - k * ax, d[1] - k * ay, d[2] - k * az
    k = 0.0 + b1[0] * ax + b1[1] * ay + b1[2] * az
    q0, q1, q2 = b1[0] - k * ax, b1[1] - k * ay, b1[2] - k * az
    fold = atan2(0.0 + (p1 * q2 - p2 * q1) * ax + (p2 * q0 - p0 * q2) * ay + (p0 * q1 - p1 * q0) * az,
                 0.0 + p0 * q0 + p1 * q1 + p2 * q2)
    k = 0.0 + b2[0] * ax + b2[1] * ay + b2[2] * az
    p0, p1, p2 = b2[0] - k * ax, b2[1] - k * ay, b2[2] - k * az
    first = atan2(0.0 + (q1 * p2 - q2 * p1) * ax + (q2 * p0 - q0 * p2) * ay + (q0 * p1 - q1 * p0) * az,
                  0.0 + q0 * p0 + q1 * p1 + q2 * p2)
    k = 0.0 + b3[0] * ax + b3[1] * ay + b3[2] * az
    q0, q1, q2 = b3[0] - k * ax, b3[1] - k * ay, b3[2] - k * az
    second = atan2(0.0 + (p1 * q2 - p2 * q1) * ax + (p2 * q0 - p0 * q2) * ay + (p0 * q1 - p1 * q0) * az,
                   0.0 + p0 * q0 + p1 * q1 + p2 * q2)
    return 0.5 * (first + second) * _DEG, fold * _DEG, side


def _thumb(local: Points) -> tuple[float, float, float, float]:
    """``(curl, fold, side, roll)`` degrees of the thumb (spec §4.3, roll NaN where the
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
    bend = (c12[0] + c23[0], c12[1] + c23[1], c12[2] + c23[2])
    bend_n = sqrt(dot1(bend, bend))
    if bend_n >= _OBSERVABLE_BEND:
        n = (bend[0] / bend_n, bend[1] / bend_n, bend[2] / bend_n)
        if dot1(n, e2) < 0.0:
            n = (-n[0], -n[1], -n[2])
        first, second = _chain_angles((a1, a2, a3), n)
        curl = 0.5 * (first + second)
        roll = atan2(dot1(n, e1), dot1(n, e2)) * _DEG
    else:  # too straight to see the bend axis: the bend's size, signed by its side of e2
        curl = 0.5 * (_angle(c12, a1, a2) + _angle(c23, a2, a3)) * (-1.0 if dot1(bend, e2) < 0.0 else 1.0)
        roll = math.nan
    return curl * _DEG, fold * _DEG, side * _DEG, roll


def _angles(points: Points, fingers: Vec3, normal: Vec3, side: Side) -> list[float]:
    out = [math.nan] * len(_FINGER_ROWS)
    local = _local(points, fingers, normal, side)
    if local is None:
        return out
    (curl, fold, side_k), roll = _SLOTS[0], _ROLL
    out[curl], out[fold], out[side_k], out[roll] = _thumb(local)
    for (curl, fold, side_k), chain in zip(_SLOTS[1:], _CHAINS, strict=True):
        out[curl], out[fold], out[side_k] = _finger(local, chain)
    return out


def finger_angles1(points: Points, *, side: Side) -> list[float]:
    """:func:`posewire.producers.hand.finger_angles` of one frame's 21 points (3-tuples, any
    isotropic unit, right-handed axes): the angles in degrees in the order of the hand's
    finger rows (``g_thumb_curl, g_thumb_fold, g_thumb_side, g_index_curl, …,
    g_thumb_roll``)."""
    return _angles(points, *_frame(points, side), side)


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
    angles = _angles(points, fingers, normal, side)
    flipped = False
    f0, f1, f2, f3 = _FOLDS
    if depth_ambiguous and (angles[f0] + angles[f1] + angles[f2] + angles[f3]) / 4.0 < -DEPTH_FLIP_FOLD_DEG:
        # spec §4.3 "Producer checks": monocular depth read backward, taken mirrored
        points = _depth_mirrored(points)
        fingers, normal = _frame(points, side)
        angles = _angles(points, fingers, normal, side)
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
    return HandDims1([*stored, *values], clamped, unobservable, side_clamped, flipped)


def with_depth_gain1(points: Points, gain: float) -> Points:
    """:func:`posewire.producers.hand.with_depth_gain` of one frame's 21 points: the depth
    (third coordinate) scaled by ``gain`` about the wrist; the same list when ``gain`` is 1."""
    if gain == 1.0:
        return points
    wrist_z = points[0][2]
    return [(x, y, wrist_z + gain * (z - wrist_z)) for x, y, z in points]
