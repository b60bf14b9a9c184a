"""A page that says what is wrong: the viewer and the capture page in real headless Chromium
(Debian ``chromium`` via npm ``playwright-core``) against a loopback relay that refuses them.

Each case shows its problem in words in the page's banner, with the fix (the flag to pass):

* the relay refuses the page's origin (HTTP 403 at the upgrade: the page sees close 1006 and
  asks its server, ``/relay-check.json``): ``--allow-origin http://127.0.0.1:PORT``;
* a wrong token (close 4012, reason ``decode.auth: …``, spec §5.8): ``--token``;
* a stream that already has a producer (close 4013, reason ``decode.state: the stream
  already has a producer``): stop it, or ``--stream NAME``; the capture page only (the
  viewer is a consumer);
* no relay at all: ``posewire serve``.

Screenshots land in ``$POSEWIRE_SCREENSHOTS`` (or the test's temp dir).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from pageutil import quit_driver

from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.relay.server import close_reason
from posewire.servers.relay_check import check_relay
from posewire.servers.viewer import JS_ROOT, ViewerConfig, ViewerServer

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DRIVER = JS_ROOT / "test" / "drive_problems.mjs"
NODE = shutil.which("node")
needs_chromium = pytest.mark.skipif(
    NODE is None or not Path(CHROMIUM).exists() or not (JS_ROOT / "node_modules" / "playwright-core").is_dir(),
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")


def test_the_close_reason_is_the_code_then_the_message_within_123_bytes() -> None:
    assert close_reason("decode.auth", "auth token missing or wrong") == "decode.auth: auth token missing or wrong"
    assert close_reason("decode.state", "") == "decode.state"
    long = close_reason("decode.state", "é" * 200)  # cut at a character boundary, the code kept
    assert long.startswith("decode.state: é") and len(long.encode()) <= 123
    long.encode().decode()


async def test_the_relay_says_why_it_refused_in_the_close_reason() -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from posewire.codec.protocol import Connection
    from posewire.codec.wire import SUBPROTOCOL

    async def refused(url: str, role: str, token: str | None) -> tuple[int, str]:
        async with connect(url, subprotocols=[SUBPROTOCOL]) as ws:  # type: ignore[list-item]
            await ws.send(Connection(side="client", role=role).hello("s", client="t", token=token))  # type: ignore[arg-type]
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    await ws.recv()
            assert info.value.rcvd is not None
            return info.value.rcvd.code, info.value.rcvd.reason

    async with Relay("127.0.0.1", port=0, status_every=0, token="right") as relay:
        assert await refused(relay.url, "consumer", "wrong") == (4012, "decode.auth: auth token missing or wrong")
        async with Publisher(relay.url, "s", token="right"):
            assert await refused(relay.url, "producer", "right") == (
                4013, "decode.state: the stream already has a producer")


def test_relay_check_names_the_problem(tmp_path: Path) -> None:
    async def run() -> list[dict[str, Any]]:
        out = []
        with ViewerServer(ViewerConfig("", "s"), port=0) as viewer:
            out.append(await asyncio.to_thread(check_relay, "ws://127.0.0.1:9", origin=viewer.origin, stream="s"))
            async with Relay("127.0.0.1", port=0, status_every=0) as relay:
                out.append(await asyncio.to_thread(check_relay, relay.url, origin=viewer.origin, stream="s"))
            async with Relay("127.0.0.1", port=0, status_every=0, token="t", allow_origins=viewer.origins) as relay:
                out.append(await asyncio.to_thread(check_relay, relay.url, origin=viewer.origin, stream="s",
                                                   token="x"))
                out.append(await asyncio.to_thread(check_relay, relay.url, origin=viewer.origin, stream="s",
                                                   token="t"))
                # the page asks its server, which uses the page's own origin and token
                import urllib.request

                viewer.config = ViewerConfig(relay.url, "s", "x")
                body = await asyncio.to_thread(lambda: urllib.request.urlopen(viewer.url + "relay-check.json").read())
                out.append(json.loads(body))
        return out

    down, origin, auth, ok, served = asyncio.run(run())
    assert (down["ok"], down["code"]) == (False, "relay.down")
    assert origin["code"] == "relay.origin" and "403" in origin["detail"]
    assert auth["code"] == "decode.auth" and auth["detail"] == "decode.auth: auth token missing or wrong"
    assert ok["ok"] and ok["code"] == "ok"
    assert served["code"] == "decode.auth" and served["origin"].startswith("http://127.0.0.1:")


def camera_clip(path: Path) -> Path:
    from PIL import Image

    im = Image.open(ROOT / "tests" / "data" / "photos" / "grace_hopper.jpg").convert("RGB")
    im.thumbnail((640, 480))
    canvas = Image.new("RGB", (640, 480))
    canvas.paste(im, ((640 - im.width) // 2, (480 - im.height) // 2))
    out = io.BytesIO()
    canvas.save(out, "JPEG", quality=90)
    path.write_bytes(out.getvalue() * 10)
    return path


class Browser:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def visit(self, url: str, shot: Path, wait_ms: int = 20000) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"url": url, "screenshot": str(shot), "wait_ms": wait_ms}) + "\n").encode())
        await self.proc.stdin.drain()
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(self.proc.stdout.readline(), 90))
        assert "error" not in answer, answer
        assert not answer["page_errors"], answer["page_errors"]
        return answer


@needs_chromium
async def test_each_refusal_shows_its_fix_in_the_viewer_and_the_capture_page(tmp_path: Path) -> None:
    shots = Path(os.environ.get("POSEWIRE_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(NODE, str(DRIVER), str(camera_clip(tmp_path / "cam.mjpeg")),
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                env={**os.environ, "CHROMIUM": CHROMIUM})
    try:
        assert proc.stdout is not None
        assert json.loads(await asyncio.wait_for(proc.stdout.readline(), 120)) == {"ready": True}
        browser = Browser(proc)
        with ViewerServer(ViewerConfig("", "demo"), port=0) as viewer:
            pages = {"viewer": viewer.url, "capture": viewer.url + "capture"}
            # 1. the relay refuses the page's origin (it was not told the viewer's)
            async with Relay("127.0.0.1", port=0, status_every=0) as relay:
                viewer.config = ViewerConfig(relay.url, "demo")
                for name, url in pages.items():
                    got = await browser.visit(url, shots / f"problem_origin_{name}.png")
                    assert got["code"] == "relay.origin", got
                    assert got["title"] == "The relay refuses this page"
                    assert f"posewire serve --allow-origin {viewer.origin}" in got["fix"], got
                    assert relay.url in got["detail"] and viewer.origin in got["detail"]
            # 2. a wrong token
            async with Relay("127.0.0.1", port=0, status_every=0, token="right", allow_origins=viewer.origins) as relay:
                viewer.config = ViewerConfig(relay.url, "demo", "wrong")
                for name, url in pages.items():
                    got = await browser.visit(url, shots / f"problem_token_{name}.png")
                    assert got["code"] == "decode.auth", got
                    assert got["title"] == "The relay refused the token"
                    assert "--token TOKEN" in got["fix"] and "auth token missing or wrong" in got["detail"], got
                    if name == "viewer":  # a final refusal is not retried (spec §5.10)
                        assert "not retrying" in got["status"], got
            # 3. the stream already has a producer: the capture page, started, is a second one
            async with Relay("127.0.0.1", port=0, status_every=0, allow_origins=viewer.origins) as relay:
                gone = relay.url  # (for step 4: nothing listens there after)
                viewer.config = ViewerConfig(relay.url, "demo")
                async with Publisher(relay.url, "demo"):
                    got = await browser.visit(pages["capture"] + "?autostart=1", shots / "problem_taken_capture.png",
                                              wait_ms=40000)
                    assert got["code"] == "stream.taken", got
                    assert got["title"] == "Stream 'demo' already has a producer"
                    assert "already has a producer" in got["detail"] and "--stream NAME" in got["fix"], got
                    # the viewer of the same stream is fine: a consumer
                    fine = await browser.visit(pages["viewer"], shots / "problem_none_viewer.png", wait_ms=3000)
                    assert not fine["shown"] and fine["code"] is None, fine
            # 4. no relay at all
            viewer.config = ViewerConfig(gone, "demo")
            for name, url in pages.items():
                got = await browser.visit(url, shots / f"problem_down_{name}.png")
                assert got["code"] == "relay.down", got
                assert got["title"] == f"No relay answers at {gone}"
                assert "posewire serve" in got["fix"], got
    finally:
        await quit_driver(proc)
