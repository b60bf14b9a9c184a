"""The wheel carries the viewer page, its pinned npm libraries and the registry export
under ``posewire/web`` (what ``pip install posewire`` serves): :func:`posewire.servers.assets.vendor_web`
copies them at build time from ``js/`` (the libraries as ``npm ci`` installed them from
``js/package-lock.json``, their versions checked against the lock). Editable installs
copy nothing: the page is served from the checkout.

The live encoder's typed float kernels (:data:`NATIVE`, posewire.native) are also compiled with
mypyc where it can be done: mypyc (the build requirement ``mypy``) and a C compiler with
the Python headers; by the editable install of the checkout (``make install``), and for a
wheel only with ``POSEWIRE_NATIVE=1`` (the default wheel stays pure Python, py3-none-any).
Anything missing or failing leaves the pure-Python modules, which are always installed
and stay the reference (:mod:`posewire.native`: ``POSEWIRE_PURE_PYTHON=1``
selects them, and a compiled module older than its source is never used). Everything else
is in pyproject.toml.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: The modules compiled (installed name -> repository path); posewire/native.py keeps the same list.
NATIVE = {"posewire.codec.quaternion": "codec/quaternion.py", "posewire.codec.euler": "codec/euler.py",
          "posewire.codec.elbow": "codec/elbow.py", "posewire.producers.hand_single": "producers/hand_single.py",
          "posewire.producers.landmarks_single": "producers/landmarks_single.py",
          "posewire.codec.ieee": "codec/ieee.py", "posewire.codec.morph": "codec/morph.py",
          "posewire.producers.face": "producers/face.py",
          "posewire.consumers.ik_single": "consumers/ik_single.py"}
#: The mypyc group's shared library (posewire.producers._native__mypyc).
GROUP = "posewire.producers._native"
#: The build-time record of the compiled sources (posewire/native.py reads it).
STAMP = "_native.json"
TREE = HERE / "build" / "native"
#: The package folders mypy needs to see (the installed layout, as tools/typecheck.py builds it).
LAYOUT = {"posewire": "posewire", "posewire/codec": "codec", "posewire/producers": "producers",
          "posewire/consumers": "consumers"}


class BuildWithWeb(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        spec = importlib.util.spec_from_file_location("_posewire_assets", HERE / "posewire" / "servers" / "assets.py")
        assert spec is not None and spec.loader is not None
        assets = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(assets)
        assets.vendor_web(HERE, Path(self.build_lib) / "posewire" / "web")


def _say(message: str) -> None:
    print(f"posewire native kernels: {message}", file=sys.stderr)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree() -> None:
    """The installed layout of the packages mypy reads (mypy cannot follow package-dir)."""
    if TREE.exists():
        shutil.rmtree(TREE)
    for installed, folder in LAYOUT.items():
        for source in (HERE / folder).glob("*.py"):
            target = TREE / installed / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (TREE / "mypy.ini").write_text("[mypy]\nignore_missing_imports = True\nfollow_imports = silent\n",
                                   encoding="utf-8")


def _native_extensions() -> list[Extension]:
    """mypyc's extensions for :data:`NATIVE`, or none (pure Python) where it cannot be done."""
    if os.environ.get("POSEWIRE_PURE_PYTHON"):
        _say("POSEWIRE_PURE_PYTHON is set: pure Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("mypyc not available: pure Python")
        return []
    try:
        _tree()
        here = Path.cwd()
        os.chdir(TREE)
        try:
            extensions: list[Extension] = mypycify(
                ["--config-file", "mypy.ini", *(name.replace(".", "/") + ".py" for name in NATIVE)],
                opt_level="3", group_name=GROUP, target_dir=str(TREE / "c"))
        finally:
            os.chdir(here)
    except BaseException as error:
        _say(f"mypyc failed ({error!r}): pure Python")
        return []
    for ext in extensions:
        # IEEE results as the interpreter's (spec §1.5): no fused multiply-add contraction
        ext.extra_compile_args = [*getattr(ext, "extra_compile_args", []), "-ffp-contract=off"]
        ext.sources = [s if os.path.isabs(s) else str(TREE / s) for s in ext.sources]
        ext.include_dirs = [d if os.path.isabs(d) else str(TREE / d) for d in ext.include_dirs]
    return extensions


class OptionalBuildExt(build_ext):  # type: ignore[misc]
    """build_ext that never fails the install: without a compiler or headers the compiled
    modules are left out (all of them: they call each other directly) and the pure-Python
    ones are used."""

    def run(self) -> None:
        if not self.extensions:
            return
        try:
            super().run()
        except BaseException as error:
            _say(f"not compiled ({error!r}): pure Python")
            for ext in self.extensions:
                built = Path(self.get_ext_fullpath(ext.name))
                if built.exists():
                    built.unlink()
            return
        stamp = {name: _sha256(HERE / path) for name, path in NATIVE.items()}
        target = Path(self.get_ext_fullpath(GROUP + "__mypyc")).parent / STAMP
        target.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _say(f"compiled {', '.join(NATIVE)}")

    def get_outputs(self) -> list[str]:
        outputs: list[str] = super().get_outputs()
        stamp = Path(self.get_ext_fullpath(GROUP + "__mypyc")).parent / STAMP if self.extensions else None
        return outputs + ([str(stamp)] if stamp is not None and stamp.exists() else [])


kwargs: dict[str, Any] = {"cmdclass": {"build_py": BuildWithWeb, "build_ext": OptionalBuildExt}}
# compiled in the checkout's editable install (make install) and by build_ext; a wheel stays
# pure Python (py3-none-any: one wheel for every platform) unless POSEWIRE_NATIVE=1
if {"editable_wheel", "build_ext", "develop"} & set(sys.argv[1:2]) or os.environ.get("POSEWIRE_NATIVE") == "1":
    kwargs["ext_modules"] = _native_extensions()
setup(**kwargs)
