"""Mutation test of the spec's pins (spec §6.9): every pin must be able to fail.

``.venv/bin/python tools/mutate_pins.py`` (``make mutate``). For each requirement of the spec
(a block with MUST/SHOULD, cut as ``tests/test_spec_pins.py`` cuts it) the mutants listed for it
in ``tools/mutants.toml`` each break that one rule in the reference, in this process: the source
of one function has one exact snippet replaced, is compiled in its module's namespace, and its
code object is swapped into the live function (every alias, table and closure that holds the
function runs the mutant), then put back. With the rule broken, the tool runs the pins the
spec names for that requirement — and only those a third party can run:

* conformance vectors (a file, a case id or a ``prefix-*``), run through the kit's own runner
  (:func:`posewire.conformance.run_case`) against the mutated reference;
* relay checks ``relay:<id>`` (the kit's relay suite against the mutated reference relay,
  :class:`posewire.relay.Relay`, over loopback);
* producer checks ``producer:<id>`` (the kit's producer check watching the reference
  :class:`~posewire.producers.publisher.Publisher` send frames the mutated codec made).

A test of the reference (``tests/…``, ``test_…``) is never a pin here. A mutant is *killed*
when one of those pins fails; it *survives* when all pass, and the tool then exits 1 naming
the requirement. A requirement marked ``review`` (no artefact can observe it, the reason in
the spec beside it) is reported apart, not counted as killed. Before any mutant the named pins
must pass on the unbroken reference (else a kill would mean nothing). A requirement with
neither a mutant nor ``review``, or a mutant whose snippet no longer occurs exactly once, is
also a failure: the list must follow the spec and the code.

Options: ``--spec DIR`` (default ``spec/``), ``--mutants FILE`` (default
``tools/mutants.toml``), ``--only TEXT`` (requirements whose file:line or text contains it),
``-v`` (each mutant's verdict).
"""

from __future__ import annotations

import os

os.environ.setdefault("POSEWIRE_PURE_PYTHON", "1")  # the .py sources are what is mutated

import argparse
import ast
import asyncio
import contextlib
import importlib
import inspect
import json
import sys
import textwrap
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_spec_pins import Block, pins, requirement_blocks  # noqa: E402

from posewire.conformance import builtin_executor, run_case  # noqa: E402

VECTORS = ROOT / "spec" / "conformance"
MUTANTS = Path(__file__).resolve().parent / "mutants.toml"
TOKEN = "RfSx0Q7m2JkV9cWbTq4LzN8yHd3EaPu6GoYi1wKs"


class MutantError(Exception):
    """A mutant that cannot be applied (its snippet is gone or ambiguous)."""


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # the spec file of its requirement
    phrase: str  # a phrase of the requirement's block
    target: str  # "module:qualname"
    find: str
    replace: str


@dataclass
class Requirement:
    block: Block
    refs: list[str]
    mutants: list[Mutant] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.block.file}:{self.block.line}"

    @property
    def review(self) -> bool:
        return "review" in self.refs

    @property
    def third_party(self) -> list[str]:
        """The pins a third party can run: vectors and kit checks, never tests of the reference."""
        return [r for r in self.refs if r != "review" and not r.startswith(("tests/", "test_"))]


def load_mutants(path: Path) -> list[Mutant]:
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Mutant(m["id"], m["requirement"][0], m["requirement"][1], m["target"], m["find"],
                   m["replace"]) for m in doc.get("mutant", [])]


# ------------------------------------------------------------------ applying a mutant


