"""The relay over real loopback websockets (spec §5.3, §5.7, §5.8)."""

from __future__ import annotations

import asyncio

import msgpack
import numpy as np
import pytest
from netutil import TIMEOUT, open_raw, wait_for

from posewire.codec.calibration import REFERENCE_CALIBRATION
from posewire.codec.conditions import Affect, Conditions
from posewire.codec.errors import UsageError
from posewire.codec.protocol import CLOSE_CODES
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import (
    REGISTRY_HASH8,
    Bye,
    Calibration,
    ConditionsMessage,
    ErrorMessage,
    Frame,
    Hello,
    encode,
)
from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.relay import Mailbox, Relay, is_loopback

H_YAW = REGISTRY.index("h_yaw")

#: a token strong enough beyond loopback (spec §5.7 rule 5)
STRONG_TOKEN = "RfSx0Q7m2JkV9cWbTq4LzN8yHd3EaPu6GoYi1wKs"


def frame(seq: int, yaw: float = 0.0, *, full: bool = True) -> Frame:
    values = DEFAULTS.copy() if full else np.full(N_DIMS, np.nan)
    values[H_YAW] = yaw
    return Frame(seq, 1000 + seq, values)


# ---------------------------------------------------------------- mailbox (spec §5.7)


async def test_mailbox_latest_wins_counts_drops_and_keeps_kind_order() -> None:
    box: Mailbox[bytes] = Mailbox()
    box.put("cal", b"c1")
    box.put("f", b"f1")
    box.put("f", b"f2")
    box.put("cal", b"c2")  # replaces c1 and is now younger than f2
    assert len(box) == 2
    assert box.dropped == {"f": 1, "cal": 1}
    assert await box.get() == ("f", b"f2")
    assert await box.get() == ("cal", b"c2")
    waiter = asyncio.create_task(box.get())
    await asyncio.sleep(0)
    box.close()
    assert await waiter is None


# ---------------------------------------------------------------- handshake (spec §5.3, §5.9)


@pytest.mark.parametrize(
    ("hello", "code"),
    [
        (msgpack.packb({"t": "hello", "pv": 2, "ro": "consumer", "s": "s", "rv": "1.0.0",
                        "rh": REGISTRY_HASH8, "cn": ""}), "decode.version"),
        (Hello("consumer", "s", registry_hash=b"\0" * 8), "decode.registry"),
        (Hello("consumer", "s", registry_version="2.0.0"), "decode.registry"),
    ],
)
async def test_hello_mismatch_is_refused_with_error_then_close_code(hello: Hello | bytes,
                                                                   code: str) -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        raw = await open_raw(relay.url, "consumer", "s", hello=hello, welcome=False)
        closed = await raw.until_closed()
        assert closed.error is not None and closed.error.code == code
        assert closed.code == CLOSE_CODES[code]
        assert relay.stats.errors_by_code[code] == 1


async def test_auth_token_is_enforced() -> None:
    async with Relay("127.0.0.1", port=0, token="s3cret") as relay:
        for token in (None, "wrong"):
            raw = await open_raw(relay.url, "consumer", "s", token=token, welcome=False)
            closed = await raw.until_closed()
            assert closed.error is not None and closed.error.code == "decode.auth"
            assert closed.code == CLOSE_CODES["decode.auth"] == 4012
        ok = await open_raw(relay.url, "consumer", "s", token="s3cret")  # gets a welcome
        await ok.ws.close()


def test_non_loopback_host_needs_a_token_and_no_auth_is_refused_there() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("10.0.0.1")
    with pytest.raises(UsageError) as err:
        Relay("0.0.0.0", 0)
    assert err.value.code == "usage.bad_option"
    Relay("0.0.0.0", 0, token=STRONG_TOKEN, insecure=True)  # constructing does not bind
    # spec §5.7 rule 5: no opt-out from the token beyond loopback
    for host in ("0.0.0.0", "10.0.0.1", ""):
        with pytest.raises(UsageError) as err:
            Relay(host, 0, no_auth=True, insecure=True)
        assert err.value.code == "usage.bad_option" and err.value.path == "no_auth"
    Relay("127.0.0.1", 0, no_auth=True)  # on loopback it only ignores a token
    with pytest.raises(UsageError) as err:  # beyond loopback TLS is needed as well
        Relay("0.0.0.0", 0, token=STRONG_TOKEN)
    assert err.value.code == "usage.bad_option" and err.value.path == "tls_cert"


async def test_missing_subprotocol_is_refused() -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async with Relay("127.0.0.1", port=0) as relay:
        with pytest.raises(InvalidStatus) as err:  # spec §5.1: refused in the handshake
            await connect(relay.url, proxy=None)
        assert err.value.response.status_code == 400


