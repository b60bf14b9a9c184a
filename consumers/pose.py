"""Pose vectors -> local bone rotations of an avatar skeleton (spec §3.5, §4.1–§4.5).

Frame: the body frame of spec §2.1 (metres, +Y up, +Z forward, +X = the character's
left), which at rest is the avatar frame of seed 001. Quaternions ``(w, x, y, z)``.

How a frame is decoded (``G_j`` = rotation applied to joint ``j``'s rest **world**
orientation, ``W_j = G_j · W_rest,j``; a joint without its own driver inherits its
parent's ``G``; local rotations are ``L_j = L_rest,j · W_rest,j⁻¹ · G_parent⁻¹ · G_j ·
W_rest,j``):

1. spec §3.5: :func:`posewire.codec.vector.validate` with ``policy="clamp"``: NaN → default,
   out of range → clamped, both reported in :attr:`PoseResult.validation`.
2. Spine (spec §4.5): :func:`posewire.codec.euler.spine_rotations` over the spine joints the
   skeleton has; ``G`` of each spine joint is the chain product up to it, so the chest
   turns by the full torso rotation ``Q``.
3. Head (spec §4.4, relative to the torso): ``H = head_to_quat``; the present joints of
   ``neck_01``, ``neck_02``, ``head`` get fractional powers of ``H`` with
   :data:`HEAD_SHARES` (0.25, 0.25, 0.5, renormalized over present joints), so
   ``G_head = Q · H`` exactly.
4. Arms (spec §4.1): the wrist target is ``neck + arm_to_physical(a, units(cal))``
   (neck = shoulder midpoint at rest, units from **this avatar's** calibration, default
   :func:`posewire.consumers.skeleton.calibration_of`), solved by :func:`posewire.consumers.ik.two_bone_ik`
   with the pole :func:`posewire.consumers.ik.arm_pole` (``a_spread``) in the rest chest frame and
   carried by ``Q`` (body-local pole, seed 003).
5. Hands (spec §4.2): ``q = palm_decode`` is the hand-local frame (§2.4) in the body
   frame; ``G_hand = Q · q · P⁻¹`` with ``P`` the hand-local frame at rest, measured from
   the skeleton (fingers = wrist → ``middle_01``, thumb side = ``index_01`` − ``pinky_01``).
6. Fingers (spec §4.3): rotations in hand-local coordinates, composed down each finger:
   index..pinky ``01``: ``R_Z(α − β + σ + side) · R_X(fold)`` (α: the metacarpal wrist →
   ``*_01`` in the palm plane, β: the bone's bind direction, both from +Y toward the
   pinky; σ: the side row's ``neutral_deg``, the relaxed splay, so side 0 turns the
   finger σ toward the pinky from its metacarpal), ``02``: ``R_X(curl)``, ``03``:
   ``R_X(distal)``; thumb ``01``: ``R_Z(fold) · R_tx(side) · R_ty(roll)``, ``02``:
   ``R_Z(curl)``, ``03``: ``R_Z(distal)`` with
   ``t_y`` the thumb's rest direction (``thumb_01 → thumb_02``) and ``t_x = t_y × Z``
   (the thumb's own bind). Angles ``neutral_deg + n · angle_deg`` (registry). The left hand uses the
   sagittal mirror of the right-hand rotation in its own hand-local frame, which gives
   spec §4.3's signs (side and roll negated, curl and fold unchanged).

Evaluation (same formulas, fewer array operations): everything that depends only on
the skeleton is built once per skeleton (:func:`decode_plan`, cached): joint index
arrays, rest frames, finger chains by depth, the slot each joint takes its ``G`` from.
Per call the vector is validated once (step 1) and then every elementary rotation of
the frame — body and head Euler angles and all finger angles — is built in one batched
``(B, T, 3, 4)`` array and multiplied out in two quaternion products; both arms are
solved together; the ``G`` of every driven joint is gathered into one ``(B, S, 4)``
array and the local rotations of all joints come from one product. Results equal the
joint-by-joint evaluation to float round-off (``tests/test_consumer_pose_reference.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.calibration import ARM_MAX, Calibration, CalibrationUnits, units
from posewire.codec.errors import UsageError
from posewire.codec.euler import BODY_MAX_DEG, HEAD_MAX_DEG
from posewire.codec.quaternion import (
    CONJUGATE_SIGNS,
    HAMILTON_TABLE,
    PALM_CLAMP,
    Quat,
    Vec3,
    conjugate_unchecked,
    multiply1,
    multiply_unchecked,
    reconstruct_w1,
    reconstruct_w_unchecked,
    rotate_unchecked,
)
from posewire.codec.registry import REGISTRY, SPINE_SHARES
from posewire.codec.vector import N_DIMS, ValidationReport

from .face import CAPABILITIES, Capability, FaceWeights, _face_weights, _validate_clamp, _validate_clamp_changed
from .ik import _LATERAL, IKResult, _pole, _solve, _unit, two_bone_ik
from .ik_single import arm1
from .skeleton import FINGERS, Skeleton, calibration_of

__all__ = ["HEAD_SHARES", "DecodePlan", "PoseResult", "decode_frame", "decode_plan", "decode_pose"]

F64 = NDArray[np.float64]
Side = Literal["l", "r"]
SIDES: tuple[Side, ...] = ("l", "r")

#: Share of the head rotation per joint (neck_01, neck_02, head), renormalized over the
#: joints present; fractional powers, so the chain gives the full head rotation.
HEAD_SHARES: tuple[tuple[str, float], ...] = (("neck_01", 0.25), ("neck_02", 0.25), ("head", 0.5))
_MIRROR_Q = np.array([1.0, 1.0, -1.0, -1.0])
_M = np.array([-1.0, 1.0, 1.0])
_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
_W0 = np.array([1.0, 0.0, 0.0, 0.0])
#: Elementary axes of q_Y(yaw)·q_X(pitch)·q_Z(roll) (spec §4.4) as pure quaternions.
_EULER_AXES = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
#: spec §3.2: physical left arm displacement = M · right formula; right lateral is −X.
_ARM_SIGN = np.array([[1.0, 1.0, 1.0], [-1.0, 1.0, 1.0]])  # l, r


def _idx(dim: str) -> int:
    return REGISTRY.index(dim)


def _frame_quat(x: F64, y: F64, z: F64) -> F64:
    from posewire.codec.quaternion import from_matrix
    return from_matrix(np.stack([x, y, z], axis=-1))


def _angle(dim: str) -> float:
    deg = REGISTRY.by_id[dim].row.angle_deg
    return float(np.radians(deg if deg is not None else 0.0))


@dataclass(frozen=True, eq=False)
class DecodePlan:
    """Everything :func:`decode_pose` needs that depends only on the skeleton (built
    once by :func:`decode_plan`). Rows of the elementary-rotation table (``T`` rows):
    0 body Euler, 1 head Euler, 2–3 the hands (identity), then the ``F`` finger joints.
    Slots of the ``G`` table: 0 identity, the spine powers, the head powers, upper arm
    l, r, lower arm l, r, hand l, r, the finger joints. Arrays are read-only."""

    spine: tuple[str, ...]  # present spine joints, hips -> neck
    skipped: tuple[str, ...]  # canonical joints the skeleton lacks
    calibration: Calibration  # measured by calibration_of (spec §4.1)
    rest_pos: F64  # (J, 3) rest world positions, metres
    neck: F64  # (3,) shoulder midpoint at rest (spec §2.2)
    arm_joints: NDArray[np.intp]  # (2, 3) upperarm, lowerarm, hand per side (l, r)
    shoulder: F64  # (2, 3) rest upper-arm origins
    upper_dir: F64  # (2, 3) unit rest shoulder -> elbow
    upper_len: F64  # (2,) metres
    lower_dir: F64  # (2, 3) unit rest elbow -> wrist
    lower_len: F64  # (2,) metres
    arm_fallback: bool  # a bone under MIN_BONE_LENGTH: solve per side (seed 003)
    rot_dims: NDArray[np.intp]  # (T, 3) registry index per elementary angle
    rot_half_gain: F64  # (T, 3) half-angle radians per unit n (0 = unused)
    rot_half_offset: F64  # (T, 3) constant half-angle radians (finger metacarpal, §4.3)
    rot_axes: F64  # (T, 3, 4) pure-quaternion axes
    chain_levels: tuple[tuple[NDArray[np.intp], NDArray[np.intp]], ...]  # (rows, parent rows)
    hand_mirror: F64  # (2 + F, 4): sagittal mirror for left-hand rows (spec §3.2)
    hand_side: NDArray[np.intp]  # (2 + F,) 0 = l, 1 = r
    hand_rest_inv: F64  # (2 + F, 4) conj of the rest hand-local frame of that side
    power_source: NDArray[np.intp]  # (P,) 0 = body, 1 = head
    power_share: F64  # (P,) cumulative share (fractional power exponent)
    n_spine: int  # the first n_spine powers are spine joints
    joint_slot: NDArray[np.intp]  # (J,) G slot each joint takes (its driver's)
    parent_slot: NDArray[np.intp]  # (J,) G slot of the parent (root: its own)
    rest_left: F64 | None  # (J, 4) L_rest · W_rest⁻¹, None when all identity
    rest_world: F64 | None  # (J, 4) W_rest, None when all identity
    root_rest: F64  # (4,) the root's rest local rotation


def _readonly(*arrays: NDArray[np.generic]) -> None:
    for a in arrays:
        a.flags.writeable = False


@functools.lru_cache(maxsize=32)
def decode_plan(skel: Skeleton) -> DecodePlan:
    """The :class:`DecodePlan` of ``skel`` (cached per skeleton object). Raises
    ``usage.bad_option`` for a skeleton without a spine joint or arm bones."""
    pos, rot = skel.rest_world()
    ix = skel.index
    skipped: list[str] = []
    spine = tuple(j for j, _ in SPINE_SHARES if j in ix)
    skipped += [j for j, _ in SPINE_SHARES if j not in ix]
    if not spine:
        raise UsageError("usage.bad_option", "skeleton has no spine joint")
    head = [(j, s) for j, s in HEAD_SHARES if j in ix]
    skipped += [j for j, _ in HEAD_SHARES if j not in ix]
    arm: list[tuple[int, int, int]] = []
    for s in SIDES:
        names = (f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}")
        missing = [n for n in names if n not in ix]
        if missing:
            raise UsageError("usage.bad_option", f"skeleton lacks arm bones {missing}")
        arm.append((ix[names[0]], ix[names[1]], ix[names[2]]))
    arm_joints = np.array(arm, dtype=np.intp)
    neck = 0.5 * (pos[arm[0][0]] + pos[arm[1][0]])
    upper_dir, upper_len = _unit(pos[arm_joints[:, 1]] - pos[arm_joints[:, 0]])
    lower_dir, lower_len = _unit(pos[arm_joints[:, 2]] - pos[arm_joints[:, 1]])
    from .ik import MIN_BONE_LENGTH
    fallback = bool((upper_len < MIN_BONE_LENGTH).any() or (lower_len < MIN_BONE_LENGTH).any())

    # elementary rotations: body and head Euler rows (spec §4.4/§4.5), hand rows
    rot_dims: list[list[int]] = [[_idx("b_yaw"), _idx("b_pitch"), _idx("b_roll")],
                                 [_idx("h_yaw"), _idx("h_pitch"), _idx("h_roll")], [0, 0, 0], [0, 0, 0]]
    rot_gain: list[F64] = [0.5 * np.radians(BODY_MAX_DEG), 0.5 * np.radians(HEAD_MAX_DEG),
                           np.zeros(3), np.zeros(3)]
    rot_axes: list[F64] = [_EULER_AXES, _EULER_AXES, np.zeros((3, 4)), np.zeros((3, 4))]
    rot_offset: list[F64] = [np.zeros(3)] * 4
    hand_side: list[int] = [0, 1]
    hand_rest_inv: list[F64] = []
    depth: list[int] = [0, 0]
    parent_row: list[int] = [-1, -1]
    finger_joints: list[int] = []
    for k, s in enumerate(SIDES):
        wrist = pos[arm[k][2]]
        forearm = wrist - pos[arm[k][1]]
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
        hand_rest_inv.append(conjugate_unchecked(p_rest))
    for k, s in enumerate(SIDES):
        to_local = hand_rest_inv[k]
        mirror = _M if s == "l" else np.ones(3)
        # spec §4.3: elementary rotations in right-like hand-local coordinates
        for f in FINGERS:
            joints = [f"{f}_{n:02d}_{s}" for n in (1, 2, 3)]
            skipped += [j for j in joints if j not in ix]
            ex, ez = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
            if f == "thumb":
                if joints[0] in ix and joints[1] in ix:
                    t = mirror * rotate_unchecked(to_local, pos[ix[joints[1]]] - pos[ix[joints[0]]])
                else:
                    t = np.array([0.6, 0.8, 0.0])
                t = np.array([t[0], t[1], 0.0])
                t_y = t / np.linalg.norm(t)
                t_x = np.cross(t_y, ez)
                specs = [((ez, t_x, t_y), (f"g_{f}_fold_{s}", f"g_{f}_side_{s}", f"g_thumb_roll_{s}")),
                         ((ez, ez, ez), (f"g_{f}_curl_{s}", "", "")),
                         ((ez, ez, ez), (f"g_{f}_distal_{s}", "", ""))]
            else:
                specs = [((ez, ex, ex), (f"g_{f}_side_{s}", f"g_{f}_fold_{s}", "")),
                         ((ex, ex, ex), (f"g_{f}_curl_{s}", "", "")),
                         ((ex, ex, ex), (f"g_{f}_distal_{s}", "", ""))]
            # spec §4.3: side is measured from the finger's metacarpal (wrist → *_01) in
            # the palm plane; the bone's bind direction may differ: R_Z(α − β + σ + side)
            offset = 0.0
            if f != "thumb" and joints[0] in ix and joints[1] in ix:
                meta = mirror * rotate_unchecked(to_local, pos[ix[joints[0]]] - pos[arm[k][2]])
                bone = mirror * rotate_unchecked(to_local, pos[ix[joints[1]]] - pos[ix[joints[0]]])
                offset = math.atan2(-meta[0], meta[1]) - math.atan2(-bone[0], bone[1])
            if f != "thumb":  # spec §4.3: θ_side = neutral_deg + side · angle_deg
                offset += math.radians(REGISTRY.by_id[f"g_{f}_side_{s}"].row.neutral_deg or 0.0)
            parent = -1
            for name, (axes, dims) in zip(joints, specs, strict=True):
                if name not in ix:
                    continue
                row = 2 + len(finger_joints)  # index in the hand rows (T row − 2)
                finger_joints.append(ix[name])
                rot_dims.append([_idx(d) if d else 0 for d in dims])
                rot_gain.append(np.array([0.5 * _angle(d) if d else 0.0 for d in dims]))
                rot_offset.append(np.array([0.5 * offset if name == joints[0] else 0.0, 0.0, 0.0]))
                rot_axes.append(np.concatenate([np.zeros((3, 1)), np.array(axes)], axis=1))
                hand_side.append(k)
                depth.append(0 if parent < 0 else depth[parent] + 1)
                parent_row.append(parent)
                parent = row
    levels = []
    depth_arr, parent_arr = np.array(depth), np.array(parent_row)
    for d in range(1, int(depth_arr.max()) + 1):
        rows = np.flatnonzero(depth_arr == d)
        levels.append((rows, parent_arr[rows]))
    side_arr = np.array(hand_side, dtype=np.intp)
    inv = np.stack(hand_rest_inv)[side_arr]
    hand_mirror = np.where((side_arr == 0)[:, None], _MIRROR_Q, 1.0)

    # spec §4.5 spine and §4.4 head: cumulative fractional powers
    shares = dict(SPINE_SHARES)
    total = sum(shares[j] for j in spine)
    power_share = list(np.cumsum([shares[j] / total for j in spine]))
    power_source = [0] * len(spine)
    if head:
        head_total = sum(s for _, s in head)
        power_share += list(np.cumsum([s / head_total for _, s in head]))
        power_source += [1] * len(head)

    # G slots: 0 identity | powers | arms (upper l, r, lower l, r) | hands, fingers
    driver = [*(ix[j] for j in spine), *(ix[j] for j, _ in head), *arm_joints[:, 0],
              *arm_joints[:, 1], *arm_joints[:, 2], *finger_joints]
    slot_of = {j: 1 + k for k, j in enumerate(driver)}
    joint_slot = np.zeros(len(skel), dtype=np.intp)
    for j in range(len(skel)):
        if j in slot_of:
            joint_slot[j] = slot_of[j]
        elif j > 0:
            joint_slot[j] = joint_slot[skel.parents[j]]
    parent_slot = np.concatenate([joint_slot[:1], joint_slot[skel.parents[1:]]])
    rest_left = multiply_unchecked(skel.rest_rotations, conjugate_unchecked(rot))
    identity_rest = bool(np.array_equal(rest_left, np.tile(_IDENTITY, (len(skel), 1)))
                         and np.array_equal(rot, np.tile(_IDENTITY, (len(skel), 1))))
    plan = DecodePlan(
        spine, tuple(skipped), calibration_of(skel), pos, neck, arm_joints,
        pos[arm_joints[:, 0]], upper_dir, upper_len, lower_dir, lower_len, fallback,
        np.array(rot_dims, dtype=np.intp), np.stack(rot_gain), np.stack(rot_offset), np.stack(rot_axes),
        tuple(levels), hand_mirror, side_arr, inv,
        np.array(power_source, dtype=np.intp), np.array(power_share), len(spine),
        joint_slot, parent_slot, None if identity_rest else rest_left,
        None if identity_rest else rot, skel.rest_rotations[0].copy())
    _readonly(pos, neck, arm_joints, plan.shoulder, upper_dir, upper_len, lower_dir, lower_len,
              plan.rot_dims, plan.rot_half_gain, plan.rot_half_offset, plan.rot_axes, hand_mirror, side_arr, inv,
              plan.power_source, plan.power_share, joint_slot, parent_slot, plan.root_rest,
              *(a for lvl in levels for a in lvl), *((rest_left, rot) if not identity_rest else ()))
    return plan


@functools.lru_cache(maxsize=32)
def _arm_scale(cal: Calibration) -> tuple[CalibrationUnits, F64, tuple[Vec3, Vec3]]:
    # spec §4.1: units of this calibration and p = sign · n · 2.5 · L per side (l, r), also
    # as Python floats (one frame)
    arm_units = units(cal)
    _readonly(arm_units.L)
    scale = _ARM_SIGN * ARM_MAX * arm_units.L
    _readonly(scale)
    (lx, ly, lz), (rx, ry, rz) = scale.tolist()
    return arm_units, scale, ((lx, ly, lz), (rx, ry, rz))


@dataclass(frozen=True)
class PoseResult:
    """Decoded pose of a batch of ``B`` frames on a skeleton of ``J`` joints.

    ``local_rotations (B, J, 4)``: every joint's local rotation (rest value where no
    dim drives it); ``targets``: per side ``(B, 3)`` wrist targets, metres, body frame at
    rest (chest frame); ``ik``: per side :class:`posewire.consumers.ik.IKResult` (``clamped`` =
    unreachable target, reported); ``palm_clamped``: per side ``(B,)`` palm vector
    rescaled/clamped (spec §3.3); ``validation``: NaN/out-of-range dims replaced or
    clamped (spec §3.5); ``units``: arm units with ``fallback_axes`` (spec §4.1);
    ``skipped``: canonical joints the skeleton lacks (seed 001: skipped).

    ``targets``, ``ik`` and ``palm_clamped`` are read-only mappings ``"l"``/``"r"`` → value
    (one frame's flag arrays are shared and read-only);
    for one frame their arrays are made on first access (an avatar client reads the local
    rotations; the IK details and flags are diagnostics, computed with the frame and
    packed into arrays only when asked for).
    """

    local_rotations: F64
    targets: Mapping[str, F64]
    ik: Mapping[str, IKResult]
    palm_clamped: Mapping[str, NDArray[np.bool_]]
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


_ARM_DIMS = np.array([[_idx(f"{a}_{s}") for a in ("a_x", "a_y", "a_z")] for s in SIDES])
_SPREAD_DIMS = np.array([_idx(f"a_spread_{s}") for s in SIDES])
_PALM_DIMS = np.array([[_idx(f"{a}_{s}") for a in ("w_qx", "w_qy", "w_qz")] for s in SIDES])
_PALM_MIRROR = np.stack([_MIRROR_Q, np.ones(4)])  # spec §4.2: physical left = mirror
_LATERAL_LR = np.stack([_LATERAL[s] for s in SIDES])
_FIXED_SENSE = np.array([1.0, -1.0])  # arm_pole's fixed sense, l then r


def decode_pose(vectors: ArrayLike, skeleton: Skeleton, *,
                calibration: Calibration | None = None) -> PoseResult:
    """Local rotations of every joint of ``skeleton`` for pose vectors ``(B, N)`` or
    ``(N,)`` (module docstring). ``calibration``: this avatar's reference distances
    (spec §4.1; default measured from the skeleton by
    :func:`posewire.consumers.skeleton.calibration_of`). Raises ``usage.shape`` for a wrong
    vector shape, ``usage.bad_option`` for a skeleton without arms/spine and
    ``usage.calibration`` when no unit can be formed."""
    arr = np.asarray(vectors, dtype=np.float64)
    # spec §3.5: the one validation of the call; nothing below re-checks
    vec, validation = _validate_clamp(arr.reshape(-1, arr.shape[-1]) if arr.ndim else arr)
    return _decode(vec, validation, skeleton, calibration)


def decode_frame(vectors: ArrayLike, skeleton: Skeleton, *, capability: Capability,
                 visemes: ArrayLike | None = None,
                 calibration: Calibration | None = None) -> tuple[PoseResult, FaceWeights]:
    """:func:`decode_pose` and :func:`posewire.consumers.face.face_weights` of the same
    vectors ``(B, N)`` or ``(N,)`` with one validation (spec §3.5) between them: what an
    avatar client runs per frame (bones, IK, face weights). The same results as the two
    calls; ``FaceWeights`` arrays take the ``(B,)`` shape of the validated batch."""
    if capability not in CAPABILITIES:
        raise UsageError("usage.bad_option", f"capability must be one of {CAPABILITIES}, not {capability!r}")
    arr = np.asarray(vectors, dtype=np.float64)
    vec, validation, changed = _validate_clamp_changed(arr.reshape(-1, arr.shape[-1]) if arr.ndim else arr)
    vl = vec.ravel().tolist() if vec.size == N_DIMS else None  # one frame: its Python floats, once
    return (_decode(vec, validation, skeleton, calibration, vl),
            _face_weights(vec, validation, capability, visemes, changed, vl))


def _decode(vec: F64, validation: ValidationReport, skeleton: Skeleton,
            calibration: Calibration | None, vl: list[float] | None = None) -> PoseResult:
    batch = vec.shape[0]
    plan = decode_plan(skeleton)
    arm_units, arm_scale, arm_scale1 = _arm_scale(plan.calibration if calibration is None else calibration)
    if batch == 1 and not plan.arm_fallback:
        return _decode_one(vec, validation, plan, arm_units, arm_scale1, vl)

    # every elementary rotation of the frame: (B, T, 3) half angles -> (B, T, 4)
    half = vec[:, plan.rot_dims] * plan.rot_half_gain + plan.rot_half_offset
    elem = np.cos(half)[..., None] * _W0 + np.sin(half)[..., None] * plan.rot_axes
    rot = multiply_unchecked(multiply_unchecked(elem[:, :, 0], elem[:, :, 1]), elem[:, :, 2])
    body, hand_rows = rot[:, 0], rot[:, 2:]
    # spec §4.3: compose down each finger, then the sagittal mirror for the left hand
    for rows, parents in plan.chain_levels:
        hand_rows[:, rows] = multiply_unchecked(hand_rows[:, parents], hand_rows[:, rows])
    hand_rows = hand_rows * plan.hand_mirror

    # spec §4.5 spine Q^c, §4.4 head Q·H^c: fractional powers about each rotation's axis
    # (|angles| ≤ 90° so w > 0: already canonical)
    vpart = rot[:, :2, 1:]
    sin_half = np.sqrt((vpart * vpart).sum(axis=-1))
    axis = vpart / np.where(sin_half > 0.0, sin_half, 1.0)[..., None]
    angle = np.arctan2(sin_half, rot[:, :2, 0])[:, plan.power_source] * plan.power_share
    powers = np.concatenate([np.cos(angle)[..., None],
                             np.sin(angle)[..., None] * axis[:, plan.power_source]], axis=-1)

    # spec §4.1: both arms at once (target, pole, two-bone IK)
    a = vec[:, _ARM_DIMS]
    target: F64 = plan.neck + a * arm_scale
    pole = _pole(target - plan.shoulder, vec[:, _SPREAD_DIMS], _LATERAL_LR, _FIXED_SENSE)
    if plan.arm_fallback:
        per_side = [two_bone_ik(plan.shoulder[k], plan.rest_pos[plan.arm_joints[k, 1]],
                                plan.rest_pos[plan.arm_joints[k, 2]], target[:, k], pole[:, k])
                    for k in range(2)]
        ik: dict[str, IKResult] = dict(zip(SIDES, per_side, strict=True))
        upper = np.stack([r.upper for r in per_side], axis=1)
        lower = np.stack([r.lower for r in per_side], axis=1)
    else:
        res = _solve(plan.shoulder, plan.upper_dir, plan.upper_len, plan.lower_dir,
                     plan.lower_len, target, pole)
        ik = {s: IKResult(res.upper[:, k], res.lower[:, k], res.elbow[:, k], res.wrist[:, k],
                          res.clamped[:, k], False) for k, s in enumerate(SIDES)}
        upper, lower = res.upper, res.lower

    # spec §4.2: palm quaternions (rescale |v| > 1, clamp to 0.98, w ≥ 0, left mirrored)
    # (spec §3.3 clamp arithmetic: v · (T / |v|), T = 0.98 · (1 − 2⁻⁴⁹), so |v| ≤ 0.98 after it)
    palm, clamped = reconstruct_w_unchecked(vec[:, _PALM_DIMS], clamp=PALM_CLAMP)
    palm = palm * _PALM_MIRROR

    # carried by the torso Q: head Q·H^c (spec §4.4), arms (body-local, seed 003), palms
    n_spine, n_power = plan.n_spine, plan.power_share.size
    carried = multiply_unchecked(body[:, None], np.concatenate([powers[:, n_spine:], upper, lower, palm], axis=1))
    hand_world = carried[:, -2:]  # hand-local frame -> body frame
    hands = multiply_unchecked(multiply_unchecked(hand_world[:, plan.hand_side], hand_rows), plan.hand_rest_inv)

    # L_j = L_rest · W_rest⁻¹ · G_parent⁻¹ · G_j · W_rest (module docstring)
    g = np.empty((batch, 1 + n_power + 4 + hands.shape[1], 4))
    g[:, 0] = _IDENTITY
    g[:, 1:1 + n_spine] = powers[:, :n_spine]
    g[:, 1 + n_spine:5 + n_power] = carried[:, :-2]
    g[:, 5 + n_power:] = hands
    local = multiply_unchecked(conjugate_unchecked(g)[:, plan.parent_slot], g[:, plan.joint_slot])
    if plan.rest_left is not None and plan.rest_world is not None:
        local = multiply_unchecked(multiply_unchecked(plan.rest_left, local), plan.rest_world)
    local[:, 0] = plan.root_rest
    targets: dict[str, F64] = {s: target[:, k] for k, s in enumerate(SIDES)}
    palm_clamped: dict[str, NDArray[np.bool_]] = {s: clamped[:, k] for k, s in enumerate(SIDES)}
    return PoseResult(local, targets, ik, palm_clamped, validation, arm_units, plan.skipped)


# -- one frame (B = 1) ------------------------------------------------------------------
# The same formulas with fewer array operations: numpy call overhead, not arithmetic,
# is the cost of a single frame. Every row the frame needs (body and head Euler
# rotations, each hand row composed down its finger chain, then the left-hand mirror and
# the rest hand frame) is one table product: the chain's ``cos + sin·axis`` factors are
# listed at plan time, neighbours about the same axis merged (a finger's fold and curls
# add: rotations about one axis commute), so a row is a sum over at most 2^K products of
# K cosines/sines with fixed quaternion coefficients (K ≤ 4 on the canonical skeleton);
# half angles come from one gain matrix, rows from one gather and one matmul. The
# bind-frame products are 4×4 matrices; the two arms (posewire.consumers.ik_single.arm1: pole and
# two-bone solve in one function), palms and fractional powers are Python floats, written
# into the G table as one flat list. Targets, IK results and palm flags stay Python floats
# until first read (_Sides1). Equal to the batch path to float round-off
# (tests/test_consumer_speed_equivalence.py).

def _left_matrix(q: F64) -> F64:
    # (..., 4, 4) M with M @ b = q · b
    basis = np.eye(4)
    out: F64 = np.stack([multiply_unchecked(q, basis[j]) for j in range(4)], axis=-1)
    return out


def _right_matrix(q: F64) -> F64:
    # (..., 4, 4) M with M @ b = b · q
    basis = np.eye(4)
    out: F64 = np.stack([multiply_unchecked(np.broadcast_to(basis[j], q.shape), q) for j in range(4)],
                        axis=-1)
    return out


@dataclass(frozen=True, eq=False)
class _OnePlan:
    angle_matrix: F64  # (U, N): half angle u = Σ gain · n over its dims (entry 0: the constant 0)
    angle_const: F64  # (U,) plus a constant half angle (finger metacarpal, §4.3)
    # the table's rows: A (hand rows of at most two factors, the two hands first; 4 terms),
    # B (body, head, then the hand rows of more: 2^K terms), then the n_small G slots;
    # a row = Σ_terms Π_k (cos|sin)(half angle) · coef, indices into [cos(U) | sin(U)]
    factor_a: NDArray[np.intp]  # (2, A, 4) the two factors of each term
    coef_a: F64  # (A, 4, 4) coefficient of each term, with mirror and · P⁻¹
    factor_b: NDArray[np.intp]  # (K, B, 2^K)
    coef_b: F64  # (B, 2^K, 4)
    hand_rows: NDArray[np.intp]  # (2 + F, 16) flat gathers of the hand rows (for hands_a)
    rest: F64 | None  # (J, 4, 4): L_rest·W_rest⁻¹ · x · W_rest
    n_small: int  # G slots before the hand rows: identity, powers, arms (4), hands (2)
    spine_shares: tuple[float, ...]  # cumulative fractional powers of Q (spec §4.5)
    head_shares: tuple[float, ...]  # ... of H, carried by Q (spec §4.4)
    neck: tuple[float, float, float]
    # per side (l, r): arm dims x, y, z, spread dim, lateral, fixed sense, shoulder, upper
    # dir, upper length, lower dir, lower length, palm dims, mirrored (spec §4.1, §4.2)
    arms: tuple[tuple[int, int, int, int, Vec3, float, Vec3, Vec3, float, Vec3, float,
                      tuple[int, int, int], bool], ...]
    hands_a: NDArray[np.intp]  # (2 + F, 16) flat gathers for multiply_unchecked(palm of side, hand row)
    local_a: NDArray[np.intp]  # (J, 16) flat gathers for conj(G_parent) · G_j
    raw_fingers: bool  # local_a/b index the table (hands, fingers without the palm; _one_plan)
    local_b: NDArray[np.intp]


#: Flat gather patterns of ``multiply_unchecked`` (``a_i · b_j`` at ``4·i + j``) and the table with
#: the conjugate of ``a`` folded in.
_PAIR_I = np.repeat(np.arange(4), 4)
_PAIR_J = np.tile(np.arange(4), 4)
_QMUL_CONJ_TABLE = HAMILTON_TABLE * CONJUGATE_SIGNS[_PAIR_I][:, None]


def _pairs(rows_a: NDArray[np.intp], rows_b: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    a = 4 * rows_a[:, None] + _PAIR_I
    b = 4 * rows_b[:, None] + _PAIR_J
    return a, b


def _row_factors(plan: DecodePlan) -> list[list[tuple[F64, list[tuple[int, float]], float]]]:
    # per row (body, head, then the 2 + F hand rows, each composed down its finger chain):
    # the elementary rotations cos(h) + sin(h)·axis left to right as (axis, [(dim, gain)],
    # constant) with h = Σ gain · n + constant; unused ones dropped and neighbours about
    # the same axis merged (they commute: the angles add)
    n_rows = plan.hand_side.size
    parent = np.full(n_rows, -1, dtype=np.intp)
    for rows, parents in plan.chain_levels:
        parent[rows] = parents

    def elements(t: int) -> list[tuple[F64, list[tuple[int, float]], float]]:
        out = []
        for k in range(3):
            g, o = float(plan.rot_half_gain[t, k]), float(plan.rot_half_offset[t, k])
            if g != 0.0 or o != 0.0:
                out.append((plan.rot_axes[t, k], [(int(plan.rot_dims[t, k]), g)] if g != 0.0 else [], o))
        return out

    result = []
    for r in range(-2, n_rows):
        if r < 0:
            seq = elements(2 + r)  # rows 0, 1 of rot: body, head
        else:
            chain, row = [], r
            while row >= 0:
                chain.append(2 + int(row))
                row = int(parent[row])
            seq = [e for t in reversed(chain) for e in elements(t)]
        merged: list[tuple[F64, list[tuple[int, float]], float]] = []
        for axis, terms, const in seq:
            if merged and np.array_equal(merged[-1][0], axis):
                merged[-1] = (axis, merged[-1][1] + terms, merged[-1][2] + const)
            else:
                merged.append((axis, list(terms), const))
        result.append(merged)
    return result


@functools.lru_cache(maxsize=32)
def _one_plan(plan: DecodePlan) -> _OnePlan:
    n_rows = plan.hand_side.size
    hand_right = _right_matrix(plan.hand_rest_inv) * plan.hand_mirror[:, None, :]
    n_small = 1 + plan.power_share.size + 6
    # table rows: body, head, unused up to n_small (the G slots of the small table are
    # written there per frame), then the 2 + F hand rows (the layout of local_a/b)
    by_row = _row_factors(plan)
    rows = by_row[:2] + [[] for _ in range(n_small - 2)] + by_row[2:]
    n_k = max(1, max(len(r) for r in rows))
    n_terms = 2 ** n_k
    bits = [[(b >> (n_k - 1 - k)) & 1 for k in range(n_k)] for b in range(n_terms)]
    keys: dict[tuple[tuple[tuple[int, float], ...], float], int] = {((), 0.0): 0}
    factor_at = np.zeros((n_k, len(rows), n_terms), dtype=np.intp)
    coef = np.zeros((len(rows), n_terms, 4))
    for r, factors in enumerate(rows):
        where = [keys.setdefault((tuple(terms), const), len(keys)) for _, terms, const in factors]
        where += [0] * (n_k - len(factors))  # padding: cos 0 = 1 (and sin 0 meets a zero axis)
        axes = [a for a, _, _ in factors] + [np.zeros(4)] * (n_k - len(factors))
        for b, bk in enumerate(bits):
            q = _W0
            for k in range(n_k):
                q = multiply_unchecked(q, _W0 if bk[k] == 0 else axes[k])
            coef[r, b] = q
        factor_at[:, r] = np.array(where)[:, None]  # the cos entry; + U below for the sin
    n_angles = len(keys)
    factor_at += np.array(bits).T[:, None, :] * n_angles
    coef[n_small:] = coef[n_small:] @ np.swapaxes(hand_right, -1, -2)  # then mirror, · P⁻¹ (row vectors)
    matrix = np.zeros((n_angles, N_DIMS))
    const = np.zeros(n_angles)
    for (terms, c), u in keys.items():
        for dim, gain in terms:
            matrix[u, dim] += gain
        const[u] = c
    hand_world = np.where(plan.hand_side == 0, n_small - 2, n_small - 1)
    rest = None
    if plan.rest_left is not None and plan.rest_world is not None:
        rest = _left_matrix(plan.rest_left) @ _right_matrix(plan.rest_world)

    def triples(x: F64) -> tuple[tuple[float, float, float], ...]:
        return tuple((float(r[0]), float(r[1]), float(r[2])) for r in x)

    # the padded rows above, split: most finger rows have two factors (side, then the
    # merged fold + curls), so 4 of their 2^K terms are not zero (the padding factors'
    # bits 0); the unused rows 2 .. n_small − 1 are dropped (the small table follows).
    # K ≥ 3 (the body's three Euler factors); A starts with the two hand rows (no factor)
    n_factors = [len(r) for r in rows]
    two = [k for k, b in enumerate(bits) if not any(b[2:])]
    rows_a = [r for r in range(n_small, len(rows)) if n_factors[r] <= 2]
    rows_b = [0, 1, *(r for r in range(n_small, len(rows)) if n_factors[r] > 2)]
    at = np.empty(len(rows), dtype=np.intp)  # padded row -> table row
    at[rows_a + rows_b] = np.arange(len(rows_a) + len(rows_b))
    at[2:n_small] = -1
    n_table = len(rows_a) + len(rows_b)

    def table(slot_row: NDArray[np.intp]) -> NDArray[np.intp]:  # padded row or G slot -> table row
        out: NDArray[np.intp] = np.where(slot_row >= n_small, at[np.minimum(slot_row, len(rows) - 1)],
                                         n_table + slot_row)
        return out

    hands_a, _ = _pairs(hand_world, np.arange(n_rows))
    hand_rows = 4 * at[n_small:, None] + _PAIR_J
    # conj(G_p)·G_j is unchanged when both carry the same left factor: a finger whose
    # parent is its hand or a finger takes the hand rows without the palm (the hand
    # joint itself and its parent keep the full G): its slot n_small + f is padded row
    # n_small + 2 + f. Otherwise the per-frame table is the plan's slots: the small table
    # less the palms, then the hand rows with the palm.
    joint, parent = plan.joint_slot, plan.parent_slot
    finger = joint >= n_small
    raw = bool((parent[finger] >= n_small - 2).all())
    if raw:
        joint = table(np.where(finger, joint + 2, joint))
        parent = table(np.where(finger, parent + 2, parent))
    local_a, local_b = _pairs(parent, joint)
    factor_a = np.ascontiguousarray(factor_at[:2][:, rows_a][:, :, two])
    coef_a = np.ascontiguousarray(coef[rows_a][:, two])
    factor_b = np.ascontiguousarray(factor_at[:, rows_b])
    coef_b = np.ascontiguousarray(coef[rows_b])
    shares = plan.power_share.tolist()
    shoulder, upper_dir, lower_dir = triples(plan.shoulder), triples(plan.upper_dir), triples(plan.lower_dir)
    arms = tuple((*_ARM_DIMS[k].tolist(), int(_SPREAD_DIMS[k]), triples(_LATERAL_LR)[k], float(_FIXED_SENSE[k]),
                  shoulder[k], upper_dir[k], float(plan.upper_len[k]), lower_dir[k], float(plan.lower_len[k]),
                  tuple(_PALM_DIMS[k].tolist()), s == "l") for k, s in enumerate(SIDES))
    one = _OnePlan(
        angle_matrix=matrix, angle_const=const, factor_a=factor_a, coef_a=coef_a, factor_b=factor_b,
        coef_b=coef_b, hand_rows=hand_rows, rest=rest, n_small=n_small,
        spine_shares=tuple(shares[:plan.n_spine]), head_shares=tuple(shares[plan.n_spine:]),
        neck=triples(plan.neck[None])[0], arms=arms,
        hands_a=hands_a, local_a=local_a, local_b=local_b, raw_fingers=raw)
    _readonly(matrix, const, factor_a, coef_a, factor_b, coef_b, hand_rows, one.hands_a, one.local_a,
              one.local_b, *(() if rest is None else (rest,)))
    return one


_FALSE1 = np.zeros(1, dtype=np.bool_)  # the (1,) flags of one frame, shared (read-only)
_TRUE1 = np.ones(1, dtype=np.bool_)
_readonly(_FALSE1, _TRUE1)


def _powers1(q: Quat, shares: tuple[float, ...]) -> list[Quat]:
    # spec §4.5 / §4.4: q (w > 0) raised to each share, about its own axis, in Python floats
    w, x, y, z = q
    sin_half = math.sqrt(x * x + y * y + z * z)
    d = sin_half if sin_half > 0.0 else 1.0
    ax, ay, az, angle = x / d, y / d, z / d, math.atan2(sin_half, w)
    out: list[Quat] = []
    for share in shares:
        part = angle * share
        s = math.sin(part)
        out.append((math.cos(part), s * ax, s * ay, s * az))
    return out


def _decode_one(vec: F64, validation: ValidationReport, plan: DecodePlan, arm_units: CalibrationUnits,
                arm_scale: tuple[Vec3, Vec3], vl: list[float] | None = None) -> PoseResult:
    # ``vl``: vec[0] as Python floats when the caller has them (decode_frame)
    one = _one_plan(plan)
    v = vec[0]
    if vl is None:
        vl = v.tolist()
    # the table (_OnePlan): rows A, rows B (Σ_terms Π_k (cos|sin)(half angle) · coef, see
    # _row_factors), then the small table's G slots, written below
    half = one.angle_matrix @ v + one.angle_const
    cs = np.concatenate((np.cos(half), np.sin(half)))
    n_a, n_b = one.coef_a.shape[0], one.coef_b.shape[0]
    g = np.empty(4 * (n_a + n_b + one.n_small))
    g3 = g.reshape(-1, 1, 4)
    np.matmul((cs[one.factor_a[0]] * cs[one.factor_a[1]])[:, None, :], one.coef_a, out=g3[:n_a])
    np.matmul(np.multiply.reduce(cs[one.factor_b])[:, None, :], one.coef_b, out=g3[n_a:n_a + n_b])
    bw, bx, by, bz, hw, hx, hy, hz = g[4 * n_a:4 * n_a + 8].tolist()

    # spec §4.5 / §4.4 fractional powers about each rotation's axis (|angles| ≤ 90°, so
    # w > 0), §4.1 arms, §4.2 palms: Python floats, written as one flat list of the G slots
    small = [1.0, 0.0, 0.0, 0.0]
    body: Quat = (bw, bx, by, bz)
    for q in _powers1(body, one.spine_shares):
        small += q
    for q in _powers1((hw, hx, hy, hz), one.head_shares):
        small += multiply1(body, q)  # Q · H^c
    lower: list[float] = []
    palms: list[Quat] = []
    quats: list[float] = []  # per side: G_upper, G_lower (body-local IK results)
    points: list[float] = []  # per side: target, elbow, wrist
    clamped: list[bool] = []
    palm_clamped: list[bool] = []
    nx, ny, nz = one.neck
    for (dx, dy, dz, spread, lateral, fixed, sh, up_dir, up_len, low_dir, low_len, (pxi, pyi, pzi),
         mirror), (cx, cy, cz) in zip(one.arms, arm_scale, strict=True):
        target = (nx + vl[dx] * cx, ny + vl[dy] * cy, nz + vl[dz] * cz)
        g_up, g_low, elbow, wrist, hit = arm1(sh, up_dir, up_len, low_dir, low_len, target, vl[spread],
                                                lateral, fixed)
        small += multiply1(body, g_up)  # body-local arms carried by Q (seed 003)
        lower += multiply1(body, g_low)
        quats += (*g_up, *g_low)
        points += (*target, *elbow, *wrist)
        clamped.append(hit)
        # spec §4.2: rescale |v| > 1, clamp to 0.98, w ≥ 0; the left hand mirrored
        (w, px, py, pz), over = reconstruct_w1((vl[pxi], vl[pyi], vl[pzi]), clamp=PALM_CLAMP)  # spec §3.3
        palms.append(multiply1(body, (w, px, -py, -pz) if mirror else (w, px, py, pz)))
        palm_clamped.append(over)
    small += lower

    # hands; L_j = conj(G_parent) · G_j (module docstring)
    if one.raw_fingers:
        h = g[:8].tolist()  # the two hands: the first rows of A
        small += multiply1(palms[0], (h[0], h[1], h[2], h[3]))
        small += multiply1(palms[1], (h[4], h[5], h[6], h[7]))
        g[4 * (n_a + n_b):] = small
    else:
        g_small = np.array(small + [x for q in palms for x in q])
        hands = (g_small[one.hands_a] * g[one.hand_rows]) @ HAMILTON_TABLE
        g = np.concatenate([g_small[:-8], hands.ravel()])
    local = (g[one.local_a] * g[one.local_b]) @ _QMUL_CONJ_TABLE
    if one.rest is not None:
        local = (one.rest @ local[:, :, None])[:, :, 0]
    local[0] = plan.root_rest

    sides = _Sides1(quats + points, clamped, palm_clamped)  # arrays on first access
    return PoseResult(local[None], _SideMap(sides, 0), _SideMap(sides, 1), _SideMap(sides, 2),
                      validation, arm_units, plan.skipped)


class _Sides1:
    # one frame's per-side results as Python floats (G_upper, G_lower of l then r; target,
    # elbow, wrist of l then r) and flags; their arrays are made once, on first access
    __slots__ = ("_built", "_clamped", "_floats", "_palm_clamped")

    def __init__(self, floats: list[float], clamped: list[bool], palm_clamped: list[bool]) -> None:
        self._floats, self._clamped, self._palm_clamped = floats, clamped, palm_clamped
        self._built: tuple[dict[str, F64], dict[str, IKResult], dict[str, NDArray[np.bool_]]] | None = None

    def built(self) -> tuple[dict[str, F64], dict[str, IKResult], dict[str, NDArray[np.bool_]]]:
        if self._built is None:  # one array of the results, (1, 4) and (1, 3) views of it
            out = np.array(self._floats)
            up_l, low_l, up_r, low_r = out[:16].reshape(4, 1, 4)
            t_l, e_l, w_l, t_r, e_r, w_r = out[16:].reshape(6, 1, 3)
            c, p = self._clamped, self._palm_clamped
            self._built = ({"l": t_l, "r": t_r},
                           {"l": IKResult(up_l, low_l, e_l, w_l, _TRUE1 if c[0] else _FALSE1, False),
                            "r": IKResult(up_r, low_r, e_r, w_r, _TRUE1 if c[1] else _FALSE1, False)},
                           {"l": _TRUE1 if p[0] else _FALSE1, "r": _TRUE1 if p[1] else _FALSE1})
        return self._built


_V = TypeVar("_V")


class _SideMap(Mapping[str, _V], Generic[_V]):
    # PoseResult.targets / ik / palm_clamped of one frame: a read-only "l"/"r" mapping over
    # its _Sides1 (which: 0 targets, 1 IK, 2 palm flags)
    __slots__ = ("_sides", "_which")

    def __init__(self, sides: _Sides1, which: int) -> None:
        self._sides, self._which = sides, which

    def __getitem__(self, side: str) -> _V:
        value: _V = self._sides.built()[self._which][side]  # type: ignore[assignment]
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(SIDES)

    def __len__(self) -> int:
        return len(SIDES)

    def __repr__(self) -> str:
        return repr(dict(self))

