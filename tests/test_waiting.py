"""Clients say what they wait for: where they connect, why they wait, --timeout;
``conformance --relay`` against a relay that is down; the demo's relay port."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netutil import wait_for

from posewire.codec.errors import UsageError
from posewire.relay import Relay
from posewire.servers.demo import run_demo

ROOT = Path(__file__).resolve().parents[1]
WAVE = ROOT / "tests" / "data" / "wave.jsonl"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening: every connect is refused, and no other
    program can take it meanwhile."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def _timed_lines(args: list[str]) -> tuple[list[tuple[float, str]], int, str, float]:
    """Run ``posewire ARGS``; each stderr line with its seconds since the start, the exit
    status, stdout and the total seconds."""
    env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_TOKEN"}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "posewire", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None and proc.stdout is not None
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stderr]
    out = proc.stdout.read()
    status = proc.wait(timeout=30)
    return lines, status, out, time.monotonic() - started


# no --stream: every client's default stream is the demo's (posewire.cli.conventions)
@pytest.mark.parametrize("command", [["consume"], ["produce", "--replay", str(WAVE)], ["vmc"]],
                         ids=["consume", "produce", "vmc"])
def test_a_client_at_a_closed_port_says_why_it_waits_and_gives_up(command: list[str], closed_port: int) -> None:
    url = f"ws://127.0.0.1:{closed_port}"
    lines, status, out, total = _timed_lines([*command, "--url", url, "--timeout", "1.5"])
    name = command[0]
    texts = [text for _, text in lines]
    assert texts[0] == f"posewire {name}: connecting to {url}, stream 'demo'"
    assert texts[1].startswith(f"posewire {name}: relay {url} refused, retrying in ")
    assert texts[1].endswith(" s")
    # the same reason is not repeated within 5 s
    assert texts[2:] == [f"posewire {name}: gave up after 1.5 s: relay {url} refused"]
    assert (status, out) == (1, "")
    # the lines come before the deadline ends the run, not only at exit (loose bounds: wall
    # time on a loaded machine is not a test's to pin; the figures of about 0.4-0.6 s to the
    # first line on an idle machine are in the notes)
    assert lines[1][0] < lines[2][0] and lines[0][0] < total
    assert total < 30.0


async def test_consume_says_the_stream_has_no_producer_and_gives_up() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        url = relay.url
        env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_TOKEN"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "posewire", "consume", "--stream", "demo", "--url", url, "--timeout", "1.5",
            cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(30):
            out, err = await proc.communicate()
    assert proc.returncode == 1 and out == b""
    assert err.decode().splitlines() == [
        f"posewire consume: connecting to {url}, stream 'demo'",
        f"posewire consume: connected to {url}",
        "posewire consume: no producer on stream 'demo' yet",
        "posewire consume: gave up after 1.5 s: no producer on stream 'demo' yet",
    ]


async def test_consume_with_a_producer_does_not_time_out() -> None:
    from posewire.producers.publisher import Publisher

    async with Relay("127.0.0.1", port=0) as relay, Publisher(relay.url, "p") as pub:
        url = relay.url
        await pub.send_frame({"h_yaw": 0.25}, timestamp_us=42)
        await wait_for(lambda: relay.stats.frames_in >= 1)
        env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_TOKEN"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "posewire", "consume", "--stream", "p", "--url", url, "--frames", "1",
            "--timeout", "5", cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(30):
            out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert out.decode() == "seq=0 t_us=42 h_yaw=0.2500\n"
    assert err.decode().splitlines() == [f"posewire consume: connecting to {url}, stream 'p'",
                                         f"posewire consume: connected to {url}"]


def test_conformance_against_a_relay_that_is_down_is_one_line(closed_port: int) -> None:
    url = f"ws://127.0.0.1:{closed_port}"
    lines, status, out, _ = _timed_lines(["conformance", "--relay", url])
    assert [text for _, text in lines] == [f"posewire conformance: cannot connect: relay {url} refused (link)"]
    assert (status, out) == (2, "")


async def test_the_demo_relay_listens_on_relay_port_and_says_where(closed_port: int) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    lines: list[str] = []
    summary = await run_demo(WAVE, frames=5, speed=0, port=0, relay_port=port, out=lines.append)
    assert summary.frames_sent == 5
    assert (f"relay: ws://127.0.0.1:{port} (stream 'demo': posewire consume --stream demo "
            f"--url ws://127.0.0.1:{port})") in lines
    # a port in use is said plainly, with the way out
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with pytest.raises(UsageError, match=rf"cannot start the relay on 127.0.0.1:{taken} .*--relay-port 0"):
            await run_demo(WAVE, frames=5, speed=0, port=0, relay_port=taken, out=lines.append)


@pytest.mark.parametrize("command", [["consume"], ["vmc"], ["view", "--no-browser", "--port", "0"]],
                         ids=["consume", "vmc", "view"])
def test_an_unknown_host_is_reported_once_and_not_retried(command: list[str]) -> None:
    # a name that does not exist (RFC 2606: .invalid never resolves) will not start to: the
    # client says so once, with its code, and gives up (no --timeout needed)
    url = "ws://posewire-no-such-host.invalid:8765"
    lines, status, _, total = _timed_lines([*command, "--url", url])
    name = command[0]
    texts = [text for _, text in lines]
    assert texts[0] == f"posewire {name}: connecting to {url}, stream 'demo'"
    assert len(texts) == 2, texts
    assert texts[1].startswith(f"posewire {name}: relay {url} unknown host (") and texts[1].endswith(" (dns)")
    assert status == 1 and total < 30.0


def test_the_resolver_s_answer_decides_dns_from_link() -> None:
    from posewire.transport import RelayError

    assert RelayError("dns", "relay ws://x:1 unknown host (Name or service not known)").fatal
    assert not RelayError("link", "relay ws://x:1 unknown host (Temporary failure in name resolution)").fatal


def test_view_gives_up_after_its_timeout(closed_port: int) -> None:
    url = f"ws://127.0.0.1:{closed_port}"
    lines, status, out, total = _timed_lines(["view", "--url", url, "--timeout", "1.5", "--no-browser", "--port", "0"])
    texts = [text for _, text in lines]
    assert texts[0] == f"posewire view: connecting to {url}, stream 'demo'"
    assert texts[-1] == f"posewire view: gave up after 1.5 s: relay {url} refused"
    assert (status, out) == (1, "")  # the page is not served
    assert total < 30.0
