"""GLB export onto the user's VRM (posewire.consumers.vrm, ``posewire export --avatar
MODEL.vrm``): VRM 0.x (facing −Z, random bind rotations) and 1.0 models made from the
mannequin are posed as the decoder poses the mannequin — read back from the written file
by an FK of its own here, and played by three.js's GLTFLoader in Chromium — the model is
kept intact, the glTF validator passes, bad models get ``usage.avatar``."""

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
from hypothesis import given, settings
from hypothesis import strategies as st
from vrmutil import HALF_TURN_Y, mannequin_as_vrm, rotation_angle_deg

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import conjugate, from_matrix, multiply, to_matrix
from posewire.consumers.gltf import MANNEQUIN_RETARGET, mannequin_skeleton
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton, fk
from posewire.consumers.vrm import VRM0_HUMAN_BONES, VRM_HUMAN_BONES, export_avatar_glb, read_vrm
from posewire.producers.recording import RecordedFrame, read_recording
from posewire.servers.viewer import mannequin_glb

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "posewire" / "data" / "holistic_signer.jsonl"
JS_ROOT = ROOT / "js"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
#: The two test models: (version, bind seed, facing F from the file's frame to the body frame).
MODELS = {"1.0": ("1.0", None, IDENTITY), "0.x": ("0.x", 7, HALF_TURN_Y)}


@pytest.fixture(scope="module")
def demo_frames() -> list[RecordedFrame]:
    return read_recording(DEMO)[1]


@pytest.fixture(scope="module")
def demo_vectors(demo_frames: list[RecordedFrame]) -> tuple[np.ndarray, list[int]]:
    return np.stack([f.vector() for f in demo_frames]), [f.t_us for f in demo_frames]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("vrm")
    out = {}
    for key, (version, seed, _) in MODELS.items():
        out[key] = folder / f"mannequin-{key}.vrm"
        out[key].write_bytes(mannequin_as_vrm(version, bind_seed=seed))
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory, models: dict[str, Path],
            demo_vectors: tuple[np.ndarray, list[int]]) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("take")
    out = {}
    for key, model in models.items():
        out[key] = folder / f"take-{key}.glb"
        summary = export_avatar_glb(*demo_vectors, model, out[key])
        assert summary.frames == len(demo_vectors[1]) and summary.bytes == out[key].stat().st_size
        assert summary.joints_animated == 52 and summary.stand_ins == ()
    return out


def _mannequin_worlds(vectors: np.ndarray) -> tuple[Skeleton, np.ndarray]:
    """The decoder on the mannequin itself, its world rotations (T, J, 4) (identity rest:
    the turn G_j of each joint). The mannequin's fingertip site is the VRM reader's rule
    (no tip node: the distal bone's own length carried past it)."""
    skeleton, _ = mannequin_skeleton()
    pos, _ = skeleton.rest_world()
    ix = skeleton.index
    sites = {f"middle_tip_{s}": (f"{side}_Middle3", 2 * pos[ix[f"{side}_Middle3"]] - pos[ix[f"{side}_Middle2"]])
             for s, side in (("l", "L"), ("r", "R"))}
    skeleton = Skeleton.from_world(skeleton.names, skeleton.parents, pos, sites=sites)
    local = decode_pose(vectors, MANNEQUIN_RETARGET.apply(skeleton).skeleton).local_rotations
    return skeleton, fk(skeleton, local)[1]


def _read_take(path: Path) -> tuple[pygltflib.GLTF2, dict[int, np.ndarray], np.ndarray]:
    """The file, its last animation's rotation keys per node (T, 4) (w, x, y, z) and times."""
    gltf = pygltflib.GLTF2.load_binary(str(path))
    blob = gltf.binary_blob()

    def values(accessor: int, width: int) -> np.ndarray:
        acc = gltf.accessors[accessor]
        view = gltf.bufferViews[acc.bufferView]
        return np.frombuffer(blob, dtype=np.float32, count=acc.count * width,
                             offset=view.byteOffset + (acc.byteOffset or 0)).reshape(acc.count, width)

    anim = gltf.animations[-1]
    keys = {}
    for c in anim.channels:
        assert c.target.path == "rotation"
        xyzw = values(anim.samplers[c.sampler].output, 4).astype(np.float64)
        keys[c.target.node] = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    return gltf, keys, values(anim.samplers[0].input, 1)[:, 0]


