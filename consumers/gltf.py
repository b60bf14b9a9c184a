"""glTF sink: pose vectors -> a skinned, animated binary glTF (GLB) of a real avatar.

The avatar is the wooden mannequin of PyPI ``mannequin-x`` (Apache-2.0): 54 joints with
SMPL-X names (``Mannequin("wooden").joint_names``), identity rest rotations, T-pose,
+Y up, +Z forward, +X = the character's left, metres — the body frame of spec §2.1
(seed ``001_b0dd8389a32c0279.txt`` "Frame, units and rest pose") and also glTF 2.0's
frame (+Y up, the asset's front faces +Z), so no axis change is made. The model is
lifted so that its lowest vertex lies on Y = 0 (spec §2.1: feet on Y = 0).

Retargeting (seed 001 names -> SMPL-X names, :data:`MANNEQUIN_RETARGET`); SMPL-X ``L_``
is the character's left, i.e. our ``_l`` side and +X (spec §2.1):

======================  ==============================  =================================
canonical               mannequin (SMPL-X)              note
======================  ==============================  =================================
``root``                ``root``                        added at the origin (required)
``pelvis``              ``Pelvis``
``spine_01/03/05``      ``Spine1/2/3``                  the required spine bones
``neck_01``, ``head``   ``Neck``, ``Head``
``clavicle_l``          ``L_Collar``
``upperarm_l``          ``L_Shoulder``
``lowerarm_l``          ``L_Elbow``
``hand_l``              ``L_Wrist``                     ``L_Hand`` (same origin, no skin
                                                        weights) follows it, unmapped
``thumb_01.._03_l``     ``L_Thumb1..3``                 likewise index/middle/ring/pinky
``thigh_l``             ``L_Hip``
``calf_l``              ``L_Knee``
``foot_l``, ``ball_l``  ``L_Ankle``, ``L_Foot``
======================  ==============================  =================================

and the same with ``_r`` / ``R_``. Canonical joints the mannequin lacks (``spine_02``,
``spine_04``, ``neck_02``, the six twist joints per side) are skipped and reported
(seed 001 "A missing bone is skipped"; :attr:`ExportSummary.skipped`). The sites
``middle_tip_l/r`` (spec §2.2) are measured on the mesh: the farthest skinned point of
the third middle segment along that segment.

:func:`export_glb` decodes every frame with :func:`posewire.consumers.pose.decode_pose` (spec
§3.5, §4.1–§4.5) and writes one mesh (positions, normals, 4 joint influences), one skin
(inverse bind matrices of the rest pose) and one animation: per mannequin joint a
``rotation`` channel, ``LINEAR``, keyed at the frame times in seconds from the first
timestamp. Quaternions are ``(w, x, y, z)`` in posewire (spec §3.3) and ``(x, y, z, w)``
in glTF.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np
import pygltflib
from mannequin import Mannequin
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.vector import N_DIMS

from .pose import decode_pose
from .skeleton import FINGERS, RetargetMap, Skeleton

__all__ = [
    "MANNEQUIN_RETARGET",
    "ExportSummary",
    "GlbBlob",
    "MannequinMesh",
    "animation_times",
    "export_glb",
    "mannequin_mesh",
    "mannequin_skeleton",
]

F64 = NDArray[np.float64]

#: Name of the root joint added below the mannequin's ``Pelvis`` (seed 001 requires
#: ``root``; the mannequin has none).
ROOT = "root"
#: Most joint influences per vertex (glTF 2.0 ``JOINTS_0`` / ``WEIGHTS_0``).
_INFLUENCES = 4


def _retarget_bones() -> dict[str, str]:
    bones = {"root": ROOT, "pelvis": "Pelvis", "spine_01": "Spine1", "spine_03": "Spine2",
             "spine_05": "Spine3", "neck_01": "Neck", "head": "Head"}
    for s, side in (("l", "L"), ("r", "R")):
        bones |= {f"clavicle_{s}": f"{side}_Collar", f"upperarm_{s}": f"{side}_Shoulder",
                  f"lowerarm_{s}": f"{side}_Elbow", f"hand_{s}": f"{side}_Wrist",
                  f"thigh_{s}": f"{side}_Hip", f"calf_{s}": f"{side}_Knee",
                  f"foot_{s}": f"{side}_Ankle", f"ball_{s}": f"{side}_Foot"}
        bones |= {f"{f}_{k:02d}_{s}": f"{side}_{f.capitalize()}{k}" for f in FINGERS for k in (1, 2, 3)}
    return bones


#: Canonical ``helix-humanoid@1`` joint -> mannequin joint (module docstring table).
MANNEQUIN_RETARGET = RetargetMap(_retarget_bones())


@dataclass(frozen=True)
class MannequinMesh:
    """The mannequin's rest mesh, in the skeleton's world frame (metres, spec §2.1).

    ``positions (V, 3)`` and ``normals (V, 3)`` float32; ``faces (F, 3)`` vertex indices;
    ``joints (V, 4)`` skeleton joint indices (into :func:`mannequin_skeleton`, whose
    joint 0 is ``root``) and ``weights (V, 4)`` float32 summing to 1 per vertex.
    """

    positions: NDArray[np.float32]
    normals: NDArray[np.float32]
    faces: NDArray[np.uint32]
    joints: NDArray[np.uint16]
    weights: NDArray[np.float32]


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Skeleton, MannequinMesh]:
    model = Mannequin("wooden", flat_hand_mean=True)
    rest = model.rest_pose()
    world = np.asarray(model.joint_transforms(rest), dtype=np.float64)  # (54, 4, 4)
    verts = np.asarray(model.vertices(rest), dtype=np.float64)          # (V, 3)
    lift = np.array([0.0, -verts[:, 1].min(), 0.0])  # spec §2.1: feet on Y = 0
    joints_pos = world[:, :3, 3] + lift
    verts = verts + lift
    if not np.allclose(world[:, :3, :3], np.eye(3), atol=1e-6):
        raise UsageError("usage.bad_option", "mannequin rest rotations are not identity")
    names = (ROOT, *model.joint_names)
    parents = [-1] + [p + 1 for p in model.parents]  # old root Pelvis now under ROOT
    positions = np.vstack([np.zeros((1, 3)), joints_pos])

    # skin: the asset's 8 influences cut to the strongest 4 and renormalized, rigid
    # parts bound to one joint — as mannequin-x's own skinning does (_model._bind_skin)
    with np.load(str(files("mannequin") / "assets" / "wooden.npz")) as npz:
        idx = np.asarray(npz["skin_joint_indices"], dtype=np.int64)
        wts = np.asarray(npz["skin_weights"], dtype=np.float64)
        rigid_joint = np.asarray(npz["skin_rigid_joint_indices"], dtype=np.int64)
    strongest = np.argsort(wts, axis=1)[:, -_INFLUENCES:]
    idx = np.take_along_axis(idx, strongest, axis=1)
    wts = np.take_along_axis(wts, strongest, axis=1)
    wts /= wts.sum(axis=1, keepdims=True)
    rigid = rigid_joint >= 0
    idx[rigid] = rigid_joint[rigid, None]
    wts[rigid] = 0.0
    wts[rigid, 0] = 1.0
    idx = np.where(wts > 0.0, idx + 1, 0)  # +1: ROOT is joint 0; unused slots -> 0
    model_faces = np.asarray(model.faces, dtype=np.int64)

    # sites middle_tip_l/r (spec §2.2): end of the third middle segment, on the mesh
    sites: dict[str, tuple[str, ArrayLike]] = {}
    for side, s in (("L", "l"), ("R", "r")):
        j2, j3 = names.index(f"{side}_Middle2"), names.index(f"{side}_Middle3")
        axis = positions[j3] - positions[j2]
        axis /= np.linalg.norm(axis)
        on_segment = idx[np.arange(len(idx)), wts.argmax(axis=1)] == j3
        reach = float(((verts[on_segment] - positions[j3]) @ axis).max(initial=0.0))
        sites[f"middle_tip_{s}"] = (names[j3], positions[j3] + reach * axis)
    skeleton = Skeleton.from_world(names, parents, positions, sites=sites)

    normals = np.zeros_like(verts)
    tri = verts[model_faces]
    face_n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    for k in range(3):
        np.add.at(normals, model_faces[:, k], face_n)
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.where(length > 0.0, normals / np.where(length > 0.0, length, 1.0), [0.0, 1.0, 0.0])
    mesh = MannequinMesh(verts.astype(np.float32), normals.astype(np.float32),
                         model_faces.astype(np.uint32), idx.astype(np.uint16), wts.astype(np.float32))
    return skeleton, mesh


def mannequin_skeleton() -> tuple[Skeleton, RetargetMap]:
    """The wooden mannequin as a posewire :class:`Skeleton` (SMPL-X joint names, plus
    ``root`` at the origin as joint 0; rest world positions in metres, spec §2.1,
    identity rest rotations, T-pose) and the :class:`RetargetMap` from canonical
    ``helix-humanoid@1`` names to its names (module docstring table)."""
    return _load()[0], MANNEQUIN_RETARGET


def mannequin_mesh() -> MannequinMesh:
    """The mannequin's rest mesh and skin (:class:`MannequinMesh`)."""
    return _load()[1]


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_glb` wrote: ``frames`` keyframes, ``joints_animated`` rotation
    channels, ``duration_s`` seconds, ``bytes`` of the GLB file, ``skipped`` the
    canonical joints the avatar lacks (seed 001), ``report`` the decode report
    (:meth:`posewire.consumers.pose.PoseResult.report`: NaN / clamped dims, unreachable targets),
    ``stand_ins`` the zero-length joints the decoder was given for bones a VRM avatar lacks
    (:func:`posewire.consumers.vrm.export_avatar_glb`; none on the mannequin)."""

    path: Path
    frames: int
    joints_animated: int
    duration_s: float
    bytes: int
    skipped: tuple[str, ...]
    report: dict[str, object]
    stand_ins: tuple[str, ...] = ()


def animation_times(timestamps_us: ArrayLike, frames: int) -> NDArray[np.float32]:
    """Seconds from the first of ``timestamps_us`` ``(frames,)`` (microseconds), float32,
    strictly increasing as glTF 2.0 §3.11 requires of an animation sampler input. Raises
    ``usage.shape``, ``usage.not_finite``, ``usage.bad_option`` (not increasing)."""
    t = np.asarray(timestamps_us, dtype=np.float64)
    if t.shape != (frames,):
        raise UsageError("usage.shape", f"timestamps must be ({frames},), got {t.shape}")
    if not np.isfinite(t).all():
        raise UsageError("usage.not_finite", "a timestamp is NaN or infinite")
    seconds: NDArray[np.float32] = ((t - t[0]) / 1e6).astype(np.float32)
    # glTF 2.0 §3.11 animation sampler input: strictly increasing (checked in float32,
    # the stored precision)
    if frames > 1 and not (np.diff(seconds) > 0.0).all():
        raise UsageError("usage.bad_option", "timestamps must strictly increase")
    return seconds


class GlbBlob:
    """Binary chunk builder: one buffer view per array, 4-byte aligned (glTF §3.6.2)."""

    def __init__(self, gltf: pygltflib.GLTF2) -> None:
        self.gltf = gltf
        self.data = bytearray()

    def add(self, array: NDArray[np.generic], kind: str, component: int, *,
            target: int | None = None, bounds: bool = False) -> int:
        raw = np.ascontiguousarray(array).tobytes()
        view = len(self.gltf.bufferViews)
        self.gltf.bufferViews.append(pygltflib.BufferView(
            buffer=0, byteOffset=len(self.data), byteLength=len(raw), target=target))
        self.data += raw + b"\0" * (-len(raw) % 4)
        count = array.shape[0]
        flat = array.reshape(count, -1)
        acc = pygltflib.Accessor(bufferView=view, componentType=component, count=count, type=kind)
        if bounds:
            acc.min = [float(v) for v in flat.min(axis=0)]
            acc.max = [float(v) for v in flat.max(axis=0)]
        self.gltf.accessors.append(acc)
        return len(self.gltf.accessors) - 1


def export_glb(vectors: ArrayLike, timestamps_us: ArrayLike, path: str | Path, *,
               skeleton: Skeleton | None = None) -> ExportSummary:
    """Decode pose vectors ``(T, N)`` (normalized, spec §3) stamped ``timestamps_us``
    ``(T,)`` (microseconds, strictly increasing) on the mannequin and write a GLB to
    ``path`` (module docstring). ``skeleton``: the mannequin skeleton to decode on
    (default :func:`mannequin_skeleton`; it must have the mannequin's joint names in
    order, e.g. with other rest offsets). Raises ``usage.shape``, ``usage.not_finite``
    (NaN timestamp), ``usage.bad_option`` (times not increasing, wrong skeleton)."""
    default_skel, retarget = mannequin_skeleton()
    skel = default_skel if skeleton is None else skeleton
    if skel.names != default_skel.names:
        raise UsageError("usage.bad_option", "skeleton must have the mannequin's joints in order")
    vec = np.asarray(vectors, dtype=np.float64)
    if vec.ndim != 2 or vec.shape[1] != N_DIMS or vec.shape[0] < 1:
        raise UsageError("usage.shape", f"vectors must be (T, {N_DIMS}) with T >= 1, got {vec.shape}")
    frames = vec.shape[0]
    seconds = animation_times(timestamps_us, frames)

    canon = retarget.apply(skel)  # skips and reports the canonical joints it lacks
    pose = decode_pose(vec, canon.skeleton)  # spec §3.5: NaN -> default, reported
    quats = pose.local_rotations  # (T, J, 4) w, x, y, z
    quats = quats / np.linalg.norm(quats, axis=-1, keepdims=True)
    xyzw = np.concatenate([quats[..., 1:], quats[..., :1]], axis=-1).astype(np.float32)

    mesh = mannequin_mesh()
    gltf = pygltflib.GLTF2(asset=pygltflib.Asset(version="2.0", generator="posewire.consumers.gltf"))
    blob = GlbBlob(gltf)
    fl, us, ui = pygltflib.FLOAT, pygltflib.UNSIGNED_SHORT, pygltflib.UNSIGNED_INT
    attrs = pygltflib.Attributes(
        POSITION=blob.add(mesh.positions, pygltflib.VEC3, fl, target=pygltflib.ARRAY_BUFFER, bounds=True),
        NORMAL=blob.add(mesh.normals, pygltflib.VEC3, fl, target=pygltflib.ARRAY_BUFFER),
        JOINTS_0=blob.add(mesh.joints, pygltflib.VEC4, us, target=pygltflib.ARRAY_BUFFER),
        WEIGHTS_0=blob.add(mesh.weights, pygltflib.VEC4, fl, target=pygltflib.ARRAY_BUFFER))
    indices = blob.add(mesh.faces.reshape(-1), pygltflib.SCALAR, ui, target=pygltflib.ELEMENT_ARRAY_BUFFER)
    gltf.meshes.append(pygltflib.Mesh(name="mannequin", primitives=[
        pygltflib.Primitive(attributes=attrs, indices=indices, mode=pygltflib.TRIANGLES)]))

    # joints: node 1 + j; rest pose = the skeleton's offsets and rest rotations
    n_joints = len(skel)
    rest_pos, rest_rot = skel.rest_world()
    for j, name in enumerate(skel.names):
        r = skel.rest_rotations[j]
        gltf.nodes.append(pygltflib.Node(
            name=name, translation=[float(v) for v in skel.offsets[j]],
            rotation=[float(r[1]), float(r[2]), float(r[3]), float(r[0])],
            children=[1 + c for c in range(n_joints) if skel.parents[c] == j]))
    gltf.nodes.insert(0, pygltflib.Node(name="mannequin", mesh=0, skin=0))
    # inverse bind matrices (glTF §3.7.3.2): inverse of each joint's rest world
    # transform, column-major
    ibm = np.zeros((n_joints, 4, 4))
    for j in range(n_joints):
        w, x, y, z = rest_rot[j]
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        ibm[j, :3, :3] = rot.T
        ibm[j, :3, 3] = -rot.T @ rest_pos[j]
        ibm[j, 3, 3] = 1.0
    ibm_acc = blob.add(np.transpose(ibm, (0, 2, 1)).astype(np.float32), pygltflib.MAT4, fl)
    gltf.skins.append(pygltflib.Skin(name="mannequin", inverseBindMatrices=ibm_acc, skeleton=1,
                                     joints=list(range(1, 1 + n_joints))))

    # animation: one LINEAR rotation channel per mannequin joint (not the added root)
    time_acc = blob.add(seconds, pygltflib.SCALAR, fl, bounds=True)
    anim = pygltflib.Animation(name="posewire")
    for j in range(1, n_joints):
        out = blob.add(xyzw[:, j], pygltflib.VEC4, fl)
        anim.samplers.append(pygltflib.AnimationSampler(input=time_acc, output=out, interpolation="LINEAR"))
        anim.channels.append(pygltflib.AnimationChannel(
            sampler=len(anim.samplers) - 1,
            target=pygltflib.AnimationChannelTarget(node=1 + j, path="rotation")))
    gltf.animations.append(anim)
    gltf.scenes.append(pygltflib.Scene(name="posewire", nodes=[0, 1]))
    gltf.scene = 0
    gltf.buffers.append(pygltflib.Buffer(byteLength=len(blob.data)))
    gltf.set_binary_blob(bytes(blob.data))

    out_path = Path(path)
    data = b"".join(gltf.save_to_bytes())
    out_path.write_bytes(data)
    return ExportSummary(path=out_path, frames=frames, joints_animated=n_joints - 1,
                         duration_s=float(seconds[-1]) if math.isfinite(seconds[-1]) else 0.0,
                         bytes=len(data), skipped=canon.skipped, report=pose.report())
