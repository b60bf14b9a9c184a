"""What a client sends cannot buy it more than the rules give (spec §5.7 rules 4, 5, 9, 11;
RFC 6455 §5.2), over real websockets on loopback:

* tokens: a relay beyond loopback refuses a weak token at start (one line, a stable
  code), ``posewire token`` prints a strong one, and wrong tokens are answered at most 5 a
  second per address, slower after each (before: 69.5 answers/s from one address);
* origins: an ``--allow-origin`` with an internationalized host is compared in the ASCII
  (punycode) form browsers send, and the allowed origins are logged at start;
* pings that pile up: a consumer that floods pings without reading does not grow what the
  relay holds for it (before: 32 MiB of pings held ~30 MiB of pongs) and is closed;
* window pongs: only a pong of a ping the relay sent acknowledges frames, so a consumer
  that never reads gains nothing by forging them (before: 313 frames instead of ~12);
* a 64-bit frame length with its high bit set is a protocol error: close 1002.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netutil import TIMEOUT, open_raw, raw_upgrade, wait_for
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.typing import Origin, Subprotocol

from posewire.codec.errors import UsageError
from posewire.codec.protocol import Connection
from posewire.codec.wire import SUBPROTOCOL, ErrorMessage, Frame, Welcome, decode
from posewire.relay import Relay
from posewire.relay.auth import MIN_TOKEN_BITS, AuthThrottle, new_token, token_bits
from posewire.relay.origin import norm_origin

ROOT = Path(__file__).resolve().parents[1]


def frame(seq: int, value: float = 0.0) -> Frame:
    import numpy as np

    from posewire.codec.vector import N_DIMS

    values = np.full(N_DIMS, np.nan)
    values[0] = value
    return Frame(seq, seq * 16_667, values)


async def raw_consumer(port: int, stream: str) -> socket.socket:
    """A consumer on a raw socket: the WebSocket handshake, the hello, its welcome read —
    then the test decides what it sends, and it never reads again."""
    hello = Connection(side="client", role="consumer").hello(stream)
    return await raw_upgrade(port, rcvbuf=4096, hello=hello, welcome=True)


def masked(opcode: Opcode, payload: bytes) -> bytes:
    return WsFrame(opcode, payload).serialize(mask=True, extensions=[])


# ---------------------------------------------------------------- tokens (spec §5.7 rule 5)


@pytest.mark.parametrize(("token", "strong"), [
    ("t", False), ("s3cret", False), ("correcthorsebatterystaple", False),
    ("a" * 64, False),  # long, but one character
    ("0123456789abcdef" * 2, True),  # 32 hex digits: 128 bits
    ("0123456789abcde", False),  # 15 hex digits
    ("6f1c2a0e-5b7d-4c3e-9a8f-1d2e3f4a5b6c", True),  # a UUID: its 32 hex digits
    ("kzMjJ9nxwUdoSz8LMfoxxQ", True),  # 22 base64url characters
    ("kzMjJ9nxwUdoSz8LMfox", False),  # 20 of them: 120 bits
])
def test_token_strength_is_estimated_from_its_alphabet_and_length(token: str, strong: bool) -> None:
    assert (token_bits(token) >= MIN_TOKEN_BITS) is strong, token_bits(token)


def test_a_relay_beyond_loopback_refuses_a_weak_token_and_takes_a_made_one() -> None:
    for weak in ("t", "s3cret", "x" * 40):
        with pytest.raises(UsageError) as err:
            Relay("0.0.0.0", 0, token=weak, insecure=True)
        assert err.value.code == "usage.bad_option" and err.value.path == "token"
        assert "posewire token" in str(err.value)
    Relay("0.0.0.0", 0, token=new_token(), insecure=True)  # constructing does not bind
    Relay("127.0.0.1", 0, token="t")  # on loopback any token is the operator's choice
    assert all(token_bits(new_token(bits)) >= bits for bits in (128, 256) for _ in range(200))


def _posewire(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("POSEWIRE_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "posewire.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_cli_token_prints_a_fresh_token_that_serve_takes_and_serve_refuses_a_weak_one() -> None:
    first, second = _posewire("token"), _posewire("token", "--bits", "128")
    assert first.returncode == second.returncode == 0 and not first.stderr
    one, other = first.stdout.strip(), second.stdout.strip()
    assert first.stdout == one + "\n" and one != other
    assert token_bits(one) >= 256 and token_bits(other) >= 128
    weak = _posewire("serve", "--host", "0.0.0.0", "--port", "0", "--insecure", "--token", "abc")
    assert weak.returncode == 2
    lines = weak.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("posewire serve: the token is too weak")
    assert lines[0].endswith("(usage.bad_option)") and "posewire token" in lines[0]
    assert _posewire("token", "--bits", "64").returncode == 2


async def _hello(url: str, token: str, *, source: str = "127.0.0.1") -> tuple[str, float]:
    """One hello with ``token`` from ``source``: (what came back: ``welcome`` or the error
    code, seconds it took)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.setblocking(False)
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    began = time.monotonic()
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    try:
        async with connect(url, sock=sock, subprotocols=[Subprotocol(SUBPROTOCOL)], proxy=None,
                           compression=None, open_timeout=TIMEOUT) as ws:
            await ws.send(Connection(side="client", role="consumer").hello("s", token=token))
            try:
                async with asyncio.timeout(5):
                    msg = decode(await ws.recv())
            except ConnectionClosed:
                return "closed", time.monotonic() - began
            took = time.monotonic() - began
            return ("welcome" if isinstance(msg, Welcome) else
                    msg.code if isinstance(msg, ErrorMessage) else "?"), took
    except (OSError, InvalidStatus):
        return "refused", time.monotonic() - began


