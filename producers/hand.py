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
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.quaternion import palm_encode, palm_from_directions
from posewire.codec.registry import REGISTRY

__all__ = [
    "FINGERS",
    "FINGER_CHAINS",
    "HAND_POINTS",
    "N_HAND_POINTS",
    "THUMB_CHAIN",
    "THUMB_REST",
    "HandDims",
    "finger_angles",
    "hand_dims",
    "hand_frame",
    "thumb_roll",
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
#: Thumb metacarpal rest direction in the canonical (right-hand) local frame: 45° between
#: the fingers (+Y) and the thumb side (+X); ``g_thumb_fold = 0`` there (producer choice).
THUMB_REST: F64 = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
#: Back of the hand in the canonical local frame: the thumb metacarpal's dorsal axis at
#: zero roll when the metacarpal lies along :data:`THUMB_REST` (producer choice, §4.3).
_THUMB_REST_DORSAL = np.array([0.0, 0.0, -1.0])

_EPS = 1e-9
_ANGLE_DEG = {d.id: float(d.row.angle_deg) for d in REGISTRY.dimensions if d.row.angle_deg is not None}


def _unit(v: F64) -> F64:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    out: F64 = v / np.where(norm > _EPS, norm, np.nan)
    return out


def _dot(a: F64, b: F64) -> F64:
    out: F64 = np.sum(a * b, axis=-1)
    return out


def _signed_angle(u: F64, v: F64, axis: F64) -> F64:
    """Signed angle (radians) from ``u`` to ``v`` about unit ``axis`` after projecting both
    onto the plane orthogonal to it (right-hand rule), shapes ``(..., 3)`` -> ``(...)``."""
    up = u - _dot(u, axis)[..., None] * axis
    vp = v - _dot(v, axis)[..., None] * axis
    out: F64 = np.arctan2(_dot(np.cross(up, vp), axis), _dot(up, vp))
    return out


def _angle(u: F64, v: F64) -> F64:
    """Unsigned angle (radians) between ``u`` and ``v`` ``(..., 3)``."""
    out: F64 = np.arctan2(np.linalg.norm(np.cross(u, v), axis=-1), _dot(u, v))
    return out


def hand_frame(hand: F64, *, side: Side) -> tuple[F64, F64]:
    """Fingers direction and palm normal ``(B, 3)`` (not normalized, world frame) of
    common-layout hand points ``(B, 21, 3)`` (spec §2.4): fingers = wrist → middle MCP;
    normal = (index MCP − wrist) × (pinky MCP − wrist) for the right hand, the reverse for
    the left, so that it points out of the palm on both (right-handed world frames)."""
    wrist = hand[:, HAND_POINTS["wrist"]]
    to_index = hand[:, HAND_POINTS["index_mcp"]] - wrist
    to_pinky = hand[:, HAND_POINTS["pinky_mcp"]] - wrist
    normal = np.cross(to_index, to_pinky) if side == "r" else np.cross(to_pinky, to_index)
    return hand[:, HAND_POINTS["middle_mcp"]] - wrist, normal


def _local_basis(hand: F64, side: Side) -> F64:
    """Hand-local axes ``(B, 3, 3)`` as columns (X, Y, Z of spec §2.4) in world coordinates."""
    fingers, normal = hand_frame(hand, side=side)
    y = _unit(fingers)
    z = _unit(normal - _dot(normal, y)[:, None] * y)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=-1)


def _to_canonical(basis: F64, vectors: F64, side: Side) -> F64:
    """World vectors ``(B, K, 3)`` -> canonical right-hand local coordinates (spec §3.2:
    the left hand's local x is negated so that +X points toward the thumb on both)."""
    local: F64 = np.einsum("bji,bkj->bki", basis, vectors)
    if side == "l":
        local = local * np.array([-1.0, 1.0, 1.0])
    return local


