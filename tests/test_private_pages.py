"""The pages posewire serves contact their own origin and the relay, no other host
(:mod:`posewire.servers.privacy`).

The served tasks-vision bundle has no usage logger (checked on the bytes served), every
response carries the Content-Security-Policy, and in headless Chromium the capture page
(fake camera from a committed photo, the viewer in its frame) and the viewer page make no
request to any other host while they run for a minute — the Tasks logger flushes every 60 s
and when a task is closed, so the run lasts at least 62 s and ends by closing the tasks —
and the browser reports no CSP refusal (which would mean something tried).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from posewire.codec.errors import UsageError
from posewire.servers import privacy
from posewire.servers.viewer import JS_ROOT, ViewerConfig, ViewerServer

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DRIVER = JS_ROOT / "test" / "drive_private.mjs"
NODE = shutil.which("node")
BUNDLE = JS_ROOT / "node_modules" / "@mediapipe" / "tasks-vision" / "vision_bundle.mjs"
#: The Tasks usage logger's endpoint (tasks-vision 1.1.0).
LOGGER_HOST = "https://odml.pa.googleapis.com"
#: Seconds the pages run: past the logger's 60 s flush interval.
RUN_S = float(os.environ.get("POSEWIRE_PRIVATE_RUN_S", "62"))


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_csp_allows_the_own_origin_and_the_relay_only() -> None:
    csp = privacy.content_security_policy("ws://127.0.0.1:8765")
    directives = {d.split()[0]: d.split()[1:] for d in csp.split("; ")}
    assert directives["default-src"] == ["'self'"]
    assert directives["connect-src"] == ["'self'", "ws://127.0.0.1:8765", "data:", "blob:"]
    # no directive names a host but the relay's
    hosts = [s for v in directives.values() for s in v
             if not s.startswith("'") and s not in ("data:", "blob:", "mediastream:")]
    assert hosts == ["ws://127.0.0.1:8765"], hosts
    assert privacy.relay_origin("wss://relay.example:9000/path?x=1") == "wss://relay.example:9000"
    assert privacy.relay_origin("ws://a:1,ws://b:2") == "ws://a:1 ws://b:2"
    assert privacy.relay_origin("") is None and privacy.relay_origin("http://a:1") is None
    assert "connect-src 'self' data: blob:" in privacy.content_security_policy("")


def test_the_served_tasks_bundle_has_no_usage_logger() -> None:
    if not BUNDLE.is_file():
        pytest.skip("needs js/node_modules (make install)")
    with ViewerServer(ViewerConfig("ws://127.0.0.1:9", "s"), port=0) as viewer:
        status, headers, body = _get(viewer.url + "node_modules/@mediapipe/tasks-vision/vision_bundle.mjs")
        assert status == 200
        installed = BUNDLE.read_bytes()
        assert installed.count(b"t.o=new Uh(t.D(),e,r)") == 1  # the logger is built in the file on disk
        assert body.count(b"new Uh(") == 0 and len(body) == len(installed) - 11
        assert hashlib.sha256(body).hexdigest() == privacy.PATCHED_FILES["vision_bundle.mjs"][1]
        assert "connect-src 'self' ws://127.0.0.1:9 " in headers["Content-Security-Policy"]
        # the other builds of the bundle are not served unpatched
        assert _get(viewer.url + "node_modules/@mediapipe/tasks-vision/vision_bundle.cjs")[0] == 404
        # every response has the policy: pages, modules, errors
        for path in ("", "capture", "js/viewer/viewer.mjs", "config.json", "nothing-here"):
            _, h, page = _get(viewer.url + path)
            assert "default-src 'self'" in h["Content-Security-Policy"], path
        _, h, page = _get(viewer.url)
        # the viewer's inline import map runs by its hash, no other inline script
        assert privacy.inline_script_hashes(page)[0] in h["Content-Security-Policy"]
        assert "'unsafe-inline'" not in h["Content-Security-Policy"].split("style-src")[0]


def test_another_tasks_bundle_is_refused_not_served_unpatched() -> None:
    with pytest.raises(UsageError) as err:
        privacy.patch_tasks_bundle("vision_bundle.mjs", b"export const x = 1;")
    assert err.value.code == "usage.dependency" and "npm ci" in str(err.value)


def _deps_missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists() or not (JS_ROOT / "node_modules" / "playwright-core").is_dir():
        return "needs node, /usr/bin/chromium and js/node_modules (make install)"
    try:
        from posewire.producers.model_files import model_path

        model_path("face_landmarker")
    except Exception as exc:
        return f"needs the cached face model (posewire models fetch): {exc}"
    return None


async def run_pages(tmp: Path, seconds: float) -> dict[str, Any]:
    """The capture page and the viewer against a loopback relay for ``seconds``: the
    driver's report (``hosts``, ``violations``, ...) and the two origins they may use."""
    from PIL import Image

    from posewire.relay import Relay

    frame = tmp / "frame.jpg"
    im = Image.open(ROOT / "tests" / "data" / "photos" / "soccer_player.jpg").convert("RGB")
    im.thumbnail((640, 480))
    canvas = Image.new("RGB", (640, 480))
    canvas.paste(im, ((640 - im.width) // 2, (480 - im.height) // 2))
    canvas.save(frame, "JPEG", quality=92)
    clip = tmp / "camera.mjpeg"
    clip.write_bytes(frame.read_bytes() * 30)
    with ViewerServer(ViewerConfig("", "private"), port=0) as viewer:
        async with Relay("127.0.0.1", port=0, status_every=0, allow_origins=viewer.origins) as relay:
            viewer.config = ViewerConfig(relay.url, "private")
            assert NODE is not None
            proc = await asyncio.create_subprocess_exec(
                NODE, str(DRIVER), viewer.url + "capture?autostart=1", viewer.url, str(clip), str(seconds),
                stdout=asyncio.subprocess.PIPE, env={**os.environ, "CHROMIUM": CHROMIUM})
            out, _ = await asyncio.wait_for(proc.communicate(), seconds + 300)
            report: dict[str, Any] = json.loads(out)
            report["allowed"] = {viewer.origin, relay.url.rstrip("/")}
    return report


@pytest.mark.skipif(_deps_missing() is not None, reason=str(_deps_missing()))
async def test_the_pages_contact_no_other_host_for_a_minute(tmp_path: Path) -> None:
    report = await run_pages(tmp_path, RUN_S)
    print(f"requests per origin in {report.get('seconds')} s: {json.dumps(report['hosts'])}; "
          f"{report.get('frames')} frames, viewer seq {report.get('viewer_frames')}")
    assert "error" not in report, report
    assert not report["capture_errors"], report["capture_errors"]
    assert report["seconds"] >= RUN_S and report["frames"] >= 5, report
    assert report["viewer_frames"] >= 1, "the viewer page received nothing"
    others = {h: n for h, n in report["hosts"].items() if h not in report["allowed"]}
    assert not others, f"requests to other hosts: {others}"
    assert not report["violations"], f"something tried another host (refused by the CSP): {report['violations']}"
    assert set(report["allowed"]) <= set(report["hosts"]), report["hosts"]  # page and relay were used
