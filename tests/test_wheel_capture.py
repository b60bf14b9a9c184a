"""The capture page from the wheel alone (posewire.servers.web_packages).

The wheel of this tree is installed into a clean virtual environment (no site packages,
nothing of the checkout on its path, run outside it). Its ``posewire view --capture`` first
says what is missing; ``posewire models fetch`` brings the pinned ``@mediapipe`` tarballs
from an npm registry (here a loopback one serving the very tarballs npm installed,
``npm pack --offline``: the bytes the lock's integrity pins) into the model cache; then
``posewire demo --capture`` serves the page from the wheel and the cache, headless
Chromium streams a fake camera through it, and the demo's own subscriber decodes the frames
that reached its relay. The served Tasks bundle is the patched one (its usage logging off,
posewire.servers.privacy) under the Content-Security-Policy.

The fetch's refusals (bytes other than the pinned ones, an altered cache) are checked on a
small package of their own, without the wheel.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from captureutil import browser_missing, camera_clip, drive_capture, read_until
from wheelutil import build_wheel

from posewire.codec.errors import UsageError
from posewire.servers import assets, privacy, web_packages

ROOT = Path(__file__).resolve().parent.parent
FRAMES = 6
PACKAGES = {"@mediapipe/holistic": "0.5.1675471629", "@mediapipe/tasks-vision": "1.1.0"}


class _Registry:
    """A loopback npm registry serving the tarballs in ``folder`` at the registry's paths
    (``/<name>/-/<base>-<version>.tgz``), recording the paths asked for."""

    def __init__(self, folder: Path) -> None:
        asked = self.asked = []  # type: list[str]

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self) -> None:
                asked.append(self.path)
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[_Registry]:
    """The pinned tarballs from npm's own cache (make install's npm ci put them there)."""
    folder = tmp_path / "registry"
    for name, version in PACKAGES.items():
        target = folder / name / "-"
        target.mkdir(parents=True)
        done = subprocess.run(["npm", "pack", "--offline", "--silent", f"{name}@{version}",
                               "--pack-destination", str(target)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        packed = target / done.stdout.strip().splitlines()[-1]
        packed.rename(target / f"{name.rsplit('/', 1)[-1]}-{version}.tgz")
    server = _Registry(folder)
    yield server
    server.close()


def _clean_env(tmp: Path, registry: str) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    return {**env, "HOME": str(tmp / "home"), "POSEWIRE_MODEL_DIR": str(tmp / "models"),
            "POSEWIRE_NPM_REGISTRY": registry, "PYTHONUNBUFFERED": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.mark.skipif(browser_missing() is not None or shutil.which("npm") is None, reason="needs node, npm, chromium")
async def test_demo_capture_from_the_wheel_alone_streams_a_fake_camera(tmp_path: Path, registry: _Registry) -> None:
    from posewire.producers.model_files import model_path

    wheel = build_wheel(tmp_path / "wheel", tmp_path / "tree" / "posewire")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    posewire = str(venv / "bin" / "posewire")
    env = _clean_env(tmp_path, registry.url)
    run = tmp_path / "elsewhere"  # not the checkout: nothing of js/ is found from here
    run.mkdir()
    # the Tasks models as `models fetch` leaves them (sha256-checked again there); their
    # download is the Tasks models' own route, tested in tests/test_live_producer.py
    (tmp_path / "models").mkdir()
    for name in ("face_landmarker", "hand_landmarker"):
        shutil.copy(model_path(name), tmp_path / "models")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([posewire, *args], capture_output=True, text=True, env=env, cwd=run, timeout=300)

    # before the fetch: one line that says what is missing and the command that brings it
    before = cli("view", "--capture", "--no-browser", "--no-relay-check", "--port", "0")
    assert before.returncode == 2 and before.stdout == "", before
    assert before.stderr == (f"posewire view: the capture page needs @mediapipe/holistic, @mediapipe/tasks-vision "
                             f"in the model cache ({tmp_path / 'models'}): fetch them once with `posewire models "
                             f"fetch` (usage.model_missing)\n")
    fetched = cli("models", "fetch")
    assert fetched.returncode == 0, fetched.stderr
    assert sorted(registry.asked) == [f"/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
                                      for name, version in PACKAGES.items()]
    status = cli("models", "status")
    assert status.returncode == 0 and status.stdout.count(": ok (") == 4, status.stdout
    again = cli("models", "fetch")  # a complete cache is kept: nothing asked again
    assert again.returncode == 0 and len(registry.asked) == 2

    proc = await asyncio.create_subprocess_exec(
        posewire, "demo", "--capture", "--no-browser", "--frames", str(FRAMES), "--port", "0", "--relay-port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env, cwd=run)
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        relay = await read_until(proc.stdout, r"^relay: (ws://127\.0\.0\.1:\d+) ", seen)
        page = await read_until(proc.stdout, r"^capture: (http://127\.0\.0\.1:\d+/capture) ", seen)
        base = page.group(1).rsplit("/", 1)[0]
        # the page and the bundle as served from the wheel and the cache: patched, under the CSP
        with urllib.request.urlopen(base + "/node_modules/@mediapipe/tasks-vision/vision_bundle.mjs") as response:
            bundle, csp = response.read(), response.headers["Content-Security-Policy"]
        assert hashlib.sha256(bundle).hexdigest() == privacy.PATCHED_FILES["vision_bundle.mjs"][1]
        assert csp == privacy.content_security_policy(relay.group(1))
        with urllib.request.urlopen(base + "/js/viewer/problems.mjs") as response:
            assert response.status == 200
        report = await drive_capture(page.group(1) + "?autostart=1", camera_clip("soccer_player.jpg", tmp_path),
                                     FRAMES, tmp_path / "capture_wheel.png")
        rest, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    out = "".join(seen) + rest.decode()
    assert "error" not in report, (report, out)
    assert not report["capture_errors"], report["capture_errors"]
    assert report["frames"] >= FRAMES, report
    assert set(report["origins"]) <= {base, relay.group(1)}, report["origins"]
    # the demo's subscriber decoded the frames the page sent through its relay, then ended
    assert proc.returncode == 0, out
    decoded = re.findall(r"(\d+) frames sent, (\d+) decoded", out)
    assert decoded and int(decoded[-1][1]) >= FRAMES, out


# ---------------------------------------------------------------- the fetch's refusals


def _tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for rel, body in files.items():
            info = tarfile.TarInfo(f"package/{rel}")
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return out.getvalue()


def test_fetch_checks_the_tarball_and_every_file_and_the_cache_is_checked_when_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"a.mjs": b"export const a = 1;\n", "wasm/b.wasm": b"\0asm\1\0\0\0", "b.map": b"{}"}
    tgz = _tarball(files)
    pin = {"version": "1.0.0", "fetch": True,
           "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
           "files": {rel: hashlib.sha256(body).hexdigest() for rel, body in files.items()
                     if assets.served_package_file(rel)}}
    monkeypatch.setattr(assets, "fetched_pins", lambda: {"@x/pkg": pin})
    folder = tmp_path / "registry" / "@x" / "pkg" / "-"
    folder.mkdir(parents=True)
    server = _Registry(tmp_path / "registry")
    monkeypatch.setenv(web_packages.ENV_REGISTRY, server.url)
    cache = tmp_path / "cache"
    try:
        # other bytes than the pinned tarball: refused, nothing cached
        (folder / "pkg-1.0.0.tgz").write_bytes(_tarball({**files, "a.mjs": b"export const a = 2;\n"}))
        with pytest.raises(UsageError) as err:
            web_packages.fetch_package("@x/pkg", cache_dir=cache)
        assert err.value.code == "usage.model_missing" and "gave other bytes" in str(err.value)
        assert web_packages.package_status("@x/pkg", cache_dir=cache)[1] == "not in the cache"
        # the pinned one: the served files unpacked (not the source map)
        (folder / "pkg-1.0.0.tgz").write_bytes(tgz)
        got = web_packages.fetch_package("@x/pkg", cache_dir=cache)
        assert got == cache / "npm" / "@x/pkg@1.0.0"
        assert sorted(p.relative_to(got).as_posix() for p in got.rglob("*") if p.is_file()) == ["a.mjs", "wasm/b.wasm"]
        assert web_packages.package_file("@x/pkg", "a.mjs", cache_dir=cache) == files["a.mjs"]
        assert web_packages.package_file("@x/pkg", "b.map", cache_dir=cache) is None  # not pinned: not served
        # an altered cache is refused when served and reported by status
        (got / "a.mjs").write_bytes(b"export const a = 3;\n")
        with pytest.raises(UsageError) as err:
            web_packages.package_file("@x/pkg", "a.mjs", cache_dir=cache)
        assert err.value.code == "usage.model_missing" and "altered" in str(err.value)
        assert web_packages.package_status("@x/pkg", cache_dir=cache)[1] == "a.mjs is not the pinned file"
        # and fetched afresh
        web_packages.fetch_package("@x/pkg", cache_dir=cache)
        assert web_packages.package_status("@x/pkg", cache_dir=cache)[1] is None
        assert server.asked == ["/@x/pkg/-/pkg-1.0.0.tgz"] * 3
    finally:
        server.close()
