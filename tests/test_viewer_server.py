"""`posewire view`: the viewer's HTTP server (routes, no path escapes, the relay hint)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from posewire.codec.wire import REGISTRY_HASH8
from posewire.servers.viewer import ViewerConfig, ViewerServer, avatar_description


def get(url: str) -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), ""


def test_view_command_serves_the_page_and_refuses_paths_outside_its_roots() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "posewire.cli", "view", "--stream", "alice", "--url",
                             "ws://127.0.0.1:9999", "--port", "0", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        hint = proc.stdout.readline()
        url = first.rsplit(" ", 1)[-1].strip()
        assert url.startswith("http://127.0.0.1:") and "'alice'" in first
        origin = url.rstrip("/")
        assert f"--allow-origin {origin}" in hint
        status, body, ctype = get(url)
        assert status == 200 and b"importmap" in body and ctype.startswith("text/html")
        config = json.loads(get(url + "config.json")[1])
        assert config == {"relay": "ws://127.0.0.1:9999", "stream": "alice", "token": None,
                          "registry_version": config["registry_version"],
                          "registry_hash": REGISTRY_HASH8.hex()}
        status, body, ctype = get(url + "js/posewire/codec.mjs")
        assert status == 200 and ctype.startswith("text/javascript") and b"export" in body
        assert get(url + "node_modules/@pixiv/three-vrm/lib/three-vrm.module.js")[0] == 200
        for bad in ("js/../pyproject.toml", "js/%2e%2e/pyproject.toml", "node_modules/three/../../package.json",
                    "node_modules/playwright-core/package.json", "js/node_modules/three/package.json",
                    "schemas/registry.schema.json", "nothing"):
            assert get(url + bad)[0] == 404, bad
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"posewire view did not stop on SIGINT; stderr: {err[-2000:]}") from None
    assert proc.returncode == 0, err[-2000:]
    # before serving, it said where it connects and why it waits (the one CLI convention, posewire.cli.conventions)
    lines = err.splitlines()
    assert lines[0] == "posewire view: connecting to ws://127.0.0.1:9999, stream 'alice'"
    assert lines[1].startswith("posewire view: relay ws://127.0.0.1:9999 refused, retrying in ")
    assert lines[-1] == "posewire view: relay ws://127.0.0.1:9999 refused; the page keeps trying"


def test_avatar_description_is_the_mannequin_in_canonical_names() -> None:
    desc = avatar_description()
    assert desc["names"][0] == "root" and desc["avatar_names"][1] == "Pelvis"
    assert desc["names"][desc["avatar_names"].index("R_Shoulder")] == "upperarm_r"
    assert set(desc["sites"]) == {"middle_tip_l", "middle_tip_r"}
    assert all(p < j for j, p in enumerate(desc["parents"]) if j)
    with ViewerServer(ViewerConfig("ws://x", "s"), port=0) as server:
        status, body, ctype = get(server.url + "avatar/mannequin.glb")
        assert status == 200 and body[:4] == b"glTF" and ctype == "model/gltf-binary"
        server.config = ViewerConfig("ws://y", "t")
        assert json.loads(get(server.url + "config.json")[1])["relay"] == "ws://y"
        assert server.origins == (server.url.rstrip("/"), f"http://localhost:{server.url.rsplit(':', 1)[1][:-1]}")


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_only_get(method: str) -> None:
    with ViewerServer(ViewerConfig("ws://x", "s"), port=0) as server:
        req = urllib.request.Request(server.url, method=method, data=b"x")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code in (405, 501)


def test_view_capture_serves_the_capture_page_and_its_pinned_assets() -> None:
    """Spec §7.5 capture page: ``posewire view --capture`` names the capture page; the page, the MediaPipe
    wasm and graph (js/node_modules, pinned by js/package-lock.json) and the Tasks model (the
    sha256-checked cache) all come from the viewer server itself."""
    import hashlib

    from posewire.producers.model_files import MODELS, model_status

    proc = subprocess.Popen([sys.executable, "-m", "posewire.cli", "view", "--capture", "--stream", "cam", "--url",
                             "ws://127.0.0.1:9999", "--port", "0", "--no-browser", "--token", "t0k"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        capture = next(line for line in lines if line.startswith("capture page"))
        url = capture.rsplit(" ", 1)[-1].strip()
        assert url.endswith("/capture"), lines
        base = url[: -len("capture")]
        status, body, ctype = get(url)
        assert status == 200 and ctype.startswith("text/html") and b"start camera" in body
        assert b"http" not in body.replace(b"http-equiv", b"")  # no absolute URL: nothing from a CDN
        assert json.loads(get(base + "config.json")[1])["token"] == "t0k"  # the page publishes with it
        status, body, ctype = get(base + "js/capture/capture.mjs")
        assert status == 200 and b"encodeFrame" in body
        status, body, ctype = get(base + "node_modules/@mediapipe/holistic/holistic_solution_simd_wasm_bin.wasm")
        assert status == 200 and ctype == "application/wasm" and body[:4] == b"\0asm"
        status, body, ctype = get(base + "node_modules/@mediapipe/tasks-vision/wasm/vision_wasm_internal.wasm")
        assert status == 200 and ctype == "application/wasm"
        _, problem = model_status("face_landmarker")
        if problem is None:  # the model cache is filled by make install
            status, body, _ = get(base + "models/face_landmarker.task")
            assert status == 200 and hashlib.sha256(body).hexdigest() == MODELS["face_landmarker"].sha256
        assert get(base + "models/pose_landmarker.task")[0] == 404
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
