"""The files ``posewire view`` and ``posewire demo`` serve and play, in a checkout and in
an installed wheel (``pip install posewire``, no checkout).

In the wheel they lie under ``posewire/web/`` (the viewer and capture pages, the
JavaScript client, the registry export and the npm libraries the viewer imports, at the
versions pinned by ``js/package-lock.json``) and ``posewire/data/`` (the demo recording and
its licence). :func:`vendor_web` writes ``posewire/web/`` when the wheel is built
(``setup.py``); it copies only the files the pages reach through their imports
(:func:`page_closure`, :func:`npm_closure`), after checking that the installed npm packages
are the versions the lock file pins (``npm ci`` in ``js/`` installs them). In a checkout
(an editable install) nothing is copied: the pages come from ``js/`` and ``schemas/``.

The capture page's MediaPipe web builds (:data:`FETCHED`: ``@mediapipe/holistic`` and
``@mediapipe/tasks-vision``, about 45 MB of wasm, graphs and models, 26 MB deflated) are
not in the wheel: it would grow from about 2 MB to about 30 MB for every install, most of
which never open the capture page. The wheel pins them instead: ``VENDORED.json`` holds,
for each, the lock's version and ``integrity`` (the sha512 of the npm tarball) and the
sha256 of every file served (from the files ``npm ci`` verified), and ``posewire models
fetch`` brings the tarball from the npm registry into the model cache, as it does the
Tasks models (:mod:`posewire.servers.web_packages`).

This module uses the standard library only: ``setup.py`` loads it by path while building.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DEMO_RECORDING", "FETCHED", "NPM_ENTRIES", "PAGE_ENTRIES", "fetched_pins", "js_root", "lock_versions",
           "npm_closure", "page_closure", "schemas_root", "served_package_file", "vendor_web"]

_PACKAGE = Path(__file__).resolve().parents[1]  # posewire/ (this module is posewire/servers/assets.py)
_CHECKOUT = _PACKAGE.parent
#: The installed copy of the page and its libraries (wheel installs).
WEB = _PACKAGE / "web"
#: The demo's default recording (a posewire recording, so that the demo needs no extra).
DEMO_RECORDING = _PACKAGE / "data" / "holistic_signer.jsonl"
#: The pages, relative to ``js/``: they and every file of ``js/`` they reach (scripts,
#: relative and ``/js/…`` imports, :func:`page_closure`) are shipped.
PAGE_ENTRIES = ("viewer/index.html", "capture/index.html")
#: npm package -> the files the page imports (``js/viewer/index.html`` import map,
#: ``js/viewer/viewer.mjs``); their relative imports are followed (:func:`npm_closure`).
NPM_ENTRIES: dict[str, tuple[str, ...]] = {
    "three": ("build/three.module.js", "examples/jsm/loaders/GLTFLoader.js",
              "examples/jsm/controls/OrbitControls.js"),
    "@pixiv/three-vrm": ("lib/three-vrm.module.js",),
}
#: npm packages of the capture page pinned by the wheel but fetched into the model cache
#: (``posewire models fetch``; module docstring), not shipped in it.
FETCHED = ("@mediapipe/holistic", "@mediapipe/tasks-vision")
#: Files of each npm package shipped with it whatever the page imports (licence, version).
_NPM_ALWAYS = ("LICENSE", "package.json")
_RELATIVE_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""")
#: What a page of ``js/`` reaches in ``js/``: relative and ``/js/…`` imports and scripts, and
#: frames (``src="/js/…"``).
_PAGE_REFERENCE = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\b(?:src|href)=)['"](\.{1,2}/[^'"]+|/js/[^'"]+)['"]""")


def _installed() -> bool:
    return (WEB / "viewer" / "index.html").is_file()


def js_root() -> Path:
    """The page's root: the installed copy, else the checkout's ``js/``."""
    return WEB if _installed() else _CHECKOUT / "js"


def schemas_root() -> Path:
    """Where ``registry.json`` is: the installed copy, else the checkout's ``schemas/``."""
    return WEB / "schemas" if _installed() else _CHECKOUT / "schemas"


def lock_versions(lock: Path) -> dict[str, str]:
    """``{package: version}`` of :data:`NPM_ENTRIES` and :data:`FETCHED` pinned by ``package-lock.json``."""
    packages = json.loads(lock.read_text(encoding="utf-8")).get("packages", {})
    return {name: packages[f"node_modules/{name}"]["version"] for name in (*NPM_ENTRIES, *FETCHED)}


def fetched_pins() -> dict[str, dict[str, Any]]:
    """``{package: {"version", "integrity", "files": {path: sha256}}}`` of :data:`FETCHED` as
    the installed wheel pins them (``VENDORED.json``); empty in a checkout, whose pages use
    ``js/node_modules``."""
    manifest = WEB / "VENDORED.json"
    if not _installed() or not manifest.is_file():
        return {}
    vendored = json.loads(manifest.read_text(encoding="utf-8"))
    return {name: vendored[name] for name in FETCHED if name in vendored}


def served_package_file(rel: str) -> bool:
    """Whether the file ``rel`` of a :data:`FETCHED` package is one a page may load (not a
    source map, type declaration or CommonJS build; not the bundles other than the
    ``.mjs`` the capture page imports, posewire.servers.privacy)."""
    return not (rel.endswith((".map", ".d.ts", ".cjs")) or rel == "vision_bundle.js")


def _closure(root: Path, entries: tuple[str, ...], references: re.Pattern[str], *,
             resolve: Callable[[Path, str], Path], missing: str) -> list[str]:
    """``entries`` (relative to ``root``) and every file of ``root`` they reach through
    ``references`` (each target turned into a path by ``resolve(referring_file, target)``),
    sorted. A file that is not there is a :class:`FileNotFoundError` saying ``missing``."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing ({missing})")
        seen.add(rel)
        for target in references.findall(path.read_text(encoding="utf-8")):
            todo.append(resolve(path, target).resolve().relative_to(root.resolve()).as_posix())
    return sorted(seen)


def page_closure(js: Path, entries: tuple[str, ...] = PAGE_ENTRIES) -> list[str]:
    """``entries`` (relative to ``js``) and every file of ``js`` they reach
    (:data:`_PAGE_REFERENCE`: relative and ``/js/…`` imports, scripts, frames), sorted.
    ``/node_modules/…`` and bare specifiers (the import map's) are the libraries'."""
    def resolve(path: Path, target: str) -> Path:
        return js / target[len("/js/"):] if target.startswith("/js/") else path.parent / target

    return _closure(js, entries, _PAGE_REFERENCE, resolve=resolve,
                    missing="a page of js/ refers to it")


def npm_closure(package_dir: Path, entries: tuple[str, ...]) -> list[str]:
    """``entries`` and every file they reach by relative imports, relative to
    ``package_dir``, sorted."""
    return _closure(package_dir, entries, _RELATIVE_IMPORT,
                    resolve=lambda path, target: path.parent / target,
                    missing="npm ci in js/ installs it")


def _installed_package(js: Path, name: str, pinned: dict[str, str]) -> Path:
    package_dir = js / "node_modules" / name
    meta = package_dir / "package.json"
    if not meta.is_file():
        raise FileNotFoundError(f"{package_dir} is missing: run npm ci in js/ (make install) before building")
    installed = json.loads(meta.read_text(encoding="utf-8"))["version"]
    if installed != pinned[name]:
        raise ValueError(f"{name} {installed} is installed but js/package-lock.json pins {pinned[name]}: "
                         "run npm ci in js/")
    return package_dir


def vendor_web(checkout: Path, dest: Path) -> list[Path]:
    """Copy the pages and what they reach (:func:`page_closure`), ``schemas/registry.json``
    and the npm files the viewer reaches into ``dest`` (the wheel's ``posewire/web``),
    checking each npm package's installed version against ``js/package-lock.json``;
    ``dest/VENDORED.json`` records the versions and the lock's integrity hashes, and for
    the :data:`FETCHED` packages the sha256 of every file served (module docstring).
    Returns the files written."""
    js = checkout / "js"
    lock_path = js / "package-lock.json"
    pinned = lock_versions(lock_path)
    lock_packages = json.loads(lock_path.read_text(encoding="utf-8"))["packages"]
    written: list[Path] = []

    def copy(src: Path, rel: str) -> None:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        written.append(target)

    for rel in page_closure(js):
        copy(js / rel, rel)
    copy(checkout / "schemas" / "registry.json", "schemas/registry.json")
    manifest: dict[str, dict[str, object]] = {}
    for name, entries in NPM_ENTRIES.items():
        package_dir = _installed_package(js, name, pinned)
        files = npm_closure(package_dir, entries)
        for rel in (*_NPM_ALWAYS, *files):
            copy(package_dir / rel, f"node_modules/{name}/{rel}")
        manifest[name] = {"version": pinned[name],
                          "integrity": lock_packages[f"node_modules/{name}"].get("integrity"),
                          "files": files}
    for name in FETCHED:  # pinned, not shipped: posewire models fetch brings them
        package_dir = _installed_package(js, name, pinned)
        served = sorted(p.relative_to(package_dir).as_posix() for p in package_dir.rglob("*") if p.is_file())
        manifest[name] = {"version": pinned[name], "fetch": True,
                          "integrity": lock_packages[f"node_modules/{name}"]["integrity"],
                          "files": {rel: hashlib.sha256((package_dir / rel).read_bytes()).hexdigest()
                                    for rel in served if served_package_file(rel)}}
    out = dest / "VENDORED.json"
    out.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    written.append(out)
    return written
