"""Frame sources for the live producer: a webcam, a video file, a folder of images.

Each source yields :class:`SourceFrame` — an RGB ``uint8`` image ``(H, W, 3)`` and its
timestamp in µs (the camera clock for a webcam, ``i / fps`` for a video, ``i / fps`` at a
nominal ``fps`` for images) — and says whether it is ``live`` (a camera: status line,
tracking between frames) and how many frames it holds when known (progress bar).
Decoding uses OpenCV (``opencv-contrib-python``, pulled in by the ``live`` extra).

A source that cannot be opened or read raises ``usage.no_source`` naming the device or
path. An image file OpenCV cannot decode is skipped and named in
:attr:`ImageFolderSource.skipped` (never skipped silently: ``posewire produce`` reports
it); a folder where no image decodes is ``usage.no_source``. A webcam frame is delivered
as the camera sends it: webcams send an un-mirrored image (the mirror of a "selfie" preview is a display choice), so
``mirrored`` defaults to False; sources whose frames are mirrored must be declared with
``--mirrored`` (spec §2.2) and are flipped before inference.

A network camera (:class:`NetworkCameraSource`: MJPEG over HTTP, as phone webcam apps serve
it, or RTSP, both through OpenCV's FFmpeg backend) is read by a thread of its own that keeps
only the newest frame: when inference is slower than the camera, stale frames are dropped
(counted, and said in its status line) instead of queueing, so the vector never lags behind
the person.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec.errors import UsageError

__all__ = [
    "IMAGE_SUFFIXES",
    "FrameSource",
    "ImageFolderSource",
    "NetworkCameraSource",
    "SourceFrame",
    "VideoSource",
    "WebcamSource",
]

#: File suffixes read by :class:`ImageFolderSource` (case-insensitive).
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def _cv2() -> Any:
    try:
        return importlib.import_module("cv2")
    except ImportError as exc:
        raise UsageError("usage.dependency", "video and image sources need OpenCV: pip install 'posewire[live]'; "
                         f"import failed: {exc}") from exc


@dataclass(frozen=True)
class SourceFrame:
    """One frame: ``index`` from 0, ``t_us`` timestamp, ``rgb (H, W, 3)`` uint8, ``name``
    (the file of an image source, else empty)."""

    index: int
    t_us: int
    rgb: NDArray[np.uint8]
    name: str = ""


class FrameSource:
    """Base of the sources: iterate for frames; ``live``, ``total`` (None if unknown),
    ``fps``, ``description``, ``close()``."""

    live = False
    total: int | None = None
    fps: float = 30.0
    description = ""

    def __iter__(self) -> Iterator[SourceFrame]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the device or file."""

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _CaptureSource(FrameSource):
    def __init__(self, target: int | str, what: str) -> None:
        cv2 = _cv2()
        self._cv2 = cv2
        self._cap = cv2.VideoCapture(target)
        if not self._cap.isOpened():
            self._cap.release()
            raise UsageError("usage.no_source", f"cannot open {what}", path=str(target))
        fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps = fps if np.isfinite(fps) and fps > 0 else 30.0
        self.description = what

    def _read(self) -> NDArray[np.uint8] | None:
        ok, bgr = self._cap.read()
        if not ok or bgr is None:
            return None
        rgb: NDArray[np.uint8] = self._cv2.cvtColor(bgr, self._cv2.COLOR_BGR2RGB)
        return rgb

    def close(self) -> None:
        self._cap.release()