async def test_wrong_tokens_are_answered_at_most_5_a_second_per_address_slower_after_each() -> None:
    span = 3.0
    token = new_token()
    async with Relay("127.0.0.1", 0, token=token, hello_rate=1000, hello_burst=1000) as relay:
        answers: list[tuple[float, str]] = []
        began = time.monotonic()

        async def guesser() -> None:  # one of 16 connections at a time from one address
            while time.monotonic() - began < span:
                what, _ = await _hello(relay.url, new_token(128))
                answers.append((time.monotonic() - began, what))

        await asyncio.gather(*(guesser() for _ in range(16)))
        verdicts = [t for t, what in answers if what == "decode.auth"]
        # spec §5.7 rule 5: at most 5 answers a second, the slots doubling after each wrong
        # token (0.2, 0.4, 0.8 … s), the rest refused unchecked with decode.rate
        assert 2 <= len(verdicts) <= 5 * span, answers
        assert len(verdicts) <= 6  # the backoff: 0 + 0.2 + 0.4 + 0.8 + 1.6 ≤ 3 s
        assert sum(what == "decode.rate" for _, what in answers) > 0
        assert all(what in ("decode.auth", "decode.rate") for _, what in answers)
        # another address is not slowed: its wrong token answered, its right one welcomed
        assert (await _hello(relay.url, "wrong", source="127.0.0.2"))[0] == "decode.auth"
        what, took = await _hello(relay.url, token, source="127.0.0.3")
        assert what == "welcome" and took < 1.0
        # the slowed address: even a right token waits for its slot (a right guess is no
        # faster to learn), or is refused unchecked while the wait would be too long
        assert (await _hello(relay.url, token))[0] in ("welcome", "decode.rate")
        assert relay.stats.auth_delayed > 0


def test_the_auth_throttle_remembers_a_bounded_number_of_addresses() -> None:
    throttle = AuthThrottle(max_addresses=16)
    now = 100.0
    for i in range(1000):
        throttle.failed(f"10.0.{i // 256}.{i % 256}", now)
    assert len(throttle) <= 16
    # the addresses beyond the table share one entry: still slowed, all together
    assert throttle.slot("10.9.9.9", now) not in (0.0,)
    assert throttle.slot("10.0.0.1", now + 1000) == 0.0  # long after: forgotten
    # IPv6: one /64 is one address (a host is given a /64)
    v6 = AuthThrottle()
    v6.failed("2001:db8::1", now)
    assert v6.slot("2001:db8::ffff:1", now) == pytest.approx(0.2)
    assert v6.slot("2001:db8:0:1::1", now) == 0.0
    assert AuthThrottle.key("::ffff:10.0.0.1") == "10.0.0.1"


