"""Which build of the live encoder's float kernels runs: compiled (mypyc) or pure Python (the same results, spec §1.5).

``setup.py`` compiles :data:`NATIVE` with mypyc where it can (mypyc, a C compiler, the
Python headers) and records the sha256 of each compiled source in ``_native.json`` beside
the compiled modules. The pure-Python modules are always installed and are the reference:
the tests run against both (``POSEWIRE_PURE_PYTHON=1``), and ``tests/test_native.py`` pins
the compiled encoder to the pure one bit for bit.

:func:`install` (run by ``posewire/__init__.py``, before any of them is imported) selects
the pure modules, all of them (compiled modules call each other directly), when
``POSEWIRE_PURE_PYTHON`` is set to anything but ``""``/``"0"``, when nothing was compiled,
or when a source no longer matches the build (an edit since ``make install``: a stale
compiled module is never used). :data:`STATUS` says which and why.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["NATIVE", "STATUS", "compiled", "install", "source_of"]

#: The modules setup.py compiles (its NATIVE keeps the same names).
NATIVE: tuple[str, ...] = ("posewire.codec.quaternion", "posewire.codec.euler", "posewire.codec.elbow",
                           "posewire.producers.hand_single", "posewire.producers.landmarks_single",
                           "posewire.codec.ieee", "posewire.codec.morph", "posewire.producers.face",
                           "posewire.consumers.ik_single")
_STAMP = "_native.json"
#: "compiled" or "pure Python (why)", set by :func:`install`.
STATUS = "not decided"


class _PureFinder(importlib.abc.MetaPathFinder):
    """Finds the :data:`NATIVE` modules as their ``.py`` sources (ahead of the compiled ones)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in NATIVE:
            return None
        for entry in path or ():
            source = Path(entry) / (fullname.rpartition(".")[2] + ".py")
            if source.is_file():
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def source_of(name: str) -> Path | None:
    """The ``.py`` source of a :data:`NATIVE` module (its package found, not imported)."""
    package, _, leaf = name.rpartition(".")
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        if (Path(folder) / f"{leaf}.py").is_file():
            return Path(folder) / f"{leaf}.py"
    return None


def _why_pure() -> str | None:
    if os.environ.get("POSEWIRE_PURE_PYTHON", "") not in ("", "0"):
        return "POSEWIRE_PURE_PYTHON is set"
    spec = importlib.util.find_spec("posewire.producers")
    folders = [Path(p) for p in (spec.submodule_search_locations or ())] if spec is not None else []
    stamp = next((f / _STAMP for f in folders if (f / _STAMP).is_file()), None)
    if stamp is None:
        return "not compiled"
    try:
        built = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"unreadable {stamp}"
    for name in NATIVE:
        source = source_of(name)
        if source is None:
            return f"the source of {name} missing"
        try:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
        except OSError:
            return f"{source} missing"
        if built.get(name) != digest:
            return f"{source} changed since the build (make install compiles it again)"
    return None


def install() -> str:
    """Select the build (module docstring); returns :data:`STATUS`. Idempotent."""
    global STATUS
    if STATUS != "not decided":
        return STATUS
    why = _why_pure()
    if why is None:
        STATUS = "compiled"
    else:
        STATUS = f"pure Python ({why})"
        if not any(isinstance(f, _PureFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _PureFinder())
    return STATUS


def compiled() -> bool:
    """Whether the :data:`NATIVE` modules in use are the compiled ones (imports one to see)."""
    module = importlib.import_module(NATIVE[0])
    return not str(getattr(module, "__file__", "")).endswith(".py")
