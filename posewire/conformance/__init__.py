"""The conformance kit (spec §6): neutral JSON vectors run against operations.

Each file in ``spec/conformance/`` holds cases ``{id, op, rule, input, expect |
expect_error, tolerance?}``. An operation name (``palm.reconstruct``) maps to a
callable taking the ``input`` object and returning a JSON-like result; the runner
compares it with ``expect`` (floats within ``tolerance``, default 1e-9) or checks that
the error code raised equals ``expect_error``.
"""

from __future__ import annotations

import contextlib
import json
import math
import select
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from posewire.codec.errors import PosewireError

__all__ = [
    "VERDICTS",
    "CaseResult",
    "Executor",
    "Operation",
    "Outcome",
    "ProcessExecutor",
    "builtin_executor",
    "compare",
    "load_cases",
    "operations",
    "run_case",
    "run_dir",
]

Operation = Callable[[dict[str, Any]], Any]


def _checked(name: str, func: Operation) -> Operation:
    from .inputs import check_input, check_integers, check_result

    def op(inp: dict[str, Any]) -> Any:
        check_input(name, inp)  # spec §6.5: one rule for every op's input
        check_integers(inp)  # spec §6.5 rule 2, at any depth: an integer float64 cannot hold
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = func(inp)
        check_result(out)  # spec §6.5 rule 5: never a non-finite number in a result
        return out

    op.__name__ = op.__qualname__ = f"op[{name}]"
    return op


def operations() -> dict[str, Operation]:
    """Every operation the kit knows, merged from the ``ops_*`` modules; each checks
    its input by the one rule of spec §6.5 (:mod:`posewire.conformance.inputs`) first."""
    from . import ops_core

    table: dict[str, Operation] = dict(ops_core.OPS)
    for name in ("ops_maths", "ops_face", "ops_wire", "ops_encoder", "ops_recording"):
        try:
            module = __import__(f"{__name__}.{name}", fromlist=["OPS"])
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        table.update(module.OPS)
    return {name: _checked(name, func) for name, func in table.items()}


#: The four verdicts of the kit (spec §6.4), best first.
VERDICTS: tuple[str, ...] = ("OK", "NON-STRICT", "FAILED", "UNIMPLEMENTED")


@dataclass(frozen=True)
class CaseResult:
    """How one case went. ``level`` is the case's ``"MUST"`` (default) or ``"SHOULD"``;
    :attr:`verdict` is one of :data:`VERDICTS`."""

    file: str
    id: str
    passed: bool
    why: str
    skipped: bool = False
    op: str = ""
    rule: str = ""
    level: str = "MUST"

    @property
    def verdict(self) -> str:
        """``OK`` (passed), ``UNIMPLEMENTED`` (the op is not offered), ``NON-STRICT`` (a
        SHOULD-level case failed) or ``FAILED`` (a MUST-level case failed), spec §6.4."""
        if self.passed:
            return "OK"
        if self.skipped:
            return "UNIMPLEMENTED"
        return "NON-STRICT" if self.level == "SHOULD" else "FAILED"


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


@dataclass(frozen=True)
class Outcome:
    """What an implementation did with one case: a ``result``, an error ``code``, or
    ``unsupported`` (the implementation does not offer that op: reported as skipped)."""

    result: Any = None
    error: str | None = None
    unsupported: bool = False
    crash: str | None = None  # the implementation failed without a stable code


Executor = Callable[[str, dict[str, Any]], Outcome]


def builtin_executor(ops: dict[str, Operation] | None = None) -> Executor:
    """Runs cases against this package's own implementation."""
    table = operations() if ops is None else ops

    def execute(op: str, inp: dict[str, Any]) -> Outcome:
        func = table.get(op)
        if func is None:
            return Outcome(unsupported=True)
        try:
            return Outcome(result=func(inp))
        except PosewireError as exc:
            return Outcome(error=exc.code)
        except Exception as exc:  # spec §6.4: one case's crash is that case's FAILED verdict
            # (a malformed case input or a reference bug), never a traceback that ends the run
            return Outcome(crash=f"{type(exc).__name__}: {exc}")

    return execute


class ProcessExecutor:
    """Runs cases against another implementation, in any language (spec §6.3).

    The command is started once; for each case the kit writes one JSON line
    ``{"id", "op", "input"}`` to its stdin and reads one JSON line back:
    ``{"result": ...}``, ``{"error": "<stable code>"}`` or ``{"unsupported": true}``.
    """

    def __init__(self, command: list[str], *, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)

    def __call__(self, op: str, inp: dict[str, Any]) -> Outcome:
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the implementation exited (status {self.process.returncode})")
        try:
            self.process.stdin.write(json.dumps({"op": op, "input": inp}) + "\n")
            self.process.stdin.flush()
        except OSError as exc:  # a closed pipe: the implementation has gone
            raise RuntimeError(f"the implementation stopped reading ({exc})") from exc
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout)
        if not ready:
            self.process.kill()
            raise RuntimeError(f"the implementation gave no answer within {self.timeout} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the implementation exited (status {self.process.poll()})")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            return Outcome(crash=f"answer is not JSON: {line[:200]!r}")
        if not isinstance(reply, dict):
            return Outcome(crash=f"answer is not a JSON object: {line[:200]!r}")
        if reply.get("unsupported"):
            return Outcome(unsupported=True)
        if "error" in reply:
            return Outcome(error=str(reply["error"]))
        return Outcome(result=reply.get("result"))

    def close(self) -> None:
        if self.process.stdin is not None:
            # an implementation that was stopped (or exited) leaves a broken pipe: closing
            # flushes into it; that must not end the run before the reports (spec §6.4)
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_case(case: dict[str, Any], execute: Executor, file: str = "") -> CaseResult:
    """Judge one case (spec §6.3): results within ``tolerance``, or the expected error. Whatever
    goes wrong while running it (the implementation hung, exited, or the comparison met a value
    it cannot read) is that case's FAILED verdict; the run goes on (spec §6.4)."""
    try:
        result = _judge(case, execute, file)
    except Exception as exc:  # spec §6.4: one case never ends the run
        result = CaseResult(file, str(case.get("id", "")), False, f"the implementation failed: {exc}")
    return replace(result, op=str(case.get("op", "")), rule=str(case.get("rule", "")),
                   level="SHOULD" if case.get("level") == "SHOULD" else "MUST")


def _judge(case: dict[str, Any], execute: Executor, file: str) -> CaseResult:
    out = execute(case["op"], case["input"])
    if out.crash is not None:
        return CaseResult(file, case["id"], False, f"the implementation failed: {out.crash}")
    if out.unsupported:
        return CaseResult(file, case["id"], False, f"op {case['op']!r} not supported", skipped=True)
    if out.error is not None:
        if out.error == case.get("expect_error"):
            return CaseResult(file, case["id"], True, "")
        return CaseResult(file, case["id"], False, f"raised {out.error}")
    if "expect_error" in case:
        return CaseResult(file, case["id"], False,
                          f"expected error {case['expect_error']}, got {out.result!r}")
    why = compare(out.result, case["expect"], float(case.get("tolerance", 1e-9)))
    return CaseResult(file, case["id"], why is None, why or "")


def run_dir(directory: Path, execute: Executor | None = None) -> list[CaseResult]:
    """Every case of every file in ``directory``, against ``execute`` (default: built in)."""
    run = builtin_executor() if execute is None else execute
    return [run_case(case, run, file) for file, case in load_cases(directory)]
