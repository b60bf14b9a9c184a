"""The live path encodes one frame at a time: each single-frame call of
landmarks_to_vectors (the Python-float path, producers.landmarks_single) equals its row of
the batch call, and the numpy path on the same frame, in every dim, tracking state and
report entry (spec §2.2, §3.1, §4.1–§4.5)."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.groundtruth import noise, random_vectors, render
from posewire.producers.landmarks import (
    FACE_POINTS,
    POSE_POINTS,
    HolisticLandmarks,
    LandmarkCalibration,
    LandmarkResult,
    _encode_batch,
    landmarks_to_vectors,
)
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


# ---------------------------------------------------------------------------- the B = 1 path
# landmarks_to_vectors on one frame runs producers.landmarks_single.encode1 (Python floats);
# _encode_batch is the numpy path on the same frame. Every dim, tracking state and report
# entry must agree, over ground truth with and without noise and every failure mode.

_POOL = 24


@functools.cache
def _pool() -> tuple[HolisticLandmarks, LandmarkCalibration]:
    rng = np.random.default_rng(80)
    vec = random_vectors(rng, _POOL)
    # exact zeros (signed zeros decide atan2 at ±π on degenerate input): an upright torso,
    # a frontal head, facing the camera; straight thumbs (roll unobservable)
    vec[:4, [REGISTRY.index(i) for i in ("b_yaw", "b_pitch", "b_roll", "h_yaw", "h_pitch", "h_roll")]] = 0.0
    vec[4:8, [REGISTRY.index(f"g_thumb_curl_{s}") for s in "lr"]] = 0.0
    view = rng.uniform(-45, 45, _POOL)
    view[:3] = 0.0
    lm = render(vec, view_yaw_deg=view).landmarks
    return lm, landmarks_to_vectors(lm).calibration


_MUTATIONS = ("no_left", "no_right", "no_face", "face_478", "nan_pose_point", "nan_hand_point", "nan_face_point",
              "hands_only", "swap_labels", "selfie", "no_pose_image", "hips_unseen", "wrist_unseen",
              "collapsed_hand", "zero_phalanx", "straight_arm", "shoulders_together", "hips_turned",
              "far_away", "finger_along_normal", "depth_flip", "finger_sideways", "float32")


@st.composite
def frames(draw: st.DrawFn) -> tuple[HolisticLandmarks, str]:
    """One frame of the pool, with noise and any set of failure modes."""
    lm, _ = _pool()
    lm = _one(lm, draw(st.integers(0, _POOL - 1)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    level = draw(st.sampled_from([0.0, 0.001, 0.002, 0.004]))
    if level:
        lm = noise(lm, rng, xy=level, depth=3 * level)
    pose, vis = lm.pose_world.copy(), lm.pose_visibility.copy()
    left, right = lm.left_hand.copy(), lm.right_hand.copy()
    face = None if lm.face is None else lm.face.copy()
    image = None if lm.pose_image is None else lm.pose_image.copy()
    for m in draw(st.sets(st.sampled_from(_MUTATIONS), max_size=4)):
        if m == "no_left":
            left[:] = np.nan
        elif m == "no_right":
            right[:] = np.nan
        elif m == "no_face":
            face = None
        elif m == "face_478" and face is not None:
            face = np.concatenate([face, np.full((1, 10, 3), np.nan)], axis=1)
        elif m == "nan_pose_point":  # one coordinate of a used site
            pose[0, draw(st.sampled_from(sorted(POSE_POINTS.values()))), draw(st.integers(0, 2))] = np.nan
        elif m == "nan_hand_point":
            (left if draw(st.booleans()) else right)[0, draw(st.integers(0, 20)), draw(st.integers(0, 2))] = np.nan
        elif m == "nan_face_point" and face is not None:
            face[0, draw(st.sampled_from(sorted(FACE_POINTS.values()))), 0] = np.nan
        elif m == "hands_only":
            pose[:] = np.nan
            vis[:] = 0.0
            face = None
        elif m == "swap_labels":
            left, right = right, left
        elif m == "selfie":  # an image flipped without swapping labels
            flip = np.array([-1.0, 1.0, 1.0])
            pose, left, right = pose * flip, left * flip, right * flip
            face = None if face is None else face * flip
            image = None if image is None else image * flip
        elif m == "no_pose_image":
            image = None
        elif m == "hips_unseen":
            vis[0, [POSE_POINTS["hip_l"], POSE_POINTS["hip_r"]]] = 0.2
        elif m == "wrist_unseen":
            vis[0, POSE_POINTS[draw(st.sampled_from(["wrist_l", "wrist_r"]))]] = 0.1
        elif m == "collapsed_hand":  # every point at the wrist: a degenerate palm frame
            hand = left if draw(st.booleans()) else right
            hand[0] = hand[0, 0]
        elif m == "zero_phalanx":  # a finger joint on the next one, or a thumb joint
            hand = left if draw(st.booleans()) else right
            j = draw(st.sampled_from([1, 2, 3, 5, 6, 7, 10, 14, 19]))
            hand[0, j + 1] = hand[0, j]
        elif m == "straight_arm":  # the elbow on the shoulder-wrist line
            s = draw(st.sampled_from(["l", "r"]))
            sh, wr = pose[0, POSE_POINTS[f"shoulder_{s}"]], pose[0, POSE_POINTS[f"wrist_{s}"]]
            pose[0, POSE_POINTS[f"elbow_{s}"]] = 0.5 * (sh + wr)
        elif m == "shoulders_together":
            pose[0, POSE_POINTS["shoulder_l"]] = pose[0, POSE_POINTS["shoulder_r"]]
        elif m == "hips_turned":  # hips turned 90° under the chest: implausible torso
            mid = 0.5 * (pose[0, POSE_POINTS["hip_l"]] + pose[0, POSE_POINTS["hip_r"]])
            for k in ("hip_l", "hip_r"):
                d = pose[0, POSE_POINTS[k]] - mid
                pose[0, POSE_POINTS[k]] = mid + np.array([-d[2], d[1], d[0]])
        elif m == "far_away":  # a large offset of every point (the hands' unit too)
            shift = np.array([300.0, -40.0, 2000.0])
            pose, left, right = pose + shift, left + shift, right + shift
            face = None if face is None else face + shift
            image = None if image is None else image + shift
        elif m == "finger_along_normal":  # a straight index finger along the palm normal
            hand = left if draw(st.booleans()) else right
            h = hand[0]
            normal = np.cross(h[5] - h[0], h[17] - h[0])
            if np.linalg.norm(normal) > 1e-6:
                for k in (6, 7, 8):
                    h[k] = h[5] + (k - 5) * 0.02 * normal / np.linalg.norm(normal)
        elif m == "depth_flip":  # a hand mirrored in depth about its wrist: folded backward
            hand = left if draw(st.booleans()) else right
            hand[0, :, 2] = 2.0 * hand[0, 0, 2] - hand[0, :, 2]
        elif m == "finger_sideways":  # a finger turned 60° in the palm plane about its MCP
            hand = left if draw(st.booleans()) else right
            h = hand[0]
            mcp = draw(st.sampled_from([5, 9, 13, 17]))
            normal = np.cross(h[5] - h[0], h[17] - h[0])
            if np.linalg.norm(normal) > 1e-6:
                axis = normal / np.linalg.norm(normal)
                turn = np.radians(draw(st.sampled_from([60.0, -60.0])))
                for k in (mcp + 1, mcp + 2, mcp + 3):  # Rodrigues about the normal through the MCP
                    v = h[k] - h[mcp]
                    h[k] = h[mcp] + v * np.cos(turn) + np.cross(axis, v) * np.sin(turn) \
                        + axis * (axis @ v) * (1 - np.cos(turn))
        elif m == "float32":  # MediaPipe's own precision
            pose, vis, left, right = (a.astype(np.float32) for a in (pose, vis, left, right))
            face = None if face is None else face.astype(np.float32)
    out = HolisticLandmarks(pose, vis, left, right, face, lm.hand_scale, image)
    return out, draw(st.sampled_from(["report", "flip"]))


def _check_same(one: LandmarkResult, batch: LandmarkResult) -> None:
    np.testing.assert_array_equal(np.isnan(one.vectors), np.isnan(batch.vectors))
    np.testing.assert_allclose(one.vectors, batch.vectors, rtol=0, atol=1e-9, equal_nan=True)
    assert {p: list(s) for p, s in one.tracking.items()} == {p: list(s) for p, s in batch.tracking.items()}
    assert one.report == batch.report
    assert one.calibration.calibration == batch.calibration.calibration
    assert one.calibration.notes == batch.calibration.notes
    np.testing.assert_array_equal(one.calibration.units.L, batch.calibration.units.L)


@settings(max_examples=250)
@given(frames(), st.sampled_from([0.5, 0.3, 0.9]), st.sampled_from([1.0, 1.5, 2.55]), st.sampled_from([1.0, 3.0]))
def test_single_frame_path_equals_the_batch_path(frame: tuple[HolisticLandmarks, str], threshold: float,
                                                 gain_l: float, gain_r: float) -> None:
    lm, mirrored = frame
    _, cal = _pool()
    cal = replace(cal, hand_depth_gain={"l": gain_l, "r": gain_r})  # spec §4.3 "Hand depth gain"
    one = landmarks_to_vectors(lm, calibration=cal, visibility_threshold=threshold, mirrored=mirrored)  # type: ignore[arg-type]
    _check_same(one, _encode_batch(lm, cal, threshold, mirrored))  # type: ignore[arg-type]


@settings(max_examples=40)
@given(frames())
def test_single_frame_calibrates_itself_as_the_batch(frame: tuple[HolisticLandmarks, str]) -> None:
    lm, mirrored = frame
    try:
        batch = _encode_batch(lm, None, 0.5, mirrored)  # type: ignore[arg-type]
    except UsageError as e:  # e.g. a body frame without hips: no torso length (usage.not_finite)
        with pytest.raises(UsageError) as raised:
            landmarks_to_vectors(lm, mirrored=mirrored)  # type: ignore[arg-type]
        assert raised.value.code == e.code
        return
    _check_same(landmarks_to_vectors(lm, mirrored=mirrored), batch)  # type: ignore[arg-type]


def test_the_failure_modes_are_reached() -> None:
    # the single-frame path meets each report entry at least once on these mutations
    lm, cal = _pool()
    seen: Counter[str] = Counter()
    for i in range(_POOL):
        f = _one(lm, i)
        for mutate in (lambda x: x,
                       lambda x: HolisticLandmarks(x.pose_world, x.pose_visibility, x.right_hand, x.left_hand,
                                                   x.face, x.hand_scale, x.pose_image),
                       lambda x: HolisticLandmarks(np.full_like(x.pose_world, np.nan), x.pose_visibility * 0,
                                                   x.left_hand, x.right_hand, None, x.hand_scale, None)):
            g = mutate(f)
            one = landmarks_to_vectors(g, calibration=cal)
            _check_same(one, _encode_batch(g, cal, 0.5, "report"))
            seen.update(k for k, n in one.report.degenerate.items() if n)
            seen.update(k for k, n in one.report.clamped.items() if n)
    for key in ("hands_swapped", "palm_camera_frame_l", "body_frame", "thumb_roll_unobservable_l"):
        assert seen[key], key
