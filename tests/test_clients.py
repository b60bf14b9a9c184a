"""Publisher, Subscriber, recordings and the serve/produce/consume CLI (spec §5)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from netutil import TIMEOUT, open_raw, padded_frame, wait_for
from websockets.asyncio.server import ServerConnection, serve
from websockets.typing import Subprotocol

from posewire.cli.command import _consume, build_parser
from posewire.codec.calibration import REFERENCE_CALIBRATION
from posewire.codec.conditions import Affect, Conditions, conditions_to_obj
from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import CLOSE_CODES, Connection, Limits, ProtocolFailure
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import SUBPROTOCOL, Bye, ErrorMessage, Frame, encode
from posewire.consumers.subscriber import SubscribedFrame, Subscriber
from posewire.producers.publisher import Publisher, frame_values
from posewire.producers.recording import RecordedFrame, read_recording, write_recording
from posewire.relay import Relay
from posewire.transport import Backoff, RelayError

ROOT = Path(__file__).resolve().parents[1]
WAVE = ROOT / "tests" / "data" / "wave.jsonl"
H_YAW = REGISTRY.index("h_yaw")
A_Y_R = REGISTRY.index("a_y_r")


async def next_frame(sub: Subscriber) -> SubscribedFrame:
    async with asyncio.timeout(TIMEOUT):
        frame = await sub.recv()
    assert frame is not None
    return frame


# ---------------------------------------------------------------- values and masks


def test_frame_values_from_dict_vector_and_mask() -> None:
    vec = frame_values({"h_yaw": 0.25})
    assert vec[H_YAW] == 0.25 and int(np.isnan(vec).sum()) == N_DIMS - 1
    vec = frame_values(DEFAULTS, mask=["h_yaw", "a_y_r"])
    assert set(np.flatnonzero(~np.isnan(vec))) == {H_YAW, A_Y_R}
    with pytest.raises(UsageError):
        frame_values({"nope": 1.0})
    with pytest.raises(UsageError):
        frame_values(np.zeros(3))


def test_backoff_grows_exponentially_to_the_cap() -> None:
    b = Backoff(initial=0.1, maximum=1.0, jitter=0.0)
    assert [round(b.next_delay(), 3) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    b.reset()
    assert b.next_delay() == pytest.approx(0.1)


# ---------------------------------------------------------------- publisher → subscriber


async def test_publish_subscribe_masked_frames_conditions_and_merge() -> None:
    cond = Conditions(affect=Affect("happy", 0.5, "blend"))
    async with Relay("127.0.0.1", port=0) as relay, \
            Publisher(relay.url, "a", calibration=REFERENCE_CALIBRATION) as pub, \
            Subscriber(relay.url, "a") as plain, Subscriber(relay.url, "a", merge=True) as merged:
        await wait_for(lambda: relay.streams.get("a") == (1, 2))
        assert await pub.send_frame(DEFAULTS, conditions=cond, timestamp_us=7) == 0
        for sub in (plain, merged):
            first = await next_frame(sub)
            assert (first.seq, first.timestamp_us) == (0, 7) and bool(first.mask.all())
            assert first.conditions == cond and first.calibration is not None
            assert first.calibration.arm_length == pytest.approx(0.56)
        assert await pub.send_frame({"h_yaw": -0.5}) == 1
        for sub in (plain, merged):
            second = await next_frame(sub)
            assert second.seq == 1 and int(second.mask.sum()) == 1
            assert second.values[H_YAW] == pytest.approx(-0.5, abs=1e-4)
            assert second.conditions == cond  # the state persists between frames
        assert np.isnan(second.values).sum() == 0  # merged: the full latest state
        np.testing.assert_allclose(second.values[A_Y_R], DEFAULTS[A_Y_R], atol=1e-4)


async def test_conditions_ride_only_when_they_change_and_late_joiners_get_them() -> None:
    # spec §5.5: a steady condition state is sent once; a change is sent; a
    # subscriber joining later gets the current state at once
    lost = Conditions(tracking={"hand_l": "lost"})
    async with Relay("127.0.0.1", port=0) as relay, Publisher(relay.url, "a") as pub, \
            Subscriber(relay.url, "a") as sub:
        await wait_for(lambda: relay.streams.get("a") == (1, 1))
        sizes = []
        for k, cond in enumerate((lost, lost, lost, Conditions(), Conditions())):
            await pub.send_frame(DEFAULTS, conditions=cond, timestamp_us=k)
            frame = await next_frame(sub)
            assert frame.conditions == cond  # the state each frame stands for
            sizes.append(frame.wire_bytes)
        # as it came over the wire: the state rides on frames 0 and 3 only
        assert sizes[1] == sizes[2] == sizes[4] < sizes[0] and sizes[3] > sizes[4]
        async with Subscriber(relay.url, "a") as late:
            frame = await next_frame(late)
            assert frame.conditions == Conditions() and frame.seq == 4
        await pub.send_frame(DEFAULTS, conditions=lost)
        assert (await next_frame(sub)).conditions == lost


def test_frames_carry_conditions_only_on_change() -> None:
    # the bytes: frames 2 and 3 of a steady state are the size of a frame without c
    from posewire.codec.wire import Frame, encode

    sent: list[bytes] = []

    class Recorder(Publisher):
        async def _send(self, message: object) -> None:
            sent.append(encode(message))  # type: ignore[arg-type]

    async def run() -> None:
        pub = Recorder("ws://127.0.0.1:1", "a")
        lost = Conditions(tracking={"hand_l": "lost"})
        for cond in (lost, lost, None, Conditions()):
            await pub.send_frame(DEFAULTS, conditions=cond, timestamp_us=0)

    asyncio.run(run())
    bare = [encode(Frame(seq, 0, DEFAULTS.copy(), None)) for seq in range(4)]
    assert len(sent[0]) > len(bare[0]) + 10  # the first state is sent
    assert sent[1] == bare[1] and sent[2] == bare[2]  # unchanged (and None): no c at all
    assert len(sent[3]) > len(bare[3])  # back to all tracked: the reset is sent


async def test_late_subscriber_gets_calibration_and_latest_full_frame_at_once() -> None:
    async with Relay("127.0.0.1", port=0) as relay, \
            Publisher(relay.url, "a", calibration=REFERENCE_CALIBRATION) as pub:
        await pub.send_frame(DEFAULTS)
        await pub.send_frame({"h_yaw": 0.3})
        await wait_for(lambda: relay.stats.frames_in == 2)
        async with Subscriber(relay.url, "a") as sub:
            frame = await next_frame(sub)
            assert frame.seq == 1 and bool(frame.mask.all())
            assert frame.values[H_YAW] == pytest.approx(0.3, abs=1e-4)
            assert sub.calibration is not None
            assert sub.calibration.hand_length == pytest.approx(0.19)


async def test_wrong_token_is_fatal_for_both_clients() -> None:
    async with Relay("127.0.0.1", port=0, token="s3cret") as relay:
        with pytest.raises(RelayError) as err:
            await Publisher(relay.url, "a", token="bad").connect()
        assert err.value.code == "decode.auth" and err.value.fatal
        with pytest.raises(RelayError) as err:
            await Subscriber(relay.url, "a").connect()
        assert err.value.code == "decode.auth"
        async with Publisher(relay.url, "a", token="s3cret") as pub:
            assert pub.connected


async def test_unreachable_relay_gives_up_after_max_retries() -> None:
    relay = Relay("127.0.0.1", port=0)
    await relay.start()
    url = relay.url
    await relay.close()
    pub = Publisher(url, "a", backoff_initial=0.01, max_retries=2)
    with pytest.raises(RelayError) as err:
        await pub.connect()
    assert err.value.code == "link" and not err.value.fatal


async def test_producer_reconnects_after_relay_restart_and_seq_continues() -> None:
    first = Relay("127.0.0.1", port=0)
    await first.start()
    port = first.port
    pub = Publisher(first.url, "a", calibration=REFERENCE_CALIBRATION, backoff_initial=0.01)
    sub = Subscriber(first.url, "a", backoff_initial=0.01)
    await pub.connect()
    await sub.connect()
    await wait_for(lambda: first.streams.get("a") == (1, 1))
    for i in range(3):
        await pub.send_frame({"h_yaw": i / 10})
        assert (await next_frame(sub)).seq == i
    await first.close()  # both clients get a bye
    second = Relay("127.0.0.1", port=port)
    await second.start()
    try:
        recv = asyncio.create_task(next_frame(sub))  # the subscriber reconnects by itself
        await wait_for(lambda: second.streams.get("a", (0, 0))[1] == 1)
        await wait_for(lambda: pub.connected)  # it reconnects in the background
        assert await pub.send_frame({"h_yaw": 0.5}) == 3
        frame = await recv
        assert frame.seq == 3 and frame.values[H_YAW] == pytest.approx(0.5, abs=1e-4)
        assert pub.reconnects == 1 and sub.reconnects == 1
        assert sub.calibration is not None  # resent after the reconnect
        assert await pub.send_frame({"h_yaw": 0.6}) == 4
        assert (await next_frame(sub)).seq == 4
    finally:
        await pub.close()
        await sub.close()
        await second.close()


async def test_subscriber_iteration_ends_on_close() -> None:
    async with Relay("127.0.0.1", port=0) as relay, Publisher(relay.url, "a") as pub:
        sub = Subscriber(relay.url, "a")
        await sub.connect()
        await pub.send_frame({"h_yaw": 0.1})
        seen = []

        async def consume() -> None:
            async for frame in sub:
                seen.append(frame.seq)
                await sub.close()

        async with asyncio.timeout(TIMEOUT):
            await consume()
        assert seen == [0]


# ---------------------------------------------------------------- recordings


def test_recording_round_trip(tmp_path: Path) -> None:
    cond = Conditions(tracking={"hand_l": "lost"})
    frames = [RecordedFrame(i * 1000, {"h_yaw": i / 10, "a_y_r": -0.5}, cond if i else None)
              for i in range(4)]
    path = tmp_path / "r.jsonl"
    assert write_recording(path, frames, calibration=REFERENCE_CALIBRATION) == 4
    header, again = read_recording(path)
    assert header.calibration == REFERENCE_CALIBRATION and header.registry_hash == REGISTRY.hash
    # spec §5.5: frame 0 sent no state, so it has the initial (empty) one
    assert again == [RecordedFrame(0, frames[0].values, Conditions()), *frames[1:]]
    assert again[2].vector()[H_YAW] == pytest.approx(0.2)


LOST_ARM = Conditions(tracking={"arm_l": "lost"})
LOST_HAND = Conditions(tracking={"hand_r": "lost", "face": "not_estimated"})


def test_recording_keeps_an_empty_state_after_lost_parts(tmp_path: Path) -> None:
    # spec §5.5: an all-tracked frame after lost parts is written as {} and read back as
    # the empty state; a line without conditions keeps the previous state
    path = tmp_path / "r.jsonl"
    write_recording(path, [RecordedFrame(0, {"h_yaw": 0.1}, LOST_ARM),
                           RecordedFrame(1000, {"h_yaw": 0.2}, Conditions()),
                           RecordedFrame(2000, {"h_yaw": 0.3}, LOST_HAND),
                           RecordedFrame(3000, {"h_yaw": 0.4}, None)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["version"] == 2
    assert [ln.get("conditions", "absent") for ln in lines[1:]] == [
        {"tracking": {"arm_l": "lost"}}, {}, {"tracking": {"hand_r": "lost", "face": "not_estimated"}}, "absent"]
    _, again = read_recording(path)
    assert [f.conditions for f in again] == [LOST_ARM, Conditions(), LOST_HAND, LOST_HAND]


def test_version_1_recordings_read_a_missing_state_as_empty(tmp_path: Path) -> None:
    # version 1 writers left an empty state out (and never meant "unchanged")
    head = {"format": "posewire-recording", "version": 1, "registry": "1.0.0", "registry_hash": "",
            "calibration": None}
    rows = [{"t_us": 0, "values": {}, "conditions": {"tracking": {"arm_l": "lost"}}},
            {"t_us": 1000, "values": {}},
            {"t_us": 2000, "values": {}, "conditions": {"tracking": {"hand_r": "lost"}}},
            {"t_us": 3000, "values": {}, "conditions": None}]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in [head, *rows]))
    header, frames = read_recording(path)
    assert header.version == 1
    assert [f.conditions for f in frames] == [LOST_ARM, Conditions(), Conditions(tracking={"hand_r": "lost"}),
                                              Conditions()]
    assert [f.conditions.tracking_state("arm_l") for f in frames if f.conditions] == [
        "lost", "tracked", "tracked", "tracked"]


def test_recording_rejects_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"format": "other"}\n')
    with pytest.raises(UsageError):
        read_recording(path)


def test_wave_recording_is_plausible() -> None:
    header, frames = read_recording(WAVE)
    assert len(frames) == 120 and header.calibration == REFERENCE_CALIBRATION
    yaw = np.array([f.values["h_yaw"] for f in frames])
    assert yaw.max() == pytest.approx(0.2, abs=1e-3) and yaw.min() == pytest.approx(-0.2, abs=1e-3)
    assert all(len(f.values) == N_DIMS for f in frames)
    assert np.diff([f.t_us for f in frames]).min() > 0


# ---------------------------------------------------------------- CLI end to end


async def _posewire(*args: str) -> asyncio.subprocess.Process:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("POSEWIRE_TOKEN", None)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "posewire.cli", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_cli_produce_replay_to_consume_count() -> None:
    async with Relay("127.0.0.1", port=0, token="tok") as relay:
        consume = await _posewire("consume", "wave", "--url", relay.url, "--token", "tok",
                                  "--count", "10", "--json")
        await wait_for(lambda: relay.streams.get("wave", (0, 0))[1] == 1, timeout=10)
        produce = await _posewire("produce", "--replay", str(WAVE), "--url", relay.url,
                                  "--stream", "wave", "--token", "tok", "--rate-scale", "8",
                                  "--keep-timestamps")
        async with asyncio.timeout(15):
            out, err = await consume.communicate()
            _, prod_err = await produce.communicate()
    assert consume.returncode == 0, err.decode()
    assert produce.returncode == 0, prod_err.decode()
    assert "sent 120 frames" in prod_err.decode()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    seqs = [o["seq"] for o in lines]
    # latest wins up to the application: each line is the newest state, so a frame the
    # printer did not get to in time is merged into the next line, never queued
    assert len(lines) == 10 and seqs == sorted(set(seqs)) and seqs[-1] >= 9
    _, wave = read_recording(WAVE)
    for obj in lines:
        src = wave[obj["seq"]]
        assert obj["t_us"] == src.t_us
        assert obj["values"]["h_yaw"] == pytest.approx(src.values["h_yaw"], abs=1e-4)
        assert obj["conditions"]["affect"]["label"] == "happy"


@pytest.mark.parametrize("version", [1, 2])
async def test_replay_lost_tracked_lost_sends_each_frames_state(version: int, tmp_path: Path) -> None:
    # the issue-20 bug: an all-tracked frame between frames with lost parts was replayed
    # with the previous frame's lost parts (spec §5.5: absent = unchanged)
    path = tmp_path / "rec.jsonl"
    states = [LOST_ARM, Conditions(), LOST_HAND, Conditions(), LOST_ARM]
    if version == 2:
        write_recording(path, [RecordedFrame(i * 50_000, {"h_yaw": i / 10}, c) for i, c in enumerate(states)])
    else:  # as a version-1 writer wrote it: an empty state left out
        head = {"format": "posewire-recording", "version": 1, "registry": REGISTRY.version,
                "registry_hash": REGISTRY.hash, "calibration": None}
        rows = [{"t_us": i * 50_000, "values": {"h_yaw": i / 10}}
                | ({} if c.empty else {"conditions": conditions_to_obj(c)}) for i, c in enumerate(states)]
        path.write_text("".join(json.dumps(o) + "\n" for o in [head, *rows]))
    got: list[SubscribedFrame] = []
    async with Relay("127.0.0.1", port=0) as relay, Subscriber(relay.url, "r") as sub:
        await wait_for(lambda: relay.streams.get("r", (0, 0))[1] == 1)
        produce = await _posewire("produce", "--replay", str(path), "--url", relay.url, "--stream", "r",
                                  "--keep-timestamps")
        async with asyncio.timeout(15):
            while len(got) < len(states):
                got.append(await _recv(sub))
            _, err = await produce.communicate()
    assert produce.returncode == 0, err.decode()
    assert [f.timestamp_us for f in got] == [0, 50_000, 100_000, 150_000, 200_000]
    parts = ("arm_l", "hand_r", "face")
    seen = [tuple(f.conditions.tracking_state(p) if f.conditions else "tracked" for p in parts) for f in got]
    assert seen == [("lost", "tracked", "tracked"), ("tracked", "tracked", "tracked"),
                    ("tracked", "lost", "not_estimated"), ("tracked", "tracked", "tracked"),
                    ("lost", "tracked", "tracked")]


async def _recv(sub: Subscriber) -> SubscribedFrame:
    frame = await sub.recv()
    assert frame is not None
    return frame


async def test_consume_record_writes_a_replayable_recording(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    _, wave = read_recording(WAVE)
    async with Relay("127.0.0.1", port=0) as relay, \
            Publisher(relay.url, "w", calibration=REFERENCE_CALIBRATION) as pub:
        args = build_parser().parse_args(["consume", "w", "--url", relay.url, "--count", "5",
                                          "--record", str(record)])
        consume = asyncio.create_task(_consume(args))
        await wait_for(lambda: relay.streams.get("w", (0, 0))[1] == 1)
        for src in wave[:5]:
            await pub.send_frame(src.vector(), conditions=src.conditions, timestamp_us=src.t_us)
            await wait_for(lambda: relay.stats.frames_out >= pub.frames_sent)
        async with asyncio.timeout(TIMEOUT):
            assert await consume == 0
    header, rec = read_recording(record)
    assert len(rec) == 5 and header.calibration == REFERENCE_CALIBRATION
    for got, src in zip(rec, wave, strict=False):
        assert got.t_us == src.t_us and got.conditions == src.conditions
        assert got.values["w_qz_r"] == pytest.approx(src.values["w_qz_r"], abs=1e-4)


async def test_cli_serve_shuts_down_gracefully_on_sigterm() -> None:
    serve = await _posewire("serve", "--port", "0", "--status-every", "0.05")
    assert serve.stderr is not None
    async with asyncio.timeout(10):
        line = ""
        while not line.startswith("posewire relay on "):
            line = (await serve.stderr.readline()).decode()
    url = line.split()[3]
    raw = await open_raw(url, "consumer", "s")
    expected = "posewire relay: streams=1 producers=0 consumers=1 "
    async with asyncio.timeout(10):  # status lines every 0.05 s
        status = ""
        while not status.startswith(expected):
            status = (await serve.stderr.readline()).decode()
    serve.send_signal(signal.SIGTERM)
    closed = await raw.until_closed()
    assert any(isinstance(m, Bye) for m in closed.messages) and closed.code == 1000
    async with asyncio.timeout(10):
        await serve.communicate()
    assert serve.returncode == 0


async def test_cli_consume_prints_non_default_dims() -> None:
    async with Relay("127.0.0.1", port=0) as relay, Publisher(relay.url, "p") as pub:
        vec = DEFAULTS.copy()
        vec[H_YAW] = 0.25
        await pub.send_frame(vec, timestamp_us=42)
        consume = await _posewire("consume", "p", "--url", relay.url, "--count", "1")
        async with asyncio.timeout(10):
            out, err = await consume.communicate()
    assert consume.returncode == 0, err.decode()
    assert out.decode().strip() == "seq=0 t_us=42 h_yaw=0.2500"


async def test_cli_serve_refuses_a_public_host_without_token() -> None:
    serve = await _posewire("serve", "--host", "0.0.0.0", "--port", "0")
    async with asyncio.timeout(10):
        _, err = await serve.communicate()
    assert serve.returncode == 2
    assert "--token" in err.decode()


async def test_cli_serve_refuses_a_public_host_without_tls() -> None:
    serve = await _posewire("serve", "--host", "0.0.0.0", "--port", "0", "--token", "t")
    async with asyncio.timeout(10):
        _, err = await serve.communicate()
    assert serve.returncode == 2
    assert "--tls-cert" in err.decode() and "--insecure" in err.decode()


def test_cli_exposure_flags_reach_the_relay_and_clients() -> None:
    from posewire.cli.net_options import client_options, serve_options

    args = build_parser().parse_args([
        "serve", "--allow-origin", "https://a.example", "--allow-origin", "https://b.example",
        "--max-connections", "10", "--max-per-address", "3", "--hello-timeout", "1.5",
        "--ping-interval", "0", "--ping-timeout", "4"])
    opts = serve_options(args)
    assert opts["allow_origins"] == ["https://a.example", "https://b.example"]
    assert (opts["max_connections"], opts["max_per_address"], opts["hello_timeout"]) == (10, 3, 1.5)
    assert opts["ping_interval"] is None and opts["ping_timeout"] == 4.0  # 0 = off
    relay = Relay("127.0.0.1", 0, **opts)
    assert relay.allow_origins == {"https://a.example", "https://b.example"}
    assert relay.max_per_address == 3
    args = build_parser().parse_args(["consume", "s", "--url", "wss://relay.example:8765",
                                      "--ping-timeout", "1"])
    sub = Subscriber(args.url, args.stream, **client_options(args))
    assert sub.tls is not None and sub.ping_timeout == 1.0
    with pytest.raises(UsageError):  # a CA file with ws:// is a mistake, said at once
        Subscriber("ws://127.0.0.1:1", "s", ca_file=str(WAVE))


# ---------------------------------------------------------------- a Subscriber never dies of one message


async def test_subscriber_honours_the_announced_size_skips_bad_messages_and_reconnects() -> None:
    """A relay announcing 8192 bytes sends a 5,000-byte frame, a message that is not
    msgpack, one over its own announced size, a text message, a valid frame, then an
    error (decode.state) and a close: the Subscriber takes the 5,000-byte frame, skips and
    counts the 3 bad messages, reconnects after the error and yields the next frames."""
    connections = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        conn = Connection(side="server", limits=Limits(max_message_bytes=8192))
        for ev in conn.receive_data(await ws.recv()):  # type: ignore[arg-type]
            assert not isinstance(ev, ProtocolFailure)
        await ws.send(conn.accept(f"s{connections}"))
        if connections == 1:
            await ws.send(padded_frame(0, 0.1, 5000))
            await ws.send(b"\xc1\x00\x01")  # 0xc1: never used in msgpack
            await ws.send(padded_frame(1, 0.15, 9000))  # over the announced 8192
            await ws.send("text")
            await ws.send(encode(frame_for(2, 0.2)))
            await ws.send(encode(ErrorMessage.from_exception(
                DecodeError("decode.state", "forced", path="t"))))
            await ws.close(CLOSE_CODES["decode.state"])
            return
        await ws.send(encode(frame_for(0, 0.3)))
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)],
                     compression=None, max_size=1 << 20) as server:
        url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with Subscriber(url, "a", backoff_initial=0.01) as sub:
            yaws = []
            async with asyncio.timeout(3 * TIMEOUT):
                async for got in sub:
                    yaws.append(round(float(got.values[H_YAW]), 3))
                    if yaws[-1] == 0.3:
                        break
            assert sub.frames_received == 3  # 0.1 (5,000 bytes), 0.2, then 0.3
            assert sub.messages_skipped == 3
            assert sub.last_skip is not None and sub.last_skip.code == "decode.type"
            assert sub.reconnects == 1 and connections == 2
            assert sub.last_error is not None and sub.last_error.code == "decode.state"
            assert yaws[-1] == 0.3 and set(yaws) <= {0.1, 0.2, 0.3}


async def test_a_relay_with_larger_messages_reaches_a_subscriber() -> None:
    """A relay run with max_bytes 8192 forwards a producer's 5,000-byte frame: the
    Subscriber takes it (the size its relay announced), then the next one."""
    async with Relay("127.0.0.1", port=0, max_bytes=8192) as relay, \
            Subscriber(relay.url, "a") as sub:
        producer = await open_raw(relay.url, "producer", "a")
        await wait_for(lambda: relay.streams.get("a") == (1, 1))
        await producer.ws.send(padded_frame(0, 0.1, 5000))
        assert (await next_frame(sub)).values[H_YAW] == pytest.approx(0.1, abs=1e-4)
        await producer.ws.send(encode(frame_for(1, 0.2)))
        assert (await next_frame(sub)).values[H_YAW] == pytest.approx(0.2, abs=1e-4)
        assert sub.messages_skipped == 0 and sub.frames_received == 2
        await producer.ws.close()


def frame_for(seq: int, yaw: float) -> Frame:
    values = DEFAULTS.copy()
    values[H_YAW] = yaw
    return Frame(seq, 1000 + seq, values)
