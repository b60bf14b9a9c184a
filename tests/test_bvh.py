"""BVH export (posewire.consumers.bvh): read back with a maintained BVH library (bvhio)
and checked against the decoder's own bones, frame by frame."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import conjugate_unchecked, multiply_unchecked
from posewire.consumers.bvh import (
    avatar_skeleton,
    bvh_text,
    euler_zxy_deg,
    quaternion_from_euler_zxy_deg,
    resample_rotations,
    write_bvh,
)
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import fk, helix_humanoid
from posewire.producers.recording import read_recording

bvhio = pytest.importorskip("bvhio")

DEMO = Path(__file__).resolve().parents[1] / "posewire" / "data" / "holistic_signer.jsonl"


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle between unit quaternions (w, x, y, z), degrees (from the relative rotation's
    vector part: accurate near zero, where an arccos of the dot product is not)."""
    rel = multiply_unchecked(conjugate_unchecked(np.asarray(a, float)), np.asarray(b, float))
    out: np.ndarray = np.degrees(2.0 * np.arctan2(np.linalg.norm(rel[..., 1:], axis=-1), np.abs(rel[..., 0])))
    return out


unit_quaternions = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=4, max_size=4).map(
    np.array).filter(lambda q: float(np.linalg.norm(q)) > 1e-3).map(lambda q: q / np.linalg.norm(q))


@given(unit_quaternions)
@example(np.array([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0]))  # x = +90°: gimbal lock
@example(np.array([math.cos(math.pi / 4), -math.sin(math.pi / 4), 0.0, 0.0]))  # x = −90°
@example(np.array([0.0, 0.0, 1.0, 0.0]))
def test_euler_zxy_round_trip(q: np.ndarray) -> None:
    angles = euler_zxy_deg(q)
    assert -90.0 <= angles[1] <= 90.0
    back = quaternion_from_euler_zxy_deg(angles)
    assert _angle_deg(back, q) < 1e-5


@given(st.lists(st.floats(-179.0, 179.0), min_size=3, max_size=3))
def test_euler_zxy_is_intrinsic_z_x_y(angles: list[float]) -> None:
    # the BVH convention, checked against SciPy: intrinsic rotations about Z, then X, then Y
    ours = quaternion_from_euler_zxy_deg(angles)
    scipy_xyzw = Rotation.from_euler("ZXY", angles, degrees=True).as_quat()
    theirs = np.array([scipy_xyzw[3], *scipy_xyzw[:3]])
    assert _angle_deg(ours, theirs) < 1e-6


def test_resample_keeps_a_steady_rate_frame_for_frame() -> None:
    rng = np.random.default_rng(3)
    rot = rng.normal(size=(5, 2, 4))
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)
    frame_time, out = resample_rotations(rot, [0, 33_333, 66_667, 100_000, 133_333])
    assert frame_time == pytest.approx(0.033333, abs=1e-6)
    assert out.shape == rot.shape
    np.testing.assert_allclose(np.abs(np.sum(out * rot, axis=-1)), 1.0, atol=1e-12)


def test_resample_interpolates_a_gap_on_the_arc() -> None:
    # frames at 0, 1, 3 (units of 10 ms): the frame at 2 is halfway between 1 and 3
    half_turn_z = np.array([0.0, 0.0, 0.0, 1.0])
    rest = np.array([1.0, 0.0, 0.0, 0.0])
    rot = np.stack([rest, rest, half_turn_z])[:, None, :]
    rot[2, 0] = [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]  # 90° about z
    frame_time, out = resample_rotations(rot, [0, 10_000, 30_000])
    assert frame_time == pytest.approx(0.015)  # median of 10 ms and 20 ms
    assert out.shape[0] == 3  # 0, 15, 30 ms
    # 15 ms: a quarter of the way from frame 1 (10 ms) to frame 2 (30 ms): 22.5° about z
    assert _angle_deg(out[1, 0], rest) == pytest.approx(22.5, abs=1e-9)
    assert _angle_deg(out[2, 0], rot[2, 0]) < 1e-9


@pytest.mark.parametrize("stamps, code", [
    ([0, 0], "usage.bad_option"), ([0, float("nan")], "usage.not_finite"), ([0], "usage.shape")])
def test_resample_rejects_bad_timestamps(stamps: list[float], code: str) -> None:
    rot = np.tile([1.0, 0.0, 0.0, 0.0], (2, 1, 1))
    with pytest.raises(UsageError) as err:
        resample_rotations(rot, stamps)
    assert err.value.code == code


