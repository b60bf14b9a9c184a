"""decode_pose's fast path equals the straightforward joint-by-joint evaluation.

``reference_decode`` below is the decoder as first written (one quaternion product per
joint and step, public codec functions, validation inside each call); the fast path of
:func:`posewire.consumers.pose.decode_pose` restructures the same formulas (cached plan, batched
elementary rotations, both arms at once), so the two agree to float round-off.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import ArrayLike, NDArray

from posewire.codec.calibration import Calibration, arm_to_physical, units
from posewire.codec.errors import UsageError
from posewire.codec.euler import head_to_quat, spine_rotations
from posewire.codec.quaternion import conjugate_unchecked as _qconj
from posewire.codec.quaternion import from_matrix, palm_decode
from posewire.codec.quaternion import multiply_unchecked as _qmul
from posewire.codec.quaternion import rotate_unchecked as _qrot
from posewire.codec.registry import REGISTRY, SPINE_SHARES
from posewire.codec.vector import LOWER, N_DIMS, validate
from posewire.consumers.ik import IKResult, arm_pole, two_bone_ik
from posewire.consumers.pose import HEAD_SHARES, PoseResult, decode_pose
from posewire.consumers.skeleton import FINGERS, Skeleton, calibration_of, helix_humanoid

F64 = NDArray[np.float64]
SIDES = ("l", "r")
_MIRROR_Q = np.array([1.0, 1.0, -1.0, -1.0])
_M = np.array([-1.0, 1.0, 1.0])


def _idx(dim: str) -> int:
    return REGISTRY.index(dim)


def _frame_quat(x: F64, y: F64, z: F64) -> F64:
    return from_matrix(np.stack([x, y, z], axis=-1))


@dataclass(frozen=True)
class _FingerSlot:
    joint: int
    side: int  # 0 = l, 1 = r
    parent_slot: int  # -1 = hand
    axes: F64  # (3, 3) right-like hand-local axes
    dims: tuple[int, int, int]  # registry index per axis (-1 = none)
    gains: F64  # (3,) radians per unit n
    offsets: F64  # (3,) constant radians (spec §4.3: side relative to the metacarpal)


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
                         ((ez, ez, ez), (f"g_{f}_distal_{s}", "", ""))]
            else:
                ex, ez = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
                specs = [((ez, ex, ex), (f"g_{f}_side_{s}", f"g_{f}_fold_{s}", "")),
                         ((ex, ex, ex), (f"g_{f}_curl_{s}", "", "")),
                         ((ex, ex, ex), (f"g_{f}_distal_{s}", "", ""))]
            alpha = 0.0
            if f != "thumb" and joints[0] in ix and joints[1] in ix:
                # in-plane angle (from +Y toward the pinky) of the metacarpal minus the bone's
                meta = mirror * _qrot(to_local, pos[ix[joints[0]]] - wrist)
                bone = mirror * _qrot(to_local, pos[ix[joints[1]]] - pos[ix[joints[0]]])
                alpha = float(np.arctan2(-meta[0], meta[1]) - np.arctan2(-bone[0], bone[1]))
            if f != "thumb":  # the relaxed splay: θ_side = neutral_deg + side · angle_deg
                alpha += float(np.radians(REGISTRY.by_id[f"g_{f}_side_{s}"].row.neutral_deg or 0.0))
            parent = -1
            for name, (axes, dims) in zip(joints, specs, strict=True):
                if name not in ix:
                    continue
                slots.append(_FingerSlot(
                    ix[name], k, parent, np.array(axes, dtype=np.float64),
                    tuple(_idx(d) if d else -1 for d in dims),  # type: ignore[arg-type]
                    np.array([_angle(d) if d else 0.0 for d in dims]),
                    np.array([alpha if name == joints[0] else 0.0, 0.0, 0.0])))
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


def reference_decode(vectors: ArrayLike, skeleton: Skeleton, *,
                     calibration: Calibration | None = None) -> PoseResult:
    # the joint-by-joint evaluation decode_pose had before its fast path
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
    offsets = np.stack([sl.offsets for sl in slots])  # (S, 3)
    elem = _axis_quat(np.broadcast_to(axes, (*n.shape, 3)), n * gains + offsets)
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


def _skeletons() -> list[Skeleton]:
    skel = helix_humanoid()
    rest, _ = skel.rest_world()
    q = np.random.default_rng(11).normal(size=(len(skel), 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    bound = Skeleton.from_world(skel.names, skel.parents, rest, q, sites={
        n: (skel.names[j], rest[j] + off) for n, (j, off) in skel.sites.items()})
    return [skel, bound, helix_humanoid(1.3, metacarpals=True),
            skel.without(["spine_02", "neck_02", "thumb_02_r", "index_03_l", "middle_01_l"])]


SKELETONS = _skeletons()


def _assert_same(fast: PoseResult, ref: PoseResult) -> None:
    np.testing.assert_allclose(fast.local_rotations, ref.local_rotations, rtol=0, atol=1e-12)
    for s in SIDES:
        np.testing.assert_allclose(fast.targets[s], ref.targets[s], rtol=0, atol=1e-12)
        for name in ("upper", "lower", "elbow", "wrist"):
            np.testing.assert_allclose(getattr(fast.ik[s], name), getattr(ref.ik[s], name), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(fast.ik[s].clamped, ref.ik[s].clamped)
        np.testing.assert_array_equal(fast.palm_clamped[s], ref.palm_clamped[s])
    assert fast.report() == ref.report()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(SKELETONS))), st.sampled_from([1, 7]))
def test_fast_path_equals_reference(seed: int, which: int, batch: int) -> None:
    rng = np.random.default_rng(seed)
    vec = rng.uniform(LOWER - 0.3, 1.3, size=(batch, N_DIMS))  # some out of range: clamped
    vec[rng.random(vec.shape) < 0.02] = np.nan  # some missing: defaults
    skel = SKELETONS[which]
    _assert_same(decode_pose(vec, skel), reference_decode(vec, skel))


def test_fast_path_equals_reference_short_bones_and_custom_calibration() -> None:
    # a forearm under 3 cm: seed 003 fallback on that side only
    skel = helix_humanoid()
    rest, _ = skel.rest_world()
    ix = skel.index
    rest[ix["hand_l"]] = rest[ix["lowerarm_l"]] + 0.02 * (rest[ix["hand_l"]] - rest[ix["lowerarm_l"]])
    short = Skeleton.from_world(skel.names, skel.parents, rest, sites={
        n: (skel.names[j], rest[j]) for n, (j, _off) in skel.sites.items()})
    vec = np.random.default_rng(3).uniform(LOWER, 1.0, size=(5, N_DIMS))
    fast, ref = decode_pose(vec, short), reference_decode(vec, short)
    _assert_same(fast, ref)
    assert fast.report()["ik_fallback"] == ["l"]
    cal = Calibration(hand_length=None, torso_length=0.45, arm_length=0.6, shoulder_width=0.4)
    _assert_same(decode_pose(vec, skel, calibration=cal), reference_decode(vec, skel, calibration=cal))


def test_large_batch_equals_reference() -> None:
    vec = np.random.default_rng(5).uniform(LOWER, 1.0, size=(600, N_DIMS))  # past the small-array kernels
    _assert_same(decode_pose(vec, SKELETONS[1]), reference_decode(vec, SKELETONS[1]))
