"""``posewire produce --webcam URL``: a network camera end to end.

A local MJPEG camera (a few lines of ``http.server``: ``multipart/x-mixed-replace`` JPEG
parts, as phone webcam apps serve them) plays a committed photo; ``posewire produce --webcam
http://127.0.0.1:PORT/video --record`` records frames with real MediaPipe inference. The
source is paced to the consumer: a camera faster than inference has its stale frames dropped
(counted in the source's status line), never queued.
"""

from __future__ import annotations

import http.server
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from posewire.codec.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
PHOTO = ROOT / "tests" / "data" / "photos" / "astronaut.jpg"
cv2 = pytest.importorskip("cv2")


class _Camera(http.server.BaseHTTPRequestHandler):
    fps = 30.0

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        if self.path != "/video":
            self.send_error(404)
            return
        jpeg = PHOTO.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
        self.end_headers()
        try:
            for _ in range(int(self.server.frames)):  # type: ignore[attr-defined]
                self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: "
                                 + str(len(jpeg)).encode() + b"\r\n\r\n" + jpeg + b"\r\n")
                time.sleep(1.0 / self.fps)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def camera() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Camera)
    server.frames = 300  # type: ignore[attr-defined]  # 10 s at 30 fps
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/video"
    server.shutdown()
    server.server_close()


def test_network_camera_drops_stale_frames(camera: str) -> None:
    from posewire.producers.sources import NetworkCameraSource

    lines: list[str] = []
    with NetworkCameraSource(camera, on_status=lines.append, status_every=0.0) as src:
        frames = []
        for frame in src:
            frames.append(frame)
            time.sleep(0.2)  # a consumer far slower than the camera (5 fps against 30)
            if len(frames) == 6:
                break
    assert [f.index for f in frames] == list(range(6))
    assert frames[0].rgb.shape == (512, 512, 3)
    ts = [f.t_us for f in frames]
    # after the first (the decoder may deliver its probe burst at once), each frame is the newest
    assert all(b - a >= 150_000 for a, b in itertools.pairwise(ts[1:])), ts  # not the next queued
    assert src.dropped >= 10 and src.received >= src.dropped + 6, (src.received, src.dropped)
    assert lines and "stale dropped" in lines[-1], lines


def test_network_camera_errors() -> None:
    from posewire.producers.sources import NetworkCameraSource

    with pytest.raises(UsageError) as bad:
        NetworkCameraSource("ftp://example/video")
    assert bad.value.code == "usage.bad_option"
    with pytest.raises(UsageError) as none:  # nothing listens there
        NetworkCameraSource("http://127.0.0.1:9/video", first_frame_timeout=2.0)
    assert none.value.code == "usage.no_source"


def test_produce_webcam_url_records_from_a_local_mjpeg_server(camera: str, tmp_path: Path) -> None:
    pytest.importorskip("mediapipe")
    out = tmp_path / "net.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "posewire.cli", "produce", "--webcam", camera, "--record", str(out), "--count", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text().splitlines()
    frames = [json.loads(line) for line in lines[1:]]
    assert len(frames) == 5, lines[:2]
    # the astronaut's face is tracked through the network camera: face, mouth and head dims sent
    last = frames[-1]
    assert "f_brow_l" in json.dumps(last) and "h_yaw" in json.dumps(last), last
    assert "network camera http://127.0.0.1" in proc.stderr and "stale dropped" in proc.stderr, proc.stderr[-2000:]
    assert "fps" in proc.stderr and "tracked" in proc.stderr  # the producer's status line
