"""VRM avatars: humanoid bone names as canonical ``helix-humanoid@1`` joints, and a
recording posed on the user's own VRM as an animated GLB.

**Bone names.** A VRM names its humanoid bones (``VRMC_vrm`` 1.0:
``humanoid.humanBones`` ``{bone: {node}}``; VRM 0.x: ``VRM.humanoid.humanBones``
``[{bone, node}]``). The two versions differ in the thumb: 1.0 counts ``Metacarpal,
Proximal, Distal`` from the hand, 0.x ``Proximal, Intermediate, Distal`` — both are our
``thumb_01..03`` (:data:`VRM_HUMAN_BONES`, :data:`VRM0_HUMAN_BONES`). ``leftEye``,
``rightEye`` and ``jaw`` have no canonical joint and are left at rest.

**The avatar as a decoder skeleton** (:func:`read_vrm`). The rest pose is the scene's
node transforms (glTF 2.0 §3.5: ``T · R · S`` per node, parents first). Frames: VRM 1.0
faces +Z with +Y up and the character's left at +X — the body frame of spec §2.1 — so
no axis change is made; VRM 0.x faces −Z (the ``VRM`` extension's convention, which
three-vrm's ``VRMUtils.rotateVRM0`` undoes by a half turn about +Y), so its rest pose is
turned by ``F = R_Y(180°)`` into the body frame. Each humanoid bone becomes the canonical
joint of its name with its rest **world** position and rotation (``F`` applied), so any
bind rotation a model has (VRM 0.x models often have them) is the joint's rest rotation;
a joint ``root`` at the origin is added above ``pelvis`` (seed 001 requires it). The
joints' hierarchy is the canonical one (:func:`posewire.consumers.skeleton.helix_humanoid`)
over the bones present, and each bone's nearest humanoid ancestor in the file must be
its nearest present canonical ancestor (the VRM humanoid hierarchy), else ``usage.avatar``.

Bones VRM 1.0 requires (:data:`VRM_REQUIRED_BONES`) must be named, else ``usage.avatar``.
The decoder also needs ``chest``, ``upperChest``, ``neck`` and both shoulders, which VRM
1.0 (and for ``upperChest`` and the shoulders VRM 0.x) makes optional: a missing one is a
zero-length **stand-in joint** of the decoder skeleton, on its only child when it has one
(``neck`` on ``head``, a shoulder on its upper arm: the children's positions are then
exact), else on its parent (a missing ``chest`` or ``upperChest``: the bones above it
keep their rotations but hang from the spine bone below, which turns by its own share of
the torso rotation only). The ``middle_tip_l/r`` sites (spec §2.2, the hand length of
spec §4.1) are the distal middle bone's farthest child node along that bone when it has
one (UniVRM's ``_end`` nodes), else the distal bone's own length carried past it.

**Posing** (:func:`avatar_rotations`): the decoder (:func:`posewire.consumers.pose.decode_pose`,
spec §4.1–§4.5) turns each joint's rest world rotation by ``G_j``: ``W_j = G_j · W_rest,j``
in the body frame. The file's world rotation of bone node ``j`` is then ``F⁻¹ · W_j``
— its own rest world rotation turned by ``F⁻¹ G_j F`` (three-vrm's normalized humanoid
rule: the raw bone takes the normalized bone's world rotation on top of its bind), and its
local rotation is the rotation part of its parent node's world transform, inverted, times
that. Nodes between humanoid bones (and above ``hips``) keep their rest transforms.
Rotations compose so only under uniform scales: a node with a non-uniform, mirroring or
sheared world transform on a humanoid bone's chain is ``usage.avatar``.

**The file** (:func:`export_avatar_glb`): the user's model, unchanged, plus one
animation ``posewire`` with one ``LINEAR`` ``rotation`` channel per humanoid bone node,
keyed at the recording's timestamps in seconds from the first (float32, as the
mannequin's GLB: :func:`posewire.consumers.gltf.animation_times`); its keys are appended
to the model's binary chunk. A humanoid node given by a ``matrix`` is rewritten as the
same translation, rotation and scale (glTF 2.0 §3.11: an animated node has no matrix).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import (
    conjugate_unchecked,
    from_matrix_unchecked,
    multiply_unchecked,
    rotate_unchecked,
)
from posewire.codec.vector import N_DIMS

from .skeleton import CANONICAL_JOINTS, FINGERS, REQUIRED_JOINTS, Skeleton, fk, helix_humanoid

if TYPE_CHECKING:
    from .gltf import ExportSummary

__all__ = [
    "VRM0_HUMAN_BONES",
    "VRM_FACING",
    "VRM_HUMAN_BONES",
    "VRM_REQUIRED_BONES",
    "VrmAvatar",
    "avatar_rotations",
    "export_avatar_glb",
    "read_vrm",
]

F64 = NDArray[np.float64]
VrmVersion = Literal["0.x", "1.0"]


def _human_bones(thumb: tuple[str, str, str]) -> dict[str, str]:
    bones = {"pelvis": "hips", "spine_01": "spine", "spine_03": "chest", "spine_05": "upperChest",
             "neck_01": "neck", "head": "head"}
    for s, side in (("l", "left"), ("r", "right")):
        bones |= {f"clavicle_{s}": f"{side}Shoulder", f"upperarm_{s}": f"{side}UpperArm",
                  f"lowerarm_{s}": f"{side}LowerArm", f"hand_{s}": f"{side}Hand",
                  f"thigh_{s}": f"{side}UpperLeg", f"calf_{s}": f"{side}LowerLeg",
                  f"foot_{s}": f"{side}Foot", f"ball_{s}": f"{side}Toes"}
        for finger in FINGERS:
            vrm = "Little" if finger == "pinky" else finger.capitalize()
            segments = thumb if finger == "thumb" else ("Proximal", "Intermediate", "Distal")
            bones |= {f"{finger}_{k:02d}_{s}": f"{side}{vrm}{seg}" for k, seg in enumerate(segments, start=1)}
    return bones


#: Canonical ``helix-humanoid@1`` joint -> VRM 1.0 humanoid bone (``VRMC_vrm`` humanoid).
VRM_HUMAN_BONES: dict[str, str] = _human_bones(("Metacarpal", "Proximal", "Distal"))
#: Canonical ``helix-humanoid@1`` joint -> VRM 0.x humanoid bone (``VRM`` humanoid).
VRM0_HUMAN_BONES: dict[str, str] = _human_bones(("Proximal", "Intermediate", "Distal"))
#: The humanoid bones VRM 1.0 requires (``VRMC_vrm`` humanoid, "required"); asked of both
#: versions (VRM 0.x also requires ``chest`` and ``neck``; stand-ins cover them).
VRM_REQUIRED_BONES: frozenset[str] = frozenset(
    ["hips", "spine", "head"]
    + [f"{s}{b}" for s in ("left", "right")
       for b in ("UpperLeg", "LowerLeg", "Foot", "UpperArm", "LowerArm", "Hand")])
#: The rotation ``F`` ``(w, x, y, z)`` from a VRM's scene frame to the body frame of
#: spec §2.1, by version (module docstring): a half turn about +Y for 0.x.
VRM_FACING: dict[str, tuple[float, float, float, float]] = {"0.x": (0.0, 0.0, 1.0, 0.0),
                                                           "1.0": (1.0, 0.0, 0.0, 0.0)}
#: Relative tolerance of a uniform scale (module docstring).
_SCALE_TOL = 1e-5


@dataclass(frozen=True)
class VrmAvatar:
    """A VRM read by :func:`read_vrm`: ``version`` ``"0.x"`` or ``"1.0"``; ``skeleton``
    the decoder skeleton (canonical names, body frame, metres, rest rotations = the bones'
    bind rotations; module docstring); ``nodes`` canonical joint -> its humanoid node
    index; ``stand_ins`` the zero-length joints added for bones the model lacks;
    ``skipped`` the canonical joints it lacks and the decoder goes without (seed 001);
    ``facing`` ``F`` ``(4,)``; ``parents`` each node's parent node (``-1`` at a scene
    root); ``rest_local`` ``(N, 4)`` every node's rest rotation; ``chain`` the nodes on a
    humanoid bone's path from the scene root, parents first."""

    version: VrmVersion
    skeleton: Skeleton
    nodes: Mapping[str, int]
    stand_ins: tuple[str, ...]
    skipped: tuple[str, ...]
    facing: F64
    parents: tuple[int, ...]
    rest_local: F64
    chain: tuple[int, ...]


