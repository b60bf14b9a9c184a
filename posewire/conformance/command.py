"""``posewire conformance``: the kit's command line (spec §6.4, §6.7, §6.8).

Three targets, one report: the vectors against this package or another implementation
(``--exec``), a relay over the wire (``--relay ws://…``), a producer over the wire
(``--producer``). Every case ends with a verdict (OK, NON-STRICT, FAILED, UNIMPLEMENTED);
``--json`` and ``--html`` write the report; the exit status is 1 when anything FAILED.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path

from . import CaseResult, ProcessExecutor, run_dir
from .report import exit_status, text_lines, write_reports

__all__ = ["add_parser", "default_vectors", "run"]


def default_vectors() -> Path:
    """``spec/conformance`` under the current directory when there is one, else the
    vectors installed with the package (``posewire/conformance/vectors``, mapped from
    ``spec/conformance`` by ``pyproject.toml``), else those of the checkout this package
    runs from (an editable install)."""
    local = Path("spec/conformance")
    if local.is_dir():
        return local
    here = Path(__file__).resolve().parent
    installed = here / "vectors"
    checkout = here.parents[1] / "spec" / "conformance"
    return installed if installed.is_dir() or not checkout.is_dir() else checkout


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conformance", help="run the conformance kit (spec §6)")
    p.add_argument("directory", nargs="?", default=None,
                   help="directory of vectors (default: spec/conformance, else the installed "
                        "copy)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every case")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--exec", metavar="COMMAND",
                        help="run the vectors against another implementation speaking the "
                             "kit's JSON-lines protocol on stdin/stdout (spec §6.4)")
    target.add_argument("--relay", metavar="URL",
                        help="run the scripted client suite against the relay at ws://… "
                             "(spec §6.7)")
    target.add_argument("--producer", action="store_true",
                        help="listen as a relay, accept one producer and check its messages "
                             "(spec §6.8)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for each answer of --exec (default 10); per step "
                        "for --relay (default 2 there)")
    p.add_argument("--token", help="auth token of the relay (--relay; enables the auth check) "
                                   "or required of the producer (--producer)")
    p.add_argument("--listen", default="127.0.0.1:8766",
                   help="host:port for --producer (default 127.0.0.1:8766)")
    p.add_argument("--seconds", type=float, default=5.0,
                   help="--producer: how long to watch the producer (default 5)")
    p.add_argument("--frames", type=int, default=0,
                   help="--producer: stop after this many frames (default: --seconds)")
    p.add_argument("--hello-deadline", type=float, default=10.0, metavar="S",
                   help="--relay: the longest hello deadline accepted (spec §5.7 rule 8; "
                        "default 10 s, the reference relay's is 3 s)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report")
    p.add_argument("--html", type=Path, metavar="PATH", help="write the HTML report")
    p.set_defaults(func=run)


def _vectors(args: argparse.Namespace) -> tuple[list[CaseResult], str] | int:
    directory = Path(args.directory) if args.directory else default_vectors()
    timeout = 10.0 if args.timeout is None else args.timeout
    executor = ProcessExecutor(shlex.split(args.exec), timeout=timeout) if args.exec else None
    try:
        results = run_dir(directory, executor)
    except RuntimeError as exc:  # the other implementation hung or exited
        print(f"posewire conformance: {exc}", file=sys.stderr)
        return 2
    finally:
        if executor is not None:
            executor.close()
    return results, (f"exec: {args.exec}" if args.exec else "posewire (reference)")


def run(args: argparse.Namespace) -> int:
    """Run the kit as the arguments say; print the verdicts, write the reports."""
    if args.relay or args.producer:
        got = _over_the_wire(args)  # websockets is a core dependency
        if isinstance(got, int):
            return got
        results, target = got
    else:
        got = _vectors(args)
        if isinstance(got, int):
            return got
        results, target = got
    for line in text_lines(results, verbose=args.verbose):
        print(line)
    write_reports(results, target=target, json_path=args.json, html_path=args.html)
    return exit_status(results)


async def _unreachable(url: str, timeout: float) -> str | None:
    """Why no websocket opens to ``url`` ("refused", ...), or None when one does."""
    import ssl

    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake, InvalidURI
    from websockets.typing import Subprotocol

    from posewire.codec.wire import SUBPROTOCOL
    from posewire.transport import client_tls_context, connect_failure

    try:
        async with connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], open_timeout=timeout,
                           ssl=client_tls_context(url, None), proxy=None):
            return None
    except (OSError, InvalidHandshake, InvalidURI, TimeoutError, ssl.SSLError) as exc:
        return connect_failure(exc, timeout)


def _over_the_wire(args: argparse.Namespace) -> tuple[list[CaseResult], str] | int:
    timeout = 2.0 if args.timeout is None else args.timeout
    if args.relay:
        from .relay_suite import run_relay_suite

        if not args.relay.startswith(("ws://", "wss://")):
            print(f"posewire conformance: --relay takes a ws:// or wss:// URL, not {args.relay!r} (usage.bad_option)",
                  file=sys.stderr)
            return 2
        down = asyncio.run(_unreachable(args.relay, timeout))
        if down is not None:  # one line, not a FAILED verdict per case
            print(f"posewire conformance: cannot connect: relay {args.relay} {down} (link)", file=sys.stderr)
            return 2
        return (asyncio.run(run_relay_suite(args.relay, token=args.token, timeout=timeout,
                                            hello_deadline=args.hello_deadline)),
                f"relay: {args.relay}")
    from .producer_suite import watch_producer

    host, _, port = args.listen.rpartition(":")
    try:
        results = asyncio.run(watch_producer(host or "127.0.0.1", int(port), token=args.token,
                                             seconds=args.seconds, frames=args.frames,
                                             timeout=max(timeout, args.seconds + 30.0)))
    except OSError as exc:
        print(f"posewire conformance: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return 2
    return results, f"producer on {args.listen}"
