"""Real-hand conventions and checks of spec §4.3: the relaxed splay is side 0, a
depth-flipped camera hand is read mirrored and reported, a finger turned past its side range
keeps its fold and curl, its side clamped to the rail and counted (spec §4.3: no finger is
dropped for its angles). Ground truth from ``posewire.groundtruth`` (decoder + FK on
``helix-humanoid@1``), so every expected value is computed, not copied."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS
from posewire.groundtruth import moving_vectors, noise, random_vectors, render, thumb_roll_seen
from posewire.producers import hand as hand_maths
from posewire.producers.hand import (
    DEPTH_FLIP_FOLD_DEG,
    DEPTH_GAIN_MIN_FRAMES,
    DEPTH_GAINS,
    DIP_EXTENSION_DEG,
    FINGER_CHAINS,
    HAND_BONES,
    MCP_EXTENSION_DEG,
    PIP_EXTENSION_DEG,
    bone_length_ratios,
    estimate_depth_gain,
    finger_angles,
    gain_measure,
    hand_dims,
    with_depth_gain,
)
from posewire.producers.hand_single import finger_angles1, hand_dims1
from posewire.producers.landmarks import HolisticLandmarks, landmarks_to_vectors
from posewire.producers.live import LiveCalibration
from posewire.producers.poseformat import read_pose_file

F64 = NDArray[np.float64]
SIDES = ("l", "r")
SIGNER = Path(__file__).parent / "data" / "holistic_signer.pose"
HAND_DIMS = [d for d in REGISTRY.dimensions if d.row.group in ("palm", "fingers")]


def _hand(lm: HolisticLandmarks, side: str) -> F64:
    out: F64 = lm.left_hand if side == "l" else lm.right_hand
    return out


def _with_hands(lm: HolisticLandmarks, left: F64, right: F64) -> HolisticLandmarks:
    return replace(lm, left_hand=left, right_hand=right)


def _depth_mirror(hand: F64) -> F64:
    out: F64 = hand * np.array([1.0, 1.0, -1.0])
    out[..., 2] += 2.0 * hand[:, :1, 2]
    return out




def _assert_hand_dims_equal(got: F64, want: F64, *, skip: frozenset[str] | set[str] = frozenset()) -> None:
    """Every palm and finger dim of ``got`` equals ``want`` to 1e-6 (the thumb roll where
    the thumb bends enough to show it), except the dims in ``skip``."""
    for d in HAND_DIMS:
        if d.id in skip:
            continue
        rows = thumb_roll_seen(want, d.id[-1]) if d.id.startswith("g_thumb_roll") else slice(None)
        np.testing.assert_allclose(got[rows, d.index], want[rows, d.index], atol=1e-6, err_msg=d.id)


def test_side_zero_is_the_relaxed_splay() -> None:
    # spec §4.3: at side 0 each finger turns neutral_deg toward the pinky from its metacarpal
    gt = render(DEFAULTS[None, :].copy())
    for side in SIDES:
        angles = finger_angles(_hand(gt.landmarks, side), side=side)  # type: ignore[arg-type]
        for finger in FINGER_CHAINS:
            want = REGISTRY.by_id[f"g_{finger}_side_{side}"].row.neutral_deg
            assert want is not None and want > 0.0
            assert abs(float(angles[f"g_{finger}_side"][0]) - want) < 1e-6, (side, finger)


@settings(max_examples=10)
@given(st.integers(0, 2**32 - 1))
def test_depth_mirror_negates_every_bend(seed: int) -> None:
    # law (spec §4.3): mirroring a hand in depth turns its palm normal over, so every
    # index…pinky bend changes sign: the last phalanx's turn fold + curl + distal exactly
    # (the joint ranges move a bend, never that sum, unless the fold reaches its backward
    # limit), and each of fold, curl and distal where the negated bends stay within their
    # backward limits
    rng = np.random.default_rng(seed)
    gt = render(random_vectors(rng, 8), view_yaw_deg=rng.uniform(-60, 60, 8))
    for side in SIDES:
        hand = _hand(gt.landmarks, side)
        seen = finger_angles(hand, side=side)  # type: ignore[arg-type]
        mirrored = finger_angles(_depth_mirror(hand), side=side)  # type: ignore[arg-type]
        for finger in FINGER_CHAINS:
            keys = [f"g_{finger}_{kind}" for kind in ("fold", "curl", "distal")]
            turn, turn_mirrored = (sum(a[k] for k in keys) for a in (seen, mirrored))
            kept = mirrored[keys[0]] > -MCP_EXTENSION_DEG  # a fold at its limit keeps no sum
            np.testing.assert_allclose(turn_mirrored[kept], -turn[kept], atol=1e-6, err_msg=(side, finger))
            inside = ((seen[keys[0]] < MCP_EXTENSION_DEG) & (seen[keys[1]] <= PIP_EXTENSION_DEG)
                      & (seen[keys[2]] <= DIP_EXTENSION_DEG))
            for key in keys:
                np.testing.assert_allclose(mirrored[key][inside], -seen[key][inside], atol=1e-6, err_msg=(side, key))


def test_depth_flipped_hands_are_read_mirrored_and_reported() -> None:
    rng = np.random.default_rng(5)
    batch = 40
    vec = random_vectors(rng, batch)
    for side in SIDES:  # fists and half fists: every mirror folds back beyond the threshold
        for finger in FINGER_CHAINS:
            vec[:, REGISTRY.index(f"g_{finger}_fold_{side}")] = rng.uniform(0.75, 1.0, batch)
    gt = render(vec, view_yaw_deg=rng.uniform(-45, 45, batch))
    assert DEPTH_FLIP_FOLD_DEG < 0.75 * 90.0
    flipped = _with_hands(gt.landmarks, _depth_mirror(gt.landmarks.left_hand), _depth_mirror(gt.landmarks.right_hand))
    plain = landmarks_to_vectors(gt.landmarks)
    result = landmarks_to_vectors(flipped)
    assert "hand_depth_flipped_l" not in plain.report.degenerate
    assert result.report.degenerate["hand_depth_flipped_l"] == batch
    assert result.report.degenerate["hand_depth_flipped_r"] == batch
    _assert_hand_dims_equal(result.vectors, vec)


def test_a_finger_turned_past_its_side_range_is_clamped_not_dropped() -> None:
    rng = np.random.default_rng(8)
    batch = 12
    vec = random_vectors(rng, batch)
    for finger in FINGER_CHAINS:  # folded forward: no depth flip on top of the bent index
        vec[:, REGISTRY.index(f"g_{finger}_fold_r")] = np.abs(vec[:, REGISTRY.index(f"g_{finger}_fold_r")])
    gt = render(vec)
    hand = gt.landmarks.right_hand.copy()
    # turn the index's three phalanges 70° about the palm normal at its knuckle
    wrist, index_mcp, pinky_mcp = hand[:, 0], hand[:, 5], hand[:, 17]
    normal = np.cross(index_mcp - wrist, pinky_mcp - wrist)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    angle = np.radians(70.0)
    for j in (6, 7, 8):
        v = hand[:, j] - index_mcp
        v_rot = (v * np.cos(angle) + np.cross(normal, v) * np.sin(angle)
                 + normal * (normal * v).sum(-1, keepdims=True) * (1.0 - np.cos(angle)))
        hand[:, j] = index_mcp + v_rot
    bent = landmarks_to_vectors(_with_hands(gt.landmarks, gt.landmarks.left_hand, hand))
    index_dims = {f"g_index_{k}_r" for k in ("curl", "fold", "side", "distal")}
    angles = finger_angles(hand, side="r")
    past = np.abs(angles["g_index_side"] - 20.0) > 30.0  # beyond the ±30° side range
    assert past.sum() >= batch // 2
    # metric joints (VR: no depth ambiguity): every such finger is clamped and counted
    metric = hand_dims(hand, np.broadcast_to(np.eye(3), (batch, 3, 3)), np.ones(batch, dtype=bool), side="r")
    assert metric.fingers_side_clamped is not None
    np.testing.assert_array_equal(metric.fingers_side_clamped, past.astype(int))
    # a camera (monocular depth) may read it in range with its depth rescaled (spec §4.3 "Depth
    # repair"), counted; the others are clamped and counted; none is dropped
    side = bent.vectors[:, REGISTRY.index("g_index_side_r")]
    on_rail = past & (np.abs(side) == 1.0)
    repaired = bent.report.degenerate.get("fingers_depth_repaired_r", 0)
    assert bent.report.degenerate.get("fingers_side_clamped_r", 0) == int(on_rail.sum())
    assert repaired == int((past & ~on_rail).sum())
    assert on_rail.sum() >= 1
    # the side on its rail, with the sign of the turn; fold and curl as measured, never absent
    np.testing.assert_array_equal(side[on_rail], np.sign(angles["g_index_side"][on_rail] - 20.0))
    for kind in ("fold", "curl"):
        measured = np.clip(angles[f"g_index_{kind}"] / REGISTRY.by_id[f"g_index_{kind}_r"].row.angle_deg, -1, 1)
        got = bent.vectors[:, REGISTRY.index(f"g_index_{kind}_r")]
        np.testing.assert_allclose(got[on_rail], measured[on_rail], atol=1e-9)
        assert np.isfinite(got).all()
    _assert_hand_dims_equal(bent.vectors, vec, skip=index_dims)


def test_missing_hip_points_are_hips_not_seen_in_both_paths() -> None:
    # a hip landmark missing (NaN, e.g. confidence 0 in a .pose file) with a high
    # visibility: no crash; the frame takes the upright chest (spec §4.5), body dims are not
    # estimated and reported; the units need no hip (§4.1: from the shoulder width), so no
    # axis falls back, and the torso the camera could not measure is not reported as unlike
    rng = np.random.default_rng(3)
    gt = render(random_vectors(rng, 3))
    pose = gt.landmarks.pose_world.copy()
    pose[:, 23] = np.nan
    lm = replace(gt.landmarks, pose_world=pose)
    batch = landmarks_to_vectors(lm)
    assert batch.report.degenerate["body_hips_not_visible"] == 3
    assert batch.calibration.units.fallback_axes == ()
    assert batch.calibration.calibration.torso_length == pytest.approx(0.40, rel=1e-12)  # S = 0.36 here
    assert not any("torso" in n for n in batch.report.notes)
    body = [REGISTRY.index(i) for i in ("b_yaw", "b_pitch", "b_roll")]
    assert np.isnan(batch.vectors[:, body]).all()
    assert np.isfinite(batch.vectors[:, REGISTRY.index("a_x_r")]).all()
    for k in range(3):  # the single-frame path, calibrated the same way
        one = landmarks_to_vectors(_frame(lm, k), calibration=batch.calibration)
        np.testing.assert_allclose(one.vectors[0], batch.vectors[k], atol=1e-9, equal_nan=True)
        assert one.report.degenerate["body_hips_not_visible"] == 1


def _frame(lm: HolisticLandmarks, k: int) -> HolisticLandmarks:
    def pick(a: F64 | None) -> F64 | None:
        return None if a is None else a[k:k + 1]
    return HolisticLandmarks(pose_world=lm.pose_world[k:k + 1], pose_visibility=lm.pose_visibility[k:k + 1],
                             left_hand=lm.left_hand[k:k + 1], right_hand=lm.right_hand[k:k + 1],
                             face=pick(lm.face), hand_scale=pick(lm.hand_scale), pose_image=pick(lm.pose_image))


# ---------------------------------------------------------------------------- depth gain (§4.3)


def _compressed(lm: HolisticLandmarks, gain: float) -> HolisticLandmarks:
    """``lm`` with both hands' depth divided by ``gain`` about the wrist (what a camera
    model that compresses depth returns)."""
    return _with_hands(lm, with_depth_gain(lm.left_hand, 1.0 / gain), with_depth_gain(lm.right_hand, 1.0 / gain))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([float(g) for g in DEPTH_GAINS]))
def test_depth_gain_undoes_a_uniform_depth_compression(seed: int, gain: float) -> None:
    # law (spec §4.3 "Hand depth gain"): rigid hands give exactly 1; the same hands with
    # their depth divided by a gain of the grid give that gain back (a camera's frames: the
    # performer moves between them, spec §4.3)
    rng = np.random.default_rng(seed)
    gt = render(moving_vectors(rng, 20, key_every=8), view_yaw_deg=np.full(20, rng.uniform(-45, 45))).landmarks
    for side in SIDES:
        assert estimate_depth_gain(bone_length_ratios(_hand(gt, side))) == 1.0
        assert estimate_depth_gain(bone_length_ratios(_hand(_compressed(gt, gain), side))) == gain


def test_depth_gain_is_robust_to_noise_and_needs_frames() -> None:
    # spec §4.3 "Hand depth gain": a camera's frames of a moving performer, with noise that is
    # independent from frame to frame; the measure takes that noise out (spec §4.3 depth gain: the plain
    # spread read a true 2 as 1.3 at 6 mm of depth noise)
    rng = np.random.default_rng(11)
    gt = render(moving_vectors(rng, 150), view_yaw_deg=np.full(150, rng.uniform(-45, 45))).landmarks
    noisy = noise(gt, rng, xy=0.002, depth=0.006)  # MediaPipe-like noise fakes no gain
    squeezed = noise(_compressed(gt, 2.0), rng, xy=0.002, depth=0.002)
    squeezed_more = noise(_compressed(gt, 2.0), rng, xy=0.002, depth=0.006)
    for side in SIDES:
        assert (estimate_depth_gain(bone_length_ratios(_hand(noisy, side))) or 0.0) <= 1.1
        assert 1.9 <= (estimate_depth_gain(bone_length_ratios(_hand(squeezed, side))) or 0.0) <= 2.1
        assert 1.75 <= (estimate_depth_gain(bone_length_ratios(_hand(squeezed_more, side))) or 0.0) <= 2.25
        # the plain spread (no second differences) is the biased one: the check can fail
        ratios = bone_length_ratios(_hand(squeezed_more, side))
        plain = gain_measure(ratios.mean(axis=0), ratios.var(axis=0), np.zeros(ratios.shape[1:]))
        assert DEPTH_GAINS[int(np.argmin(plain))] < 1.6
    few = gt.right_hand[:DEPTH_GAIN_MIN_FRAMES].copy()
    assert estimate_depth_gain(bone_length_ratios(few)) == 1.0
    few[0, 7] = np.nan  # a frame with a missing point does not count
    assert np.isnan(bone_length_ratios(few)[0]).all()
    assert estimate_depth_gain(bone_length_ratios(few)) is None


def test_a_compressed_camera_depth_gives_the_true_hand_dims() -> None:
    rng = np.random.default_rng(12)
    vec = random_vectors(rng, 30)
    gt = render(vec, view_yaw_deg=rng.uniform(-45, 45, 30)).landmarks
    result = landmarks_to_vectors(_compressed(gt, 2.5))
    assert dict(result.calibration.hand_depth_gain) == {"l": 2.5, "r": 2.5}
    assert "hand depth gain (r) 2.50" in result.report.notes
    _assert_hand_dims_equal(result.vectors, vec)
    # without the gain the compressed hands read wrong (the check can fail)
    ungained = landmarks_to_vectors(_compressed(gt, 2.5), calibration=replace(
        result.calibration, hand_depth_gain={"l": 1.0, "r": 1.0}))
    folds = [REGISTRY.index(f"g_{f}_fold_r") for f in FINGER_CHAINS]
    assert np.nanmedian(np.abs(ungained.vectors[:, folds] - vec[:, folds])) * 90.0 > 3.0
    for k in range(3):  # the single-frame path applies the same gain
        one = landmarks_to_vectors(_frame(_compressed(gt, 2.5), k), calibration=result.calibration)
        np.testing.assert_allclose(one.vectors[0], result.vectors[k], atol=1e-9, equal_nan=True)


def test_live_calibration_takes_the_depth_gain() -> None:
    rng = np.random.default_rng(13)
    gt = _compressed(render(random_vectors(rng, 40), view_yaw_deg=rng.uniform(-45, 45, 40)).landmarks, 1.5)
    live = LiveCalibration(window=40, every=5)
    sent = [live.update(_frame(gt, k)) for k in range(40)]
    assert live.current is not None
    assert dict(live.current.hand_depth_gain) == {"l": 1.5, "r": 1.5}
    # the first estimate (one frame) could not see the gain yet; a later one took it
    assert sent[0] is not None and sent[0].hand_depth_gain == {"l": 1.0, "r": 1.0}


def test_real_signer_hands_are_rigid_with_a_depth_gain() -> None:
    # MediaPipe's hand depth is compressed: on the signer the bones are most constant at a
    # gain of 2.5-3.4 (inside the grid, not on its 5.0 bound), and with it far fewer folds
    # reach the rail of fold +1 (spec §4.3, §7.3)
    lm = read_pose_file(SIGNER).landmarks
    result = landmarks_to_vectors(lm)
    gains = result.calibration.hand_depth_gain
    assert 2.0 <= gains["l"] <= 3.5 and 2.0 <= gains["r"] <= 3.5, gains
    plain = landmarks_to_vectors(lm, calibration=replace(result.calibration, hand_depth_gain={"l": 1.0, "r": 1.0}))
    folds = [REGISTRY.index(f"g_{f}_fold_{s}") for f in FINGER_CHAINS for s in SIDES]

    def on_rail(vectors: F64) -> float:
        values = vectors[:, folds]
        return float((values[np.isfinite(values)] == 1.0).mean())

    assert on_rail(result.vectors) < 0.5 * on_rail(plain.vectors), (on_rail(result.vectors), on_rail(plain.vectors))


@pytest.mark.parametrize("seed", range(3))
def test_bone_length_ratios_are_squares_over_their_mean(seed: int) -> None:
    # spec §4.3 "Hand depth gain": ℓ² = Δx² + Δy² + g²·Δz² over the frame's mean over its bones
    # (odd and even bone counts, missing points, zero-length bones, equal lengths); the hand's
    # size and distance drop out
    rng = np.random.default_rng(seed)
    for _ in range(40):
        hands = rng.normal(size=(7, 21, 3)) * rng.uniform(0.01, 10.0)
        hands[rng.integers(0, 7), rng.integers(0, 21), rng.integers(0, 3)] = np.nan
        hands[1, 5] = hands[1, 0]
        hands[2, 6] = hands[2, 5] + (hands[2, 2] - hands[2, 1])
        for bones in (HAND_BONES, HAND_BONES[:19], ((0, 1), (1, 2), (2, 3))):
            delta = hands[:, [b for _, b in bones]] - hands[:, [a for a, _ in bones]]
            squared = (delta[..., 0] ** 2 + delta[..., 1] ** 2)[:, None, :] \
                + DEPTH_GAINS[None, :, None] ** 2 * (delta[..., 2] ** 2)[:, None, :]
            usable = np.isfinite(delta).all(axis=(-1, -2)) & (squared[:, 0] > 0.0).all(-1)
            got = bone_length_ratios(hands, bones=bones)
            assert np.isnan(got[~usable]).all() and np.isfinite(got[usable]).all()
            np.testing.assert_allclose(got[usable], squared[usable] / squared[usable].mean(-1, keepdims=True),
                                       rtol=1e-14)
            np.testing.assert_allclose(got[usable].mean(-1), 1.0, rtol=1e-14)
            np.testing.assert_allclose(bone_length_ratios(hands * 3.5 + 1.0, bones=bones), got, rtol=1e-12)


def _worked_hand(bones: dict[int, list[tuple[float, float, float]]]) -> F64:
    """The spec's worked hands (§4.3): right hand in its own canonical frame (knuckles of
    helix-humanoid@1, the fingers not given straight along their metacarpals, the thumb at rest)."""
    hand = np.zeros((1, 21, 3))
    for mcp, (x, y) in {5: (0.022, 0.090), 9: (0.0, 0.092), 13: (-0.02, 0.088), 17: (-0.038, 0.080)}.items():
        hand[0, mcp] = (x, y, 0.0)
        for k in range(3):
            step = bones[mcp][k] if mcp in bones else 0.03 * hand[0, mcp] / np.linalg.norm(hand[0, mcp])
            hand[0, mcp + 1 + k] = hand[0, mcp + k] + np.array(step)
    hand[0, 1] = (0.02, 0.02, 0.0)
    for k in (2, 3, 4):
        hand[0, k] = hand[0, k - 1] + 0.035 * np.array([0.6, 0.8, 0.0])
    return hand


def test_spec_worked_index_example() -> None:
    # spec §4.3 "Finger geometry": the right index of helix-humanoid@1 at side 0.5, fold 45°,
    # PIP 27.5°, DIP 22.5° -> (0.5, 0.375, 0.25, 0.25), in both paths
    alpha, sigma = np.arctan2(-0.022, 0.090), np.radians(20.0 + 15.0)
    d = np.array([-np.sin(alpha + sigma), np.cos(alpha + sigma), 0.0])
    z = np.array([0.0, 0.0, 1.0])
    bones = [length * (np.cos(a) * d + np.sin(a) * z)
             for length, a in zip((0.042, 0.025, 0.022), np.radians([45.0, 72.5, 95.0]), strict=True)]
    unit = [b / np.linalg.norm(b) for b in bones]
    np.testing.assert_allclose(unit[1], [-0.109054, 0.280234, 0.953717], atol=1e-6)
    np.testing.assert_allclose(unit[2], [0.031608, -0.081222, 0.996195], atol=1e-6)
    hand = _worked_hand({5: [tuple(b) for b in bones]})
    angles = finger_angles(hand, side="r")
    assert (angles["g_index_side"][0] - 20.0) / 30.0 == pytest.approx(0.5, abs=1e-9)
    assert angles["g_index_fold"][0] / 120.0 == pytest.approx(0.375, abs=1e-9)
    assert angles["g_index_curl"][0] / 110.0 == pytest.approx(0.25, abs=1e-9)
    assert angles["g_index_distal"][0] / 90.0 == pytest.approx(0.25, abs=1e-9)
    single = finger_angles1([tuple(p) for p in hand[0]], side="r")
    rows = hand_maths._FINGER_ROWS
    for key in ("g_index_side", "g_index_fold", "g_index_curl", "g_index_distal"):
        assert single[rows.index(key)] == pytest.approx(angles[key][0], abs=1e-9), key


def test_spec_worked_joint_ranges_example() -> None:
    # spec §4.3 "Joint ranges": a right middle finger measured fold 40°, PIP 140°, DIP 100°
    # -> DIP 90° (10° on to the PIP), PIP 110° (40° on to the fold), fold 80°:
    # (0.666667, 1, 1), the last phalanx still 280° from d, in both paths
    sigma = np.radians(10.0)  # the middle's metacarpal is along +Y (α = 0), its splay 10°
    d = np.array([-np.sin(sigma), np.cos(sigma), 0.0])
    z = np.array([0.0, 0.0, 1.0])
    bones = [length * (np.cos(a) * d + np.sin(a) * z)
             for length, a in zip((0.045, 0.028, 0.022), np.radians([40.0, 180.0, 280.0]), strict=True)]
    hand = _worked_hand({9: [tuple(b) for b in bones]})
    angles = finger_angles(hand, side="r")
    assert angles["g_middle_side"][0] - 10.0 == pytest.approx(0.0, abs=1e-9)
    assert angles["g_middle_fold"][0] / 120.0 == pytest.approx(0.666667, abs=1e-6)
    assert angles["g_middle_curl"][0] / 110.0 == pytest.approx(1.0, abs=1e-9)
    assert angles["g_middle_distal"][0] / 90.0 == pytest.approx(1.0, abs=1e-9)
    single = finger_angles1([tuple(p) for p in hand[0]], side="r")
    rows = hand_maths._FINGER_ROWS
    for key in ("g_middle_side", "g_middle_fold", "g_middle_curl", "g_middle_distal"):
        assert single[rows.index(key)] == pytest.approx(angles[key][0], abs=1e-9), key


def test_spec_worked_depth_repair_example() -> None:
    # spec §4.3 "Depth repair": a right middle finger seen along the hand's X (the camera's
    # depth), its depth misread: measured 70.55° beyond its splay; with the depth of its
    # bones halved it reads (−0.617051, 0.537106, 0.748068), counted once; VR (metric) keeps it
    bones = [(-0.044407, 0.022158, 0.038971), (-0.022075, -0.017725, 0.021449), (-0.015980, -0.021666, 0.0)]
    local = _worked_hand({9: bones})
    world = local[..., [1, 2, 0]]  # the hand's X along the camera's depth (the third axis)
    seen = finger_angles(world, side="r")
    assert seen["g_middle_side"][0] - 10.0 == pytest.approx(70.55, abs=0.01)
    # measured fold 39.40°, PIP 9.26°, DIP −48.67°: the DIP bent back beyond 20° passes
    # 28.67° on, the PIP beyond 10° 9.41° on to the fold (spec §4.3 "Joint ranges")
    assert seen["g_middle_fold"][0] == pytest.approx(29.99, abs=0.01)
    assert seen["g_middle_curl"][0] == pytest.approx(-10.0, abs=1e-9)
    assert seen["g_middle_distal"][0] == pytest.approx(-20.0, abs=1e-9)
    repaired = finger_angles(world, side="r", depth_ambiguous=True)
    assert (repaired["g_middle_side"][0] - 10.0) / 30.0 == pytest.approx(-0.617051, abs=1e-6)
    assert repaired["g_middle_fold"][0] / 120.0 == pytest.approx(0.537106, abs=1e-6)
    assert repaired["g_middle_curl"][0] / 110.0 == pytest.approx(0.612056, abs=1e-6)
    assert repaired["g_middle_distal"][0] / 90.0 == pytest.approx(0.535790, abs=1e-6)
    for other in ("index", "ring", "pinky"):  # in range as measured: never changed
        for kind in ("side", "fold", "curl", "distal"):
            key = f"g_{other}_{kind}"
            assert repaired[key][0] == seen[key][0]
    axes = np.eye(3)[None]
    dims = hand_dims(world, axes, np.ones(1, dtype=bool), side="r", depth_ambiguous=True)
    assert dims.fingers_depth_repaired is not None and int(dims.fingers_depth_repaired[0]) == 1
    assert dims.fingers_side_clamped is not None and int(dims.fingers_side_clamped[0]) == 0
    one = hand_dims1([tuple(p) for p in world[0]], ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)), side="r",
                     depth_ambiguous=True)
    assert one is not None and one.fingers_depth_repaired == 1 and one.fingers_side_clamped == 0
    for k, d in enumerate(dims.values):
        assert one.values[k] == pytest.approx(float(dims.values[d][0]), abs=1e-9), d
    metric = hand_dims(world, axes, np.ones(1, dtype=bool), side="r")
    assert metric.fingers_side_clamped is not None and int(metric.fingers_side_clamped[0]) == 1


@settings(max_examples=10)
@given(st.integers(0, 2**32 - 1))
def test_depth_repair_changes_only_fingers_out_of_range(seed: int) -> None:
    # law (spec §4.3 "Depth repair"): a finger read in range (side within ±30° of its splay,
    # fold within −45°…120°) is sent as read; one out of range is either left as read (its
    # fold at −45° at least) or replaced by a reading in range; the repaired count is the
    # number replaced
    rng = np.random.default_rng(seed)
    gt = render(random_vectors(rng, 16), view_yaw_deg=rng.uniform(-60, 60, 16))
    noisy = noise(gt.landmarks, rng, xy=0.004, depth=0.02)
    for side in SIDES:
        hand = _hand(noisy, side)
        plain = finger_angles(hand, side=side)  # type: ignore[arg-type]
        dims = hand_dims(hand, np.broadcast_to(np.eye(3), (16, 3, 3)), np.ones(16, dtype=bool),
                         side=side, depth_ambiguous=True)  # type: ignore[arg-type]
        repaired = finger_angles(hand, side=side, depth_ambiguous=True)  # type: ignore[arg-type]
        changed = np.zeros(16, dtype=int)
        for finger, splay in zip(FINGER_CHAINS, (20.0, 10.0, 10.0, 5.0), strict=True):
            keys = [f"g_{finger}_{k}" for k in ("side", "fold", "curl", "distal")]
            fold = plain[keys[1]]  # at −45° where it was read further back (spec §4.3 "Joint ranges")
            assert (fold >= -MCP_EXTENSION_DEG).all()
            inside = (np.abs(plain[keys[0]] - splay) <= 30.0) & (fold > -MCP_EXTENSION_DEG) & (fold <= 120.0)
            same = np.all([repaired[k] == plain[k] for k in keys], axis=0)
            assert same[inside].all(), (side, finger)
            fixed = ~same
            assert (np.abs(repaired[keys[0]][fixed] - splay) <= 30.0).all()
            assert ((repaired[keys[1]][fixed] >= -MCP_EXTENSION_DEG) & (repaired[keys[1]][fixed] <= 120.0)).all()
            changed += fixed
        assert dims.fingers_depth_repaired is not None
        flipped = dims.depth_flipped if dims.depth_flipped is not None else np.zeros(16, dtype=bool)
        np.testing.assert_array_equal(dims.fingers_depth_repaired[~flipped], changed[~flipped])


@settings(max_examples=10)
@given(st.integers(0, 2**32 - 1))
def test_each_joint_is_measured_on_its_own_and_kept_in_range(seed: int) -> None:
    # law (spec §4.3 "Finger geometry", "Joint ranges"): on ground truth every PIP and DIP
    # bend comes back exactly; on noisy hands every bend sent lies within its range
    rng = np.random.default_rng(seed)
    gt = render(random_vectors(rng, 16), view_yaw_deg=rng.uniform(-60, 60, 16))
    exact = finger_angles(_hand(gt.landmarks, "r"), side="r")
    vec = random_vectors(np.random.default_rng(seed), 16)
    for finger in ("thumb", *FINGER_CHAINS):
        for kind in ("curl", "distal"):
            row = REGISTRY.by_id[f"g_{finger}_{kind}_r"].row
            want = vec[:, REGISTRY.index(f"g_{finger}_{kind}_r")] * (row.angle_deg or 0.0)
            np.testing.assert_allclose(exact[f"g_{finger}_{kind}"], want, atol=1e-6, err_msg=(finger, kind))
    angles = finger_angles(_hand(noise(gt.landmarks, rng, xy=0.003, depth=0.01), "r"), side="r")
    for finger in FINGER_CHAINS:
        for kind in ("curl", "distal"):
            limit = REGISTRY.by_id[f"g_{finger}_{kind}_r"].row.angle_deg or 0.0
            assert (np.abs(angles[f"g_{finger}_{kind}"]) <= limit).all(), (finger, kind)

