"""The live path encodes one frame at a time: each single-frame call of
landmarks_to_vectors equals its row of the batch call (issue 8 point 5, spec §4.1–§4.5)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from posewire.groundtruth import noise, random_vectors, render
from posewire.producers.landmarks import HolisticLandmarks, landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file

SIGNER = Path(__file__).parent / "data" / "holistic_signer.pose"


def _one(lm: HolisticLandmarks, i: int) -> HolisticLandmarks:
    def cut(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[i:i + 1]

    return HolisticLandmarks(lm.pose_world[i:i + 1], lm.pose_visibility[i:i + 1], lm.left_hand[i:i + 1],
                             lm.right_hand[i:i + 1], cut(lm.face), cut(lm.hand_scale), cut(lm.pose_image))


def _ground_truth() -> HolisticLandmarks:
    rng = np.random.default_rng(8)
    gt = render(random_vectors(rng, 40), view_yaw_deg=rng.uniform(-45, 45, 40)).landmarks
    return noise(gt, rng, xy=0.002, depth=0.006)


@pytest.mark.parametrize("source", ["signer", "ground_truth"])
@pytest.mark.parametrize("mirrored", ["report", "flip"])
def test_single_frames_equal_the_batch(source: str, mirrored: str) -> None:
    lm = read_pose_file(SIGNER).landmarks if source == "signer" else _ground_truth()
    batch = landmarks_to_vectors(lm, mirrored=mirrored)  # type: ignore[arg-type]
    degenerate: Counter[str] = Counter()
    clamped: Counter[str] = Counter()
    for i in range(lm.batch):
        one = landmarks_to_vectors(_one(lm, i), calibration=batch.calibration, mirrored=mirrored)  # type: ignore[arg-type]
        assert one.vectors.shape == (1, batch.vectors.shape[1])
        np.testing.assert_array_equal(np.isnan(one.vectors[0]), np.isnan(batch.vectors[i]))
        np.testing.assert_allclose(one.vectors[0], batch.vectors[i], rtol=0, atol=1e-9, equal_nan=True)
        assert {p: str(s[0]) for p, s in one.tracking.items()} == {p: str(s[i]) for p, s in batch.tracking.items()}
        degenerate.update(one.report.degenerate)
        clamped.update(one.report.clamped)
    # per-frame counts add up to the batch's (Counter drops zero counts on both sides)
    assert +degenerate == +Counter(batch.report.degenerate)
    assert +clamped == +Counter(batch.report.clamped)
