"""Spec §1.5 and the landing rules: a landing run is deterministic and never passes by not running. The project's
``tests/conftest.py`` is copied beside a small test file and pytest runs it in a subprocess,
with and without ``CI``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = '''
import pytest
from hypothesis import settings


def test_needs_a_tool() -> None:
    pytest.skip("nats-server is not installed (.ci/run installs it)")


def test_profile() -> None:
    print("PROFILE", settings.default.derandomize, settings.default.database)
'''


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfEs", "-s", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env={**clean, **env},
                          timeout=120, check=False)


def test_a_skip_fails_under_ci_naming_what_is_missing(tmp_path: Path) -> None:
    done = _run(tmp_path, CI="1")
    assert done.returncode == 1, done.stdout
    assert "skipped under CI" in done.stdout and "nats-server is not installed" in done.stdout
    # the CI profile: derandomized, no example database
    assert "PROFILE True None" in done.stdout


def test_outside_ci_a_skip_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout
    assert "SKIPPED [1]" in done.stdout and "nats-server is not installed" in done.stdout
    assert "PROFILE False" in done.stdout  # dev: random exploration
