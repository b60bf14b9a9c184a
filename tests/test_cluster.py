"""Relays sharing streams over a real NATS server (spec §5.7.1, posewire/relay/cluster.py).

Every test starts Debian's ``nats-server -js`` on loopback with a temporary store
(``.ci/run`` installs it); relays run in-process, except in the end-to-end test, where
three ``posewire serve --broker`` processes are started and one is killed.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import numpy as np
import pytest
from benchutil import load_benchmark
from brokerutil import claim
from hypothesis import given
from hypothesis import strategies as st
from netutil import RawClient, open_raw, padded_frame, wait_for

from posewire.codec.conditions import conditions_from_obj
from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import Calibration, ConditionsMessage, ErrorMessage, Frame, decode, encode
from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.relay.cluster import Broker, stream_token
from posewire.transport import RelayError, RelayUrls

cluster_bench = load_benchmark("cluster_bench")
relay_bench = load_benchmark("relay_bench")
pytestmark = pytest.mark.skipif(cluster_bench.nats_server_binary() is None,
                                reason="nats-server is not installed (.ci/run installs it)")


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[object]:
    server = cluster_bench.NatsServer(tmp_path / "nats").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def cluster(nats_server: object) -> AsyncIterator[list[Relay]]:
    """Two in-process relays on one NATS server (short lease for the lease tests)."""
    url = nats_server.url  # type: ignore[attr-defined]
    relays = [Relay("127.0.0.1", 0, broker=Broker(url, lease_ttl=1.0, state_interval=0.02))
              for _ in range(2)]
    for r in relays:
        await r.start()
    try:
        yield relays
    finally:
        for r in relays:
            await r.close()


def _frame(seq: int, **dims: float) -> Frame:
    values = DEFAULTS.copy()
    values[REGISTRY.index("h_yaw")] = 0.001 * (seq % 500)
    for key, value in dims.items():
        values[REGISTRY.index(key)] = value
    return Frame(seq, 1_700_000_000_000_000 + seq, values)


async def _recv_bytes(client: RawClient, n: int, timeout: float = 5.0) -> list[bytes]:
    out: list[bytes] = []
    async with asyncio.timeout(timeout):
        while len(out) < n:
            data = await client.ws.recv()
            assert isinstance(data, bytes)
            out.append(data)
    return out


# ---------------------------------------------------------------- unit-level laws


_STREAM_NAMES = st.text(alphabet="ABCabcxyz019._-", min_size=1, max_size=64)


@given(_STREAM_NAMES, _STREAM_NAMES)
def test_stream_token_is_one_subject_token_and_injective(a: str, b: str) -> None:
    ta, tb = stream_token(a), stream_token(b)
    assert "." not in ta and "*" not in ta and ">" not in ta and " " not in ta
    assert ta.replace("=", ".") == a  # reversible
    assert (ta == tb) == (a == b)


def test_relay_urls_rotate_and_validate() -> None:
    urls = RelayUrls("ws://a:1, ws://b:2,ws://c:3")
    seen = [urls.current]
    for _ in range(3):
        urls.advance()
        seen.append(urls.current)
    assert seen == ["ws://a:1", "ws://b:2", "ws://c:3", "ws://a:1"]
    assert RelayUrls(["ws://x:1"]).urls == ("ws://x:1",)
    with pytest.raises(UsageError) as err:
        RelayUrls(" , ")
    assert err.value.code == "usage.bad_option"


@pytest.mark.parametrize("kwargs", [{"servers": "ws://127.0.0.1:4222"},
                                    {"servers": "nats://h:1", "prefix": "a.b"},
                                    {"servers": "nats://h:1", "lease_ttl": 0.1}])
def test_broker_options_are_checked(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError) as err:
        Broker(**kwargs)  # type: ignore[arg-type]
    assert err.value.code == "usage.bad_option"


async def test_unreachable_broker_fails_start_with_a_clear_error(tmp_path: Path) -> None:
    port = cluster_bench._free_port()
    relay = Relay("127.0.0.1", 0, broker=Broker(f"nats://127.0.0.1:{port}", request_timeout=0.3))
    t0 = time.monotonic()
    with pytest.raises(UsageError) as err:
        await relay.start()
    assert err.value.code == "usage.state" and "cannot reach the broker" in err.value.message
    assert time.monotonic() - t0 < 10
    done = subprocess.run([sys.executable, "-m", "posewire.cli", "serve", "--port", "0",
                           "--broker", f"nats://127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "cannot reach the broker" in done.stderr


# ---------------------------------------------------------------- in-process cluster


async def test_late_joiner_on_a_cold_relay_gets_state_from_the_store(cluster: list[Relay]) -> None:
    a, b = cluster
    prod = await open_raw(a.url, "producer", "cold.1")
    cal = Calibration(0.19, 0.50, 0.56, 0.36)
    cond = ConditionsMessage(conditions_from_obj({"tracking": {"face": "lost"}}), 5)
    await prod.send(cal)
    await prod.send(cond)
    full = _frame(0, a_y_r=0.4)
    await prod.send(full)
    mask = np.zeros(N_DIMS, dtype=bool)
    mask[REGISTRY.index("m_jaw")] = True
    partial = Frame(1, full.timestamp_us + 1, np.where(mask, 0.5, np.nan))
    await prod.send(partial)
    assert a.broker is not None
    # the state is written (one round, then the next, throttled)
    await wait_for(lambda: a.broker is not None and a.broker.stats.state_writes >= 3, timeout=5)
    await asyncio.sleep(0.1)
    await wait_for(lambda: a.broker is not None and not a.broker._dirty, timeout=5)
    late = await open_raw(b.url, "consumer", "cold.1")
    got = await _recv_bytes(late, 3)
    assert got[0] == encode(cal)  # the producer's bytes
    msg = decode(got[1])
    assert isinstance(msg, ConditionsMessage) and msg.conditions == cond.conditions
    last = decode(got[2])
    assert isinstance(last, Frame) and last.seq == 1 and last.is_full
    expected = decode(encode(full)).values.copy()  # quantized on the wire (spec §5.4)
    expected[mask] = decode(encode(partial)).values[mask]
    np.testing.assert_allclose(last.values, expected, atol=1e-9)
    # and live frames follow, the producer's bytes
    nxt = _frame(2)
    await prod.send(nxt)
    assert await _recv_bytes(late, 1) == [encode(nxt)]


async def test_one_producer_per_stream_across_the_cluster(cluster: list[Relay],
                                                          nats_server: object) -> None:
    a, b = cluster
    first = await open_raw(a.url, "producer", "solo")
    await first.send(_frame(0))
    second = await open_raw(b.url, "producer", "solo", welcome=False)
    closed = await second.until_closed()
    assert closed.code == 4013 and closed.error is not None and closed.error.code == "decode.state"
    # the lease is renewed: still refused after several lease lifetimes
    await asyncio.sleep(2.5)
    third = await open_raw(b.url, "producer", "solo", welcome=False)
    assert (await third.until_closed()).code == 4013
    # the producer leaves: the lease is given back and the stream is free on any relay
    await first.ws.close()
    await wait_for(lambda: a.broker is not None and not a.broker._leases, timeout=3)
    await asyncio.sleep(0.2)
    fourth = await open_raw(b.url, "producer", "solo")
    await fourth.send(_frame(1))
    # a lease taken from under a relay (a partition longer than the lease: its heartbeat
    # expired, another relay claimed the stream): its producer is closed with
    # decode.state when it next renews
    assert b.broker is not None
    nc = await nats.connect(nats_server.url)  # type: ignore[attr-defined]
    try:
        beats = await nc.jetstream().key_value("posewire_beat")
        await beats.delete(f"solo.{b.broker.relay_name}")  # as the bucket's max_age does
        await claim(nc, "solo", "another")
        closed = await fourth.until_closed()
    finally:
        await nc.close()
    assert closed.code == 4013 and closed.error is not None and closed.error.code == "decode.state"
    assert b.broker is not None and b.broker.stats.leases_lost == 1


async def test_lease_of_a_relay_cut_off_expires(cluster: list[Relay]) -> None:
    a, b = cluster
    prod = await open_raw(a.url, "producer", "cut")
    await prod.send(_frame(0))
    assert a.broker is not None and a.broker._nc is not None
    await a.broker._nc.close()  # relay A loses NATS for good (its producer stays local)
    t0 = time.monotonic()
    while True:
        other = await open_raw(b.url, "producer", "cut", welcome=False)
        msg = await other.recv()
        if not isinstance(msg, ErrorMessage):
            break
        assert time.monotonic() - t0 < 4.0, "the lease did not expire"
        await asyncio.sleep(0.2)
    assert time.monotonic() - t0 >= 0.5  # it was held, then expired (lease_ttl = 1 s)


async def test_bad_bytes_from_the_broker_disturb_nothing(cluster: list[Relay],
                                                          nats_server: object) -> None:
    a, b = cluster
    cons = await open_raw(b.url, "consumer", "noisy")
    prod = await open_raw(a.url, "producer", "noisy")
    nc = await nats.connect(nats_server.url)  # type: ignore[attr-defined]
    assert a.broker is not None
    try:  # on an open broker anyone can publish on the holder's (relay A's) subject
        for junk in (b"\xc1", b"", encode(_frame(0))[:-3], b"\x81\xa1t\xa1f"):
            await nc.publish(f"posewire.s.noisy.{a.broker.relay_name}", junk)
        await nc.flush()
    finally:
        await nc.close()
    await wait_for(lambda: b.broker is not None and b.broker.stats.received_bad == 4, timeout=3)
    good = _frame(7)
    await prod.send(good)
    assert await _recv_bytes(cons, 1) == [encode(good)]


async def test_nats_restart_relays_resubscribe_and_local_fanout_goes_on(
        cluster: list[Relay], nats_server: object) -> None:
    a, b = cluster
    server = nats_server
    local = await open_raw(a.url, "consumer", "restart")
    remote = await open_raw(b.url, "consumer", "restart")
    prod = await open_raw(a.url, "producer", "restart")
    seq = 0

    async def send() -> bytes:
        nonlocal seq
        data = encode(_frame(seq))
        seq += 1
        await prod.ws.send(data)
        return data

    first = await send()
    assert await _recv_bytes(local, 1) == [first]
    assert await _recv_bytes(remote, 1) == [first]
    server.stop()  # type: ignore[attr-defined]
    await wait_for(lambda: a.broker is not None and not a.broker.connected, timeout=5)
    during = await send()  # the relay without its broker still serves its own consumers
    assert await _recv_bytes(local, 1) == [during]
    assert a.broker is not None and a.broker.stats.publish_dropped >= 1
    server.start()  # type: ignore[attr-defined]
    await wait_for(lambda: all(r.broker is not None and r.broker.connected for r in cluster),
                   timeout=10)
    # frames reach the other relay again (it re-subscribed); the seq jump is the loss
    async with asyncio.timeout(10):
        while True:
            data = await send()
            assert await _recv_bytes(local, 1) == [data]
            try:
                async with asyncio.timeout(0.3):
                    got = await _recv_bytes(remote, 1)
            except TimeoutError:
                continue
            msg = decode(got[0])
            if isinstance(msg, Frame):
                assert msg.seq <= seq - 1
                break


async def test_a_new_producer_numbers_from_its_own_start_on_every_relay(cluster: list[Relay]) -> None:
    a, b = cluster
    cons = await open_raw(b.url, "consumer", "renumbered")
    first = await open_raw(a.url, "producer", "renumbered")
    sent = [encode(_frame(seq)) for seq in range(40)]
    receiving = asyncio.create_task(_recv_bytes(cons, len(sent)))
    for data in sent:
        await first.ws.send(data)
        await asyncio.sleep(0.005)
    assert await receiving == sent
    await first.ws.close()
    # a new producer (here on the same relay) starts again at 0: not stale on relay B
    second = await open_raw(a.url, "producer", "renumbered")
    again = [encode(_frame(seq, m_jaw=0.3)) for seq in range(5)]
    receiving = asyncio.create_task(_recv_bytes(cons, len(again)))
    for data in again:
        await second.ws.send(data)
    assert await receiving == again
    assert b.stats.stale == 0


async def test_publisher_moves_to_the_next_relay_when_its_relay_goes(cluster: list[Relay]) -> None:
    a, b = cluster
    sub = Subscriber(b.url, "moving", backoff_initial=0.02)
    await sub.connect()
    pub = Publisher([a.url, b.url], "moving", backoff_initial=0.02, backoff_max=0.2,
                    calibration=None)
    await pub.connect()
    seqs: list[int] = []

    async def read() -> None:
        async for frame in sub:
            seqs.append(frame.seq)

    reader = asyncio.create_task(read())
    try:
        for _ in range(5):
            await pub.send_frame({"h_yaw": 0.1})
            await asyncio.sleep(0.01)
        await wait_for(lambda: len(seqs) == 5)
        await a.close()  # relay A goes away (bye): the producer's lease is given back
        sent = 0
        async with asyncio.timeout(5):
            while sent < 5:
                try:
                    await pub.send_frame({"h_yaw": 0.2})
                    sent += 1
                except RelayError as exc:  # reconnecting meanwhile (spec §5.8): not sent
                    assert not exc.fatal
                await asyncio.sleep(0.01)
        await wait_for(lambda: len(seqs) >= 9, timeout=5)
        assert pub.url == b.url and pub.reconnects == 1
        assert seqs[:5] == [0, 1, 2, 3, 4] and seqs[-1] == 9 and seqs == sorted(seqs)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await pub.close()
        await sub.close()


# ---------------------------------------------------------------- three relay processes


@pytest.fixture
def three_relays(nats_server: object) -> Iterator[list[object]]:
    relays = cluster_bench.start_relays(3, broker=nats_server.url)  # type: ignore[attr-defined]
    try:
        yield relays
    finally:
        for r in relays:
            r.stop()


async def test_three_relays_every_frame_in_order_and_failover(three_relays: list[object]) -> None:
    a, b, c = (r.url for r in three_relays)  # type: ignore[attr-defined]
    stream = "signer.live"
    raw = [await open_raw(u, "consumer", stream) for u in (b, b, c, c)]
    subs = [Subscriber([b, c], stream, backoff_initial=0.02, backoff_max=0.2) for _ in range(3)]
    for s in subs:
        await s.connect()
    prod = await open_raw(a, "producer", stream)
    cal = Calibration(0.19, 0.50, 0.56, 0.36)
    n = 90
    receiving = [asyncio.create_task(_recv_bytes(client, n + 1, timeout=10)) for client in raw]
    sent = [encode(cal)]
    await prod.ws.send(sent[0])
    for seq in range(n):
        data = encode(_frame(seq, a_x_r=0.01 * (seq % 50)))
        sent.append(data)
        await prod.ws.send(data)
        await asyncio.sleep(0.01)  # 100 Hz, below the relay's rate limit
    for got in await asyncio.gather(*receiving):  # every frame, in order, the producer's bytes
        assert got == sent

    # the subscribers on B: kill B, they go on on C
    got: list[list[tuple[float, str, int]]] = [[] for _ in subs]

    async def read(i: int) -> None:
        async for frame in subs[i]:
            got[i].append((time.monotonic(), subs[i].url, frame.seq))

    readers = [asyncio.create_task(read(i)) for i in range(len(subs))]

    async def produce() -> None:
        seq = n
        while True:
            await prod.ws.send(encode(_frame(seq)))
            seq += 1
            await asyncio.sleep(1 / 60)

    producing = asyncio.create_task(produce())
    try:
        await wait_for(lambda: all(any(u == b for _, u, _ in g) for g in got), timeout=5)
        t_kill = time.monotonic()
        three_relays[1].kill()  # type: ignore[attr-defined]
        await wait_for(lambda: all(any(t > t_kill and u == c for t, u, _ in g) for g in got),
                       timeout=5)
        moved = [min(t for t, u, _ in g if t > t_kill and u == c) - t_kill for g in got]
        print(f"moved to C after {', '.join(f'{m:.3f}' for m in moved)} s")
        assert max(moved) < 2.0, moved
        await asyncio.sleep(0.3)
        for g in got:  # in order on C, after the late-join frame
            on_c = [s for t, u, s in g if u == c and t > t_kill]
            assert len(on_c) >= 5 and all(y > x for x, y in itertools.pairwise(on_c[1:]))
        assert all(s.reconnects == 1 and s.calibration == cal for s in subs)
    finally:
        producing.cancel()
        for t in readers:
            t.cancel()
        await asyncio.gather(producing, *readers, return_exceptions=True)
        for s in subs:
            await s.close()
        for client in [*raw, prod]:
            client.ws.transport.abort()


async def test_broker_messages_never_override_a_local_producer_and_are_checked_like_clients(
        cluster: list[Relay], nats_server: object) -> None:
    """Spec §5.7.1 rule 6, on an open broker: a frame forged on the
    subject of a stream whose producer relay A holds, numbered 500 ahead (and a forged
    60 Hz stream, with a forged new-producer header) never reaches A's consumers nor
    silences the real producer there; on relay B, a broker message over B's size limit is
    dropped, and a flood on one stream is held to a producer's frame rate."""
    a, b = cluster
    local = await open_raw(a.url, "consumer", "owned")
    prod = await open_raw(a.url, "producer", "owned")
    remote = await open_raw(b.url, "consumer", "other")
    nc = await nats.connect(nats_server.url)  # type: ignore[attr-defined]
    assert a.broker is not None
    owned = f"posewire.s.owned.{a.broker.relay_name}"  # relay A's own subject, forged
    try:
        first = encode(_frame(0))
        await prod.ws.send(first)
        assert await _recv_bytes(local, 1) == [first]
        await nc.publish(owned, encode(_frame(500, m_jaw=0.9)))
        for seq in range(501, 531):
            await nc.publish(owned, encode(_frame(seq, m_jaw=0.9)),
                             headers={"Posewire-Producer": "forged"})
        await nc.flush()
        await wait_for(lambda: a.stats.broker_refused == 31, timeout=3)
        sent = [encode(_frame(seq)) for seq in range(1, 6)]
        for data in sent:
            await prod.ws.send(data)
        assert await _recv_bytes(local, 5) == sent  # the real producer, not silenced
        assert a.stats.stale == 0
        # relay B (no producer of "other"): too large for B, then a flood of 1,000 frames
        assert b.limits.max_message_bytes == 4096
        await claim(nc, "other", "forger")  # holds "other" (an open broker)
        await nc.publish("posewire.s.other.forger", encode(_frame(0)))
        assert b.broker is not None
        await wait_for(lambda: b.broker is not None
                       and b.broker._holders.get("other") == "forger", timeout=3)
        assert b.stats.frames_in == 1
        began = time.monotonic()
        await nc.publish("posewire.s.other.forger", padded_frame(0, 0.1, 5000))
        for seq in range(1, 1001):
            await nc.publish("posewire.s.other.forger", encode(_frame(seq)))
        await nc.flush()
        await wait_for(lambda: b.broker is not None and b.broker.stats.received >= 1002,
                       timeout=5)
        elapsed = time.monotonic() - began
        assert b.broker.stats.received_bad == 1  # the 5,000-byte one
        taken = b.stats.frames_in - 1
        # a burst of one second of frames, then the producer rate (120/s)
        assert 0 < taken <= 120 + 120 * elapsed + 1
        assert b.stats.broker_refused == 1000 - taken
        got = await _recv_bytes(remote, 1)
        assert len(got[0]) < 4096
    finally:
        await nc.close()