def finger_angles(hand: F64, *, side: Side) -> dict[str, F64]:
    """Finger joint angles (degrees, each ``(B,)``) of common-layout hand points
    ``(B, 21, 3)`` (any isotropic unit, right-handed axes), keyed by registry row id
    without the side suffix (``g_index_curl`` …), spec §4.3.

    Works in the hand-local frame (§2.4) mirrored to the right hand for ``side="l"``
    (local x negated), so both sides share one formula: X toward the thumb, Y fingers,
    Z palm normal. Index…pinky: ``fold`` = signed MCP angle metacarpal→proximal about the
    finger's lateral axis (+ toward the palm), ``curl`` = mean of the PIP and DIP signed
    angles about the same axis, ``side`` = angle of the proximal phalanx out of the
    hand's Y–Z plane (+ toward the pinky, −X; fingers held together parallel to the
    fingers axis read 0, whatever their fold). Thumb: ``curl`` = mean unsigned MCP and IP angle
    (hyperextension is not told apart), ``fold`` = angle about +Z from the 45° rest
    direction to the metacarpal (cmc→mcp) in the palm plane (+ toward the pinky),
    ``side`` = elevation of the metacarpal out of the palm plane (+ palm-normal side).
    The "metacarpal" of a finger is the wrist → MCP segment. Rows with missing (NaN)
    points give NaN for the angles that use them.
    """
    basis = _local_basis(hand, side)
    local = _to_canonical(basis, hand - hand[:, :1], side)
    ez = np.array([0.0, 0.0, 1.0])
    out: dict[str, F64] = {}
    for name, (mcp, pip, dip, tip) in FINGER_CHAINS.items():
        meta = local[:, mcp]
        b1, b2, b3 = local[:, pip] - local[:, mcp], local[:, dip] - local[:, pip], local[:, tip] - local[:, dip]
        lateral = _unit(np.cross(meta, np.broadcast_to(ez, meta.shape)))  # ≈ +X for a finger along +Y
        out[f"g_{name}_fold"] = np.degrees(_signed_angle(meta, b1, lateral))
        out[f"g_{name}_curl"] = np.degrees(0.5 * (_signed_angle(b1, b2, lateral) + _signed_angle(b2, b3, lateral)))
        # abduction = angle of the proximal phalanx out of the hand's Y-Z plane, + toward
        # the pinky (-X); unaffected by how far the finger is folded
        out[f"g_{name}_side"] = np.degrees(np.arcsin(np.clip(-_unit(b1)[:, 0], -1.0, 1.0)))
    t1, t2, t3, t4 = (local[:, i] for i in THUMB_CHAIN)
    out["g_thumb_curl"] = np.degrees(0.5 * (_angle(t2 - t1, t3 - t2) + _angle(t3 - t2, t4 - t3)))
    meta_t = _unit(t2 - t1)
    out["g_thumb_fold"] = np.degrees(_signed_angle(np.broadcast_to(THUMB_REST, meta_t.shape), meta_t,
                                                   np.broadcast_to(ez, meta_t.shape)))
    out["g_thumb_side"] = np.degrees(np.arcsin(np.clip(_dot(meta_t, np.broadcast_to(ez, meta_t.shape)), -1, 1)))
    return out


def thumb_roll(hand: F64, thumb_dorsal: F64, *, side: Side) -> F64:
    """Thumb roll angle (degrees, ``(B,)``) about the thumb metacarpal's long axis
    (cmc → mcp), spec §4.3 ``g_thumb_roll``, from common-layout points ``(B, 21, 3)`` and
    the metacarpal's dorsal axis ``(B, 3)`` in the same world frame (OpenXR: the
    ``thumb-metacarpal`` joint's +Y, "out of the back of the finger").

    Swing–twist decomposition in the canonical right-hand local frame (left hand mirrored
    first, spec §3.2): the zero-roll dorsal axis is the back of the hand (local −Z), which
    is perpendicular to the 45° rest direction :data:`THUMB_REST`, carried to the actual
    metacarpal direction ``a`` by the shortest-arc rotation (swing); the roll is the
    signed angle from it to the measured dorsal axis about ``a`` (right-hand rule on the
    canonical hand = ``+θ`` on the right, ``−θ`` physically on the left). NaN where the
    metacarpal points straight against the rest direction (no unique swing) or inputs
    are missing.
    """
    basis = _local_basis(hand, side)
    local = _to_canonical(basis, np.stack([hand[:, THUMB_CHAIN[0]], hand[:, THUMB_CHAIN[1]], thumb_dorsal], axis=1)
                          - np.stack([hand[:, 0], hand[:, 0], np.zeros_like(thumb_dorsal)], axis=1), side)
    axis = _unit(local[:, 1] - local[:, 0])
    rest = np.broadcast_to(THUMB_REST, axis.shape)
    d0 = np.broadcast_to(_THUMB_REST_DORSAL, axis.shape)
    k = np.cross(rest, axis)
    c = _dot(rest, axis)
    denom = np.where(c > -1.0 + 1e-9, 1.0 + c, np.nan)
    # Rodrigues form of the shortest-arc rotation taking rest -> axis, applied to d0
    reference = d0 + np.cross(k, d0) + np.cross(k, np.cross(k, d0)) / denom[:, None]
    out: F64 = np.degrees(_signed_angle(reference, local[:, 2], axis))
    return out


