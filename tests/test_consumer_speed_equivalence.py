"""The single-frame and validated-input fast paths equal the public reference functions.

``decode_pose`` on one frame (Python-float arms, table-driven rotations) must match the
batch path (row 0 of a batch of 2 with the same frame) and ``face_weights`` the public
codec chain (validate → normalize_shares → mouthing_to_arkit), to 1e-12, on random
inputs including NaN, ±inf and out-of-range dims.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import mouthings

from posewire.codec.morph import ARKIT_INDEX
from posewire.codec.mouthing import _valid_mouthing_arkit, _valid_mouthing_arkit1, mouthing_to_arkit, normalize_shares
from posewire.codec.registry import VISEMES
from posewire.codec.vector import LOWER, N_DIMS, validate
from posewire.consumers.face import _shares1, _validate_clamp, face_weights
from posewire.consumers.pose import decode_frame, decode_pose
from posewire.consumers.skeleton import Skeleton, helix_humanoid


def _vectors(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vec = rng.uniform(LOWER - 0.3, 1.3, size=(n, N_DIMS))
    vec[rng.random(vec.shape) < 0.03] = np.nan
    vec[rng.random(vec.shape) < 0.01] = np.inf
    vec[rng.random(vec.shape) < 0.01] = -np.inf
    return vec


def _skeletons() -> list[Skeleton]:
    skel = helix_humanoid()
    rest, _ = skel.rest_world()
    q = np.random.default_rng(7).normal(size=(len(skel), 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    bound = Skeleton.from_world(skel.names, skel.parents, rest, q, sites={
        n: (skel.names[j], rest[j] + off) for n, (j, off) in skel.sites.items()})
    # a finger parented to the forearm: the single-frame path keeps the palm on finger rows
    parents = np.array(skel.parents)
    parents[skel.index["index_01_l"]] = skel.index["lowerarm_l"]
    odd = Skeleton.from_world(skel.names, parents, rest, skel.rest_world()[1], sites={
        n: (skel.names[j], rest[j] + off) for n, (j, off) in skel.sites.items()})
    return [skel, bound, helix_humanoid(1.4, metacarpals=True),
            skel.without(["spine_02", "neck_02", "thumb_02_r", "index_03_l", "middle_01_l"]),
            skel.without([n for n in skel.names if n[:-2].endswith(("_02", "_03"))]), odd]


@pytest.mark.parametrize("which", range(6))
def test_single_frame_equals_batch_path(which: int) -> None:
    skel = _skeletons()[which]
    vecs = _vectors(which, 40)
    vecs[0] = 0.0
    vecs[1] = np.nan
    vecs[2, :] = 5.0
    for v in vecs:
        one = decode_pose(v, skel)
        ref = decode_pose(np.stack([v, v]), skel)  # batch of 2: the array path
        np.testing.assert_allclose(one.local_rotations, ref.local_rotations[:1], rtol=0, atol=1e-12)
        for s in ("l", "r"):
            np.testing.assert_allclose(one.targets[s], ref.targets[s][:1], rtol=0, atol=1e-12)
            for name in ("upper", "lower", "elbow", "wrist"):
                np.testing.assert_allclose(getattr(one.ik[s], name), getattr(ref.ik[s], name)[:1],
                                           rtol=0, atol=1e-12)
            np.testing.assert_array_equal(one.ik[s].clamped, ref.ik[s].clamped[:1])
            np.testing.assert_array_equal(one.palm_clamped[s], ref.palm_clamped[s][:1])
            assert one.ik[s].fallback == ref.ik[s].fallback
        np.testing.assert_array_equal(one.validation.clamped, ref.validation.clamped[:1])
        np.testing.assert_array_equal(one.validation.replaced, ref.validation.replaced[:1])
        assert one.report() == ref.report()


def test_validate_clamp_equals_validate() -> None:
    for shape in ((N_DIMS,), (1, N_DIMS), (9, N_DIMS)):
        for seed in range(5):
            vec = _vectors(seed, 9).reshape(-1)[: int(np.prod(shape))].reshape(shape)
            for v in (vec, np.nan_to_num(vec, nan=0.5, posinf=2.0, neginf=-2.0)):
                out, rep = _validate_clamp(v)
                ref, ref_rep = validate(v, policy="clamp")
                np.testing.assert_array_equal(out, ref)
                np.testing.assert_array_equal(rep.clamped, ref_rep.clamped)
                np.testing.assert_array_equal(rep.replaced, ref_rep.replaced)


@pytest.mark.parametrize("seed", range(6))
def test_face_kernel_equals_mouthing_to_arkit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vec, _ = validate(_vectors(seed, 30), policy="clamp")
    raw = rng.random((30, len(VISEMES))) * rng.choice([0.0, 0.1, 0.3], size=(30, 1))
    raw[rng.random(raw.shape) < 0.5] = 0.0
    for shares_in in (raw, raw[0], np.zeros(len(VISEMES)), 3 * raw):
        shares, _ = normalize_shares(shares_in)
        ref = mouthing_to_arkit(vec, shares)
        weights, clipped = _valid_mouthing_arkit(vec, shares)
        np.testing.assert_allclose(weights, ref.arkit, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(clipped, ref.clipped)
    one_w, _ = _valid_mouthing_arkit(vec[0], normalize_shares(raw)[0])  # (N,) with (B, 15)
    np.testing.assert_allclose(one_w, mouthing_to_arkit(vec[0], normalize_shares(raw)[0]).arkit,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("capability", ["viseme15", "vowel5"])
def test_face_weights_equals_reference(capability: str) -> None:
    rng = np.random.default_rng(3)
    for vec in (_vectors(1, 12), _vectors(2, 1)[0]):
        mix = rng.random(len(VISEMES)) * 0.2
        out = face_weights(vec, capability=capability, visemes=mix)  # type: ignore[arg-type]
        v, _ = validate(vec, policy="clamp")
        ref = mouthing_to_arkit(v, normalize_shares(mix)[0])
        for name, i in ARKIT_INDEX.items():
            np.testing.assert_allclose(out.arkit[name], ref.arkit[..., i], rtol=0, atol=1e-12)
            assert np.shape(out.arkit[name]) == np.shape(ref.arkit[..., i])
        if capability == "viseme15":
            for i, name in enumerate(VISEMES):
                np.testing.assert_allclose(out.visemes[name], ref.visemes[..., i], rtol=0, atol=1e-12)
        assert out.report.get("clipped", False) == bool(ref.clipped.any())


@pytest.mark.parametrize("seed", range(4))
def test_one_frame_face_kernel_is_bit_equal(seed: int) -> None:
    # the single-frame face kernel in Python floats gives the batch kernel's bits
    rng = np.random.default_rng(seed)
    vec, _ = validate(_vectors(seed, 200), policy="clamp")
    vec[rng.random(vec.shape) < 0.2] = 0.0
    vec[::3] *= -1.0
    vec, _ = validate(vec, policy="clamp")
    for row in vec:
        raw = rng.random(len(VISEMES)) * rng.choice([0.0, 0.1, 0.3, 1.0])
        raw[rng.random(raw.shape) < 0.5] = 0.0
        shares, _ = normalize_shares(raw)
        weights, clipped = _valid_mouthing_arkit(row, shares)
        one, over = _valid_mouthing_arkit1(row.tolist(), shares.tolist())
        np.testing.assert_array_equal(np.array(one), weights)
        assert np.array_equal(np.signbit(one), np.signbit(weights)) and over == bool(clipped.any())
        # and face_weights of that frame (its clip in place in the weights array): the same
        # bits as the kernel on the mix face_weights plays (a normalized mix can sum to 1 + ulp)
        face = face_weights(row[None], capability="viseme15", visemes=shares)
        want, want_clipped = _valid_mouthing_arkit(row, normalize_shares(shares)[0])
        got = np.array([face.arkit[c][0] for c in ARKIT_INDEX])
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
        assert face.report.get("clipped", False) == bool(want_clipped.any())


@pytest.mark.parametrize("capability", ["viseme15", "vowel5", "jaw", "none"])
def test_decode_frame_is_decode_pose_and_face_weights(capability: str) -> None:
    # one validation for both, the same results as the two calls
    skel = helix_humanoid()
    rng = np.random.default_rng(5)
    for vec in (_vectors(3, 1), _vectors(4, 7), _vectors(5, 1)[0]):
        mix = rng.random(len(VISEMES)) * 0.3
        pose, face = decode_frame(vec, skel, capability=capability, visemes=mix)  # type: ignore[arg-type]
        ref_pose = decode_pose(vec, skel)
        ref_face = face_weights(np.reshape(vec, (-1, N_DIMS)), capability=capability,  # type: ignore[arg-type]
                                visemes=mix)
        np.testing.assert_array_equal(pose.local_rotations, ref_pose.local_rotations)
        assert pose.report() == ref_pose.report()
        assert face.report == ref_face.report and face.arkit.keys() == ref_face.arkit.keys()
        for name in ref_face.arkit:
            np.testing.assert_array_equal(face.arkit[name], ref_face.arkit[name])
        for name in ref_face.visemes:
            np.testing.assert_array_equal(face.visemes[name], ref_face.visemes[name])


@pytest.mark.parametrize("seed", range(4))
def test_one_frame_mix_is_normalize_shares_bit_for_bit(seed: int) -> None:
    # spec §1.5: the single-frame mix sums left to right, as the batch (15 shares)
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        raw = rng.random(len(VISEMES)) * 10.0 ** rng.uniform(-12, 1.5, size=len(VISEMES))
        raw[rng.random(raw.shape) < rng.random()] = 0.0
        ref, normalized = normalize_shares(raw)
        one = _shares1(raw, ())
        assert one is not None
        np.testing.assert_array_equal(np.array(one[0]), ref)
        assert one[1] == bool(normalized)
    for bad in (np.full(len(VISEMES), np.nan), -np.ones(len(VISEMES)), np.full(len(VISEMES), np.inf),
                np.zeros(len(VISEMES) - 1), np.zeros((2, len(VISEMES)))):
        assert _shares1(bad, ()) is None  # the array path raises or broadcasts


@pytest.mark.parametrize("capability", ["viseme15", "vowel5", "jaw", "none"])
def test_one_frame_face_weights_equal_the_batch_path(capability: str) -> None:
    # face_weights of one frame (Python floats) = row 0 of a batch of 2, bit for bit
    rng = np.random.default_rng(11)
    for vec in _vectors(6, 60):
        mix = rng.random(len(VISEMES)) * rng.choice([0.0, 0.05, 0.3])
        for shares in (mix, None):
            one = face_weights(vec[None], capability=capability, visemes=shares)  # type: ignore[arg-type]
            ref = face_weights(np.stack([vec, vec]), capability=capability,  # type: ignore[arg-type]
                               visemes=None if shares is None else np.stack([shares, shares]))
            assert one.report == ref.report and one.arkit.keys() == ref.arkit.keys()
            for got, want in ((one.arkit, ref.arkit), (one.visemes, ref.visemes)):
                for name in want:
                    np.testing.assert_array_equal(got[name], want[name][:1])


def test_one_frame_side_mappings_are_read_only_and_built_once() -> None:
    # one frame's targets / IK / palm flags are l/r mappings whose arrays are made
    # on first access; the values equal the batch path's (above), here the mapping itself
    skel = helix_humanoid()
    vec = _vectors(9, 1)
    one = decode_pose(vec, skel)
    ref = decode_pose(np.concatenate([vec, vec]), skel)
    for field in ("targets", "ik", "palm_clamped"):
        got = getattr(one, field)
        assert list(got) == ["l", "r"] and len(got) == 2 and set(got.keys()) == {"l", "r"}
        assert got["l"] is got["l"]  # made once
        with pytest.raises(TypeError):
            got["l"] = None  # type: ignore[index]
        with pytest.raises(KeyError):
            got["x"]
    assert repr(one.targets).startswith("{'l': array(")
    np.testing.assert_array_equal(dict(one.targets)["r"], one.targets["r"])
    assert one.ik["l"].upper.shape == (1, 4) and one.ik["r"].wrist.shape == (1, 3)
    assert one.palm_clamped["l"].shape == (1,) and one.palm_clamped["l"].dtype == np.bool_
    assert one.report() == ref.report()


@pytest.mark.parametrize("capability", ["viseme15", "vowel5", "jaw", "none"])
def test_face_report_names_the_changed_dims_when_read(capability: str) -> None:
    # the face report is built on first access; it equals the eager one: the dims
    # validate() clamped or replaced (the non-empty lists), then the notes
    rng = np.random.default_rng(8)
    for vec in (_vectors(6, 1), _vectors(7, 1)[0], _vectors(8, 5), np.zeros((1, N_DIMS))):
        mix = rng.random(len(VISEMES)) * 0.4  # sums over 1: normalized and noted
        out = face_weights(vec, capability=capability, visemes=mix)  # type: ignore[arg-type]
        _, rep = validate(vec, policy="clamp")
        want: dict[str, object] = {k: v for k, v in rep.dims().items() if v}
        if capability == "none":
            want["capability"] = "none: no face morphs played"
        else:
            want["mix_normalized"] = True
        if capability in ("viseme15", "vowel5"):  # a clip of the drive is noted after the mix
            want["clipped"] = True
        got = dict(out.report)
        if capability in ("viseme15", "vowel5") and "clipped" not in got:
            del want["clipped"]
        assert got == want and list(got) == list(want) and len(out.report) == len(want)


_SKELETONS = _skeletons()
_dim = st.one_of(st.floats(-1.4, 1.4, allow_nan=False), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]))


@settings(max_examples=150, deadline=None)
@given(values=st.lists(_dim, min_size=N_DIMS, max_size=N_DIMS), which=st.integers(0, len(_SKELETONS) - 1),
       mix=st.none() | mouthings(), capability=st.sampled_from(["viseme15", "vowel5", "jaw", "none"]))
def test_one_frame_decode_frame_is_the_array_path(values: list[float], which: int, mix: tuple[float, ...] | None,
                                                  capability: str) -> None:
    # the single-frame path (Python-float arms, split row table, lazy side results
    # and report, face kernel in Python floats) equals the batch path — the same frame twice
    skel = _SKELETONS[which]
    vec = np.array(values)[None]
    pose, face = decode_frame(vec, skel, capability=capability, visemes=mix)  # type: ignore[arg-type]
    pair = np.concatenate([vec, vec])
    ref = decode_pose(pair, skel)
    np.testing.assert_allclose(pose.local_rotations, ref.local_rotations[:1], rtol=0, atol=1e-12)
    for s in ("l", "r"):
        np.testing.assert_allclose(pose.targets[s], ref.targets[s][:1], rtol=0, atol=1e-12)
        for name in ("upper", "lower", "elbow", "wrist"):
            np.testing.assert_allclose(getattr(pose.ik[s], name), getattr(ref.ik[s], name)[:1], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(pose.ik[s].clamped, ref.ik[s].clamped[:1])
        np.testing.assert_array_equal(pose.palm_clamped[s], ref.palm_clamped[s][:1])
    assert pose.report() == ref.report()
    ref_face = face_weights(pair, capability=capability,  # type: ignore[arg-type]
                            visemes=None if mix is None else np.array([mix, mix]))
    assert dict(face.report) == dict(ref_face.report)
    assert face.arkit.keys() == ref_face.arkit.keys() and face.visemes.keys() == ref_face.visemes.keys()
    for got, want in ((face.arkit, ref_face.arkit), (face.visemes, ref_face.visemes)):
        for name in want:
            np.testing.assert_allclose(got[name], want[name][:1], rtol=0, atol=1e-12)
