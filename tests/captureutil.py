"""Helpers for the tests that drive the capture page in headless Chromium with a fake
camera (``js/test/drive_capture.mjs``): the camera's frames, the driver, a process's
printed lines."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CHROMIUM", "DRIVER", "NODE", "PHOTOS", "browser_missing", "camera_clip", "camera_frame", "clip_frames",
           "drive_capture", "perturbed", "read_until"]

ROOT = Path(__file__).resolve().parent.parent
PHOTOS = ROOT / "tests" / "data" / "photos"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
#: The checkout's driver (an installed wheel carries the pages, not the test drivers).
DRIVER = ROOT / "js" / "test" / "drive_capture.mjs"
NODE = shutil.which("node")


def browser_missing() -> str | None:
    """Why the capture page cannot be driven here, or None."""
    if NODE is None or not Path(CHROMIUM).exists() or not (ROOT / "js" / "node_modules" / "playwright-core").is_dir():
        return "needs node, /usr/bin/chromium and js/node_modules (make install)"
    return None


def camera_frame(photo: str) -> bytes:
    """The photo letterboxed into a 640×480 JPEG: one frame of the fake camera."""
    from PIL import Image

    im = Image.open(PHOTOS / photo).convert("RGB")
    im.thumbnail((640, 480))
    canvas = Image.new("RGB", (640, 480), (0, 0, 0))
    canvas.paste(im, ((640 - im.width) // 2, (480 - im.height) // 2))
    out = io.BytesIO()
    canvas.save(out, "JPEG", quality=92)
    return out.getvalue()


def perturbed(rgb: np.ndarray, rng: np.random.Generator, noise: int = 1) -> np.ndarray:
    """``rgb`` with ±``noise`` grey levels of uniform noise per pixel and channel (clipped): of
    the size of the differences between two JPEG decoders of the same file."""
    return np.clip(rgb.astype(np.int16) + rng.integers(-noise, noise + 1, rgb.shape), 0, 255).astype(np.uint8)


def clip_frames(data: bytes) -> list[bytes]:
    """The JPEG frames of an ``.mjpeg`` (concatenated JPEGs)."""
    parts = data.split(b"\xff\xd9\xff\xd8")
    return [(b"" if i == 0 else b"\xff\xd8") + p + (b"" if i == len(parts) - 1 else b"\xff\xd9")
            for i, p in enumerate(parts)]


def camera_clip(photo: str, folder: Path) -> Path:
    """An ``.mjpeg`` the fake camera plays: ``photo`` (:func:`camera_frame`) 30 times."""
    clip = folder / "camera.mjpeg"
    clip.write_bytes(camera_frame(photo) * 30)
    return clip


async def drive_capture(url: str, clip: Path, frames: int, shot: Path | None = None, *,
                        trust_spki: str | None = None, timeout: float = 400.0) -> dict[str, Any]:
    """The driver's report (``js/test/drive_capture.mjs``) of the capture page at ``url``
    once it has encoded ``frames`` frames; ``trust_spki``: the page's certificate's public
    key hash, trusted (a self-signed ``https://`` page)."""
    assert NODE is not None
    env = {**os.environ, "CHROMIUM": CHROMIUM}
    if trust_spki is not None:
        env["CAPTURE_TRUST_SPKI"] = trust_spki
    proc = await asyncio.create_subprocess_exec(NODE, str(DRIVER), url, str(clip), str(frames),
                                                str(shot) if shot else "", stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    report: dict[str, Any] = json.loads(out)
    return report


async def read_until(stream: asyncio.StreamReader, pattern: str, seen: list[str], timeout: float = 120.0
                     ) -> re.Match[str]:
    """Read lines of ``stream`` into ``seen`` until one matches ``pattern``; its match."""
    async with asyncio.timeout(timeout):
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"ended before {pattern!r}: {''.join(seen)}")
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
