"""The conformance kit against an independent JavaScript implementation (spec §6.4).

`tests/interop/kit.mjs` was written from `spec/` and `schemas/` alone, in plain Node.js
with its own msgpack codec; it speaks the kit's JSON-lines protocol. This test runs
`posewire conformance --exec "node tests/interop/kit.mjs"` and requires every case to
pass, which checks both that the spec is complete enough to implement from and that the
kit's `--exec` path works end to end.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "tests" / "interop" / "kit.mjs"
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.MULTILINE)
MAX_SKIPPED = 0  # kit.mjs implements every op of spec/conformance/ (encoder.landmarks: js/posewire/encoder.mjs)


def test_js_kit_passes_every_case() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JavaScript interop kit cannot run")
    proc = subprocess.run(
        [sys.executable, "-m", "posewire.cli", "conformance", "--exec", f"{node} {KIT}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = proc.stdout + proc.stderr
    match = SUMMARY.search(proc.stdout)
    assert match is not None, output
    passed, failed, skipped = (int(g) for g in match.groups())
    assert proc.returncode == 0, output
    assert failed == 0, output
    assert skipped <= MAX_SKIPPED, output
    assert passed > 0, output
