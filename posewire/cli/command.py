"""The ``posewire`` command: its parser, its entry point (``posewire``, ``python -m posewire``)
and the subcommands small enough to live here (``registry``, ``serve``, ``consume``, ``generate``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from posewire import __version__
from posewire.bridges import vmc
from posewire.codec.registry import DIMENSIONS, REGISTRY
from posewire.conformance import command as conformance_command
from posewire.servers import demo, viewer

from . import convert, export, produce, record
from .conventions import HelpFormatter, describe_error
from .extras import missing_extra, missing_module_line

__all__ = ["DESCRIPTION", "main"]

#: What ``posewire --help`` says before the list of commands.
DESCRIPTION = """\
posewire streams a person's pose - body, hands, fingers, head and face - from a webcam,
a video or a VR headset as a small vector of pose parameters over websockets, and drives
avatars with it.

Start here:
  posewire demo                  a relay, a recorded signer and the live viewer in your browser
  posewire demo --capture        the same, with this browser's webcam as the camera
  posewire produce --webcam      your webcam through MediaPipe to a relay (posewire serve)
  posewire view                  the stream on a mannequin in your browser
  posewire vmc                   the stream to a VTuber app (VSeeFace, VNyan, Warudo) over VMC

Each command has its own --help; docs/cli.md has them all."""


class _TopHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The top-level help: the description as written (its command list), defaults shown."""


