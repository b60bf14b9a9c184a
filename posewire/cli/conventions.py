"""The one command-line convention of every ``posewire`` subcommand (docs/cli.md).

* the stream: ``--stream NAME``, default :data:`DEFAULT_STREAM` (``demo``) everywhere, so
  ``posewire produce --webcam`` then ``posewire view`` show the same stream as ``posewire
  demo``;
* how many frames: ``--frames N`` (0: no limit); ``--count`` is a hidden alias;
* playback speed: ``--speed X`` (1: recorded rate, 0: as fast as possible);
  ``--rate-scale`` is a hidden alias;
* mirrored (selfie) input: the flag ``--mirrored`` (un-mirror it) everywhere;
* TLS and liveness: ``--ca-file``, ``--ping-interval``, ``--ping-timeout`` on every
  client (:mod:`posewire.cli.net_options`);
* waiting: ``--timeout SECONDS`` on every client (``produce``, ``consume``, ``vmc``,
  ``view``): give up with one line saying what it waited for, exit status 1
  (:mod:`posewire.cli.waiting`); an unknown relay host is said once and not retried;
* every option's default in its ``--help`` (:class:`HelpFormatter`), plain text (no
  reStructuredText markup);
* errors: ``posewire COMMAND: what went wrong (code)`` — the plain-language message
  first, the stable code (:data:`posewire.codec.errors.ERROR_CODES`) last, for scripts
  (:func:`describe_error`).

``docs/cli.md`` is generated from the parser (:func:`posewire.generate.cli_reference_md`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_STREAM", "HelpFormatter", "add_frames_option", "add_speed_option", "add_stream_option",
           "camera_source", "describe_error"]

#: The stream every command uses unless told otherwise (``posewire demo`` publishes on it).
DEFAULT_STREAM = "demo"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, ``(default: X)``, unless its help already says it
    (the word ``default``) or there is nothing to show (``None``, an off flag)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
            return text
        if action.nargs == 0:  # a flag: off unless given
            return text
        if "default" in text or not action.option_strings:
            return text
        return text + " (default: %(default)s)"


class _Stream(argparse.Action):
    """``--stream NAME``; refuses a second, different name given positionally (``consume``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        old = getattr(namespace, "_positional_stream", None)
        if old is not None and old != values:
            parser.error(f"two stream names: {old!r} and --stream {values!r}")
        namespace.stream = values
        namespace._explicit_stream = values


def add_stream_option(p: argparse.ArgumentParser, *, help: str = "stream name") -> None:
    """``--stream NAME`` (default :data:`DEFAULT_STREAM`)."""
    p.add_argument("--stream", default=DEFAULT_STREAM, metavar="NAME", action=_Stream, help=help)


def add_frames_option(p: argparse.ArgumentParser | Any, *, help: str = "stop after N frames (0: no limit)",
                      default: int = 0) -> None:
    """``--frames N``; ``--count N`` is a hidden alias (the older spelling)."""
    p.add_argument("--frames", type=int, default=default, metavar="N", help=help)
    p.add_argument("--count", type=int, dest="frames", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_speed_option(p: argparse.ArgumentParser | Any, *,
                     help: str = "playback speed factor (1: the recorded rate, 2: twice as fast, "
                                 "0: as fast as possible)") -> None:
    """``--speed X``; ``--rate-scale X`` is a hidden alias (the older spelling)."""
    p.add_argument("--speed", type=float, default=1.0, metavar="X", help=help)
    p.add_argument("--rate-scale", type=float, dest="speed", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


class _DeprecatedStream(argparse.Action):
    """The stream as a positional argument (``posewire consume NAME``): still accepted,
    with one warning line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if values is None or values is argparse.SUPPRESS or isinstance(values, list):
            return
        given = getattr(namespace, "_explicit_stream", None)
        if given is not None and given != values:
            parser.error(f"two stream names: {values!r} and --stream {given!r}")
        namespace._positional_stream = values
        print(f"{parser.prog}: the stream as a positional argument is deprecated: use --stream {values}",
              file=sys.stderr)
        namespace.stream = values


def add_deprecated_stream_positional(p: argparse.ArgumentParser) -> None:
    """The old positional stream name of ``consume`` (hidden, warns)."""
    p.add_argument("old_stream", nargs="?", default=argparse.SUPPRESS, action=_DeprecatedStream,
                   help=argparse.SUPPRESS, metavar="STREAM")


def describe_error(exc: BaseException) -> str:
    """``exc`` as one plain line for a person, its stable code (if any) last.

    :class:`~posewire.codec.errors.PosewireError` and
    :class:`~posewire.transport.RelayError` already read so; an :class:`OSError` becomes
    ``what: file`` without Python's ``[Errno N]`` prefix."""
    if isinstance(exc, OSError) and not type(exc).__module__.startswith("websockets") and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return f"{exc.strerror}{where}"
    return str(exc)


def camera_source(text: str) -> int | str:
    """``--webcam`` (``produce``, ``demo``): a camera index, or a network camera URL."""
    if text.lower().startswith(("http://", "https://", "rtsp://", "rtsps://")):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a camera index or an http(s):// or rtsp:// URL, got {text!r}") from None
