"""A generated boundary set for every op of the kit (spec §6.5 rules 1-5).

Every conformance vector is a seed: each number in its input (at any depth) is replaced,
one at a time, by each boundary value below, and in pairs (combined faults); every leaf is
also replaced by wrong JSON types. The reference must answer each input with a result or
a posewire error code (spec §1.3, §6.5: "no op fails in any other way"), and a result
never holds NaN or ±inf (spec §6.5 rule 5). Unlike ``tests/test_op_inputs.py`` (random
inputs drawn from the key tables), these inputs are the vectors' own shapes, so they reach
deep into every op's arithmetic.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from posewire.codec.errors import PosewireError
from posewire.conformance import ProcessExecutor, compare, load_cases, operations
from posewire.conformance.inputs import INPUTS

OPS = operations()
VECTORS = Path(__file__).resolve().parent.parent / "spec" / "conformance"

#: The boundary numbers of spec §6.5: NaN, ±inf, 1e±300, the smallest subnormal, the
#: largest finite, 10^400 written as digits, signed zeros.
BOUNDARY: tuple[Any, ...] = (math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, -1e-300,
                             5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
                             10**400, -(10**400), 0.0, -0.0)
#: Wrong JSON types for any leaf.
WRONG: tuple[Any, ...] = ("x", True, None, [], {}, [math.nan], {"a": 1})

Path_ = tuple[Any, ...]


def _leaves(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    if isinstance(value, dict):
        for k, x in value.items():
            yield from _leaves(x, (*path, k))
    elif isinstance(value, list):
        for i, x in enumerate(value):
            yield from _leaves(x, (*path, i))
    else:
        yield path, value


def _set(value: Any, path: Path_, new: Any) -> Any:
    out = copy.deepcopy(value)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return out


def _seeds() -> dict[str, list[dict[str, Any]]]:
    seeds: dict[str, list[dict[str, Any]]] = {}
    for _file, case in load_cases(VECTORS):
        if isinstance(case.get("input"), dict) and case["op"] in OPS:
            seeds.setdefault(case["op"], []).append(case["input"])
    return seeds


SEEDS = _seeds()


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(x) for x in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(x) for x in value)
    return True


def _inputs(op: str, limit: int = 1500) -> Iterator[dict[str, Any]]:
    """The generated boundary inputs of ``op``: single and paired numeric faults, wrong
    types at every leaf, deterministic (every seed, then a fixed sample of pairs)."""
    rng = np.random.default_rng(19)
    made = 0
    for seed in SEEDS[op]:
        leaves = [(p, v) for p, v in _leaves(seed) if p]
        numeric = [p for p, v in leaves if isinstance(v, int | float) and not isinstance(v, bool)]
        for path in numeric:
            for b in BOUNDARY:
                yield _set(seed, path, b)
                made += 1
        for path, _ in leaves[:6]:
            for w in WRONG:
                yield _set(seed, path, w)
                made += 1
        pairs = list(itertools.combinations(numeric, 2))
        for k in rng.permutation(len(pairs))[:20] if pairs else ():
            a, b = pairs[int(k)]
            x, y = rng.choice(len(BOUNDARY), 2)
            yield _set(_set(seed, a, BOUNDARY[int(x)]), b, BOUNDARY[int(y)])
            made += 1
        if made > limit:
            return


def test_every_op_has_a_seed_vector() -> None:
    assert set(SEEDS) == set(INPUTS) == set(OPS)


@pytest.mark.parametrize("op", sorted(INPUTS))
def test_boundary_inputs_get_a_result_or_a_code_never_a_crash_or_a_non_finite_number(
        op: str) -> None:
    run = OPS[op]
    counted = 0
    for inp in _inputs(op):
        counted += 1
        try:
            out = run(inp)
        except PosewireError as exc:
            assert exc.code.startswith(("usage.", "decode.", "recording.")), (op, inp, exc.code)
            continue
        except Exception as exc:  # a bare exception: the bug this test is for
            pytest.fail(f"{op} raised {type(exc).__name__}: {exc} on {inp!r}")
        assert _finite(out), (op, inp, out)
    assert counted > 0


def test_combined_faults_of_the_issue_are_answered_with_codes() -> None:
    """Named cases of spec §6.5 rules 1-5 (each was a crash or a silent NaN before)."""
    expect = [
        ("conditions.mirror", {"conditions": {"mouthing": [10**400] + [0] * 14}}, "usage.not_finite"),
        ("wire.encode", {"message": {"type": "cal", "hand_length": 10**400}}, "usage.not_finite"),
        ("frame.body", {"shoulder_l": [1e308, 0, 0], "shoulder_r": [-1e308, 0, 0],
                        "hip_mid": [0, -1, 0]}, "usage.out_of_range"),
        ("arm.to_physical", {"n": [1e308, 0, 0], "side": "r",
                             "calibration": {"shoulder_width": 10.0}}, "usage.out_of_range"),
        ("palm.encode", {"q": [0, 0, 0, 0], "side": "r"}, "usage.zero_norm"),
    ]
    for op, inp, code in expect:
        with pytest.raises(PosewireError) as err:
            OPS[op](inp)
        assert err.value.code == code, (op, inp)
    assert OPS["palm.encode"]({"q": [5e-324, 0, 0, 0], "side": "r"}) == {
        "v": [0.0, 0.0, 0.0], "clamped": False}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_js_kit_answers_the_boundary_set_as_the_reference_does() -> None:
    """The independent JS kit (spec §6.6) on the same generated inputs (those JSON can
    carry: no NaN/inf): the same code, or a result equal within 1e-9. Its disagreements
    found spec gaps before (the sign test of §4.7, normalization of subnormal vectors)."""
    kit = Path(__file__).resolve().parent / "interop" / "kit.mjs"
    execute = ProcessExecutor(["node", str(kit)])
    differ: list[str] = []
    try:
        for op in sorted(INPUTS):
            for inp in _inputs(op):
                text = json.dumps(inp)
                if "NaN" in text or "Infinity" in text:
                    continue
                try:
                    ref: tuple[str, Any] = ("result", OPS[op](inp))
                except PosewireError as exc:
                    ref = ("error", exc.code)
                got = execute(op, inp)
                if ref[0] == "error":
                    same = got.error == ref[1]
                else:
                    same = got.error is None and compare(got.result, ref[1], 1e-9) is None
                if not same:
                    differ.append(f"{op} {text[:160]}: reference {ref}, JS {got}")
    finally:
        execute.close()
    assert not differ, "\n".join(differ[:10])