def _file_fk(gltf: pygltflib.GLTF2, keys: dict[int, np.ndarray], frames: int) -> tuple[np.ndarray, np.ndarray]:
    """World matrices (T, N, 4, 4) of every node with the keys applied (glTF 2.0 §3.5)."""
    n = len(gltf.nodes)
    world = np.zeros((frames, n, 4, 4))
    done = np.zeros(n, dtype=bool)

    def local(i: int) -> np.ndarray:
        node = gltf.nodes[i]
        m = np.tile(np.eye(4), (frames, 1, 1))
        if node.matrix is not None:
            return m @ np.asarray(node.matrix).reshape(4, 4).T
        x, y, z, w = node.rotation or (0.0, 0.0, 0.0, 1.0)
        q = keys[i] if i in keys else np.tile([w, x, y, z], (frames, 1))
        m[:, :3, :3] = to_matrix(q) * np.asarray(node.scale or (1.0, 1.0, 1.0))[None, None, :]
        m[:, :3, 3] = node.translation or (0.0, 0.0, 0.0)
        return m

    def visit(i: int, parent: np.ndarray | None) -> None:
        world[:, i] = local(i) if parent is None else parent @ local(i)
        done[i] = True
        for c in gltf.nodes[i].children or []:
            visit(c, world[:, i])

    for r in gltf.scenes[gltf.scene or 0].nodes:
        visit(r, None)
    rot = from_matrix(world[..., :3, :3] / np.linalg.norm(world[..., :3, :3], axis=-2, keepdims=True))
    return world, rot


def _expected_file_worlds(model: Path, key: str, worlds: np.ndarray, skeleton: Skeleton) -> dict[int, np.ndarray]:
    """Per humanoid node: F⁻¹ · G_j · F · R_j (its bind world rotation R_j in the file
    turned by the decoder's G_j, carried into the file's frame): (T, 4)."""
    facing = MODELS[key][2]
    gltf = pygltflib.GLTF2.load_from_bytes(model.read_bytes())
    _, rest = _file_fk(gltf, {}, 1)
    names = VRM_HUMAN_BONES if key == "1.0" else VRM0_HUMAN_BONES
    node_of = {n.name: i for i, n in enumerate(gltf.nodes)}
    out = {}
    for canonical in names:
        node = node_of[MANNEQUIN_RETARGET.bones[canonical]]
        g = worlds[:, skeleton.index[MANNEQUIN_RETARGET.bones[canonical]]]
        out[node] = multiply(multiply(multiply(conjugate(facing), g), facing), rest[0, node])
    return out


@pytest.mark.parametrize("key", list(MODELS))
def test_read_vrm_is_the_mannequin_in_the_body_frame(models: dict[str, Path], key: str) -> None:
    avatar = read_vrm(models[key].read_bytes())
    assert avatar.version == key and avatar.stand_ins == ()
    skeleton, _ = mannequin_skeleton()
    pos, _ = skeleton.rest_world()
    got_pos, got_rot = avatar.skeleton.rest_world()
    for canonical, node in avatar.nodes.items():
        j = skeleton.index[MANNEQUIN_RETARGET.bones[canonical]]
        np.testing.assert_allclose(got_pos[avatar.skeleton.index[canonical]], pos[j], atol=2e-6, err_msg=canonical)
        assert node >= 1
    # the 0.x model's bind rotations are not the identity (the bind handling is tested)
    turned = rotation_angle_deg(got_rot, np.tile(IDENTITY, (len(got_rot), 1)))
    if key == "0.x":
        assert turned[1:].min() > 5.0 and np.median(turned[1:]) > 60.0
    else:
        assert np.allclose(turned, 0.0, atol=1e-4)
    assert set(avatar.nodes) == set(VRM_HUMAN_BONES)


