"""OpenXR / WebXR hand joints -> hand dims (spec §2.4, §3.2, §4.2, §4.3; seed ``004_da5cba9e344bbfc1.txt``).

The VR producer promise (BRIEF: "same vector as the webcam for the same hand pose"): the
26 ``rig.vr.joint`` joints are mapped onto the common hand layout of
:mod:`posewire.producers.hand` (MediaPipe's 21 points; the correspondence table is in that
module's docstring) and go through the very same :func:`posewire.producers.hand.hand_dims` as the
webcam producer :mod:`posewire.producers.landmarks`. ``palm`` and the four finger
``*-metacarpal`` joints have no MediaPipe counterpart and are not used, so WebXR's 25
joints (no ``palm``) give exactly the dims of OpenXR's 26.

Frames. Positions may be given in any right-handed world frame, in any unit (the dims
are angles). The body frame of spec §2.1 enters only as a rotation:

* ``body_frame=`` a :class:`posewire.codec.calibration.BodyFrame` in that world frame (e.g. from
  :func:`posewire.codec.calibration.body_frame` on tracked shoulders and hips); its ``rotation``
  ``(3, 3)`` or ``(B, 3, 3)`` has the body axes X, Y, Z as columns (spec §2.3);
* default (``None``): the OpenXR reference space (+Y up, −Z forward, +X the user's
  right, metres) with the user facing −Z: body X (character's left) = −X_xr, Y = +Y_xr,
  Z (forward) = −Z_xr, i.e. ``R = diag(−1, 1, −1)`` (:data:`OPENXR_BODY_ROTATION`), a
  proper rotation (180° about Y). The origin does not matter for the hand dims.

Missing joints (seed 004: "a missing joint in the chain: parent to the nearest present
ancestor, then the hand"): a joint is missing when its name is absent from the mapping,
or (array input) when all three coordinates are NaN; :func:`effective_parents` gives the
reparented hierarchy and the report counts it. A dim is estimated only from the joints
it needs (:data:`DIM_JOINTS`): the hand frame (``wrist``, ``index-proximal``,
``middle-proximal``, ``little-proximal``) for every dim, plus per finger the joints of
:data:`DIM_JOINTS`. Without the hand frame the hand is ``lost`` (all its dims NaN);
with it, a dim whose joints are missing is NaN and counted in ``report.not_estimated``.
A bone spanning a missing joint (e.g. ``index-proximal`` → ``index-distal`` after
``index-intermediate`` is dropped) merges two phalanges whose angles cannot be told
apart, so it is never used for a dim.

``g_thumb_roll`` (§4.3) comes from the ``thumb-metacarpal`` orientation when
orientations are given (:func:`posewire.producers.hand.thumb_roll`; OpenXR joint axes: +Y out of
the back of the finger, −Z along the bone toward the tip — WebXR uses the same axes),
else from the positions (the thumb's bend axis, :func:`posewire.producers.hand.finger_angles`);
a thumb too straight to show it gets the default 0 (seed 000 §4.3), noted in the report. Arm dims (``a_*``) are not
estimated here (NaN).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.calibration import BodyFrame
from posewire.codec.conditions import Conditions
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import rotate
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.producers.hand import FINGERS, N_HAND_POINTS, hand_dims, thumb_roll

__all__ = [
    "DIM_JOINTS",
    "HAND_FRAME_JOINTS",
    "OPENXR_BODY_ROTATION",
    "VR_JOINTS",
    "VR_PARENTS",
    "VR_TO_HAND_POINTS",
    "WEBXR_JOINTS",
    "WEBXR_NAMES",
    "JointPoseLike",
    "VRHandReport",
    "VRHandResult",
    "VRJointPose",
    "effective_parents",
    "vr_hand_to_vector",
]

F64 = NDArray[np.float64]
Bool = NDArray[np.bool_]
Side = Literal["l", "r"]

#: The 26 ``rig.vr.joint`` names in seed 004 order (OpenXR ``XrHandJointEXT`` order).
VR_JOINTS: tuple[str, ...] = (
    "palm", "wrist",
    "thumb-metacarpal", "thumb-proximal", "thumb-distal", "thumb-tip",
    *(f"{f}-{j}" for f in ("index", "middle", "ring", "little")
      for j in ("metacarpal", "proximal", "intermediate", "distal", "tip")),
)
#: WebXR's 25 joints: the same order without ``palm``.
WEBXR_JOINTS: tuple[str, ...] = VR_JOINTS[1:]
#: WebXR ``XRHandJoint`` names -> seed names (accepted as aliases in mapping input).
WEBXR_NAMES: Mapping[str, str] = {
    "wrist": "wrist", "thumb-metacarpal": "thumb-metacarpal", "thumb-phalanx-proximal": "thumb-proximal",
    "thumb-phalanx-distal": "thumb-distal", "thumb-tip": "thumb-tip",
    **{f"{web}-finger-{part}": f"{seed}-{j}" for web, seed in (("index", "index"), ("middle", "middle"),
                                                               ("ring", "ring"), ("pinky", "little"))
       for part, j in (("metacarpal", "metacarpal"), ("phalanx-proximal", "proximal"),
                       ("phalanx-intermediate", "intermediate"), ("phalanx-distal", "distal"),
                       ("tip", "tip"))},
}


def _seed_parent(name: str) -> str | None:
    """Seed 004 parent table (``None`` = the hand entity)."""
    if name == "wrist":
        return None
    finger, _, joint = name.partition("-")
    if name == "palm" or joint == "metacarpal":
        return "wrist"
    chain = ("metacarpal", "proximal", "distal", "tip") if finger == "thumb" else \
        ("metacarpal", "proximal", "intermediate", "distal", "tip")
    return f"{finger}-{chain[chain.index(joint) - 1]}"


#: Seed 004 parents (``None`` = the hand entity).
VR_PARENTS: Mapping[str, str | None] = {name: _seed_parent(name) for name in VR_JOINTS}
_INDEX = {name: i for i, name in enumerate(VR_JOINTS)}
#: Common hand layout (MediaPipe 21, :mod:`posewire.producers.hand`) -> ``VR_JOINTS`` index.
VR_TO_HAND_POINTS: NDArray[np.intp] = np.array(
    [_INDEX["wrist"]]
    + [_INDEX[f"thumb-{j}"] for j in ("metacarpal", "proximal", "distal", "tip")]
    + [_INDEX[f"{f}-{j}"] for f in ("index", "middle", "ring", "little")
       for j in ("proximal", "intermediate", "distal", "tip")], dtype=np.intp)
assert VR_TO_HAND_POINTS.shape == (N_HAND_POINTS,)
#: Joints of the hand frame (spec §2.4): every dim needs them.
HAND_FRAME_JOINTS: tuple[str, ...] = ("wrist", "index-proximal", "middle-proximal", "little-proximal")
_VR_FINGER = {"thumb": "thumb", "index": "index", "middle": "middle", "ring": "ring", "pinky": "little"}
#: Registry row (no side suffix) -> joints it needs beyond :data:`HAND_FRAME_JOINTS`
#: (spec §4.3 definitions of :func:`posewire.producers.hand.finger_angles`).
DIM_JOINTS: Mapping[str, tuple[str, ...]] = {
    **{f"w_q{a}": () for a in "xyz"},
    "g_thumb_curl": ("thumb-metacarpal", "thumb-proximal", "thumb-distal", "thumb-tip"),
    "g_thumb_distal": ("thumb-metacarpal", "thumb-proximal", "thumb-distal", "thumb-tip"),
    "g_thumb_fold": ("thumb-metacarpal", "thumb-proximal"),
    "g_thumb_side": ("thumb-metacarpal", "thumb-proximal"),
    "g_thumb_roll": (),  # default 0 when it cannot be measured (seed 000 §4.3)
    **{f"g_{f}_{kind}": tuple(f"{_VR_FINGER[f]}-{j}" for j in joints)
       for f in FINGERS[1:]
       for kind, joints in (("curl", ("proximal", "intermediate", "distal")),
                            ("distal", ("proximal", "intermediate", "distal", "tip")),
                            ("fold", ("proximal", "intermediate")), ("side", ("proximal", "intermediate")))},
}
#: Default world -> body rotation (columns = body X, Y, Z in OpenXR coordinates): the user
#: faces −Z of the OpenXR reference space, +Y up (module docstring).
OPENXR_BODY_ROTATION: F64 = np.diag([-1.0, 1.0, -1.0])


@dataclass(frozen=True)
class VRJointPose:
    """One joint pose (``rig.spatial.transform``): ``position (3,)`` or ``(B, 3)`` and an
    optional unit ``orientation (4,)`` or ``(B, 4)`` in the order given by
    ``quaternion_order`` of :func:`vr_hand_to_vector`."""

    position: ArrayLike
    orientation: ArrayLike | None = None


#: A joint pose: :class:`VRJointPose`, a mapping with ``"position"`` (and optionally
#: ``"orientation"``), or a bare position.
JointPoseLike: TypeAlias = VRJointPose | Mapping[str, ArrayLike] | ArrayLike


@dataclass(frozen=True)
class VRHandReport:
    """What the conversion did (never silent): frames, tracked fraction of the hand,
    clamps per dim id, missing joints (frames per joint), reparented joints (joint ->
    {new parent: frames}, seed 004), dims not estimated while the hand was tracked
    (frames per dim id), degenerate palm frames, notes."""

    frames: int
    tracked_fraction: Mapping[str, float]
    clamped: Mapping[str, int]
    missing_joints: Mapping[str, int]
    reparented: Mapping[str, Mapping[str, int]]
    not_estimated: Mapping[str, int]
    degenerate: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class VRHandResult:
    """``vectors (B, N)``: the dims of ``hand_<side>`` (NaN where not estimated; every
    other dim NaN); ``tracking``: ``{"hand_<side>": (B,) "tracked" | "lost"}``; report."""

    vectors: F64
    tracking: Mapping[str, NDArray[np.str_]]
    report: VRHandReport

    def conditions(self, frame: int) -> Conditions:
        """The tracking condition of one frame (parts not ``tracked`` only)."""
        states = {part: str(s[frame]) for part, s in self.tracking.items() if str(s[frame]) != "tracked"}
        return Conditions(tracking=states)


def effective_parents(present: Mapping[str, bool] | frozenset[str] | set[str]) -> dict[str, str]:
    """Seed 004 hierarchy over the present joints: each present joint -> its nearest
    present ancestor, or ``"hand"`` (the hand entity) when none is present. ``present``
    is the set of present joint names (or a name -> bool mapping)."""
    here = {n for n in present if (present[n] if isinstance(present, Mapping) else True)}
    out: dict[str, str] = {}
    for name in VR_JOINTS:
        if name not in here:
            continue
        parent = VR_PARENTS[name]
        while parent is not None and parent not in here:
            parent = VR_PARENTS[parent]
        out[name] = "hand" if parent is None else parent
    return out


# ---------------------------------------------------------------------------- input


def _canonical_name(name: object) -> str:
    if isinstance(name, str):
        if name in _INDEX:
            return name
        if name in WEBXR_NAMES:
            return WEBXR_NAMES[name]
    raise UsageError("usage.unknown_id", f"unknown hand joint {name!r} (rig.vr.joint names, seed 004)",
                     path=str(name))


def _as_float(values: ArrayLike, path: str) -> F64:
    try:
        out: F64 = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError("usage.shape", f"{path} is not a numeric array", path=path) from exc
    return out


def _rows(values: ArrayLike, k: int, path: str) -> F64:
    """A ``(k,)`` or ``(B, k)`` value as ``(B, k)`` float64."""
    arr = _as_float(values, path)
    if arr.ndim == 1:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != k or arr.shape[0] < 1:
        raise UsageError("usage.shape", f"{path} must have shape ({k},) or (B, {k}), got {arr.shape}", path=path)
    return arr


def _from_mapping(joints: Mapping[str, JointPoseLike]) -> tuple[F64, F64 | None]:
    positions: dict[int, F64] = {}
    orientations: dict[int, F64] = {}
    for raw_name, pose in joints.items():
        name = _canonical_name(raw_name)
        idx = _INDEX[name]
        if idx in positions:
            raise UsageError("usage.bad_option", f"joint {name!r} given twice (alias)", path=str(raw_name))
        orientation: ArrayLike | None
        if isinstance(pose, VRJointPose):
            position, orientation = pose.position, pose.orientation
        elif isinstance(pose, Mapping):
            unknown = set(pose) - {"position", "orientation"}
            if unknown or "position" not in pose:
                raise UsageError("usage.bad_option", f"joint pose keys must be position[, orientation], got "
                                 f"{sorted(map(str, pose))}", path=str(raw_name))
            position, orientation = pose["position"], pose.get("orientation")
        else:
            position, orientation = pose, None
        positions[idx] = _rows(position, 3, f"{name}.position")
        if not np.isfinite(positions[idx]).all():
            raise UsageError("usage.not_finite", f"{name} position is NaN or infinite", path=f"{name}.position")
        if orientation is not None:
            orientations[idx] = _rows(orientation, 4, f"{name}.orientation")
    sizes = {a.shape[0] for a in (*positions.values(), *orientations.values())} - {1}
    if len(sizes) > 1:
        raise UsageError("usage.shape", f"joint batches differ: {sorted(sizes)}", path="joints")
    batch = sizes.pop() if sizes else 1
    pos = np.full((batch, len(VR_JOINTS), 3), np.nan)
    for idx, arr in positions.items():
        pos[:, idx] = arr
    if not orientations:
        return pos, None
    ori = np.full((batch, len(VR_JOINTS), 4), np.nan)
    for idx, arr in orientations.items():
        ori[:, idx] = arr
    return pos, ori


def _from_array(values: ArrayLike, k: int, path: str) -> F64:
    """``(B, 26|25, k)`` or ``(26|25, k)`` -> ``(B, 26, k)`` (WebXR: NaN ``palm`` inserted)."""
    arr = _as_float(values, path)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] not in (len(VR_JOINTS), len(WEBXR_JOINTS)) or arr.shape[2] != k:
        raise UsageError("usage.shape", f"{path} must have shape (B, 26|25, {k}), got {arr.shape}", path=path)
    if arr.shape[1] == len(WEBXR_JOINTS):
        arr = np.concatenate([np.full((arr.shape[0], 1, k), np.nan), arr], axis=1)
    return arr


def _check_finite(arr: F64, path: str) -> Bool:
    """The ``(B, 26)`` present mask (a joint whose values are all NaN is missing); any
    other NaN or an inf is the caller's mistake (``usage.not_finite``)."""
    missing = np.isnan(arr).all(axis=-1)
    bad = ~np.isfinite(arr).all(axis=-1) & ~missing
    if bad.any():
        b, j = (int(i) for i in np.argwhere(bad)[0])
        raise UsageError("usage.not_finite", f"{path} of {VR_JOINTS[j]!r} in frame {b} is NaN or infinite "
                         "(a missing joint is all-NaN or absent)", path=f"{path}[{b}].{VR_JOINTS[j]}")
    out: Bool = np.asarray(~missing)
    return out


