"""Admission (spec §5.7 rule 8, rule 12): the caps at accept, before any handshake; the
hello deadline; connection and hello rates per address; eviction of hello-less
connections at the cap (those that sent nothing first, then the one whose last bytes
came longest ago); the descriptor limit; failed accepts without tracebacks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from posewire.codec.protocol import TokenBucket

from .stats import LogLimiter, RelayStats

if TYPE_CHECKING:
    from .connection import RelayConnection


log = logging.getLogger("posewire.relay")

#: Descriptors kept free for the listening socket, logs, files (not for clients).
FD_RESERVE = 64
#: Connections accepted per loop pass at most (spec §5.7 rule 8): below the spare
#: descriptors, so a burst never runs the process out of them before refused
#: connections are closed. (The kernel's accept queue stays deep, see Relay.start.)
ACCEPT_BATCH = FD_RESERVE // 2
#: Connections per address (rate and burst) at most this many times the hellos per
#: address: beyond, refused at accept, before any handshake (spec §5.7 rule 8).
ACCEPT_RATE = 2


class AdmissionMixin:
    """The relay's admission control (mixed into :class:`Relay`)."""

    # the relay's state this concern reads and writes (set in Relay.__init__)
    stats: RelayStats
    max_connections: int
    max_per_address: int
    hello_timeout: float
    hello_rate: float
    hello_burst: int
    send_buffer: int | None
    _closing: bool
    _admitted: int
    _per_address: Counter[str]
    _hello_less: Counter[str]
    _silent: dict[str, dict[RelayConnection, None]]
    _progressing: dict[RelayConnection, None]
    _hello_buckets: dict[str, TokenBucket]
    _accept_buckets: dict[str, TokenBucket]
    _proxy_pending: int
    _reject: LogLimiter
    _listening: set[int]
    _previous_handler: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None

    def _fit_descriptor_limit(self) -> None:
        """Raise the soft RLIMIT_NOFILE towards what the caps need; clamp the caps below
        what the process may open (spec §5.8 admission)."""
        try:
            import resource
        except ImportError:  # pragma: no cover - not POSIX
            return
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = self.max_connections + FD_RESERVE
        if soft != resource.RLIM_INFINITY and soft < want:
            new = want if hard == resource.RLIM_INFINITY else min(hard, want)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
                soft = new
        if soft != resource.RLIM_INFINITY and self.max_connections > soft - FD_RESERVE:
            fit = max(1, soft - FD_RESERVE)
            log.warning("max_connections %d lowered to %d (descriptor limit %d)",
                        self.max_connections, fit, soft)
            self.max_connections = fit
        self.max_per_address = min(self.max_per_address, self.max_connections)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler while the relay runs: a failed accept() on one
        of its listening sockets (out of descriptors or memory; asyncio retries a second
        later) is counted and logged at a bounded rate without a traceback (spec §5.7
        rule 8); anything else goes to the previous handler."""
        sock = context.get("socket")
        fileno = sock.fileno() if sock is not None and hasattr(sock, "fileno") else -1
        if (self._listening and fileno in self._listening
                and str(context.get("message", "")).startswith("socket.accept()")):
            self.stats.accept_failed += 1
            exc = context.get("exception")
            self._reject("accept() failed: %s", exc if exc is not None else context["message"])
            return
        if self._previous_handler is not None:
            self._previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    def _admit(self, conn: RelayConnection, transport: asyncio.BaseTransport) -> bool:
        """At accept, before reading (spec §5.7 rule 8): the per-address cap, then the
        connection cap — for a newcomer from an address with no connection awaiting its
        hello, a hello-less connection makes room (:meth:`_victim`); a newcomer from an
        address that has some is refused. False: refuse."""
        # the peer's address, or the client's that a trusted proxy named (spec §5.7 rule 12)
        host = conn.peer_host
        why = ""
        if self._closing:
            why = "shutting down"
        elif self._per_address[host] >= self.max_per_address:
            why = f"{host} has {self.max_per_address} connections (per-address cap)"
        elif not self._take(self._accept_buckets, host, ACCEPT_RATE * self.hello_rate,
                            ACCEPT_RATE * self.hello_burst):
            # spec §5.7 rule 8: connections per address at twice the hello rate, refused
            # here, before the TLS and WebSocket handshakes cost anything (a hello flood
            # from one address costs the relay a bounded amount of CPU)
            self.stats.rate_limited += 1
            why = f"{host} connects faster than {ACCEPT_RATE * self.hello_rate:g}/s"
        elif self._admitted + self._proxy_pending >= self.max_connections:
            if host in self._hello_less:
                why = f"{self.max_connections} connections (cap); {host} has some without hello"
            else:
                victim = self._victim()
                if victim is None:
                    why = f"{self.max_connections} connections (cap)"
                else:
                    self._release(victim)
                    if victim.raw_transport is not None:
                        victim.raw_transport.abort()
                    self.stats.evicted += 1
        if why:
            self.stats.refused += 1
            self._reject("refused a connection from %s: %s", host, why)
            return False
        conn.admitted = True
        self._admitted += 1
        self._per_address[host] += 1
        self._hello_less[host] += 1
        conn.waiting = True
        self._silent.setdefault(host, {})[conn] = None
        # spec §5.7 rule 8: the TLS and WebSocket handshakes must be done by the hello
        # deadline (the hello itself is timed by the handler, which answers decode.state)
        conn.deadline = asyncio.get_running_loop().call_at(
            conn.accepted_at + self.hello_timeout, self._handshake_overdue, conn)
        if self.send_buffer:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        return True

    def _victim(self) -> RelayConnection | None:
        """The hello-less connection that makes room at the cap (spec §5.7 rule 8): one
        that has sent no byte yet — the oldest of the address holding the most of them —
        else the one whose last bytes came longest ago; None when every connection said
        hello. A slow client whose upgrade is arriving outlives a flood of silent ones."""
        if self._silent:
            top = max(self._silent, key=lambda h: len(self._silent[h]))
            return next(iter(self._silent[top]))
        return next(iter(self._progressing), None)

    def _progress(self, conn: RelayConnection) -> None:
        """Bytes arrived on ``conn``, which has not said hello (spec §5.7 rule 8): it is
        evicted after the silent ones, and after those whose bytes came longer ago."""
        if conn.progressed:
            del self._progressing[conn]
        else:
            conn.progressed = True
            silent = self._silent[conn.peer_host]
            del silent[conn]
            if not silent:
                del self._silent[conn.peer_host]
        self._progressing[conn] = None

    def _proxy_pending_ok(self, conn: RelayConnection) -> bool:
        """A trusted proxy's connection before its PROXY header (spec §5.7 rule 12): it
        counts against the connection cap only (the per-address cap applies to the
        client's address, once known). False: refuse."""
        if self._closing or self._admitted + self._proxy_pending >= self.max_connections:
            self.stats.refused += 1
            self._reject("refused a connection from proxy %s: %d connections (cap)",
                         conn.peer_host, self.max_connections)
            return False
        self._proxy_pending += 1
        return True

    def _welcomed(self, conn: RelayConnection) -> None:
        """``conn`` said hello (or is gone): no longer waiting, never evicted."""
        if not conn.waiting:
            return
        conn.waiting = False
        host = conn.peer_host
        if conn.progressed:
            del self._progressing[conn]
        else:
            silent = self._silent[host]
            del silent[conn]
            if not silent:
                del self._silent[host]
        self._hello_less[host] -= 1
        if self._hello_less[host] <= 0:
            del self._hello_less[host]

    def _handshake_overdue(self, conn: RelayConnection) -> None:
        """The hello deadline passed before the handshakes were done (no handler yet)."""
        conn.deadline = None
        if conn.admitted and conn.client is None and conn.raw_transport is not None:
            self.stats.handshake_timeouts += 1
            self._reject("closed a connection from %s: no handshake within %.1f s",
                         conn.peer_host, self.hello_timeout)
            self._release(conn)
            conn.raw_transport.abort()

    def _release(self, conn: RelayConnection) -> None:
        if conn.deadline is not None:
            conn.deadline.cancel()
            conn.deadline = None
        if not conn.admitted:
            return
        conn.admitted = False
        self._admitted -= 1
        self._welcomed(conn)
        host = conn.peer_host
        self._per_address[host] -= 1
        if self._per_address[host] <= 0:
            del self._per_address[host]
            now = asyncio.get_running_loop().time()
            for buckets in (self._hello_buckets, self._accept_buckets):
                bucket = buckets.get(host)
                if bucket is not None and (bucket.last is None or bucket.tokens + (
                        now - bucket.last) * bucket.rate >= bucket.capacity):
                    del buckets[host]  # refilled: forget the address

    def _take(self, buckets: dict[str, TokenBucket], host: str, rate: float,
              burst: float) -> bool:
        """A token of ``host``'s bucket (created full); False when it is empty."""
        bucket = buckets.get(host)
        if bucket is None:
            if len(buckets) >= 4 * self.max_connections:
                # bounded memory under many addresses: forget those with no connection
                for gone in [h for h in buckets if h not in self._per_address]:
                    del buckets[gone]
            bucket = buckets[host] = TokenBucket(rate, burst)
        return bucket.take(asyncio.get_running_loop().time())

    def _hello_allowed(self, host: str) -> bool:
        return self._take(self._hello_buckets, host, self.hello_rate, self.hello_burst)
