"""VRM Animation export (posewire.bridges.vrma): the file's structure against the
VRMC_vrm_animation 1.0 rules, the glTF validator, and the VRM consortium's own player
(@pixiv/three-vrm-animation) in Chromium posing a VRM as the decoder does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pygltflib
import pytest
from gltfutil import validate_gltf
from vrmutil import mannequin_as_vrm, rotation_angle_deg

from posewire.bridges.vmc import EYE_PITCH_DEG, EYE_YAW_DEG, effective_vector, vrm_presets
from posewire.bridges.vrma import LOOK_AT_OFFSET, VRM_HUMAN_BONES, VRM_PRESETS, export_vrma
from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.consumers.face import face_weights
from posewire.consumers.gltf import MANNEQUIN_RETARGET, mannequin_skeleton
from posewire.consumers.pose import decode_pose
from posewire.producers.recording import RecordedFrame, read_recording

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "posewire" / "data" / "holistic_signer.jsonl"
JS_ROOT = ROOT / "js"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
#: VRM 1.0 humanoid bones a model must have (VRMC_vrm humanoid.md, "required").
REQUIRED_VRM_BONES = {"hips", "spine", "head", "leftUpperLeg", "leftLowerLeg", "leftFoot", "rightUpperLeg",
                      "rightLowerLeg", "rightFoot", "leftUpperArm", "leftLowerArm", "leftHand", "rightUpperArm",
                      "rightLowerArm", "rightHand"}


@pytest.fixture(scope="module")
def demo_frames() -> list[RecordedFrame]:
    return read_recording(DEMO)[1]


@pytest.fixture(scope="module")
def demo_vrma(tmp_path_factory: pytest.TempPathFactory, demo_frames: list[RecordedFrame]) -> Path:
    path = tmp_path_factory.mktemp("vrma") / "demo.vrma"
    summary = export_vrma(demo_frames, path)
    assert summary.frames == len(demo_frames) and summary.bytes == path.stat().st_size
    return path


def _expected(frames: list[RecordedFrame]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decoder local rotations (T, J, 4) on the mannequin, presets (T, 11), gaze (T, 2)."""
    vectors = np.stack([effective_vector(f.vector(), f.conditions.affect if f.conditions else None) for f in frames])
    skeleton, retarget = mannequin_skeleton()
    local = decode_pose(vectors, retarget.apply(skeleton).skeleton).local_rotations
    presets = []
    for f, v in zip(frames, vectors, strict=True):
        mix = f.conditions.mouthing if f.conditions else None
        weights = vrm_presets(v, face_weights(v, capability="viseme15", visemes=None if mix is None else list(mix)),
                              f.conditions.affect if f.conditions else None)
        presets.append([weights[k] for k in VRM_PRESETS])
    yaw = np.nan_to_num(vectors[:, REGISTRY.index("f_gaze_yaw")]) * EYE_YAW_DEG
    pitch = np.nan_to_num(vectors[:, REGISTRY.index("f_gaze_pitch")]) * EYE_PITCH_DEG
    return local, np.array(presets), np.stack([yaw, pitch], axis=1)