# ---------------------------------------------------------------- origins (spec §5.7 rule 9)


async def test_an_internationalized_origin_is_compared_in_the_ascii_form_browsers_send() -> None:
    assert norm_origin("https://bücher.example") == "https://xn--bcher-kva.example"
    assert norm_origin("HTTPS://BÜCHER.example:443/") == "https://xn--bcher-kva.example"
    assert norm_origin("http://faß.de:8080") == "http://xn--fa-hia.de:8080"  # as browsers: not fass
    async with Relay("127.0.0.1", 0, allow_origins=["https://bücher.example"]) as relay:
        assert "https://xn--bcher-kva.example" in relay.origins
        for origin in ("https://xn--bcher-kva.example", "https://XN--BCHER-KVA.example",
                       "https://xn--bcher-kva.example:443"):
            ws = await connect(relay.url, origin=Origin(origin), proxy=None,
                               subprotocols=[Subprotocol(SUBPROTOCOL)])
            await ws.close()
        for origin in ("https://bucher.example", "https://xn--bcher-kva.example.evil",
                       "http://xn--bcher-kva.example"):
            with pytest.raises(InvalidStatus) as err:
                await connect(relay.url, origin=Origin(origin), proxy=None,
                              subprotocols=[Subprotocol(SUBPROTOCOL)])
            assert err.value.response.status_code == 403
        assert relay.stats.origin_refused == 3


