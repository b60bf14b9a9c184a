"""The JavaScript decoder (js/posewire/decoder.mjs) against the Python one.

The same vectors are decoded by :func:`posewire.consumers.pose.decode_pose` and
:func:`posewire.consumers.face.face_weights` (run now, not frozen fixtures) and by the
JavaScript client in Node; local rotations of every joint and the ARKit / viseme weights
must agree to 1e-9 on two skeletons: helix-humanoid@1 (A-pose) and the mannequin-x
wooden mannequin (T-pose, the viewer's avatar).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from posewire.codec.registry import ARKIT_CHANNELS, VISEMES
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.consumers.face import face_weights
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton, helix_humanoid
from posewire.producers.recording import read_recording

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "js" / "test" / "decode.mjs"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def skeleton_json(skel: Skeleton) -> dict[str, Any]:
    pos, rot = skel.rest_world()
    from posewire.codec.quaternion import rotate_unchecked
    sites = {n: [skel.names[j], (pos[j] + rotate_unchecked(rot[j], off)).tolist()]
             for n, (j, off) in skel.sites.items()}
    return {"names": list(skel.names), "parents": [int(p) for p in skel.parents],
            "positions": pos.tolist(), "rotations": rot.tolist(), "sites": sites}


def run_js(skel: Skeleton, frames: np.ndarray, mouthing: list[list[float] | None]) -> dict[str, Any]:
    doc = {"skeleton": skeleton_json(skel),
           "frames": [[None if np.isnan(x) else float(x) for x in f] for f in frames],
           "mouthing": mouthing}
    done = subprocess.run([str(NODE), str(SCRIPT)], input=json.dumps(doc), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def vectors() -> tuple[np.ndarray, list[list[float] | None]]:
    rng = np.random.default_rng(9)
    _, recs = read_recording(ROOT / "tests" / "data" / "wave.jsonl")
    recorded = np.stack([r.vector() for r in recs[::15]])  # real masks: NaN = default
    uniform = rng.uniform(LOWER, UPPER, size=(12, N_DIMS))  # anywhere in range
    wild = rng.uniform(-1.6, 1.6, size=(4, N_DIMS))  # out of range: clamped, reported
    wild[0, :5] = np.nan
    frames = np.concatenate([recorded, uniform, wild])
    mouthing: list[list[float] | None] = []
    for i in range(len(frames)):
        if i % 3 == 0:
            mouthing.append(None)
        else:
            mix = rng.dirichlet(np.ones(len(VISEMES))) * (0.5 if i % 3 == 1 else 1.4)
            mouthing.append(mix.tolist())
    return frames, mouthing


def same_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # q and -q are the same rotation
    out: np.ndarray = np.minimum(np.abs(a - b).max(axis=-1), np.abs(a + b).max(axis=-1))
    return out


@pytest.mark.parametrize("which", ["helix", "mannequin"])
def test_js_decoder_equals_python(which: str) -> None:
    if which == "helix":
        skel = helix_humanoid()
    else:
        from posewire.consumers.gltf import mannequin_skeleton
        base, retarget = mannequin_skeleton()
        skel = retarget.apply(base).skeleton
    frames, mouthing = vectors()
    js = run_js(skel, frames, mouthing)
    py = decode_pose(frames, skel).local_rotations
    got = np.array(js["local"])
    assert got.shape == py.shape
    err = same_rotation(got, py)
    assert err.max() < 1e-9, (err.max(), np.unravel_index(err.argmax(), err.shape))
    for i, f in enumerate(frames):
        face = face_weights(f, capability="viseme15", visemes=mouthing[i])
        want = np.array([float(face.arkit[c]) for c in ARKIT_CHANNELS])
        have = np.array([js["arkit"][i][c] for c in ARKIT_CHANNELS])
        np.testing.assert_allclose(have, want, atol=1e-12)
        np.testing.assert_allclose([js["visemes"][i][v] for v in VISEMES],
                                   [float(face.visemes[v]) for v in VISEMES], atol=1e-12)
    # the decode moved the bones: not a decoder that returns the rest pose
    assert (same_rotation(got, np.array([1.0, 0, 0, 0])) > 0.1).any(axis=1).all()
    # out-of-range and NaN dims are reported, not silently clamped
    report = js["report"][-4]
    assert report["replaced"] and report["clamped"]