def _resolve(target: str) -> FunctionType:
    module_name, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
    obj = inspect.unwrap(obj)
    if not isinstance(obj, FunctionType):
        raise MutantError(f"{target} is not a Python function (a compiled module?)")
    return obj


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The reference with ``mutant`` in place, for the ``with`` block."""
    func = _resolve(mutant.target)
    source = textwrap.dedent(inspect.getsource(func))
    count = source.count(mutant.find)
    if count != 1:
        raise MutantError(f"mutant {mutant.id}: its snippet occurs {count} times in "
                          f"{mutant.target} (expected once): {mutant.find!r}")
    tree = ast.parse(source.replace(mutant.find, mutant.replace))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise MutantError(f"mutant {mutant.id}: {mutant.target} is not a def")
    node.decorator_list = []
    if func.__code__.co_freevars:
        # a nested function: compile it inside a function that provides the same free names
        outer = ast.parse("def __outer__():\n    pass\n").body[0]
        assert isinstance(outer, ast.FunctionDef)
        outer.body = [ast.parse(f"{name} = None").body[0] for name in func.__code__.co_freevars]
        outer.body += [node, ast.Return(ast.Name(node.name, ast.Load()))]
        tree.body = [outer]
    ast.fix_missing_locations(tree)
    namespace = dict(func.__globals__)
    exec(compile(tree, f"<mutant {mutant.id}>", "exec"), namespace)
    made = namespace["__outer__"]() if func.__code__.co_freevars else namespace[node.name]
    new_code = made.__code__.replace(co_name=func.__code__.co_name,
                                     co_qualname=func.__code__.co_qualname)
    old_code = func.__code__
    func.__code__ = new_code
    try:
        yield
    finally:
        func.__code__ = old_code


# ------------------------------------------------------------------ running the pins


def _cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for file in sorted(VECTORS.glob("*.json")):
        out += [(file.name, c) for c in json.loads(file.read_text())["cases"]]
    return out


CASES = _cases()


def vector_cases(refs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    chosen = []
    for file, case in CASES:
        for ref in refs:
            name = ref.removeprefix("spec/conformance/")
            if (name == file or name == case["id"]
                    or (name.endswith("*") and case["id"].startswith(name[:-1]))):
                chosen.append((file, case))
                break
    return chosen


def _failures_vectors(refs: list[str]) -> list[str]:
    execute = builtin_executor()
    failed = []
    for file, case in vector_cases(refs):
        result = run_case(case, execute, file)
        if not result.passed:
            failed.append(f"{file} {case['id']}: {result.why}")
    return failed


def _loopback_only(check: str) -> bool:
    return check != "auth-beyond-loopback"


def _non_loopback_address() -> str | None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


async def _relay_failures(checks: list[str]) -> list[str]:
    from posewire.conformance.relay_suite import run_relay_suite
    from posewire.relay import Relay

    failed = []
    local = tuple(c for c in checks if _loopback_only(c))
    if local:
        async with Relay("127.0.0.1", port=0, token=TOKEN) as relay:
            results = await run_relay_suite(relay.url, token=TOKEN, only=local)
        failed += [f"relay:{r.id}: {r.why}" for r in results if not r.passed]
    if "auth-beyond-loopback" in checks:
        address = _non_loopback_address()
        if address is None:
            failed.append("relay:auth-beyond-loopback: no non-loopback address to run it on")
        else:
            async with Relay(address, port=0, token=TOKEN, insecure=True) as relay:
                results = await run_relay_suite(relay.url, token=TOKEN,
                                                only=("auth-beyond-loopback",))
            failed += [f"relay:{r.id}: {r.why}" for r in results if not r.passed]
    return failed


def _producer_frames() -> list[Any]:
    """Frame values the reference producer makes from the palm inputs of the vectors
    (``palm.encode`` cases): each side's palm encoded by the (possibly mutated) codec."""
    import numpy as np

    from posewire.codec.quaternion import palm_encode
    from posewire.codec.registry import REGISTRY
    from posewire.codec.vector import DEFAULTS

    frames = []
    for _file, case in CASES:
        if case["op"] != "palm.encode" or "expect" not in case:
            continue
        inp = case["input"]
        values = np.array(DEFAULTS, dtype=np.float64)
        side = inp.get("side", "r")
        v, _ = palm_encode(np.asarray(inp["q"], dtype=np.float64), side=side)
        idx = [REGISTRY.index(f"w_q{a}_{side}") for a in "xyz"]
        values[idx] = np.asarray(v, dtype=np.float64).reshape(-1)[:3]
        frames.append(values)
    return frames


async def _producer_failures(checks: list[str]) -> list[str]:
    import socket

    from posewire.codec.calibration import REFERENCE_CALIBRATION
    from posewire.conformance.producer_suite import watch_producer
    from posewire.producers.publisher import Publisher

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    frames = _producer_frames()
    ready = asyncio.Event()
    task = asyncio.create_task(watch_producer("127.0.0.1", port, frames=len(frames), seconds=10.0,
                                              timeout=5.0, ready=ready))
    await ready.wait()
    try:
        async with Publisher(f"ws://127.0.0.1:{port}", "mutate",
                             calibration=REFERENCE_CALIBRATION, reconnect=False) as pub:
            for values in frames:
                await pub.send_frame(values)
                await asyncio.sleep(0.009)
    except Exception as exc:  # the kit refused the producer (e.g. no subprotocol): a failure
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return [f"producer:{c}: the kit refused the producer ({exc})" for c in checks]
    results = await task
    return [f"producer:{r.id}: {r.why}" for r in results if r.id in checks and not r.passed]


