"""Pose vectors -> local bone rotations of an avatar skeleton (spec §3.5, §4.1–§4.5).

Frame: the body frame of spec §2.1 (metres, +Y up, +Z forward, +X = the character's
left), which at rest is the avatar frame of seed 001. Quaternions ``(w, x, y, z)``.

How a frame is decoded (``G_j`` = rotation applied to joint ``j``'s rest **world**
orientation, ``W_j = G_j · W_rest,j``; a joint without its own driver inherits its
parent's ``G``; local rotations are ``L_j = L_rest,j · W_rest,j⁻¹ · G_parent⁻¹ · G_j ·
W_rest,j``):

1. spec §3.5: :func:`codec.vector.validate` with ``policy="clamp"``: NaN → default,
   out of range → clamped, both reported in :attr:`PoseResult.validation`.
2. Spine (spec §4.5): :func:`codec.euler.spine_rotations` over the spine joints the
   skeleton has; ``G`` of each spine joint is the chain product up to it, so the chest
   turns by the full torso rotation ``Q``.
3. Head (spec §4.4, relative to the torso): ``H = head_to_quat``; the present joints of
   ``neck_01``, ``neck_02``, ``head`` get fractional powers of ``H`` with
   :data:`HEAD_SHARES` (0.25, 0.25, 0.5, renormalized over present joints), so
   ``G_head = Q · H`` exactly.
4. Arms (spec §4.1): the wrist target is ``neck + arm_to_physical(a, units(cal))``
   (neck = shoulder midpoint at rest, units from **this avatar's** calibration, default
   :func:`consumers.skeleton.calibration_of`), solved by :func:`consumers.ik.two_bone_ik`
   with the pole :func:`consumers.ik.arm_pole` (``a_spread``) in the rest chest frame and
   carried by ``Q`` (body-local pole, seed 003).
5. Hands (spec §4.2): ``q = palm_decode`` is the hand-local frame (§2.4) in the body
   frame; ``G_hand = Q · q · P⁻¹`` with ``P`` the hand-local frame at rest, measured from
   the skeleton (fingers = wrist → ``middle_01``, thumb side = ``index_01`` − ``pinky_01``).
6. Fingers (spec §4.3): rotations in hand-local coordinates, composed down each finger:
   index..pinky ``01``: ``R_Z(side) · R_X(fold)``, ``02``/``03``: ``R_X(curl)``; thumb
   ``01``: ``R_Z(fold) · R_tx(side) · R_ty(roll)``, ``02``/``03``: ``R_Z(curl)`` with
   ``t_y`` the thumb's rest direction (``thumb_01 → thumb_02``) and ``t_x = t_y × Z``
   (the thumb's own bind). Angles ``n · angle_deg`` (registry). The left hand uses the
   sagittal mirror of the right-hand rotation in its own hand-local frame, which gives
   spec §4.3's signs (side and roll negated, curl and fold unchanged).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from codec.calibration import Calibration, CalibrationUnits, arm_to_physical, units
from codec.errors import UsageError
from codec.euler import head_to_quat, spine_rotations
from codec.quaternion import palm_decode
from codec.registry import REGISTRY, SPINE_SHARES
from codec.vector import ValidationReport, validate

from .ik import IKResult, arm_pole, two_bone_ik
from .skeleton import FINGERS, Skeleton, _qconj, _qmul, _qrot, calibration_of

__all__ = ["HEAD_SHARES", "PoseResult", "decode_pose"]

F64 = NDArray[np.float64]
Side = Literal["l", "r"]
SIDES: tuple[Side, ...] = ("l", "r")

#: Share of the head rotation per joint (neck_01, neck_02, head), renormalized over the
#: joints present; fractional powers, so the chain gives the full head rotation.
HEAD_SHARES: tuple[tuple[str, float], ...] = (("neck_01", 0.25), ("neck_02", 0.25), ("head", 0.5))
_MIRROR_Q = np.array([1.0, 1.0, -1.0, -1.0])
_M = np.array([-1.0, 1.0, 1.0])


def _idx(dim: str) -> int:
    return REGISTRY.index(dim)


def _frame_quat(x: F64, y: F64, z: F64) -> F64:
    from codec.quaternion import from_matrix
    return from_matrix(np.stack([x, y, z], axis=-1))


@dataclass(frozen=True)
class _FingerSlot:
    joint: int
    side: int  # 0 = l, 1 = r
    parent_slot: int  # -1 = hand
    axes: F64  # (3, 3) right-like hand-local axes
    dims: tuple[int, int, int]  # registry index per axis (-1 = none)
    gains: F64  # (3,) radians per unit n


@dataclass(frozen=True, eq=False)
class _Plan:
    rest_pos: F64
    rest_rot: F64
    spine: tuple[str, ...]
    spine_joints: NDArray[np.intp]
    head_joints: NDArray[np.intp]
    head_shares: F64
    arm: dict[str, tuple[int, int, int]]
    neck: F64
    palm_rest_inv: F64  # (2, 4) conj of the rest hand-local frame, l then r
    hand_joint: NDArray[np.intp]  # (2,)
    slots: tuple[_FingerSlot, ...]
    skipped: tuple[str, ...]
    calibration: Calibration
    owner: NDArray[np.intp]  # joint whose G each joint takes (itself when driven)


def _angle(dim: str) -> float:
    deg = REGISTRY.by_id[dim].row.angle_deg
    return float(np.radians(deg if deg is not None else 0.0))


@functools.lru_cache(maxsize=32)
def _plan(skel: Skeleton) -> _Plan:
    pos, rot = skel.rest_world()
    ix = skel.index
    skipped: list[str] = []
    spine = tuple(j for j, _ in SPINE_SHARES if j in ix)
    skipped += [j for j, _ in SPINE_SHARES if j not in ix]
    if not spine:
        raise UsageError("usage.bad_option", "skeleton has no spine joint")
    head = [(j, s) for j, s in HEAD_SHARES if j in ix]
    skipped += [j for j, _ in HEAD_SHARES if j not in ix]
    total = sum(s for _, s in head)
    arm: dict[str, tuple[int, int, int]] = {}
    for s in SIDES:
        names = (f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}")
        missing = [n for n in names if n not in ix]
        if missing:
            raise UsageError("usage.bad_option", f"skeleton lacks arm bones {missing}")
        arm[s] = (ix[names[0]], ix[names[1]], ix[names[2]])
    neck = 0.5 * (pos[arm["l"][0]] + pos[arm["r"][0]])
    palm_inv = []
    slots: list[_FingerSlot] = []
    for k, s in enumerate(SIDES):
        wrist = pos[arm[s][2]]
        forearm = wrist - pos[arm[s][1]]
        y = pos[ix[f"middle_01_{s}"]] - wrist if f"middle_01_{s}" in ix else forearm
        y = y / np.linalg.norm(y)
        if f"index_01_{s}" in ix and f"pinky_01_{s}" in ix:
            across = pos[ix[f"index_01_{s}"]] - pos[ix[f"pinky_01_{s}"]]
        else:  # no fingers: thumb side forward (the helix A-pose convention)
            across = np.array([0.0, 0.0, 1.0])
        if s == "l":
            across = -across  # left hand-local +X points away from the thumb (spec §2.4)
        x = across - np.dot(across, y) * y
        x = x / np.linalg.norm(x)
        z = np.cross(x, y)
        p_rest = _frame_quat(x, y, z)
        palm_inv.append(_qconj(p_rest))
        to_local = _qconj(p_rest)
        mirror = _M if s == "l" else np.ones(3)
        for f in FINGERS:
            joints = [f"{f}_{n:02d}_{s}" for n in (1, 2, 3)]
            skipped += [j for j in joints if j not in ix]
            if f == "thumb":
                if joints[0] in ix and joints[1] in ix:
                    t = mirror * _qrot(to_local, pos[ix[joints[1]]] - pos[ix[joints[0]]])
                else:
                    t = np.array([0.6, 0.8, 0.0])
                t = np.array([t[0], t[1], 0.0])
                t_y = t / np.linalg.norm(t)
                t_x = np.cross(t_y, [0.0, 0.0, 1.0])
                ez = np.array([0.0, 0.0, 1.0])
                specs = [((ez, t_x, t_y), (f"g_{f}_fold_{s}", f"g_{f}_side_{s}", f"g_thumb_roll_{s}")),
                         ((ez, ez, ez), (f"g_{f}_curl_{s}", "", "")),
                         ((ez, ez, ez), (f"g_{f}_curl_{s}", "", ""))]
            else:
                ex, ez = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
                specs = [((ez, ex, ex), (f"g_{f}_side_{s}", f"g_{f}_fold_{s}", "")),
                         ((ex, ex, ex), (f"g_{f}_curl_{s}", "", "")),
                         ((ex, ex, ex), (f"g_{f}_curl_{s}", "", ""))]
            parent = -1
            for name, (axes, dims) in zip(joints, specs, strict=True):
                if name not in ix:
                    continue
                slots.append(_FingerSlot(
                    ix[name], k, parent, np.array(axes, dtype=np.float64),
                    tuple(_idx(d) if d else -1 for d in dims),  # type: ignore[arg-type]
                    np.array([_angle(d) if d else 0.0 for d in dims])))
                parent = len(slots) - 1
    return _Plan(pos, rot, spine, np.array([ix[j] for j in spine], dtype=np.intp),
                 np.array([ix[j] for j, _ in head], dtype=np.intp),
                 np.array([s / total for _, s in head]) if head else np.zeros(0),
                 arm, neck, np.stack(palm_inv), np.array([arm[s][2] for s in SIDES]),
                 tuple(slots), tuple(skipped), calibration_of(skel),
                 _owners(skel, {*spine, *(j for j, _ in head), *(n for s in SIDES for n in (
                     f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}")), *(skel.names[sl.joint] for sl in slots)}))


def _owners(skel: Skeleton, driven: set[str]) -> NDArray[np.intp]:
    owner = np.arange(len(skel))
    for j in range(1, len(skel)):
        if skel.names[j] not in driven:
            owner[j] = owner[skel.parents[j]]
    if skel.names[0] not in driven:
        owner[0] = 0
    return owner


def _axis_quat(axis: F64, angle: F64) -> F64:
    half = 0.5 * angle
    return np.concatenate([np.cos(half)[..., None], np.sin(half)[..., None] * axis], axis=-1)


def _power(q: F64, share: F64) -> F64:
    # fractional power Q^s about Q's own axis (spec §4.5); q (B, 4) canonical, share (K,)
    vec = q[:, None, 1:]
    s = np.linalg.norm(vec, axis=-1)
    angle = 2.0 * np.arctan2(s, q[:, None, 0]) * share[None, :]
    axis = np.where(s[..., None] > 0, vec / np.where(s > 0, s, 1.0)[..., None], 0.0)
    return _axis_quat(axis, angle)


@dataclass(frozen=True)
class PoseResult:
    """Decoded pose of a batch of ``B`` frames on a skeleton of ``J`` joints.

    ``local_rotations (B, J, 4)``: every joint's local rotation (rest value where no
    dim drives it); ``targets``: per side ``(B, 3)`` wrist targets, metres, body frame at
    rest (chest frame); ``ik``: per side :class:`consumers.ik.IKResult` (``clamped`` =
    unreachable target, reported); ``palm_clamped``: per side ``(B,)`` palm vector
    rescaled/clamped (spec §3.3); ``validation``: NaN/out-of-range dims replaced or
    clamped (spec §3.5); ``units``: arm units with ``fallback_axes`` (spec §4.1);
    ``skipped``: canonical joints the skeleton lacks (seed 001: skipped).
    """

    local_rotations: F64
    targets: dict[str, F64]
    ik: dict[str, IKResult]
    palm_clamped: dict[str, NDArray[np.bool_]]
    validation: ValidationReport
    units: CalibrationUnits
    skipped: tuple[str, ...]

    def report(self) -> dict[str, object]:
        """What was changed or skipped, by name (never silent)."""
        return {
            **self.validation.dims(),
            "fallback_axes": list(self.units.fallback_axes),
            "unreachable": [s for s in SIDES if self.ik[s].clamped.any()],
            "ik_fallback": [s for s in SIDES if self.ik[s].fallback],
            "palm_clamped": [s for s in SIDES if self.palm_clamped[s].any()],
            "skipped_joints": list(self.skipped),
        }


def decode_pose(vectors: ArrayLike, skeleton: Skeleton, *,
                calibration: Calibration | None = None) -> PoseResult:
    """Local rotations of every joint of ``skeleton`` for pose vectors ``(B, N)`` or
    ``(N,)`` (module docstring). ``calibration``: this avatar's reference distances
    (spec §4.1; default measured from the skeleton by
    :func:`consumers.skeleton.calibration_of`). Raises ``usage.shape`` for a wrong
    vector shape, ``usage.bad_option`` for a skeleton without arms/spine and
    ``usage.calibration`` when no unit can be formed."""
    arr = np.asarray(vectors, dtype=np.float64)
    vec, validation = validate(arr.reshape(-1, arr.shape[-1]) if arr.ndim else arr,
                               policy="clamp")
    batch = vec.shape[0]
    plan = _plan(skeleton)
    cal = plan.calibration if calibration is None else calibration
    arm_units = units(cal)
    n_joints = len(skeleton)
    g = np.zeros((batch, n_joints, 4))
    g[..., 0] = 1.0
    driven = np.zeros(n_joints, dtype=bool)
    # spec §4.5: spine joints, chain products of fractional powers
    body = vec[:, [_idx("b_yaw"), _idx("b_pitch"), _idx("b_roll")]]
    rotations = spine_rotations(body, joints=plan.spine)
    acc = rotations[plan.spine[0]]
    for name, j in zip(plan.spine, plan.spine_joints, strict=True):
        if name != plan.spine[0]:
            acc = _qmul(acc, rotations[name])
        g[:, j] = acc
        driven[j] = True
    chest = acc
    # spec §4.4: head relative to the torso, shared along neck_01, neck_02, head
    if plan.head_joints.size:
        head = head_to_quat(vec[:, [_idx("h_yaw"), _idx("h_pitch"), _idx("h_roll")]])
        parts = _power(head, plan.head_shares)
        acc_h = chest
        for k, j in enumerate(plan.head_joints):
            acc_h = _qmul(acc_h, parts[:, k])
            g[:, j] = acc_h
            driven[j] = True
    targets: dict[str, F64] = {}
    ik: dict[str, IKResult] = {}
    palm_clamped: dict[str, NDArray[np.bool_]] = {}
    palms = []
    for k, s in enumerate(SIDES):
        up, low, hand = plan.arm[s]
        a = vec[:, [_idx(f"a_x_{s}"), _idx(f"a_y_{s}"), _idx(f"a_z_{s}")]]
        target: F64 = plan.neck + arm_to_physical(a, arm_units, side=s)  # spec §4.1
        shoulder = plan.rest_pos[up]
        pole = arm_pole(target - shoulder, vec[:, _idx(f"a_spread_{s}")], side=s)
        res = two_bone_ik(shoulder, plan.rest_pos[low], plan.rest_pos[hand], target, pole)
        targets[s], ik[s] = target, res
        g[:, up] = _qmul(chest, res.upper)
        g[:, low] = _qmul(chest, res.lower)
        driven[[up, low]] = True
        q, clamped = palm_decode(vec[:, [_idx(f"w_qx_{s}"), _idx(f"w_qy_{s}"), _idx(f"w_qz_{s}")]],
                                 side=s)
        palm_clamped[s] = clamped
        hand_world = _qmul(chest, q)  # hand-local frame -> body frame, carried by the torso
        palms.append(hand_world)
        g[:, hand] = _qmul(hand_world, plan.palm_rest_inv[k])
        driven[hand] = True
    if plan.slots:
        _fingers(vec, plan, palms, g, driven)
    # inherit G down the tree, then L_j = L_rest · W_rest⁻¹ · G_parent⁻¹ · G_j · W_rest
    g = g[:, plan.owner]
    g_parent = np.concatenate([g[:, :1], g[:, skeleton.parents[1:]]], axis=1)
    rest = plan.rest_rot[None]
    delta = _qmul(_qconj(g_parent), g)
    local = _qmul(skeleton.rest_rotations[None], _qmul(_qconj(rest), _qmul(delta, rest)))
    local[:, 0] = skeleton.rest_rotations[0]
    return PoseResult(local, targets, ik, palm_clamped, validation, arm_units, plan.skipped)


def _fingers(vec: F64, plan: _Plan, palms: list[F64], g: F64, driven: NDArray[np.bool_]) -> None:
    # spec §4.3: elementary rotations in right-like hand-local coords, composed per finger
    slots = plan.slots
    dims = np.array([sl.dims for sl in slots])  # (S, 3)
    gains = np.stack([sl.gains for sl in slots])  # (S, 3)
    axes = np.stack([sl.axes for sl in slots])  # (S, 3, 3)
    n = np.where(dims >= 0, vec[:, np.maximum(dims, 0)], 0.0)  # (B, S, 3)
    elem = _axis_quat(np.broadcast_to(axes, (*n.shape, 3)), n * gains)
    d = _qmul(_qmul(elem[..., 0, :], elem[..., 1, :]), elem[..., 2, :])  # (B, S, 4)
    chain = np.empty_like(d)
    for k, sl in enumerate(slots):
        chain[:, k] = d[:, k] if sl.parent_slot < 0 else _qmul(chain[:, sl.parent_slot], d[:, k])
    left = np.array([sl.side == 0 for sl in slots])
    chain = np.where(left[None, :, None], chain * _MIRROR_Q, chain)
    side = np.array([sl.side for sl in slots])
    hand_world = np.stack(palms, axis=1)[:, side]  # (B, S, 4)
    out = _qmul(_qmul(hand_world, chain), plan.palm_rest_inv[side][None])
    joints = np.array([sl.joint for sl in slots])
    g[:, joints] = out
    driven[joints] = True