# ---------------------------------------------------------------- a broker with accounts


_NATS_CONF = Path(__file__).resolve().parents[1] / "docs" / "nats-posewire.conf"
_NATS_ENV = {"POSEWIRE_RELAY1_PASS": "relay1-secret", "POSEWIRE_RELAY2_PASS": "relay2-secret",
             "POSEWIRE_RELAY3_PASS": "relay3-secret", "POSEWIRE_MONITOR_PASS": "monitor-pw",
             "APPS_PASS": "apps-pw"}


@pytest.fixture
def authorized_nats(tmp_path: Path) -> Iterator[object]:
    """``nats-server -c docs/nats-posewire.conf``: the configuration docs/cluster.md shows."""
    server = cluster_bench.NatsServer(tmp_path / "nats", config=_NATS_CONF.read_text(),
                                      env=_NATS_ENV).start()
    try:
        yield server
    finally:
        server.stop()


async def test_only_relay_credentials_publish_on_posewire_subjects_or_touch_the_lease(
        authorized_nats: object, tmp_path: Path) -> None:
    """Forged broker input and broker access, with the documented broker configuration (spec §5.7.1 rule 7):
    relays with the relay credentials (in the URL, or in a --broker-creds file) share a
    stream, its lease and its stored state; a client without credentials is refused; the
    read-only user and a user of another account can neither publish on a posewire
    subject nor reach the lease bucket, so their forged frames and lease deletes change
    nothing on either relay."""
    port = authorized_nats.port  # type: ignore[attr-defined]
    creds = tmp_path / "relay.creds"
    creds.write_text("relay2:relay2-secret\n")
    a = Relay("127.0.0.1", 0, broker=Broker(f"nats://relay1:relay1-secret@127.0.0.1:{port}",
                                            lease_ttl=1.0, state_interval=0.02))
    b = Relay("127.0.0.1", 0, broker=Broker(f"nats://127.0.0.1:{port}", creds=creds,
                                            lease_ttl=1.0, state_interval=0.02))
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    intruders: list[nats.aio.client.Client] = []
    await a.start()
    await b.start()
    try:
        prod = await open_raw(a.url, "producer", "owned")
        cal = Calibration(0.19, 0.50, 0.56, 0.36)
        await prod.send(cal)
        await prod.ws.send(encode(_frame(0)))
        assert a.broker is not None
        await wait_for(lambda: a.broker is not None and a.broker.stats.state_writes >= 2,
                       timeout=3)
        # a cold relay: the stored state (JetStream direct get) and then live frames
        remote = await open_raw(b.url, "consumer", "owned")
        late = [decode(d) for d in await _recv_bytes(remote, 2)]
        assert late[0] == cal and isinstance(late[1], Frame) and late[1].seq == 0
        # no credentials: refused at connect
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False,
                               max_reconnect_attempts=0, connect_timeout=2)
        monitor = await nats.connect(f"nats://monitor:monitor-pw@127.0.0.1:{port}",
                                     error_cb=on_error)
        app = await nats.connect(f"nats://app:apps-pw@127.0.0.1:{port}", error_cb=on_error)
        intruders += [monitor, app]
        for nc in intruders:  # a forged frame far ahead, a forged new producer
            await nc.publish("posewire.s.owned.relay1", encode(_frame(500, m_jaw=0.9)))
            await nc.publish("posewire.s.owned.relay1", encode(_frame(0, m_jaw=0.9)),
                             headers={"Posewire-Producer": "forged"})
            await nc.publish("$KV.posewire_claim.owned.relay1", b"",
                             headers={"KV-Operation": "PURGE"})
            await nc.flush()
        # the claim bucket: out of reach (no API permission / another account's JetStream)
        with pytest.raises(nats.errors.TimeoutError):
            await monitor.jetstream(timeout=0.5).key_value("posewire_claim")
        with pytest.raises(nats.js.errors.BucketNotFoundError):
            await app.jetstream(timeout=0.5).key_value("posewire_claim")
        with pytest.raises(nats.errors.TimeoutError):
            await monitor.jetstream(timeout=0.5).delete_key_value("posewire_claim")
        assert any('publish to "posewire.s.owned.relay1"' in e for e in errors), errors
        assert any('publish to "$kv.posewire_claim.owned.relay1"' in e.lower()
                   for e in errors), errors
        await asyncio.sleep(1.5)  # longer than the lease: a purged lease would be gone
        sent = [encode(_frame(seq)) for seq in range(1, 4)]
        for data in sent:
            await prod.ws.send(data)
        assert await _recv_bytes(remote, 3) == sent  # only the real producer's frames
        assert b.broker is not None
        assert b.broker.stats.received_bad == 0 and b.stats.broker_refused == 0
        assert a.broker.stats.leases_lost == 0 and a.stats.broker_refused == 0
        rival = await open_raw(b.url, "producer", "owned", welcome=False)
        closed = await rival.until_closed()  # the lease is still A's
        assert closed.error is not None and closed.error.code == "decode.state"
    finally:
        for nc in intruders:
            await nc.close()
        await a.close()
        await b.close()


