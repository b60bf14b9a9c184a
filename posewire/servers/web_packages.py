"""The capture page's MediaPipe web builds in an installed wheel: pinned by the wheel,
fetched by ``posewire models fetch`` from the npm registry into the model cache.

The wheel does not carry ``@mediapipe/holistic`` and ``@mediapipe/tasks-vision``
(:data:`posewire.servers.assets.FETCHED`, sizes there); its ``VENDORED.json`` pins each by
the ``integrity`` of ``js/package-lock.json`` (the sha512 of the npm tarball, as npm itself
checks it) and by the sha256 of every file the pages may load. :func:`fetch_package`
downloads the tarball of that version from the npm registry (``$POSEWIRE_NPM_REGISTRY``,
default ``https://registry.npmjs.org``), refuses it unless its sha512 is the pinned one,
and unpacks the pinned files (each checked against its sha256) into
``<model cache>/npm/<name>@<version>/``. :func:`package_file` serves from there, checking
the file's sha256 again on every read, so an altered cache is refused, never served.

Nothing here runs at import time or while a page is served except reading the cache;
only :func:`fetch_package` touches the network, on the user's command. A checkout needs
none of this: its pages use ``js/node_modules`` (``npm ci``, which checks the same
integrity).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from posewire.codec.errors import UsageError
from posewire.producers.model_files import model_dir

from . import assets

__all__ = ["DEFAULT_REGISTRY", "ENV_REGISTRY", "capture_problem", "fetch_package", "package_dir", "package_file",
           "package_status", "tarball_url"]

#: Environment variable naming the npm registry ``models fetch`` downloads from.
ENV_REGISTRY = "POSEWIRE_NPM_REGISTRY"
DEFAULT_REGISTRY = "https://registry.npmjs.org"


def _pin(name: str) -> dict[str, Any]:
    pins = assets.fetched_pins()
    if name not in pins:
        raise UsageError("usage.bad_option", f"no pinned web package {name!r} (known: {', '.join(pins) or 'none'})",
                         path=name)
    return pins[name]


def package_dir(name: str, *, cache_dir: str | Path | None = None) -> Path:
    """Where the pinned version of ``name`` lies in the cache (``npm/<name>@<version>``)."""
    return model_dir(cache_dir) / "npm" / f"{name}@{_pin(name)['version']}"


def tarball_url(name: str, version: str, registry: str | None = None) -> str:
    """The npm registry's tarball URL of ``name@version`` (``<registry>/<name>/-/<base>-<version>.tgz``)."""
    base = (registry or os.environ.get(ENV_REGISTRY) or DEFAULT_REGISTRY).rstrip("/")
    return f"{base}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"


def _integrity_problem(data: bytes, integrity: str) -> str | None:
    """None when ``data`` matches the Subresource-Integrity string ``integrity`` (its
    sha512 entry, as npm checks it), else why not."""
    wanted = [item.split("-", 1)[1] for item in integrity.split() if item.startswith("sha512-")]
    if not wanted:
        return f"the pin {integrity[:20]}… has no sha512"
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    return None if got in wanted else f"sha512 {got[:16]}…, expected {wanted[0][:16]}…"


def package_status(name: str, *, cache_dir: str | Path | None = None) -> tuple[Path, str | None]:
    """``(folder, problem)``: None when every pinned file of ``name`` is in the cache with
    its sha256, else what is wrong."""
    pin = _pin(name)
    folder = package_dir(name, cache_dir=cache_dir)
    if not folder.is_dir():
        return folder, "not in the cache"
    for rel, sha in pin["files"].items():
        path = folder / rel
        if not path.is_file():
            return folder, f"{rel} is missing"
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            return folder, f"{rel} is not the pinned file"
    return folder, None


def package_file(name: str, rel: str, *, cache_dir: str | Path | None = None) -> bytes | None:
    """The bytes of file ``rel`` of the pinned ``name`` from the cache, or None when it is
    not one the wheel pins. A pinned file that is missing or altered raises
    :class:`UsageError` (``usage.model_missing``) naming ``posewire models fetch``."""
    pin = _pin(name)
    sha = pin["files"].get(rel)
    if sha is None:
        return None
    path = package_dir(name, cache_dir=cache_dir) / rel
    data = path.read_bytes() if path.is_file() else None
    if data is None or hashlib.sha256(data).hexdigest() != sha:
        state = "missing" if data is None else "altered"
        raise UsageError("usage.model_missing", f"{name}/{rel} at {path} is {state}; "
                         "fetch it once with `posewire models fetch`", path=name)
    return data


def fetch_package(name: str, *, cache_dir: str | Path | None = None, timeout: float = 60.0, force: bool = False,
                  log: Callable[[str], None] | None = None) -> Path:
    """Put the pinned ``name`` into the cache (module docstring) and return its folder. A
    complete cached copy is kept (unless ``force``). Raises :class:`UsageError`
    (``usage.model_missing``) when the download fails or its bytes are not the pinned ones."""
    pin = _pin(name)
    folder, problem = package_status(name, cache_dir=cache_dir)
    if problem is None and not force:
        return folder
    url = tarball_url(name, pin["version"])
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data: bytes = response.read()
    except OSError as exc:
        raise UsageError("usage.model_missing", f"could not fetch {name} {pin['version']} from {url}: {exc}",
                         path=name) from None
    why = _integrity_problem(data, pin["integrity"])
    if why is not None:
        raise UsageError("usage.model_missing", f"{url} gave other bytes than the pinned {name} {pin['version']} "
                         f"({why}); rejected", path=name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=folder.name.replace("/", "_") + ".", dir=folder.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = {m.name.split("/", 1)[1]: m for m in archive.getmembers() if m.isfile() and "/" in m.name}
            for rel, sha in pin["files"].items():
                member = members.get(rel)
                extracted = archive.extractfile(member) if member is not None else None
                body = extracted.read() if extracted is not None else None
                if body is None or hashlib.sha256(body).hexdigest() != sha:
                    raise UsageError("usage.model_missing", f"{name} {pin['version']}: {rel} in the tarball is "
                                     f"{'missing' if body is None else 'not the pinned file'}", path=name)
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(body)
        if folder.exists():
            shutil.rmtree(folder)
        staging.replace(folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    if log is not None:
        log(f"{name} {pin['version']}: {len(data)} bytes, sha512 checked, {len(pin['files'])} files from {url} "
            f"-> {folder}")
    return folder


def capture_problem(*, cache_dir: str | Path | None = None) -> str | None:
    """What the capture page lacks in this install, in one sentence with the command that
    fetches it, or None when it can be served: the Tasks face model (both installs) and,
    from a wheel, the pinned MediaPipe web builds."""
    from posewire.producers.model_files import model_status

    missing = [name for name in assets.fetched_pins() if package_status(name, cache_dir=cache_dir)[1] is not None]
    if model_status("face_landmarker", cache_dir=cache_dir)[1] is not None:
        missing.append("face_landmarker.task")
    if not missing:
        return None
    return (f"the capture page needs {', '.join(missing)} in the model cache ({model_dir(cache_dir)}): "
            "fetch them once with `posewire models fetch`")