class WebcamSource(_CaptureSource):
    """Camera ``device`` (an index: 0 is the first camera). Timestamps are the monotonic
    clock at capture, from 0. A camera that opens but gives no frame within
    ``first_frame_timeout`` seconds is ``usage.no_source``."""

    live = True

    def __init__(self, device: int = 0, *, width: int | None = None, height: int | None = None,
                 first_frame_timeout: float = 5.0) -> None:
        if device < 0:
            raise UsageError("usage.bad_option", f"camera index must be >= 0, got {device}", path="device")
        super().__init__(device, f"camera {device}")
        if width:
            self._cap.set(self._cv2.CAP_PROP_FRAME_WIDTH, width)
        if height:
            self._cap.set(self._cv2.CAP_PROP_FRAME_HEIGHT, height)
        self.first_frame_timeout = first_frame_timeout

    def __iter__(self) -> Iterator[SourceFrame]:
        start = time.monotonic()
        index = 0
        while True:
            rgb = self._read()
            if rgb is None:
                if index == 0 and time.monotonic() - start < self.first_frame_timeout:
                    time.sleep(0.05)
                    continue
                if index == 0:
                    raise UsageError("usage.no_source", f"{self.description} gives no frames")
                return
            yield SourceFrame(index, int((time.monotonic() - start) * 1e6), rgb)
            index += 1


class VideoSource(_CaptureSource):
    """A video file; timestamps ``round(i / fps · 10⁶)``; ``total`` from the container
    (an estimate for some formats)."""

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        if not p.is_file():
            raise UsageError("usage.no_source", f"no video file {p}", path=str(p))
        super().__init__(str(p), f"video {p.name}")
        count = int(self._cap.get(self._cv2.CAP_PROP_FRAME_COUNT) or 0)
        self.total = count if count > 0 else None

    def __iter__(self) -> Iterator[SourceFrame]:
        index = 0
        while (rgb := self._read()) is not None:
            yield SourceFrame(index, round(index / self.fps * 1e6), rgb)
            index += 1
        if index == 0:
            raise UsageError("usage.no_source", f"{self.description}: no frame could be decoded")


class ImageFolderSource(FrameSource):
    """The images of a folder (:data:`IMAGE_SUFFIXES`), in name order, as independent
    photos; timestamps ``i / fps`` at a nominal ``fps`` (``i`` counts the images read). An
    image that cannot be decoded is skipped and listed in :attr:`skipped` as ``(file name,
    reason)``; an empty folder, or one where no image can be decoded, is ``usage.no_source``."""

    def __init__(self, folder: str | Path, *, fps: float = 1.0) -> None:
        p = Path(folder)
        if not p.is_dir():
            raise UsageError("usage.no_source", f"no image folder {p}", path=str(p))
        if not fps > 0:
            raise UsageError("usage.bad_option", f"fps must be > 0, got {fps}", path="fps")
        self.files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
        if not self.files:
            raise UsageError("usage.no_source", f"no image ({', '.join(IMAGE_SUFFIXES)}) in {p}", path=str(p))
        self._cv2 = _cv2()
        self.fps = fps
        self.total = len(self.files)
        self.description = f"{len(self.files)} images in {p}"
        self.folder = p
        #: ``(file name, reason)`` of each image skipped so far.
        self.skipped: list[tuple[str, str]] = []

    def __iter__(self) -> Iterator[SourceFrame]:
        self.skipped = []
        index = 0
        for path in self.files:
            bgr = self._cv2.imread(str(path), self._cv2.IMREAD_COLOR)
            if bgr is None:
                self.skipped.append((path.name, "cannot be decoded as an image"))
                continue
            rgb: NDArray[np.uint8] = self._cv2.cvtColor(bgr, self._cv2.COLOR_BGR2RGB)
            yield SourceFrame(index, round(index / self.fps * 1e6), rgb, path.name)
            index += 1
        if index == 0:
            raise UsageError("usage.no_source", f"no image in {self.folder} could be decoded "
                             f"({len(self.files)} tried)", path=str(self.folder))


#: URL schemes a network camera may use.
NETWORK_SCHEMES: tuple[str, ...] = ("http://", "https://", "rtsp://", "rtsps://")