async def test_broker_credentials_file_and_tls_options(tmp_path: Path) -> None:
    """--broker-creds: one line user:password (or a token); a NATS .creds file needs
    nkeys; --broker-ca needs tls:// URLs; a password never appears in an error."""
    creds = tmp_path / "c"
    creds.write_text("  relay:pw  \n")
    assert Broker("nats://h:1", creds=creds)._auth == {"user": "relay", "password": "pw"}
    creds.write_text("s3cr3t-token\n")
    assert Broker("nats://h:1", creds=creds)._auth == {"token": "s3cr3t-token"}
    for bad in ("a:b\nc:d\n", "user:\n", ""):
        creds.write_text(bad)
        with pytest.raises(UsageError) as err:
            Broker("nats://h:1", creds=creds)
        assert err.value.code == "usage.bad_option" and err.value.path == "broker_creds"
    with pytest.raises(UsageError):
        Broker("nats://h:1", creds=tmp_path / "missing")
    with pytest.raises(UsageError) as err:
        Broker("nats://h:1", ca_file=tmp_path / "missing.pem")
    assert err.value.path == "broker_ca"
    port = cluster_bench._free_port()
    broker = Broker(f"nats://relay:hunter2@127.0.0.1:{port}", request_timeout=0.3)
    assert broker.where == f"nats://***@127.0.0.1:{port}"
    with pytest.raises(UsageError) as err:
        await Relay("127.0.0.1", 0, broker=broker).start()
    assert "hunter2" not in err.value.message and "***@127.0.0.1" in err.value.message