def test_vrma_follows_the_extension(demo_vrma: Path, demo_frames: list[RecordedFrame]) -> None:
    gltf = pygltflib.GLTF2.load_binary(str(demo_vrma))
    ext = gltf.extensions["VRMC_vrm_animation"]
    assert gltf.extensionsUsed == ["VRMC_vrm_animation"] and ext["specVersion"] == "1.0"
    bones = ext["humanoid"]["humanBones"]
    assert set(bones) >= REQUIRED_VRM_BONES and not {"leftEye", "rightEye"} & set(bones)
    assert set(bones) == set(VRM_HUMAN_BONES.values())  # the mannequin has every one
    assert set(ext["expressions"]["preset"]) == set(VRM_PRESETS.values())
    assert not {"lookUp", "lookDown", "lookLeft", "lookRight"} & set(ext["expressions"]["preset"])
    assert ext["lookAt"]["offsetFromHeadBone"] == list(LOOK_AT_OFFSET)
    # the rest pose is a T-pose facing +Z: hips above the floor, hands out along ±X at
    # shoulder height, world-aligned joint frames (no rest rotation, no scale)
    nodes = gltf.nodes
    assert all(n.rotation is None and n.scale is None for n in nodes[: len(mannequin_skeleton()[0])])
    skeleton, _ = mannequin_skeleton()
    rest, _ = skeleton.rest_world()
    node_of = {n.name: i for i, n in enumerate(nodes)}
    hand_l, hand_r = (rest[node_of[MANNEQUIN_RETARGET.bones[f"hand_{s}"]]] for s in "lr")
    shoulder_l = rest[node_of[MANNEQUIN_RETARGET.bones["upperarm_l"]]]
    assert rest[node_of["Pelvis"]][1] > 0.5
    assert hand_l[0] > 0.5 and hand_r[0] < -0.5 and abs(hand_l[1] - shoulder_l[1]) < 0.05
    # channels: a rotation per humanoid bone, no translation on one, an expression's X weight
    anim = gltf.animations[0]
    targets = [(c.target.node, c.target.path) for c in anim.channels]
    humanoid = {b["node"] for b in bones.values()}
    assert {n for n, p in targets if p == "rotation"} == humanoid | {ext["lookAt"]["node"]}
    assert {n for n, p in targets if p == "translation"} == {e["node"] for e in ext["expressions"]["preset"].values()}
    times = gltf.accessors[anim.samplers[0].input]
    assert times.count == len(demo_frames)
    assert times.max[0] == pytest.approx((demo_frames[-1].t_us - demo_frames[0].t_us) / 1e6, rel=1e-6)


def test_vrma_keys_are_the_decoders_bones_and_faces(demo_vrma: Path, demo_frames: list[RecordedFrame]) -> None:
    gltf = pygltflib.GLTF2.load_binary(str(demo_vrma))
    blob = gltf.binary_blob()

    def values(accessor: int, width: int) -> np.ndarray:
        acc = gltf.accessors[accessor]
        view = gltf.bufferViews[acc.bufferView]
        return np.frombuffer(blob, dtype=np.float32, count=acc.count * width,
                             offset=view.byteOffset).reshape(acc.count, width)

    local, presets, gaze = _expected(demo_frames)
    ext = gltf.extensions["VRMC_vrm_animation"]
    by_node = {c.target.node: gltf.animations[0].samplers[c.sampler].output for c in gltf.animations[0].channels}
    for bone in ("hips", "leftLowerArm", "rightHand", "rightIndexIntermediate", "leftThumbMetacarpal", "head"):
        node = ext["humanoid"]["humanBones"][bone]["node"]
        got = values(by_node[node], 4)  # x, y, z, w
        want = local[:, node]
        err = np.minimum(np.abs(got - np.roll(want, -1, axis=1)).max(axis=1),
                         np.abs(got + np.roll(want, -1, axis=1)).max(axis=1))
        assert err.max() < 1e-6, bone
    for k, name in enumerate(VRM_PRESETS.values()):
        weight = values(by_node[ext["expressions"]["preset"][name]["node"]], 3)
        np.testing.assert_allclose(weight[:, 0], np.clip(presets[:, k], 0.0, 1.0), atol=1e-6, err_msg=name)
        assert (weight[:, 1:] == 0.0).all() and weight[:, 0].min() >= 0.0 and weight[:, 0].max() <= 1.0
    # the signer mouths: the vowels are there and change over the take
    vowels = presets[:, :5]
    assert vowels.max() >= 0.15 and vowels.std(axis=0).max() > 0.01
    look = values(by_node[ext["lookAt"]["node"]], 4)
    assert np.abs(look[:, 1]).max() > 0.0 or np.abs(gaze[:, 0]).max() == 0.0


def test_vrma_passes_the_gltf_validator(demo_vrma: Path) -> None:
    report = validate_gltf(demo_vrma)
    assert report["numErrors"] == 0, report["messages"]
    assert report["numWarnings"] == 0, report["messages"]