@pytest.mark.parametrize("key", list(MODELS))
def test_exported_bones_turn_as_the_decoders(models: dict[str, Path], exports: dict[str, Path], key: str,
                                             demo_vectors: tuple[np.ndarray, list[int]]) -> None:
    vectors, stamps = demo_vectors
    skeleton, worlds = _mannequin_worlds(vectors)
    gltf, keys, times = _read_take(exports[key])
    np.testing.assert_allclose(times, (np.asarray(stamps) - stamps[0]) / 1e6, atol=1e-6)
    want = _expected_file_worlds(models[key], key, worlds, skeleton)
    assert set(keys) == set(want)
    world, rot = _file_fk(gltf, keys, len(stamps))
    worst = max(float(rotation_angle_deg(rot[:, node], w).max()) for node, w in want.items())
    assert worst < 0.001, f"worst bone {worst:.5f}°"  # float32 keys against the decoder's float64
    print(f"file FK {key}: worst bone {worst:.5f}°")
    # and the joints stand where the decoder's do: F⁻¹ applied to the mannequin's FK positions
    local = decode_pose(vectors, MANNEQUIN_RETARGET.apply(skeleton).skeleton).local_rotations
    positions = fk(skeleton, local)[0]
    facing_m = to_matrix(MODELS[key][2])
    node_of = {n.name: i for i, n in enumerate(gltf.nodes)}
    for joint in ("L_Wrist", "R_Wrist", "Head", "R_Index3"):
        got = world[:, node_of[joint], :3, 3]
        np.testing.assert_allclose(got, positions[:, skeleton.index[joint]] @ facing_m, atol=2e-5, err_msg=joint)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), version=st.sampled_from(["0.x", "1.0"]))
def test_bind_rotations_do_not_change_the_pose(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                version: str) -> None:
    """Law: the bones' world turn away from their bind (W · R⁻¹) does not depend on the
    bind rotations a model has."""
    vectors = np.stack([f.vector() for f in read_recording(DEMO)[1][::6]])
    stamps = list(range(0, 40_000 * len(vectors), 40_000))
    turns = []
    for bind in (None, seed):
        folder = tmp_path_factory.mktemp("bind")
        model = folder / "m.vrm"
        model.write_bytes(mannequin_as_vrm(version, bind_seed=bind))
        export_avatar_glb(vectors, stamps, model, folder / "t.glb")
        rest_gltf = pygltflib.GLTF2.load_from_bytes(model.read_bytes())
        _, rest = _file_fk(rest_gltf, {}, 1)
        gltf, keys, _ = _read_take(folder / "t.glb")
        _, rot = _file_fk(gltf, keys, len(stamps))
        turns.append({gltf.nodes[n].name: multiply(rot[:, n], conjugate(rest[0, n])) for n in keys})
    for name, turn in turns[0].items():
        assert rotation_angle_deg(turn, turns[1][name]).max() < 0.01, name


def test_model_is_kept_and_validates(models: dict[str, Path], exports: dict[str, Path]) -> None:
    for key in MODELS:
        before = pygltflib.GLTF2.load_from_bytes(models[key].read_bytes())
        after = pygltflib.GLTF2.load_binary(str(exports[key]))
        doc_before, doc_after = json.loads(before.to_json()), json.loads(after.to_json())
        grown = ("animations", "accessors", "bufferViews", "buffers")
        assert {k: v for k, v in doc_after.items() if k not in grown} == \
            {k: v for k, v in doc_before.items() if k not in grown}
        for part in grown[1:3]:
            assert doc_after[part][:len(doc_before[part])] == doc_before[part]
        assert doc_after["animations"][:-1] == doc_before["animations"]
        assert after.binary_blob()[:len(before.binary_blob())] == before.binary_blob()
        assert len(after.animations) == len(before.animations) + 1 and after.animations[-1].name == "posewire"
        report_in = validate_gltf(models[key])
        report = validate_gltf(exports[key])
        assert report["numErrors"] == 0 and report_in["numErrors"] == 0, report["messages"]
        # no issue the model did not have: a VRM 0.x's extension name "VRM" is not of the
        # VENDOR_name form (a warning of every 0.x file); a 1.0 file has none
        issues = {(m["code"], m["pointer"]) for m in report["messages"]}  # type: ignore[attr-defined]
        assert issues == {(m["code"], m["pointer"]) for m in report_in["messages"]}  # type: ignore[attr-defined]
        assert report["numWarnings"] == report_in["numWarnings"] == (0 if key == "1.0" else 1)
        assert all(m["pointer"] == "/extensionsUsed/0" for m in report["messages"])  # type: ignore[attr-defined]