def _cmd_registry(args: argparse.Namespace) -> int:
    if args.json:
        import json

        print(json.dumps(REGISTRY.export(), indent=2))
        return 0
    print(f"posewire registry {REGISTRY.version}  sha256 {REGISTRY.hash}")
    print(f"{len(DIMENSIONS)} dimensions\n")
    header = f"{'#':>3}  {'id':<18} {'group':<8} {'polarity':<9} {'max':>6} {'unit':<5} {'default':>8}  meaning"
    print(header)
    print("-" * len(header))
    for d in DIMENSIONS:
        r = d.row
        print(f"{d.index:>3}  {d.id:<18} {r.group:<8} {r.polarity:<9} {r.max:>6g} {r.unit:<5} "
              f"{r.default:>8g}  {r.meaning}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from posewire.generate import check_all, write_all

    root = Path(args.root)
    if args.check:
        stale = check_all(root)
        for path in stale:
            print(f"stale: {path}")
        return 1 if stale else 0
    write_all(root)
    return 0


def _cmd_token(args: argparse.Namespace) -> int:
    from posewire.relay.auth import MIN_TOKEN_BITS, new_token

    if not MIN_TOKEN_BITS <= args.bits <= 4096:
        print(f"posewire token: --bits must be in [{MIN_TOKEN_BITS}, 4096] (usage.bad_option)",
              file=sys.stderr)
        return 2
    print(new_token(args.bits))
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from posewire.codec.errors import UsageError
    from posewire.relay import Relay

    from .net_options import serve_options

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("websockets").setLevel(logging.WARNING)  # no per-connection lines
    token = None if args.no_auth else (args.token or os.environ.get("POSEWIRE_TOKEN") or None)
    try:
        broker = None
        if args.broker:  # spec §5.7.1
            from posewire.relay.cluster import Broker

            broker = Broker(args.broker, creds=args.broker_creds, ca_file=args.broker_ca,
                            insecure_broker=args.insecure_broker,
                            relay_name=args.broker_name)
        relay = Relay(args.host, args.port, token=token, no_auth=args.no_auth,
                      max_fps=args.max_fps, max_bytes=args.max_bytes,
                      status_every=args.status_every or None, broker=broker,
                      send_window_s=args.send_window_s or None, **serve_options(args))
    except UsageError as exc:
        print(f"posewire serve: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(relay.run())
    except UsageError as exc:  # e.g. the broker does not answer
        print(f"posewire serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"posewire serve: cannot listen on {args.host}:{args.port}: {describe_error(exc)}; "
              "--port picks another (usage.bad_option)", file=sys.stderr)
        return 1
    return 0


def _run_client(name: str, args: argparse.Namespace,
                client: Callable[[argparse.Namespace], Coroutine[Any, Any, int]]) -> int:
    """Run one client command: token from the environment, errors as one line."""
    from posewire.codec.errors import UsageError
    from posewire.transport import RelayError

    from .waiting import WaitTimeoutError

    args.token = args.token or os.environ.get("POSEWIRE_TOKEN") or None
    try:
        return asyncio.run(client(args))
    except WaitTimeoutError as exc:
        print(f"posewire {name}: {exc}", file=sys.stderr)
        return 1
    except (RelayError, UsageError, OSError) as exc:
        print(f"posewire {name}: {describe_error(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _format_frame(seq: int, t_us: int, values: dict[str, float]) -> str:
    from posewire.codec.registry import REGISTRY

    parts = [f"seq={seq}", f"t_us={t_us}"]
    for key, value in values.items():
        if abs(value - REGISTRY.by_id[key].row.default) > 1e-4:
            parts.append(f"{key}={value:.4f}")
    return " ".join(parts)


async def _consume(args: argparse.Namespace) -> int:
    from posewire.codec.conditions import conditions_to_obj
    from posewire.codec.registry import DIMENSIONS as DIMS
    from posewire.consumers.subscriber import Subscriber
    from posewire.producers.recording import (
        ContainerWriter,
        RecordedFrame,
        RecordingHeader,
        RecordingWriter,
        open_writer,
    )

    from .net_options import client_options
    from .waiting import StatusLines, first_frame, then, within

    writer: RecordingWriter | ContainerWriter | None = None
    container: ContainerWriter | None = None
    got = 0
    started = time.monotonic()
    status = StatusLines("consume")
    if args.record:
        chosen = open_writer(args.record, header=RecordingHeader(stream=args.stream), client="posewire-consume")
        if isinstance(chosen, ContainerWriter):
            container = chosen  # spec §8: every data message, as its exact bytes, as it arrives
            container.open()
    wall0, mono0 = time.time_ns() // 1000, time.monotonic_ns() // 1000

    def record_message(data: bytes, msg: object) -> None:
        from posewire.codec.wire import Frame

        if container is None or (args.frames and isinstance(msg, Frame) and container.count >= args.frames):
            return
        container.write_message(wall0 + time.monotonic_ns() // 1000 - mono0, data)  # a monotonic clock

    sub = Subscriber(args.url, args.stream, token=args.token, client="posewire-consume",
                     on_status=status, on_message=record_message if container is not None else None,
                     **client_options(args))
    status.start(sub.url, args.stream)
    try:
        first = await within(args.timeout, started, status, first_frame(sub, status))
        frames = sub if first is None else then(first, sub)
        async for frame in frames:
            values = {d.id: float(frame.values[d.index]) for d in DIMS
                      if not math.isnan(frame.values[d.index])}
            if container is not None:
                if args.frames and container.count >= args.frames:
                    break
                continue
            if args.record:
                if writer is None:
                    header = RecordingHeader(calibration=sub.calibration)
                    writer = RecordingWriter(args.record, header=header).__enter__()
                writer.write(RecordedFrame(frame.timestamp_us, values, frame.conditions))
            elif args.json:
                obj: dict[str, object] = {"seq": frame.seq, "t_us": frame.timestamp_us,
                                          "values": values}
                if frame.conditions is not None and not frame.conditions.empty:
                    obj["conditions"] = conditions_to_obj(frame.conditions)
                print(json.dumps(obj, separators=(",", ":")), flush=True)
            else:
                print(_format_frame(frame.seq, frame.timestamp_us, values), flush=True)
            got += 1
            if args.frames and got >= args.frames:
                break
    finally:
        await sub.close()
        done = container or writer
        if done is not None:
            done.close()
            print(f"posewire consume: recorded {done.count} frames to {args.record}",
                  file=sys.stderr)
    return 0


def _cmd_consume(args: argparse.Namespace) -> int:
    return _run_client("consume", args, _consume)


def _add_net_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from posewire.codec.wire import DEFAULT_MAX_FPS, DEFAULT_MAX_MESSAGE_BYTES

    from .conventions import add_deprecated_stream_positional, add_frames_option, add_stream_option
    from .net_options import add_client_options, add_serve_options
    from .waiting import add_timeout_option

    url_help = "relay URL (several relays of one cluster: comma-separated)"
    token_help = "auth token (default: $POSEWIRE_TOKEN)"

    p = sub.add_parser("serve", help="run the websocket relay (spec §5.7)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1: loopback only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on")
    auth = p.add_mutually_exclusive_group()
    auth.add_argument("--token", help="require this auth token (default: $POSEWIRE_TOKEN)")
    auth.add_argument("--no-auth", action="store_true",
                      help="ignore $POSEWIRE_TOKEN (loopback only: a relay beyond loopback "
                           "always requires a token, spec §5.7 rule 5)")
    p.add_argument("--max-fps", type=int, default=DEFAULT_MAX_FPS,
                   help="frames per second per producer")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                   help="largest accepted message in bytes")
    p.add_argument("--status-every", type=float, default=5.0,
                   help="seconds between status lines on stderr (0: off)")
    p.add_argument("--send-window-s", type=float, default=0.25, metavar="S",
                   help="frames a consumer may have unacknowledged, as seconds of frames at the stream's "
                        "rate (spec §5.7 rule 4; at most 128 frames; 0: 128 frames whatever the rate)")
    add_serve_options(p)
    p.add_argument("--broker", metavar="nats://HOST:PORT",
                   help="share streams with the other relays on this NATS server (spec §5.7.1); "
                        "nats://USER:PASS@HOST:PORT or tls://… with credentials")
    p.add_argument("--broker-creds", metavar="FILE",
                   help="the relay's NATS credentials: a NATS .creds file or one line "
                        "user:password (keeps the secret off the command line)")
    p.add_argument("--broker-ca", metavar="PEM",
                   help="verify the broker's TLS certificate with this CA bundle (tls:// URLs)")
    p.add_argument("--broker-name", metavar="NAME",
                   help="this relay's name in the broker's subjects and keys (unique in the "
                        "cluster; default: its NATS user; spec §5.7.1)")
    p.add_argument("--insecure-broker", action="store_true",
                   help="start beyond loopback even on a broker that requires no authentication "
                        "(anyone who reaches it can act as a relay; spec §5.7.1 rule 7)")
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("token", help="print a fresh random auth token for serve --token or "
                                     "$POSEWIRE_TOKEN (spec §5.7 rule 5)")
    p.add_argument("--bits", type=int, default=256, metavar="N",
                   help="its strength in bits (a relay beyond loopback needs at least 128)")
    p.set_defaults(func=_cmd_token)

    p = sub.add_parser("consume", help="subscribe to a stream and print or record frames")
    add_stream_option(p)
    add_deprecated_stream_positional(p)
    p.add_argument("--url", default="ws://127.0.0.1:8765", help=url_help)
    p.add_argument("--token", help=token_help)
    p.add_argument("--record", metavar="FILE",
                   help="write a recording instead of printing: FILE.pwr a posewire recording (spec §8: every "
                        "message as its exact bytes), any other name JSON lines")
    add_frames_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object per frame")
    add_timeout_option(p, what="receiving frames")
    add_client_options(p)
    p.set_defaults(func=_cmd_consume)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="posewire", description=DESCRIPTION, formatter_class=_TopHelpFormatter)
    parser.add_argument("--version", action="version", version=f"posewire {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("registry", help="print the parameter registry table")
    p.add_argument("--json", action="store_true", help="print the registry export as JSON")
    p.set_defaults(func=_cmd_registry)

    p = sub.add_parser("generate", help="regenerate the spec tables, JSON Schemas and docs/cli.md")
    p.add_argument("--root", default=".", help="repository root")
    p.add_argument("--check", action="store_true", help="only report stale files")
    p.set_defaults(func=_cmd_generate)

    conformance_command.add_parser(sub)

    _add_net_parsers(sub)
    record.add_parser(sub)
    convert.add_parser(sub)
    produce.add_parser(sub)
    export.add_parser(sub)
    demo.add_parser(sub)
    viewer.add_parser(sub)
    vmc.add_parser(sub)
    for p in sub.choices.values():  # one convention: every default shown (posewire.cli.conventions)
        p.formatter_class = HelpFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    # an optional feature without its extra: one line and status 2, never a traceback
    missing = missing_extra(args)
    if missing is not None:
        print(f"posewire {args.command}: {missing}", file=sys.stderr)
        return 2
    try:
        return func(args)
    except ModuleNotFoundError as exc:
        line = missing_module_line(exc)
        if line is None:
            raise
        print(f"posewire {args.command}: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as other Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