# ---------------------------------------------------------------- bad data (spec §5.8)


async def test_oversized_message_is_refused_with_too_large() -> None:
    async with Relay("127.0.0.1", port=0, max_bytes=512) as relay:
        raw = await open_raw(relay.url, "producer", "s")
        await raw.ws.send(msgpack.packb({"t": "f", "pad": b"x" * 1000}))
        closed = await raw.until_closed()
        assert closed.error is not None and closed.error.code == "decode.too_large"
        assert closed.code == 4009
        # far beyond the limit (refused from its header, unread): the same error and code
        for size in (513, 512 * 64, 2**20):
            raw = await open_raw(relay.url, "producer", "s")
            await raw.ws.send(b"x" * size)
            closed = await raw.until_closed()
            assert closed.error is not None and closed.error.code == "decode.too_large"
            assert closed.code == 4009
        assert relay.stats.errors_by_code["decode.too_large"] == 4


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"\xc1\xff garbage", "decode.malformed"),
        (msgpack.packb([1, 2, 3]), "decode.type"),
        (msgpack.packb({"t": "f", "s": "one", "ts": 0, "m": b"", "v": b""}), "decode.type"),
        (msgpack.packb({"t": "nope"}), "decode.unknown_type"),
        ("a text message", "decode.type"),
    ],
)
async def test_bad_message_closes_only_that_client(payload: bytes | str, code: str) -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        good_consumer = await open_raw(relay.url, "consumer", "s")
        pub = await open_raw(relay.url, "producer", "s")
        bad_producer = await open_raw(relay.url, "producer", "s2")
        bad_consumer = await open_raw(relay.url, "consumer", "s")
        await pub.send(frame(0, 0.1))
        assert isinstance(await good_consumer.recv(), Frame)
        for bad in (bad_producer, bad_consumer):
            await bad.ws.send(payload)
            closed = await bad.until_closed()
            assert closed.error is not None and closed.error.code == code
            assert closed.error.message  # public meaning only, no internals
            assert closed.code == CLOSE_CODES[code]
        await pub.send(frame(1, 0.2))
        got = await good_consumer.recv()
        assert isinstance(got, Frame) and got.seq == 1
        assert relay.stats.errors == 2


def _canonical_with(**changes: object) -> bytes:
    obj = msgpack.unpackb(encode(frame(7, 0.5)))
    obj.update(changes)
    return msgpack.packb(obj, use_bin_type=True)


_V = msgpack.unpackb(encode(frame(7, 0.5)))["v"]
_OFFSET = sum(d.row.bits // 8 for d in REGISTRY.dimensions[:H_YAW])


@pytest.mark.parametrize(
    ("payload", "code", "path"),
    [
        # canonical layout, a forbidden code point (spec §5.4): q = −32768 on h_yaw
        (_canonical_with(v=_V[:_OFFSET] + b"\x80\x00" + _V[_OFFSET + 2:]), "decode.out_of_range", "v.h_yaw"),
        (_canonical_with(v=_V[:-1]), "decode.length", "v"),
        (_canonical_with(m=b"\xff" * 33), "decode.length", "m"),
        (_canonical_with(s=2**32), "decode.out_of_range", "s"),
        (encode(frame(7, 0.5)) + b"\x00", "decode.malformed", "$"),
    ],
)
async def test_a_frame_the_cheap_check_refuses_gets_the_decoders_code(payload: bytes, code: str,
                                                                      path: str) -> None:
    # spec §5.7 rule 2: the relay checks canonical frames from their bytes; what it
    # refuses is decoded in full, so the error keeps the decoder's code and path
    async with Relay("127.0.0.1", port=0) as relay:
        consumer = await open_raw(relay.url, "consumer", "s")
        pub = await open_raw(relay.url, "producer", "s")
        await pub.send(frame(0, 0.1))
        assert isinstance(await consumer.recv(), Frame)
        await pub.ws.send(payload)
        closed = await pub.until_closed()
        assert closed.error is not None
        assert (closed.error.code, closed.error.path) == (code, path)
        assert closed.code == CLOSE_CODES[code]
        assert relay.stats.frames_in == 1 and relay.stats.errors_by_code[code] == 1


async def test_consumer_sending_a_frame_is_a_state_violation() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        consumer = await open_raw(relay.url, "consumer", "s")
        await consumer.ws.send(encode(frame(0)))
        closed = await consumer.until_closed()
        assert closed.error is not None and closed.error.code == "decode.state"
        assert closed.code == 4013


# ---------------------------------------------------------------- fan-out (spec §5.7)


async def test_slow_consumer_drops_old_frames_and_never_slows_fast_ones() -> None:
    n_frames = 500
    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0, send_buffer=4096) as relay:
        fast = [await open_raw(relay.url, "consumer", "s") for _ in range(2)]
        # never reads, tiny receive buffer: its queue fills after a few frames
        slow = await open_raw(relay.url, "consumer", "s", rcvbuf=2048, max_queue=1)
        pub = await open_raw(relay.url, "producer", "s")
        max_pending = 0
        max_buffered = 0
        for seq in range(n_frames):
            await pub.send(frame(seq, (seq % 100) / 100))
            for consumer in fast:  # paced by the fast consumers only
                got = await consumer.recv()
                assert isinstance(got, Frame) and got.seq == seq
            info = {c.session: c for c in relay.consumers("s")}
            max_pending = max(max_pending, *(c.pending for c in info.values()))
            max_buffered = max(max_buffered, *(c.buffered_bytes for c in info.values()))
        infos = relay.consumers("s")
        dropped = sorted(c.dropped for c in infos)
        assert dropped[0] == dropped[1] == 0  # the fast ones lost nothing
        assert dropped[2] > 0  # the slow one lost old frames
        assert relay.stats.drops == dropped[2]
        assert max_pending <= 3  # one slot per kind: bounded, whatever the backlog
        assert max_buffered <= 64 * 1024
        slow.ws.transport.abort()  # it never reads: no close handshake


