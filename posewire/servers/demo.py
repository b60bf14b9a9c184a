"""``posewire demo`` (what ``make run`` runs): a person driving an avatar, in one command.

It starts, on loopback:

1. a relay (:class:`posewire.relay.Relay`) on ``--relay-port`` (default 8765, the
   clients' default URL; 0: a free port), its URL printed;
2. the live viewer (:class:`posewire.servers.viewer.ViewerServer`): a page that subscribes to the
   stream and poses the skinned mannequin with the JavaScript decoder;
3. a producer: with ``--webcam N|URL``, the live MediaPipe producer (``posewire produce
   --webcam``: a camera index or a network camera's URL); with ``--capture``, the capture
   page (``/capture``: the browser's own webcam through MediaPipe in the page, as ``posewire
   view --capture``), opened instead of the viewer; otherwise the real signer recording shipped in the package
   (``posewire/data/holistic_signer.jsonl``: ``tests/data/holistic_signer.pose``, a MediaPipe
   Holistic capture, converted by :func:`posewire.producers.poseformat.pose_file_to_recording`;
   MIT, see ``posewire/data/LICENSE-holistic_signer.txt``), looped at its own frame rate — or
   any ``--recording`` (``.pose``, a posewire ``.pwr`` or a JSON-lines recording);
4. a Python subscriber that decodes every frame for the same mannequin (bones by IK/FK,
   ARKit face weights, spec §4.1–§4.7) and prints a status line: frames, fps, wire
   bytes, end-to-end latency, decode time.

It prints the viewer URL and opens a browser where there is one (``--no-browser``:
none). ``--frames N`` ends after N published frames (exit status 0); ``--frames 0``
runs until interrupted.

``--host`` binds the page and the relay elsewhere than loopback (``0.0.0.0``: every
interface, for a phone on the LAN); ``--tls`` serves both with one certificate
(``https://`` and ``wss://``, :mod:`posewire.servers.lan`): browsers give the camera only
to secure pages, so a phone's capture page (``posewire view --capture --tls``, which runs
this) needs it. Beyond loopback the relay requires a token (spec §5.7 rule 5): one is made
when none is given, and the page takes it from its configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import statistics
import sys
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from posewire.cli.conventions import DEFAULT_STREAM, describe_error
from posewire.codec.errors import PosewireError, UsageError
from posewire.codec.wire import Frame, encode
from posewire.transport import RelayError

from .assets import DEMO_RECORDING
from .lan import TlsFiles

if TYPE_CHECKING:
    from posewire.consumers.subscriber import SubscribedFrame

__all__ = ["DEFAULT_RECORDING", "DemoSummary", "add_parser", "load_recording", "run_demo"]

#: The committed real signer recording (MediaPipe Holistic, MIT), as a posewire recording
#: inside the package (posewire/data, generated from tests/data/holistic_signer.pose), so
#: that an installed demo needs neither the checkout nor pose-format.
DEFAULT_RECORDING = DEMO_RECORDING
#: Stream name the demo publishes on by default (every command's default stream).
STREAM = DEFAULT_STREAM


@dataclass
class DemoSummary:
    """What the demo measured (Python subscriber side)."""

    frames_sent: int = 0
    frames_received: int = 0
    wire_bytes: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    decode_us: list[float] = field(default_factory=list)

    def line(self) -> str:
        if not self.frames_received:
            return f"{self.frames_sent} frames sent, none received yet"
        return (f"{self.frames_sent} frames sent, {self.frames_received} decoded: "
                f"{np.mean(self.wire_bytes):.0f} B per frame on the wire; latency p50 "
                f"{statistics.median(self.latency_ms):.2f} ms, max {max(self.latency_ms):.2f} ms; "
                f"decode (bones by IK, face weights) {statistics.median(self.decode_us):.0f} µs per frame")


def load_recording(path: Path) -> tuple[object, list[object]]:
    """``(header, frames)`` of any recording (:func:`posewire.producers.recording.read_recording`:
    a posewire ``.pwr``, JSON lines, or a ``.pose`` file converted on the fly; spec §4.1
    calibration in the header)."""
    from posewire.producers.recording import open_recording

    recording = open_recording(path)
    if recording.lost is not None:  # spec §8.6: a cut file, read to its last whole record
        print(f"posewire demo: {path}: {recording.lost}", file=sys.stderr)
    return recording.header, recording.frames  # type: ignore[return-value]


async def run_demo(recording: Path, *, frames: int = 0, speed: float = 1.0, port: int = 0,
                   relay_port: int = 0, browser: bool = False, webcam: int | str | None = None,
                   capture: bool = False, stream: str = STREAM, out: Callable[[str], None] = print,
                   on_ready: Callable[[str], None] | None = None, host: str = "127.0.0.1",
                   tls: TlsFiles | None = None, token: str | None = None) -> DemoSummary:
    """Run relay, viewer, looped producer and a decoding subscriber (module docstring).

    ``frames``: frames to publish (0: until cancelled); ``speed``: playback rate (0: as
    fast as the relay's rate limit allows); ``port``: the viewer's port (0: any free
    one); ``relay_port``: the relay's port on 127.0.0.1 (0: any free one; in use: a
    :class:`UsageError` saying so); ``webcam``: camera index or network camera URL — the producer is then
    ``posewire produce --webcam`` (live MediaPipe) instead of the recording; ``capture``: the producer is the
    capture page (``/capture``), the browser's webcam (``frames``: frames to receive from it);
    ``on_ready(url)``: called once the page is served; ``host``: the address page and relay
    bind; ``tls``: serve both with this certificate; ``token``: the relay's (beyond
    loopback one is made when None; module docstring)."""
    from posewire.consumers.gltf import mannequin_skeleton
    from posewire.consumers.pose import decode_frame
    from posewire.consumers.subscriber import Subscriber
    from posewire.producers.publisher import Publisher
    from posewire.producers.recording import RecordedFrame, RecordingHeader
    from posewire.relay import Relay, is_loopback
    from posewire.relay.auth import new_token
    from posewire.transport import server_tls_context

    from .lan import fingerprint
    from .viewer import ViewerConfig, serve_viewer

    if capture and webcam is not None:
        raise UsageError("usage.bad_option", "--capture and --webcam are two producers: choose one", path="capture")
    live = capture or webcam is not None  # the frames come from a camera, counted as they arrive
    if capture:
        from .web_packages import capture_problem

        problem = capture_problem()
        if problem is not None:
            raise UsageError("usage.model_missing", problem, path="capture")
        header, recs, source = RecordingHeader(), [], "the capture page (this browser's webcam, MediaPipe in the page)"
    elif webcam is None:
        loaded, records = load_recording(recording)
        assert isinstance(loaded, RecordingHeader)
        header = loaded
        recs = [r for r in records if isinstance(r, RecordedFrame)]
        if not recs:
            raise UsageError("usage.no_source", f"{recording} holds no frames", path=str(recording))
        source = f"{recording.name} ({len(recs)} frames, looped)"
    else:
        header, recs, source = RecordingHeader(), [], f"webcam {webcam} (live MediaPipe)"
    skel, retarget = mannequin_skeleton()
    avatar = retarget.apply(skel).skeleton
    summary = DemoSummary()

    if token is None and not is_loopback(host):
        token = new_token()  # spec §5.7 rule 5: beyond loopback the relay requires one
    ca_file = None if tls is None else str(tls.cert)
    # the page is served first: the relay accepts browsers only from allowed origins
    # (spec §5.8), so it is told the viewer's before it starts
    viewer = serve_viewer(ViewerConfig("", stream), host=host, port=port,
                          tls=None if tls is None else server_tls_context(tls.cert, tls.key))
    try:
        relay = Relay(host, port=relay_port, status_every=0, allow_origins=viewer.origins, token=token,
                      tls_cert=None if tls is None else tls.cert, tls_key=None if tls is None else tls.key)
        try:
            await relay.start()
        except OSError as exc:
            raise UsageError("usage.bad_option", f"cannot start the relay on {host}:{relay_port} ({exc.strerror}); "
                             "--relay-port 0 picks a free port", path="relay_port") from None
        try:
            # the relay as the page reaches it: on the page's own host (a LAN address when
            # bound to every interface), so that one certificate and one exception serve both
            page_host = urlsplit(viewer.url).netloc.rsplit(":", 1)[0]
            relay_url = f"{'wss' if tls else 'ws'}://{page_host}:{relay.port}"
            viewer.config = ViewerConfig(relay_url, stream, token, ca_file=ca_file)
            clients = f"--url {relay_url}" + (f" --token {token}" if token else "") + \
                (f" --ca-file {ca_file}" if ca_file else "")
            out(f"posewire demo: {source} on {relay_url}, stream {stream!r}")
            out(f"relay: {relay_url} (stream {stream!r}: posewire consume --stream {stream} {clients})")
            out(f"viewer: {viewer.url}")
            page = viewer.url
            if capture:
                page = viewer.url + "capture"
                out(f"capture: {page} (press start camera: this browser's webcam publishes to {stream!r})")
            if tls is not None:
                _say_tls(tls, page, relay_url, host, fingerprint(tls.cert), out)
            if on_ready is not None:
                on_ready(viewer.url)
            if browser:
                _open_browser(page, out)

            async def publish() -> None:
                async with Publisher(relay_url, stream, calibration=header.calibration, token=token,
                                     ca_file=ca_file) as pub:
                    period = [b.t_us - a.t_us for a, b in itertools.pairwise(recs)]
                    step_us = statistics.median(period) if period else 40_000
                    start = time.monotonic()
                    sent = 0
                    while frames <= 0 or sent < frames:
                        rec = recs[sent % len(recs)]
                        if speed > 0:
                            delay = sent * step_us / 1e6 / speed - (time.monotonic() - start)
                            if delay > 0:
                                await asyncio.sleep(delay)
                        await pub.send_frame(rec.vector(), conditions=rec.conditions)
                        sent += 1
                        summary.frames_sent = sent

            async def publish_webcam() -> None:
                # the live producer (spec §7), as its own process (inference off this event loop)
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "posewire.cli", "produce", "--webcam", str(webcam), "--url", relay_url,
                    "--stream", stream, "--frames", str(max(frames, 0)),
                    *(("--ca-file", ca_file) if ca_file else ()), env=_with_token(token))
                try:
                    status = await proc.wait()
                finally:
                    if proc.returncode is None:
                        proc.terminate()
                        await proc.wait()
                if status != 0:
                    raise UsageError("usage.no_source", f"the webcam producer exited with status {status}",
                                     path="webcam")

            async def from_the_page() -> None:
                # the capture page publishes: done once it has sent ``frames`` (never for 0)
                while frames <= 0 or summary.frames_received < frames:
                    await asyncio.sleep(0.1)

            producer = asyncio.create_task(from_the_page() if capture else publish() if webcam is None
                                           else publish_webcam())
            async with Subscriber(relay_url, stream, merge=True, token=token, ca_file=ca_file) as sub:
                last_line = time.monotonic()
                printed = ""
                while True:
                    try:
                        frame = await asyncio.wait_for(sub.recv(), 0.5 if producer.done() else 5.0)
                    except TimeoutError:
                        if producer.done():
                            break
                        continue
                    if frame is None:
                        break
                    _decode_one(frame, avatar, summary, decode_frame)
                    if live:
                        summary.frames_sent = summary.frames_received
                    if time.monotonic() - last_line >= 2.0:
                        printed = summary.line()
                        out(printed)
                        last_line = time.monotonic()
                    if producer.done() and summary.frames_received >= summary.frames_sent:
                        break
            await producer
        finally:
            await relay.close()
    finally:
        viewer.stop()
    if summary.line() != printed:
        out(summary.line())
    return summary


def _say_tls(tls: TlsFiles, page: str, relay_url: str, host: str, print_fingerprint: str,
             out: Callable[[str], None]) -> None:
    """What to open on the phone, and how to check the certificate (posewire.servers.lan)."""
    from posewire.relay import is_loopback

    if is_loopback(host):
        out("tls: served on loopback only; --host 0.0.0.0 (or this machine's LAN address) to open it from a phone")
    else:
        out(f"on the phone (same network): open {page}")
    kind = "self-signed, made here" if tls.self_signed else "given"
    out(f"certificate ({kind}: {tls.cert}) SHA-256 fingerprint {print_fingerprint}")
    if tls.self_signed:
        out("the browser warns that it does not know this certificate: check that its SHA-256 fingerprint "
            "is the one above, then accept it. If the page then says the relay cannot be reached (Firefox "
            f"asks again per port), open https://{urlsplit(relay_url).netloc}/ once and accept the same certificate")


def _with_token(token: str | None) -> dict[str, str] | None:
    """The environment of a child client: ``$POSEWIRE_TOKEN`` set to ``token`` (off its
    command line)."""
    import os

    return None if token is None else {**os.environ, "POSEWIRE_TOKEN": token}


def _decode_one(frame: SubscribedFrame, avatar: object, summary: DemoSummary,
                decode_frame: Callable[..., object]) -> None:
    summary.frames_received += 1
    summary.latency_ms.append(time.time_ns() / 1e6 - frame.timestamp_us / 1e3)
    # the frame as it travelled (its condition state only when it changed, spec §5.5)
    summary.wire_bytes.append(frame.wire_bytes or len(encode(
        Frame(frame.seq, frame.timestamp_us, np.where(frame.mask, frame.values, np.nan), frame.conditions))))
    began = time.perf_counter()
    mouthing = frame.conditions.mouthing if frame.conditions else None
    # bones, IK and face weights with one validation (posewire.consumers.pose.decode_frame)
    decode_frame(frame.values[None], avatar, capability="viseme15", visemes=None if mouthing is None else [mouthing])
    summary.decode_us.append((time.perf_counter() - began) * 1e6)


def _open_browser(url: str, out: Callable[[str], None]) -> None:
    try:
        webbrowser.get()
    except webbrowser.Error:
        out("no web browser found here: open the viewer URL above in one")
        return
    webbrowser.open(url)


def _cmd_demo(args: argparse.Namespace) -> int:
    import os

    from .lan import tls_files

    recording: Path = args.recording or DEFAULT_RECORDING
    try:
        files = tls_files(cert=args.tls_cert, key=args.tls_key, bind=args.host) \
            if args.tls or args.tls_cert is not None else None
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_demo(recording, frames=args.frames, speed=args.speed, port=args.port,
                                 relay_port=args.relay_port, browser=not args.no_browser, webcam=args.webcam,
                                 capture=args.capture, stream=args.stream, host=args.host, tls=files,
                                 token=os.environ.get("POSEWIRE_TOKEN") or None))
    except (OSError, ValueError, PosewireError, RelayError) as exc:
        print(f"posewire demo: {describe_error(exc)}", file=sys.stderr)
        return 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` sub-command to the ``posewire`` parser."""
    from posewire.cli.conventions import add_frames_option, add_speed_option, add_stream_option, camera_source
    from posewire.cli.net_options import add_page_tls_options

    p = subparsers.add_parser("demo", help="relay + producer + live browser viewer on loopback, "
                                           "one command (make run)")
    p.add_argument("--recording", type=Path, default=None,
                   help="a .pose file or a recording (.pwr or JSON lines; default: the committed real signer)")
    add_stream_option(p, help="stream name the demo publishes on")
    add_frames_option(p, help="end after N frames (0: run until Ctrl-C)")
    add_speed_option(p, help="playback rate (1: the recording's frame rate, 0: as fast as possible)")
    p.add_argument("--port", type=int, default=8770, help="viewer port on --host (0: any free port)")
    p.add_argument("--relay-port", type=int, default=8765,
                   help="relay port on --host (8765 is where the other commands look unless told otherwise, so "
                        "posewire view or posewire vmc find the demo; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--webcam", type=camera_source, nargs="?", const=0, default=None, metavar="N|URL",
                        help="camera N (default: 0), or a network camera URL (MJPEG over http://, or rtsp://), "
                             "through live MediaPipe here (posewire produce --webcam) instead of the recording")
    source.add_argument("--capture", action="store_true",
                        help="the capture page instead of the recording: this browser's webcam through MediaPipe "
                             "in the page (as posewire view --capture); --frames counts the frames it sends")
    add_page_tls_options(p, binds="the pages and the relay", serves="the pages and the relay")
    p.set_defaults(func=_cmd_demo)
