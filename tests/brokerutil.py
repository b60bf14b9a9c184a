"""Acting on a NATS broker as a relay would (spec §5.7.1), for the cluster tests: what a
client with a relay's credential — or any client of an open broker — can do."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from nats.aio.client import Client as NatsClient

from posewire.relay.cluster import stream_token


async def claim(nc: NatsClient, stream: str, relay: str, *, prefix: str = "posewire",
                value: bytes | None = None) -> bytes:
    """Spec §5.7.1 rule 2 as a relay named ``relay`` takes ``stream``: its heartbeat,
    then its claim (the same value). Returns the value."""
    js = nc.jetstream(timeout=2)
    key = f"{stream_token(stream)}.{relay}"
    value = value if value is not None else f"forged {relay}".encode()
    await (await js.key_value(f"{prefix}_beat")).put(key, value)
    await (await js.key_value(f"{prefix}_claim")).put(key, value)
    return value


@contextlib.asynccontextmanager
async def holding(nc: NatsClient, stream: str, relay: str, *, ttl: float,
                  prefix: str = "posewire") -> AsyncIterator[str]:
    """``claim``, with the heartbeat renewed every ``ttl / 3`` s while inside; yields the
    subject to publish the stream's messages on as that relay."""
    value = await claim(nc, stream, relay, prefix=prefix)
    beats = await nc.jetstream(timeout=2).key_value(f"{prefix}_beat")
    key = f"{stream_token(stream)}.{relay}"

    async def renew() -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            await beats.put(key, value)

    task = asyncio.create_task(renew())
    try:
        yield f"{prefix}.s.{stream_token(stream)}.{relay}"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
