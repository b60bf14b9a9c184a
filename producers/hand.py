"""Hand maths shared by every hand producer: palm quaternion and finger dims (spec §2.4, §3.2, §4.2, §4.3).

One piece of code serves the webcam (:mod:`posewire.producers.landmarks`, MediaPipe's 21 hand
landmarks) and VR (:mod:`posewire.producers.vr`, OpenXR/WebXR's 26/25 hand joints of seed
``004_da5cba9e344bbfc1.txt``): each producer turns its joints into the **common hand
layout** below, ``(B, 21, 3)`` points in MediaPipe's order, and calls :func:`hand_dims`.
Any right-handed world frame and any isotropic unit will do; the body frame enters only
through its rotation (spec §2.3, ``R = [X | Y | Z]`` with the body axes as columns in
world coordinates).

Joint correspondence (common index = MediaPipe hand landmark; OpenXR joints sit at the
*base* of the bone they name, so ``index-proximal`` is the index MCP knuckle):

=====  ==================  ======================  =====================
index  common / MediaPipe  OpenXR ``rig.vr.joint``  role here
=====  ==================  ======================  =====================
0      wrist               ``wrist``               hand frame origin (§2.4)
1      thumb_cmc           ``thumb-metacarpal``    thumb base
2      thumb_mcp           ``thumb-proximal``
3      thumb_ip            ``thumb-distal``
4      thumb_tip           ``thumb-tip``
5      index_mcp           ``index-proximal``      hand frame (palm normal)
6      index_pip           ``index-intermediate``
7      index_dip           ``index-distal``
8      index_tip           ``index-tip``
9      middle_mcp          ``middle-proximal``     hand frame (fingers axis)
10–12  middle_pip/dip/tip  ``middle-intermediate/distal/tip``
13     ring_mcp            ``ring-proximal``
14–16  ring_pip/dip/tip    ``ring-intermediate/distal/tip``
17     pinky_mcp           ``little-proximal``     hand frame (palm normal)
18–20  pinky_pip/dip/tip   ``little-intermediate/distal/tip``
—      (none)              ``palm``                not used
—      (none)              ``index/middle/ring/little-metacarpal``  not used
=====  ==================  ======================  =====================

MediaPipe has no finger metacarpal base nor palm point; the "metacarpal" of a finger is
therefore the wrist → MCP segment on both producers, and OpenXR's ``palm`` and
``*-metacarpal`` joints are not used by the maths (so WebXR's 25 joints, without ``palm``,
give exactly the same dims as OpenXR's 26). ``g_thumb_roll`` is the only dim that needs a
joint *orientation* (:func:`thumb_roll`); positions alone cannot see it (seed 000 §4.3:
default 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.quaternion import cross_unchecked, palm_encode_unchecked, palm_from_axes_unchecked
from posewire.codec.registry import REGISTRY

__all__ = [
    "CHIRALITY_MIN",
    "DEPTH_FLIP_FOLD_DEG",
    "DEPTH_GAINS",
    "DEPTH_GAIN_MIN_FRAMES",
    "DEPTH_REPAIR_SCALES",
    "DIP_EXTENSION_DEG",
    "FINGERS",
    "FINGER_CHAINS",
    "HAND_BONES",
    "HAND_POINTS",
    "MCP_EXTENSION_DEG",
    "N_HAND_POINTS",
    "PIP_EXTENSION_DEG",
    "THUMB_CHAIN",
    "THUMB_REST",
    "THUMB_ROLL_MIN_CURL_DEG",
    "THUMB_SIDE_AXIS",
    "HandDims",
    "bone_length_ratios",
    "depth_gain_spread",
    "estimate_depth_gain",
    "finger_angles",
    "gain_measure",
    "hand_chirality",
    "hand_dims",
    "hand_frame",
    "least_gain",
    "thumb_roll",
    "with_depth_gain",
]

F64 = NDArray[np.float64]
Bool = NDArray[np.bool_]
Side = Literal["l", "r"]

#: Number of points of the common hand layout (MediaPipe's hand landmarks).
N_HAND_POINTS = 21
#: Named common-layout indices used by the hand frame and the calibration (MediaPipe names).
HAND_POINTS: Mapping[str, int] = {
    "wrist": 0, "thumb_cmc": 1, "thumb_mcp": 2, "thumb_ip": 3, "thumb_tip": 4,
    "index_mcp": 5, "middle_mcp": 9, "middle_pip": 10, "middle_dip": 11, "middle_tip": 12,
    "pinky_mcp": 17,
}
#: (mcp, pip, dip, tip) common indices of index, middle, ring, pinky.
FINGER_CHAINS: Mapping[str, tuple[int, int, int, int]] = {
    "index": (5, 6, 7, 8), "middle": (9, 10, 11, 12), "ring": (13, 14, 15, 16), "pinky": (17, 18, 19, 20),
}
#: (cmc, mcp, ip, tip) common indices of the thumb.
THUMB_CHAIN: tuple[int, int, int, int] = (1, 2, 3, 4)
#: The five fingers in registry order, thumb first (spec §4.3).
FINGERS: tuple[str, ...] = ("thumb", "index", "middle", "ring", "pinky")
#: Thumb rest direction in the canonical (right-hand) local frame, spec §4.3: 36.87° from
#: the fingers axis (+Y) toward the thumb side (+X), i.e. 53.13° from +X — the
#: ``thumb_01 → thumb_02`` direction of ``helix-humanoid@1``; ``g_thumb_fold = side = 0`` there.
THUMB_REST: F64 = np.array([0.6, 0.8, 0.0])
#: ``t_x = t_y × Z`` of spec §4.3 (the thumb's side axis at rest).
THUMB_SIDE_AXIS: F64 = cross_unchecked(THUMB_REST, np.array([0.0, 0.0, 1.0]))
#: A thumb bent less than this (degrees, each joint on average) has no measurable roll:
#: the roll is then sent as 0 and counted (spec §4.3).
THUMB_ROLL_MIN_CURL_DEG = 8.0
#: |u1 × u2 + u2 × u3| of a thumb bent THUMB_ROLL_MIN_CURL_DEG at each joint.
_OBSERVABLE_BEND = float(2.0 * np.sin(np.radians(THUMB_ROLL_MIN_CURL_DEG)))
#: Depth flip (camera producers, spec §4.3): a hand whose index…pinky fold backward by
#: more than this on average (degrees) is taken as depth-flipped (its depth mirror folds
#: every finger forward by exactly as much).
DEPTH_FLIP_FOLD_DEG = 60.0
#: Depth repair (camera producers, spec §4.3 "Finger geometry"): the factors tried, in this
#: order, on the camera depth of a finger's joints relative to its knuckle when its reading
#: lies out of range (the image positions kept); the first that reads in range is used.
DEPTH_REPAIR_SCALES: tuple[float, ...] = (0.5, 2.0, 0.0, -1.0)
#: The 20 bones of the common hand layout as (parent, child) indices: wrist -> each
#: finger's base, then along each finger (spec §4.3 "Hand depth gain").
HAND_BONES: tuple[tuple[int, int], ...] = (
    (0, 1), (1, 2), (2, 3), (3, 4), *((0, c[0]) for c in FINGER_CHAINS.values()),
    *((a, b) for c in FINGER_CHAINS.values() for a, b in pairwise(c)))
#: Depth gains a camera producer tries (spec §4.3 "Hand depth gain"): 1.00, 1.05 … 5.00.
DEPTH_GAINS: F64 = np.round(np.arange(1.0, 5.0 + 1e-9, 0.05), 2)
#: Frames with the hand needed to estimate its depth gain; with fewer the gain is 1.
DEPTH_GAIN_MIN_FRAMES = 10
#: Measures of two depth gains this close are a tie (spec §4.3 "Hand depth gain"): a rigid
#: hand's measure at its gain is round-off, not 0, and must not lose to a clamped 0.
DEPTH_GAIN_TIE = 1e-9
_BONE_PARENT = np.array([a for a, _ in HAND_BONES], dtype=np.intp)
_BONE_CHILD = np.array([b for _, b in HAND_BONES], dtype=np.intp)
_DEPTH_GAINS_SQUARED: F64 = DEPTH_GAINS * DEPTH_GAINS
_EPS = 1e-9
#: Squared length of a finger's lateral axis under which the finger is taken straight
#: along the palm normal (no direction: side 0, its metacarpal's lateral axis).
_FLAT_LATERAL = 1e-18
#: |fingers × palm normal| under this fraction of |fingers|·|normal|: a degenerate palm frame.
_PALM_MIN_SINE = 1e-6
_MCP, _PIP, _DIP, _TIP = (np.array(c) for c in zip(*FINGER_CHAINS.values(), strict=True))
_XY = np.array([1.0, 1.0, 0.0])
_ANGLE_DEG = {d.id: float(d.row.angle_deg) for d in REGISTRY.dimensions if d.row.angle_deg is not None}
#: Finger rows (no side suffix) in the order of :func:`hand_dims`'s values: curl, fold, side per
#: finger, the thumb roll, then each finger's distal bend (the registry's order, spec §4.3).
_FINGER_ROWS: tuple[str, ...] = (*(f"g_{f}_{k}" for f in FINGERS for k in ("curl", "fold", "side")), "g_thumb_roll",
                                 *(f"g_{f}_distal" for f in FINGERS))
_ROLL_COLUMN = _FINGER_ROWS.index("g_thumb_roll")
_FINGER_DEG: dict[str, F64] = {s: np.array([_ANGLE_DEG[f"{r}_{s}"] for r in _FINGER_ROWS]) for s in ("l", "r")}
#: ``neutral_deg`` of the same rows (0 where none): normalized = (angle − neutral) / angle_deg
_FINGER_NEUTRAL: dict[str, F64] = {s: np.array([REGISTRY.by_id[f"{r}_{s}"].row.neutral_deg or 0.0
                                                for r in _FINGER_ROWS]) for s in ("l", "r")}
#: columns of index…pinky side (then fold, curl: minus 1, minus 2) in _FINGER_ROWS
_SIDE_COLUMNS = np.array([_FINGER_ROWS.index(f"g_{f}_side") for f in FINGER_CHAINS])
_FOLD_COLUMNS = _SIDE_COLUMNS - 1
#: index…pinky: relaxed splay σ (side rows' neutral_deg), side and fold ranges (degrees at |n| = 1)
_SPLAY = np.array([REGISTRY.by_id[f"g_{f}_side_r"].row.neutral_deg or 0.0 for f in FINGER_CHAINS])
_SIDE_RANGE_DEG = _ANGLE_DEG["g_index_side_r"]
_FOLD_RANGE_DEG = _ANGLE_DEG["g_index_fold_r"]
#: index…pinky: the PIP (curl) and DIP (distal) flexion limits, degrees at n = +1 (spec §4.3
#: "Joint ranges")
_CURL_RANGE_DEG = np.array([_ANGLE_DEG[f"g_{f}_curl_r"] for f in FINGER_CHAINS])
_DISTAL_RANGE_DEG = np.array([_ANGLE_DEG[f"g_{f}_distal_r"] for f in FINGER_CHAINS])
#: index…pinky: how far a PIP and a DIP bend backward (hyperextension, degrees) in a real hand
#: (spec §4.3 "Joint ranges"); a producer sends no joint beyond
PIP_EXTENSION_DEG = 10.0
DIP_EXTENSION_DEG = 20.0
#: index…pinky: how far a base knuckle (MCP) bends backward in a real hand (degrees): a fold
#: below it is out of range (depth repair, spec §4.3), and sent at it where no repair helps
MCP_EXTENSION_DEG = 45.0


def _unit(v: F64) -> F64:
    norm = np.sqrt((v * v).sum(-1, keepdims=True))  # np.linalg.norm's own arithmetic, without its overhead
    out: F64 = v / np.where(norm > _EPS, norm, np.nan)
    return out


def _norm(v: F64) -> F64:
    out: F64 = np.sqrt((v * v).sum(-1))  # as np.linalg.norm(v, axis=-1), without its overhead
    return out


def _dot(a: F64, b: F64) -> F64:
    out: F64 = (a * b).sum(-1)
    return out


def _signed_angle(u: F64, v: F64, axis: F64) -> F64:
    """Signed angle (radians) from ``u`` to ``v`` about unit ``axis`` after projecting both
    onto the plane orthogonal to it (right-hand rule), shapes ``(..., 3)`` -> ``(...)``."""
    up = u - _dot(u, axis)[..., None] * axis
    vp = v - _dot(v, axis)[..., None] * axis
    out: F64 = np.arctan2(_dot(cross_unchecked(up, vp), axis), _dot(up, vp))
    return out


def _angle(u: F64, v: F64) -> F64:
    """Unsigned angle (radians) between ``u`` and ``v`` ``(..., 3)``."""
    out: F64 = np.arctan2(_norm(cross_unchecked(u, v)), _dot(u, v))
    return out


def hand_frame(hand: F64, *, side: Side) -> tuple[F64, F64]:
    """Fingers direction and palm normal ``(B, 3)`` (not normalized, world frame) of
    common-layout hand points ``(B, 21, 3)`` (spec §2.4): fingers = wrist → middle MCP;
    normal = (index MCP − wrist) × (pinky MCP − wrist) for the right hand, the reverse for
    the left, so that it points out of the palm on both (right-handed world frames)."""
    wrist = hand[:, HAND_POINTS["wrist"]]
    to_index = hand[:, HAND_POINTS["index_mcp"]] - wrist
    to_pinky = hand[:, HAND_POINTS["pinky_mcp"]] - wrist
    normal = cross_unchecked(to_index, to_pinky) if side == "r" else cross_unchecked(to_pinky, to_index)
    return hand[:, HAND_POINTS["middle_mcp"]] - wrist, normal


def _orthonormal(fingers: F64, normal: F64) -> tuple[F64, F64]:
    """Unit fingers axis and the unit palm normal made orthogonal to it (Gram-Schmidt,
    spec §2.4); NaN where degenerate."""
    y = _unit(fingers)
    return y, _unit(normal - _dot(normal, y)[:, None] * y)


def _local_basis(hand: F64, side: Side) -> F64:
    """Hand-local axes ``(B, 3, 3)`` as columns (X, Y, Z of spec §2.4) in world coordinates."""
    y, z = _orthonormal(*hand_frame(hand, side=side))
    x = cross_unchecked(y, z)
    return np.stack([x, y, z], axis=-1)


def _to_canonical(basis: F64, vectors: F64, side: Side) -> F64:
    """World vectors ``(B, K, 3)`` -> canonical right-hand local coordinates (spec §3.2:
    the left hand's local x is negated so that +X points toward the thumb on both)."""
    local: F64 = np.einsum("bji,bkj->bki", basis, vectors)
    if side == "l":
        local = local * np.array([-1.0, 1.0, 1.0])
    return local


def _rot_z(v: F64, cos_a: F64, sin_a: F64) -> F64:
    out: F64 = np.stack([v[..., 0] * cos_a - v[..., 1] * sin_a, v[..., 0] * sin_a + v[..., 1] * cos_a,
                         v[..., 2]], axis=-1)
    return out


def _thumb_swing(meta: F64) -> tuple[F64, F64, F64, F64]:
    """Thumb fold and side (radians) of unit canonical metacarpal directions ``(B, 3)``
    and the swung side axis ``e1 = S·t_x`` and palm axis ``e2 = S·Z`` with
    ``S = R_Z(fold)·R_tx(side)`` (spec §4.3)."""
    side = np.arcsin(np.clip(meta[:, 2], -1.0, 1.0))
    ty, tx = THUMB_REST, THUMB_SIDE_AXIS
    fold = np.arctan2(ty[0] * meta[:, 1] - ty[1] * meta[:, 0], ty[0] * meta[:, 0] + ty[1] * meta[:, 1])
    cf, sf = np.cos(fold), np.sin(fold)
    cs, ss = np.cos(side), np.sin(side)
    e1 = _rot_z(np.broadcast_to(tx, meta.shape), cf, sf)
    # R_tx(side)·Z = Z·cos(side) − t_y·sin(side)
    e2 = _rot_z(np.stack([-ty[0] * ss, -ty[1] * ss, cs], axis=-1), cf, sf)
    return fold, side, e1, e2


def _lateral_side(lateral: F64, meta: F64) -> tuple[F64, F64]:
    """Unit lateral axes ``(..., 3)`` (z removed) and the side in degrees of the finger
    direction ``d = Z × ℓ`` from its metacarpal ``meta`` (spec §4.3); NaN where ``lateral``
    is NaN."""
    lateral = lateral * _XY
    norm = np.sqrt((lateral * lateral).sum(-1, keepdims=True))
    lateral = lateral / np.where(norm > 0.0, norm, np.nan)
    turn = np.arctan2(lateral[..., 1], lateral[..., 0]) - np.arctan2(-meta[..., 0], meta[..., 1])
    return lateral, np.degrees(np.mod(turn + np.pi, 2.0 * np.pi) - np.pi)


def _pca_lateral(vectors: F64, meta: F64) -> tuple[F64, F64]:
    """``d_pca × Z`` ``(B, 4, 3)`` of the major axis ``d_pca`` of the palm-plane projections of
    ``vectors (B, 4, 3, 3)`` (signed along the metacarpal), and the spread along it (the
    square root of the largest eigenvalue of their 2 × 2 scatter)."""
    mxx = (vectors[..., 0] ** 2).sum(-1)
    myy = (vectors[..., 1] ** 2).sum(-1)
    mxy = (vectors[..., 0] * vectors[..., 1]).sum(-1)
    theta = 0.5 * np.arctan2(2.0 * mxy, mxx - myy)
    dx, dy = np.cos(theta), np.sin(theta)
    sign = np.where(dx * meta[..., 0] + dy * meta[..., 1] < 0.0, -1.0, 1.0)
    spread = np.sqrt(0.5 * (mxx + myy) + np.sqrt((0.5 * (mxx - myy)) ** 2 + mxy**2))
    return np.stack([dy * sign, -dx * sign, np.zeros_like(dx)], axis=-1), spread


def _finger_reading(meta: F64, b1: F64, b2: F64, b3: F64) -> tuple[F64, F64, F64, F64, Bool]:
    """Side, fold, curl, distal (degrees, ``(B, 4)``) of index…pinky from their canonical metacarpals
    and phalanges ``(B, 4, 3)``, and whether the reading is in range (spec §4.3 "Finger
    geometry"): the finger's plane is read five ways, each exact on the consumer's finger —
    (0) the knuckle → tip direction, (1) the bend axis of the two distal joints plus
    ``d_pca × Z`` weighted by how far the finger spreads in the palm plane, (2) ``d_pca × Z``
    of the phalanges, (3) of the joints (PIP, DIP, TIP relative to the knuckle), (4) the bend
    axis — and the one taken is the tip's (0) when its side lies within ±30° of the relaxed
    splay, else the reading within that range nearest to the tip's (the first on ties), else
    (none in range) the one nearest the splay; about it the fold (metacarpal direction →
    proximal phalanx), the curl (proximal → middle phalanx, the PIP joint) and the distal bend
    (middle → distal phalanx, the DIP joint), each its own joint's signed angle. Whether the
    reading is in range is judged on the side and the fold."""
    # a missing distal joint (VR) leaves the finger's direction to the joints present
    segs = np.nan_to_num(np.stack([b1, b2, b3], axis=2))  # (B, 4, 3, 3)
    lateral_pca, spread = _pca_lateral(segs[..., :2], meta)
    joints = np.cumsum(segs, axis=2)
    lateral_pts, spread_pts = _pca_lateral(joints[..., :2], meta)
    n1, n2, n3 = (np.sqrt((b * b).sum(-1)) for b in (b1, b2, b3))
    length = np.nan_to_num(n1) + np.nan_to_num(n2) + np.nan_to_num(n3)
    length = np.where(length > _EPS, length, np.nan)
    u1, u2, u3 = (b / np.where(n > _EPS, n, np.nan)[..., None] for b, n in ((b1, n1), (b2, n2), (b3, n3)))
    # the bend axis of the two distal joints is the finger's lateral axis exactly; it barely
    # moves when the palm normal is a little off (a curved real palm), where the projected
    # direction of a folded finger swings: weight each by how well it is seen
    bend = np.nan_to_num(cross_unchecked(u1, u2)) + np.nan_to_num(cross_unchecked(u2, u3))
    bend = bend * np.where(_dot(bend, lateral_pca) < 0.0, -1.0, 1.0)[..., None]
    weight = spread / length
    tip = b1 + b2 + b3
    tip_norm = np.sqrt((tip * tip).sum(-1, keepdims=True))
    tip_unit = tip / np.where(tip_norm > 0.0, tip_norm, np.nan)
    tip_lateral = np.stack([tip_unit[..., 1], -tip_unit[..., 0], np.zeros_like(length)], axis=-1)
    tip_lateral = tip_lateral * np.where(_dot(tip_lateral, lateral_pca) < 0.0, -1.0, 1.0)[..., None]
    combined = (bend + (2.0 * weight)[..., None] * lateral_pca) * _XY
    # the tip first: taken whenever within range (so a single frame reads the others only
    # when it is not, hand_single._reading)
    readings = (tip_lateral, combined, lateral_pca, lateral_pts, bend * _XY)
    seen = ((tip_lateral[..., :2] ** 2).sum(-1), (combined * combined).sum(-1), weight * weight,
            (spread_pts / length) ** 2, (bend[..., :2] ** 2).sum(-1))
    laterals, sides = zip(*(_lateral_side(r, meta) for r in readings), strict=True)
    side_all = np.stack(sides)  # (5, B, 4)
    valid = np.stack(seen) >= _FLAT_LATERAL  # NaN compares False
    within = valid & (np.abs(side_all - _SPLAY) <= _SIDE_RANGE_DEG)
    target = side_all[0]
    distance = np.abs(side_all - np.where(valid[0], target, 0.0))
    distance = np.where(valid[0], distance, 0.0)  # no tip direction: the first in range
    pick = np.argmin(np.where(within, distance, np.inf), axis=0)
    nearest = np.argmin(np.where(valid, np.abs(side_all - _SPLAY), np.inf), axis=0)
    any_within = within.any(0)
    pick = np.where(any_within, pick, nearest)
    lateral = np.take_along_axis(np.stack(laterals), pick[None, ..., None], axis=0)[0]
    side_deg = np.take_along_axis(side_all, pick[None], axis=0)[0]
    # a straight finger along the palm normal shows no direction: side 0 (its metacarpal)
    flat: Bool = np.logical_not(valid.any(axis=0))
    if flat.any():
        lateral = np.where(flat[..., None], _unit(np.stack([meta[..., 1], -meta[..., 0], np.zeros_like(length)],
                                                           axis=-1)), lateral)
        side_deg = np.where(flat, 0.0, side_deg)
    d = np.stack([-lateral[..., 1], lateral[..., 0], np.zeros_like(length)], axis=-1)  # Z × lateral
    # spec §4.3 "Finger geometry": each joint's own bend about the finger's lateral axis
    fold, curl, distal = _within_joint_ranges(np.degrees(_signed_angle(d, b1, lateral)),
                                              np.degrees(_signed_angle(b1, b2, lateral)),
                                              np.degrees(_signed_angle(b2, b3, lateral)))
    ok = (any_within | flat) & (fold >= -MCP_EXTENSION_DEG) & (fold <= _FOLD_RANGE_DEG)
    return side_deg, fold, curl, distal, ok


def _within_joint_ranges(fold: F64, curl: F64, distal: F64) -> tuple[F64, F64, F64]:
    """Fold, curl and distal bend (degrees, ``(B, 4)``) with each distal joint's bend beyond
    its anatomical range passed on to the joint nearer the palm (spec §4.3 "Joint ranges"):
    the DIP's excess beyond ``[−DIP_EXTENSION_DEG, _DISTAL_RANGE_DEG]`` to the PIP, then the
    PIP's beyond ``[−PIP_EXTENSION_DEG, _CURL_RANGE_DEG]`` to the fold, so the middle and
    distal phalanges keep their directions; a missing joint (NaN) passes nothing on."""
    kept = np.clip(distal, -DIP_EXTENSION_DEG, _DISTAL_RANGE_DEG)
    excess = distal - kept
    curl = curl + np.where(np.isfinite(excess), excess, 0.0)
    curl_kept = np.clip(curl, -PIP_EXTENSION_DEG, _CURL_RANGE_DEG)
    excess = curl - curl_kept
    fold = fold + np.where(np.isfinite(excess), excess, 0.0)
    return fold, curl_kept, kept


def finger_angles(hand: F64, *, side: Side, depth_ambiguous: bool = False) -> dict[str, F64]:
    """Finger joint angles (degrees, each ``(B,)``) of common-layout hand points
    ``(B, 21, 3)`` (any isotropic unit, right-handed axes), keyed by registry row id
    without the side suffix (``g_index_curl`` …), spec §4.3 "Finger geometry".

    Works in the hand-local frame (§2.4) mirrored to the right hand for ``side="l"``
    (local x negated): X toward the thumb, Y fingers, Z palm normal. The exact inverse of
    the consumer's finger rotations:

    * index…pinky: the finger's plane is perpendicular to the palm, its lateral axis ``ℓ``
      read as :func:`_finger_reading` says (the knuckle → tip direction's plane where that
      is within the side range); ``d = Z × ℓ``. ``side`` = angle of ``d`` minus that of the
      metacarpal (wrist → MCP), + toward the pinky; ``fold`` = signed angle ``d`` →
      proximal phalanx about ``ℓ``; ``curl`` = signed angle proximal → middle phalanx (PIP)
      and ``distal`` = middle → distal phalanx (DIP), both about ``ℓ``. With ``depth_ambiguous`` (camera
      producers: monocular depth), a finger read out of range (side beyond ±30° of its
      splay, or fold as sent beyond ±120°) is read again with the camera depth (the third world
      axis) of its joints relative to its knuckle scaled by :data:`DEPTH_REPAIR_SCALES` in
      turn, and the first reading in range is taken (spec §4.3 "Depth repair").
    * thumb (rest ``t_y`` = :data:`THUMB_REST`, ``t_x = t_y × Z``): metacarpal ``a`` =
      cmc → mcp; ``side = asin(a_z)``, ``fold`` = angle about +Z from ``t_y`` to ``a``;
      the bend axis ``n`` of the two distal joints gives ``roll = atan2(n·e1, n·e2)``
      (``e1, e2`` = ``t_x``, ``Z`` swung with the metacarpal), the **signed** ``curl``
      (metacarpal → proximal phalanx, the MCP joint) and ``distal`` (proximal → distal
      phalanx, the IP joint) about ``n``; with less than :data:`THUMB_ROLL_MIN_CURL_DEG` of
      bend the roll is NaN (unobservable) and each bend is signed by its side of ``e2``.

    Rows with missing (NaN) points give NaN for the angles that use them.
    """
    return _finger_angles(hand, side, depth_ambiguous)[0]


def _finger_angles(hand: F64, side: Side,
                   depth_ambiguous: bool) -> tuple[dict[str, F64], NDArray[np.intp], F64]:
    """:func:`finger_angles`, how many of index…pinky were depth-repaired ``(B,)``, and the
    mean fold of index…pinky as measured, before any depth repair ``(B,)`` (degrees; the
    depth-flip check of spec §4.3 "Producer checks")."""
    basis = _local_basis(hand, side)
    local = _to_canonical(basis, hand - hand[:, :1], side)
    out: dict[str, F64] = {}
    # the four fingers at once: (B, 4, 3)
    meta = local[:, _MCP]
    b1, b2, b3 = local[:, _PIP] - meta, local[:, _DIP] - local[:, _PIP], local[:, _TIP] - local[:, _DIP]
    side_deg, fold, curl, distal, ok = _finger_reading(meta, b1, b2, b3)
    measured_fold: F64 = fold.mean(-1)
    repaired = np.zeros(ok.shape, dtype=bool)
    if depth_ambiguous and not ok.all():
        # spec §4.3 "Depth repair": the camera's depth axis (the world's third) in the canonical
        # local frame; each finger out of range tries its joints' depth relative to its knuckle
        # scaled by DEPTH_REPAIR_SCALES in turn (linear: the bones' depth scale alike)
        depth = basis[:, 2, :] * (np.array([-1.0, 1.0, 1.0]) if side == "l" else 1.0)
        for scale in DEPTH_REPAIR_SCALES:
            rows = np.flatnonzero(~ok.all(-1))
            if not rows.size:
                break
            axis = depth[rows, None, :]
            scaled = [b[rows] + (scale - 1.0) * _dot(b[rows], axis)[..., None] * axis for b in (b1, b2, b3)]
            s2, f2, c2, t2, ok2 = _finger_reading(meta[rows], *scaled)
            use = ok2 & ~ok[rows]
            side_deg[rows] = np.where(use, s2, side_deg[rows])
            fold[rows] = np.where(use, f2, fold[rows])
            curl[rows] = np.where(use, c2, curl[rows])
            distal[rows] = np.where(use, t2, distal[rows])
            ok[rows] |= use
            repaired[rows] |= use
    fold = np.maximum(fold, -MCP_EXTENSION_DEG)  # spec §4.3 "Joint ranges" (NaN stays NaN)
    for k, name in enumerate(FINGER_CHAINS):
        out[f"g_{name}_side"] = side_deg[:, k]
        out[f"g_{name}_fold"] = fold[:, k]
        out[f"g_{name}_curl"] = curl[:, k]
        out[f"g_{name}_distal"] = distal[:, k]
    t1, t2, t3, t4 = (local[:, i] for i in THUMB_CHAIN)
    a1, a2, a3 = _unit(t2 - t1), _unit(t3 - t2), _unit(t4 - t3)
    fold, side_t, e1, e2 = _thumb_swing(a1)
    # spec §4.3 "Thumb": the bend axis of the two joints whatever their signs: the larger
    # cross product plus the other turned to its side
    c12, c23 = cross_unchecked(a1, a2), cross_unchecked(a2, a3)
    larger = (_dot(c12, c12) >= _dot(c23, c23))[:, None]
    first, second = np.where(larger, c12, c23), np.where(larger, c23, c12)
    bend = first + np.where(_dot(first, second) < 0.0, -1.0, 1.0)[:, None] * second
    bend_n = _norm(bend)
    observable = bend_n >= _OBSERVABLE_BEND
    n = bend / np.where(observable, bend_n, 1.0)[:, None]
    n = n * np.where(_dot(n, e2) < 0.0, -1.0, 1.0)[:, None]
    n = np.where(observable[:, None], n, e2)
    out["g_thumb_fold"] = np.degrees(fold)
    out["g_thumb_side"] = np.degrees(side_t)
    # too straight to see the bend axis: each bend's size, signed by its own side of the palm axis
    sign12 = np.where(_dot(c12, e2) < 0.0, -1.0, 1.0)
    sign23 = np.where(_dot(c23, e2) < 0.0, -1.0, 1.0)
    out["g_thumb_curl"] = np.degrees(np.where(observable, _signed_angle(a1, a2, n), _angle(a1, a2) * sign12))
    out["g_thumb_distal"] = np.degrees(np.where(observable, _signed_angle(a2, a3, n), _angle(a2, a3) * sign23))
    out["g_thumb_roll"] = np.where(observable, np.degrees(np.arctan2(_dot(n, e1), _dot(n, e2))), np.nan)
    return out, repaired.sum(-1), measured_fold


def thumb_roll(hand: F64, thumb_dorsal: F64, *, side: Side) -> F64:
    """Thumb roll angle (degrees, ``(B,)``) about the thumb metacarpal's long axis
    (cmc → mcp), spec §4.3 ``g_thumb_roll``, from common-layout points ``(B, 21, 3)`` and
    the metacarpal's dorsal axis ``(B, 3)`` in the same world frame (OpenXR: the
    ``thumb-metacarpal`` joint's +Y, "out of the back of the finger").

    In the canonical right-hand local frame (left hand mirrored first, spec §3.2) the
    zero-roll dorsal axis is the back of the hand (−Z) swung with the metacarpal,
    ``−e2 = −R_Z(fold)·R_tx(side)·Z`` (:func:`finger_angles`); the roll is the signed
    angle from it to the measured dorsal axis about the metacarpal (right-hand rule on
    the canonical hand = ``+θ`` on the right, ``−θ`` physically on the left). NaN where
    inputs are missing.
    """
    basis = _local_basis(hand, side)
    local = _to_canonical(basis, np.stack([hand[:, THUMB_CHAIN[0]], hand[:, THUMB_CHAIN[1]], thumb_dorsal], axis=1)
                          - np.stack([hand[:, 0], hand[:, 0], np.zeros_like(thumb_dorsal)], axis=1), side)
    axis = _unit(local[:, 1] - local[:, 0])
    _, _, _, e2 = _thumb_swing(axis)
    out: F64 = np.degrees(_signed_angle(-e2, local[:, 2], axis))
    return out


def bone_length_ratios(hand: F64, *, bones: tuple[tuple[int, int], ...] = HAND_BONES,
                       gains: F64 = DEPTH_GAINS) -> F64:
    """The rigidity measure of spec §4.3 "Hand depth gain" for each frame and each gain of
    :data:`DEPTH_GAINS`: ``(B, G, 20)`` = ``ℓ²`` of every :data:`HAND_BONES` bone over the
    frame's mean over its bones, with ``ℓ² = Δx² + Δy² + g²·Δz²`` of hand points
    ``(B, 21, 3)`` whose third axis is the camera's depth (the hand's distance and size drop
    out; squares, not lengths: the noise on a point adds to ``ℓ²`` a term whose mean does
    not depend on the pose); NaN on the frames not usable (a point missing or a bone of zero
    length). Taken once per frame; :func:`estimate_depth_gain` reduces it over frames.
    ``bones`` and ``gains`` default to the hand's; the .pose reader passes the body's (spec §7.1)."""
    if bones is HAND_BONES:
        parent, child = _BONE_PARENT, _BONE_CHILD
    else:
        parent, child = np.array([a for a, _ in bones]), np.array([b for _, b in bones])
    squares = _DEPTH_GAINS_SQUARED if gains is DEPTH_GAINS else gains * gains
    delta = hand[:, child] - hand[:, parent]
    across = delta[..., 0] ** 2 + delta[..., 1] ** 2
    along = delta[..., 2] ** 2
    usable = np.isfinite(delta).all(axis=(-1, -2)) & (across + along > 0.0).all(-1)
    # computed bones × gains (the gains contiguous: numpy's inner loops run over them, several
    # times faster than over 20 bones), handed out as the (B, G, bones) view
    if usable.all():
        out: F64 = _over_mean(across[..., None] + along[..., None] * squares)
    else:
        out = np.full((hand.shape[0], len(bones), squares.size), np.nan)
        if usable.any():
            out[usable] = _over_mean(across[usable, :, None] + along[usable, :, None] * squares)
    return out.transpose(0, 2, 1)


def _over_mean(squared: F64) -> F64:
    # each frame's squares (B, bones, G) over their mean over the bones
    out: F64 = squared / (squared.sum(axis=1, keepdims=True) / squared.shape[1])
    return out


def estimate_depth_gain(ratios: F64, *, gains: F64 = DEPTH_GAINS) -> float | None:
    """The depth gain ``g`` (spec §4.3 "Hand depth gain") that keeps a hand's bones most
    constant over frames, from :func:`bone_length_ratios` ``(B, G, 20)`` of one hand's
    frames in their order: the gain of :data:`DEPTH_GAINS` with the least
    :func:`depth_gain_spread` (:func:`least_gain`: the first on ties within
    :data:`DEPTH_GAIN_TIE`, so a rigid hand measured without depth error gives exactly 1);
    None with fewer than :data:`DEPTH_GAIN_MIN_FRAMES` usable frames."""
    spread = depth_gain_spread(ratios)
    return None if spread is None else least_gain(spread, gains)


def least_gain(spread: F64, gains: F64 = DEPTH_GAINS) -> float:
    """The gain of ``gains`` whose :func:`depth_gain_spread` ``(G,)`` is least, the first of
    those within :data:`DEPTH_GAIN_TIE` of the least (spec §4.3)."""
    return float(gains[int(np.argmax(spread <= spread.min() + DEPTH_GAIN_TIE))])


def depth_gain_spread(ratios: F64) -> F64 | None:
    """:func:`estimate_depth_gain`'s measure ``(G,)`` of bone ratios ``(B, G, 20)`` (NaN rows:
    frames not usable), spec §4.3: per bone, over the usable frames, the mean ``m``, the
    variance ``v`` and, over the runs of three consecutive usable frames, the mean ``w`` of
    the squared second difference ``(r₋ − 2r + r₊)²`` (0 without such a run); the measure
    is the mean over bones of ``sqrt(max(v − w/6, 0)) / m``. Noise independent from frame
    to frame adds ``s²`` to ``v`` and ``6s²`` to ``w``, so ``v − w/6`` keeps the bones'
    change with the pose and drops the noise (spec §4.3 depth gain: the plain variance read a true gain
    of 2 as 1.3 at 6 mm of depth noise). Each gain's value depends only on its own column
    (the live calibration sums its terms as frames come and go); None with fewer than
    :data:`DEPTH_GAIN_MIN_FRAMES` usable frames."""
    usable = np.isfinite(ratios[:, 0, 0])
    n = int(usable.sum())
    if n < DEPTH_GAIN_MIN_FRAMES:
        return None
    rows = ratios[usable]
    mean = rows.mean(axis=0)
    variance = ((rows - mean) ** 2).mean(axis=0)
    runs = usable[2:] & usable[1:-1] & usable[:-2]
    if runs.any():
        second = ratios[2:][runs] - 2.0 * ratios[1:-1][runs] + ratios[:-2][runs]
        curvature: F64 = (second * second).mean(axis=0)
    else:
        curvature = np.zeros_like(variance)
    return gain_measure(mean, variance, curvature)


def gain_measure(mean: F64, variance: F64, curvature: F64) -> F64:
    """:func:`depth_gain_spread` from its per-bone terms ``(..., 20)``: the mean over bones
    of ``sqrt(max(v − w/6, 0)) / m`` (spec §4.3)."""
    out: F64 = (np.sqrt(np.maximum(variance - curvature / 6.0, 0.0)) / mean).mean(axis=-1)
    return out


#: A hand's chirality score (:func:`hand_chirality`) decides its side from this magnitude on,
#: with at least 4 of its 5 fingers agreeing (spec §7.1 "Hand-only photos").
CHIRALITY_MIN = 0.05


def hand_chirality(hand: F64) -> tuple[F64, NDArray[np.intp]]:
    """Which hand the points ``(..., 21, 3)`` are, from their own 3-D shape (spec §7.1): with
    ``n = (index_mcp − wrist) × (pinky_mcp − wrist)`` (out of the palm for a right hand in a
    right-handed frame, out of the back for a left one), the mean over the five fingers of the
    unit base → tip direction along ``n̂`` — fingers bend toward the palm, so a right hand
    scores > 0 and its mirror image < 0 — and how many fingers share the mean's sign. An open,
    flat hand scores near 0 (undecided). NaN where points are missing."""
    wrist = hand[..., 0, :]
    n = cross_unchecked(hand[..., 5, :] - wrist, hand[..., 17, :] - wrist)
    n = n / np.sqrt((n * n).sum(-1, keepdims=True))
    bases = [THUMB_CHAIN[0], *(c[0] for c in FINGER_CHAINS.values())]
    tips = [THUMB_CHAIN[3], *(c[3] for c in FINGER_CHAINS.values())]
    d = hand[..., tips, :] - hand[..., bases, :]
    along = (d * n[..., None, :]).sum(-1) / np.sqrt((d * d).sum(-1))
    score: F64 = along.mean(-1)
    agree: NDArray[np.intp] = (np.sign(along) == np.sign(score)[..., None]).sum(-1)
    return score, agree


def with_depth_gain(hand: F64, gain: float) -> F64:
    """Hand points ``(B, 21, 3)`` with their depth (third axis) scaled by ``gain`` about
    the wrist (spec §4.3 "Hand depth gain"); the same array when ``gain`` is 1."""
    if gain == 1.0:
        return hand
    out: F64 = hand.copy()
    out[..., 2] = hand[:, :1, 2] + gain * (hand[..., 2] - hand[:, :1, 2])
    return out


@dataclass(frozen=True)
class HandDims:
    """Hand dims of one side (spec §4.2, §4.3): ``values`` maps dim id (with the side
    suffix) -> ``(B,)`` normalized values (NaN where not estimated; not yet clamped to
    the registry bounds); ``tracked (B,)`` = the palm frame exists (present and not
    degenerate); ``palm_clamped (B,)`` = the palm vector part was clamped to 0.98;
    ``degenerate (B,)`` = present but the palm frame is degenerate; ``roll_unobservable
    (B,)`` = tracked but the thumb is too straight to see its roll (sent as 0);
    ``fingers_side_clamped (B,)`` = how many of index…pinky turned beyond the side range
    (their side is clamped to the rail, fold and curl sent as measured); ``depth_flipped
    (B,)`` = the hand was read depth-mirrored (camera only); ``fingers_depth_repaired (B,)``
    = how many of index…pinky were read in range only with their depth rescaled (camera
    only, spec §4.3 "Depth repair")."""

    values: Mapping[str, F64]
    tracked: Bool
    palm_clamped: Bool
    degenerate: Bool
    roll_unobservable: Bool | None = None
    fingers_side_clamped: NDArray[np.intp] | None = None
    depth_flipped: Bool | None = None
    fingers_depth_repaired: NDArray[np.intp] | None = None


def _angle_table(hand: F64, side: Side, depth_ambiguous: bool = False) -> tuple[F64, NDArray[np.intp], F64]:
    """:func:`finger_angles` as one ``(B, 21)`` array in ``_FINGER_ROWS`` order (degrees), the
    count of depth-repaired fingers ``(B,)`` and the mean measured fold (:func:`_finger_angles`)."""
    angles, repaired, measured_fold = _finger_angles(hand, side, depth_ambiguous)
    return np.stack([angles[row_id] for row_id in _FINGER_ROWS], axis=-1), repaired, measured_fold


def _depth_mirrored(hand: F64) -> F64:
    """The hand mirrored in depth about its wrist (``z → 2·z_wrist − z``), ``(B, 21, 3)``."""
    out: F64 = hand * np.array([1.0, 1.0, -1.0])
    out[..., 2] += 2.0 * hand[:, :1, 2]
    return out


def hand_dims(hand: F64, rotation: F64, present: Bool, *, side: Side,
              thumb_roll_deg: F64 | None = None, depth_ambiguous: bool = False) -> HandDims:
    """Palm and finger dims of common-layout hand points ``(B, 21, 3)`` in a right-handed
    world frame, given the body axes ``rotation (B, 3, 3)`` (columns X, Y, Z in world
    coordinates, spec §2.3) and the ``(B,)`` mask of frames whose hand frame points
    (0, 5, 9, 17) are present.

    Palm (spec §4.2 "Building q from landmarks"): fingers and palm normal of
    :func:`hand_frame` rotated into the body frame, :func:`posewire.codec.quaternion.palm_from_directions`,
    then :func:`posewire.codec.quaternion.palm_encode` (left mirrored, canonical, clamp 0.98).
    Fingers (§4.3): (:func:`finger_angles` − ``neutral_deg``) / ``angle_deg``; a finger
    (index…pinky) whose side lies beyond ±1 is counted (the caller clamps it to the rail);
    no finger is dropped for its angles. ``g_thumb_roll``: ``thumb_roll_deg / 90`` where given and
    finite, else the default 0 (seed 000 §4.3). ``depth_ambiguous`` (camera producers,
    whose depth is monocular): a hand read backward-folded beyond
    :data:`DEPTH_FLIP_FOLD_DEG` on average is taken depth-mirrored
    (:func:`_depth_mirrored`: the palm normal turns over, so every fold and curl changes
    sign exactly) for its palm and fingers, and counted; and a finger read out of range is
    depth-repaired (:func:`finger_angles`), and counted.
    Frames not tracked get NaN for every dim; finger dims of tracked frames are NaN only
    where their points are missing.
    """
    batch = hand.shape[0]
    fingers, normal = hand_frame(hand, side=side)
    masked = np.where(present[:, None], fingers, 0.0), np.where(present[:, None], normal, 0.0)
    f_body = np.einsum("bji,bj->bi", rotation, masked[0])
    n_body = np.einsum("bji,bj->bi", rotation, masked[1])
    fn = _norm(f_body)
    ortho = _norm(cross_unchecked(f_body, n_body))
    # a depth mirror keeps every length and |f × n|: the same rows are degenerate either way
    ok = present & (fn > _EPS) & (ortho > _PALM_MIN_SINE * np.maximum(fn * _norm(n_body), _EPS))
    rows = np.flatnonzero(ok)
    angles = np.full((batch, len(_FINGER_ROWS)), np.nan)
    flipped = np.zeros(batch, dtype=bool)
    repaired = np.zeros(batch, dtype=np.intp)
    if rows.size:
        angles[rows], repaired[rows], measured_fold = _angle_table(hand[rows], side, depth_ambiguous)
        if depth_ambiguous:  # spec §4.3 "Producer checks": depth flip, on the folds before depth repair
            flip_rows = rows[measured_fold < -DEPTH_FLIP_FOLD_DEG]
            if flip_rows.size:
                mirrored = _depth_mirrored(hand[flip_rows])
                angles[flip_rows], repaired[flip_rows], _ = _angle_table(mirrored, side, depth_ambiguous)
                flipped[flip_rows] = True
                fingers, normal = hand_frame(mirrored, side=side)
                f_body[flip_rows] = np.einsum("bji,bj->bi", rotation[flip_rows], fingers)
                n_body[flip_rows] = np.einsum("bji,bj->bi", rotation[flip_rows], normal)
    stored = np.full((batch, 3), np.nan)
    clamped = np.zeros(batch, dtype=bool)
    if rows.size:
        # palm_from_directions / palm_encode without their validation: the rows are
        # finite and non-degenerate (checked just above)
        q = palm_from_axes_unchecked(*_orthonormal(f_body[ok], n_body[ok]))
        stored[ok], clamped[ok] = palm_encode_unchecked(q, side=side)  # left: mirrored per §3.2
    values: dict[str, F64] = {f"w_q{axis}_{side}": stored[:, k] for k, axis in enumerate("xyz")}
    # the finger dims as columns of one (B, 21) array (_FINGER_ROWS)
    fingers_out = (angles - _FINGER_NEUTRAL[side]) / _FINGER_DEG[side]
    # spec §4.3: a finger turned past the side range keeps its fold and curl; its side is
    # clamped to the rail (with every other bound, by the caller) and counted here
    side_clamped = np.abs(fingers_out[:, _SIDE_COLUMNS]) > 1.0
    for k, row_id in enumerate(_FINGER_ROWS):
        values[f"{row_id}_{side}"] = fingers_out[:, k]
    roll = np.full(batch, np.nan)
    unobservable = np.zeros(batch, dtype=bool)
    if rows.size:
        estimated = fingers_out[ok, _ROLL_COLUMN]
        if thumb_roll_deg is not None:  # a measured orientation (VR) wins over the positions
            measured = thumb_roll_deg[ok] / _ANGLE_DEG[f"g_thumb_roll_{side}"]
            estimated = np.where(np.isfinite(measured), measured, estimated)
        roll[ok] = np.where(np.isfinite(estimated), estimated, 0.0)  # seed 000 §4.3 default
        unobservable[ok] = ~np.isfinite(estimated)
    values[f"g_thumb_roll_{side}"] = roll
    return HandDims(values=values, tracked=ok, palm_clamped=clamped & ok, degenerate=present & ~ok,
                    roll_unobservable=unobservable, fingers_side_clamped=side_clamped.sum(-1),
                    depth_flipped=flipped, fingers_depth_repaired=repaired)
