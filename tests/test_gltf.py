"""glTF export sink (posewire.consumers.gltf, posewire export): files checked by the real Khronos
glTF-Validator (tests/gltf, npm ``gltf-validator`` pinned in package-lock.json), keyframes,
and the exported rotations driven through FK (spec §4.1: a raised arm raises the hand)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pygltflib
import pytest
from gltfutil import validate_gltf

from posewire.cli import export as export_cli
from posewire.codec.errors import UsageError
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.consumers.gltf import MANNEQUIN_RETARGET, export_glb, mannequin_mesh, mannequin_skeleton
from posewire.consumers.skeleton import fk
from posewire.producers.recording import read_recording

ROOT = Path(__file__).resolve().parent.parent
WAVE = ROOT / "tests" / "data" / "wave.jsonl"
N_WAVE = 30  # frames of the wave recording used (0.5 s at 60 fps)


@pytest.fixture(scope="module")
def wave() -> tuple[np.ndarray, np.ndarray]:
    """A hanging right arm (registry defaults, t = 0) then N_WAVE frames of the recorded
    wave (right arm raised beside the head) from t = 0.5 s: (T, N) vectors, (T,) µs."""
    _, frames = read_recording(WAVE)
    vectors = np.vstack([DEFAULTS[None], np.stack([f.vector() for f in frames[:N_WAVE]])])
    times = np.array([0] + [500_000 + f.t_us for f in frames[:N_WAVE]], dtype=np.int64)
    return vectors, times


@pytest.fixture(scope="module")
def exported(wave: tuple[np.ndarray, np.ndarray], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gltf") / "wave.glb"
    export_glb(*wave, path)
    return path


def _accessor(gltf: pygltflib.GLTF2, index: int) -> np.ndarray:
    acc = gltf.accessors[index]
    view = gltf.bufferViews[acc.bufferView]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4, "MAT4": 16}[acc.type]
    dtype = {pygltflib.FLOAT: np.float32, pygltflib.UNSIGNED_SHORT: np.uint16,
             pygltflib.UNSIGNED_INT: np.uint32}[acc.componentType]
    blob = gltf.binary_blob()
    start = view.byteOffset + (acc.byteOffset or 0)
    data = np.frombuffer(blob, dtype=dtype, count=acc.count * width, offset=start)
    return data.reshape(acc.count, width) if width > 1 else data


def test_validator_reports_no_errors(exported: Path) -> None:
    report = validate_gltf(exported)
    assert report["numErrors"] == 0, report["messages"]
    assert report["numWarnings"] == 0, report["messages"]
    info = report["info"]
    assert isinstance(info, dict) and info["hasSkins"] and info["animationCount"] == 1


def test_validator_is_not_vacuous(exported: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.glb"
    broken.write_bytes(exported.read_bytes()[: 4096])  # truncated: must be an error
    assert validate_gltf(broken)["numErrors"] != 0


def test_keyframes_and_rotations_raise_the_hand(exported: Path, wave: tuple[np.ndarray, np.ndarray]) -> None:
    _, times = wave
    gltf = pygltflib.GLTF2.load_binary(exported)
    skel, _ = mannequin_skeleton()
    (anim,) = gltf.animations
    assert len(anim.channels) == len(skel) - 1  # every mannequin joint, not the added root
    node_joint = {1 + j: j for j in range(len(skel))}  # node 0 is the mesh node
    local = np.tile(skel.rest_rotations, (len(times), 1, 1))
    for ch in anim.channels:
        sampler = anim.samplers[ch.sampler]
        assert ch.target.path == "rotation" and sampler.interpolation == "LINEAR"
        t = _accessor(gltf, sampler.input)
        np.testing.assert_allclose(t, (times - times[0]) / 1e6, atol=1e-6)  # seconds from the first
        xyzw = _accessor(gltf, sampler.output).astype(np.float64)
        assert xyzw.shape == (len(times), 4)  # one keyframe per frame
        local[:, node_joint[ch.target.node]] = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    pos, _ = fk(skel, local)
    ix = skel.index
    hand = pos[:, ix["R_Wrist"], 1]
    shoulder = pos[:, ix["R_Shoulder"], 1]
    # arm hangs at t = 0 (registry default), then is raised beside the head (wave.jsonl)
    assert hand[0] < shoulder[0] - 0.3
    assert (hand[1:] > shoulder[1:] + 0.1).all()
    assert (hand[1:] > hand[0] + 0.4).all()
    # the right hand is the character's right: -X (spec §2.1); the left stays at +X
    assert (pos[:, ix["R_Wrist"], 0] < 0).all() and (pos[:, ix["L_Wrist"], 0] > 0).all()


def test_mannequin_rig_and_retarget() -> None:
    skel, retarget = mannequin_skeleton()
    assert retarget is MANNEQUIN_RETARGET and skel.names[0] == "root" and len(skel) == 55
    result = retarget.apply(skel)
    assert "spine_02" in result.skipped and "hand_r" in result.skeleton.names
    pos, _ = skel.rest_world()
    ix = skel.index
    assert pos[ix["L_Shoulder"], 0] > 0 > pos[ix["R_Shoulder"], 0]  # SMPL-X L_ = +X (spec §2.1)
    assert pos[ix["Head"], 1] > pos[ix["Pelvis"], 1] > pos[ix["L_Ankle"], 1]
    assert pos[ix["L_Foot"], 2] > pos[ix["L_Ankle"], 2]  # toes forward, +Z
    mesh = mannequin_mesh()
    assert abs(float(mesh.positions[:, 1].min())) < 1e-6  # feet on Y = 0
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-5)
    assert int(mesh.joints.max()) < len(skel)


@pytest.mark.parametrize("bad", [
    np.array([0.0, np.nan, 2e4]),        # NaN timestamp
    np.array([0.0, 2e4, 2e4]),           # not increasing
    np.array([0.0, 2e4, 1e4]),           # decreasing
    np.array([0.0, 2e4]),                # wrong length
])
def test_bad_timestamps(bad: np.ndarray, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        export_glb(np.tile(DEFAULTS, (3, 1)), bad, tmp_path / "x.glb")
    assert not (tmp_path / "x.glb").exists()


def test_bad_vectors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        export_glb(np.zeros((2, N_DIMS - 1)), [0, 1], tmp_path / "x.glb")
    with pytest.raises(UsageError):
        export_glb(np.zeros((2, N_DIMS)), [0, 1], tmp_path / "x.glb",
                   skeleton=mannequin_skeleton()[0].without(["L_Hand"]))


def _cli(argv: list[str]) -> int:
    # the sub-command as posewire/cli/command.py wires it (export_cli.add_parser)
    parser = argparse.ArgumentParser(prog="posewire")
    export_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


def test_cli_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "anim.glb"
    assert _cli(["export", "--recording", str(WAVE), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert out.stat().st_size > 0
    assert "120 frames" in text and "54 joints animated" in text
    assert _cli(["export", "--recording", str(tmp_path / "missing.jsonl"), "--out", str(out)]) == 1
    assert "posewire export:" in capsys.readouterr().err
