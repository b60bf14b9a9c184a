"""The wheel carries the viewer page, its pinned npm libraries and the registry export
under ``posewire/web`` (issue 20, deliverable 1): :func:`posewire.servers.assets.vendor_web`
copies them at build time from ``js/`` (the libraries as ``npm ci`` installed them from
``js/package-lock.json``, their versions checked against the lock). Editable installs
copy nothing: the page is served from the checkout. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


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


setup(cmdclass={"build_py": BuildWithWeb})
