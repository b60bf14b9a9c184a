"""The compiled float kernels (mypyc, :mod:`posewire.native`) against the pure-Python
modules they are built from, bit for bit (spec §1.5).

The pure modules are the reference and are always installed; ``setup.py`` compiles them
where it can. Here: the live encoder (landmarks, both hands, the face transform and mesh,
the live calibration) over the committed signer and ground truth, in two processes, one
with ``POSEWIRE_PURE_PYTHON=1``; and, in this process, the pure ``hand_single`` and
``landmarks_single`` (and the decoder's ``ik_single``) loaded from their sources beside the
modules in use, on random frames and arms.
Where nothing was compiled both sides are the pure modules and the laws hold trivially;
the rest of the suite runs against either build (``POSEWIRE_PURE_PYTHON=1 pytest``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posewire.native
from posewire.consumers import ik_single
from posewire.groundtruth import noise, random_vectors, render
from posewire.producers import hand_single, landmarks_single
from posewire.producers.landmarks import HolisticLandmarks, estimate_calibration

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import posewire.native
import fidelity_bench as fb
from posewire.producers.live import LiveEncoder
pf = fb.read_pose_file(fb.RECORDINGS[0])
rng = np.random.default_rng(3)
truth = fb.noise(fb.render(fb.random_vectors(rng, 40), view_yaw_deg=rng.uniform(-45, 45, 40)).landmarks, rng)
out = []
for lm in (pf.landmarks, truth):
    encoder = LiveEncoder()
    for o in fb._observations(lm, pf.landmarks.face, 5) * 2:
        got = encoder.encode(o)
        out.append([got.vector.tobytes().hex(), sorted(got.tracked),
                    None if got.calibration is None else repr(got.calibration)])
    out.append(sorted(encoder.report.clamped.items()) + sorted(encoder.report.notes.items()))
print(json.dumps({"status": posewire.native.STATUS, "frames": out}))
"""


def _run(pure: bool) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_PURE_PYTHON"}
    if pure:
        env["POSEWIRE_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(ROOT / "benchmarks")], capture_output=True, text=True,
                          check=True, env=env, cwd=ROOT, timeout=600)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_live_encoder_is_the_same_compiled_and_pure() -> None:
    pure, default = _run(True), _run(False)
    assert pure["status"] == "pure Python (POSEWIRE_PURE_PYTHON is set)"
    assert default["status"] == "compiled" or str(default["status"]).startswith("pure Python (")
    # every vector bit for bit, the tracked parts, the calibrations sent, the report
    assert default["frames"] == pure["frames"]


def _pure(module: ModuleType) -> ModuleType:
    """``module`` loaded again from its ``.py`` source under another name (pure Python)."""
    source = posewire.native.source_of(module.__name__)  # (a compiled module's __file__ is mypyc's)
    assert source is not None
    spec = importlib.util.spec_from_file_location(f"_pure_{module.__name__.replace('.', '_')}", source)
    assert spec is not None and spec.loader is not None
    out = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(out)
    return out


_PURE_HAND = _pure(hand_single)
_PURE_LANDMARKS = _pure(landmarks_single)
_PURE_IK = _pure(ik_single)


def _frame(seed: int) -> HolisticLandmarks:
    rng = np.random.default_rng(seed)
    return noise(render(random_vectors(rng, 1), view_yaw_deg=rng.uniform(-60, 60, 1)).landmarks, rng)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1.0, 1.75, 3.0]), st.booleans())
def test_hand_dims1_compiled_equals_pure(seed: int, gain: float, flat: bool) -> None:
    lm = _frame(seed)
    frame = _PURE_LANDMARKS.prepare1(lm, visibility_threshold=0.5)
    for side in ("l", "r"):
        points = frame.hands[side]
        if points is None:
            continue
        if flat:  # monocular depth read backward: the depth-flip branch
            points = [(x, y, -z) for x, y, z in points]
        args = (frame.axes,)
        got = hand_single.hand_dims1(hand_single.with_depth_gain1(points, gain), *args, side=side,
                                     depth_ambiguous=True)
        want = _PURE_HAND.hand_dims1(_PURE_HAND.with_depth_gain1(points, gain), *args, side=side,
                                     depth_ambiguous=True)
        assert repr(got) == repr(want)  # NaN-aware, bit for bit (repr round-trips a float)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["report", "flip"]))