async def test_late_joiner_gets_calibration_conditions_and_merged_full_frame() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        pub = await open_raw(relay.url, "producer", "s")
        cal = Calibration(0.2, 0.5, 0.6, 0.4)
        cond = Conditions(affect=Affect("happy", 0.5, "add"))
        await pub.send(cal)
        await pub.send(ConditionsMessage(cond, 5))
        await pub.send(frame(0, 0.1))
        await pub.send(frame(1, 0.5, full=False))  # masked: only h_yaw
        await wait_for(lambda: relay.stats.frames_in == 2)
        late = await open_raw(relay.url, "consumer", "s")
        got = [await late.recv() for _ in range(3)]
        assert got[0] == cal
        assert isinstance(got[1], ConditionsMessage) and got[1].conditions == cond
        full = got[2]
        assert isinstance(full, Frame) and full.is_full and full.seq == 1
        assert full.values[H_YAW] == pytest.approx(0.5, abs=1e-4)
        expected = DEFAULTS.copy()
        expected[H_YAW] = 0.5
        np.testing.assert_allclose(full.values, expected, atol=1e-2)


async def test_many_streams_have_no_cross_talk() -> None:
    n_streams, n_frames = 20, 5
    async with Relay("127.0.0.1", port=0) as relay:
        consumers = {i: [await open_raw(relay.url, "consumer", f"s{i}") for _ in range(2)]
                     for i in range(n_streams)}
        producers = {i: await open_raw(relay.url, "producer", f"s{i}") for i in range(n_streams)}
        assert relay.streams == {f"s{i}": (1, 2) for i in range(n_streams)}

        async def run(i: int) -> None:
            for seq in range(n_frames):
                await producers[i].send(frame(seq, i / 100))
                for c in consumers[i]:
                    got = await c.recv()
                    assert isinstance(got, Frame) and got.seq == seq
                    assert got.values[H_YAW] == pytest.approx(i / 100, abs=1e-4)

        await asyncio.gather(*(run(i) for i in range(n_streams)))
        assert relay.stats.frames_in == n_streams * n_frames
        assert relay.stats.frames_out == 2 * n_streams * n_frames


async def test_rate_limit_drops_excess_frames() -> None:
    async with Relay("127.0.0.1", port=0, max_fps=10, burst_s=0.25) as relay:
        pub = await open_raw(relay.url, "producer", "s")
        for seq in range(20):  # a burst far above 10 fps
            await pub.send(frame(seq))
        await wait_for(lambda: relay.stats.frames_in + relay.stats.rate_limited == 20)
        assert relay.stats.frames_in <= 4
        assert relay.stats.rate_limited >= 16


async def test_rate_limit_close_mode_closes_the_producer() -> None:
    async with Relay("127.0.0.1", port=0, max_fps=10, burst_s=0.25, on_rate="close") as relay:
        pub = await open_raw(relay.url, "producer", "s")
        for seq in range(20):
            try:
                await pub.send(frame(seq))
            except Exception:
                break
        closed = await pub.until_closed()
        assert closed.error is not None and closed.error.code == "decode.rate"
        assert closed.code == 4014


