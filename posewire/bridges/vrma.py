"""VRM Animation export: a recording -> a ``.vrma`` take that plays on any VRM avatar.

The file is a glTF binary with the VRM consortium's ``VRMC_vrm_animation`` 1.0 extension
(https://github.com/vrm-c/vrm-specification, ``specification/VRMC_vrm_animation-1.0``):

* **humanoid**: the nodes are the wooden mannequin's joints
  (:func:`posewire.consumers.gltf.mannequin_skeleton`) in its rest pose — a T-pose facing
  +Z with +Y up and world-aligned (identity) joint frames, the "VRM T-pose" the extension
  asks of humanoid nodes — and ``humanoid.humanBones`` names them by
  :data:`VRM_HUMAN_BONES`. Each humanoid node has one ``LINEAR`` rotation channel: the
  decoder's local rotation of that joint (:func:`posewire.consumers.pose.decode_pose`,
  spec §4.1–§4.5), which on a world-aligned rest frame is also the VRM *normalized* bone
  rotation a player applies. No translation is animated (the decoder moves no joint).
* **expressions**: one node per VRM 1.0 preset :data:`VRM_PRESETS` — the five vowels,
  the blinks and ``happy``/``angry``/``sad``/``relaxed`` — whose translation's X is the
  weight in ``[0, 1]`` (the extension's rule), computed as the VMC bridge computes its VRM
  0.x presets (:func:`posewire.bridges.vmc.vrm_presets`: visemes folded to vowels, ARKit
  blinks, the affect fit).
* **lookAt**: one node whose rotation is the eyes' gaze
  (:func:`posewire.bridges.vmc.face_bone_rotations`: yaw about +Y then pitch about −X,
  ±30° and ±20° at ``f_gaze_yaw``/``f_gaze_pitch`` = ±1), ``offsetFromHeadBone`` the
  eyes' midpoint from the head joint (:data:`LOOK_AT_OFFSET`).

Each frame's conditions (spec §3.4) are applied as the VMC bridge applies them: the affect
moves the pose first (:func:`posewire.bridges.vmc.effective_vector`), the mouthing mix
feeds the visemes. Keys are at the recording's own timestamps (glTF animations have no
frame rate); the extension's 30 fps guideline is met by any recording at 30 Hz or more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from posewire.codec.errors import UsageError
from posewire.consumers.vrm import VRM_HUMAN_BONES

from .vmc import effective_vector, face_bone_rotations, vrm_presets

if TYPE_CHECKING:
    from posewire.producers.recording import RecordedFrame

__all__ = ["LOOK_AT_OFFSET", "VRM_HUMAN_BONES", "VRM_PRESETS", "VrmaSummary", "export_vrma"]


#: VRM 0.x preset (UniVRM's spelling, :func:`posewire.bridges.vmc.vrm_presets`) -> the VRM
#: 1.0 preset expression of the same meaning (``Fun`` is 1.0's ``relaxed``).
VRM_PRESETS: dict[str, str] = {"A": "aa", "I": "ih", "U": "ou", "E": "ee", "O": "oh", "Blink_L": "blinkLeft",
                               "Blink_R": "blinkRight", "Joy": "happy", "Angry": "angry", "Sorrow": "sad",
                               "Fun": "relaxed"}
#: The eyes' midpoint from the head joint, metres (the VMC bridge's eye bones).
LOOK_AT_OFFSET = (0.0, 0.07, 0.09)


@dataclass(frozen=True)
class VrmaSummary:
    """What :func:`export_vrma` wrote: ``frames`` keyframes over ``duration_s`` seconds,
    ``bones`` humanoid bones animated, ``expressions`` preset names, ``bytes`` of the file,
    ``report`` the decode report (:meth:`posewire.consumers.pose.PoseResult.report`)."""

    path: Path
    frames: int
    duration_s: float
    bones: int
    expressions: tuple[str, ...]
    bytes: int
    report: dict[str, object]


def export_vrma(frames: Sequence[RecordedFrame], path: str | Path) -> VrmaSummary:
    """Write the recorded ``frames`` (timestamps strictly increasing, each with its
    conditions) as a VRM Animation file at ``path`` (module docstring). Raises
    ``usage.bad_option`` (no frames, times not increasing) and ``usage.not_finite``."""
    import pygltflib

    from posewire.consumers.face import face_weights
    from posewire.consumers.gltf import MANNEQUIN_RETARGET, GlbBlob, animation_times, mannequin_skeleton
    from posewire.consumers.pose import decode_pose

    if not frames:
        raise UsageError("usage.bad_option", "a VRM Animation needs at least one frame")
    seconds = animation_times([f.t_us for f in frames], len(frames))
    vectors = np.stack([effective_vector(f.vector(), None if f.conditions is None else f.conditions.affect)
                        for f in frames])
    skeleton, retarget = mannequin_skeleton()
    canon = retarget.apply(skeleton)
    pose = decode_pose(vectors, canon.skeleton)  # spec §3.5: NaN -> default, reported
    quats = pose.local_rotations / np.linalg.norm(pose.local_rotations, axis=-1, keepdims=True)
    xyzw = np.concatenate([quats[..., 1:], quats[..., :1]], axis=-1).astype(np.float32)

    presets = np.zeros((len(frames), len(VRM_PRESETS)), dtype=np.float32)
    gaze = np.zeros((len(frames), 4), dtype=np.float32)
    for i, (frame, vec) in enumerate(zip(frames, vectors, strict=True)):
        mouthing = None if frame.conditions is None else frame.conditions.mouthing
        face = face_weights(vec, capability="viseme15", visemes=None if mouthing is None else list(mouthing))
        weights = vrm_presets(vec, face, None if frame.conditions is None else frame.conditions.affect)
        presets[i] = [min(1.0, max(0.0, weights[name])) for name in VRM_PRESETS]
        w, x, y, z = face_bone_rotations(vec)["LeftEye"]
        gaze[i] = [x, y, z, w]

    gltf = pygltflib.GLTF2(asset=pygltflib.Asset(version="2.0", generator="posewire.bridges.vrma"))
    blob = GlbBlob(gltf)
    fl = pygltflib.FLOAT
    # humanoid nodes: node j = mannequin joint j, rest offsets, identity rotations
    n_joints = len(skeleton)
    for j, name in enumerate(skeleton.names):
        gltf.nodes.append(pygltflib.Node(
            name=name, translation=[float(v) for v in skeleton.offsets[j]],
            children=[c for c in range(n_joints) if skeleton.parents[c] == j]))
    expression_nodes = {}
    for name in VRM_PRESETS.values():
        expression_nodes[name] = len(gltf.nodes)
        gltf.nodes.append(pygltflib.Node(name=f"expression.{name}", translation=[0.0, 0.0, 0.0]))
    look_at = len(gltf.nodes)
    gltf.nodes.append(pygltflib.Node(name="lookAt", rotation=[0.0, 0.0, 0.0, 1.0]))

    node_of = {n: j for j, n in enumerate(skeleton.names)}
    human_bones = {vrm: {"node": node_of[MANNEQUIN_RETARGET.bones[canonical]]}
                   for canonical, vrm in VRM_HUMAN_BONES.items()
                   if MANNEQUIN_RETARGET.bones.get(canonical) in node_of}
    time_acc = blob.add(seconds, pygltflib.SCALAR, fl, bounds=True)
    anim = pygltflib.Animation(name="posewire")

    def channel(node: int, path_name: str, values: np.ndarray, kind: str) -> None:
        out = blob.add(np.ascontiguousarray(values, dtype=np.float32), kind, fl)
        anim.samplers.append(pygltflib.AnimationSampler(input=time_acc, output=out, interpolation="LINEAR"))
        anim.channels.append(pygltflib.AnimationChannel(
            sampler=len(anim.samplers) - 1, target=pygltflib.AnimationChannelTarget(node=node, path=path_name)))

    for bone in human_bones.values():
        channel(bone["node"], "rotation", xyzw[:, bone["node"]], pygltflib.VEC4)
    for k, name in enumerate(VRM_PRESETS.values()):
        weight = np.zeros((len(frames), 3), dtype=np.float32)
        weight[:, 0] = presets[:, k]
        channel(expression_nodes[name], "translation", weight, pygltflib.VEC3)
    channel(look_at, "rotation", gaze, pygltflib.VEC4)
    gltf.animations.append(anim)
    gltf.scenes.append(pygltflib.Scene(name="posewire", nodes=[0, *expression_nodes.values(), look_at]))
    gltf.scene = 0
    gltf.extensionsUsed = ["VRMC_vrm_animation"]
    gltf.extensions = {"VRMC_vrm_animation": {
        "specVersion": "1.0",
        "humanoid": {"humanBones": human_bones},
        "expressions": {"preset": {name: {"node": node} for name, node in expression_nodes.items()}},
        "lookAt": {"node": look_at, "offsetFromHeadBone": list(LOOK_AT_OFFSET)},
    }}
    gltf.buffers.append(pygltflib.Buffer(byteLength=len(blob.data)))
    gltf.set_binary_blob(bytes(blob.data))
    out_path = Path(path)
    data = b"".join(gltf.save_to_bytes())
    out_path.write_bytes(data)
    duration = float(seconds[-1])
    return VrmaSummary(path=out_path, frames=len(frames), duration_s=duration if math.isfinite(duration) else 0.0,
                       bones=len(human_bones), expressions=tuple(VRM_PRESETS.values()), bytes=len(data),
                       report=pose.report())