def test_missing_optional_bones_get_stand_ins(tmp_path: Path, demo_vectors: tuple[np.ndarray, list[int]]) -> None:
    omitted = ["upperChest", "neck", "leftShoulder", "rightShoulder"]
    model = tmp_path / "lean.vrm"
    model.write_bytes(mannequin_as_vrm("1.0", omit=omitted))
    avatar = read_vrm(model.read_bytes())
    assert set(avatar.stand_ins) == {"spine_05", "neck_01", "clavicle_l", "clavicle_r"}
    out = tmp_path / "take.glb"
    summary = export_avatar_glb(*demo_vectors, model, out)
    assert summary.stand_ins == avatar.stand_ins and summary.joints_animated == 52 - len(omitted)
    # the real bones' world rotations are the decoder's on this skeleton (F = identity)
    vectors, stamps = demo_vectors
    pose = decode_pose(vectors, avatar.skeleton)
    positions, worlds = fk(avatar.skeleton, pose.local_rotations)
    gltf, keys, _ = _read_take(out)
    world, rot = _file_fk(gltf, keys, len(stamps))
    for canonical, node in avatar.nodes.items():
        assert rotation_angle_deg(rot[:, node], worlds[:, avatar.skeleton.index[canonical]]).max() < 0.01, canonical
    # a stand-in on its only child keeps that child where the decoder puts it
    for canonical in ("head", "upperarm_l", "upperarm_r"):
        np.testing.assert_allclose(world[:, avatar.nodes[canonical], :3, 3],
                                   positions[:, avatar.skeleton.index[canonical]], atol=2e-5)
    assert validate_gltf(out)["numErrors"] == 0


def test_bad_models_are_usage_avatar(tmp_path: Path, demo_vectors: tuple[np.ndarray, list[int]]) -> None:
    good = mannequin_as_vrm("1.0")
    cases = {
        "not a VRM": mannequin_glb(),
        "not a binary glTF": b'{"asset": {"version": "2.0"}}',
        "cannot be read": good[:200],
        "lacks required humanoid bones ['leftHand']": mannequin_as_vrm("1.0", omit=["leftHand"]),
        "lacks required humanoid bones ['hips']": mannequin_as_vrm("0.x", omit=["hips"]),
    }
    for words, data in cases.items():
        with pytest.raises(UsageError) as err:
            export_avatar_glb(*demo_vectors, data, tmp_path / "x.glb")
        assert err.value.code == "usage.avatar" and words in err.value.message, (words, err.value.message)
    # a bone that hangs from the wrong bone: the left hand's node named as the head
    gltf = pygltflib.GLTF2.load_from_bytes(good)
    bones = gltf.extensions["VRMC_vrm"]["humanoid"]["humanBones"]
    bones["head"], bones["leftHand"] = bones["leftHand"], bones["head"]
    with pytest.raises(UsageError) as err:
        read_vrm(b"".join(gltf.save_to_bytes()))
    assert err.value.code == "usage.avatar" and "hangs from" in err.value.message
    assert not (tmp_path / "x.glb").exists()


