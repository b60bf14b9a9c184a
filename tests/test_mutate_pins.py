"""Spec §6.9 "Every pin can fail": ``tools/mutate_pins.py`` breaks each requirement of the
spec in the reference (``tools/mutants.toml``) and runs the vectors and kit checks the spec
names for it. The whole run must kill every mutant; and the tool must be able to fail: a
requirement whose pin cannot catch its mutant is reported as surviving, one with no mutant
or with only tests of the reference as pins is an error, each naming the requirement."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "mutate_pins.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POSEWIRE_PURE_PYTHON": "1"}
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600, check=False)


def test_every_requirement_of_the_spec_kills_its_mutants() -> None:
    done = _run()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    counts = dict(part.rsplit(" ", 1) for part in summary.split(";")[0].split(", "))
    assert int(counts["survived"]) == 0 and int(counts["errors"]) == 0, summary
    assert int(counts["requirements"]) >= 55 and int(counts["mutants"]) >= 70, summary
    assert int(counts["killed"]) == int(counts["mutants"]), summary
    # the review requirements are reported apart, each with its reason
    unpinnable = [line for line in done.stdout.splitlines() if line.startswith("UNPINNABLE")]
    assert len(unpinnable) == int(counts["unpinnable (review)"]) and all("`review`:" in u
                                                                        for u in unpinnable)


FAKE = """# 9. Fake

A consumer MUST reject a viseme mix over 1 (pinned: `in-range-unchanged`).

A consumer MUST do something nothing breaks (pinned: `in-range-unchanged`).

A consumer MUST be pinned by a test only (pinned: `test_every_must_and_should_names_what_pins_it`).
"""

MUTANTS = '''
[[mutant]]
id = "fake-sum-unchecked"
requirement = ["99-fake.md", "reject a viseme mix over 1"]
target = "posewire.codec.conditions:_check_mouthing"
find = "if ordered_sum1(out) > 1.0 + MOUTHING_SUM_TOLERANCE:"
replace = "if False:"

[[mutant]]
id = "fake-snippet-gone"
requirement = ["99-fake.md", "something nothing breaks"]
target = "posewire.codec.conditions:_check_mouthing"
find = "this text is in no function"
replace = "pass"
'''


def test_a_requirement_whose_pins_cannot_fail_is_reported_surviving(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    spec.mkdir()
    shutil.copy(ROOT / "spec" / "02-frames.md", spec)  # one real file: its requirement has no mutant here
    (spec / "99-fake.md").write_text(FAKE)
    mutants = tmp_path / "mutants.toml"
    mutants.write_text(MUTANTS)
    done = _run("--spec", str(spec), "--mutants", str(mutants), "--only", "99-fake.md")
    assert done.returncode == 1, done.stdout
    out = done.stdout
    # a vector that does not exercise the rule: the mutant survives, the requirement named
    assert "SURVIVED  99-fake.md:3: A consumer MUST reject a viseme mix over 1" in out, out
    assert "mutant fake-sum-unchecked" in out
    # a mutant that no longer applies, and a requirement pinned by a test only: errors
    assert "its snippet occurs 0 times" in out and "99-fake.md:5" in out
    assert "99-fake.md:7" in out and "names no pin a third party can run" in out
    assert "killed 0, survived 1" in out.splitlines()[-1]


def test_a_requirement_without_a_mutant_fails_the_run(tmp_path: Path) -> None:
    mutants = tmp_path / "mutants.toml"
    mutants.write_text("")
    done = _run("--mutants", str(mutants), "--only", "02-frames.md")
    assert done.returncode == 1
    assert "has no mutant in the mutants file" in done.stdout, done.stdout
