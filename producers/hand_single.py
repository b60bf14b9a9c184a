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

The NaN rules of the batch code carry over: a segment of zero length has no direction
(its cross products count as 0, ``np.nan_to_num``), a degenerate hand frame gives NaN for
every angle.
"""

from __future__ import annotations

import math
from typing import Literal

from posewire.codec.quaternion import Vec3, as_vec1, cross1, dot1, palm_encode1, palm_from_axes1
from posewire.producers.hand import (
    _EPS,
    _FINGER_DEG,
    _FINGER_ROWS,
    FINGER_CHAINS,
    HAND_POINTS,
    THUMB_CHAIN,
    THUMB_REST,
    THUMB_ROLL_MIN_CURL_DEG,
    THUMB_SIDE_AXIS,
)

__all__ = ["finger_angles1", "hand_dims1"]

Side = Literal["l", "r"]
Points = list[Vec3]

_NAN3: Vec3 = (math.nan, math.nan, math.nan)
_TY, _TX = as_vec1(THUMB_REST), as_vec1(THUMB_SIDE_AXIS)
_WRIST, _INDEX, _MIDDLE, _PINKY = (HAND_POINTS[k] for k in ("wrist", "index_mcp", "middle_mcp", "pinky_mcp"))
_CHAINS = tuple(FINGER_CHAINS.values())
_OBSERVABLE = 2.0 * math.sin(math.radians(THUMB_ROLL_MIN_CURL_DEG))
_FINGER_DEG1 = {s: tuple(v.tolist()) for s, v in _FINGER_DEG.items()}
_ROW = {row: k for k, row in enumerate(_FINGER_ROWS)}


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _unit(v: Vec3) -> Vec3:
    # hand._unit: NaN where the norm is at most _EPS
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return (v[0] / n, v[1] / n, v[2] / n) if n > _EPS else _NAN3


def _reject(v: Vec3, u: Vec3) -> Vec3:
    k = dot1(v, u)
    return (v[0] - k * u[0], v[1] - k * u[1], v[2] - k * u[2])


def _signed_angle(u: Vec3, v: Vec3, axis: Vec3) -> float:
    # hand._signed_angle: from u to v about axis, both projected off it (right-hand rule)
    up, vp = _reject(u, axis), _reject(v, axis)
    return math.atan2(dot1(cross1(up, vp), axis), dot1(up, vp))


def _angle(u: Vec3, v: Vec3) -> float:
    c = cross1(u, v)
    return math.atan2(math.sqrt(dot1(c, c)), dot1(u, v))


def _cross_or_zero(a: Vec3, b: Vec3) -> Vec3:
    # np.nan_to_num(cross(a, b)) for unit-or-NaN a, b: a NaN factor makes every component NaN
    c = cross1(a, b)
    return c if c[0] == c[0] and c[1] == c[1] and c[2] == c[2] else (0.0, 0.0, 0.0)


def _frame(points: Points, side: Side) -> tuple[Vec3, Vec3]:
    # hand.hand_frame: fingers = wrist -> middle MCP; palm normal out of the palm (spec §2.4)
    wrist = points[_WRIST]
    to_index, to_pinky = _sub(points[_INDEX], wrist), _sub(points[_PINKY], wrist)
    normal = cross1(to_index, to_pinky) if side == "r" else cross1(to_pinky, to_index)
    return _sub(points[_MIDDLE], wrist), normal


def _local(points: Points, side: Side) -> Points | None:
    """hand._local_basis + hand._to_canonical: every point relative to the wrist in the
    canonical right-hand local frame (spec §2.4, §3.2: the left hand's x negated); None
    where the hand frame is degenerate (every angle NaN)."""
    fingers, normal = _frame(points, side)
    y = _unit(fingers)
    z = _unit(_reject(normal, y))
    if not (y[0] == y[0] and z[0] == z[0]):
        return None
    x0, x1, x2 = cross1(y, z)
    y0, y1, y2 = y
    z0, z1, z2 = z
    w0, w1, w2 = points[_WRIST]
    out: Points = []
    for p in points:
        v0, v1, v2 = p[0] - w0, p[1] - w1, p[2] - w2
        lx = x0 * v0 + x1 * v1 + x2 * v2
        out.append((-lx if side == "l" else lx, y0 * v0 + y1 * v1 + y2 * v2, z0 * v0 + z1 * v1 + z2 * v2))
    return out


def _finger(local: Points, chain: tuple[int, int, int, int]) -> tuple[float, float, float]:
    """``(curl, fold, side)`` degrees of one of index…pinky (spec §4.3 "Finger geometry",
    :func:`posewire.producers.hand.finger_angles`)."""
    meta, pip, dip, tip = (local[i] for i in chain)
    b1, b2, b3 = _sub(pip, meta), _sub(dip, pip), _sub(tip, dip)
    # the in-plane direction d: major axis of the palm-plane projections of the phalanges
    mxx = b1[0] * b1[0] + b2[0] * b2[0] + b3[0] * b3[0]
    myy = b1[1] * b1[1] + b2[1] * b2[1] + b3[1] * b3[1]
    mxy = b1[0] * b1[1] + b2[0] * b2[1] + b3[0] * b3[1]
    theta = 0.5 * math.atan2(2.0 * mxy, mxx - myy)
    dx, dy = math.cos(theta), math.sin(theta)
    if dx * meta[0] + dy * meta[1] < 0.0:  # along the metacarpal
        dx, dy = -dx, -dy
    # the bend axis of the two distal joints, weighted against d × Z by how well d is seen
    n1, n2, n3 = (math.sqrt(dot1(b, b)) for b in (b1, b2, b3))
    length = n1 + n2 + n3
    u1, u2, u3 = ((b[0] / n, b[1] / n, b[2] / n) if n > _EPS else _NAN3 for b, n in ((b1, n1), (b2, n2), (b3, n3)))
    c12, c23 = _cross_or_zero(u1, u2), _cross_or_zero(u2, u3)
    bend = (c12[0] + c23[0], c12[1] + c23[1], c12[2] + c23[2])
    if bend[0] * dy + bend[1] * -dx < 0.0:  # bend · (d × Z)
        bend = (-bend[0], -bend[1], -bend[2])
    half = 0.5 * (mxx - myy)
    spread_len = math.sqrt(0.5 * (mxx + myy) + math.sqrt(half * half + mxy * mxy))
    w2 = 2.0 * (spread_len / length if length > _EPS else math.nan)
    lateral = (bend[0] + w2 * dy, bend[1] + w2 * -dx, 0.0)  # in the palm plane
    if dot1(lateral, lateral) < 1e-18:  # a straight finger along the palm normal: side 0
        lateral = (meta[1], -meta[0], 0.0)
    ln = math.sqrt(dot1(lateral, lateral))
    lateral = (lateral[0] / ln, lateral[1] / ln, lateral[2] / ln) if ln > 0.0 else _NAN3
    d = (-lateral[1], lateral[0], 0.0)  # Z × lateral
    turn = math.atan2(-d[0], d[1]) - math.atan2(-meta[0], meta[1])
    side = math.degrees((turn + math.pi) % (2.0 * math.pi) - math.pi)
    fold = math.degrees(_signed_angle(d, b1, lateral))
    curl = math.degrees(0.5 * (_signed_angle(b1, b2, lateral) + _signed_angle(b2, b3, lateral)))
    return curl, fold, side


def _thumb(local: Points) -> tuple[float, float, float, float]:
    """``(curl, fold, side, roll)`` degrees of the thumb (spec §4.3, roll NaN where the
    thumb is too straight to show it)."""
    t1, t2, t3, t4 = (local[i] for i in THUMB_CHAIN)
    a1, a2, a3 = _unit(_sub(t2, t1)), _unit(_sub(t3, t2)), _unit(_sub(t4, t3))
    # hand._thumb_swing: S = R_Z(fold)·R_tx(side); e1 = S·t_x, e2 = S·Z
    side = math.asin(min(max(a1[2], -1.0), 1.0)) if a1[2] == a1[2] else math.nan
    fold = math.atan2(_TY[0] * a1[1] - _TY[1] * a1[0], _TY[0] * a1[0] + _TY[1] * a1[1])
    cf, sf, cs, ss = math.cos(fold), math.sin(fold), math.cos(side), math.sin(side)
    e1 = (_TX[0] * cf - _TX[1] * sf, _TX[0] * sf + _TX[1] * cf, _TX[2])
    r0, r1 = -_TY[0] * ss, -_TY[1] * ss  # R_tx(side)·Z = Z·cos(side) − t_y·sin(side)
    e2 = (r0 * cf - r1 * sf, r0 * sf + r1 * cf, cs)
    c12, c23 = cross1(a1, a2), cross1(a2, a3)
    bend = (c12[0] + c23[0], c12[1] + c23[1], c12[2] + c23[2])
    bend_n = math.sqrt(dot1(bend, bend))
    if bend_n >= _OBSERVABLE:
        n = (bend[0] / bend_n, bend[1] / bend_n, bend[2] / bend_n)
        if dot1(n, e2) < 0.0:
            n = (-n[0], -n[1], -n[2])
        curl = 0.5 * (_signed_angle(a1, a2, n) + _signed_angle(a2, a3, n))
        roll = math.degrees(math.atan2(dot1(n, e1), dot1(n, e2)))
    else:  # too straight to see the bend axis: the bend's size, signed by its side of e2
        curl = 0.5 * (_angle(a1, a2) + _angle(a2, a3)) * (-1.0 if dot1(bend, e2) < 0.0 else 1.0)
        roll = math.nan
    return math.degrees(curl), math.degrees(fold), math.degrees(side), roll


def finger_angles1(points: Points, *, side: Side) -> list[float]:
    """:func:`posewire.producers.hand.finger_angles` of one frame's 21 points (3-tuples, any
    isotropic unit, right-handed axes): the angles in degrees in the order of the hand's
    finger rows (``g_thumb_curl, g_thumb_fold, g_thumb_side, g_index_curl, …,
    g_thumb_roll``)."""
    local = _local(points, side)
    out = [math.nan] * len(_FINGER_ROWS)
    if local is None:
        return out
    curl, fold, side_t, roll = _thumb(local)
    out[_ROW["g_thumb_curl"]], out[_ROW["g_thumb_fold"]], out[_ROW["g_thumb_side"]] = curl, fold, side_t
    out[_ROW["g_thumb_roll"]] = roll
    for name, chain in zip(FINGER_CHAINS, _CHAINS, strict=True):
        k = _ROW[f"g_{name}_curl"]
        out[k], out[_ROW[f"g_{name}_fold"]], out[_ROW[f"g_{name}_side"]] = _finger(local, chain)
    return out


def hand_dims1(points: Points, axes: tuple[Vec3, Vec3, Vec3], *, side: Side) -> tuple[list[float], bool, bool] | None:
    """:func:`posewire.producers.hand.hand_dims` of one present hand (all 21 points finite)
    given the body axes ``(X, Y, Z)`` in world coordinates (spec §2.3): ``(values,
    palm_clamped, roll_unobservable)`` with ``values`` the normalized palm dims
    ``(w_qx, w_qy, w_qz)`` then the finger rows (order of :func:`finger_angles1`), not yet
    clamped to the registry bounds; None where the palm frame is degenerate."""
    fingers, normal = _frame(points, side)
    x_axis, y_axis, z_axis = axes
    f_body = (dot1(x_axis, fingers), dot1(y_axis, fingers), dot1(z_axis, fingers))
    n_body = (dot1(x_axis, normal), dot1(y_axis, normal), dot1(z_axis, normal))
    fn = math.sqrt(dot1(f_body, f_body))
    ortho = cross1(f_body, n_body)
    if not (fn > _EPS and math.sqrt(dot1(ortho, ortho)) > 1e-6 * max(fn * math.sqrt(dot1(n_body, n_body)), _EPS)):
        return None
    # spec §4.2: palm_from_directions / palm_encode (left mirrored, canonical, clamp 0.98)
    y = _unit(f_body)
    stored, clamped = palm_encode1(palm_from_axes1(y, _unit(_reject(n_body, y))), side=side)
    # spec §4.3: finger angles / angle_deg; thumb roll 0 where unobservable (seed 000 §4.3)
    values = [a / deg for a, deg in zip(finger_angles1(points, side=side), _FINGER_DEG1[side], strict=True)]
    roll = values[-1]
    unobservable = not math.isfinite(roll)
    if unobservable:
        values[-1] = 0.0
    return [*stored, *values], clamped, unobservable