def _bad(message: str) -> UsageError:
    return UsageError("usage.avatar", message)


def _load_gltf(data: bytes) -> Any:
    import pygltflib

    if data[:4] != b"glTF":
        raise _bad("not a binary glTF (a VRM is a .glb file: its first bytes are 'glTF')")
    try:
        return pygltflib.GLTF2.load_from_bytes(data)
    except Exception as exc:  # pygltflib raises what its parser meets (JSON, struct, dataclass errors)
        raise _bad(f"the glTF cannot be read: {exc}") from exc


def _human_bone_nodes(gltf: Any) -> tuple[VrmVersion, dict[str, int]]:
    ext = gltf.extensions if isinstance(gltf.extensions, dict) else {}
    if "VRMC_vrm" in ext:
        version: VrmVersion = "1.0"
        bones = ext["VRMC_vrm"].get("humanoid", {}).get("humanBones") if isinstance(ext["VRMC_vrm"], dict) else None
        if not isinstance(bones, dict):
            raise _bad("VRMC_vrm.humanoid.humanBones is not a map of bones")
        pairs = [(b, v.get("node") if isinstance(v, dict) else None) for b, v in bones.items()]
        names = VRM_HUMAN_BONES
    elif "VRM" in ext:
        version = "0.x"
        bones = ext["VRM"].get("humanoid", {}).get("humanBones") if isinstance(ext["VRM"], dict) else None
        if not isinstance(bones, list):
            raise _bad("VRM.humanoid.humanBones is not a list of bones")
        pairs = [(v.get("bone"), v.get("node")) if isinstance(v, dict) else (None, None) for v in bones]
        names = VRM0_HUMAN_BONES
    else:
        raise _bad("not a VRM: the glTF has neither the VRMC_vrm (1.0) nor the VRM (0.x) extension")
    by_bone: dict[str, int] = {}
    for bone, node in pairs:
        if not isinstance(bone, str) or isinstance(node, bool) or not isinstance(node, int) \
                or not 0 <= node < len(gltf.nodes):
            raise _bad(f"humanoid bone {bone!r}: node {node!r} is not a node of the file")
        if bone in by_bone:
            raise _bad(f"humanoid bone {bone!r} is named twice")
        by_bone[bone] = node
    missing = sorted(VRM_REQUIRED_BONES.difference(by_bone))
    if missing:
        raise _bad(f"the VRM {version} model lacks required humanoid bones {missing}")
    to_canonical = {vrm: c for c, vrm in names.items()}
    nodes = {to_canonical[b]: n for b, n in by_bone.items() if b in to_canonical}
    if len(set(nodes.values())) != len(nodes):
        raise _bad("two humanoid bones name the same node")
    return version, nodes