def test_export_command_on_a_vrm(tmp_path: Path, models: dict[str, Path],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from posewire.cli.command import main

    out = tmp_path / "take.glb"
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", str(models["0.x"])]) == 0
    assert "52 joints animated" in capsys.readouterr().out
    assert pygltflib.GLTF2.load_binary(str(out)).extensions.keys() == {"VRM"}
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", str(tmp_path / "none.vrm")]) == 1
    assert "nor a VRM file" in capsys.readouterr().err
    plain = tmp_path / "plain.glb"
    plain.write_bytes(mannequin_glb())
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", str(plain)]) == 1
    assert "(usage.avatar)" in capsys.readouterr().err
    assert main(["export", "--recording", str(DEMO), "--out", str(tmp_path / "t.vrma"),
                 "--avatar", str(models["1.0"])]) == 1
    assert "plays on any VRM avatar" in capsys.readouterr().err
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", "reference"]) == 1
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", "mannequin"]) == 0


@pytest.mark.skipif(
    NODE is None or not Path(CHROMIUM).exists() or not (JS_ROOT / "node_modules" / "@pixiv" / "three-vrm").is_dir(),
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")
@pytest.mark.parametrize("key", list(MODELS))
def test_take_plays_in_three_js(tmp_path: Path, models: dict[str, Path], exports: dict[str, Path], key: str,
                                demo_frames: list[RecordedFrame],
                                demo_vectors: tuple[np.ndarray, list[int]]) -> None:
    t0 = demo_frames[0].t_us
    picks = [0, len(demo_frames) // 3, len(demo_frames) - 1]
    times = [(demo_frames[k].t_us - t0) / 1e6 for k in picks]
    joints = ["Pelvis", "Spine3", "Head", "L_Shoulder", "L_Elbow", "R_Elbow", "R_Wrist", "R_Index2", "L_Thumb1",
              "L_Pinky3", "L_Knee"]
    shot = tmp_path / f"avatar-{key}.png"
    camera_z = 3.0 if key == "1.0" else -3.0  # in front of the model: 0.x faces −Z
    run = subprocess.run([NODE, str(JS_ROOT / "test" / "drive_avatar.mjs"), str(exports[key]),  # type: ignore[list-item]
                          json.dumps({"times": times, "nodes": joints, "camera_z": camera_z, "screenshot": str(shot)})],
                         capture_output=True, text=True, timeout=240, check=False)
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert "error" not in answer, (answer, run.stderr[-2000:])
    assert answer["page_errors"] == [] and all(o.startswith("http://127.0.0.1:") for o in answer["origins"])
    assert answer["animations"][-1] == "posewire" and answer["tracks"] == 52 and answer["skinned"] == 1
    # still a VRM to the consortium's loader (@pixiv/three-vrm), every humanoid bone found
    assert answer["vrm"]["meta_version"] == ("1" if key == "1.0" else "0")
    assert set(answer["vrm"]["bones"]) == set(VRM_HUMAN_BONES.values())
    skeleton, worlds = _mannequin_worlds(demo_vectors[0])
    want = _expected_file_worlds(models[key], key, worlds, skeleton)
    node_of = {n.name: i for i, n in enumerate(pygltflib.GLTF2.load_binary(str(exports[key])).nodes)}
    worst = 0.0
    for pose, k in zip(answer["poses"], picks, strict=True):
        for joint in joints:
            worst = max(worst, float(rotation_angle_deg(np.array(pose[joint]), want[node_of[joint]][k])))
    # float32 keys (and three.js's float32 interpolation) against the decoder's float64
    assert worst < 0.001, f"worst bone {worst:.5f}°"
    print(f"three.js {key}: worst bone {worst:.5f}°")
    assert shot.stat().st_size > 5_000
    keep = os.environ.get("POSEWIRE_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / f"avatar_{key.replace('.', '')}_three.png")


def _edited(data: bytes, edit: object) -> bytes:
    gltf = pygltflib.GLTF2.load_from_bytes(data)
    edit(gltf)  # type: ignore[operator]
    return b"".join(gltf.save_to_bytes())


def test_matrix_nodes_and_scaled_models(tmp_path: Path, models: dict[str, Path], exports: dict[str, Path],
                                        demo_vectors: tuple[np.ndarray, list[int]]) -> None:
    """A bone given by a matrix is rewritten as TRS (glTF 2.0 §3.11) with the same pose; a
    uniform scale above the skeleton changes no bone's world rotation (the decoder works
    in the model's own proportions); a non-uniform one is refused."""
    base = models["0.x"].read_bytes()
    gltf0, keys0, _ = _read_take(exports["0.x"])
    _, rot0 = _file_fk(gltf0, keys0, len(demo_vectors[1]))
    node_of = {n.name: i for i, n in enumerate(gltf0.nodes)}

    def as_matrix(gltf: pygltflib.GLTF2) -> None:
        for name in ("L_Elbow", "R_Wrist"):
            node = gltf.nodes[node_of[name]]
            x, y, z, w = node.rotation
            m = np.eye(4)
            m[:3, :3] = to_matrix([w, x, y, z])
            m[:3, 3] = node.translation
            node.matrix = [float(v) for v in m.T.reshape(-1)]
            node.translation = node.rotation = node.scale = None

    def scaled(factor: list[float]) -> object:
        def edit(gltf: pygltflib.GLTF2) -> None:
            gltf.nodes.append(pygltflib.Node(name="Armature", scale=factor, children=[node_of["root"]]))
            scene = gltf.scenes[gltf.scene or 0]
            scene.nodes = [n for n in scene.nodes if n != node_of["root"]] + [len(gltf.nodes) - 1]
        return edit

    for label, edit in (("matrix", as_matrix), ("scaled", scaled([2.0, 2.0, 2.0]))):
        model = tmp_path / f"{label}.vrm"
        model.write_bytes(_edited(base, edit))
        out = tmp_path / f"{label}.glb"
        export_avatar_glb(*demo_vectors, model, out)
        gltf, keys, _ = _read_take(out)
        assert all(gltf.nodes[n].matrix is None for n in keys)
        _, rot = _file_fk(gltf, keys, len(demo_vectors[1]))
        for n in keys:
            assert rotation_angle_deg(rot[:, n], rot0[:, n]).max() < 0.001, (label, gltf.nodes[n].name)
        assert validate_gltf(out)["numErrors"] == 0
    with pytest.raises(UsageError) as err:
        read_vrm(_edited(base, scaled([1.0, 2.0, 1.0])))
    assert err.value.code == "usage.avatar" and "non-uniform scale" in err.value.message


@pytest.mark.parametrize("key", list(MODELS))
def test_bvh_on_a_vrm_skeleton(tmp_path: Path, models: dict[str, Path], key: str,
                               demo_vectors: tuple[np.ndarray, list[int]],
                               capsys: pytest.CaptureFixture[str]) -> None:
    """``export --out take.bvh --avatar my.vrm``: the VRM's skeleton (its bone names, its
    proportions in the body frame), read back with bvhio: each joint's rotation is the
    decoder's turn of it relative to its parent's, G_parent⁻¹ · G_j, whatever the bind."""
    import bvhio

    from posewire.cli.command import main

    out = tmp_path / "take.bvh"
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", str(models[key])]) == 0
    assert f"joints of the VRM {key} avatar" in capsys.readouterr().out
    container = bvhio.readAsBvh(str(out))
    joints: list[object] = []

    def walk(joint: object) -> None:
        joints.append(joint)
        for child in joint.Children:  # type: ignore[attr-defined]
            walk(child)

    walk(container.Root)
    avatar = read_vrm(models[key].read_bytes())
    names = VRM_HUMAN_BONES if key == "1.0" else VRM0_HUMAN_BONES
    canonical_of = {v: k for k, v in names.items()} | {"root": "root"}
    assert sorted(j.Name for j in joints) == sorted(names.get(c, c)  # type: ignore[attr-defined]
                                                    for c in avatar.skeleton.names)
    skeleton, worlds = _mannequin_worlds(demo_vectors[0])
    mannequin_of = dict(MANNEQUIN_RETARGET.bones)
    worst = 0.0
    for joint in joints:
        canonical = canonical_of[joint.Name]  # type: ignore[attr-defined]
        j = avatar.skeleton.index[canonical]
        g = worlds[:, skeleton.index[mannequin_of[canonical]]]
        if j:
            parent = avatar.skeleton.names[avatar.skeleton.parents[j]]
            g = multiply(conjugate(worlds[:, skeleton.index[mannequin_of[parent]]]), g)
        got = np.array([[k.Rotation.w, k.Rotation.x, k.Rotation.y, k.Rotation.z]
                        for k in joint.Keyframes])  # type: ignore[attr-defined]
        worst = max(worst, float(rotation_angle_deg(got, g).max()))
    assert worst < 1e-3, f"worst joint {worst:.5f}°"  # 6 decimals of degrees written
