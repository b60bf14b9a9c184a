"""``GET /relay-check.json``: why a page cannot reach its relay, asked of the server that
served it (spec §5.8 "Close reason").

A browser page whose relay refuses its origin (HTTP 403 in the opening handshake, spec §5.7
rule 9) sees close 1006 and no reason — the same as when no relay runs. The page server
can tell the two apart: it opens the page's relay itself, sending the page's ``Origin``
and token and a consumer hello, and answers :func:`check_relay`'s verdict. The page then
shows the problem in words with its fix (``js/viewer/problems.mjs``).

Stable codes (``code``): ``ok``; ``relay.origin`` (the relay answered 403: the origin is not
allowed); ``relay.down`` (nothing listens there); ``relay.handshake`` (another HTTP
answer, or not a posewire relay); ``relay.tls`` (the relay's certificate does not verify
from here); ``relay.timeout`` (no answer in time); ``relay.url`` (the page has no relay
URL); or the error code of the relay's refusal of the hello (``decode.auth``, ...), its
close reason in ``detail``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

__all__ = ["CHECK_TIMEOUT_S", "check_relay"]

#: Seconds the check waits for the relay (connect, handshake, welcome).
CHECK_TIMEOUT_S = 2.0


async def _check(url: str, origin: str, stream: str, token: str | None, timeout: float,
                 ca_file: str | None = None) -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
    from websockets.typing import Origin, Subprotocol

    from posewire.codec.protocol import CLOSE_CODES, Connection, Received
    from posewire.codec.wire import SUBPROTOCOL, ErrorMessage, Welcome
    from posewire.transport import client_tls_context

    def verdict(code: str, detail: str) -> dict[str, Any]:
        return {"ok": code == "ok", "code": code, "detail": detail}

    try:
        tls = client_tls_context(url, ca_file if url.startswith("wss://") else None)
        ws = await connect(url, origin=Origin(origin), subprotocols=[Subprotocol(SUBPROTOCOL)], ssl=tls,
                           open_timeout=timeout, compression=None, proxy=None, close_timeout=1.0)
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status == 403:
            return verdict("relay.origin", f"the relay answered HTTP 403 to origin {origin}")
        return verdict("relay.handshake", f"the relay answered HTTP {status}, not a websocket")
    except ssl.SSLCertVerificationError as exc:
        return verdict("relay.tls", f"its TLS certificate does not verify: {exc.verify_message or exc.reason}")
    except (ConnectionRefusedError, socket.gaierror) as exc:
        return verdict("relay.down", "nothing answers there" if isinstance(exc, ConnectionRefusedError)
                       else f"unknown host ({exc.strerror})")
    except TimeoutError:
        return verdict("relay.timeout", f"no answer within {timeout:g} s")
    except (InvalidHandshake, InvalidURI, ssl.SSLError) as exc:
        return verdict("relay.handshake", str(exc))
    except OSError as exc:
        return verdict("relay.down", exc.strerror or str(exc))
    conn = Connection(side="client", role="consumer")
    known = {v: k for k, v in CLOSE_CODES.items()}
    try:
        async with asyncio.timeout(timeout):
            await ws.send(conn.hello(stream, client="posewire-relay-check", token=token))
            while True:
                data = await ws.recv()
                if isinstance(data, str):
                    return verdict("relay.handshake", "the relay sent text, not a posewire message")
                for event in conn.receive_data(data):
                    if isinstance(event, Received) and isinstance(event.message, Welcome):
                        return verdict("ok", "the relay welcomed this page's origin and token")
                    if isinstance(event, Received) and isinstance(event.message, ErrorMessage):
                        err = event.message
                        try:
                            await ws.recv()  # the close that follows carries the reason (spec §5.8)
                        except ConnectionClosed as closed:
                            if closed.rcvd is not None and closed.rcvd.reason:
                                return verdict(err.code, closed.rcvd.reason)
                        return verdict(err.code, f"{err.code}: {err.message}")
    except ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd is not None else None
        reason = exc.rcvd.reason if exc.rcvd is not None else ""
        return verdict(known.get(code or 0, "relay.handshake"), reason or f"the relay closed the link ({code})")
    except TimeoutError:
        return verdict("relay.timeout", f"the relay sent no welcome within {timeout:g} s")
    finally:
        await ws.close()


def check_relay(url: str, *, origin: str, stream: str, token: str | None = None,
                timeout: float = CHECK_TIMEOUT_S, ca_file: str | None = None) -> dict[str, Any]:
    """The verdict on ``url`` for a page of ``origin`` (module docstring): ``{"ok", "code",
    "detail", "relay", "origin"}``; ``ca_file``: what a ``wss://`` relay is verified with
    (default: the system store). Runs its own event loop (call it from a thread)."""
    first = url.split(",")[0].strip()
    out: dict[str, Any]
    if not first:
        out = {"ok": False, "code": "relay.url", "detail": "the page has no relay URL"}
    else:
        out = asyncio.run(_check(first, origin, stream, token, timeout, ca_file))
    return {**out, "relay": first, "origin": origin}
