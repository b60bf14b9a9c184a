"""Relays that share streams over NATS (``posewire serve --broker nats://HOST:PORT``, spec §5.7.1).

A :class:`Broker` is one relay's link to a NATS server (the ``nats-py`` client). Three
things travel through it:

* **live messages** — every message of a local producer that the relay accepted
  (calibration, conditions, frames) is published, as the producer's bytes, on the
  relay's own subject of the stream, ``<prefix>.s.<stream>.<relay>`` (the relay's
  :attr:`~posewire.relay.Relay.publish_hooks`; ``<relay>`` is the relay's name, by default
  its NATS user). A relay subscribes to ``<prefix>.s.<stream>.*`` while it has local
  consumers of the stream and hands to its local fan-out
  (:meth:`~posewire.relay.Relay.fan_out`) only what comes on the **holder's** subject
  (spec §5.7.1 rule 2); a message from another relay makes it re-read the holder once
  (rate-limited), so a producer that moved is followed at once and anything else is
  dropped. The NATS connection uses ``no_echo``; NATS keeps the order of one
  connection's messages, which gives the per-stream order of spec §5.7.1. The first
  message after a producer took the stream carries the header ``Posewire-Producer``.
* **late-join state** — the stream's latest calibration, condition state and start
  frame (what a late joiner gets, spec §5.7) in the JetStream key-value bucket
  ``<prefix>_joinstate`` (keys ``<stream>.cal|cond|f.<relay>``), written by the holder:
  one writer, the newest state only, at most every ``state_interval`` seconds and again
  every ``lease_ttl / 3`` s, never in the producer's path. A relay whose first consumer
  of a stream arrives subscribes, finds the holder, then reads the holder's stored state
  once, before that consumer's welcome; the stored start frame is merged *under* frames
  that came live meanwhile (spec §5.7.1 rule 3).
* **one producer per stream** — a claim in the bucket ``<prefix>_claim`` (key
  ``<stream>.<relay>``, written once when the relay takes the stream, deleted when it
  gives it back) and a heartbeat in ``<prefix>_beat`` (same key, renewed every
  ``lease_ttl / 3`` s, expired by the bucket's ``max_age`` = ``lease_ttl``). The
  **holder** is the relay of the oldest claim (lowest stream sequence) whose heartbeat
  is live: a later claim never displaces it, and with one broker user per relay
  (``docs/nats-posewire.conf``) no relay can write another relay's keys. The three
  buckets are created without rollup, purge or message deletion (spec §5.7.1 rule 7);
  a relay refuses to start on such a bucket that allows them.

Faults: the client reconnects to NATS forever (every ``reconnect_wait`` s) and re-sends
its subscriptions; meanwhile the relay serves its own clients, and its producers'
messages for the cluster are dropped and counted, never queued (latest wins). On
reconnect it republishes each local stream's calibration and conditions and rewrites
its state. Stream names (``[A-Za-z0-9._-]``) become subject tokens and keys with ``.``
written as ``=``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import ssl
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import nats
import nats.errors
import nats.js.api
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import Limits
from posewire.codec.wire import Calibration, ConditionsMessage, Frame, Hello, Message, decode

from .origin import is_loopback

__all__ = [
    "PRODUCER_HEADER",
    "STATE_KINDS",
    "Broker",
    "BrokerStats",
    "ClusterHost",
    "stream_token",
]

log = logging.getLogger("posewire.relay.cluster")

#: The late-join state kept in the key-value store, in delivery order (spec §5.7).
STATE_KINDS: tuple[str, ...] = ("cal", "cond", "f")
#: NATS header on the first message of a stream's new producer.
PRODUCER_HEADER = "Posewire-Producer"

_PREFIX_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: a relay name: one subject token and key token (spec §5.7.1)
_RELAY_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: least seconds between two holder look-ups of one stream triggered by broker input
_LOOKUP_INTERVAL = 0.05
#: claims of one stream a holder look-up reads at most (one per relay name)
_MAX_CLAIMS = 32
#: messages kept per relay name and stream while a holder look-up is under way
_PENDING = 32
_PENDING_RELAYS = 8
#: KV operations that mark a key deleted
_KV_DELETED = ("DEL", "PURGE")
#: Errors of the NATS client and of the loop meaning "the broker did not answer".
_BROKER_ERRORS = (nats.errors.Error, TimeoutError, OSError)
#: Messages waiting for the NATS client at most (it takes them at once while connected).
_OUTBOX = 1024


def stream_token(stream: str) -> str:
    """The subject token and key of a stream name (``.`` → ``=``; reversible because
    ``=`` is not allowed in a stream name, spec §5.3)."""
    return stream.replace(".", "=")


_USERINFO_RE = re.compile(r"(?<=://)[^@/\s]*@")
_CREDS_JWT = "-----BEGIN NATS USER JWT-----"
_NKEY_SEED_RE = re.compile(r"SU[A-Z2-7]{56}")


def _redact(text: str) -> str:
    """``nats://user:pass@host`` → ``nats://***@host``."""
    return _USERINFO_RE.sub("***@", text)


def _userinfo(url: str) -> str:
    """The ``user:password`` (or token) part of a broker URL, ``""`` without one."""
    rest = url.partition("://")[2]
    host_part = rest.split("/", 1)[0]
    return host_part.rpartition("@")[0]