def _node_matrix(node: Any) -> F64:
    if node.matrix is not None:
        return np.asarray(node.matrix, dtype=np.float64).reshape(4, 4).T  # column-major
    t = np.asarray(node.translation if node.translation is not None else (0.0, 0.0, 0.0), dtype=np.float64)
    x, y, z, w = (node.rotation if node.rotation is not None else (0.0, 0.0, 0.0, 1.0))
    s = np.asarray(node.scale if node.scale is not None else (1.0, 1.0, 1.0), dtype=np.float64)
    m = np.eye(4)
    m[:3, :3] = _quat_matrix(np.array([w, x, y, z], dtype=np.float64)) * s[None, :]
    m[:3, 3] = t
    return m


def _quat_matrix(q: F64) -> F64:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _rotation_of(m3: F64, what: str, *, uniform: bool) -> F64:
    """The rotation ``(w, x, y, z)`` of a 3×3 matrix with positive column scales; with
    ``uniform`` the scales must be equal and the columns orthogonal."""
    scale = np.linalg.norm(m3, axis=0)
    if not (np.isfinite(m3).all() and (scale > 0.0).all()):
        raise _bad(f"{what}: a zero or non-finite scale")
    r = m3 / scale[None, :]
    if np.abs(r.T @ r - np.eye(3)).max() > _SCALE_TOL or np.linalg.det(r) < 0.0:
        raise _bad(f"{what}: a sheared or mirrored transform")
    if uniform and np.ptp(scale) > _SCALE_TOL * scale.max():
        raise _bad(f"{what}: a non-uniform scale on a humanoid bone's chain")
    q: F64 = from_matrix_unchecked(r)
    return q