def _rotation(body_frame: BodyFrame | None, batch: int) -> F64:
    if body_frame is None:
        return np.broadcast_to(OPENXR_BODY_ROTATION, (batch, 3, 3)).copy()
    rot = _as_float(body_frame.rotation, "body_frame.rotation")
    if rot.shape == (3, 3):
        rot = np.broadcast_to(rot, (batch, 3, 3)).copy()
    if rot.shape != (batch, 3, 3):
        raise UsageError("usage.shape", f"body_frame.rotation must be (3, 3) or ({batch}, 3, 3), got {rot.shape}",
                         path="body_frame.rotation")
    if not np.isfinite(rot).all():
        raise UsageError("usage.not_finite", "body_frame.rotation is NaN or infinite", path="body_frame.rotation")
    # spec §2.3: a right-handed world and a proper rotation, else the hand comes out mirrored
    ortho = np.abs(np.einsum("bji,bjk->bik", rot, rot) - np.eye(3)).max()
    if ortho > 1e-6 or (np.linalg.det(rot) < 0).any():
        raise UsageError("usage.bad_option", "body_frame.rotation must be a proper rotation (orthonormal, det +1)",
                         path="body_frame.rotation")
    return rot


# ---------------------------------------------------------------------------- producer


def vr_hand_to_vector(
    joints: Mapping[str, JointPoseLike] | ArrayLike,
    *,
    side: Side,
    orientations: ArrayLike | None = None,
    body_frame: BodyFrame | None = None,
    quaternion_order: Literal["wxyz", "xyzw"] = "wxyz",
) -> VRHandResult:
    """Hand dims of one side from OpenXR/WebXR hand joints (module docstring).

    ``joints``: either a mapping joint name -> pose (:data:`JointPoseLike`; seed 004 names
    or WebXR ``XRHandJoint`` names; absent = missing; every value 1 frame or ``B``
    frames), or positions ``(B, 26, 3)`` in :data:`VR_JOINTS` order / ``(B, 25, 3)`` in
    :data:`WEBXR_JOINTS` order (a ``(26|25, 3)`` array is one frame; an all-NaN row =
    missing). ``orientations`` ``(B, 26|25, 4)`` only with array input (a mapping carries
    its own). Quaternions are ``(w, x, y, z)`` (the project order) unless
    ``quaternion_order="xyzw"`` (OpenXR ``XrQuaternionf`` / WebXR ``DOMPointReadOnly``).
    ``side`` is the user's own hand. ``body_frame``: see the module docstring (default:
    OpenXR space, user facing −Z).

    Returns the full-width ``(B, N)`` vectors with this hand's palm and finger dims (spec
    §4.2, §4.3; clamped to the registry bounds, counted in ``report.clamped``), NaN where
    not estimated. Raises ``usage.unknown_id`` (joint name), ``usage.shape``,
    ``usage.not_finite`` (NaN/inf that is not a missing joint), ``usage.zero_norm``
    (orientation), ``usage.bad_option`` (side, quaternion order, body frame).
    """
    if side not in ("l", "r"):
        raise UsageError("usage.bad_option", f"side must be 'l' or 'r', not {side!r}", path="side")
    if quaternion_order not in ("wxyz", "xyzw"):
        raise UsageError("usage.bad_option", f"quaternion_order must be 'wxyz' or 'xyzw', not {quaternion_order!r}",
                         path="quaternion_order")
    if isinstance(joints, Mapping):
        if orientations is not None:
            raise UsageError("usage.bad_option", "orientations= goes with array input; a mapping carries its own",
                             path="orientations")
        pos, ori = _from_mapping(joints)
    else:
        pos = _from_array(joints, 3, "positions")
        ori = None if orientations is None else _from_array(orientations, 4, "orientations")
        if ori is not None and ori.shape[0] != pos.shape[0]:
            raise UsageError("usage.shape", f"orientations batch {ori.shape[0]} != positions batch {pos.shape[0]}",
                             path="orientations")
    present = _check_finite(pos, "positions")
    batch = pos.shape[0]
    rotation = _rotation(body_frame, batch)
    notes: list[str] = []
    if body_frame is None:
        notes.append("body frame: OpenXR reference space, user facing -Z (R = diag(-1, 1, -1))")

    hand = pos[:, VR_TO_HAND_POINTS]
    frame_present: Bool = np.asarray(present[:, [_INDEX[n] for n in HAND_FRAME_JOINTS]].all(axis=-1))
    roll_deg: F64 | None = None
    roll_missing = np.zeros(batch, dtype=bool)
    if ori is not None:
        ori_present = _check_finite(ori, "orientations")
        meta = _INDEX["thumb-metacarpal"]
        quat = np.where(ori_present[:, meta, None], ori[:, meta], np.array([1.0, 0.0, 0.0, 0.0]))
        if quaternion_order == "xyzw":
            quat = quat[:, [3, 0, 1, 2]]
        if (np.linalg.norm(quat, axis=-1) <= 1e-12).any():
            raise UsageError("usage.zero_norm", "thumb-metacarpal orientation has zero length",
                             path="thumb-metacarpal.orientation")
        dorsal = rotate(quat, np.array([0.0, 1.0, 0.0]))  # OpenXR joint +Y: out of the back of the finger
        dorsal = np.where(ori_present[:, meta, None], dorsal, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            roll_deg = thumb_roll(hand, dorsal, side=side)
        roll_missing = ~np.isfinite(roll_deg)
    else:
        notes.append("g_thumb_roll: no joint orientations, estimated from the thumb's bend (spec §4.3)")

    with np.errstate(invalid="ignore", divide="ignore"):
        dims = hand_dims(hand, rotation, frame_present, side=side, thumb_roll_deg=roll_deg)
    tracked = dims.tracked
    vec = np.full((batch, N_DIMS), np.nan)
    not_estimated: dict[str, int] = {}
    for dim_id, values in dims.values.items():
        needs = [_INDEX[n] for n in DIM_JOINTS[dim_id[:-2]]]
        ok = tracked & present[:, needs].all(axis=-1)
        col = REGISTRY.index(dim_id)
        vec[ok, col] = values[ok]
        if count := int((tracked & ~ok).sum()):
            not_estimated[dim_id] = count
    unseen = dims.roll_unobservable if dims.roll_unobservable is not None else np.zeros(batch, dtype=bool)
    if count := int((tracked & unseen).sum()):
        notes.append(f"g_thumb_roll: thumb too straight to see its roll in {count} frame(s), default 0 "
                     "(spec §4.3)")
    if ori is not None and (count := int((tracked & roll_missing & ~unseen).sum())):
        notes.append(f"g_thumb_roll: not measurable in {count} frame(s) (thumb-metacarpal orientation or "
                     "thumb joints missing, or metacarpal opposite its rest direction), default 0 (seed 000 §4.3)")

    # spec §3.1: only finite in-bounds values leave the producer; clamps are reported
    finite = np.isfinite(vec)
    out_of_range = finite & ((vec < LOWER) | (vec > UPPER))
    vec = np.where(out_of_range, np.clip(vec, LOWER, UPPER), vec)
    clamped = {d.id: int(out_of_range[:, d.index].sum()) for d in REGISTRY.dimensions
               if out_of_range[:, d.index].any()}
    if count := int(dims.palm_clamped.sum()):
        clamped[f"w_q_{side} (|v| > 0.98)"] = count

    missing_joints = {name: int((~present[:, i]).sum()) for i, name in enumerate(VR_JOINTS) if (~present[:, i]).any()}
    reparented: dict[str, dict[str, int]] = {}
    for b in range(batch) if missing_joints else ():
        parents = effective_parents({n for i, n in enumerate(VR_JOINTS) if present[b, i]})
        for name, parent in parents.items():
            if parent != (VR_PARENTS[name] or "hand"):
                reparented.setdefault(name, {}).setdefault(parent, 0)
                reparented[name][parent] += 1

    part = f"hand_{side}"
    states: NDArray[np.str_] = np.where(tracked, "tracked", "lost")
    report = VRHandReport(
        frames=batch, tracked_fraction={part: float(tracked.mean()) if batch else 0.0}, clamped=clamped,
        missing_joints=missing_joints, reparented=reparented, not_estimated=not_estimated,
        degenerate={f"palm_{side}": int(dims.degenerate.sum()),
                    **({f"fingers_side_clamped_{side}": int(dims.fingers_side_clamped.sum())}
                       if dims.fingers_side_clamped is not None and dims.fingers_side_clamped.any() else {})},
        notes=tuple(notes))
    return VRHandResult(vectors=vec, tracking={part: states}, report=report)
