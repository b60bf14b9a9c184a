"""The relay's modules one by one (posewire/relay/, spec §5.7): each concern
tested on its own, without sockets where it has no I/O. End-to-end tests of the same
concerns: tests/test_relay.py (fan-out, latest wins, send window, late join),
tests/test_relay_exposure.py (admission, origin, TLS, liveness),
tests/test_proxy_protocol.py (the connection's PROXY header), tests/test_cluster.py
(fan-out of broker input)."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.streams import StreamReader

from posewire.codec.conditions import conditions_from_obj
from posewire.codec.protocol import TokenBucket
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import Calibration, ConditionsMessage, Frame, decode, encode
from posewire.relay import Relay
from posewire.relay.admission import ACCEPT_BATCH, FD_RESERVE, AdmissionMixin
from posewire.relay.fanout import WINDOW_TAG, window_ping, window_value
from posewire.relay.origin import is_loopback, norm_origin
from posewire.relay.state import Stream
from posewire.relay.stats import LogLimiter, RelayStats

H_YAW = REGISTRY.index("h_yaw")
M_JAW = REGISTRY.index("m_jaw")


# ---------------------------------------------------------------- stats


def test_log_limiter_writes_a_burst_then_one_line_counting_the_rest(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr("posewire.relay.stats.time.monotonic", lambda: now[0])
    limiter = LogLimiter(logging.getLogger("posewire.test"), burst=3, interval=10.0)
    with caplog.at_level(logging.INFO, logger="posewire.test"):
        for i in range(50):
            limiter("refused %d", i)
        assert [r.getMessage() for r in caplog.records] == ["refused 0", "refused 1", "refused 2"]
        assert limiter.suppressed == 47
        now[0] += 10.0
        limiter("refused %d", 50)
    assert [r.getMessage() for r in caplog.records][3:] == [
        "(47 more rejections in the last 10 s not logged)", "refused 50"]


def test_relay_stats_start_at_zero_and_count_errors_by_code() -> None:
    st = RelayStats()
    assert st.refused == st.proxy_refused == st.broker_refused == 0
    st.errors_by_code["decode.rate"] += 2
    assert RelayStats().errors_by_code == {} and st.errors_by_code["decode.rate"] == 2


# ---------------------------------------------------------------- late-join state


def _frame(seq: int, values: np.ndarray, conditions: object = None) -> Frame:
    return Frame(seq, 1000 + seq, values, conditions)  # type: ignore[arg-type]


def test_stream_merges_partial_frames_into_the_full_state_a_late_joiner_gets() -> None:
    s = Stream("demo")
    assert list(s.late_join()) == []
    full = DEFAULTS.copy()
    full[H_YAW] = 0.25
    f0 = _frame(0, full)
    s.update_frame(f0, encode(f0))
    kind, (first, data) = next(iter(s.late_join()))
    assert kind == "f" and first is f0 and data == encode(f0)  # a full frame: its own bytes
    partial = np.full(N_DIMS, np.nan)
    partial[M_JAW] = 0.5
    f1 = _frame(1, partial)
    s.update_frame(f1, encode(f1))
    (_, (merged, data)), = list(s.late_join())
    assert isinstance(merged, Frame) and merged.seq == 1 and merged.is_full
    assert merged.values[H_YAW] == 0.25 and merged.values[M_JAW] == 0.5
    assert s.full_frame()[1] is data  # encoded once per state change, not per consumer
    back = decode(data)
    assert isinstance(back, Frame) and back.seq == 1
    assert abs(back.values[H_YAW] - 0.25) < 1e-3 and abs(back.values[M_JAW] - 0.5) < 0.005  # 8-bit dim


def test_late_join_order_is_calibration_conditions_frame() -> None:
    s = Stream("demo")
    cal = Calibration(0.19, 0.50, 0.56, 0.36)
    s.calibration = (cal, encode(cal))
    cond = ConditionsMessage(conditions_from_obj({"mouth": ["bite"]}), 5)
    s.set_conditions(cond, encode(cond))
    f0 = _frame(0, DEFAULTS.copy())
    s.update_frame(f0, encode(f0))
    kinds = [k for k, _ in s.late_join()]
    assert kinds == ["cal", "cond", "f"]
    assert s.empty  # state without clients


def test_a_late_joiner_gets_the_merge_of_checked_frames_decoded_only_then() -> None:
    # frames the relay checked from their bytes (framecheck) merge like decoded ones
    from posewire.relay.framecheck import check_frame

    s = Stream("demo")
    full = DEFAULTS.copy()
    full[H_YAW] = 0.25
    data0 = encode(_frame(0, full))
    raw0 = check_frame(data0)
    assert raw0 is not None
    s.update_frame(raw0, data0)
    assert s.full_frame() == (raw0, data0)  # a full frame: its own bytes, nothing decoded
    for seq in range(1, 40):  # masked frames, always the same dim: one of them is kept
        partial = np.full(N_DIMS, np.nan)
        partial[M_JAW] = seq / 100
        data = encode(_frame(seq, partial))
        raw = check_frame(data)
        assert raw is not None and not raw.is_full
        s.update_frame(raw, data)
        assert len(s._pending) <= 2
    merged, _ = s.full_frame()
    assert isinstance(merged, Frame) and merged.seq == 39 and merged.is_full
    assert merged.values[H_YAW] == pytest.approx(0.25, abs=1e-4)
    assert merged.values[M_JAW] == pytest.approx(0.39, abs=0.005)


@pytest.mark.parametrize(("rate", "window"), [(60.0, 15), (30.0, 7), (120.0, 30), (4.0, 2),
                                              (1000.0, 128)])
def test_the_send_window_is_a_quarter_second_of_frames_at_the_stream_rate(rate: float,
                                                                            window: int) -> None:
    # spec §5.7 rule 4: W ≤ 0.25 s of frames at the stream's rate (at least 2, at most
    # send_window), from the slower of the arrival and the capture clocks
    s = Stream("demo", send_window=128, window_s=0.25, max_fps=1000)
    assert s.window == 128  # before the rate is known: 0.25 s at the rate limit, capped
    for i in range(64):
        s.observe_rate(i / rate, int(i * 1e6 / rate))
    # (a clock's last microsecond may cost one frame)
    assert window - 1 <= s.window <= window
    assert s.window / rate <= 0.25 or s.window == 2
    window = s.window
    # frames that arrive in a burst (a relay short of CPU reads them late) but were
    # captured at the stream's rate: the window stays the same
    for i in range(64, 128):
        s.observe_rate(64 / rate + (i - 64) * 1e-5, int(i * 1e6 / rate))
    assert abs(s.window - window) <= 1 and (s.window / rate <= 0.25 or s.window == 2)
    assert Stream("x", send_window=128, window_s=0.25, max_fps=120).window == 30
    assert Stream("x", send_window=128, window_s=None).window == 128  # no time bound


# ---------------------------------------------------------------- fan-out / send window


def test_a_window_ping_carries_its_tag_the_frames_written_before_it_and_a_value_of_its_own() -> None:
    key = bytes(range(16))
    data = window_ping(300, key)
    reader = StreamReader()
    reader.feed_data(data)
    parser = WsFrame.parse(reader.read_exact, mask=False)
    with pytest.raises(StopIteration) as done:
        next(parser)
    frame = done.value.value
    assert frame.opcode is Opcode.PING
    assert frame.data == WINDOW_TAG + (300).to_bytes(8, "big") + window_value(key, 300)
    assert len(frame.data) == 20  # keepalive pings carry 4 bytes: the two never mix
    # spec §5.7 rule 4: the value depends on the mark and the consumer's key, so a consumer
    # cannot name a ping it did not read, nor take another consumer's
    assert len({window_value(key, m) for m in range(1000)}) == 1000
    assert window_value(bytes(16), 300) != window_value(key, 300)


def test_window_pings_spread_out_for_a_consumer_whose_pongs_come_back_at_once() -> None:
    # spec §5.7 rule 4: W/2 frames between window pings until the first pong, then up to
    # W − 2 for a consumer whose pongs come back before the next frame; W/2 again for
    # one slow to answer (its lag decays by one per pong)
    from types import SimpleNamespace

    from posewire.relay.fanout import FanOutMixin

    stream = Stream("demo", send_window=16, window_s=None)
    consumer = SimpleNamespace(mailbox=object(), acked=0, sent=8, window=asyncio.Event(), lag=0,
                               spacing=0, stream=stream)
    ws = SimpleNamespace(client=consumer)

    def ack(mark: int, sent: int) -> int:
        consumer.sent = sent
        FanOutMixin._window_ack(None, ws, mark)  # type: ignore[arg-type]
        return int(consumer.spacing)

    assert ack(8, 8) == 14  # answered before the next frame: a ping every W − 2 frames
    assert consumer.acked == 8 and consumer.window.is_set()
    assert ack(22, 25) == 8  # 3 frames written meanwhile: W − 2 − 2·3
    assert ack(30, 40) == 8  # slow: W/2 at least
    assert ack(40, 40) == 8 and ack(45, 45) == 8  # the lag decays one per pong
    assert ack(45, 50) == 8  # a mark already acknowledged changes nothing
    for mark in range(50, 60):
        last = ack(mark, mark)
    assert last == 14


# ---------------------------------------------------------------- origin


@pytest.mark.parametrize(("host", "loop"), [("127.0.0.1", True), ("::1", True),
                                            ("localhost", True), ("127.9.9.9", True),
                                            ("", False), ("0.0.0.0", False),
                                            ("10.0.0.1", False), ("relay.example", False)])
def test_loopback_hosts(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_origins_compare_without_case_or_trailing_slash() -> None:
    assert norm_origin(" HTTPS://Example.org/ ") == "https://example.org"


async def test_a_loopback_relay_accepts_its_own_origins_and_the_allow_list() -> None:
    async with Relay("127.0.0.1", 0, allow_origins=["https://App.example/"]) as relay:
        p = relay.port
        assert relay.origins == {f"http://127.0.0.1:{p}", f"http://localhost:{p}",
                                 f"http://[::1]:{p}", "https://app.example"}


# ---------------------------------------------------------------- admission


def test_the_accept_batch_stays_below_the_spare_descriptors() -> None:
    assert 0 < ACCEPT_BATCH < FD_RESERVE


async def test_rate_buckets_per_address_are_bounded_and_independent() -> None:
    relay = Relay("127.0.0.1", 0, max_connections=4)
    buckets: dict[str, TokenBucket] = {}
    assert [AdmissionMixin._take(relay, buckets, "a", 1.0, 2) for _ in range(3)] == [
        True, True, False]
    assert AdmissionMixin._take(relay, buckets, "b", 1.0, 2)  # another address: its own
    for i in range(40):  # many addresses, none connected: the table is trimmed
        AdmissionMixin._take(relay, buckets, f"h{i}", 1.0, 2)
    assert len(buckets) <= 4 * relay.max_connections


# ---------------------------------------------------------------- liveness


async def test_liveness_counts_any_bytes_from_the_peer_as_an_answer() -> None:
    from posewire.relay.liveness import LivenessMixin

    loop = asyncio.get_running_loop()

    class Probe:
        heard_at = 0.0
        loop = asyncio.get_running_loop()

    probe = Probe()
    since = loop.time()
    pong: asyncio.Future[float] = loop.create_future()
    answered = LivenessMixin._answered
    assert not await answered(probe, pong, 0.01, since)  # type: ignore[arg-type]
    probe.heard_at = loop.time() + 0.001  # the peer sent data after the ping was due
    assert await answered(probe, pong, 0.01, since)  # type: ignore[arg-type]
    pong.set_result(0.0)
    probe.heard_at = 0.0
    assert await answered(probe, pong, 0.01, since)  # type: ignore[arg-type]