def failures(refs: list[str]) -> list[str]:
    """The pins among ``refs`` that fail against the reference as it is now."""
    relay = [r.removeprefix("relay:") for r in refs if r.startswith("relay:")]
    producer = [r.removeprefix("producer:") for r in refs if r.startswith("producer:")]
    vectors = [r for r in refs if not r.startswith(("relay:", "producer:"))]
    out = _failures_vectors(vectors) if vectors else []
    if relay:
        out += asyncio.run(_relay_failures(relay))
    if producer:
        out += asyncio.run(_producer_failures(producer))
    return out


# ------------------------------------------------------------------ the run


@dataclass
class Report:
    requirements: int = 0
    mutants: int = 0
    killed: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    unpinnable: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.survived and not self.errors


def collect(spec: Path, mutants: list[Mutant]) -> tuple[list[Requirement], list[str]]:
    reqs = [Requirement(b, pins(b)) for b in requirement_blocks(spec)]
    errors = []
    for m in mutants:
        owners = [r for r in reqs if r.block.file == m.file and m.phrase in r.block.text]
        if len(owners) != 1:
            errors.append(f"mutant {m.id}: {len(owners)} requirements of {m.file} hold "
                          f"{m.phrase!r} (expected one)")
            continue
        owners[0].mutants.append(m)
    return reqs, errors


def run(spec: Path, mutants: list[Mutant], *, only: str = "",
        say: Callable[[str], None] = print, verbose: bool = False) -> Report:
    reqs, errors = collect(spec, mutants)
    report = Report(errors=errors)
    for req in reqs:
        if only and only not in req.name and only not in req.block.text:
            continue
        report.requirements += 1
        head = f"{req.name}: {req.block.text[:90]}"
        if req.review:
            reason = req.block.text[req.block.text.find("`review`"):][:160]
            report.unpinnable.append(f"{req.name}: {reason}")
            continue
        if not req.third_party:
            report.errors.append(f"{head}\n    names no pin a third party can run "
                                 f"(only tests of the reference: {req.refs})")
            continue
        empty = [r for r in req.third_party
                 if not r.startswith(("relay:", "producer:")) and not vector_cases([r])]
        if empty:
            report.errors.append(f"{head}\n    names pins that hold no vector: {empty}")
            continue
        if not req.mutants:
            report.errors.append(f"{head}\n    has no mutant in the mutants file")
            continue
        broken = failures(req.third_party)
        if broken:
            report.errors.append(f"{head}\n    its pins fail on the unbroken reference: "
                                 f"{broken[:3]}")
            continue
        for m in req.mutants:
            report.mutants += 1
            try:
                with applied(m):
                    caught = failures(req.third_party)
            except MutantError as exc:
                report.errors.append(f"{head}\n    {exc}")
                continue
            if caught:
                report.killed.append(f"{req.name} {m.id}")
                if verbose:
                    say(f"killed    {req.name} {m.id}: {caught[0][:110]}")
            else:
                report.survived.append(f"{head}\n    mutant {m.id} ({m.target}) passes every "
                                       f"pin it names: {req.third_party}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=ROOT / "spec")
    parser.add_argument("--mutants", type=Path, default=MUTANTS)
    parser.add_argument("--only", default="")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    report = run(args.spec, load_mutants(args.mutants), only=args.only, verbose=args.verbose)
    for line in report.survived:
        print(f"SURVIVED  {line}")
    for line in report.errors:
        print(f"ERROR     {line}")
    for line in report.unpinnable:
        print(f"UNPINNABLE {line}")
    print(f"requirements {report.requirements}, mutants {report.mutants}, killed "
          f"{len(report.killed)}, survived {len(report.survived)}, unpinnable (review) "
          f"{len(report.unpinnable)}, errors {len(report.errors)}; "
          f"{time.perf_counter() - start:.1f} s")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
