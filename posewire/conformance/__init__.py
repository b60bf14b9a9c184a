"""The conformance kit (spec §6): neutral JSON vectors run against operations.

Each file in ``spec/conformance/`` holds cases ``{id, op, rule, input, expect |
expect_error, tolerance?}``. An operation name (``palm.reconstruct``) maps to a
callable taking the ``input`` object and returning a JSON-like result; the runner
compares it with ``expect`` (floats within ``tolerance``, default 1e-9) or checks that
the error code raised equals ``expect_error``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codec.errors import PosewireError

__all__ = ["CaseResult", "Operation", "compare", "load_cases", "operations", "run_case", "run_dir"]

Operation = Callable[[dict[str, Any]], Any]


def operations() -> dict[str, Operation]:
    """Every operation the kit knows, merged from the ``ops_*`` modules."""
    from . import ops_core

    table: dict[str, Operation] = dict(ops_core.OPS)
    for name in ("ops_maths", "ops_face", "ops_wire"):
        try:
            module = __import__(f"{__name__}.{name}", fromlist=["OPS"])
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        table.update(module.OPS)
    return table


@dataclass(frozen=True)
class CaseResult:
    file: str
    id: str
    passed: bool
    why: str


def compare(actual: Any, expected: Any, tolerance: float, path: str = "$") -> str | None:
    """``None`` when equal, else a one-line reason naming the first differing path."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {type(actual).__name__}"
        for key, value in expected.items():
            if key not in actual:
                return f"{path}.{key}: missing"
            why = compare(actual[key], value, tolerance, f"{path}.{key}")
            if why:
                return why
        extra = set(actual) - set(expected)
        return f"{path}: unexpected keys {sorted(extra)}" if extra else None
    if isinstance(expected, list):
        if not isinstance(actual, list | tuple) or len(actual) != len(expected):
            return f"{path}: expected a list of {len(expected)}, got {actual!r}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            why = compare(a, e, tolerance, f"{path}[{i}]")
            if why:
                return why
        return None
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return None if actual == expected else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, int | float):
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return f"{path}: expected a number, got {actual!r}"
        if math.isclose(float(actual), float(expected), rel_tol=0.0, abs_tol=tolerance):
            return None
        return f"{path}: expected {expected!r}, got {actual!r} (tolerance {tolerance})"
    return f"{path}: cannot compare {expected!r}"


def load_cases(directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for file in sorted(directory.glob("*.json")):
        doc = json.loads(file.read_text())
        for case in doc["cases"]:
            yield file.name, case


def run_case(case: dict[str, Any], ops: dict[str, Operation], file: str = "") -> CaseResult:
    op = ops.get(case["op"])
    if op is None:
        return CaseResult(file, case["id"], False, f"unknown op {case['op']!r}")
    try:
        actual = op(case["input"])
    except PosewireError as exc:
        if exc.code == case.get("expect_error"):
            return CaseResult(file, case["id"], True, "")
        return CaseResult(file, case["id"], False, f"raised {exc.code}: {exc.message}")
    if "expect_error" in case:
        return CaseResult(file, case["id"], False,
                          f"expected error {case['expect_error']}, got {actual!r}")
    why = compare(actual, case["expect"], float(case.get("tolerance", 1e-9)))
    return CaseResult(file, case["id"], why is None, why or "")


def run_dir(directory: Path) -> list[CaseResult]:
    ops = operations()
    return [run_case(case, ops, file) for file, case in load_cases(directory)]
