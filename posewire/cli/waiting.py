"""What a client command waits for, said on stderr (``produce``, ``consume``, ``vmc``).

At start the command says where it connects (``connecting to ws://…, stream 'demo'``);
each failed connect that will be retried says why and when the next try is (``relay
ws://127.0.0.1:8765 refused, retrying in 2 s``, the same reason at most every 5 s); a
connect says ``connected to ws://…``; a consumer that has no frame half a second after
connecting says ``no producer on stream 'demo' yet``. ``--timeout SECONDS`` gives up
when the wait is not over within that time since the start (not connected; for a
consumer, no frame), with one line saying what it waited for, and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, TextIO, TypeVar

if TYPE_CHECKING:
    from posewire.consumers.subscriber import SubscribedFrame, Subscriber

__all__ = ["StatusLines", "WaitTimeoutError", "add_timeout_option", "first_frame", "then", "within"]

T = TypeVar("T")

#: Seconds a consumer waits for its first frame before it says the stream has no producer.
NO_PRODUCER_AFTER = 0.5


class WaitTimeoutError(Exception):
    """``--timeout`` ran out; the message says what the command waited for."""


class StatusLines:
    """Prints ``posewire COMMAND: LINE`` on ``stream`` (stderr); a line with the same
    reason as the previous one (the part before ``, retrying``) is printed again only after
    ``every`` seconds. :attr:`waiting_for` is the latest reason to wait."""

    def __init__(self, command: str, *, stream: TextIO | None = None, every: float = 5.0) -> None:
        self.command = command
        self.stream = stream
        self.every = every
        self.waiting_for = ""
        self._key = ""
        self._at = -1e9

    def start(self, url: str, stream: str) -> None:
        """Say where the client connects (at once, before the first try)."""
        self(f"connecting to {url}, stream {stream!r}")
        self.waiting_for = f"relay {url} did not answer"

    def __call__(self, line: str) -> None:
        key = line.split(", retrying")[0]
        self.waiting_for = key
        now = time.monotonic()
        if key == self._key and now - self._at < self.every:
            return
        self._key, self._at = key, now
        out = self.stream if self.stream is not None else sys.stderr
        print(f"posewire {self.command}: {line}", file=out, flush=True)


def add_timeout_option(p: argparse.ArgumentParser, *, what: str = "connected") -> None:
    """``--timeout SECONDS`` (default: wait forever)."""
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"give up (exit status 1) when not {what} within SECONDS of starting "
                        "(default: wait and retry forever)")


async def within(timeout: float | None, started: float, status: StatusLines, wait: Awaitable[T]) -> T:
    """Await ``wait`` until ``timeout`` seconds after ``started`` (``time.monotonic()``);
    then :class:`WaitTimeoutError` naming what it waited for."""
    if timeout is None:
        return await wait
    left = max(0.0, started + timeout - time.monotonic())
    try:
        async with asyncio.timeout(left):
            return await wait
    except TimeoutError:
        reason = status.waiting_for or "nothing"
        raise WaitTimeoutError(f"gave up after {timeout:g} s: {reason}") from None


async def first_frame(sub: Subscriber, status: StatusLines) -> SubscribedFrame | None:
    """The subscriber's first frame; says ``no producer on stream … yet`` when none has
    come :data:`NO_PRODUCER_AFTER` seconds after connecting."""
    await sub.connect()
    status.waiting_for = f"no producer on stream {sub.stream!r}"
    recv = asyncio.ensure_future(sub.recv())
    try:
        done, _ = await asyncio.wait({recv}, timeout=NO_PRODUCER_AFTER)
        if not done:
            status(f"no producer on stream {sub.stream!r} yet")
        return await recv
    finally:
        recv.cancel()


async def then(first: SubscribedFrame, rest: AsyncIterator[SubscribedFrame]) -> AsyncIterator[SubscribedFrame]:
    """``first``, then the frames of ``rest``."""
    yield first
    async for frame in rest:
        yield frame
