"""A relay you can expose: admission, origin, TLS, liveness and latest-wins end to end
(spec §5.7, §5.8). A bounded fault-and-load suite over real loopback sockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from benchutil import load_benchmark
from netutil import TIMEOUT, open_raw, padded_frame, raw_upgrade, upgrade_request, wait_for
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.typing import Origin, Subprotocol

from posewire.codec.errors import UsageError
from posewire.codec.protocol import CLOSE_CODES, Connection
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import SUBPROTOCOL, Bye, Frame, Hello, decode, encode
from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.relay.fanout import window_value
from posewire.transport import RelayError, certificate_validity, client_tls_context

relay_bench = load_benchmark("relay_bench")

H_YAW = REGISTRY.index("h_yaw")
H_PITCH = REGISTRY.index("h_pitch")

#: a token strong enough beyond loopback (spec §5.7 rule 5)
STRONG_TOKEN = "RfSx0Q7m2JkV9cWbTq4LzN8yHd3EaPu6GoYi1wKs"


def frame(seq: int, yaw: float = 0.0, *, full: bool = True) -> Frame:
    values = DEFAULTS.copy() if full else np.full(N_DIMS, np.nan)
    values[H_YAW] = yaw
    return Frame(seq, 1000 + seq, values)


async def ws_from(url: str, source: str, **kwargs: object) -> object:
    """A websocket (posewire subprotocol, no hello yet) from the loopback address ``source``."""
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return await connect(url, sock=sock, subprotocols=[Subprotocol(SUBPROTOCOL)],
                         compression=None, proxy=None, **kwargs)  # type: ignore[arg-type]


async def tcp_from(port: int, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A bare TCP connection that never speaks (a hello-less client)."""
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the peer closes (EOF or reset) within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(4096):
                pass
        return True
    except ConnectionError:
        return True
    except TimeoutError:
        return False


# ---------------------------------------------------------------- TLS (spec §5.8)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 / localhost, made now."""
    return relay_bench.self_signed(tmp_path_factory.mktemp("tls"), days=1.0)