def _read_creds(path: str | Path) -> dict[str, Any]:
    """The ``nats.connect`` arguments of a credentials file (see :class:`Broker`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise UsageError("usage.bad_option", f"broker credentials {str(p)!r} are not a "
                         "readable text file", path="broker_creds") from None
    if _CREDS_JWT in text or _NKEY_SEED_RE.fullmatch(text.strip()):
        import importlib.util

        if importlib.util.find_spec("nkeys") is None:  # nats-py signs the nonce with it
            raise UsageError("usage.bad_option", "a NATS .creds or nkey file needs the nkeys "
                             "package (pip install nkeys)", path="broker_creds")
        if _CREDS_JWT in text:
            return {"user_credentials": str(p)}
        return {"nkeys_seed": str(p)}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise UsageError("usage.bad_option", "broker credentials: one line user:password "
                         "(or a token), or a NATS .creds file", path="broker_creds")
    user, sep, password = lines[0].partition(":")
    if not sep:
        return {"token": user}
    if not user or not password:
        raise UsageError("usage.bad_option", "broker credentials: user:password, both "
                         "non-empty", path="broker_creds")
    return {"user": user, "password": password}


def _broker_tls(ca_file: str | Path) -> ssl.SSLContext:
    if not Path(ca_file).is_file():
        raise UsageError("usage.bad_option", f"broker CA file {str(ca_file)!r} is not a "
                         "readable file", path="broker_ca")
    try:
        ctx = ssl.create_default_context(cafile=str(ca_file))
    except ssl.SSLError as exc:
        raise UsageError("usage.bad_option", f"cannot load the broker CA file: {exc.reason}",
                         path="broker_ca") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.hostname_checks_common_name = False  # spec §5.7 rule 10: subjectAltName only
    return ctx


def _kind(msg: Message) -> str | None:
    if isinstance(msg, Frame):
        return "f"
    if isinstance(msg, Calibration):
        return "cal"
    if isinstance(msg, ConditionsMessage):
        return "cond"
    return None


async def _quiet(exc: Exception) -> None:
    """The error callback of a probe connection (its refusal is the expected answer)."""


class ClusterHost(Protocol):
    """What a relay offers its broker (implemented by :class:`posewire.relay.Relay`)."""

    publish_hooks: list[Callable[[str, Message, bytes], None]]
    #: the limits the relay applies to its clients' messages, and to the broker's
    limits: Limits

    def fan_out(self, stream: str, message: Message, data: bytes | None = None) -> bool:
        """A message of another relay's producer, to the local consumers."""

    def late_join_state(self, stream: str) -> list[tuple[str, bytes]]:
        """``[(kind, bytes)]``: what a late joiner of ``stream`` gets now."""

    def restart_sequence(self, stream: str) -> None:
        """A new producer took ``stream``: its sequence numbers start afresh."""

    def merge_stored_frame(self, stream: str, message: Message, data: bytes) -> None:
        """A stored start frame, merged under the live frames already taken."""

    async def evict_producer(self, stream: str, reason: str) -> None:
        """Close the local producer of ``stream``."""


@dataclass
class BrokerStats:
    """Counters of one relay's broker link (part of the relay's status line)."""

    published: int = 0
    publish_dropped: int = 0
    received: int = 0
    received_bad: int = 0
    #: messages from a relay that does not hold their stream (spec §5.7.1 rule 2)
    received_foreign: int = 0
    state_writes: int = 0
    state_errors: int = 0
    leases_refused: int = 0
    leases_lost: int = 0
    disconnects: int = 0
    reconnects: int = 0


class _Lease:
    """A stream this relay holds: its claim and heartbeat key, and what they hold."""

    __slots__ = ("beat_revision", "key", "session", "task", "value")

    def __init__(self, key: str, session: str, value: bytes) -> None:
        self.key = key
        self.session = session
        self.value = value
        self.beat_revision = 0
        self.task: asyncio.Task[None] | None = None


