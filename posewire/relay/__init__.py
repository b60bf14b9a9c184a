"""The posewire relay (``posewire serve``): many producers to many consumers by stream name.

A thin asyncio layer over the sans-I/O :class:`posewire.codec.protocol.Connection` (spec §5.10):
each websocket gets a server-side ``Connection`` that checks the hello (protocol,
registry, auth token) and the message size, and turns every violation into an error
message plus a close code (spec §5.8). What the relay adds (spec §5.7):

* **streams** — a stream is a name; one producer at a time publishes into it and any
  number of consumers subscribe. A second producer is refused while the first answers a
  ping; one that stopped answering (half-open) is replaced by the newcomer. A late joiner
  immediately gets the stream's latest calibration, condition state and *full* frame
  (masked partial frames are merged into one state, re-encoded once, lazily).
* **latest wins, end to end** — a producer's validated bytes go, unchanged, to every
  consumer. A consumer whose socket keeps up gets them at once; one that does not, or
  that has more than ``send_window`` frames in flight beyond the last one its websocket
  acknowledged (a ping answered: it read everything before it), gets them through a
  latest-wins mailbox: an unsent frame is replaced by the newer one and the drop counted.
  Its memory and its lag are bounded; it never slows the producer or the other consumers.
  Frames older than the stream's newest are dropped, never kept as the latest.
* **admission** — ``max_connections`` in all and ``max_per_address`` per client address
  (both kept below the descriptor limit, whose soft value is raised at start), counted
  from accept, before the TLS handshake (which each admitted connection starts itself);
  at most ``ACCEPT_BATCH`` accepts per loop pass; failed accepts and TLS handshakes are
  counted and logged at a bounded rate; a connection whose TLS handshake, WebSocket
  handshake and hello are not done within ``hello_timeout`` is closed, and at the cap
  the oldest such connection makes room for a new one; hellos per address are rate
  limited, and connections per address at accept (twice the hello rate); frames over
  the producer's rate are dropped before they are decoded; rejections are logged at a
  bounded rate.
* **behind a proxy** — with ``proxy_protocol``, connections from ``trusted_proxies``
  start with a PROXY v1/v2 header naming the client, whose address the caps then use; a
  PROXY header from any other address is refused (spec §5.7 rule 12).
* **origin** — a browser (a client that sends ``Origin``) is accepted only from the
  relay's own origin or ``allow_origins``; clients without ``Origin`` are unaffected.
* **TLS and auth** — ``tls_cert``/``tls_key`` serve ``wss://``. Beyond loopback the
  relay needs a token (always, spec §5.7 rule 5) and TLS (unless ``insecure``).
* **liveness** — keepalive pings every ``ping_interval`` s; a client that neither answers
  nor sends anything within ``ping_timeout`` s is closed.

Example (in-process, e.g. from a test)::

    async with Relay("127.0.0.1", port=0) as relay:
        async with Publisher(relay.url, "demo") as pub:
            await pub.send_frame({"h_yaw": 0.25})
        print(relay.stats.frames_in)

A message broker linking relays hooks in with :meth:`Relay.fan_out` (messages from
elsewhere to local consumers) and :attr:`Relay.publish_hooks` (local producers' messages);
``broker=`` (:class:`posewire.relay.cluster.Broker`) also admits producers and consumers
cluster-wide (spec §5.7.1).

The package, by concern: :mod:`.server` (the :class:`Relay`: options, lifecycle, each
connection's protocol loop), :mod:`.admission` (caps, rates, deadlines), :mod:`.origin`
(Origin, loopback, certificate), :mod:`.connection` (accept, PROXY header, TLS),
:mod:`.liveness` (keepalive), :mod:`.fanout` (latest wins, send window),
:mod:`.mailbox`, :mod:`.state` (late-join state), :mod:`.stats` (counters, bounded log).
The sans-I/O protocol rules stay in :mod:`posewire.codec.protocol`.
"""

from .mailbox import Mailbox
from .origin import is_loopback
from .server import Relay
from .stats import ConsumerInfo, RelayStats

__all__ = [
    "ConsumerInfo",
    "Mailbox",
    "Relay",
    "RelayStats",
    "is_loopback",
]