@functools.lru_cache(maxsize=1)
def _canonical_parents() -> dict[str, str | None]:
    helix = helix_humanoid()
    return {n: (helix.names[p] if p >= 0 else None) for n, p in zip(helix.names, helix.parents, strict=True)}


def _canonical_order() -> tuple[str, ...]:
    return tuple(_canonical_parents())


def read_vrm(data: bytes) -> VrmAvatar:
    """A VRM 0.x or 1.0 model (GLB bytes) as a decoder skeleton (module docstring).
    Raises ``usage.avatar``: not a GLB, not a VRM, a required bone missing, a bone off
    the scene or out of the humanoid hierarchy, a scale that breaks rotations."""
    gltf = _load_gltf(data)
    version, nodes = _human_bone_nodes(gltf)
    n_nodes = len(gltf.nodes)
    parents = [-1] * n_nodes
    for i, node in enumerate(gltf.nodes):
        for c in node.children or []:
            if not isinstance(c, int) or not 0 <= c < n_nodes or parents[c] != -1 or c == i:
                raise _bad(f"node {i}: child {c!r} is not a node with one parent")
            parents[c] = i
    scene_index = gltf.scene if gltf.scene is not None else 0
    if not gltf.scenes or not 0 <= scene_index < len(gltf.scenes):
        raise _bad("the glTF has no scene")
    roots = list(gltf.scenes[scene_index].nodes or [])
    # world transforms, parents first (glTF 2.0 §3.5.2)
    world: dict[int, F64] = {}
    order: list[int] = []
    stack = [r for r in reversed(roots) if isinstance(r, int) and 0 <= r < n_nodes and parents[r] == -1]
    while stack:
        i = stack.pop()
        if i in world:
            raise _bad(f"node {i} is reached twice in the scene")
        local = _node_matrix(gltf.nodes[i])
        world[i] = local if parents[i] == -1 else world[parents[i]] @ local
        order.append(i)
        stack.extend(reversed(gltf.nodes[i].children or []))
    off_scene = sorted(c for c, n in nodes.items() if n not in world)
    if off_scene:
        raise _bad(f"humanoid bones {off_scene} are not in the scene")
    chain_set: set[int] = set()
    for n in nodes.values():
        k = n
        while k != -1 and k not in chain_set:
            chain_set.add(k)
            k = parents[k]
    rest_local = np.tile([1.0, 0.0, 0.0, 0.0], (n_nodes, 1))
    for i in order:
        if i in chain_set:
            name = gltf.nodes[i].name or f"node {i}"
            _rotation_of(world[i][:3, :3], name, uniform=True)
            rest_local[i] = _rotation_of(_node_matrix(gltf.nodes[i])[:3, :3], name, uniform=True)
    facing = np.asarray(VRM_FACING[version], dtype=np.float64)

    # the humanoid hierarchy: a bone's nearest humanoid ancestor in the file is its
    # nearest present canonical ancestor
    canon_parent = _canonical_parents()
    node_canonical = {n: c for c, n in nodes.items()}

    def present_ancestor(c: str) -> str | None:
        p = canon_parent[c]
        while p is not None and p not in nodes:
            p = canon_parent[p]
        return p

    for c, n in nodes.items():
        k = parents[n]
        while k != -1 and k not in node_canonical:
            k = parents[k]
        found = node_canonical.get(k) if k != -1 else None
        if found != present_ancestor(c):
            raise _bad(f"humanoid bone {VRM_HUMAN_BONES[c] if version == '1.0' else VRM0_HUMAN_BONES[c]!r} "
                       f"hangs from {found!r}, not from its VRM parent bone {present_ancestor(c)!r}")

    stand_ins = tuple(c for c in _canonical_order() if c in REQUIRED_JOINTS and c != "root" and c not in nodes)
    names = [c for c in _canonical_order() if c == "root" or c in nodes or c in stand_ins]
    index = {c: i for i, c in enumerate(names)}

    def included_parent(c: str) -> str:
        p = canon_parent[c]
        while p is not None and p not in index:
            p = canon_parent[p]
        assert p is not None  # root is included
        return p

    parent_idx = [-1] + [index[included_parent(c)] for c in names[1:]]
    pos = np.zeros((len(names), 3))
    rot = np.tile([1.0, 0.0, 0.0, 0.0], (len(names), 1))
    for c, n in nodes.items():
        j = index[c]
        pos[j] = rotate_unchecked(facing, world[n][:3, 3])
        rot[j] = multiply_unchecked(facing, _rotation_of(world[n][:3, :3], c, uniform=True))
    children: dict[int, list[int]] = {j: [] for j in range(len(names))}
    for j in range(1, len(names)):
        children[parent_idx[j]].append(j)
    for c in stand_ins:  # parents come first in canonical order
        j = index[c]
        kids = children[j]
        on = kids[0] if len(kids) == 1 and names[kids[0]] in nodes else parent_idx[j]
        pos[j] = pos[on]
        rot[j] = rot[parent_idx[j]]

    sites: dict[str, tuple[str, ArrayLike]] = {}
    for s in ("l", "r"):
        d, m = f"middle_03_{s}", f"middle_02_{s}"
        if d not in nodes:
            continue
        tip = None
        kids = [k for k in (gltf.nodes[nodes[d]].children or []) if k in world]
        if kids:
            base = pos[index[d]]
            along = pos[index[d]] - pos[index[m]] if m in nodes else np.zeros(3)
            points = [rotate_unchecked(facing, world[k][:3, 3]) for k in kids]
            tip = max(points, key=lambda p: float((p - base) @ along))
        elif m in nodes:
            tip = 2.0 * pos[index[d]] - pos[index[m]]
        if tip is not None:
            sites[f"middle_tip_{s}"] = (d, tip)
    skeleton = Skeleton.from_world(names, parent_idx, pos, rot, sites=sites)
    chain = tuple(i for i in order if i in chain_set)
    skipped = tuple(c for c in CANONICAL_JOINTS if c not in index)
    return VrmAvatar(version=version, skeleton=skeleton, nodes=nodes, stand_ins=stand_ins, skipped=skipped,
                     facing=facing,
                     parents=tuple(parents), rest_local=rest_local, chain=chain)