async def test_relays_reach_a_tls_broker_that_their_ca_vouches_for(tmp_path: Path) -> None:
    """--broker tls://… --broker-ca: the relay verifies the broker (a self-signed
    certificate for 127.0.0.1, SAN only) and authenticates over TLS; without the CA the
    start fails with a clear error; a tls:// URL to a broker without TLS is refused
    rather than sending the password in clear text."""

    cert_file, key_file = relay_bench.self_signed(tmp_path / "nats-tls", days=1.0, cn="posewire test broker")
    conf = (f'tls {{ cert_file: "{cert_file}", key_file: "{key_file}" }}\n'
            'authorization { user: relay, password: tls-pw }\n')
    server = cluster_bench.NatsServer(tmp_path / "nats", config=conf, scheme="tls").start()
    plain = cluster_bench.NatsServer(tmp_path / "plain").start()
    relays: list[Relay] = []
    try:
        url = f"tls://relay:tls-pw@127.0.0.1:{server.port}"
        for i in range(2):  # one user for both: each relay needs a name of its own
            relays.append(Relay("127.0.0.1", 0, broker=Broker(url, ca_file=cert_file,
                                                              state_interval=0.02,
                                                              relay_name=f"tls{i}")))
            await relays[-1].start()
        a, b = relays
        remote = await open_raw(b.url, "consumer", "tls.s")
        prod = await open_raw(a.url, "producer", "tls.s")
        data = encode(_frame(7))
        await prod.ws.send(data)
        assert await _recv_bytes(remote, 1) == [data]
        with pytest.raises(UsageError) as err:  # the system store does not know it
            await Relay("127.0.0.1", 0, broker=Broker(url, request_timeout=0.5)).start()
        assert err.value.code == "usage.state" and "CERTIFICATE_VERIFY_FAILED" in err.value.message
        assert "tls-pw" not in err.value.message
        with pytest.raises(UsageError) as err:
            await Relay("127.0.0.1", 0, broker=Broker(
                f"tls://relay:pw@127.0.0.1:{plain.port}", ca_file=cert_file,
                request_timeout=0.5)).start()
        assert "does not require TLS" in err.value.message
        with pytest.raises(UsageError) as err:
            Broker(f"nats://127.0.0.1:{server.port}", ca_file=cert_file)
        assert err.value.path == "broker_ca"
    finally:
        for r in relays:
            await r.close()
        server.stop()
        plain.stop()


