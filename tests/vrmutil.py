"""A VRM 1.0 avatar for the browser tests: the viewer's mannequin GLB with its joints named
as VRM humanoid bones (``VRMC_vrm`` extension, https://github.com/vrm-c/vrm-specification)."""

from __future__ import annotations


def mannequin_as_vrm() -> bytes:
    """The mannequin GLB as a VRM 1.0 file (its humanoid bones by
    :data:`posewire.bridges.vrma.VRM_HUMAN_BONES`)."""
    import pygltflib

    from posewire.bridges.vrma import VRM_HUMAN_BONES
    from posewire.consumers.gltf import MANNEQUIN_RETARGET
    from posewire.servers.viewer import mannequin_glb

    gltf = pygltflib.GLTF2.load_from_bytes(mannequin_glb())
    node = {n.name: i for i, n in enumerate(gltf.nodes)}
    bones = {vrm: MANNEQUIN_RETARGET.bones[canonical] for canonical, vrm in VRM_HUMAN_BONES.items()}
    gltf.extensionsUsed = [*(gltf.extensionsUsed or []), "VRMC_vrm"]
    gltf.extensions = {"VRMC_vrm": {
        "specVersion": "1.0",
        "meta": {"name": "posewire mannequin (test)", "authors": ["posewire tests"],
                 "licenseUrl": "https://vrm.dev/licenses/1.0/"},
        "humanoid": {"humanBones": {b: {"node": node[n]} for b, n in bones.items()}}}}
    data: bytes = b"".join(gltf.save_to_bytes())
    return data