def avatar_rotations(avatar: VrmAvatar, local_rotations: ArrayLike) -> tuple[F64, F64]:
    """The file's rotations of the humanoid bone nodes for decoder local rotations
    ``(T, J, 4)`` on ``avatar.skeleton`` (module docstring "Posing"): world rotations
    ``(T, H, 4)`` and local rotations ``(T, H, 4)`` ``(w, x, y, z)``, ``H`` the bones in
    ``avatar.nodes`` order."""
    local = np.asarray(local_rotations, dtype=np.float64)
    _, world = fk(avatar.skeleton, local)  # (T, J, 4), body frame
    index = avatar.skeleton.index
    inv_f = conjugate_unchecked(avatar.facing)
    wanted = {n: multiply_unchecked(inv_f, world[:, index[c]]) for c, n in avatar.nodes.items()}
    frames = local.shape[0]
    node_world: dict[int, F64] = {}
    node_local: dict[int, F64] = {}
    for i in avatar.chain:  # parents first
        p = avatar.parents[i]
        parent = node_world[p] if p != -1 else np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1))
        if i in wanted:
            node_world[i] = wanted[i]
            node_local[i] = multiply_unchecked(conjugate_unchecked(parent), wanted[i])
        else:
            node_world[i] = multiply_unchecked(parent, np.broadcast_to(avatar.rest_local[i], (frames, 4)))
    order = list(avatar.nodes.values())
    return (np.stack([node_world[n] for n in order], axis=1),
            np.stack([node_local[n] for n in order], axis=1))