def test_vrma_rejects_bad_takes(tmp_path: Path, demo_frames: list[RecordedFrame]) -> None:
    with pytest.raises(UsageError) as err:
        export_vrma([], tmp_path / "x.vrma")
    assert err.value.code == "usage.bad_option"
    with pytest.raises(UsageError) as err:
        export_vrma([demo_frames[1], demo_frames[0]], tmp_path / "x.vrma")
    assert err.value.code == "usage.bad_option"


def test_export_command_writes_vrma(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from posewire.cli.command import main

    out = tmp_path / "take.vrma"
    assert main(["export", "--recording", str(DEMO), "--out", str(out)]) == 0
    assert "humanoid bones" in capsys.readouterr().out
    assert out.read_bytes()[:4] == b"glTF"
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", "reference"]) == 1
    assert "plays on any VRM avatar" in capsys.readouterr().err


@pytest.mark.skipif(
    NODE is None or not Path(CHROMIUM).exists()
    or not (JS_ROOT / "node_modules" / "@pixiv" / "three-vrm-animation").is_dir(),
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")
def test_vrma_plays_on_a_vrm_in_three_vrm_animation(tmp_path: Path, demo_vrma: Path,
                                                    demo_frames: list[RecordedFrame]) -> None:
    avatar = tmp_path / "mannequin.vrm"
    avatar.write_bytes(mannequin_as_vrm())
    t0 = demo_frames[0].t_us
    picks = [0, len(demo_frames) // 3, len(demo_frames) - 1]
    times = [(demo_frames[k].t_us - t0) / 1e6 for k in picks]
    bones = ["hips", "spine", "head", "leftUpperArm", "leftLowerArm", "rightLowerArm", "rightHand",
             "rightIndexProximal", "rightIndexIntermediate", "leftThumbMetacarpal", "leftLittleDistal"]
    shot = tmp_path / "vrma.png"
    run = subprocess.run([NODE, str(JS_ROOT / "test" / "drive_vrma.mjs"), str(avatar), str(demo_vrma),  # type: ignore[list-item]
                          json.dumps({"times": times, "bones": bones, "screenshot": str(shot)})],
                         capture_output=True, text=True, timeout=240, check=False)
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert "error" not in answer, (answer, run.stderr[-2000:])
    assert answer["page_errors"] == []
    assert all(o.startswith("http://127.0.0.1:") for o in answer["origins"])
    assert set(answer["humanoid"]) == set(VRM_HUMAN_BONES.values())
    assert set(answer["expressions"]) == set(VRM_PRESETS.values()) and answer["look_at_track"]
    local, presets, gaze = _expected(demo_frames)
    skeleton, _ = mannequin_skeleton()
    node_of = {n: j for j, n in enumerate(skeleton.names)}
    canonical_of = {v: k for k, v in VRM_HUMAN_BONES.items()}
    worst = 0.0
    for pose, k in zip(answer["poses"], picks, strict=True):
        for bone in bones:
            got = np.array(pose["bones"][bone])
            want = local[k, node_of[MANNEQUIN_RETARGET.bones[canonical_of[bone]]]]
            angle = float(rotation_angle_deg(got, want))
            worst = max(worst, angle)
        for j, name in enumerate(VRM_PRESETS.values()):
            assert pose["expressions"][name] == pytest.approx(min(1.0, max(0.0, presets[k, j])), abs=1e-5)
        yaw, pitch = pose["look"]
        assert yaw == pytest.approx(gaze[k, 0], abs=1e-3)
        assert pitch == pytest.approx(-gaze[k, 1], abs=1e-3)  # three-vrm: pitch about +X, up is negative
    # float32 keys (glTF) against the decoder's float64: well under a tenth of a degree
    assert worst < 0.05, f"worst bone {worst:.3f}°"
    assert shot.stat().st_size > 5_000
    keep = os.environ.get("POSEWIRE_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / "vrma_three_vrm.png")