async def test_a_broker_flood_on_one_stream_costs_another_stream_no_frame(
        cluster: list[Relay], nats_server: object) -> None:
    """Spec §5.7.1 rule 6, on an open broker: while a client floods one
    stream's subject with 20,000 frames, a 60 Hz stream from relay A's producer reaches
    relay B's consumer complete and in order; the flood is held to the producer rate."""
    a, b = cluster
    quiet = await open_raw(b.url, "consumer", "quiet")
    loud = await open_raw(b.url, "consumer", "loud")
    prod = await open_raw(a.url, "producer", "quiet")
    frames = [encode(_frame(seq)) for seq in range(1, 121)]
    flooder = (  # another process, as fast as it can: 20,000 frames on "loud"
        "import asyncio, sys, nats\n"
        "from posewire.codec.vector import DEFAULTS\n"
        "from posewire.codec.wire import Frame, encode\n"

        "async def main():\n"
        "    nc = await nats.connect(sys.argv[1], pending_size=1 << 26)\n"
        "    forged = [encode(Frame(s, s, DEFAULTS)) for s in range(1, 20_001)]\n"
        "    print('ready', flush=True); sys.stdin.readline()\n"

        "    for data in forged:\n"
        "        await nc.publish('posewire.s.loud.flooder', data)\n"
        "    await nc.flush(); await nc.close()\n"
        "asyncio.run(main())\n")
    flood = await asyncio.create_subprocess_exec(
        sys.executable, "-c", flooder, nats_server.url,  # type: ignore[attr-defined]
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert flood.stdout is not None and flood.stdin is not None
    assert await asyncio.wait_for(flood.stdout.readline(), 20) == b"ready\n"
    # the flooder holds "loud" (an open broker: anyone may claim a free stream), and
    # relay B knows it before the flood starts
    nc = await nats.connect(nats_server.url)  # type: ignore[attr-defined]
    await claim(nc, "loud", "flooder")
    await nc.publish("posewire.s.loud.flooder", encode(_frame(0)))
    await nc.close()
    await wait_for(lambda: b.broker is not None
                   and b.broker._holders.get("loud") == "flooder", timeout=5)

    async def flooding() -> None:
        assert flood.stdin is not None
        flood.stdin.write(b"go\n")
        await flood.stdin.drain()
        await asyncio.wait_for(flood.wait(), 25)

    async def producing() -> None:
        for data in frames:
            await prod.ws.send(data)
            await asyncio.sleep(1 / 60)

    got: list[bytes] = []

    async def reading() -> None:
        async for data in quiet.ws:
            assert isinstance(data, bytes)
            got.append(data)
            if len(got) == len(frames):
                return

    reader = asyncio.create_task(reading())
    drain = asyncio.create_task(loud.ws.recv())  # keeps "loud" subscribed on B
    try:
        await prod.ws.send(encode(_frame(0)))
        await wait_for(lambda: b.stats.frames_in >= 1, timeout=5)
        await wait_for(lambda: bool(got), timeout=5)  # frame 0 read before the count starts (a loaded machine)
        got.clear()
        async with asyncio.timeout(30):
            await asyncio.gather(flooding(), producing())
            await reader
        assert got == frames  # none lost, in order
        assert b.broker is not None
        await wait_for(lambda: b.broker is not None and b.broker.stats.received >= 20_000,
                       timeout=20)
        assert b.stats.broker_refused > 15_000  # the flood, held to the producer rate
    finally:
        reader.cancel()
        drain.cancel()
        await asyncio.gather(reader, drain, return_exceptions=True)
        if flood.returncode is None:
            flood.kill()
            await flood.wait()


async def _start_frame(url: str, stream: str) -> bytes:
    """The start frame a late consumer of ``stream`` gets (no cal/cond on these streams)."""
    late = await open_raw(url, "consumer", stream)
    try:
        (got,) = await _recv_bytes(late, 1)
    finally:
        await late.ws.close()
    return got


async def test_late_join_on_another_relay_while_masked_frames_flow_gives_the_same_start_frame(
        cluster: list[Relay]) -> None:
    """Spec §5.7.1 rule 3 (the stored frame under the live ones): the stored start frame is merged
    *under* the frames that arrived live before it was read, so a relay without the stream
    gives the merged start frame a single relay gives: every dim ever sent, newest values,
    the newest s/ts. Before: the stored frame was dropped once any live frame had come,
    and the start frame held only the masked frames' dims."""
    a, b = cluster
    assert a.broker is not None and b.broker is not None
    prod = await open_raw(a.url, "producer", "merge.1")
    await prod.send(_frame(0, a_y_r=0.4))  # full: every dim
    await wait_for(lambda: a.broker is not None and a.broker.stats.state_writes >= 1, timeout=5)
    await asyncio.sleep(0.1)
    await wait_for(lambda: a.broker is not None and not a.broker._dirty, timeout=5)
    # B reads the store slowly: live masked frames come first (the race made certain)
    b_broker = b.broker
    real_subscribe = b_broker._subscribe

    async def slow_subscribe(stream: str) -> list[tuple[str, bytes]]:
        out = await real_subscribe(stream)
        await asyncio.sleep(0.3)
        return out

    b_broker._subscribe = slow_subscribe  # type: ignore[method-assign]
    mask = np.zeros(N_DIMS, dtype=bool)
    mask[REGISTRY.index("m_jaw")] = True
    first = asyncio.create_task(open_raw(b.url, "consumer", "merge.1"))
    for seq in range(1, 30):
        await prod.send(Frame(seq, 1_700_000_000_000_000 + seq, np.where(mask, 0.01 * seq, np.nan)))
        await asyncio.sleep(0.02)
    early = await first
    assert "f" in b_broker._live.get("merge.1", set())  # live frames did come first
    await wait_for(lambda: b.streams.get("merge.1", (0, 0))[1] >= 1, timeout=5)
    await asyncio.sleep(0.2)
    from_a = decode(await _start_frame(a.url, "merge.1"))
    from_b = decode(await _start_frame(b.url, "merge.1"))
    assert isinstance(from_a, Frame) and isinstance(from_b, Frame)
    assert from_a.seq == from_b.seq == 29
    assert from_a.is_full and from_b.is_full  # the full frame's dims were not lost on B
    np.testing.assert_array_equal(from_a.values, from_b.values)
    assert from_b.values[REGISTRY.index("a_y_r")] == pytest.approx(0.4, abs=1 / 127)
    await early.ws.close()


async def test_start_frame_after_a_producer_change_holds_only_the_new_producers_dims(
        cluster: list[Relay]) -> None:
    """Spec §5.7 rule 3 and rule 7 (one producer's snapshot): the merged snapshot holds
    the dims carried since the *current* producer's hello; a new producer's first frame
    starts it afresh, on the producer's relay and on the others alike. Before: the old
    producer's dims were sent under the new producer's s."""
    a, b = cluster
    cons_b = await open_raw(b.url, "consumer", "change.1")  # B holds the stream too
    first = await open_raw(a.url, "producer", "change.1")
    await first.send(_frame(500, a_y_r=0.4))  # full
    await _recv_bytes(cons_b, 1)
    await first.ws.close()
    await wait_for(lambda: not a.streams.get("change.1", (0, 0))[0], timeout=5)
    second = await open_raw(a.url, "producer", "change.1")
    mask = np.zeros(N_DIMS, dtype=bool)
    mask[REGISTRY.index("m_jaw")] = True
    masked = Frame(0, 5, np.where(mask, 0.5, np.nan))
    await second.send(masked)
    assert await _recv_bytes(cons_b, 1) == [encode(masked)]
    for relay in (a, b):
        start = decode(await _start_frame(relay.url, "change.1"))
        assert isinstance(start, Frame)
        assert start.seq == 0 and start.timestamp_us == 5
        assert list(np.flatnonzero(start.mask)) == [REGISTRY.index("m_jaw")]


# ---------------------------------------------------------------- broker authentication at start


def test_a_broker_url_with_an_empty_password_is_refused() -> None:
    for url in ("nats://relay:@127.0.0.1:4222", "nats://:pw@127.0.0.1:4222"):
        with pytest.raises(UsageError) as err:
            Broker(url)
        assert err.value.code == "usage.bad_option" and err.value.path == "broker"


async def test_the_documented_launcher_refuses_empty_broker_passwords(tmp_path: Path) -> None:
    """Spec §5.7.1 rule 7: docs/nats-posewire.conf with an empty $POSEWIRE_RELAY1_PASS
    lets anyone in as ``relay1`` (shown here); ``tools/nats-posewire.sh``, the start
    docs/cluster.md gives, refuses any empty or unset password variable and starts the
    server when all are set."""
    server = cluster_bench.NatsServer(tmp_path / "nats", config=_NATS_CONF.read_text(),
                                      env={**_NATS_ENV, "POSEWIRE_RELAY1_PASS": ""}).start()
    try:
        intruder = await nats.connect(f"nats://relay1:@127.0.0.1:{server.port}",
                                      allow_reconnect=False, max_reconnect_attempts=0)
        await intruder.close()  # the hole the launcher closes: "" is a password
    finally:
        server.stop()
    script = Path(__file__).resolve().parents[1] / "tools" / "nats-posewire.sh"
    for var in _NATS_ENV:
        for value in ("", None):
            env = {k: v for k, v in {**os.environ, **_NATS_ENV}.items() if k != var}
            if value is not None:
                env[var] = value
            done = subprocess.run([str(script), "-a", "127.0.0.1", "-p", "0"], env=env,
                                  capture_output=True, text=True, timeout=30)
            assert done.returncode == 2 and f"${var} is empty or unset" in done.stderr
    port = cluster_bench._free_port()
    proc = subprocess.Popen([str(script), "-a", "127.0.0.1", "-p", str(port),
                             "-sd", str(tmp_path / "sd")], env={**os.environ, **_NATS_ENV},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        relay = Relay("127.0.0.1", 0, broker=Broker(
            f"nats://relay1:relay1-secret@127.0.0.1:{port}", request_timeout=2.0))
        await wait_for(lambda: proc.poll() is None and _listening(port), timeout=10)
        await relay.start()
        assert relay.broker is not None and relay.broker.authenticated is True
        await relay.close()
    finally:
        proc.terminate()
        proc.wait(10)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


async def test_a_relay_on_a_broker_without_authentication_warns_and_refuses_beyond_loopback(
        nats_server: object, caplog: pytest.LogCaptureFixture) -> None:
    """Spec §5.7.1 rule 7: on a broker that asks for no credentials a relay says so
    loudly at start; bound beyond loopback it refuses to start unless
    ``insecure_broker`` (``--insecure-broker``)."""
    import secrets as _secrets

    url = nats_server.url  # type: ignore[attr-defined]
    token = _secrets.token_urlsafe(32)
    caplog.set_level("WARNING", logger="posewire.relay.cluster")
    local = Relay("127.0.0.1", 0, broker=Broker(url))
    await local.start()
    try:
        assert local.broker is not None and local.broker.authenticated is False
        assert any("requires no authentication" in r.getMessage() for r in caplog.records)
    finally:
        await local.close()
    public = Relay("0.0.0.0", 0, token=token, insecure=True, broker=Broker(url))
    with pytest.raises(UsageError) as err:
        await public.start()
    await public.close()
    assert err.value.path == "insecure_broker" and "--insecure-broker" in err.value.message
    told = Relay("0.0.0.0", 0, token=token, insecure=True, broker=Broker(url, insecure_broker=True))
    await told.start()
    await told.close()


async def test_a_relay_on_the_documented_config_is_authenticated(authorized_nats: object) -> None:
    port = authorized_nats.port  # type: ignore[attr-defined]
    relay = Relay("127.0.0.1", 0, broker=Broker(f"nats://relay1:relay1-secret@127.0.0.1:{port}"))
    await relay.start()
    try:
        assert relay.broker is not None and relay.broker.authenticated is True
    finally:
        await relay.close()
