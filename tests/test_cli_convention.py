"""One command-line convention across the subcommands (posewire.cli.conventions;
posewire/cli/conventions.py): stream, frames, speed, mirror, TLS and ping options, defaults
in --help, plain help text, plain-language errors with the stable code last."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from posewire.cli.command import build_parser, main
from posewire.cli.conventions import DEFAULT_STREAM, describe_error
from posewire.codec.errors import DecodeError, UsageError
from posewire.transport import RelayError

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ("produce", "consume", "view", "vmc")
SOURCE = ["--replay", str(ROOT / "tests" / "data" / "wave.jsonl")]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in p._actions for s in a.option_strings}


def test_the_stream_is_an_option_with_one_default_everywhere() -> None:
    subs = _subparsers()
    assert DEFAULT_STREAM == "demo"
    for name in (*CLIENTS, "demo"):
        stream = _options(subs[name])["--stream"]
        assert stream.default == "demo" and not stream.required, name
    # produce --webcam then view: the same stream as the demo, with no option at all
    parse = build_parser().parse_args
    assert parse(["produce", "--webcam"]).stream == parse(["view"]).stream == parse(["vmc"]).stream \
        == parse(["consume"]).stream == parse(["demo"]).stream == "demo"


def test_consume_keeps_the_positional_stream_with_one_warning_line() -> None:
    proc = subprocess.run([sys.executable, "-c", "from posewire.cli.command import build_parser; "
                           "print(build_parser().parse_args(['consume', 'alice']).stream)"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout == "alice\n"
    assert proc.stderr == ("posewire consume: the stream as a positional argument is deprecated: "
                           "use --stream alice\n")
    assert build_parser().parse_args(["consume", "--stream", "bob"]).stream == "bob"
    for both in (["alice", "--stream", "bob"], ["--stream", "bob", "alice"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["consume", *both])
    assert build_parser().parse_args(["consume", "--stream", "alice", "alice"]).stream == "alice"


@pytest.mark.parametrize(("command", "extra"), [("produce", SOURCE), ("consume", []), ("vmc", []), ("demo", [])])
def test_frames_with_count_as_a_hidden_alias(command: str, extra: list[str]) -> None:
    parse = build_parser().parse_args
    assert parse([command, *extra]).frames == 0
    assert parse([command, *extra, "--frames", "7"]).frames == 7
    assert parse([command, *extra, "--count", "9"]).frames == 9
    assert not hasattr(parse([command, *extra, "--count", "9"]), "count")
    text = _subparsers()[command].format_help()
    assert "--frames N" in text and "--count" not in text


@pytest.mark.parametrize(("command", "extra"), [("produce", SOURCE), ("demo", [])])
def test_speed_with_rate_scale_as_a_hidden_alias(command: str, extra: list[str]) -> None:
    parse = build_parser().parse_args
    assert parse([command, *extra]).speed == 1.0
    assert parse([command, *extra, "--speed", "2"]).speed == 2.0
    assert parse([command, *extra, "--rate-scale", "4"]).speed == 4.0
    assert "--rate-scale" not in _subparsers()[command].format_help()


def test_mirrored_is_a_flag_everywhere() -> None:
    subs = _subparsers()
    for name in ("produce", "record"):
        assert _options(subs[name])["--mirrored"].nargs == 0, name
    parse = build_parser().parse_args
    base = ["record", "--from-pose", "a.pose", "--out", "o.jsonl"]
    assert parse(base).mirrored == "report"
    assert parse([*base, "--mirrored"]).mirrored == "flip"
    assert parse(["produce", "--webcam", "--mirrored"]).mirrored is True


@pytest.mark.parametrize("command", CLIENTS)
def test_every_client_takes_tls_and_ping_options(command: str) -> None:
    extra = SOURCE if command == "produce" else []
    args = build_parser().parse_args([command, *extra, "--ca-file", "ca.pem", "--ping-interval", "7",
                                      "--ping-timeout", "9"])
    assert (args.ca_file, args.ping_interval, args.ping_timeout) == ("ca.pem", 7.0, 9.0)


@pytest.mark.parametrize("command", CLIENTS)
def test_every_client_takes_a_timeout(command: str) -> None:
    extra = SOURCE if command == "produce" else []
    assert build_parser().parse_args([command, *extra]).timeout is None  # default: wait
    assert build_parser().parse_args([command, *extra, "--timeout", "2.5"]).timeout == 2.5


def test_every_default_is_shown_and_no_help_has_markup() -> None:
    for name, p in _subparsers().items():
        formatter = p._get_formatter()
        for action in p._actions:
            if action.help in (None, argparse.SUPPRESS):
                continue
            text = formatter._expand_help(action) if action.help else ""
            assert "`" not in text and "``" not in text, (name, action.dest, text)
            flag = action.nargs == 0
            if action.option_strings and not flag and action.default not in (None, argparse.SUPPRESS):
                assert "default" in text, (name, action.option_strings, text)
                if "default" not in (action.help or ""):  # the formatter's own "(default: X)"
                    assert f"(default: {action.default})" in text
        assert "`" not in (p.description or "") and "`" not in p.format_help(), name


def test_errors_say_what_went_wrong_first_and_the_code_last() -> None:
    err = UsageError("usage.no_source", "cannot read the folder photos/: no images", path="photos/")
    assert str(err) == "cannot read the folder photos/: no images (usage.no_source)"
    err = UsageError("usage.bad_option", "the .pose file has no frame rate (0)", path="a.pose")
    assert str(err) == "the .pose file has no frame rate (0) (at a.pose) (usage.bad_option)"
    assert str(DecodeError("decode.type", "a value is not a number", path="values[3]")) == \
        "a value is not a number (at values[3]) (decode.type)"
    assert str(RelayError("decode.auth", "the auth token is missing or wrong", close_code=4401)) == \
        "the auth token is missing or wrong (close 4401) (decode.auth)"
    missing = FileNotFoundError(2, "No such file or directory", "x.jsonl")
    assert describe_error(missing) == "No such file or directory: x.jsonl"


def test_a_command_error_is_one_plain_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--recording", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o.glb")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("posewire export: ") and "[Errno" not in err and err.count("\n") == 1
    assert main(["produce", *SOURCE, "--speed", "-1"]) == 2
    assert capsys.readouterr().err == "posewire produce: --speed must be 0 or more, not -1 (usage.bad_option)\n"


def test_the_cli_reference_is_generated_from_the_parser() -> None:
    from posewire.generate import cli_reference_md

    text = cli_reference_md()
    assert text == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in _subparsers():
        assert f"\n## posewire {name}\n" in text
        assert f"usage: posewire {name}" in text
    assert "--stream NAME" in text and "(default: demo)" in text


def test_frames_limits_a_recorded_source_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --frames is one option for every source: the replay of a recording stops at N as well
    out = tmp_path / "ten.jsonl"
    assert main(["produce", *SOURCE, "--record", str(out), "--frames", "10"]) == 0
    assert capsys.readouterr().err == f"posewire produce: wrote 10 frames to {out}\n"
    assert len(out.read_text().splitlines()) == 1 + 10  # header + frames


def test_the_top_level_help_describes_the_commands() -> None:
    text = build_parser().format_help()
    assert "posewire streams a person's pose" in text
    for start in ("posewire demo ", "posewire demo --capture", "posewire produce --webcam", "posewire view ",
                  "posewire vmc "):
        assert start in text
    assert "its parser" not in text and "entry point" not in text and "`" not in text


def test_every_printed_error_carries_its_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the messages once printed without one: an empty recording, conformance's URL check
    # and unreachable relay (tests/test_waiting.py), the demo's empty recording
    empty = tmp_path / "empty.jsonl"
    header = (ROOT / "tests" / "data" / "wave.jsonl").read_text().splitlines()[0]
    empty.write_text(header + "\n")
    assert main(["produce", "--replay", str(empty)]) == 1
    assert capsys.readouterr().err == "posewire produce: the recording has no frames (usage.no_source)\n"
    assert main(["conformance", "--relay", "http://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.endswith("(usage.bad_option)\n")
    assert main(["demo", "--recording", str(empty), "--no-browser", "--port", "0", "--relay-port", "0"]) == 1
    assert capsys.readouterr().err == f"posewire demo: {empty} holds no frames (usage.no_source)\n"
