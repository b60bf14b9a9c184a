"""Packaging: one top-level name (``posewire``), the layers import under it, and a wheel
built from this tree imports outside the repository."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("codec", "transport", "producers", "consumers")
SOURCE_DIRS = (*LAYERS, "posewire", "tests", "benchmarks", "spec")


def _imports(file: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _python_files() -> list[Path]:
    links = tuple(ROOT / "posewire" / layer for layer in LAYERS)
    return [
        file
        for folder in SOURCE_DIRS
        for file in (ROOT / folder).rglob("*.py")
        # posewire/codec etc. are links to the top-level folders: each file once
        if not any(file.is_relative_to(link) for link in links)
    ]


def test_no_bare_top_level_layer_imports() -> None:
    offenders = [
        f"{file.relative_to(ROOT)}: {name}"
        for file in _python_files()
        for name in _imports(file)
        if name.split(".")[0] in LAYERS
    ]
    assert offenders == []


def test_codec_imports_nothing_above_it() -> None:
    for file in (ROOT / "codec").rglob("*.py"):
        for name in _imports(file):
            if name.startswith("posewire"):
                assert name.startswith("posewire.codec"), f"{file.name} imports {name}"


def test_layers_import_only_downwards() -> None:
    # codec <- transport <- producers, consumers <- posewire (CLI, relay)
    allowed = {"transport": ("posewire.codec", "posewire.transport"),
               "producers": ("posewire.codec", "posewire.transport", "posewire.producers"),
               "consumers": ("posewire.codec", "posewire.transport", "posewire.consumers")}
    for layer, ok in allowed.items():
        for file in (ROOT / layer).rglob("*.py"):
            for name in _imports(file):
                if name.startswith("posewire"):
                    assert name.startswith(ok), f"{layer}/{file.name} imports {name}"


def test_layer_links_point_at_the_top_level_folders() -> None:
    for layer in LAYERS:
        link = ROOT / "posewire" / layer
        assert link.is_symlink(), f"posewire/{layer} is not a link"
        assert link.resolve() == (ROOT / layer).resolve()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # a copy of the tree (links kept as links) keeps build/ and *.egg-info out of the checkout
    tree = tmp_path_factory.mktemp("tree") / "posewire"
    shutil.copytree(
        ROOT, tree, symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "node_modules", "build", "*.egg-info", "__pycache__",
                                      ".mypy_cache", ".ruff_cache", ".hypothesis", ".pytest_cache"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(tree)],
        check=True, capture_output=True,
    )
    wheels = list(out.glob("posewire-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_holds_only_posewire_at_the_top(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"posewire", wheel.name.split("-py3")[0] + ".dist-info"}
    for layer in LAYERS:
        assert f"posewire/{layer}/__init__.py" in names
        assert f"posewire/{layer}/py.typed" in names
    assert "posewire/codec/registry.py" in names


def test_wheel_carries_the_conformance_vectors(wheel: Path) -> None:
    # spec §6.4: the kit installed from the wheel finds its vectors without the repository
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    shipped = {f"posewire/conformance/vectors/{p.name}"
               for p in (ROOT / "spec" / "conformance").glob("*.json")}
    assert shipped and shipped <= names


def test_installed_wheel_imports_outside_the_repository(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )
    code = (
        "import posewire.codec, posewire.transport, posewire.producers, posewire.consumers, sys;"
        "print(posewire.codec.__file__);"
        "print(posewire.codec.REGISTRY.version);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('codec', 'transport', 'producers', 'consumers')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    file, version, bare = result.stdout.splitlines()
    assert Path(file).resolve().is_relative_to(target.resolve())
    assert version == "1.0.0"
    assert bare == "[]"