async def test_graceful_shutdown_sends_bye_to_everyone() -> None:
    relay = Relay("127.0.0.1", port=0)
    await relay.start()
    consumer = await open_raw(relay.url, "consumer", "s")
    producer = await open_raw(relay.url, "producer", "s")
    await relay.close()
    for raw in (consumer, producer):
        closed = await raw.until_closed()
        assert any(isinstance(m, Bye) for m in closed.messages)
        assert closed.code == 1000
        assert not any(isinstance(m, ErrorMessage) for m in closed.messages)


async def test_status_line_counts() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        async with Publisher(relay.url, "a", calibration=REFERENCE_CALIBRATION) as pub, \
                Subscriber(relay.url, "a") as sub:
            await wait_for(lambda: relay.streams.get("a") == (1, 1))
            await pub.send_frame(DEFAULTS)
            async with asyncio.timeout(TIMEOUT):
                await sub.recv()
            line = relay.status_line()
        assert "streams=1 producers=1 consumers=1 frames_in=1 frames_out=1 drops=0" in line


async def test_second_producer_on_a_busy_stream_is_refused() -> None:
    # spec §5.7 (1): at most one producer per stream; the first keeps publishing
    async with Relay("127.0.0.1", port=0) as relay:
        first = await open_raw(relay.url, "producer", "busy")
        second = await open_raw(relay.url, "producer", "busy", welcome=False)
        closed = await second.until_closed()
        assert closed.error is not None and closed.error.code == "decode.state"
        assert closed.code == CLOSE_CODES["decode.state"]
        other = await open_raw(relay.url, "producer", "free")  # another stream is fine
        assert relay.streams == {"busy": (1, 0), "free": (1, 0)}
        await first.ws.close()
        await other.ws.close()


async def test_fan_out_and_publish_hooks_are_the_broker_hook_points() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        seen: list[tuple[str, str]] = []
        relay.publish_hooks.append(lambda stream, msg, data: seen.append((stream, msg.TYPE)))
        consumer = await open_raw(relay.url, "consumer", "s")
        # a frame from elsewhere (a broker) reaches local consumers and the late-join state
        assert relay.fan_out("s", frame(7, 0.5))
        got = await consumer.recv()
        assert isinstance(got, Frame) and got.seq == 7
        assert got.values[H_YAW] == pytest.approx(0.5, abs=1e-4)
        assert not relay.fan_out("s", Bye("x"))
        assert seen == []  # fan_out never echoes to the hooks
        producer = await open_raw(relay.url, "producer", "s")
        await producer.send(frame(8, 0.25))
        await wait_for(lambda: seen == [("s", "f")])
        got = await consumer.recv()
        assert isinstance(got, Frame) and got.seq == 8


def test_cli_refuses_no_auth_beyond_loopback_with_one_line() -> None:
    """`posewire serve --host <non-loopback> --no-auth --insecure` (spec §5.7 rule 5): refused at
    start with one clear line naming spec §5.7 rule 5, exit status 2, nothing served."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "posewire.cli", "serve", "--host", "0.0.0.0",
                           "--port", "0", "--no-auth", "--insecure"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "--no-auth is refused" in lines[0] and "§5.7 rule 5" in lines[0]


def test_cli_send_window_option_reaches_the_relay(monkeypatch: pytest.MonkeyPatch) -> None:
    """`posewire serve --send-window-s S` (spec §5.7 rule 4): the relay's window time bound;
    0 leaves only the 128-frame cap; a bound outside (0, 60] s is refused in one line."""
    import subprocess
    import sys

    from posewire.cli import command

    made: list[dict[str, object]] = []

    class StopError(Exception):
        pass

    def fake_run(coro: object) -> None:
        coro.close()  # type: ignore[attr-defined]
        raise StopError

    import posewire.relay as relay_module

    real = relay_module.Relay

    def recording_relay(*args: object, **kwargs: object) -> object:
        made.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(relay_module, "Relay", recording_relay)
    monkeypatch.setattr(command.asyncio, "run", fake_run)
    for option, expected in ((["--send-window-s", "0.5"], 0.5), (["--send-window-s", "0"], None), ([], 0.25)):
        with pytest.raises(StopError):
            command.main(["serve", "--port", "0", "--no-auth", *option])
        assert made[-1]["send_window_s"] == expected
    done = subprocess.run([sys.executable, "-m", "posewire.cli", "serve", "--port", "0", "--no-auth",
                           "--send-window-s", "100"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "send_window_s must be in (0, 60] s" in done.stderr
