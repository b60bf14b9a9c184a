"""Generated files are up to date; the pydantic models accept the registry and pin bounds."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from posewire.codec.registry import DIMENSIONS, REGISTRY, REGISTRY_VERSION, VISEMES
from posewire.generate import GENERATED, RECORDING_TOLERANCE, check_all, same_generated
from posewire.models import PoseObject, RegistryExport

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("rel", sorted(GENERATED))
def test_committed_file_matches_generator(rel: str) -> None:
    text = GENERATED[rel]()
    if text is None:
        pytest.skip(f"{rel}: its source does not exist yet")
    path = ROOT / rel
    assert path.exists(), f"{rel} is missing: run `make generate`"
    assert same_generated(rel, path.read_text(encoding="utf-8"), text), f"{rel} is stale: run `make generate`"


def test_an_encoder_output_is_the_same_file_within_the_tolerance_only() -> None:
    rel = "posewire/data/holistic_signer.jsonl"
    line = '{"t_us":0,"values":{"a_x_l":0.25,"g_ring_distal_l":0.3868153962173987}}'
    an_ulp_off = line.replace("0.3868153962173987", "0.3868153962173986")
    assert same_generated(rel, line, an_ulp_off)
    off = line.replace("0.3868153962173987", repr(0.3868153962173987 + 10 * RECORDING_TOLERANCE))
    assert not same_generated(rel, line, off)
    assert not same_generated(rel, line, line.replace('"t_us":0', '"t_us":1'))
    assert not same_generated(rel, line, line + "\n" + line)
    assert not same_generated(rel, line, line.replace("a_x_l", "a_x_r"))
    assert not same_generated(rel, line, "not json")
    # every other generated file is compared as text
    assert not same_generated("docs/cli.md", "0.3868153962173987", "0.3868153962173986")


def test_check_all_reports_nothing_stale() -> None:
    stale = [str(p.relative_to(ROOT)) for p in check_all(ROOT)]
    assert stale == [], f"stale generated files {stale}: run `make generate`"


def test_check_all_detects_a_stale_file(tmp_path: Path) -> None:
    from posewire.generate import write_all

    written = write_all(tmp_path)
    assert check_all(tmp_path) == []
    written[0].write_text("edited by hand\n", encoding="utf-8")
    assert check_all(tmp_path) == [written[0]]


def test_registry_export_validates_against_the_model() -> None:
    model = RegistryExport.model_validate(REGISTRY.export())
    assert len(model.dimensions) == len(DIMENSIONS) == 89
    assert model.version == REGISTRY_VERSION
    assert model.model_dump(mode="json") == REGISTRY.export()


def test_registry_json_is_the_export_and_hashes_to_the_registry_hash() -> None:
    data = json.loads((ROOT / "schemas/registry.json").read_text(encoding="utf-8"))
    assert data == REGISTRY.export()
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert hashlib.sha256(canonical.encode("ascii")).hexdigest() == REGISTRY.hash


def test_registry_model_rejects_a_bad_export() -> None:
    export: dict[str, Any] = json.loads(json.dumps(REGISTRY.export()))
    export["dimensions"][0]["polarity"] = "tripolar"
    with pytest.raises(ValidationError):
        RegistryExport.model_validate(export)
    export = json.loads(json.dumps(REGISTRY.export()))
    export["dimensions"][REGISTRY.index("f_blink_l")]["positive"][0]["channel"] = "eyeBlinkCenter"
    with pytest.raises(ValidationError):
        RegistryExport.model_validate(export)
    export = json.loads(json.dumps(REGISTRY.export()))
    export["dimensions"][3]["index"] = 4
    with pytest.raises(ValidationError):
        RegistryExport.model_validate(export)


def _pose(values: dict[str, Any], **conditions: Any) -> dict[str, Any]:
    return {"registry": REGISTRY_VERSION, "values": values, "conditions": conditions}


def test_pose_object_fills_defaults_and_accepts_bounds() -> None:
    pose = PoseObject.model_validate(_pose({"a_x_r": -1.0, "a_spread_l": 1.0, "h_yaw": 1.0}))
    values = pose.values.model_dump()
    assert values["a_x_r"] == -1.0
    assert values["a_y_l"] == pytest.approx(-0.6222)
    assert values["w_qx_r"] == pytest.approx(0.69296)
    assert set(values) == {d.id for d in DIMENSIONS}


@pytest.mark.parametrize(
    "values",
    [
        {"a_x_l": 1.0000001},
        {"h_pitch": -1.5},
        {"a_spread_r": -0.01},  # unipolar: [0, 1]
        {"m_jaw": math.nan},
        {"m_jaw": math.inf},
        {"a_x": 0.1},  # the row id, not a dim id
        {"leg_kick_l": 0.0},  # unknown (newer) id: rejected by this version's schema
    ],
)
def test_pose_object_rejects_out_of_range_and_unknown_ids(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PoseObject.model_validate(_pose(values))


def test_pose_object_rejects_another_registry_version() -> None:
    with pytest.raises(ValidationError):
        PoseObject.model_validate({"registry": "0.9.0", "values": {}})


def test_pose_object_conditions() -> None:
    mix = [0.0] * len(VISEMES)
    mix[VISEMES.index("aa")] = 0.6
    mix[VISEMES.index("PP")] = 0.4
    ok = PoseObject.model_validate(_pose(
        {}, mouthing=mix, tracking={"hand_l": "lost"}, contact={"hand_r": "chin"},
        affect={"label": "happy", "intensity": 0.5, "mode": "blend"}))
    assert ok.conditions.mouthing == mix
    # unknown (newer) condition ids are ignored, as posewire.codec.conditions does (spec §3.5)
    PoseObject.model_validate(_pose({}, gesture="wave"))
    bad_conditions: list[dict[str, Any]] = [
        {"mouthing": [0.5] * len(VISEMES)},  # sum 7.5 > 1
        {"mouthing": [0.1, 0.1]},  # wrong length
        {"mouthing": [-0.1] + [0.0] * (len(VISEMES) - 1)},
        {"tracking": {"leg_l": "lost"}},
        {"tracking": {"head": "asleep"}},
        {"contact": {"hand_r": "elbow"}},
        {"affect": {"label": "happy", "intensity": 1.5, "mode": "add"}},
        {"affect": {"label": "bored", "intensity": 0.5, "mode": "add"}},
        {"mouthing": []},  # absent means inactive; present means all 15 shares
    ]
    for conditions in bad_conditions:
        with pytest.raises(ValidationError):
            PoseObject.model_validate(_pose({}, **conditions))


def test_pose_schema_pins_every_dim_bound() -> None:
    schema = json.loads((ROOT / "schemas/pose.schema.json").read_text(encoding="utf-8"))
    props = schema["$defs"]["PoseValues"]["properties"]
    assert schema["$defs"]["PoseValues"]["additionalProperties"] is False
    for d in DIMENSIONS:
        lower = -1.0 if d.row.polarity == "bipolar" else 0.0
        assert props[d.id]["minimum"] == lower
        assert props[d.id]["maximum"] == 1.0
        assert props[d.id]["default"] == d.row.default
