"""BVH sink: pose vectors -> a Biovision Hierarchy (BVH) motion file on a stated avatar.

A BVH file is a joint hierarchy (``HIERARCHY``: per joint an ``OFFSET`` from its parent
and its ``CHANNELS``) and a motion block (``MOTION``: ``Frames:``, ``Frame Time:`` in
seconds, then one line of channel values per frame). BVH joints have no rest rotation:
at zero rotation every joint frame is aligned with the file's world axes. This module
writes:

* **frame and units**: the body frame of spec §2.1 (+Y up, +Z the character's facing,
  +X the character's left), metres — the axes Blender's BVH importer and three.js's
  ``BVHLoader`` read as Y-up;
* **the avatar**: a built-in one (:data:`AVATARS`) or a VRM 0.x / 1.0 model's humanoid
  skeleton (:func:`posewire.consumers.vrm.read_vrm`: turned into the body frame, its
  bones' bind rotations as rest rotations, joints named by their VRM bones);
* **offsets** in the avatar's proportions: ``OFFSET`` of joint ``j`` = its rest world
  position minus its parent's (for the root, its rest world position), so the file's
  rest pose is the avatar's rest pose (the A-pose of the reference avatar, the T-pose of
  the mannequin);
* **rotations**: with the avatar's rest world rotations ``R_j`` and the decoded world
  rotations ``W_j`` (:func:`posewire.consumers.skeleton.fk` of the decoder's local
  rotations), the file's world rotation of ``j`` is ``D_j = W_j · R_j⁻¹`` (the rotation
  that carries the rest pose to the decoded one) and its local rotation is
  ``D_parent⁻¹ · D_j`` — for an avatar whose rest rotations are identity (both built-in
  avatars) exactly the decoder's local rotations;
* **channels**: the root ``Xposition Yposition Zposition Zrotation Xrotation Yrotation``,
  every other joint ``Zrotation Xrotation Yrotation``, in degrees: the rotation matrix
  is ``Rz(z) · Rx(x) · Ry(y)`` (intrinsic, in the order the channels are listed, as the
  BVH format defines it); values written with 6 decimals (≤ 5·10⁻⁷° and 5·10⁻⁷ m of
  rounding);
* **End Site** of each leaf joint: the avatar's named site on that joint when it has one
  (a fingertip, ``middle_tip_*``), else a quarter of the joint's own segment (parent ->
  joint) carried on past it;
* **frames** at the recording's rate: ``Frame Time`` is the median interval of the
  timestamps, frames fall on ``t0 + k · Frame Time``, and each is the spherical linear
  interpolation of the decoded local rotations of the two frames around it (a recording
  at a steady rate comes out frame for frame).

:func:`write_bvh` decodes with :func:`posewire.consumers.pose.decode_pose` (spec §3.5,
§4.1–§4.5: NaN -> default, out of range clamped, both reported in the summary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import conjugate_unchecked, multiply_unchecked, rotate_unchecked
from posewire.codec.vector import N_DIMS

from .pose import decode_pose
from .skeleton import RetargetMap, Skeleton, fk, helix_humanoid

__all__ = [
    "AVATARS",
    "BvhSummary",
    "avatar_skeleton",
    "bvh_text",
    "euler_zxy_deg",
    "quaternion_from_euler_zxy_deg",
    "resample_rotations",
    "write_bvh",
]

F64 = NDArray[np.float64]

#: The built-in avatars a BVH can be written on: ``reference`` — the reference avatar,
#: ``helix-humanoid@1`` at 1.75 m (:func:`posewire.consumers.skeleton.helix_humanoid`;
#: canonical joint names); ``mannequin`` — the wooden mannequin of the GLB export
#: (:func:`posewire.consumers.gltf.mannequin_skeleton`; SMPL-X joint names).
AVATARS: tuple[str, ...] = ("reference", "mannequin")
#: Decimals of every number written (module docstring: rounding bound).
_DECIMALS = 6
#: Share of a leaf joint's own segment its End Site extends past it (module docstring).
_END_SITE_SHARE = 0.25


def euler_zxy_deg(q: ArrayLike) -> F64:
    """BVH ``Zrotation Xrotation Yrotation`` angles ``(..., 3)`` in degrees, ordered
    ``(z, x, y)``, of unit quaternions ``(..., 4)`` ``(w, x, y, z)``: the angles with
    ``Rz(z) · Rx(x) · Ry(y)`` equal to the quaternion's matrix, ``x`` in [−90°, 90°];
    at ``|x| = 90°`` (gimbal lock) ``y = 0`` and ``z`` carries the rest."""
    quat = np.asarray(q, dtype=np.float64)
    if quat.shape[-1:] != (4,):
        raise UsageError("usage.shape", f"quaternions must be (..., 4), got {quat.shape}")
    w, x, y, z = np.moveaxis(quat, -1, 0)
    # rotation matrix entries used (Hamilton, column vectors)
    m00 = 1 - 2 * (y * y + z * z)
    m01 = 2 * (x * y - w * z)
    m10 = 2 * (x * y + w * z)
    m11 = 1 - 2 * (x * x + z * z)
    m20 = 2 * (x * z - w * y)
    m21 = 2 * (y * z + w * x)
    m22 = 1 - 2 * (x * x + y * y)
    # Rz(a)·Rx(b)·Ry(c): m21 = sin b, m20 = −cos b sin c, m22 = cos b cos c,
    # m01 = −sin a cos b, m11 = cos a cos b
    bx = np.arcsin(np.clip(m21, -1.0, 1.0))
    locked = np.abs(m21) > 1.0 - 1e-12
    az = np.where(locked, np.arctan2(m10, m00), np.arctan2(-m01, m11))
    cy = np.where(locked, 0.0, np.arctan2(-m20, m22))
    out: F64 = np.degrees(np.stack([az, bx, cy], axis=-1))
    return out


def quaternion_from_euler_zxy_deg(angles: ArrayLike) -> F64:
    """Unit quaternions ``(..., 4)`` ``(w, x, y, z)`` of BVH ``(z, x, y)`` angles in degrees
    ``(..., 3)``: ``Rz(z) · Rx(x) · Ry(y)`` (the inverse of :func:`euler_zxy_deg`)."""
    a = np.radians(np.asarray(angles, dtype=np.float64))
    if a.shape[-1:] != (3,):
        raise UsageError("usage.shape", f"angles must be (..., 3), got {a.shape}")
    half = a / 2.0
    zero = np.zeros(a.shape[:-1])
    qz = np.stack([np.cos(half[..., 0]), zero, zero, np.sin(half[..., 0])], axis=-1)
    qx = np.stack([np.cos(half[..., 1]), np.sin(half[..., 1]), zero, zero], axis=-1)
    qy = np.stack([np.cos(half[..., 2]), zero, np.sin(half[..., 2]), zero], axis=-1)
    return multiply_unchecked(multiply_unchecked(qz, qx), qy)


def _slerp(q0: F64, q1: F64, share: F64) -> F64:
    # shortest arc; nearly equal quaternions by normalized linear interpolation
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    s = share[..., None, None]
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    near = sin_theta < 1e-9
    safe = np.where(near, 1.0, sin_theta)
    w0 = np.where(near, 1.0 - s, np.sin((1.0 - s) * theta) / safe)
    w1 = np.where(near, s, np.sin(s * theta) / safe)
    out = w0 * q0 + w1 * q1
    out /= np.linalg.norm(out, axis=-1, keepdims=True)
    return out


def resample_rotations(local_rotations: ArrayLike, timestamps_us: ArrayLike) -> tuple[float, F64]:
    """Local rotations ``(T, J, 4)`` stamped ``timestamps_us`` ``(T,)`` (microseconds,
    strictly increasing) at the recording's rate (module docstring): the frame time in
    seconds and the rotations ``(F, J, 4)`` at ``t0 + k · frame time``. One frame: a
    frame time of 1/30 s. Raises ``usage.shape``, ``usage.not_finite`` and
    ``usage.bad_option`` (times not increasing)."""
    rot = np.asarray(local_rotations, dtype=np.float64)
    t = np.asarray(timestamps_us, dtype=np.float64)
    if rot.ndim != 3 or rot.shape[-1] != 4 or t.shape != (rot.shape[0],) or rot.shape[0] < 1:
        raise UsageError("usage.shape", f"rotations (T, J, 4) and timestamps (T,), got {rot.shape}, {t.shape}")
    if not np.isfinite(t).all():
        raise UsageError("usage.not_finite", "a timestamp is NaN or infinite")
    if rot.shape[0] == 1:
        return 1.0 / 30.0, rot.copy()
    steps = np.diff(t)
    if not (steps > 0.0).all():
        raise UsageError("usage.bad_option", "timestamps must strictly increase")
    frame_us = float(np.median(steps))
    span = t[-1] - t[0]
    count = math.floor(span / frame_us + 1e-9) + 1
    at = t[0] + frame_us * np.arange(count)
    # the recorded frame at or before each output time (a steady rate: that frame itself)
    before = np.clip(np.searchsorted(t, at + 1e-6 * frame_us, side="right") - 1, 0, len(t) - 2)
    share = np.clip((at - t[before]) / (t[before + 1] - t[before]), 0.0, 1.0)
    share = np.where(share < 1e-9, 0.0, share)
    return frame_us / 1e6, _slerp(rot[before], rot[before + 1], share)


def _bvh_rotations(skeleton: Skeleton, local_rotations: F64) -> tuple[F64, F64]:
    # module docstring: D_j = W_j · R_j⁻¹, file local = D_parent⁻¹ · D_j; root positions
    positions, world = fk(skeleton, local_rotations)
    _, rest_world = skeleton.rest_world()
    delta = multiply_unchecked(world, conjugate_unchecked(rest_world)[None])
    local = delta.copy()
    parents = skeleton.parents
    local[:, 1:] = multiply_unchecked(conjugate_unchecked(delta[:, parents[1:]]), delta[:, 1:])
    return positions[:, 0], local


def _number(v: float) -> str:
    text = f"{v:.{_DECIMALS}f}"
    return "0.000000" if text == "-0.000000" else text


def bvh_text(skeleton: Skeleton, frame_time_s: float, local_rotations: ArrayLike,
             *, names: tuple[str, ...] | None = None) -> str:
    """The BVH file of ``skeleton`` posed by its local rotations ``(F, J, 4)`` (the
    skeleton's own convention, rest rotations included), one frame per ``frame_time_s``
    seconds (module docstring). ``names``: the joint names written (default the
    skeleton's). Raises ``usage.shape`` and ``usage.bad_option`` (a name a BVH cannot
    hold, a frame time not positive)."""
    rot = np.asarray(local_rotations, dtype=np.float64)
    j = len(skeleton)
    if rot.ndim != 3 or rot.shape[1:] != (j, 4) or rot.shape[0] < 1:
        raise UsageError("usage.shape", f"local rotations must be (F, {j}, 4), got {rot.shape}")
    if not (math.isfinite(frame_time_s) and frame_time_s > 0.0):
        raise UsageError("usage.bad_option", f"frame time must be positive, not {frame_time_s!r}")
    written = skeleton.names if names is None else names
    if len(written) != j or any(not n or any(c.isspace() or c in "{}" for c in n) for n in written):
        raise UsageError("usage.bad_option", "BVH joint names must be one word each, one per joint")
    rest_pos, rest_rot = skeleton.rest_world()
    children: list[list[int]] = [[] for _ in range(j)]
    for c in range(1, j):
        children[int(skeleton.parents[c])].append(c)
    site_of: dict[int, F64] = {}
    for site in sorted(skeleton.sites):
        joint, offset = skeleton.sites[site]
        site_of.setdefault(joint, rotate_unchecked(rest_rot[joint], offset))

    lines = ["HIERARCHY"]
    order: list[int] = []

    def vec(v: F64) -> str:
        return " ".join(_number(float(c)) for c in v)

    def emit(k: int, depth: int) -> None:
        pad = "\t" * depth
        order.append(k)
        if k == 0:
            lines.append(f"ROOT {written[k]}")
            lines.append("{")
            lines.append(f"\tOFFSET {vec(rest_pos[0])}")
            lines.append("\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation")
        else:
            lines.append(f"{pad}JOINT {written[k]}")
            lines.append(f"{pad}{{")
            lines.append(f"{pad}\tOFFSET {vec(rest_pos[k] - rest_pos[int(skeleton.parents[k])])}")
            lines.append(f"{pad}\tCHANNELS 3 Zrotation Xrotation Yrotation")
        for c in children[k]:
            emit(c, depth + 1)
        if not children[k]:
            if k in site_of:
                end = site_of[k]
            else:
                segment = rest_pos[k] - rest_pos[int(skeleton.parents[k])] if k else np.array([0.0, 0.1, 0.0])
                end = _END_SITE_SHARE * segment
            lines.append(f"{pad}\tEnd Site")
            lines.append(f"{pad}\t{{")
            lines.append(f"{pad}\t\tOFFSET {vec(end)}")
            lines.append(f"{pad}\t}}")
        lines.append(f"{pad}}}")

    emit(0, 0)
    root_positions, local = _bvh_rotations(skeleton, rot)
    angles = euler_zxy_deg(local)  # (F, J, 3)
    lines.append("MOTION")
    lines.append(f"Frames: {rot.shape[0]}")
    lines.append(f"Frame Time: {frame_time_s:.{_DECIMALS + 2}f}")
    columns = np.concatenate([root_positions, angles[:, order].reshape(rot.shape[0], -1)], axis=1)
    for row in columns:
        lines.append(" ".join(_number(float(v)) for v in row))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class BvhSummary:
    """What :func:`write_bvh` wrote: ``frames`` at ``frame_time_s``, ``joints`` in the
    hierarchy, ``bytes`` of the file, ``avatar`` its name, ``skipped`` the canonical
    joints the avatar lacks (seed 001), ``report`` the decode report
    (:meth:`posewire.consumers.pose.PoseResult.report`)."""

    path: Path
    frames: int
    frame_time_s: float
    joints: int
    bytes: int
    avatar: str
    skipped: tuple[str, ...]
    report: dict[str, object]


def avatar_skeleton(avatar: str) -> tuple[Skeleton, RetargetMap]:
    """A built-in avatar (:data:`AVATARS`) and the map from canonical names to its own."""
    if avatar == "reference":
        return helix_humanoid(), RetargetMap.identity()
    if avatar == "mannequin":
        from .gltf import mannequin_skeleton

        return mannequin_skeleton()
    raise UsageError("usage.bad_option", f"avatar must be one of {AVATARS}, not {avatar!r}")


def write_bvh(vectors: ArrayLike, timestamps_us: ArrayLike, path: str | Path, *,
              avatar: Literal["reference", "mannequin"] | str = "reference",
              vrm: str | Path | bytes | None = None) -> BvhSummary:
    """Decode pose vectors ``(T, N)`` (normalized, spec §3) stamped ``timestamps_us``
    ``(T,)`` (microseconds, strictly increasing) on ``avatar`` (:data:`AVATARS`) — or, with
    ``vrm`` (a VRM 0.x / 1.0 file's path or bytes), on that model's humanoid skeleton
    (:func:`posewire.consumers.vrm.read_vrm`: the body frame, its proportions and bind
    rotations, joints named by their VRM bones; stand-in joints keep canonical names) —
    and write a BVH file to ``path`` (module docstring). Raises ``usage.shape``,
    ``usage.not_finite`` (NaN timestamp), ``usage.bad_option`` (times not increasing, an
    unknown avatar), ``usage.avatar`` (a bad VRM)."""
    vec = np.asarray(vectors, dtype=np.float64)
    if vec.ndim != 2 or vec.shape[1] != N_DIMS or vec.shape[0] < 1:
        raise UsageError("usage.shape", f"vectors must be (T, {N_DIMS}) with T >= 1, got {vec.shape}")
    if vrm is None:
        skeleton, retarget = avatar_skeleton(avatar)
        canon = retarget.apply(skeleton)  # skips and reports the canonical joints it lacks
        model, names, skipped = canon.skeleton, canon.avatar_names, canon.skipped
    else:
        from .vrm import VRM0_HUMAN_BONES, VRM_HUMAN_BONES, read_vrm

        read = read_vrm(vrm if isinstance(vrm, bytes) else Path(vrm).read_bytes())
        bone_names = VRM_HUMAN_BONES if read.version == "1.0" else VRM0_HUMAN_BONES
        model = read.skeleton
        names = tuple(bone_names[n] if n in read.nodes else n for n in model.names)
        avatar = f"VRM {read.version}"
        skipped = read.skipped
    pose = decode_pose(vec, model)  # spec §3.5: NaN -> default, reported
    frame_time, local = resample_rotations(pose.local_rotations, timestamps_us)
    text = bvh_text(model, frame_time, local, names=names)
    out = Path(path)
    data = text.encode("ascii")
    out.write_bytes(data)
    return BvhSummary(path=out, frames=local.shape[0], frame_time_s=frame_time, joints=len(model),
                      bytes=len(data), avatar=avatar, skipped=skipped, report=pose.report())
