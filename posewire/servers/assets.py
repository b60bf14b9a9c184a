"""The files ``posewire view`` and ``posewire demo`` serve and play, in a checkout and in
an installed wheel (``pip install posewire``, no checkout).

In the wheel they lie under ``posewire/web/`` (the page, the JavaScript client, the
registry export and the npm libraries the page imports, at the versions pinned by
``js/package-lock.json``) and ``posewire/data/`` (the demo recording and its licence).
:func:`vendor_web` writes ``posewire/web/`` when the wheel is built (``setup.py``); it
copies only the library files the page reaches through its imports, after checking that
the installed npm packages are the versions the lock file pins (``npm ci`` in ``js/``
installs them). In a checkout (an editable install) nothing is copied: the page comes from
``js/`` and ``schemas/``.

This module uses the standard library only: ``setup.py`` loads it by path while building.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

__all__ = ["DEMO_RECORDING", "NPM_ENTRIES", "PAGE_FILES", "js_root", "lock_versions", "npm_closure",
           "schemas_root", "vendor_web"]

_PACKAGE = Path(__file__).resolve().parents[1]  # posewire/ (this module is posewire/servers/assets.py)
_CHECKOUT = _PACKAGE.parent
#: The installed copy of the page and its libraries (wheel installs).
WEB = _PACKAGE / "web"
#: The demo's default recording (a posewire recording, so that the demo needs no extra).
DEMO_RECORDING = _PACKAGE / "data" / "holistic_signer.jsonl"
#: The page and the JavaScript client, relative to ``js/``.
PAGE_FILES = ("viewer/index.html", "viewer/viewer.mjs", "viewer/problems.mjs", "viewer/face.mjs",
              "posewire/client.mjs", "posewire/codec.mjs", "posewire/decoder.mjs", "posewire/registry.mjs")
#: npm package -> the files the page imports (``js/viewer/index.html`` import map,
#: ``js/viewer/viewer.mjs``); their relative imports are followed (:func:`npm_closure`).
NPM_ENTRIES: dict[str, tuple[str, ...]] = {
    "three": ("build/three.module.js", "examples/jsm/loaders/GLTFLoader.js",
              "examples/jsm/controls/OrbitControls.js"),
    "@pixiv/three-vrm": ("lib/three-vrm.module.js",),
}
#: Files of each npm package shipped with it whatever the page imports (licence, version).
_NPM_ALWAYS = ("LICENSE", "package.json")
_RELATIVE_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""")


def _installed() -> bool:
    return (WEB / "viewer" / "index.html").is_file()


def js_root() -> Path:
    """The page's root: the installed copy, else the checkout's ``js/``."""
    return WEB if _installed() else _CHECKOUT / "js"


def schemas_root() -> Path:
    """Where ``registry.json`` is: the installed copy, else the checkout's ``schemas/``."""
    return WEB / "schemas" if _installed() else _CHECKOUT / "schemas"


def lock_versions(lock: Path) -> dict[str, str]:
    """``{package: version}`` of :data:`NPM_ENTRIES` pinned by ``package-lock.json``."""
    packages = json.loads(lock.read_text(encoding="utf-8")).get("packages", {})
    return {name: packages[f"node_modules/{name}"]["version"] for name in NPM_ENTRIES}


def npm_closure(package_dir: Path, entries: tuple[str, ...]) -> list[str]:
    """``entries`` and every file they reach by relative imports, relative to
    ``package_dir``, sorted."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        path = package_dir / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing (npm ci in js/ installs it)")
        seen.add(rel)
        for target in _RELATIVE_IMPORT.findall(path.read_text(encoding="utf-8")):
            resolved = (path.parent / target).resolve().relative_to(package_dir.resolve()).as_posix()
            todo.append(resolved)
    return sorted(seen)


def vendor_web(checkout: Path, dest: Path) -> list[Path]:
    """Copy the page (:data:`PAGE_FILES`), ``schemas/registry.json`` and the npm files the
    page reaches into ``dest`` (the wheel's ``posewire/web``), checking each npm package's
    installed version against ``js/package-lock.json``; ``dest/VENDORED.json`` records the
    versions and the lock's integrity hashes. Returns the files written."""
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

    for rel in PAGE_FILES:
        copy(js / rel, rel)
    copy(checkout / "schemas" / "registry.json", "schemas/registry.json")
    manifest: dict[str, dict[str, object]] = {}
    for name, entries in NPM_ENTRIES.items():
        package_dir = js / "node_modules" / name
        meta = package_dir / "package.json"
        if not meta.is_file():
            raise FileNotFoundError(f"{package_dir} is missing: run npm ci in js/ (make install) before building")
        installed = json.loads(meta.read_text(encoding="utf-8"))["version"]
        if installed != pinned[name]:
            raise ValueError(f"{name} {installed} is installed but js/package-lock.json pins {pinned[name]}: "
                             "run npm ci in js/")
        files = npm_closure(package_dir, entries)
        for rel in (*_NPM_ALWAYS, *files):
            copy(package_dir / rel, f"node_modules/{name}/{rel}")
        manifest[name] = {"version": installed,
                          "integrity": lock_packages[f"node_modules/{name}"].get("integrity"),
                          "files": files}
    out = dest / "VENDORED.json"
    out.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    written.append(out)
    return written
