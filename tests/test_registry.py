"""Registry laws (spec §4): rows, sides, ARKit reachability, hash."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from posewire.codec.registry import (
    AFFECT_PRESETS,
    ARKIT_CHANNELS,
    DIMENSIONS,
    MOUTHING_SEED_TABLE,
    REGISTRY,
    ROWS,
    SPINE_SHARES,
    VISEMES,
    Registry,
    _expand,
)


def test_dimension_counts_per_group() -> None:
    counts = Counter(d.row.group for d in DIMENSIONS)
    assert counts == {"arm": 8, "palm": 6, "fingers": 42, "head": 3, "body": 3,
                      "face": 13, "mouth": 14}
    assert len(DIMENSIONS) == 89


def test_ids_unique_and_indices_dense() -> None:
    ids = [d.id for d in DIMENSIONS]
    assert len(set(ids)) == len(ids)
    assert [d.index for d in DIMENSIONS] == list(range(len(DIMENSIONS)))


def test_sided_rows_expand_to_adjacent_pairs() -> None:
    for d in DIMENSIONS:
        if d.side == "l":
            right = DIMENSIONS[d.index + 1]
            assert right.id == d.id[:-2] + "_r" and right.row is d.row


def test_brief_minimum_ids_present() -> None:
    for base in ("a_x", "a_y", "a_z", "a_spread", "w_qx", "w_qy", "w_qz", "g_thumb_roll"):
        for side in ("l", "r"):
            assert f"{base}_{side}" in REGISTRY.by_id
    for finger in ("thumb", "index", "middle", "ring", "pinky"):
        for kind in ("curl", "fold", "side", "distal"):
            assert f"g_{finger}_{kind}_l" in REGISTRY.by_id
    for i in ("h_yaw", "h_pitch", "h_roll", "b_yaw", "b_pitch", "b_roll", "m_jaw", "m_press"):
        assert i in REGISTRY.by_id


def test_polarity_and_defaults_in_bounds() -> None:
    for d in DIMENSIONS:
        lo = -1.0 if d.row.polarity == "bipolar" else 0.0
        assert lo <= d.row.default <= 1.0, d.id
        assert d.row.max > 0
        assert d.row.bits in (8, 16)
    assert REGISTRY.by_id["a_spread_l"].row.polarity == "unipolar"
    for d in DIMENSIONS:
        if d.row.group in ("fingers", "face", "mouth"):
            assert d.row.polarity == "bipolar" and d.row.max == 1 and d.row.default == 0


def test_affect_flag_matches_seed_groups() -> None:
    # seed 000: head, body, face, mouth are affect-capable; arm, palm, fingers are not
    for d in DIMENSIONS:
        assert d.row.affect == (d.row.group in ("head", "body", "face", "mouth")), d.id


def test_every_arkit_channel_has_exactly_one_primary() -> None:
    # spec §4.6: one primary (gain 1) per channel; secondaries (gain < 1) may add to it
    owners: Counter[str] = Counter()
    for d in DIMENSIONS:
        for direction in (1, -1):
            for ch in d.channels(direction):
                owners[ch.name] += ch.gain == 1.0
                assert 0 < ch.gain <= 1
                assert d.row.group in ("face", "mouth")
    assert set(owners) == set(ARKIT_CHANNELS)
    assert len(ARKIT_CHANNELS) == 52
    assert all(n == 1 for n in owners.values()), owners


def test_sided_channel_placeholders_resolve_to_own_side() -> None:
    blink_l = REGISTRY.by_id["f_blink_l"]
    assert [c.name for c in blink_l.channels(1)] == ["eyeBlinkLeft"]
    assert [c.name for c in REGISTRY.by_id["f_blink_r"].channels(-1)] == ["eyeWideRight"]


def test_tables_reference_only_known_dims() -> None:
    assert abs(sum(s for _, s in SPINE_SHARES) - 1.0) < 1e-12
    for viseme, pairs in MOUTHING_SEED_TABLE:
        assert viseme in VISEMES
        for dim, value in pairs:
            assert REGISTRY.by_id[dim].row.group == "mouth" and -1 <= value <= 1
    for _, pairs in AFFECT_PRESETS:
        for dim, value in pairs:
            assert REGISTRY.by_id[dim].row.affect and -1 <= value <= 1


def test_hash_is_stable_and_changes_with_any_row() -> None:
    assert REGISTRY.hash == Registry().hash
    assert len(REGISTRY.hash) == 64
    for i in (0, 20, len(ROWS) - 1):
        changed = list(ROWS)
        changed[i] = dataclasses.replace(ROWS[i], default=ROWS[i].default + 0.01)
        assert Registry(_expand(tuple(changed))).hash != REGISTRY.hash
    swapped = list(ROWS)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    assert Registry(_expand(tuple(swapped))).hash != REGISTRY.hash


def test_unknown_id_lookup_raises() -> None:
    with pytest.raises(KeyError):
        REGISTRY.index("a_w_l")
