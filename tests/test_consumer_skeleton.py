"""Tests of posewire.consumers.skeleton: the helix-humanoid@1 joint set, FK, calibration, retarget."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.calibration import units
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import from_axis_angle, rotate
from posewire.consumers.skeleton import (
    CANONICAL_JOINTS,
    METACARPALS,
    OPTIONAL_JOINTS,
    REQUIRED_JOINTS,
    RetargetMap,
    Skeleton,
    calibration_of,
    fk,
    helix_humanoid,
)


def test_canonical_count_is_68() -> None:
    skel = helix_humanoid()
    assert len(CANONICAL_JOINTS) == 68
    assert len(skel) == 68
    assert set(skel.names) == set(CANONICAL_JOINTS)
    for name in ("root", "pelvis", "spine_05", "neck_02", "head", "thumb_03_l", "pinky_01_r",
                 "upperarm_twist_02_r", "lowerarm_twist_01_l", "thigh_twist_01_r",
                 "calf_twist_01_l", "ball_r"):
        assert name in skel.index
    assert len(helix_humanoid(metacarpals=True)) == 68 + len(METACARPALS) == 76
    assert set(CANONICAL_JOINTS) | set(METACARPALS) == REQUIRED_JOINTS | OPTIONAL_JOINTS


def test_rest_pose_frame_and_a_pose() -> None:
    skel = helix_humanoid()
    pos, _ = skel.rest_world()
    ix = skel.index
    # seed 001: +X = character's left, feet on Y = 0, A-pose ≥ 17° from straight down
    assert pos[ix["upperarm_l"]][0] == pytest.approx(0.18)
    assert pos[ix["upperarm_r"]][0] == pytest.approx(-0.18)
    arm = pos[ix["lowerarm_r"]] - pos[ix["upperarm_r"]]
    from_down = np.degrees(np.arccos(-arm[1] / np.linalg.norm(arm)))
    assert from_down == pytest.approx(45.0)
    assert pos[ix["ball_l"]][1] > 0 and pos[ix["ball_l"]][1] < 0.05
    # thumb points forward in the A-pose (palm medial-down)
    assert pos[ix["thumb_02_r"]][2] > pos[ix["thumb_01_r"]][2]
    # mirror symmetry
    for n in skel.names:
        if n.endswith("_r"):
            np.testing.assert_allclose(pos[ix[n]] * [-1, 1, 1], pos[ix[n[:-1] + "l"]], atol=1e-12)


def test_calibration_is_chain_lengths() -> None:
    cal = calibration_of(helix_humanoid())
    assert cal.hand_length == pytest.approx(0.19)
    assert cal.torso_length == pytest.approx(0.40)
    assert cal.arm_length == pytest.approx(0.56)
    assert cal.shoulder_width == pytest.approx(0.36)
    small = calibration_of(helix_humanoid(1.4))
    assert small.arm_length == pytest.approx(0.56 * 0.8)
    assert units(cal).calibrated


def test_calibration_uses_chain_not_span() -> None:
    # bend the elbow at rest: the chain length (arm extended) is unchanged
    skel = helix_humanoid()
    pos, rot = skel.rest_world()
    ix = skel.index
    pos = pos.copy()
    bend = from_axis_angle([0, 0, 1], np.radians(60))
    hand = ix["hand_r"]
    elbow = pos[ix["lowerarm_r"]]
    pos[hand] = elbow + rotate(bend, pos[hand] - elbow)
    bent = Skeleton.from_world(skel.names, skel.parents, pos, rot, sites={
        n: (skel.names[j], pos[j] + off) for n, (j, off) in skel.sites.items()})
    assert calibration_of(bent).arm_length == pytest.approx(0.56)
    assert np.linalg.norm(pos[hand] - pos[ix["upperarm_r"]]) < 0.5


def test_fk_rest_reproduces_world_and_random_bind_frames() -> None:
    skel = helix_humanoid()
    pos, _rot = skel.rest_world()
    rng = np.random.default_rng(1)
    q = rng.normal(size=(len(skel), 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    other = Skeleton.from_world(skel.names, skel.parents, pos, q)
    pos2, rot2 = other.rest_world()
    np.testing.assert_allclose(pos2, pos, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(rot2 * q, axis=-1)), 1.0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(-3.0, 3.0))
def test_fk_rotating_root_rotates_everything(angle: float) -> None:
    skel = helix_humanoid()
    local = np.tile(skel.rest_rotations, (1, 1, 1))
    q = from_axis_angle([0, 1, 0], angle)
    local[0, 0] = q
    pos, _ = fk(skel, local)
    rest, _ = skel.rest_world()
    np.testing.assert_allclose(pos[0], rotate(q, rest), atol=1e-12)


def test_without_optional_bones_keeps_rest_world() -> None:
    skel = helix_humanoid()
    drop = ["spine_02", "spine_04", "neck_02", "middle_02_r"]
    small = skel.without(drop)
    assert len(small) == 64
    pos, _ = skel.rest_world()
    pos2, _ = small.rest_world()
    for i, n in enumerate(small.names):
        np.testing.assert_allclose(pos2[i], pos[skel.index[n]], atol=1e-12)
    assert calibration_of(small).hand_length == pytest.approx(0.19)
    with pytest.raises(UsageError):
        skel.without(["nope"])


def test_retarget_map_skips_optional_and_requires_required() -> None:
    skel = helix_humanoid().without(["spine_02", "index_03_l"])
    names = tuple("J_" + n for n in skel.names)
    avatar = Skeleton(names, skel.parents, skel.offsets, skel.rest_rotations, skel.sites)
    mapping = RetargetMap({n: "J_" + n for n in CANONICAL_JOINTS})
    out = mapping.apply(avatar)
    assert set(out.skipped) == {"spine_02", "index_03_l"}
    assert out.skeleton.names == skel.names
    assert out.avatar_names == names
    bad = RetargetMap({n: "J_" + n for n in CANONICAL_JOINTS if n != "hand_r"})
    with pytest.raises(UsageError) as err:
        bad.apply(avatar)
    assert err.value.code == "usage.bad_option"
    assert RetargetMap.identity().apply(helix_humanoid()).skipped == ()
