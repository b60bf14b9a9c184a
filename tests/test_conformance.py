"""Runs every conformance vector in spec/conformance/ (spec §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posewire.conformance import compare, load_cases, operations, run_case

ROOT = Path(__file__).resolve().parent.parent / "spec" / "conformance"
CASES = list(load_cases(ROOT))


def test_there_are_vectors() -> None:
    assert len(CASES) >= 8


@pytest.mark.parametrize(("file", "case"), CASES, ids=[f"{f}:{c['id']}" for f, c in CASES])
def test_case(file: str, case: dict[str, object]) -> None:
    result = run_case(case, operations(), file)  # type: ignore[arg-type]
    assert result.passed, result.why


def test_every_file_is_well_formed() -> None:
    for file in ROOT.glob("*.json"):
        doc = json.loads(file.read_text())
        assert doc["section"].startswith("§") and doc["cases"], file
        ids = [c["id"] for c in doc["cases"]]
        assert len(ids) == len(set(ids)), file
        for case in doc["cases"]:
            assert case["op"] in operations(), case["op"]
            assert ("expect" in case) != ("expect_error" in case), case["id"]
            assert case.get("rule"), case["id"]


def test_compare_detects_differences() -> None:
    assert compare({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]}, 1e-9) is None
    assert compare({"a": [1.0, 2.1]}, {"a": [1.0, 2.0]}, 1e-9) == (
        "$.a[1]: expected 2.0, got 2.1 (tolerance 1e-09)")
    assert compare({"a": 1, "b": 2}, {"a": 1}, 0) == "$: unexpected keys ['b']"
    assert compare("x", 1.0, 0.1) is not None