@pytest.fixture(scope="module")
def demo() -> tuple[np.ndarray, np.ndarray]:
    _, frames = read_recording(DEMO)
    return np.stack([f.vector() for f in frames]), np.array([f.t_us for f in frames], dtype=np.float64)


def _bvh_joints(root: object) -> list[object]:
    out = [root]
    for child in root.Children:  # type: ignore[attr-defined]
        out.extend(_bvh_joints(child))
    return out


@pytest.mark.parametrize("avatar", ["reference", "mannequin"])
def test_demo_bvh_reads_back_as_the_decoders_bones(tmp_path: Path, demo: tuple[np.ndarray, np.ndarray],
                                                  avatar: str) -> None:
    vectors, stamps = demo
    path = tmp_path / "demo.bvh"
    summary = write_bvh(vectors, stamps, path, avatar=avatar)
    skeleton, retarget = avatar_skeleton(avatar)
    canon = retarget.apply(skeleton)
    pose = decode_pose(vectors, canon.skeleton)
    _, expected = resample_rotations(pose.local_rotations, stamps)
    assert summary.frames == expected.shape[0] == len(vectors)  # the demo is at a steady rate
    assert summary.bytes == path.stat().st_size

    container = bvhio.readAsBvh(str(path))
    assert container.FrameCount == summary.frames
    assert container.FrameTime == pytest.approx(summary.frame_time_s, rel=1e-6)
    joints = _bvh_joints(container.Root)
    assert sorted(j.Name for j in joints) == sorted(skeleton.names)  # the avatar's own names, depth first
    index = {n: i for i, n in enumerate(skeleton.names)}
    # rotations: bvhio's own Euler reading of the file == the decoder's local rotations
    # (identity rest rotations on both avatars: module docstring), to the 6 decimals written
    read = np.empty_like(expected)
    for joint in joints:
        for f, key in enumerate(joint.Keyframes):
            r = key.Rotation
            read[f, index[joint.Name]] = [r.w, r.x, r.y, r.z]
    error = _angle_deg(read, expected)
    assert error.max() < 1e-4, f"worst {error.max():.2e}°"
    # offsets in the avatar's proportions: the rest world positions
    rest_pos, _ = skeleton.rest_world()
    for joint in joints:
        k = index[joint.Name]
        parent = skeleton.parents[k]
        want = rest_pos[k] - (rest_pos[parent] if parent >= 0 else 0.0)
        np.testing.assert_allclose(list(joint.Offset), want, atol=1e-6)


