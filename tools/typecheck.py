"""mypy over the package as it installs: ``.venv/bin/python tools/typecheck.py`` (``make lint``).

``pyproject.toml`` maps the top-level folders ``codec/``, ``transport/``, ``producers/`` and
``consumers/`` to ``posewire.codec`` … (``[tool.setuptools.package-dir]``; no links in the
repository). mypy finds modules by path and cannot follow that mapping (nor the editable
install's import hook), so ``mypy posewire`` alone would not see the layers. This script
copies ``posewire/`` and each mapped folder into ``build/typecheck/`` in the installed layout
(``build/typecheck/posewire/codec/…``), runs mypy there with the project's configuration, and
prints the findings with the repository's paths (``codec/wire.py:12: …``). Extra arguments go
to mypy. The exit status is mypy's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"


def layout() -> dict[str, str]:
    """Installed folder (``posewire/codec``) -> repository folder (``codec``), Python only."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"].get("package-dir", {})
    out = {"posewire": "posewire"}
    for package, folder in mapping.items():
        if any((ROOT / folder).glob("*.py")):  # the vectors (JSON) need no type check
            out[package.replace(".", "/")] = folder
    return out


def build_tree() -> dict[str, str]:
    folders = layout()
    if TREE.exists():
        shutil.rmtree(TREE)
    for installed, folder in sorted(folders.items()):
        for source in (ROOT / folder).rglob("*"):
            rel = source.relative_to(ROOT / folder)
            if "__pycache__" in rel.parts or not source.is_file() or source.suffix not in (".py", ".pyi", ".typed"):
                continue
            # a mapped sub-package (posewire/codec) comes from its own folder, not from posewire/
            if installed == "posewire" and rel.parts[0] in {k.split("/", 1)[1] for k in folders if "/" in k}:
                continue
            target = TREE / installed / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folders


def main(argv: list[str]) -> int:
    folders = build_tree()
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(ROOT / ".mypy_cache" / "typecheck"), *argv, "posewire"],
        cwd=TREE, capture_output=True, text=True, check=False)
    # longest installed folder first: posewire/codec/x.py -> codec/x.py, posewire/cli/command.py stays
    pattern = re.compile("|".join(re.escape(k + "/") for k in sorted(folders, key=len, reverse=True)))
    for stream, text in ((sys.stdout, result.stdout), (sys.stderr, result.stderr)):
        stream.write(pattern.sub(lambda m: folders[m.group(0)[:-1]] + "/", text))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
