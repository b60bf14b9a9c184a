"""Building the wheel of this tree for the packaging tests (``pip wheel`` of a copy)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["build_wheel"]

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(out: Path, tree: Path) -> Path:
    """The wheel of this checkout, built in ``out`` from a copy in ``tree`` (which keeps
    build/ and *.egg-info out of the checkout), with the npm packages as ``npm ci``
    installed them (setup.py copies and pins what the pages need, checked against
    js/package-lock.json)."""
    shutil.copytree(
        ROOT, tree, symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "node_modules", "build", "*.egg-info", "__pycache__",
                                      ".mypy_cache", ".ruff_cache", ".hypothesis", ".pytest_cache"),
    )
    (tree / "js" / "node_modules").symlink_to(ROOT / "js" / "node_modules", target_is_directory=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(tree)],
        check=True, capture_output=True,
    )
    wheels = list(out.glob("posewire-*.whl"))
    assert len(wheels) == 1
    return wheels[0]