def test_encode1_compiled_equals_pure(seed: int, mirrored: str) -> None:
    lm = _frame(seed)
    cal = estimate_calibration(lm)
    got = landmarks_single.encode1(lm, cal, visibility_threshold=0.5, mirrored=mirrored)  # type: ignore[arg-type]
    want = _PURE_LANDMARKS.encode1(lm, cal, visibility_threshold=0.5, mirrored=mirrored)  # type: ignore[arg-type]
    assert got.vectors.tobytes() == want.vectors.tobytes()
    assert got.report == want.report
    assert {p: str(s[0]) for p, s in got.tracking.items()} == {p: str(s[0]) for p, s in want.tracking.items()}
    samples = landmarks_single.samples1(landmarks_single.prepare1(lm, visibility_threshold=0.5),
                                        visibility_threshold=0.5, hand_scale=0.9)
    pure = _PURE_LANDMARKS.samples1(_PURE_LANDMARKS.prepare1(lm, visibility_threshold=0.5),
                                    visibility_threshold=0.5, hand_scale=0.9)
    assert repr(samples) == repr(pure)


def test_status_names_the_build() -> None:
    assert posewire.native.STATUS == "compiled" or posewire.native.STATUS.startswith("pure Python (")
    assert posewire.native.compiled() == (posewire.native.STATUS == "compiled")


@pytest.mark.parametrize("name", posewire.native.NATIVE)
def test_every_native_module_has_its_pure_source(name: str) -> None:
    importlib.import_module(name)
    source = posewire.native.source_of(name)
    assert source is not None and source.is_file()


def test_setup_and_makefile_compile_the_same_modules() -> None:
    # setup.py compiles NATIVE; the Makefile recompiles when one of their sources changes
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    native = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "NATIVE" for t in node.targets))
    compiled = ast.literal_eval(native)
    assert tuple(compiled) == posewire.native.NATIVE
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    sources = next(line for line in makefile.splitlines() if line.startswith("NATIVE_SOURCES :=")).split(":=")[1]
    assert sorted(sources.split()) == sorted(compiled.values())


_COORD = st.floats(-2.0, 2.0, allow_nan=False)
_DIRECTION = st.tuples(_COORD, _COORD, _COORD).filter(lambda v: sum(x * x for x in v) > 1e-6)


def _unit(v: tuple[float, float, float]) -> tuple[float, float, float]:
    n = sum(x * x for x in v) ** 0.5
    return (v[0] / n, v[1] / n, v[2] / n)


@settings(max_examples=60, deadline=None)
@given(st.tuples(_COORD, _COORD, _COORD), _DIRECTION, st.floats(0.05, 0.5), _DIRECTION, st.floats(0.05, 0.5),
       st.tuples(_COORD, _COORD, _COORD), st.floats(-1.0, 1.0), _DIRECTION, st.sampled_from([-1.0, 1.0]))
def test_arm1_compiled_equals_pure(shoulder: tuple[float, float, float], upper: tuple[float, float, float],
                                   a_len: float, lower: tuple[float, float, float], b_len: float,
                                   target: tuple[float, float, float], spread: float,
                                   lateral: tuple[float, float, float], fixed: float) -> None:
    # the decoder's one-frame arm (spec §4.1): every output bit for bit, targets anywhere
    # (inside, beyond and at the shoulder: the clamped and degenerate branches)
    args = (shoulder, _unit(upper), a_len, _unit(lower), b_len, target, spread, _unit(lateral), fixed)
    assert repr(ik_single.arm1(*args)) == repr(_PURE_IK.arm1(*args))
    assert repr(ik_single.arm1(*args[:5], shoulder, *args[6:])) == repr(_PURE_IK.arm1(*args[:5], shoulder, *args[6:]))
