"""Sans-I/O stream state machine (spec §5.3, §5.8–5.10) and codec purity."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posewire.codec import wire
from posewire.codec.errors import ERROR_CODES, DecodeError, UsageError
from posewire.codec.protocol import (
    CLIENT_TRANSITIONS,
    CLOSE_CODES,
    SERVER_TRANSITIONS,
    Closed,
    Connection,
    Limits,
    ProtocolFailure,
    RateLimited,
    Received,
    SequenceGap,
    SequenceReorder,
    SequenceReset,
    SequenceTracker,
    State,
    TokenBucket,
    check_registry,
)
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS

CODEC = Path(__file__).resolve().parent.parent / "codec"
FORBIDDEN = {"asyncio", "websockets", "socket", "time", "threading", "selectors"}


def test_codec_never_imports_io() -> None:
    for file in sorted(CODEC.glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{file.name} imports {name}"


def pair(*, token: str | None = None, limits: Limits | None = None,
         role: str = "producer") -> tuple[Connection, Connection]:
    srv = Connection(side="server", auth_token=token, limits=limits or Limits())
    cli = Connection(side="client", role=role)  # type: ignore[arg-type]
    return srv, cli


def handshake(srv: Connection, cli: Connection, token: str | None = None) -> None:
    ev = srv.receive_data(cli.hello("demo", token=token))
    assert [type(e) for e in ev] == [Received] and srv.state is State.AWAIT_WELCOME
    assert cli.state is State.AWAIT_WELCOME
    ev = cli.receive_data(srv.accept("sess-1"))
    assert isinstance(ev[0], Received) and isinstance(ev[0].message, wire.Welcome)
    assert srv.state is cli.state is State.OPEN
    assert cli.peer_welcome is not None and cli.peer_welcome.session == "sess-1"


def frame(seq: int) -> wire.Frame:
    return wire.Frame(seq, seq * 1000, DEFAULTS.copy())


def test_happy_path_and_bye() -> None:
    srv, cli = pair(token="s3cret")
    handshake(srv, cli, token="s3cret")
    ev = srv.receive_data(cli.send(wire.Calibration(0.19, 0.5, 0.56, 0.36)))
    assert isinstance(ev[0], Received)
    ev = srv.receive_data(cli.send(frame(0)), now=0.0)
    assert isinstance(ev[0], Received) and isinstance(ev[0].message, wire.Frame)
    ev = srv.receive_data(cli.bye("done"))
    assert cli.state is State.CLOSING and srv.state is State.CLOSED
    assert ev[-1] == Closed(1000)
    cli.receive_data(wire.encode(wire.Bye()))  # the relay's bye, already CLOSED there
    assert cli.state is State.CLOSED


def test_consumer_receives_data() -> None:
    srv, cli = pair(role="consumer")
    handshake(srv, cli)
    data = srv.send(frame(3))
    ev = cli.receive_data(data)
    assert isinstance(ev[0], Received) and ev[0].message == wire.decode(data)
    with pytest.raises(UsageError) as e:  # a consumer never sends frames
        cli.send(frame(4))
    assert e.value.code == "usage.state"


def test_server_forwards_encoded_bytes_verbatim() -> None:
    srv, cli = pair(role="consumer")
    handshake(srv, cli)
    raw = wire.encode(frame(1))
    assert srv.send(frame(1), encoded=raw) is raw


def violation(conn: Connection, data: bytes, code: str, *, now: float | None = None) -> None:
    ev = conn.receive_data(data, now=now)
    failure = ev[0]
    assert isinstance(failure, ProtocolFailure), ev
    assert failure.error.code == code and failure.close_code == CLOSE_CODES[code]
    assert conn.state is State.CLOSED and ev[-1] == Closed(CLOSE_CODES[code])
    if failure.reply:
        reply = wire.decode(failure.reply)
        assert isinstance(reply, wire.ErrorMessage) and reply.code == code
    assert conn.receive_data(data) == []  # closed: nothing more


def test_frame_before_hello_is_a_state_violation() -> None:
    srv, _ = pair()
    violation(srv, wire.encode(frame(0)), "decode.state")


def test_bad_auth() -> None:
    srv, cli = pair(token="s3cret")
    violation(srv, cli.hello("demo", token="nope"), "decode.auth")
    srv, cli = pair(token="s3cret")
    violation(srv, cli.hello("demo"), "decode.auth")


def test_registry_mismatch() -> None:
    srv, _ = pair()
    hello = wire.Hello("producer", "demo", registry_hash=b"\x00" * 8)
    violation(srv, wire.encode(hello), "decode.registry")
    srv, _ = pair()
    violation(srv, wire.encode(wire.Hello("producer", "demo", registry_version="2.0.0")),
              "decode.registry")
    # a newer minor is accepted (append-only evolution), whatever its hash
    srv, _ = pair()
    ev = srv.receive_data(wire.encode(wire.Hello("producer", "demo", registry_version="1.3.0",
                                                  registry_hash=b"\x01" * 8)))
    assert isinstance(ev[0], Received)


def test_check_registry_direct() -> None:
    check_registry(REGISTRY, "1.0.0", wire.REGISTRY_HASH8)
    with pytest.raises(DecodeError):
        check_registry(REGISTRY, "0.9.0", wire.REGISTRY_HASH8)


def test_consumer_sending_frames_is_rejected() -> None:
    srv, cli = pair(role="consumer")
    handshake(srv, cli)
    violation(srv, wire.encode(frame(0)), "decode.state")


def test_malformed_and_oversize() -> None:
    srv, cli = pair()
    handshake(srv, cli)
    violation(srv, b"\xc1", "decode.malformed")
    srv, cli = pair(limits=Limits(max_message_bytes=300))
    handshake(srv, cli)
    violation(srv, b"\x00" * 301, "decode.too_large")


def test_client_rejects_bad_welcome() -> None:
    _, cli = pair()
    cli.hello("demo")
    violation(cli, wire.encode(wire.Welcome("s", registry_hash=b"\x02" * 8)), "decode.registry")


def test_error_from_peer_closes() -> None:
    srv, cli = pair()
    handshake(srv, cli)
    err = srv.fail(DecodeError("decode.rate", "too fast"))
    assert srv.state is State.CLOSED and err.close_code == 4014
    ev = cli.receive_data(err.reply)
    assert isinstance(ev[0], Received) and cli.state is State.CLOSED


def test_sequence_events() -> None:
    srv, cli = pair()
    handshake(srv, cli)
    kinds = []
    for seq in (2**32 - 2, 2**32 - 1, 0, 3, 1, 3, 10_000):
        ev = srv.receive_data(cli.send(frame(seq)))
        kinds.append([type(e).__name__ for e in ev])
    assert kinds == [["Received"], ["Received"], ["Received"],
                     ["SequenceGap", "Received"], ["SequenceReorder", "Received"],
                     ["SequenceReorder", "Received"], ["SequenceGap", "Received"]]


@given(st.lists(st.integers(0, 2**32 - 1), max_size=50))
def test_sequence_tracker_never_raises(seqs: list[int]) -> None:
    t = SequenceTracker()
    for s in seqs:
        stale, ev = t.observe(s)
        assert ev is None or isinstance(ev, SequenceGap | SequenceReorder | SequenceReset)
        assert stale == isinstance(ev, SequenceReorder)


def test_sequence_reset() -> None:
    t = SequenceTracker()
    t.observe(50_000)
    assert t.observe(0) == (False, SequenceReset(50_000, 0))
    assert t.observe(1) == (False, None)


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50))
def test_on_a_link_in_producer_order_a_frame_not_ahead_is_a_new_producer(seqs: list[int]) -> None:
    """Spec §5.10, client: never stale; a frame at or behind the newest (by any distance,
    0 included) is a reset and becomes the newest; ahead is in order or a gap as before."""
    ordered, windowed = SequenceTracker(producer_order=True), SequenceTracker()
    for s in seqs:
        last, wlast = ordered.last, windowed.last
        stale, ev = ordered.observe(s)
        wstale, wev = windowed.observe(s)
        assert not stale and ordered.last == s
        if last is None:
            assert ev is None
            continue
        ahead = (s - last) % 2**32
        if ahead == 1:
            assert ev is None
        elif 0 < ahead < 2**31:
            assert ev == SequenceGap((last + 1) % 2**32, s, ahead - 1)
        else:
            assert ev == SequenceReset(last, s)
        if wlast == last and not isinstance(wev, SequenceReorder):
            # the relay's tracker differs only inside its window
            assert (wstale, wev) == (stale, ev)
    assert ordered.reorders == 0


def test_a_client_connection_reads_a_restart_within_the_window_as_a_reset() -> None:
    """Spec §5.10: a consumer gets a restarted producer's frame 0 after s 338 (behind by
    338, well inside the relay's 1024 window) as a reset, not stale; the relay's end of a
    producer link still drops a reorder."""
    srv, cli = pair()
    handshake(srv, cli)
    relay_end, consumer = pair(role="consumer")
    handshake(relay_end, consumer)
    for seq in (337, 338):
        consumer.receive_data(relay_end.send(frame(seq)))
    events = consumer.receive_data(relay_end.send(frame(0)))
    assert events[0] == SequenceReset(338, 0)
    assert isinstance(events[1], Received) and not events[1].stale
    again = consumer.receive_data(relay_end.send(frame(0)))  # a further restart at once
    assert again[0] == SequenceReset(0, 0)
    assert consumer.sequence.resets == 2 and consumer.sequence.last == 0
    for seq in (338, 0):
        srv.receive_data(cli.send(frame(seq)), now=float(seq))
    assert srv.sequence.reorders == 1 and srv.sequence.resets == 0


def test_token_bucket_hand_computed() -> None:
    b = TokenBucket(rate=10.0, capacity=2.0)
    assert [b.take(0.0), b.take(0.0), b.take(0.0)] == [True, True, False]
    assert b.take(0.1)  # one token refilled in 0.1 s at 10/s
    assert not b.take(0.1)
    assert not b.take(0.05)  # time going backwards refills nothing
    assert b.take(10.0) and b.take(10.0) and not b.take(10.0)  # capped at capacity


def test_rate_limit_drop_and_close() -> None:
    srv, cli = pair(limits=Limits(max_fps=4, burst_s=0.5))
    handshake(srv, cli)
    out = [srv.receive_data(cli.send(frame(i)), now=0.0)[0] for i in range(3)]
    assert [type(e) for e in out] == [Received, Received, RateLimited]
    ev = srv.receive_data(cli.send(frame(3)), now=0.25)  # frame 2 was dropped: a gap
    assert [type(e) for e in ev] == [SequenceGap, Received]
    srv, cli = pair(limits=Limits(max_fps=1, burst_s=1.0, on_rate="close"))
    handshake(srv, cli)
    srv.receive_data(cli.send(frame(0)), now=0.0)
    violation(srv, cli.send(frame(1)), "decode.rate", now=0.0)


def test_send_outside_table_is_usage_error() -> None:
    srv, cli = pair()
    with pytest.raises(UsageError):
        cli.send(frame(0))  # before hello
    with pytest.raises(UsageError):
        srv.accept("x")  # before hello received
    with pytest.raises(UsageError):
        Connection(side="client")


def test_transition_tables_are_closed_over_states() -> None:
    for table in (CLIENT_TRANSITIONS, SERVER_TRANSITIONS):
        for (state, trigger), nxt in table.items():
            assert isinstance(state, State) and isinstance(nxt, State)
            kind, _, tag = trigger.partition(":")
            assert kind in ("send", "recv", "fail", "close")
            assert not tag or tag in wire.TYPE_TAGS
        assert all((s, "close") in table for s in State)
        assert not any(s is State.CLOSED for (s, t) in table if t.startswith("recv"))
    assert CLIENT_TRANSITIONS[(State.IDLE, "send:hello")] is State.AWAIT_WELCOME
    assert SERVER_TRANSITIONS[(State.AWAIT_HELLO, "recv:hello")] is State.AWAIT_WELCOME


def test_close_codes_cover_decode_errors() -> None:
    decode_codes = {c for c, e in ERROR_CODES.items() if e.family == "decode"}
    assert set(CLOSE_CODES) == decode_codes
    assert all(4000 <= v <= 4099 for v in CLOSE_CODES.values())
    assert len(set(CLOSE_CODES.values())) == len(CLOSE_CODES)
    for code, close in CLOSE_CODES.items():
        assert close == 4000 + ERROR_CODES[code].number - 2000


@given(st.binary(max_size=200))
def test_server_never_raises_on_garbage(data: bytes) -> None:
    srv, cli = pair()
    handshake(srv, cli)
    for ev in srv.receive_data(data, now=0.0):
        assert isinstance(ev, Received | ProtocolFailure | Closed | SequenceGap)


def test_frame_values_survive_the_connection() -> None:
    srv, cli = pair()
    handshake(srv, cli)
    v = DEFAULTS.copy()
    v[REGISTRY.index("h_yaw")] = np.nan
    ev = srv.receive_data(cli.send(wire.Frame(0, 0, v)))
    msg = ev[0].message  # type: ignore[union-attr]
    assert isinstance(msg, wire.Frame) and not msg.is_full
