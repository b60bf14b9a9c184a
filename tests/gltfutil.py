"""The real Khronos glTF validator (npm ``gltf-validator``, pinned by ``tests/gltf``'s lock
file) run on a file: its JSON report."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VALIDATE = ROOT / "tests" / "gltf" / "validate.mjs"
NODE_MODULES = ROOT / "tests" / "gltf" / "node_modules" / "gltf-validator"


def validate_gltf(path: Path) -> dict[str, object]:
    """The validator's report of the glTF or GLB at ``path``; fails the test when the
    validator is not installed (``make install``)."""
    node = shutil.which("node")
    if node is None or not NODE_MODULES.is_dir():
        pytest.fail("the glTF validator is not installed: run `make install` "
                    "(npm ci in tests/gltf; needs node >= 18)")
    proc = subprocess.run([node, str(VALIDATE), str(path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    return report