class Broker:
    """One relay's link to NATS (see the module docstring); the relay drives it
    (``Relay(..., broker=Broker("nats://127.0.0.1:4222"))``).

    ``servers``: ``nats://host:port`` (or ``tls://``; several comma-separated or as a
    list; user, password or token in the URL as NATS allows). ``prefix``: subject
    prefix and bucket name stem, so several clusters can share one NATS server.
    ``lease_ttl``: seconds a producer lease lives without renewal (how long a stream
    stays locked after its relay died). ``state_interval``: least seconds between two
    writes of a stream's state. ``request_timeout``: seconds any broker request may take.
    ``reconnect_wait``: seconds between reconnect tries. ``relay_name``: this relay's name
    in the subjects and keys of spec §5.7.1 (``[A-Za-z0-9_-]{1,32}``, unique in the
    cluster); by default its NATS user name (URL or ``user:password`` creds file), and a
    random one when it has none. The reference broker configuration gives each relay a
    user of its own whose name is the relay name, and lets it write only its own
    subjects and keys: that is what keeps a stolen relay credential from blinding the
    streams the other relays hold (``docs/cluster.md``).

    Credentials and TLS (spec §5.7.1 rule 7, ``docs/cluster.md``): ``user:password@`` in
    the URL, or ``creds``, a file holding either a NATS ``.creds`` file (user JWT and
    nkey seed; needs the ``nkeys`` package) or one line ``user:password`` (or a token),
    which keeps the secret off the command line. ``ca_file``: verify the broker's
    certificate with this CA bundle (TLS is then required, whatever the URL's scheme);
    ``tls://`` URLs without it verify against the system store. The host is checked
    against the certificate's subjectAltName only, as for relays (§5.7 rule 10).
    """

    def __init__(self, servers: str | Sequence[str], *, prefix: str = "posewire",
                 lease_ttl: float = 5.0, state_interval: float = 0.1,
                 request_timeout: float = 1.0, reconnect_wait: float = 0.25,
                 creds: str | Path | None = None, ca_file: str | Path | None = None,
                 insecure_broker: bool = False, relay_name: str | None = None) -> None:
        urls = [u.strip() for u in (servers.split(",") if isinstance(servers, str) else servers)]
        if not urls or not all(u.startswith(("nats://", "tls://")) for u in urls):
            raise UsageError("usage.bad_option",
                             "the broker must be nats://HOST:PORT (or tls://…), comma-separated",
                             path="broker")
        self._auth = _read_creds(creds) if creds is not None else {}
        self.servers = urls
        for url in urls:  # spec §5.7.1 rule 7: never an empty password
            user, sep, password = _userinfo(url).partition(":")
            if sep and (not user or not password):
                raise UsageError("usage.bad_option", "the broker URL has an empty user or "
                                 "password (spec §5.7.1 rule 7)", path="broker")
        #: spec §5.7.1 rule 7: a broker without authentication is refused beyond loopback
        #: unless this is set (``--insecure-broker``)
        self.insecure_broker = bool(insecure_broker)
        #: whether the broker asked for credentials (set by :meth:`start`)
        self.authenticated: bool | None = None
        self._tls = _broker_tls(ca_file) if ca_file is not None else None
        if self._tls is not None and not all(u.startswith("tls://") for u in urls):
            raise UsageError("usage.bad_option", "a broker CA file needs tls:// URLs",
                             path="broker_ca")
        if not _PREFIX_RE.fullmatch(prefix):
            raise UsageError("usage.bad_option", "the prefix must match [A-Za-z0-9_-]{1,32}",
                             path="prefix")
        if not 0.5 <= lease_ttl <= 3600:
            raise UsageError("usage.bad_option", "lease_ttl must be in [0.5, 3600] s",
                             path="lease_ttl")
        for name, value in (("state_interval", state_interval),
                            ("request_timeout", request_timeout),
                            ("reconnect_wait", reconnect_wait)):
            if not 0 < value <= 60:
                raise UsageError("usage.bad_option", f"{name} must be in (0, 60] s", path=name)
        self.prefix = prefix
        self.lease_ttl = float(lease_ttl)
        self.state_interval = float(state_interval)
        self.request_timeout = float(request_timeout)
        self.reconnect_wait = float(reconnect_wait)
        login = self._user()
        if relay_name is None:
            if login is not None and not _RELAY_NAME_RE.fullmatch(login):
                raise UsageError("usage.bad_option", f"the broker user {login!r} is no relay "
                                 "name ([A-Za-z0-9_-]{1,32}): give one (--broker-name)",
                                 path="broker_name")
            relay_name = login if login is not None else "r" + secrets.token_hex(6)
        if not _RELAY_NAME_RE.fullmatch(relay_name):
            raise UsageError("usage.bad_option", "the relay name must match "
                             "[A-Za-z0-9_-]{1,32}", path="broker_name")
        #: This relay's name in its subjects and keys (spec §5.7.1).
        self.relay_name = relay_name
        #: This run of the relay (in its claims: two runs never take each other's).
        self.relay_id = secrets.token_hex(6)
        self.stats = BrokerStats()
        self._nc: NatsClient | None = None
        self._host: ClusterHost | None = None
        self._js: JetStreamContext | None = None
        self._state_kv: KeyValue | None = None
        self._claim_kv: KeyValue | None = None
        self._beat_kv: KeyValue | None = None
        # the holder of each subscribed stream (relay name; None: no live claim), its
        # look-ups, when the next may start, and messages from other relays meanwhile
        self._holders: dict[str, str | None] = {}
        self._lookups: dict[str, asyncio.Task[None]] = {}
        self._next_lookup: dict[str, float] = {}
        self._pending: dict[str, dict[str, deque[Msg]]] = {}
        # consumers: subscriptions, local consumers per stream, kinds seen live
        self._subs: dict[str, Subscription] = {}
        self._users: dict[str, int] = {}
        self._joined: dict[str, str] = {}  # consumer session -> stream
        self._live: dict[str, set[str]] = {}
        #: streams whose live input named a new producer since the subscription
        self._restarted: set[str] = set()
        self._joins: dict[str, asyncio.Task[list[tuple[str, bytes]]]] = {}
        # producers: leases by stream, stream by session, streams whose next message
        # announces a new producer, releases under way
        self._leases: dict[str, _Lease] = {}
        self._lease_of: dict[str, str] = {}
        self._fresh: set[str] = set()
        self._releasing: dict[str, asyncio.Task[None]] = {}
        # outgoing messages and state to write
        self._outbox: deque[tuple[str, bytes, dict[str, str] | None]] = deque()
        self._out_wake = asyncio.Event()
        self._dirty: dict[str, None] = {}  # streams whose state changed (ordered set)
        self._written: dict[str, bytes] = {}  # key -> bytes last written
        self._state_wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._closing = False
        self._last_error: Exception | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def where(self) -> str:
        """The broker URLs without their user information (for messages and logs)."""
        return ", ".join(_redact(u) for u in self.servers)

    @property
    def connected(self) -> bool:
        """True while the link to NATS is up."""
        return self._nc is not None and self._nc.is_connected

    async def start(self, host: ClusterHost) -> None:
        """Connect and make sure both buckets exist; raises :class:`UsageError`
        ``usage.state`` when no server answers."""
        self._host = host
        try:
            # the client retries a first connect forever too: bounded here
            self._nc = await asyncio.wait_for(nats.connect(
                self.servers, name=f"posewire-relay-{self.relay_id}", no_echo=True,
                allow_reconnect=True, max_reconnect_attempts=-1,
                reconnect_time_wait=self.reconnect_wait,
                connect_timeout=max(1, round(self.request_timeout * 2)),
                disconnected_cb=self._on_disconnected, reconnected_cb=self._on_reconnected,
                error_cb=self._on_error, tls=self._tls, **self._auth),
                max(1.0, 3 * self.request_timeout))
            if (any(u.startswith("tls://") for u in self.servers)
                    and not self._nc._server_info.get("tls_required")):
                # nats-py upgrades to TLS only when the server requires it: a tls:// URL
                # must not quietly run in clear text (spec §5.7.1 rule 7). This check comes
                # after the client's CONNECT, so a server that impersonates the broker
                # without TLS has seen the credentials by then: it detects a misconfigured
                # broker, it does not protect against an active attacker on the path
                raise nats.errors.Error("the broker does not require TLS, the URL does")
            await self._check_authentication(host)
            await self._ensure_buckets()
        except UsageError:
            if self._nc is not None:
                with contextlib.suppress(*_BROKER_ERRORS):
                    await self._nc.close()
            raise
        except _BROKER_ERRORS as exc:
            if self._nc is not None:
                with contextlib.suppress(*_BROKER_ERRORS):
                    await self._nc.close()
            # the client retries a failed first connect (say, a certificate that does not
            # verify) until the timeout: its last error says why
            why = self._last_error if isinstance(exc, TimeoutError) and self._last_error else exc
            # never the password of a URL in a message (spec §5.7.1 rule 7)
            raise UsageError("usage.state", f"cannot reach the broker {self.where}: "
                             f"{_redact(str(why)) or type(why).__name__}", path="broker") from None
        host.publish_hooks.append(self._on_local)
        self._loops = [asyncio.create_task(self._send_loop(), name="posewire-broker-send"),
                       asyncio.create_task(self._state_loop(), name="posewire-broker-state")]

    def _user(self) -> str | None:
        """The NATS user this relay logs in as, when it has one (URL or creds file)."""
        if "user" in self._auth:
            return str(self._auth["user"])
        for url in self.servers:
            user, sep, _ = _userinfo(url).partition(":")
            if sep and user:
                return user
        return None

    async def _check_authentication(self, host: ClusterHost) -> None:
        """Spec §5.7.1 rule 7: a broker that lets clients in without credentials (or the
        relay's own user with an empty password) lets anyone act as a relay. The first is
        said loudly at start and refused beyond loopback unless ``insecure_broker``; the
        second is always refused."""
        assert self._nc is not None
        info = self._nc._server_info
        self.authenticated = bool(info.get("auth_required"))
        bind = getattr(host, "host", None)
        if not self.authenticated:
            log.warning("broker: WARNING: the broker %s requires no authentication: anyone who "
                        "reaches it can feed, hold and read every stream of this cluster "
                        "(docs/cluster.md, docs/nats-posewire.conf)", self.where)
            if not self.insecure_broker and not is_loopback(bind):
                raise UsageError("usage.bad_option", f"the broker {self.where} requires no "
                                 "authentication; a relay beyond loopback refuses it (spec "
                                 "§5.7.1 rule 7): give the relays credentials "
                                 "(docs/nats-posewire.conf), or --insecure-broker",
                                 path="insecure_broker")
            return
        user = self._user()
        if user is None:
            return
        url = self._nc.connected_url
        assert url is not None
        probe_url = f"{url.scheme}://{url.hostname}:{url.port}"
        try:  # the relay's own user, with an empty password
            probe = await asyncio.wait_for(nats.connect(
                probe_url, user=user, password="", allow_reconnect=False,
                max_reconnect_attempts=0, connect_timeout=max(1, round(self.request_timeout)),
                tls=self._tls, error_cb=_quiet), max(1.0, 2 * self.request_timeout))
        except (*_BROKER_ERRORS, nats.errors.NoServersError):
            return  # refused: as it should be
        await probe.close()
        raise UsageError("usage.bad_option", f"the broker {self.where} lets the user {user!r} in "
                         "with an empty password (an empty $POSEWIRE_RELAYn_PASS?): anyone could "
                         "act as a relay (spec §5.7.1 rule 7)", path="broker")

    async def close(self) -> None:
        """Give the leases back, stop, close the NATS link (idempotent)."""
        if self._closing:
            return
        self._closing = True
        if self._host is not None and self._on_local in self._host.publish_hooks:
            self._host.publish_hooks.remove(self._on_local)
        for stream, lease in list(self._leases.items()):
            self._release(stream, lease)
        if self._tasks:  # releases and unsubscribes under way
            await asyncio.wait(list(self._tasks), timeout=self.request_timeout)
        tasks = [*self._loops, *self._tasks, *self._joins.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._nc is not None:
            with contextlib.suppress(*_BROKER_ERRORS):
                await self._nc.close()

    @property
    def buckets(self) -> tuple[str, str, str]:
        """The key-value buckets of spec §5.7.1: claims, heartbeats, late-join state."""
        return (f"{self.prefix}_claim", f"{self.prefix}_beat", f"{self.prefix}_joinstate")

    async def _ensure_buckets(self) -> None:
        assert self._nc is not None
        js = self._js = self._nc.jetstream(timeout=self.request_timeout)
        claim, beat, state = self.buckets
        self._claim_kv = await self._bucket(js, claim, ttl=None)
        self._beat_kv = await self._bucket(js, beat, ttl=self.lease_ttl)
        self._state_kv = await self._bucket(js, state, ttl=None)

    @staticmethod
    async def _bucket(js: JetStreamContext, name: str, ttl: float | None) -> KeyValue:
        """Spec §5.7.1 rule 7: a bucket whose stream refuses rollup headers, purges and
        message deletion (a key is removed only by a delete marker on its own subject,
        which the broker's permissions give to its owner alone); an existing one that
        allows any of them is refused."""
        stream = f"KV_{name}"
        config = nats.js.api.StreamConfig(
            name=stream, subjects=[f"$KV.{name}.>"], allow_direct=True,
            allow_rollup_hdrs=False, deny_delete=True, deny_purge=True,
            discard=nats.js.api.DiscardPolicy.NEW, max_msgs_per_subject=1, max_age=ttl,
            duplicate_window=min(120.0, ttl) if ttl else 120.0, max_consumers=-1, max_msgs=-1)
        try:
            info = await js.stream_info(stream)
        except nats.js.errors.NotFoundError:
            try:  # relays may race to create it: the same config is accepted twice
                info = await js.add_stream(config)
            except nats.js.errors.BadRequestError:
                info = await js.stream_info(stream)
        got = info.config
        if got.allow_rollup_hdrs or not got.deny_purge or not got.deny_delete:
            raise UsageError("usage.state", f"the broker bucket {name!r} allows rollup, purge "
                             "or message deletion, which lets one relay credential erase "
                             "the others' keys (spec §5.7.1 rule 7): delete it (nats kv rm "
                             f"{name}) and let the relays create it", path="broker")
        if ttl and (got.max_age or 0) != ttl:
            raise UsageError("usage.state", f"the broker bucket {name!r} expires keys after "
                             f"{got.max_age} s, the relays' lease is {ttl} s: give every "
                             "relay the same lease, or delete the bucket", path="broker")
        return await js.key_value(name)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _on_disconnected(self) -> None:
        if self._closing:
            return
        self.stats.disconnects += 1
        log.warning("broker: disconnected from NATS; serving local clients only")

    async def _on_reconnected(self) -> None:
        # the client has re-sent the subscriptions; the server may have lost its store
        self.stats.reconnects += 1
        log.warning("broker: reconnected to NATS")
        self._spawn(self._resume(), "posewire-broker-resume")

    async def _resume(self) -> None:
        try:
            await self._ensure_buckets()
        except UsageError as exc:  # the store was replaced by one that allows rollup
            log.error("broker: %s", exc)
        except _BROKER_ERRORS:
            pass
        if self._host is None:
            return
        for stream in list(self._leases):
            for kind, data in self._host.late_join_state(stream):
                if kind != "f":  # stateful messages the others may have missed
                    self._queue(stream, data)
            self._written = {k: v for k, v in self._written.items()
                             if not k.startswith(stream_token(stream) + ".")}
            self._mark(stream)

    async def _on_error(self, exc: Exception) -> None:
        self._last_error = exc
        log.debug("broker: %s", _redact(str(exc)))

    def status(self) -> str:
        """Status-line fields (appended to the relay's)."""
        st = self.stats
        return (f" broker={'up' if self.connected else 'down'} cluster_out={st.published}"
                f" cluster_in={st.received} cluster_dropped={st.publish_dropped}"
                f" leases={len(self._leases)}")

    # ------------------------------------------------------------ the relay's hooks

    async def admit(self, session: str, hello: Hello) -> bool:
        """Called by the relay before it welcomes a client. A producer takes the
        stream's cluster-wide lease (False: another relay holds it, or the broker does
        not answer: one producer per stream is kept over availability). A consumer
        subscribes the relay to the stream (its first one: the stored state is loaded
        into the relay first). True when the client may be welcomed."""
        if hello.role == "producer":
            return await self._acquire(hello.stream, session)
        self._joined[session] = hello.stream
        await self._join(hello.stream)
        return True

    def detach(self, session: str) -> None:
        """Called by the relay when a client is gone (admitted or not)."""
        held = self._lease_of.pop(session, None)
        if held is not None:
            lease = self._leases.get(held)
            if lease is not None and lease.session == session:
                self._release(held, lease)
        joined = self._joined.pop(session, None)
        if joined is not None:
            self._leave(joined)

    # ------------------------------------------------------------ live messages

    def _subject(self, stream: str, relay: str) -> str:
        """Spec §5.7.1 rule 1: the subject of ``relay``'s messages of ``stream``."""
        return f"{self.prefix}.s.{stream_token(stream)}.{relay}"

    def _on_local(self, stream: str, msg: Message, data: bytes) -> None:
        """A local producer's accepted message: publish it, note the state changed."""
        self._queue(stream, data)
        self._mark(stream)

    def _queue(self, stream: str, data: bytes) -> None:
        if not self.connected:
            self.stats.publish_dropped += 1  # latest wins: never queued for later
            return
        headers = None
        if stream in self._fresh:
            self._fresh.discard(stream)
            lease = self._leases.get(stream)
            headers = {PRODUCER_HEADER: f"{self.relay_id} {lease.session if lease else ''}"}
        if len(self._outbox) >= _OUTBOX:
            self._outbox.popleft()
            self.stats.publish_dropped += 1
        self._outbox.append((self._subject(stream, self.relay_name), data, headers))
        self._out_wake.set()

    async def _send_loop(self) -> None:
        """Hand the outbox to the NATS client in order (it buffers and flushes)."""
        while True:
            await self._out_wake.wait()
            self._out_wake.clear()
            nc = self._nc
            assert nc is not None
            while self._outbox:
                subject, data, headers = self._outbox.popleft()
                try:
                    await nc.publish(subject, data, headers=headers)
                    self.stats.published += 1
                except _BROKER_ERRORS:
                    self.stats.publish_dropped += 1

    async def _on_remote(self, stream: str, msg: Msg) -> None:
        self.stats.received += 1
        host = self._host
        if host is None or stream not in self._subs:
            return  # no local consumer left
        relay = msg.subject.rpartition(".")[2]
        if stream in self._holders and self._holders[stream] == relay:
            self._take(stream, msg, host)
            return
        # spec §5.7.1 rule 2: only the holder's subject feeds the consumers; another
        # relay's message may mean the producer moved there: the holder is read again
        # (at most every _LOOKUP_INTERVAL s), and the message kept until then
        pending = self._pending.setdefault(stream, {})
        kept = pending.get(relay)
        if kept is None:
            if len(pending) >= _PENDING_RELAYS:
                self.stats.received_foreign += 1
                return
            kept = pending[relay] = deque(maxlen=_PENDING)
        if len(kept) == kept.maxlen:
            self.stats.received_foreign += 1
        kept.append(msg)
        self._lookup(stream)

    def _take(self, stream: str, msg: Msg, host: ClusterHost, *, new_holder: bool = False) -> None:
        """A message on the holder's subject: checked (rule 6), then fanned out."""
        try:
            # spec §5.7.1 rule 6: checked like a client's message, with the relay's limit
            message = decode(msg.data, max_size=host.limits.max_message_bytes)
        except DecodeError:
            self.stats.received_bad += 1
            return
        kind = _kind(message)
        if kind is None:
            self.stats.received_bad += 1
            return
        if new_holder or (msg.headers and PRODUCER_HEADER in msg.headers):
            host.restart_sequence(stream)  # a new producer numbers from its own start
            self._restarted.add(stream)
        self._live.setdefault(stream, set()).add(kind)
        host.fan_out(stream, message, msg.data)

    def _lookup(self, stream: str) -> asyncio.Task[None]:
        """The stream's holder look-up under way, or a new one."""
        task = self._lookups.get(stream)
        if task is None or task.done():
            task = self._lookups[stream] = self._spawn(self._refresh_holder(stream),
                                                       f"posewire-holder-{stream}")
        return task

    async def _refresh_holder(self, stream: str) -> None:
        loop = asyncio.get_running_loop()
        wait = self._next_lookup.get(stream, 0.0) - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            found = await self._find_holder(stream)
        except _BROKER_ERRORS:
            self._next_lookup[stream] = loop.time() + _LOOKUP_INTERVAL
            dropped = self._pending.pop(stream, {})
            self.stats.received_foreign += sum(len(q) for q in dropped.values())
            return
        holder = found[0] if found is not None else None
        before = self._holders.get(stream)
        known = stream in self._holders
        if stream not in self._subs:
            return  # the last consumer left meanwhile
        self._holders[stream] = holder
        pending = self._pending.pop(stream, {})
        host = self._host
        for relay, kept in pending.items():
            if relay != holder or host is None:
                # input from a relay that holds nothing: the next look-up it can cause
                # waits (a flood of it costs the broker a request every interval)
                self._next_lookup[stream] = loop.time() + _LOOKUP_INTERVAL
                self.stats.received_foreign += len(kept)
                continue
            # a holder other than the one known before (or than none) is a new producer
            # (rule 4); the look-up of a join knows none yet
            first = known and before != holder
            for msg in kept:
                self._take(stream, msg, host, new_holder=first)
                first = False

    async def _find_holder(self, stream: str) -> tuple[str, bytes] | None:
        """Spec §5.7.1 rule 2: ``(relay, claim)`` of the oldest claim on ``stream`` whose
        heartbeat is live and holds the same value, or None."""
        js, beats = self._js, self._beat_kv
        if js is None or beats is None:
            raise nats.errors.ConnectionReconnectingError
        claim_bucket = self.buckets[0]
        token = stream_token(stream)
        subject = f"$KV.{claim_bucket}.{token}.*"
        seq = 1
        for _ in range(_MAX_CLAIMS):
            try:
                msg = await asyncio.wait_for(js.get_msg(f"KV_{claim_bucket}", seq=seq,
                                                        subject=subject, next=True),
                                             self.request_timeout)
            except nats.js.errors.NotFoundError:
                return None
            if msg.seq is None:
                return None
            seq = msg.seq + 1
            headers = msg.headers or {}
            if headers.get("KV-Operation") in _KV_DELETED or not msg.data:
                continue
            relay = (msg.subject or "").rpartition(".")[2]
            try:
                beat = await asyncio.wait_for(beats.get(f"{token}.{relay}"), self.request_timeout)
            except nats.js.errors.KeyNotFoundError:
                continue  # a claim whose relay stopped renewing it: not the holder
            if beat.value == msg.data:
                return relay, msg.data
        return None

    async def _join(self, stream: str) -> None:
        self._users[stream] = self._users.get(stream, 0) + 1
        task = self._joins.get(stream)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = self._joins[stream] = asyncio.create_task(self._subscribe(stream),
                                                             name=f"posewire-join-{stream}")
            first = True
        else:
            first = False
        try:
            stored = await asyncio.wait_for(asyncio.shield(task), self.request_timeout)
        except _BROKER_ERRORS:
            return  # served without the stored state; subscribed on reconnect
        if first and self._host is not None:
            seen = self._live.get(stream, set())
            restarted = stream in self._restarted
            for kind, data in stored:
                if kind in seen and (kind != "f" or restarted):
                    continue  # newer, live (a new producer's frames are not mixed)
                try:
                    message = decode(data, max_size=self._host.limits.max_message_bytes)
                except DecodeError:
                    self.stats.received_bad += 1  # stored state is checked like live input
                    continue
                if kind in seen:
                    # spec §5.7.1 rule 3: the stored start frame goes *under* the live
                    # frames (their s, ts and dims win), so the merged start frame is the
                    # one a single relay gives
                    self._host.merge_stored_frame(stream, message, data)
                else:
                    self._host.fan_out(stream, message, data)

    async def _subscribe(self, stream: str) -> list[tuple[str, bytes]]:
        """Subscribe (flushed: live from now on), then read the stored state."""
        nc = self._nc
        assert nc is not None
        if stream not in self._subs:
            async def on_msg(msg: Msg) -> None:
                await self._on_remote(stream, msg)

            self._live.pop(stream, None)
            self._restarted.discard(stream)
            self._subs[stream] = await nc.subscribe(self._subject(stream, "*"), cb=on_msg)
            await nc.flush(max(1, round(self.request_timeout)))
        await self._lookup(stream)  # spec §5.7.1 rule 3: the holder's state only
        out: list[tuple[str, bytes]] = []
        kv = self._state_kv
        holder = self._holders.get(stream)
        if kv is None or holder is None:
            return out
        token = stream_token(stream)
        for kind in STATE_KINDS:
            try:
                entry = await kv.get(f"{token}.{kind}.{holder}")
            except nats.js.errors.KeyNotFoundError:
                continue
            if entry.value:
                out.append((kind, entry.value))
        return out

    def _leave(self, stream: str) -> None:
        users = self._users.get(stream, 0) - 1
        if users > 0:
            self._users[stream] = users
            return
        self._users.pop(stream, None)
        self._joins.pop(stream, None)
        self._holders.pop(stream, None)
        self._pending.pop(stream, None)
        self._next_lookup.pop(stream, None)
        # a look-up under way ends by itself (it finds the stream unsubscribed); a join
        # may still be waiting on it
        self._lookups.pop(stream, None)
        self._live.pop(stream, None)
        self._restarted.discard(stream)
        sub = self._subs.pop(stream, None)
        if sub is not None:
            self._spawn(self._unsubscribe(sub), f"posewire-leave-{stream}")

    @staticmethod
    async def _unsubscribe(sub: Subscription) -> None:
        with contextlib.suppress(*_BROKER_ERRORS):
            await sub.unsubscribe()

    # ------------------------------------------------------------ late-join state

    def _mark(self, stream: str) -> None:
        self._dirty[stream] = None
        self._state_wake.set()

    async def _state_loop(self) -> None:
        """The single writer: the newest state of each changed stream, one request at a
        time, a round at most every ``state_interval``; failures are retried."""
        while True:
            await self._state_wake.wait()
            self._state_wake.clear()
            streams, self._dirty = list(self._dirty), {}
            for stream in streams:
                if self._host is None:
                    break
                for kind, data in self._host.late_join_state(stream):
                    key = f"{stream_token(stream)}.{kind}.{self.relay_name}"
                    if self._written.get(key) == data:
                        continue
                    kv = self._state_kv
                    try:
                        if kv is None or not self.connected:
                            raise nats.errors.ConnectionReconnectingError
                        await kv.put(key, data)
                    except _BROKER_ERRORS:
                        self.stats.state_errors += 1
                        self._mark(stream)  # again, with the newest state then
                        await asyncio.sleep(self.reconnect_wait)
                        break
                    self._written[key] = data
                    self.stats.state_writes += 1
            await asyncio.sleep(self.state_interval)

    # ------------------------------------------------------------ one producer per stream

    async def _acquire(self, stream: str, session: str) -> bool:
        """Spec §5.7.1 rule 2: heartbeat, then claim, then the holder look-up; the stream
        is this relay's when its claim is the oldest live one (else both are removed)."""
        claims, beats = self._claim_kv, self._beat_kv
        if claims is None or beats is None or self._closing:
            return False
        releasing = self._releasing.get(stream)
        if releasing is not None:  # our previous producer's claim is being given back
            with contextlib.suppress(*_BROKER_ERRORS, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(releasing), self.request_timeout)
        key = f"{stream_token(stream)}.{self.relay_name}"
        lease = _Lease(key, session, f"{self.relay_id} {session}".encode())
        try:
            lease.beat_revision = await asyncio.wait_for(beats.put(key, lease.value),
                                                         self.request_timeout)
            await asyncio.wait_for(claims.put(key, lease.value), self.request_timeout)
            found = await self._find_holder(stream)
        except _BROKER_ERRORS:  # no answer: one producer per stream over availability
            found = None
        if found != (self.relay_name, lease.value):
            self.stats.leases_refused += 1
            self._spawn(self._delete_lease(lease), f"posewire-unclaim-{stream}")
            return False
        self._leases[stream] = lease
        self._lease_of[session] = stream
        self._fresh.add(stream)
        lease.task = self._spawn(self._renew(stream, lease), f"posewire-lease-{stream}")
        return True

    async def _renew(self, stream: str, lease: _Lease) -> None:
        """Every T/3: the heartbeat again, a check that the claim is still the holder's
        (a relay cut off for longer than T may have lost it), and the stored state
        rewritten (spec §5.7.1 rule 3)."""
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            claims, beats = self._claim_kv, self._beat_kv
            if claims is None or beats is None or not self.connected:
                continue
            try:
                try:  # revision-checked: fails when the heartbeat expired meanwhile
                    lease.beat_revision = await asyncio.wait_for(
                        beats.update(lease.key, lease.value, last=lease.beat_revision),
                        self.request_timeout)
                    found = await self._find_holder(stream)
                except nats.js.errors.KeyWrongLastSequenceError:
                    # cut off for longer than T: the stream was free meanwhile, and a
                    # relay that claimed it then keeps it; else claim it again (newest)
                    found = await self._find_holder(stream)
                if found is None:  # nobody holds it (our claim was gone): claim it again
                    lease.beat_revision = await asyncio.wait_for(
                        beats.put(lease.key, lease.value), self.request_timeout)
                    await asyncio.wait_for(claims.put(lease.key, lease.value),
                                           self.request_timeout)
                    found = await self._find_holder(stream)
            except _BROKER_ERRORS:
                continue  # the broker is away: keep serving, retry
            if found == (self.relay_name, lease.value):
                self._rewrite(stream)
                continue
            break  # another relay's producer holds the stream now
        self.stats.leases_lost += 1
        if self._leases.get(stream) is lease:
            del self._leases[stream]
        self._lease_of.pop(lease.session, None)
        self._spawn(self._delete_lease(lease), f"posewire-unclaim-{stream}")
        log.warning("broker: the producer lease of %r was taken by another relay", stream)
        if self._host is not None:
            await self._host.evict_producer(stream, "another relay holds this stream's producer")

    def _rewrite(self, stream: str) -> None:
        """Write the stream's whole state again at the next round."""
        prefix = stream_token(stream) + "."
        self._written = {k: v for k, v in self._written.items() if not k.startswith(prefix)}
        self._mark(stream)

    def _release(self, stream: str, lease: _Lease) -> None:
        if self._leases.get(stream) is lease:
            del self._leases[stream]
        self._fresh.discard(stream)
        prefix = stream_token(stream) + "."
        self._written = {k: v for k, v in self._written.items() if not k.startswith(prefix)}
        if lease.task is not None:
            lease.task.cancel()
        task = self._spawn(self._delete_lease(lease), f"posewire-release-{stream}")
        self._releasing[stream] = task
        task.add_done_callback(lambda t: self._releasing.pop(stream, None)
                               if self._releasing.get(stream) is t else None)

    async def _delete_lease(self, lease: _Lease) -> None:
        """Give a claim back: its heartbeat and claim deleted (delete markers on this
        relay's own keys), unless a newer claim of this relay replaced them."""
        if not self.connected:
            return  # the heartbeat expires
        for kv in (self._claim_kv, self._beat_kv):
            if kv is None:
                continue
            with contextlib.suppress(*_BROKER_ERRORS):
                entry = await asyncio.wait_for(kv.get(lease.key), self.request_timeout)
                if entry.value == lease.value and entry.revision:
                    await asyncio.wait_for(kv.delete(lease.key, last=entry.revision),
                                           self.request_timeout)