async def test_serve_says_at_start_which_origins_are_allowed() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("POSEWIRE_TOKEN", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "posewire.cli", "serve", "--port", "0", "--status-every", "0",
        "--allow-origin", "https://bücher.example", "--allow-origin", "viewer.example",
        cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(30):
            while not any(line.startswith("browser origins allowed:") for line in lines):
                lines.append((await proc.stderr.readline()).decode().rstrip("\n"))
    finally:
        proc.terminate()
        await proc.wait()
    line = next(line for line in lines if line.startswith("browser origins allowed:"))
    assert "https://xn--bcher-kva.example (given as https://bücher.example)" in line
    assert "http://127.0.0.1:" in line and "http://localhost:" in line
    assert any("'viewer.example' is not an origin" in line for line in lines)


# ---------------------------------------------------------------- pings that pile up (§5.7 rule 4)


async def _flood(sock: socket.socket, data: bytes, *, total: int, span: float) -> tuple[int, bool]:
    """Send ``data`` repeatedly, never reading, up to ``total`` bytes or ``span`` seconds:
    (bytes sent, whether the relay closed the connection)."""
    sent = 0
    began = time.monotonic()
    view = memoryview(data)
    at = 0
    while sent < total and time.monotonic() - began < span:
        try:
            n = sock.send(view[at:])
        except BlockingIOError:
            await asyncio.sleep(0.005)
            continue
        except OSError:
            return sent, True  # reset by the relay
        sent += n
        at = (at + n) % len(data)
        if n == 0:
            await asyncio.sleep(0.005)
    return sent, False


async def test_a_consumer_that_floods_pings_without_reading_holds_little_and_is_closed() -> None:
    interval, timeout = 0.5, 0.5
    async with Relay("127.0.0.1", 0, ping_interval=interval, ping_timeout=timeout) as relay:
        sock = await raw_consumer(relay.port, "s")
        await wait_for(lambda: relay.streams.get("s") == (0, 1))
        (client,) = relay._streams["s"].consumers
        held = [0]

        async def watch() -> None:
            while True:
                held[0] = max(held[0], client.transport.get_write_buffer_size())
                await asyncio.sleep(0.002)

        watcher = asyncio.create_task(watch())
        pings = b"".join(masked(Opcode.PING, os.urandom(125)) for _ in range(256))
        try:
            sent, reset = await _flood(sock, pings, total=32 << 20, span=8.0)
            # spec §5.7 rule 4: the pongs count against what the relay holds for it —
            # reading pauses while its writes are backed up (the write high-water mark
            # plus the replies to one read)
            assert held[0] <= 1 << 20, held[0]
            # and, heard from no more, it is closed by liveness (rule 11)
            await wait_for(lambda: relay.streams.get("s") is None, timeout=2 * interval + timeout + 3)
            assert relay.connections == 0
        finally:
            watcher.cancel()
            sock.close()
        assert held[0] <= 1 << 20 and sent > 0, (sent, reset)


async def test_a_forged_window_pong_gains_a_consumer_that_does_not_read_nothing() -> None:
    # spec §5.7 rule 4: a window pong acknowledges frames only when it carries the value of
    # a ping the relay sent; forged ones (every mark, the old 12-byte form, random values)
    # reopen nothing and answer no probe (rule 11), so the consumer is closed as an honest
    # non-reader is
    interval, timeout = 1.5, 1.0
    async with Relay("127.0.0.1", 0, ping_interval=interval, ping_timeout=timeout,
                     close_timeout=0.5) as relay:
        pub = await open_raw(relay.url, "producer", "s")
        stop = asyncio.Event()

        async def produce() -> None:
            seq = 0
            while not stop.is_set():
                await pub.send(frame(seq, (seq % 100) / 100))
                seq += 1
                await asyncio.sleep(1 / 60)

        producing = asyncio.create_task(produce())
        try:
            await wait_for(lambda: relay.stats.frames_in >= 40)  # the window: ~15 frames
            sock = await raw_consumer(relay.port, "s")
            await wait_for(lambda: relay.streams.get("s") == (1, 1))
            (client,) = relay._streams["s"].consumers
            stream = relay._streams["s"]
            window = stream.window  # follows the measured rate: the largest it was counts
            delivered = [0]
            began = time.monotonic()
            closed_after: float | None = None
            mark = 0
            while time.monotonic() - began < 6.0:
                delivered[0] = max(delivered[0], client.sent)
                window = max(window, stream.window)
                if relay.streams.get("s") != (1, 1):
                    closed_after = time.monotonic() - began
                    break
                forged = b"".join(
                    masked(Opcode.PONG, b"pwW1" + m.to_bytes(8, "big") + os.urandom(8))
                    + masked(Opcode.PONG, b"pwW1" + m.to_bytes(8, "big"))
                    for m in range(max(1, mark - 4), client.sent + 1))
                mark = client.sent
                with contextlib.suppress(BlockingIOError, OSError):
                    sock.send(forged)
                await asyncio.sleep(0.02)
            sock.close()
            # nothing gained: at most the window (~0.25 s of frames) and the start frame
            assert delivered[0] <= window + 2, (delivered[0], window)
            assert relay.stats.window_forged > 0
            # and closed like an honest non-reader: a timeout after its first window ping
            # (its keepalive check comes within two intervals; then the close timeout)
            assert closed_after is not None and closed_after < 2 * interval + 0.5 + 1.0
        finally:
            stop.set()
            await producing


async def test_a_64_bit_length_with_its_high_bit_set_closes_with_1002() -> None:
    async with Relay("127.0.0.1", 0) as relay:
        client = await open_raw(relay.url, "producer", "s")
        # FIN + binary, masked, 127: a 64-bit length follows — with its high bit set
        client.ws.transport.write(b"\x82\xff" + (2**63 + 5).to_bytes(8, "big") + os.urandom(4))
        closed = await client.until_closed()
        assert closed.code == 1002
        assert closed.error is None  # a protocol error, not decode.too_large
        # an ordinary oversized length is still decode.too_large (spec §5.8)
        other = await open_raw(relay.url, "producer", "t")
        other.ws.transport.write(b"\x82\xff" + (2**40).to_bytes(8, "big") + os.urandom(4))
        closed = await other.until_closed()
        assert closed.code == 4009 and closed.error is not None
        assert closed.error.code == "decode.too_large"