async def test_tls_relay_serves_wss_to_clients_that_trust_its_certificate(
        tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    async with Relay("127.0.0.1", port=0, tls_cert=cert, tls_key=key) as relay:
        assert relay.url.startswith("wss://127.0.0.1:")
        async with Publisher(relay.url, "t", ca_file=cert) as pub, \
                Subscriber(relay.url, "t", ca_file=cert) as sub:
            await wait_for(lambda: relay.streams.get("t") == (1, 1))
            await pub.send_frame({"h_yaw": 0.25})
            async with asyncio.timeout(TIMEOUT):
                got = await sub.recv()
            assert got is not None and got.values[H_YAW] == pytest.approx(0.25, abs=1e-4)
        # without the CA the certificate does not verify: a final error (code tls), raised
        # at the first try by every client even when it would retry forever
        for client in (Subscriber(relay.url, "t"), Publisher(relay.url, "t")):
            with pytest.raises(RelayError) as err:
                async with asyncio.timeout(TIMEOUT):
                    await client.connect()
            assert err.value.code == "tls" and err.value.fatal
            assert "certificate" in str(err.value) and "self-signed" in str(err.value)
        # a plain ws:// client cannot talk to it either
        with pytest.raises(RelayError):
            await Subscriber(relay.url.replace("wss://", "ws://"), "t", max_retries=0).connect()


def test_tls_options_are_checked(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    with pytest.raises(UsageError) as err:
        Relay("127.0.0.1", 0, tls_cert=cert)  # key missing
    assert err.value.code == "usage.bad_option"
    with pytest.raises(UsageError):
        Relay("127.0.0.1", 0, tls_cert=cert, tls_key=cert)  # not a key
    with pytest.raises(UsageError):
        client_tls_context("ws://127.0.0.1:1", cert)  # a CA file needs wss
    with pytest.raises(UsageError):
        client_tls_context("http://127.0.0.1:1")
    # beyond loopback: TLS (or --insecure) and a token
    Relay("0.0.0.0", 0, token=STRONG_TOKEN, tls_cert=cert, tls_key=key)


# ---------------------------------------------------------------- origin (spec §5.8)


async def test_browser_from_a_foreign_origin_is_refused_own_and_allowed_ones_accepted() -> None:
    async with Relay("127.0.0.1", port=0, allow_origins=["https://viewer.example"]) as relay:
        for origin in ("https://evil.example", "null", f"http://127.0.0.1:{relay.port + 1}"):
            with pytest.raises(InvalidStatus) as err:
                await connect(relay.url, origin=Origin(origin), proxy=None,
                              subprotocols=[Subprotocol(SUBPROTOCOL)])
            assert err.value.response.status_code == 403
        assert relay.stats.origin_refused == 3
        for origin in (None, "https://viewer.example", "HTTPS://Viewer.example/",
                       f"http://127.0.0.1:{relay.port}", f"http://localhost:{relay.port}"):
            ws = await connect(relay.url, origin=None if origin is None else Origin(origin),
                               proxy=None, subprotocols=[Subprotocol(SUBPROTOCOL)])
            await ws.close()
        assert relay.stats.origin_refused == 3


# ---------------------------------------------------------------- admission (spec §5.8)


async def test_per_address_cap_refuses_at_accept_others_unaffected() -> None:
    async with Relay("127.0.0.1", port=0, max_connections=50, max_per_address=4,
                     hello_timeout=5.0) as relay:
        held = [await tcp_from(relay.port, "127.0.0.2") for _ in range(4)]
        await wait_for(lambda: relay.connections == 4)
        reader, _ = await tcp_from(relay.port, "127.0.0.2")
        assert await closed_within(reader, TIMEOUT)  # the 5th from that address
        assert relay.stats.refused == 1
        ok = await open_raw(relay.url, "consumer", "s")  # another address still gets in
        await ok.ws.close()
        for _, writer in held:
            writer.close()


async def test_at_the_cap_hello_less_connections_of_the_busiest_address_make_room(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="posewire.relay")
    cap = 40
    async with Relay("127.0.0.1", port=0, max_connections=cap, max_per_address=cap,
                     hello_timeout=10.0) as relay:
        flood = [await tcp_from(relay.port, f"127.0.0.{2 + i % 4}") for i in range(2 * cap)]
        await wait_for(lambda: relay.stats.evicted + relay.stats.refused == cap)
        assert relay.connections == cap
        began = time.monotonic()
        legit = await open_raw(relay.url, "consumer", "s")  # welcome received
        assert time.monotonic() - began < 1.0
        producer = await open_raw(relay.url, "producer", "s")
        await producer.send(frame(0, 0.5))
        got = await legit.recv()
        assert isinstance(got, Frame) and got.seq == 0
        assert relay.stats.evicted >= 2  # the two made room by evicting hello-less ones
        # the first flood connection was evicted (closed): the oldest of its address
        assert await closed_within(flood[0][0], TIMEOUT)
        # clients that said hello are never evicted; a newcomer from the address holding the
        # most hello-less connections is refused rather than evicting its own kind
        more = [await tcp_from(relay.port, "127.0.0.9") for _ in range(cap)]
        await wait_for(lambda: relay.stats.evicted + relay.stats.refused == 2 * cap + 2)
        assert relay.connections == cap and relay.streams == {"s": (1, 1)}
        assert relay.stats.refused > 0
        for _, writer in flood + more:
            writer.close()
    # rejections are logged at a bounded rate, whatever the flood
    assert len([r for r in caplog.records if r.name == "posewire.relay"]) <= 12


async def test_at_the_cap_a_client_whose_upgrade_is_arriving_outlives_a_silent_flood() -> None:
    """Spec §5.7 rule 8: at the cap, connections that sent nothing are evicted before one
    whose upgrade request is arriving. A slow client sends half of its request; then
    twice the cap of silent connections from fresh addresses turn the cap over (each
    evicts one); the slow client, though the oldest, is still there to finish (before:
    the oldest hello-less connection went first — a client needing 1 s to upgrade got in
    0 of 6 times under a 1,600/s flood from 1,200 addresses)."""
    cap = 30
    async with Relay("127.0.0.1", port=0, max_connections=cap, max_per_address=cap,
                     hello_timeout=20.0) as relay:
        flood = [await tcp_from(relay.port, f"127.0.2.{1 + i}") for i in range(cap)]
        await wait_for(lambda: relay.connections == cap)
        rest = asyncio.Event()
        hello = Connection(side="client", role="consumer").hello("s")
        slow = asyncio.create_task(raw_upgrade(relay.port, source="127.0.0.9", pieces=2,
                                               pause=rest, hello=hello, welcome=True,
                                               timeout=10.0))
        await wait_for(lambda: relay.stats.evicted == 1 and len(relay._progressing) == 1)
        flood += [await tcp_from(relay.port, f"127.0.3.{1 + i}") for i in range(2 * cap)]
        await wait_for(lambda: relay.stats.evicted == 1 + 2 * cap)
        assert relay.connections == cap and relay.stats.refused == 0
        rest.set()
        sock = await slow  # its upgrade answered and its hello welcomed
        sock.close()
        assert relay.stats.evicted == 1 + 2 * cap  # no one else went for it
        for reader, _ in flood[:2 * cap]:  # the older silent ones were all evicted
            assert await closed_within(reader, TIMEOUT)
        for _, writer in flood:
            writer.close()


async def test_when_none_is_silent_the_connection_heard_from_longest_ago_makes_room() -> None:
    """Spec §5.7 rule 8: at the cap, with every hello-less connection sending bytes, the
    one whose last bytes came longest ago is evicted (not the oldest)."""
    cap = 4
    async with Relay("127.0.0.1", port=0, max_connections=cap, max_per_address=cap,
                     hello_timeout=20.0) as relay:
        conns = [await tcp_from(relay.port, f"127.0.4.{1 + i}") for i in range(cap)]
        for i, (_, writer) in enumerate(conns):
            writer.write(b"GET / HTTP/1.1\r\n")
            await wait_for(lambda i=i: len(relay._progressing) == i + 1)  # type: ignore[misc]
        conns[0][1].write(b"Host: 127.0.0.1\r\n")  # the oldest is heard from again
        await wait_for(lambda: next(iter(relay._progressing)).peer_host == "127.0.4.2")
        newcomer = await tcp_from(relay.port, "127.0.4.9")
        assert await closed_within(conns[1][0], TIMEOUT)  # heard from longest ago
        assert relay.stats.evicted == 1 and relay.connections == cap
        for reader, _ in (conns[0], conns[2], conns[3]):
            assert not await closed_within(reader, 0.05)
        for _, writer in [*conns, newcomer]:
            writer.close()


async def test_connection_without_hello_is_closed_at_the_deadline() -> None:
    async with Relay("127.0.0.1", port=0, hello_timeout=0.3) as relay:
        reader, _ = await tcp_from(relay.port, "127.0.0.1")  # never even upgrades
        began = time.monotonic()
        assert await closed_within(reader, 2.0)
        assert time.monotonic() - began < 1.0
        silent = await connect(relay.url, subprotocols=[Subprotocol(SUBPROTOCOL)], proxy=None)
        async with asyncio.timeout(2.0):
            await silent.wait_closed()
        assert silent.close_code == CLOSE_CODES["decode.state"]
        await wait_for(lambda: relay.connections == 0)


async def test_hellos_per_address_are_rate_limited() -> None:
    async with Relay("127.0.0.1", port=0, hello_rate=1.0, hello_burst=2) as relay:
        for _ in range(2):
            ok = await open_raw(relay.url, "consumer", "s")
            await ok.ws.close()
        over = await open_raw(relay.url, "consumer", "s", welcome=False)
        closed = await over.until_closed()
        assert closed.error is not None and closed.error.code == "decode.rate"
        assert closed.code == CLOSE_CODES["decode.rate"]
        other = await ws_from(relay.url, "127.0.0.3")  # another address has its own budget
        conn_hello = encode(Hello("consumer", "s"))
        await other.send(conn_hello)  # type: ignore[attr-defined]
        welcome = msgpack.unpackb(await other.recv())  # type: ignore[attr-defined]
        assert welcome["t"] == "welcome"
        await other.close()  # type: ignore[attr-defined]


async def test_over_rate_frames_are_dropped_before_decoding() -> None:
    async with Relay("127.0.0.1", port=0, max_fps=10, burst_s=0.1) as relay:
        pub = await open_raw(relay.url, "producer", "s")
        await pub.send(frame(0))  # takes the only token
        # frame-shaped but broken: over the rate it is dropped unread, so no error
        broken = b"\x85\xa1t\xa1f" + b"\xc1" * 40
        for _ in range(20):
            await pub.ws.send(broken)
        await wait_for(lambda: relay.stats.rate_limited == 20)
        assert relay.stats.errors == 0 and relay.stats.frames_in == 1
        await asyncio.sleep(0.15)  # a token again: now it is decoded, and refused
        await pub.ws.send(broken)
        closed = await pub.until_closed()
        assert closed.error is not None and closed.error.code == "decode.malformed"


# ---------------------------------------------------------------- liveness (spec §5.7, §5.8)


async def test_half_open_producer_is_replaced_within_5_s_at_default_settings() -> None:
    async with Relay("127.0.0.1", port=0) as relay:  # default ping interval and timeout
        consumer = await open_raw(relay.url, "consumer", "s")
        old = await open_raw(relay.url, "producer", "s")
        await old.send(frame(0, 0.1))
        assert isinstance(await consumer.recv(), Frame)
        old.ws.transport.pause_reading()  # it stops answering (pings unanswered)
        began = time.monotonic()
        async with Publisher(relay.url, "s", reconnect=False) as new:  # default settings
            took = time.monotonic() - began
            assert new.connected and took < 5.0
            await new.send_frame({"h_yaw": 0.7})
            got = await consumer.recv()
            assert isinstance(got, Frame) and got.values[H_YAW] == pytest.approx(0.7, abs=1e-4)
        assert relay.stats.replaced == 1
        old.ws.transport.abort()


async def test_live_producer_keeps_its_stream() -> None:
    async with Relay("127.0.0.1", port=0, ping_timeout=0.5) as relay:
        first = await open_raw(relay.url, "producer", "busy")
        second = await open_raw(relay.url, "producer", "busy", welcome=False)
        closed = await second.until_closed()
        assert closed.error is not None and closed.error.code == "decode.state"
        assert relay.stats.replaced == 0 and relay.streams == {"busy": (1, 0)}
        await first.ws.close()


class Proxy:
    """A TCP proxy on loopback that can go silent (a half-open path: nothing passes,
    nothing is closed)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frozen = False
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Proxy:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for w in self.writers:
            w.transport.abort()
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_w]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                while self.frozen:
                    await asyncio.sleep(3600)
                dst.write(data)

        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer), return_exceptions=True)


async def test_publisher_reports_a_dead_link_promptly_and_reconnects_in_the_background() -> None:
    async with Relay("127.0.0.1", port=0, ping_timeout=0.3) as relay, Proxy(relay.port) as proxy:
        pub = Publisher(proxy.url, "s", ping_interval=0.2, ping_timeout=0.2, backoff_initial=0.02)
        await pub.connect()
        assert await pub.send_frame({"h_yaw": 0.1}) == 0
        proxy.frozen = True  # the path goes silent; no FIN, no RST
        began = time.monotonic()
        error: RelayError | None = None
        while time.monotonic() - began < 3.0:
            t0 = time.monotonic()
            try:
                await pub.send_frame({"h_yaw": 0.2})
            except RelayError as exc:
                error = exc
                blocked = time.monotonic() - t0
                break
            await asyncio.sleep(0.02)
        assert error is not None and error.code == "link" and not error.fatal
        assert time.monotonic() - began < 1.5  # keepalive: interval + timeout + slack
        assert blocked < 0.1  # the caller is told at once, never held for the reconnect
        proxy.frozen = False  # new connections pass again (the old one stays stuck)
        await wait_for(lambda: pub.connected, timeout=5.0)
        seq = await pub.send_frame({"h_yaw": 0.3})
        assert seq >= 1 and pub.reconnects >= 1 and pub.frames_dropped >= 1
        # the relay replaced the half-open producer by the reconnected one
        await wait_for(lambda: relay.stats.frames_in >= 1)  # frame 0 died in the silent path
        await pub.close()


async def test_subscriber_notices_a_dead_relay_and_reconnects() -> None:
    async with Relay("127.0.0.1", port=0) as relay, Proxy(relay.port) as proxy:
        sub = Subscriber(proxy.url, "s", ping_interval=0.2, ping_timeout=0.2, backoff_initial=0.02)
        await sub.connect()
        proxy.frozen = True
        await asyncio.sleep(0.6)
        proxy.frozen = False
        await wait_for(lambda: sub.reconnects == 1 and sub.connected, timeout=5.0)
        await sub.close()


# ---------------------------------------------------------------- latest wins (spec §5.7)


async def test_out_of_order_frames_are_never_kept_as_the_newest() -> None:
    async with Relay("127.0.0.1", port=0) as relay:
        consumer = await open_raw(relay.url, "consumer", "s")
        pub = await open_raw(relay.url, "producer", "s")
        await pub.send(frame(5, 0.5))
        await pub.send(frame(3, 0.3))  # late: behind the newest
        await pub.send(frame(6, 0.6))
        seqs = [(await consumer.recv()).seq for _ in range(2)]  # type: ignore[attr-defined]
        assert seqs == [5, 6] and relay.stats.stale == 1
        late = await open_raw(relay.url, "consumer", "s")
        got = await late.recv()
        assert isinstance(got, Frame) and got.seq == 6
        assert got.values[H_YAW] == pytest.approx(0.6, abs=1e-4)
        # a new producer numbers from its own start: not stale
        await pub.ws.close()
        await wait_for(lambda: relay.streams["s"] == (0, 2))
        again = await open_raw(relay.url, "producer", "s")
        await again.send(frame(0, 0.1))
        got = await consumer.recv()
        assert isinstance(got, Frame) and got.seq == 0


async def test_a_consumer_that_stops_reading_holds_at_most_a_window() -> None:
    window = 8
    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0, send_window=window,
                     ping_interval=None) as relay:
        fast = await open_raw(relay.url, "consumer", "s")
        stalled = await open_raw(relay.url, "consumer", "s", max_queue=64)
        pub = await open_raw(relay.url, "producer", "s")
        stalled.ws.transport.pause_reading()  # its kernel buffer keeps taking bytes
        n = 300
        for seq in range(n):
            await pub.send(frame(seq, (seq % 100) / 100))
            got = await fast.recv()
            assert isinstance(got, Frame) and got.seq == seq  # the fast one gets all
        info = {c.delivered: c for c in relay.consumers("s")}
        slow = info[min(info)]
        assert slow.in_flight <= window and slow.dropped > 0
        assert slow.delivered <= window + 1
        stalled.ws.transport.resume_reading()
        seen = []
        while not seen or seen[-1] != n - 1:
            got = await stalled.recv()
            assert isinstance(got, Frame)
            seen.append(got.seq)
        # what it reads before the newest frame is at most the window (no backlog)
        assert len(seen) <= window + 2


class PingWatch(ClientConnection):
    """A client websocket that notes, for each send-window ping of the relay, how many
    messages it had read before it, and that can leave pings unanswered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.messages = 0
        self.window_pings: list[int] = []
        self.answer = True
        send_frame = self.protocol.send_frame

        def maybe_send(frame: WsFrame) -> None:
            if frame.opcode is not Opcode.PONG or self.answer:
                send_frame(frame)

        self.protocol.send_frame = maybe_send  # type: ignore[method-assign]

    def process_event(self, event: object) -> None:
        if isinstance(event, WsFrame):
            if event.opcode is Opcode.BINARY:
                self.messages += 1
            elif event.opcode is Opcode.PING and event.data[:4] == b"pwW1":
                self.window_pings.append(self.messages)
        super().process_event(event)  # type: ignore[arg-type]


class KeepaliveWatch(PingWatch):
    """A :class:`PingWatch` that also notes when each keepalive ping came."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keepalive_at: list[float] = []

    def process_event(self, event: object) -> None:
        if isinstance(event, WsFrame) and event.opcode is Opcode.PING and event.data[:4] != b"pwW1":
            self.keepalive_at.append(time.monotonic())
        super().process_event(event)


async def test_keepalive_pings_have_a_phase_and_close_a_consumer_that_stops_answering() -> None:
    interval = 0.3
    async with Relay("127.0.0.1", port=0, ping_interval=interval, ping_timeout=0.3) as relay:
        clients, opened = [], []
        for _ in range(12):
            clients.append(await open_raw(relay.url, "consumer", "s", connection_class=KeepaliveWatch))
            opened.append(time.monotonic())
        watches = [c.ws for c in clients if isinstance(c.ws, KeepaliveWatch)]
        assert len(watches) == len(clients)
        await wait_for(lambda: all(w.keepalive_at for w in watches), timeout=3 * interval)
        delays = [w.keepalive_at[0] - t for w, t in zip(watches, opened, strict=True)]
        # spec §5.7 rule 11: the first ping within two intervals, at a phase of its own
        # (without the phase every delay would be one interval)
        assert max(delays) < 2 * interval + 0.2
        assert max(delays) - min(delays) > interval / 4
        # a consumer that stops answering is closed (1011) within an interval + the timeout
        dead = watches[0]
        dead.answer = False
        began = time.monotonic()
        await asyncio.wait_for(dead.wait_closed(), 2 * interval + 0.3 + 1.0)
        assert dead.close_code == 1011 and time.monotonic() - began < 2 * interval + 0.3 + 1.0
        await wait_for(lambda: relay.streams["s"] == (0, len(clients) - 1))
        # the others keep answering and stay open
        await asyncio.sleep(2 * interval)
        assert all(w.close_code is None for w in watches[1:])


async def _drain(client: Any) -> None:
    with contextlib.suppress(ConnectionClosed):
        while True:
            await client.ws.recv()


async def _produce(pub: Any, rate: float, stop: asyncio.Event) -> None:
    seq = 0
    while not stop.is_set():
        await pub.send(frame(seq, (seq % 100) / 100))
        seq += 1
        await asyncio.sleep(1 / rate)


async def test_window_pings_stand_for_keepalive_pings_and_a_dead_consumer_is_still_closed() -> None:
    # spec §5.7 rule 11: a consumer whose window pings are answered gets no keepalive
    # ping; one that stops answering is closed (1011) one timeout after its first
    # unanswered window ping — within the keepalive bound (an interval plus the timeout)
    interval, timeout = 0.3, 0.3
    async with Relay("127.0.0.1", port=0, ping_interval=interval, ping_timeout=timeout) as relay:
        pub = await open_raw(relay.url, "producer", "s")
        stop = asyncio.Event()
        producing = asyncio.create_task(_produce(pub, 60.0, stop))
        try:
            await wait_for(lambda: relay.stats.frames_in >= 40)  # the stream's rate is known
            clients = [await open_raw(relay.url, "consumer", "s", connection_class=KeepaliveWatch)
                       for _ in range(2)]
            drains = [asyncio.create_task(_drain(c)) for c in clients]
            watches = [c.ws for c in clients if isinstance(c.ws, KeepaliveWatch)]
            assert len(watches) == 2
            await asyncio.sleep(4 * interval)
            for w in watches:
                assert len(w.window_pings) >= 5  # ~0.25 s window: a ping every ~7 frames
                assert w.keepalive_at == []  # their answers are the sign of life
            assert all(c.window <= 15 for c in relay.consumers("s"))  # 0.25 s at 60 Hz
            dead, alive = watches
            dead.answer = False
            began = time.monotonic()
            await asyncio.wait_for(dead.wait_closed(), interval + timeout + 1.0)
            assert dead.close_code == 1011
            assert time.monotonic() - began < interval + timeout + 0.5
            await wait_for(lambda: relay.streams["s"] == (1, 1))
            await asyncio.sleep(2 * interval)
            assert alive.close_code is None and alive.keepalive_at == []
            # the stream pauses: no window pings, so keepalive pings take over
            stop.set()
            await producing
            await wait_for(lambda: bool(alive.keepalive_at), timeout=4 * interval + 1.0)
            assert alive.close_code is None
            for task in drains:
                task.cancel()
        finally:
            stop.set()
            await producing


async def test_the_send_window_holds_at_most_a_quarter_second_of_frames() -> None:
    # spec §5.7 rule 4: W ≤ 0.25 s of frames at the stream's rate (default send_window_s)
    async with Relay("127.0.0.1", port=0, ping_interval=None) as relay:
        fast = await open_raw(relay.url, "consumer", "s")
        stalled = await open_raw(relay.url, "consumer", "s", max_queue=64)
        pub = await open_raw(relay.url, "producer", "s")
        stop = asyncio.Event()
        producing = asyncio.create_task(_produce(pub, 60.0, stop))
        drains = [asyncio.create_task(_drain(c)) for c in (fast, stalled)]
        try:
            await wait_for(lambda: relay.stats.frames_in >= 40)
            assert {c.window for c in relay.consumers("s")} <= set(range(13, 16))
            stalled.ws.transport.pause_reading()  # its kernel buffer keeps taking bytes
            await asyncio.sleep(1.0)
            info = {c.delivered: c for c in relay.consumers("s")}
            slow = info[min(info)]
            # at most the window when they were written (≤ 15 at ≤ 60 Hz; a loaded machine
            # may slow the producer down, and the window with it, since)
            assert slow.in_flight <= 15 and slow.window <= 15 and slow.dropped > 0
            assert info[max(info)].dropped == 0  # the one that reads loses nothing
        finally:
            stop.set()
            await producing
        for task in drains:
            task.cancel()


async def test_window_pongs_are_read_whole_split_or_among_other_frames() -> None:
    # spec §5.7 rule 4: the relay reads a consumer's window pongs itself when websockets'
    # parser is at a frame boundary; pongs in one segment, other frames after them, and a
    # pong split over two segments are all read, in order
    def masked(opcode: Opcode, payload: bytes) -> bytes:
        return WsFrame(opcode, payload).serialize(mask=True, extensions=[])

    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0, send_window=32,
                     ping_interval=None) as relay:
        client = await open_raw(relay.url, "consumer", "s", connection_class=PingWatch)
        assert isinstance(client.ws, PingWatch)
        client.ws.answer = False  # the test answers by hand
        (consumer,) = relay._streams["s"].consumers
        key = consumer.window_key  # the values of the pings the relay would send

        def pong(mark: int) -> bytes:
            return masked(Opcode.PONG, b"pwW1" + mark.to_bytes(8, "big") + window_value(key, mark))

        pub = await open_raw(relay.url, "producer", "s")
        for seq in range(8):
            await pub.send(frame(seq))
        for _ in range(8):
            assert isinstance(await client.recv(), Frame)
        assert relay.consumers("s")[0].in_flight == 8
        raw = client.ws.transport
        raw.write(pong(2) + pong(5) + masked(Opcode.PONG, b"abcd"))  # + a pong of no window
        await wait_for(lambda: relay.consumers("s")[0].in_flight == 3)
        split = pong(7)
        raw.write(split[:7])
        await asyncio.sleep(0.05)
        raw.write(split[7:])
        await wait_for(lambda: relay.consumers("s")[0].in_flight == 1)
        raw.write(pong(8) + masked(Opcode.BINARY, encode(Bye("done"))))
        await wait_for(lambda: relay.streams.get("s") == (1, 0))  # the bye was read too


async def test_window_pings_of_consumers_fall_on_different_frames() -> None:
    window = 16  # a ping every 8 frames per consumer
    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0, send_window=window,
                     ping_interval=None) as relay:
        consumers = [await open_raw(relay.url, "consumer", "s", connection_class=PingWatch)
                     for _ in range(8)]
        pub = await open_raw(relay.url, "producer", "s")
        for seq in range(window // 2):
            await pub.send(frame(seq))
        for c in consumers:
            for seq in range(window // 2):
                got = await c.recv()
                assert isinstance(got, Frame) and got.seq == seq
        watches = [c.ws for c in consumers if isinstance(c.ws, PingWatch)]
        assert len(watches) == len(consumers)
        await wait_for(lambda: all(w.window_pings for w in watches))
        # spec §5.7 rule 4: each consumer has its own phase, so the pings (and the pongs
        # the relay reads back) spread over W/2 frames instead of all coming at once
        firsts = sorted(w.window_pings[0] for w in watches)
        assert firsts == list(range(2, window // 2 + 2))  # the welcome, then 1…8 frames
        await wait_for(lambda: all(c.in_flight < window // 2 for c in relay.consumers("s")))


async def test_a_full_window_is_probed_again_until_a_pong_reopens_it() -> None:
    window = 8
    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0, send_window=window,
                     ping_interval=None) as relay:
        client = await open_raw(relay.url, "consumer", "s", connection_class=PingWatch)
        watch = client.ws
        assert isinstance(watch, PingWatch)
        watch.answer = False  # its pongs are lost (a client may answer only the newest ping)
        pub = await open_raw(relay.url, "producer", "s")
        n = 40
        for seq in range(n):
            await pub.send(frame(seq, seq / 100))
            await asyncio.sleep(0.002)
        seen = [await client.recv() for _ in range(window)]
        # then the window is full: nothing more is written
        assert [m.seq for m in seen if isinstance(m, Frame)] == list(range(window))
        await wait_for(lambda: relay.stats.drops >= n - window - 2)
        assert relay.consumers("s")[0].in_flight == window
        watch.answer = True
        # the relay probes the full window again (once a second): this pong reopens it
        async with asyncio.timeout(3.0):
            got = await client.ws.recv()
        newest = decode(got if isinstance(got, bytes) else got.encode())
        assert isinstance(newest, Frame) and newest.seq == n - 1
        assert newest.values[H_YAW] == pytest.approx((n - 1) / 100, abs=1e-4)
        assert relay.consumers("s")[0].in_flight == 1  # the frames before the probe: read
        # a pong that claims more frames than were written acknowledges nothing
        await client.ws.pong(b"pwW1" + (10**9).to_bytes(8, "big"))
        await pub.send(frame(n, 0.5))
        got_next = await client.recv()
        assert isinstance(got_next, Frame) and got_next.seq == n
        await asyncio.sleep(0.05)
        assert relay.consumers("s")[0].in_flight >= 0


async def test_subscriber_yields_the_newest_state_with_masks_merged() -> None:
    async with Relay("127.0.0.1", port=0, max_fps=1000, burst_s=2.0) as relay, \
            Publisher(relay.url, "s") as pub, Subscriber(relay.url, "s") as sub:
        await wait_for(lambda: relay.streams.get("s") == (1, 1))
        await pub.send_frame(DEFAULTS)
        first = await asyncio.wait_for(sub.recv(), TIMEOUT)
        assert first is not None and first.seq == 0 and first.merged == 1
        for i in range(1, 60):  # the application is busy meanwhile
            dims = {"h_yaw": i / 100} if i % 2 else {"h_pitch": -i / 100}
            await pub.send_frame(dims)
        await wait_for(lambda: sub.frames_received == 60)
        got = await asyncio.wait_for(sub.recv(), TIMEOUT)
        assert got is not None and got.seq == 59 and got.merged == 59
        assert set(np.flatnonzero(got.mask)) == {H_YAW, H_PITCH}
        assert got.values[H_YAW] == pytest.approx(0.59, abs=1e-4)
        assert got.values[H_PITCH] == pytest.approx(-0.58, abs=1e-4)
        assert int(np.isnan(got.values).sum()) == N_DIMS - 2
        assert sub.frames_yielded == 2


async def test_a_peer_that_keeps_sending_is_alive_without_its_pongs() -> None:
    # spec §5.7 rule 11: bytes from the peer are a sign of life like a pong (a busy peer's
    # pong may wait behind data the relay has not read yet); silence past the timeout is not
    interval, timeout = 0.2, 0.3
    async with Relay("127.0.0.1", port=0, ping_interval=interval, ping_timeout=timeout) as relay:
        pub = await open_raw(relay.url, "producer", "s", connection_class=KeepaliveWatch)
        watch = pub.ws
        assert isinstance(watch, KeepaliveWatch)
        watch.answer = False  # no pongs at all
        seq = 0
        began = time.monotonic()
        takeover: asyncio.Task[Any] | None = None
        while time.monotonic() - began < 6 * timeout:  # sending every 50 ms: alive
            await pub.send(frame(seq, 0.1))
            seq += 1
            await asyncio.sleep(0.05)
            if takeover is None and time.monotonic() - began > 2 * timeout:
                # a producer hello for the busy stream meanwhile: refused, the current one is alive
                takeover = asyncio.create_task(open_raw(relay.url, "producer", "s", welcome=False))
        # pinged (keepalive, then the takeover check), never answered, never closed
        assert len(watch.keepalive_at) == 2 and watch.close_code is None
        assert takeover is not None
        closed = await (await takeover).until_closed()
        assert closed.error is not None and closed.error.code == "decode.state"
        assert relay.stats.replaced == 0
        # silent and not answering: closed (1011) within two intervals + the timeout
        stopped = time.monotonic()
        await asyncio.wait_for(watch.wait_closed(), 2 * interval + timeout + 1.0)
        assert watch.close_code == 1011 and time.monotonic() - stopped < 2 * interval + timeout + 1.0


async def frozen_consumer(port: int, stream: str) -> socket.socket:
    """A consumer on a raw socket: it completes the WebSocket handshake and the hello,
    reads its welcome, then never reads again (a small receive buffer)."""
    hello = Connection(side="client", role="consumer").hello(stream)
    return await raw_upgrade(port, rcvbuf=4096, hello=hello, welcome=True)


@pytest.mark.parametrize("size", [400, 4000])
async def test_a_consumer_that_stops_reading_is_closed_within_the_ping_timeout(size: int) -> None:
    """Spec §5.7 rule 11: a frozen consumer is closed by the keepalive
    whatever the size of the frames filling its buffers (≈ 4 KB ones included)."""
    interval, timeout = 0.5, 1.0
    async with Relay("127.0.0.1", port=0, ping_interval=interval, ping_timeout=timeout,
                     send_buffer=4096) as relay:
        frozen = await frozen_consumer(relay.port, "s")
        try:
            pub = await open_raw(relay.url, "producer", "s")
            await wait_for(lambda: relay.streams.get("s") == (1, 1))
            began = time.monotonic()
            seq = 0
            # at most two intervals plus the timeout (spec §5.7 rule 11) and slack for a
            # loaded machine; a relay whose liveness waited on its buffers kept it open (45 s and more)
            async with asyncio.timeout(2 * interval + timeout + 6.0):
                while relay.streams.get("s") != (1, 0):
                    await pub.ws.send(padded_frame(seq, (seq % 100) / 100, size))
                    seq += 1
                    await asyncio.sleep(1 / 60)
            assert relay.connections == 1  # the producer only
            assert seq > 20 and time.monotonic() - began < 2 * interval + timeout + 6.0
        finally:
            frozen.close()


# ---------------------------------------------------------------- admission before the handshake


async def test_pending_tls_handshakes_count_against_the_caps_until_the_deadline(
        tls_files: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    """Spec §5.7 rule 8: TCP connections that never send a TLS
    ClientHello count against the per-address cap from accept: a further client from that
    address is refused at once; at the hello deadline they are closed and a legitimate
    client gets in. A TLS handshake that fails is counted and logged, no traceback."""
    caplog.set_level(logging.INFO)
    cert, key = tls_files
    deadline = 1.0
    async with Relay("127.0.0.1", port=0, tls_cert=cert, tls_key=key, max_per_address=4,
                     hello_timeout=deadline) as relay:
        idle = [await tcp_from(relay.port, "127.0.0.1") for _ in range(4)]
        await wait_for(lambda: relay.connections == 4)
        # the per-address cap is full of pending handshakes: refused cleanly at accept
        with pytest.raises(RelayError) as err:
            await Subscriber(relay.url, "t", ca_file=cert, max_retries=0).connect()
        assert err.value.code == "link" and not err.value.fatal
        assert relay.stats.refused == 1
        # another address is not affected
        other = await tcp_from(relay.port, "127.0.0.2")
        await wait_for(lambda: relay.connections == 5)
        other[1].close()
        await wait_for(lambda: relay.connections == 4)
        # at the deadline the idle ones are closed (counted), then a client gets in
        for reader, _ in idle:
            assert await closed_within(reader, deadline + TIMEOUT)
        assert relay.stats.handshake_timeouts == 4 and relay.connections == 0
        async with Subscriber(relay.url, "t", ca_file=cert, max_retries=0) as sub:
            assert sub.connected
        # bytes that are not a ClientHello: a failed handshake, counted, no traceback
        reader, writer = await tcp_from(relay.port, "127.0.0.3")
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        assert await closed_within(reader, TIMEOUT)
        await wait_for(lambda: relay.stats.tls_failed >= 1)
        for _, w in [*idle, (reader, writer)]:
            w.close()
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


async def test_at_the_cap_a_tls_client_whose_client_hello_came_outlives_silent_ones(
        tls_files: tuple[Path, Path]) -> None:
    """Spec §5.7 rule 8: the TLS handshake starts with a connection's first bytes, read
    by the relay: a ClientHello that came is progress, so at the cap silent connections
    make room first (and a silent one holds no TLS state)."""
    import ssl

    cert, key = tls_files
    cap = 12
    async with Relay("127.0.0.1", port=0, tls_cert=cert, tls_key=key, max_connections=cap,
                     max_per_address=cap, hello_timeout=20.0) as relay:
        flood = [await tcp_from(relay.port, f"127.0.5.{1 + i}") for i in range(cap - 1)]
        tls = ssl.create_default_context(cafile=str(cert)).wrap_bio(
            ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_hostname="127.0.0.1")
        with contextlib.suppress(ssl.SSLWantReadError):
            tls.do_handshake()
        reader, writer = await tcp_from(relay.port, "127.0.0.9")
        writer.write(outgoing.read())  # the ClientHello, and nothing more
        await wait_for(lambda: len(relay._progressing) == 1 and relay.connections == cap)
        flood += [await tcp_from(relay.port, f"127.0.6.{1 + i}") for i in range(2 * cap)]
        await wait_for(lambda: relay.stats.evicted == 2 * cap)
        assert not await closed_within(reader, 0.1)  # the handshake under way stays
        assert [c.peer_host for c in relay._progressing] == ["127.0.0.9"]
        for _, w in [*flood, (reader, writer)]:
            w.close()


async def test_an_accept_out_of_descriptors_is_counted_and_logged_without_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    """Spec §5.7 rule 8: asyncio reports a failed accept() (EMFILE) to the loop's
    exception handler with a traceback; on a relay's listening socket it is counted and
    logged at a bounded rate instead. Other reports still reach the previous handler."""
    caplog.set_level(logging.INFO)
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        async with Relay("127.0.0.1", port=0) as relay:
            assert relay._server is not None
            sock = relay._server.sockets[0]
            for _ in range(50):
                loop.call_exception_handler({
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(24, "Too many open files"), "socket": sock})
            loop.call_exception_handler({"message": "something else"})
            assert relay.stats.accept_failed == 50
            assert [c["message"] for c in seen] == ["something else"]
            lines = [r for r in caplog.records if r.name == "posewire.relay"]
            assert 1 <= len(lines) <= 11 and not any(r.exc_info for r in lines)
        loop.call_exception_handler({"message": "after"})  # the handler is given back
        assert [c["message"] for c in seen] == ["something else", "after"]
    finally:
        loop.set_exception_handler(None)


# ---------------------------------------------------------------- hello flood and logs (spec §5.7 rule 8)


async def test_two_origin_headers_get_one_400_without_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with Relay("127.0.0.1", port=0) as relay:
        own = f"http://127.0.0.1:{relay.port}"
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
            writer.write(upgrade_request(
                relay.port, f"Origin: {own}\r\nOrigin: https://evil.example\r\n"))
            async with asyncio.timeout(TIMEOUT):
                response = await reader.read()
            writer.close()
            assert response.startswith(b"HTTP/1.1 400 ")
            assert response.count(b"HTTP/1.1") == 1 and b"Traceback" not in response
            assert len(response) < 400
        assert relay.stats.origin_refused == 3
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_relay_warns_at_start_about_an_expired_or_soon_expiring_certificate(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="posewire.relay")
    expected = {"fine": None, "soon": "expires in 2.0 days", "expired": "EXPIRED 1.0 days ago"}
    for label, want in expected.items():
        cert, key = relay_bench.self_signed(tmp_path / label, days=30.0 if label == "fine" else 2.0,
                                expired=label == "expired")
        validity = certificate_validity(cert)
        assert validity is not None and validity[0] < validity[1]
        caplog.clear()
        async with Relay("127.0.0.1", port=0, tls_cert=cert, tls_key=key):
            pass
        lines = [r.getMessage() for r in caplog.records if "certificate" in r.getMessage()]
        if want is None:
            assert lines == [], label
        else:
            assert len(lines) == 1 and want in lines[0], (label, lines)


async def test_certificate_hostname_checks_use_the_subject_alt_name_only(
        tmp_path: Path, tls_files: tuple[Path, Path]) -> None:
    """Spec §5.7 rule 10: a certificate that names its host only in the subject's CN is
    refused (Python's ssl falls back to the CN by default); with the host in its SAN the
    same kind of certificate is accepted."""
    cn_cert, cn_key = relay_bench.self_signed(tmp_path / "cn", san=False, cn="localhost")
    async with Relay("127.0.0.1", port=0, tls_cert=cn_cert, tls_key=cn_key) as relay:
        url = f"wss://localhost:{relay.port}"
        with pytest.raises(RelayError) as err:
            async with asyncio.timeout(TIMEOUT):
                await Subscriber(url, "t", ca_file=cn_cert).connect()
        assert err.value.code == "tls" and err.value.fatal
        assert "localhost" in str(err.value)
    cert, key = tls_files  # SAN: localhost, 127.0.0.1
    async with Relay("127.0.0.1", port=0, tls_cert=cert, tls_key=key) as relay, \
            Subscriber(f"wss://localhost:{relay.port}", "t", ca_file=cert) as sub:
        assert sub.connected


async def test_connections_per_address_beyond_twice_the_hello_rate_are_refused_at_accept(
        ) -> None:
    """Hello flood CPU (spec §5.7 rule 8): connections from one address
    beyond twice the hello rate (here 10/s, burst 20) are closed at accept, before any
    byte is read or any handshake is done, counted as refused and rate limited; the hello
    rate itself still answers decode.rate; another address is unaffected. Benchmark:
    benchmarks/hello_flood_bench.py."""
    async with Relay("127.0.0.1", port=0, hello_rate=5.0, hello_burst=10,
                     max_per_address=1000, hello_timeout=10.0) as relay:
        began = time.monotonic()
        held = [await tcp_from(relay.port, "127.0.0.9") for _ in range(60)]
        elapsed = time.monotonic() - began
        await wait_for(lambda: relay.connections + relay.stats.refused == 60)
        admitted = relay.connections
        assert 20 <= admitted <= 20 + 10 * elapsed + 1
        assert relay.stats.refused == relay.stats.rate_limited == 60 - admitted
        closed = await asyncio.gather(*(closed_within(reader, 0.5) for reader, _ in held))
        assert sum(closed) == 60 - admitted  # the refused ones: closed, nothing sent
        other = await ws_from(relay.url, "127.0.0.3")
        await other.send(encode(Hello("consumer", "s")))  # type: ignore[attr-defined]
        assert msgpack.unpackb(await other.recv())["t"] == "welcome"  # type: ignore[attr-defined]
        for _, writer in held:
            writer.transport.abort()