@dataclass(frozen=True)
class HandDims:
    """Hand dims of one side (spec §4.2, §4.3): ``values`` maps dim id (with the side
    suffix) -> ``(B,)`` normalized values (NaN where not estimated; not yet clamped to
    the registry bounds); ``tracked (B,)`` = the palm frame exists (present and not
    degenerate); ``palm_clamped (B,)`` = the palm vector part was clamped to 0.98;
    ``degenerate (B,)`` = present but the palm frame is degenerate."""

    values: Mapping[str, F64]
    tracked: Bool
    palm_clamped: Bool
    degenerate: Bool


def hand_dims(hand: F64, rotation: F64, present: Bool, *, side: Side,
              thumb_roll_deg: F64 | None = None) -> HandDims:
    """Palm and finger dims of common-layout hand points ``(B, 21, 3)`` in a right-handed
    world frame, given the body axes ``rotation (B, 3, 3)`` (columns X, Y, Z in world
    coordinates, spec §2.3) and the ``(B,)`` mask of frames whose hand frame points
    (0, 5, 9, 17) are present.

    Palm (spec §4.2 "Building q from landmarks"): fingers and palm normal of
    :func:`hand_frame` rotated into the body frame, :func:`posewire.codec.quaternion.palm_from_directions`,
    then :func:`posewire.codec.quaternion.palm_encode` (left mirrored, canonical, clamp 0.98).
    Fingers (§4.3): :func:`finger_angles` / ``angle_deg``. ``g_thumb_roll``:
    ``thumb_roll_deg / 45`` where given and finite, else the default 0 (seed 000 §4.3).
    Frames not tracked get NaN for every dim; finger dims of tracked frames are NaN only
    where their points are missing.
    """
    batch = hand.shape[0]
    fingers, normal = hand_frame(hand, side=side)
    f_body = np.einsum("bji,bj->bi", rotation, np.where(present[:, None], fingers, 0.0))
    n_body = np.einsum("bji,bj->bi", rotation, np.where(present[:, None], normal, 0.0))
    fn = np.linalg.norm(f_body, axis=-1)
    ortho = np.linalg.norm(np.cross(f_body, n_body), axis=-1)
    ok = present & (fn > _EPS) & (ortho > 1e-6 * np.maximum(fn * np.linalg.norm(n_body, axis=-1), _EPS))
    stored = np.full((batch, 3), np.nan)
    clamped = np.zeros(batch, dtype=bool)
    if ok.any():
        q = palm_from_directions(f_body[ok], n_body[ok], side=side)
        stored[ok], clamped[ok] = palm_encode(q, side=side)  # left: mirrored per §3.2
    values: dict[str, F64] = {f"w_q{axis}_{side}": stored[:, k] for k, axis in enumerate("xyz")}
    for row_id in (f"g_{f}_{k}" for f in FINGERS for k in ("curl", "fold", "side")):
        values[f"{row_id}_{side}"] = np.full(batch, np.nan)
    roll = np.full(batch, np.nan)
    if ok.any():
        for row_id, deg in finger_angles(hand[ok], side=side).items():
            values[f"{row_id}_{side}"][ok] = deg / _ANGLE_DEG[f"{row_id}_{side}"]
        roll[ok] = 0.0  # seed 000 §4.3: unobservable -> default
        if thumb_roll_deg is not None:
            measured = thumb_roll_deg[ok]
            roll[ok] = np.where(np.isfinite(measured), measured / _ANGLE_DEG[f"g_thumb_roll_{side}"], 0.0)
    values[f"g_thumb_roll_{side}"] = roll
    return HandDims(values=values, tracked=ok, palm_clamped=clamped & ok, degenerate=present & ~ok)
