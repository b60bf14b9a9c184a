"""VRM avatars for the tests, made from the mannequin: the viewer's mannequin GLB with its
joints named as VRM humanoid bones (``VRMC_vrm`` 1.0 or ``VRM`` 0.x extension,
https://github.com/vrm-c/vrm-specification).

:func:`mannequin_as_vrm` writes a VRM 1.0 (facing +Z, identity bind rotations, as the
1.0 humanoid asks) or a VRM 0.x (facing −Z, as 0.x models do) whose joints can be given
seeded random bind rotations (a rest pose that is still the same T-pose: the joints'
world positions and the mesh are the mannequin's, turned to face −Z for 0.x) and whose
humanoid list can leave bones out."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from posewire.codec.quaternion import conjugate, multiply

#: The rotation ``(w, x, y, z)`` of a half turn about +Y (VRM 0.x faces −Z).
HALF_TURN_Y = np.array([0.0, 0.0, 1.0, 0.0])


def _random_rotations(count: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q


def _facing_minus_z(glb: bytes) -> bytes:
    """The GLB with its mesh's positions and normals turned half a turn about +Y."""
    import pygltflib

    gltf = pygltflib.GLTF2.load_from_bytes(glb)
    blob = bytearray(gltf.binary_blob())
    attrs = gltf.meshes[0].primitives[0].attributes
    for acc_index in (attrs.POSITION, attrs.NORMAL):
        acc = gltf.accessors[acc_index]
        view = gltf.bufferViews[acc.bufferView]
        start = view.byteOffset + (acc.byteOffset or 0)
        values = np.frombuffer(bytes(blob[start:start + 12 * acc.count]), dtype=np.float32).reshape(-1, 3).copy()
        values[:, [0, 2]] *= -1.0
        blob[start:start + 12 * acc.count] = values.tobytes()
        if acc.min is not None:
            acc.min = [float(v) for v in values.min(axis=0)]
            acc.max = [float(v) for v in values.max(axis=0)]
    gltf.set_binary_blob(bytes(blob))
    return b"".join(gltf.save_to_bytes())


def mannequin_as_vrm(version: str = "1.0", *, bind_seed: int | None = None, omit: Iterable[str] = ()) -> bytes:
    """The mannequin GLB as a VRM ``version`` (``"1.0"`` or ``"0.x"``) file, its humanoid
    bones by :data:`posewire.consumers.vrm.VRM_HUMAN_BONES` (1.0) or ``VRM0_HUMAN_BONES``
    (0.x) less the VRM bone names in ``omit``; ``bind_seed``: give every joint a random
    bind rotation (seeded) — the rest pose is unchanged."""
    import tempfile
    from pathlib import Path

    import pygltflib

    from posewire.codec.quaternion import rotate_unchecked
    from posewire.codec.vector import DEFAULTS
    from posewire.consumers.gltf import MANNEQUIN_RETARGET, export_glb, mannequin_skeleton
    from posewire.consumers.skeleton import Skeleton
    from posewire.consumers.vrm import VRM0_HUMAN_BONES, VRM_HUMAN_BONES

    if version not in ("1.0", "0.x"):
        raise ValueError(version)
    skeleton, _ = mannequin_skeleton()
    positions, _ = skeleton.rest_world()  # identity rest rotations
    sites = {name: (skeleton.names[j], positions[j] + off) for name, (j, off) in skeleton.sites.items()}
    if version == "0.x":
        positions = rotate_unchecked(HALF_TURN_Y, positions)
        sites = {n: (j, rotate_unchecked(HALF_TURN_Y, p)) for n, (j, p) in sites.items()}
    rotations = None if bind_seed is None else _random_rotations(len(skeleton), bind_seed)
    model = Skeleton.from_world(skeleton.names, skeleton.parents, positions, rotations, sites=sites)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mannequin.glb"
        export_glb(np.asarray(DEFAULTS)[None], [0], out, skeleton=model)
        glb = out.read_bytes()
    if version == "0.x":
        glb = _facing_minus_z(glb)
    gltf = pygltflib.GLTF2.load_from_bytes(glb)
    node = {n.name: i for i, n in enumerate(gltf.nodes)}
    names = VRM_HUMAN_BONES if version == "1.0" else VRM0_HUMAN_BONES
    left_out = set(omit)
    bones = {vrm: node[MANNEQUIN_RETARGET.bones[canonical]] for canonical, vrm in names.items()
             if vrm not in left_out}
    meta = {"name": f"posewire mannequin (test, VRM {version})", "authors": ["posewire tests"],
            "licenseUrl": "https://vrm.dev/licenses/1.0/"}
    if version == "1.0":
        gltf.extensionsUsed = [*(gltf.extensionsUsed or []), "VRMC_vrm"]
        gltf.extensions = {"VRMC_vrm": {"specVersion": "1.0", "meta": meta,
                                        "humanoid": {"humanBones": {b: {"node": n} for b, n in bones.items()}}}}
    else:
        gltf.extensionsUsed = [*(gltf.extensionsUsed or []), "VRM"]
        gltf.extensions = {"VRM": {
            "specVersion": "0.0", "exporterVersion": "posewire tests",
            "meta": {"title": meta["name"], "author": "posewire tests", "licenseName": "CC0"},
            "humanoid": {"humanBones": [{"bone": b, "node": n, "useDefaultValues": True}
                                        for b, n in bones.items()]}}}
    data: bytes = b"".join(gltf.save_to_bytes())
    return data


def rotation_angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle between unit quaternions ``(..., 4)`` in degrees: ``2·atan2(|v|, |w|)`` of
    ``a⁻¹ · b`` (well conditioned near 0°, where ``2·acos(|a·b|)`` turns a 1e-8 error of
    a float32 norm into 0.01°)."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    rel = multiply(conjugate(a), b)
    return np.degrees(2 * np.arctan2(np.linalg.norm(rel[..., 1:], axis=-1), np.abs(rel[..., 0])))