def test_demo_bvh_world_positions_match_forward_kinematics(tmp_path: Path,
                                                           demo: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, stamps = demo
    path = tmp_path / "demo.bvh"
    write_bvh(vectors[:20], stamps[:20], path)
    skeleton = helix_humanoid()
    positions, _ = fk(skeleton, decode_pose(vectors[:20], skeleton).local_rotations)
    root = bvhio.readAsHierarchy(str(path))
    by_name = {j.Name: j for j, _, _ in root.layout()}
    for frame in (0, 7, 19):
        root.loadPose(frame, recursive=True)
        for name in ("hand_l", "hand_r", "index_03_r", "thumb_03_l", "head", "calf_l"):
            got = np.array(list(by_name[name].PositionWorld))
            np.testing.assert_allclose(got, positions[frame, skeleton.index[name]], atol=2e-5)


def test_bvh_of_an_avatar_with_bind_rotations_poses_the_same_world() -> None:
    # a skeleton whose joints carry rest rotations: the file (identity rest) must pose the
    # same world positions as the skeleton does
    skeleton = helix_humanoid()
    rng = np.random.default_rng(11)
    bind = rng.normal(size=(len(skeleton), 4))
    bind /= np.linalg.norm(bind, axis=-1, keepdims=True)
    rest_pos, _ = skeleton.rest_world()
    rotated = type(skeleton).from_world(skeleton.names, skeleton.parents, rest_pos, bind)
    local = rng.normal(size=(3, len(skeleton), 4))
    local /= np.linalg.norm(local, axis=-1, keepdims=True)
    want, _ = fk(rotated, local)
    text = bvh_text(rotated, 1 / 30, local)
    # parse the motion back by hand and pose the file's own identity-rest skeleton
    lines = text.splitlines()
    motion = lines.index("MOTION")
    values = np.array([[float(v) for v in line.split()] for line in lines[motion + 3:]])
    file_local = quaternion_from_euler_zxy_deg(values[:, 3:].reshape(3, len(skeleton), 3))
    # the file lists joints depth first; helix_humanoid is already in an order whose
    # depth-first walk we rebuild from the OFFSET lines
    names = [line.split()[1] for line in lines if line.strip().startswith(("ROOT", "JOINT"))]
    order = [skeleton.index[n] for n in names]
    unrotated = type(skeleton).from_world(skeleton.names, skeleton.parents, rest_pos)
    per_joint = np.empty_like(file_local)
    per_joint[:, order] = file_local
    got, _ = fk(unrotated, per_joint)
    np.testing.assert_allclose(got, want, atol=2e-5)
    # and the file's world rotations carry the rest pose onto the posed one
    _, world = fk(rotated, local)
    _, rest_world = rotated.rest_world()
    _, file_world = fk(unrotated, per_joint)
    delta = multiply_unchecked(world, conjugate_unchecked(rest_world)[None])
    assert _angle_deg(file_world, delta).max() < 1e-4


def test_bvh_text_rejects_bad_input() -> None:
    skeleton = helix_humanoid()
    good = np.tile([1.0, 0.0, 0.0, 0.0], (1, len(skeleton), 1))
    with pytest.raises(UsageError) as err:
        bvh_text(skeleton, 0.0, good)
    assert err.value.code == "usage.bad_option"
    with pytest.raises(UsageError) as err:
        bvh_text(skeleton, 1 / 30, good[:, :3])
    assert err.value.code == "usage.shape"
    with pytest.raises(UsageError) as err:
        bvh_text(skeleton, 1 / 30, good, names=("a b",) * len(skeleton))
    assert err.value.code == "usage.bad_option"
    with pytest.raises(UsageError) as err:
        write_bvh(np.zeros((1, 3)), [0], "/nonexistent/x.bvh")
    assert err.value.code == "usage.shape"
    with pytest.raises(UsageError) as err:
        avatar_skeleton("robot")
    assert err.value.code == "usage.bad_option"


def test_export_command_writes_bvh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from posewire.cli.command import main

    out = tmp_path / "take.bvh"
    assert main(["export", "--recording", str(DEMO), "--out", str(out), "--avatar", "mannequin"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "mannequin avatar" in printed
    assert out.read_text().startswith("HIERARCHY\nROOT root\n")
    assert main(["export", "--recording", str(DEMO), "--out", str(tmp_path / "take.fbx")]) == 1
    assert "(usage.bad_option)" in capsys.readouterr().err
    assert main(["export", "--recording", str(DEMO), "--out", str(tmp_path / "t.glb"),
                 "--avatar", "reference"]) == 1
    assert "on the mannequin or on your VRM model" in capsys.readouterr().err


JS_ROOT = Path(__file__).resolve().parents[1] / "js"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")


@pytest.mark.skipif(
    NODE is None or not Path(CHROMIUM).exists() or not (JS_ROOT / "node_modules" / "playwright-core").is_dir(),
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")
def test_demo_bvh_in_three_js_bvhloader(tmp_path: Path, demo: tuple[np.ndarray, np.ndarray]) -> None:
    # three.js's BVHLoader in Chromium poses the file's joints where the decoder puts them
    vectors, stamps = demo
    path = tmp_path / "demo.bvh"
    summary = write_bvh(vectors, stamps, path)
    skeleton = helix_humanoid()
    positions, _ = fk(skeleton, decode_pose(vectors, skeleton).local_rotations)
    frames = [0, summary.frames // 2, summary.frames - 1]
    joints = ["pelvis", "head", "hand_l", "hand_r", "index_03_r", "thumb_03_l", "lowerarm_r"]
    shot = tmp_path / "bvh.png"
    run = subprocess.run([NODE, str(JS_ROOT / "test" / "drive_bvh.mjs"), str(path),  # type: ignore[list-item]
                          json.dumps({"frames": frames, "joints": joints, "screenshot": str(shot)})],
                         capture_output=True, text=True, timeout=180, check=False)
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert "error" not in answer, (answer, run.stderr[-2000:])
    assert answer["page_errors"] == []
    assert answer["frames"] == summary.frames
    assert answer["frame_time"] == pytest.approx(summary.frame_time_s, rel=1e-6)
    assert sorted(b for b in answer["bones"] if b != "ENDSITE") == sorted(skeleton.names)  # + End Sites
    assert {o for o in answer["origins"]} <= {o for o in answer["origins"] if o.startswith("http://127.0.0.1:")}
    for k in frames:
        for name in joints:
            got = np.array(answer["positions"][str(k)][name])
            np.testing.assert_allclose(got, positions[k, skeleton.index[name]], atol=1e-4,
                                       err_msg=f"frame {k} {name}")
    assert shot.stat().st_size > 5_000
    keep = os.environ.get("POSEWIRE_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / "bvh_three.png")
