"""A stolen relay credential cannot blind the streams other relays hold (spec §5.7.1
rules 2, 3 and 7), on a real ``nats-server`` with ``docs/nats-posewire.conf``.

The attacks and their measurement are ``benchmarks/abuse_bench.py --only broker``
(``bench_broker``): three relays with their own broker users, a 60 Hz producer on
relay1, consumers on relay2 and relay3, an attacker logged in as relay3.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import nats
import nats.js.api
import pytest
from benchutil import load_benchmark
from brokerutil import claim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netutil import open_raw, wait_for

from posewire.codec.errors import UsageError
from posewire.codec.wire import Calibration
from posewire.relay import Relay
from posewire.relay.cluster import Broker, stream_token

abuse_bench = load_benchmark("abuse_bench")
cluster_bench = load_benchmark("cluster_bench")
pytestmark = pytest.mark.skipif(cluster_bench.nats_server_binary() is None,
                                reason="nats-server is not installed (.ci/run installs it)")

_EXAMPLE = itertools.count()

#: spec §5.7 rule 11: the reference ping timeout, the most an attack may cost a consumer
LIVENESS_TIMEOUT = 3.0


async def test_a_stolen_relay_credential_blinds_no_consumer_for_longer_than_the_liveness_timeout(
        tmp_path: Path) -> None:
    """With relay3's password: a forged frame 500 ahead (own subject and relay1's), a
    deleted-and-squatted claim, and a rollup/purge of the state bucket each leave the
    consumers on relay2 and relay3 with real frames throughout (longest gap ≤ the
    liveness timeout), deliver no forged frame, and leave the producer its stream; the
    broker refuses the rollup and the purge, and a late joiner on a cold relay gets the
    calibration at once."""
    got = await abuse_bench.bench_broker(tmp_path, watch=2.0)
    for attack in ("forged_frame", "squatted_lease", "purged_state"):
        row = got[attack]
        print(f"{attack}: longest gap in real frames {row['gap_s'] * 1000:.0f} ms, "
              f"forged frames delivered {row['forged_frames_delivered']}")
        assert row["gap_s"] <= LIVENESS_TIMEOUT, (attack, row)
        assert row["forged_frames_delivered"] == 0, (attack, row)
        assert row["producer_lost_stream"] is False, (attack, row)
    assert got["squatted_lease"]["api_deletes_answered"] == []
    broker = got["purged_state"]["broker"]
    assert broker["victim=live.cal.relay3"] == "refused: rollup not permitted"
    assert broker["victim=live.cal.relay1"] == "refused: no permission"
    assert broker["STREAM.PURGE"] == "refused: no permission"
    late = got["purged_state"]["late_joiner_calibration_s"]
    print(f"late joiner on a cold relay after the purge: calibration after {late * 1000:.0f} ms")
    assert late is not None and late <= got["lease_ttl_s"] / 3
    assert got["permission_violations"] >= 4  # relay1's subject and keys, the two APIs


async def test_a_bucket_that_allows_rollup_is_refused_at_start(tmp_path: Path) -> None:
    """Spec §5.7.1 rule 7: the relays create their buckets without rollup, purge or
    message deletion; a relay refuses to start on a bucket that allows them (one nats-py
    creates by default, say) and says how to fix it."""
    server = cluster_bench.NatsServer(tmp_path / "nats").start()
    try:
        relay = Relay("127.0.0.1", 0, broker=Broker(server.url))
        await relay.start()
        await relay.close()
        nc = await nats.connect(server.url)
        try:
            js = nc.jetstream()
            for name in ("posewire_claim", "posewire_beat", "posewire_joinstate"):
                config = (await js.stream_info(f"KV_{name}")).config
                assert config.allow_rollup_hdrs is False, name
                assert config.deny_purge is True and config.deny_delete is True, name
            await js.delete_stream("KV_posewire_joinstate")
            await js.create_key_value(bucket="posewire_joinstate", history=1)
        finally:
            await nc.close()
        relay = Relay("127.0.0.1", 0, broker=Broker(server.url))
        with pytest.raises(UsageError) as err:
            await relay.start()
        await relay.close()
        assert err.value.code == "usage.state" and err.value.path == "broker"
        assert "'posewire_joinstate' allows rollup" in err.value.message
        assert "nats kv rm posewire_joinstate" in err.value.message
    finally:
        server.stop()


def test_the_relay_name_is_the_broker_user_unless_given(tmp_path: Path) -> None:
    """Spec §5.7.1: a relay's name (its subject and key suffix) is its NATS user, from the
    URL or a ``user:password`` creds file; an explicit name wins; without a user it is
    random; a user or name that is no subject token is refused."""
    assert Broker("nats://relay2:pw@h:1").relay_name == "relay2"
    creds = tmp_path / "creds"
    creds.write_text("relay3:pw\n")
    assert Broker("nats://h:1", creds=creds).relay_name == "relay3"
    assert Broker("nats://relay2:pw@h:1", relay_name="edge-7").relay_name == "edge-7"
    a, b = Broker("nats://h:1"), Broker("nats://h:1")
    assert a.relay_name != b.relay_name
    for kwargs in ({"servers": "nats://a.b:pw@h:1"}, {"servers": "nats://h:1", "relay_name": "x.y"},
                   {"servers": "nats://h:1", "relay_name": "*"}):
        with pytest.raises(UsageError) as err:
            Broker(**kwargs)  # type: ignore[arg-type]
        assert err.value.path == "broker_name"


async def test_a_producer_that_moves_right_after_a_forged_frame_is_followed_at_once(
        tmp_path: Path) -> None:
    """Spec §5.7.1 rule 2: a forged frame from relay3's credential makes the consumers'
    relay re-read the holder; a producer that then moves from relay1 to relay2 reaches
    the consumer on relay3 within the look-up interval, not a lease later."""
    conf = (Path(__file__).resolve().parents[1] / "docs" / "nats-posewire.conf").read_text()
    server = cluster_bench.NatsServer(tmp_path / "nats", config=conf,
                                      env=abuse_bench.BROKER_ENV).start()
    relays = [Relay("127.0.0.1", 0, broker=Broker(abuse_bench.broker_url(server.port, f"relay{n}"),
                                                  state_interval=0.02)) for n in (1, 2, 3)]
    attacker = None
    watcher = None
    try:
        for r in relays:
            await r.start()
        r1, r2, r3 = relays
        watcher = abuse_bench.RealFrames(await open_raw(r3.url, "consumer", "moving"))
        first = await open_raw(r1.url, "producer", "moving")
        await first.send(Calibration(0.19, 0.50, 0.56, 0.36))
        for seq in range(5):
            await first.ws.send(abuse_bench.broker_frame(seq))
            await asyncio.sleep(1 / 60)
        await wait_for(lambda: len(watcher.times) == 5, timeout=5)
        attacker = await nats.connect(abuse_bench.broker_url(server.port, "relay3"))
        await attacker.publish("posewire.s.moving.relay3", abuse_bench.broker_frame(900, forged=True))
        await attacker.flush()
        first.ws.transport.abort()  # the producer moves to relay2
        assert r1.broker is not None
        await wait_for(lambda: r1.broker is not None and not r1.broker._leases
                       and not r1.broker._releasing, timeout=5)  # its claim given back
        second = await open_raw(r2.url, "producer", "moving")
        sent = asyncio.get_running_loop().time()
        await second.ws.send(abuse_bench.broker_frame(0))
        await wait_for(lambda: len(watcher.times) == 6, timeout=5)
        took = watcher.times[-1] - sent
        print(f"the moved producer's first frame on relay3 after {took * 1000:.1f} ms")
        assert took < 0.5
        assert watcher.forged == 0
        second.ws.transport.abort()
    finally:
        if watcher is not None:
            await watcher.close()
        if attacker is not None:
            await attacker.close()
        for r in relays:
            await r.close()
        server.stop()


# ---------------------------------------------------------------- the holder rule


_RELAYS = ("relay1", "relay2", "relay3", "relay4")
_STEPS = st.lists(st.tuples(st.sampled_from(_RELAYS),
                            st.sampled_from(("claim", "release", "expire"))),
                  min_size=1, max_size=8)


@pytest.fixture(scope="module")
def open_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    server = cluster_bench.NatsServer(tmp_path_factory.mktemp("nats") / "nats").start()
    try:
        yield server
    finally:
        server.stop()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_the_holder_is_the_oldest_claim_whose_heartbeat_is_live(
        open_nats: object, steps: list[tuple[str, str]]) -> None:
    """Spec §5.7.1 rule 2, against a real broker: after any sequence of claims (heartbeat,
    then claim), releases (both deleted) and expiries (the heartbeat gone) by four
    relays, a relay's look-up names the relay of the oldest claim whose heartbeat is
    live, or none."""
    stream = f"law.{next(_EXAMPLE)}"

    async def run() -> tuple[str | None, str | None]:
        relay = Relay("127.0.0.1", 0, broker=Broker(open_nats.url))  # type: ignore[attr-defined]
        await relay.start()
        nc = await nats.connect(open_nats.url)  # type: ignore[attr-defined]
        try:
            js = nc.jetstream(timeout=2)
            claims = await js.key_value("posewire_claim")
            beats = await js.key_value("posewire_beat")
            order: dict[str, int] = {}  # the model: claim order of each claimed relay
            live: set[str] = set()
            for i, (name, op) in enumerate(steps):
                key = f"{stream_token(stream)}.{name}"
                if op == "claim":
                    await claim(nc, stream, name, value=f"v{i}".encode())
                    order[name] = i
                    live.add(name)
                elif op == "release":
                    for kv in (claims, beats):
                        with contextlib.suppress(nats.js.errors.KeyNotFoundError):
                            await kv.delete(key)
                    order.pop(name, None)
                    live.discard(name)
                else:
                    with contextlib.suppress(nats.js.errors.KeyNotFoundError):
                        await beats.delete(key)
                    live.discard(name)
            candidates = sorted((order[n], n) for n in live if n in order)
            expected = candidates[0][1] if candidates else None
            assert relay.broker is not None
            found = await relay.broker._find_holder(stream)
            return expected, (found[0] if found is not None else None)
        finally:
            await nc.close()
            await relay.close()

    expected, got = asyncio.run(run())
    assert got == expected, steps