def export_avatar_glb(vectors: ArrayLike, timestamps_us: ArrayLike, avatar: str | Path | bytes,
                      path: str | Path) -> ExportSummary:
    """Decode pose vectors ``(T, N)`` (normalized, spec §3) stamped ``timestamps_us``
    ``(T,)`` (microseconds, strictly increasing) on the VRM ``avatar`` (a path or the
    file's bytes) and write the model plus one animation to ``path`` (module docstring).
    Returns a :class:`posewire.consumers.gltf.ExportSummary` (``stand_ins`` the zero-length
    joints added). Raises ``usage.avatar`` (:func:`read_vrm`), ``usage.shape``,
    ``usage.not_finite`` (NaN timestamp) and ``usage.bad_option`` (times not increasing)."""
    import math

    import pygltflib

    from .gltf import ExportSummary, GlbBlob, animation_times
    from .pose import decode_pose

    data = avatar if isinstance(avatar, bytes) else Path(avatar).read_bytes()
    vrm = read_vrm(data)
    vec = np.asarray(vectors, dtype=np.float64)
    if vec.ndim != 2 or vec.shape[1] != N_DIMS or vec.shape[0] < 1:
        raise UsageError("usage.shape", f"vectors must be (T, {N_DIMS}) with T >= 1, got {vec.shape}")
    frames = vec.shape[0]
    seconds = animation_times(timestamps_us, frames)
    pose = decode_pose(vec, vrm.skeleton)  # spec §3.5: NaN -> default, reported
    _, local = avatar_rotations(vrm, pose.local_rotations / np.linalg.norm(pose.local_rotations, axis=-1,
                                                                          keepdims=True))
    xyzw = np.concatenate([local[..., 1:], local[..., :1]], axis=-1).astype(np.float32)

    gltf = _load_gltf(data)
    if not gltf.buffers or gltf.buffers[0].uri is not None:
        raise _bad("the model's first buffer is not the GLB's binary chunk")
    for n in vrm.nodes.values():  # glTF 2.0 §3.11: an animated node has TRS, not a matrix
        node = gltf.nodes[n]
        if node.matrix is not None:
            m = _node_matrix(node)
            scale = np.linalg.norm(m[:3, :3], axis=0)
            w, x, y, z = _rotation_of(m[:3, :3], node.name or f"node {n}", uniform=False)
            node.translation = [float(v) for v in m[:3, 3]]
            node.rotation = [float(x), float(y), float(z), float(w)]
            node.scale = [float(v) for v in scale]
            node.matrix = None
    blob = GlbBlob(gltf)
    existing = gltf.binary_blob() or b""
    blob.data = bytearray(existing) + b"\0" * (-len(existing) % 4)
    fl = pygltflib.FLOAT
    time_acc = blob.add(seconds, pygltflib.SCALAR, fl, bounds=True)
    anim = pygltflib.Animation(name="posewire")
    for h, n in enumerate(vrm.nodes.values()):
        out = blob.add(np.ascontiguousarray(xyzw[:, h]), pygltflib.VEC4, fl)
        anim.samplers.append(pygltflib.AnimationSampler(input=time_acc, output=out, interpolation="LINEAR"))
        anim.channels.append(pygltflib.AnimationChannel(
            sampler=len(anim.samplers) - 1, target=pygltflib.AnimationChannelTarget(node=n, path="rotation")))
    gltf.animations = [*(gltf.animations or []), anim]
    gltf.buffers[0].byteLength = len(blob.data)
    gltf.set_binary_blob(bytes(blob.data))
    out_path = Path(path)
    written = b"".join(gltf.save_to_bytes())
    out_path.write_bytes(written)
    duration = float(seconds[-1])
    return ExportSummary(path=out_path, frames=frames, joints_animated=len(vrm.nodes),
                         duration_s=duration if math.isfinite(duration) else 0.0, bytes=len(written),
                         skipped=vrm.skipped, report=pose.report(), stand_ins=vrm.stand_ins)
