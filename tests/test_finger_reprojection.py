"""Fingers of real people (spec §4.3, §7.3): real MediaPipe recordings encoded, decoded onto
helix-humanoid@1 and rebuilt by FK (posewire.fidelity), against what the camera saw.

Fidelity figures, not timings. The bounds are the issue's targets — finger side on its rail
in at most 6 % of side values, fold in at most 2 %, no finger dropped, fingertip direction
median at most 7° (on the person's own proportions and on the avatar's) — on recordings that
meet them, and the figure measured when the finger
maths was last changed (spec §4.3, benchmarks/README.md "Real people") plus a small margin
on those that do not yet meet the tip target, so that a regression fails. The committed
signer always runs; a few of ../shared/data's recordings (the worst letters before the
change, a reduced-layout file) run where present (under CI a skip fails, tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posewire.codec.registry import REGISTRY
from posewire.codec.vector import LOWER, UPPER
from posewire.fidelity import reprojection

pytest.importorskip("pose_format", reason="pose-format>=0.15 is not installed")

from posewire.producers.landmarks import landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HERE = Path(__file__).resolve().parent / "data"
needs_shared = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared recordings not found at {DATA}")

#: recording -> the largest medians allowed (degrees) of the knuckle → tip direction on the
#: person's own proportions (the owner's measure, posewire.fidelity.person_fingers) and on the
#: avatar's: the 7° target where it is met, else the figure measured with the present maths
#: (spec §4.3 split curl, A50) + 1°.
TIP_MEDIAN_DEG = {
    # person 18.3°, avatar 20.9° (16.0° with the tip curl of A46/A47; last bone 22.6° → 17.5°;
    # 17.3°, 19.7° before the joints' backward limits of A52)
    HERE / "holistic_signer.pose": (19.3, 21.9),
}
SHARED = {
    # J: person 25.6°, avatar 25.6° (21.9° with the tip curl; last bone 14.5° → 11.9°)
    DATA / "fingerspelling-ase" / "fs-stsecaadae860da0bc2002490d4d1f2f650.pose": (26.6, 26.6),
    # G: person 50.7°, avatar 60.3° (27.9° with the tip curl): its index…pinky PIPs, read
    # 130–170°, stop at 110° and the rest goes to the fold (40 % of its curls at the limit)
    DATA / "fingerspelling-ase" / "fs-sts6feec7402302644466228e2518ea55ff.pose": (51.7, 61.3),
    DATA / "fingerspelling-ase" / "fs-sts4ecc496719efc4347d3c90ca8796355f.pose": (7.0, 8.3),  # P: 1.7°, 7.3°
    # the fists A and T: person 2.5°, 2.1°; avatar 14.1°, 9.6° (2.9°, 6.5° with the tip curl,
    # whose last bone was 76.7°, 51.6°: now 14.0°, 7.5°)
    DATA / "fingerspelling-ase" / "fs-stse28e9ac023b0e29ca0a3acc12dc46540.pose": (7.0, 15.1),
    DATA / "fingerspelling-ase" / "fs-sts9ac04fa08bf5dd15015724922a6604d8.pose": (7.0, 10.6),
    DATA / "fingerspelling-ase" / "fs-stsf6361531b087bba7e2d9f561cfd3bada.pose": (7.0, 7.0),  # B: 0.0°, 1.8°
    DATA / "7bd6dd48722def3cf84258b96371cb1e.pose": (7.0, 7.0),  # 2.2°, 3.2°
    DATA / "reduced-layout" / "sgg-essen.pose": (7.0, 7.0),  # 1.0°, 2.4°
}


def _rail_share(vectors: np.ndarray, key: str) -> float:
    """Share of finite finger values of the ``key`` kind (``_side_``, ``_fold_``; thumb
    included, as the benchmark's table) that sit on a registry bound."""
    idx = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers" and key in d.id]
    v = vectors[:, idx]
    finite = np.isfinite(v)
    rail = (np.abs(v - LOWER[idx]) < 1e-9) | (np.abs(v - UPPER[idx]) < 1e-9)
    return float((rail & finite).sum() / finite.sum())


def _check(path: Path, tip_median_deg: tuple[float, float]) -> None:
    landmarks = read_pose_file(path).landmarks
    result = landmarks_to_vectors(landmarks)
    rep = reprojection(landmarks, result)
    assert rep.finger_values > 0
    assert rep.fingers_dropped == 0  # spec §4.3, A44: only unmeasurable geometry drops a finger
    assert _rail_share(result.vectors, "_side_") <= 0.06, path.name
    assert _rail_share(result.vectors, "_fold_") <= 0.02, path.name
    assert float(np.median(rep.person_tip_deg)) <= tip_median_deg[0], path.name
    assert float(np.median(rep.tip_deg)) <= tip_median_deg[1], path.name
    # each index…pinky side on its rail is one counted clamp (never a silent one)
    railed = sum(int((np.abs(result.vectors[:, REGISTRY.index(f"g_{f}_side_{s}")]) == 1.0).sum())
                 for f in ("index", "middle", "ring", "pinky") for s in "lr")
    assert railed == sum(result.report.degenerate.get(f"fingers_side_clamped_{s}", 0) for s in "lr")


@pytest.mark.parametrize("path", sorted(TIP_MEDIAN_DEG), ids=lambda p: p.name)
def test_committed_recording_fingers_stay_off_their_rails(path: Path) -> None:
    _check(path, TIP_MEDIAN_DEG[path])


@needs_shared
@pytest.mark.parametrize("path", sorted(SHARED), ids=lambda p: p.name[:16])
def test_shared_recordings_fingers_stay_off_their_rails(path: Path) -> None:
    _check(path, SHARED[path])