class NetworkCameraSource(FrameSource):
    """A camera on the network (``url``: MJPEG over HTTP or RTSP, read by OpenCV), paced to
    the consumer: a reader thread decodes every frame the camera sends and keeps only the
    newest; the iterator yields the newest frame not yet given, waiting for one when none is
    new, so a consumer slower than the camera drops stale frames (:attr:`dropped`) instead of
    queueing them. Timestamps are the monotonic clock at decode, from the first frame. No
    frame within ``first_frame_timeout`` seconds is ``usage.no_source``; the stream ending
    (the camera closed it) ends the iteration. ``on_status`` gets a status line (frames
    received, fps, dropped) at most every ``status_every`` seconds (default: stderr)."""

    live = True

    def __init__(self, url: str, *, first_frame_timeout: float = 10.0, status_every: float = 5.0,
                 on_status: Callable[[str], None] | None = None) -> None:
        if not url.lower().startswith(NETWORK_SCHEMES):
            raise UsageError("usage.bad_option", f"a network camera URL starts with {', '.join(NETWORK_SCHEMES)}",
                             path=url)
        cv2 = _cv2()
        self._cv2 = cv2
        self.url = url
        self._cap = cv2.VideoCapture(url)
        if not self._cap.isOpened():
            self._cap.release()
            raise UsageError("usage.no_source", f"cannot open the network camera {url}", path=url)
        fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps = fps if np.isfinite(fps) and 0 < fps <= 240 else 30.0
        self.description = f"network camera {url}"
        self.first_frame_timeout = first_frame_timeout
        self.status_every = status_every
        self.on_status = on_status if on_status is not None else (
            lambda line: print(line, file=sys.stderr, flush=True))
        self.received = 0  # frames decoded from the camera
        self.delivered = 0  # frames given to the consumer
        self.dropped = 0  # frames replaced by a newer one before the consumer took them
        self._latest: tuple[NDArray[np.uint8], float] | None = None
        self._fresh = False
        self._ended = False
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._start = 0.0
        self._status_at = 0.0
        self._thread = threading.Thread(target=self._reader, name="posewire-netcam", daemon=True)
        self._thread.start()

    def _reader(self) -> None:
        while not self._stop.is_set():
            ok, bgr = self._cap.read()
            if not ok or bgr is None:
                break
            rgb: NDArray[np.uint8] = self._cv2.cvtColor(bgr, self._cv2.COLOR_BGR2RGB)
            now = time.monotonic()
            with self._cond:
                if self._fresh:
                    self.dropped += 1  # the consumer never took the previous one: stale
                if self.received == 0:
                    self._start = now
                self._latest, self._fresh = (rgb, now), True
                self.received += 1
                self._cond.notify_all()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def status_line(self) -> str:
        elapsed = time.monotonic() - self._start if self.received else 0.0
        rate = self.received / elapsed if elapsed > 0 else 0.0
        return (f"{self.description}: {self.received} frames received ({rate:.1f} fps), {self.delivered} used, "
                f"{self.dropped} stale dropped")

    def __iter__(self) -> Iterator[SourceFrame]:
        opened = time.monotonic()
        while True:
            with self._cond:
                while not self._fresh and not self._ended:
                    if self.received == 0 and time.monotonic() - opened > self.first_frame_timeout:
                        raise UsageError("usage.no_source", f"{self.description} gives no frames "
                                         f"within {self.first_frame_timeout:g} s", path=self.url)
                    self._cond.wait(0.1)
                if not self._fresh:  # ended, nothing new
                    if self.received == 0:
                        raise UsageError("usage.no_source", f"{self.description} gives no frames", path=self.url)
                    break
                assert self._latest is not None
                rgb, at = self._latest
                self._fresh = False
                index = self.delivered
                self.delivered += 1
            now = time.monotonic()
            if now - self._status_at >= self.status_every:
                self._status_at = now
                self.on_status(self.status_line())
            yield SourceFrame(index, int((at - self._start) * 1e6), rgb)
        self.on_status(self.status_line())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._cap.release()
