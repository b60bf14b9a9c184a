"""Backoff that backs off (spec §5.10): a link that dies right after its welcome is a
failed attempt for the reconnect backoff, in the Python clients (Subscriber, Publisher)
and the JavaScript Subscriber. Against a relay that fails every link at once — a message
over the client's 1 MiB limit right after the welcome, or a close — a client reconnects at
most 10 times in 4 s (before: the backoff was reset by every welcome, and the Subscriber
reconnected 1,202 times in 4 s)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest
from brokenrelay import broken_relay
from test_producer_restart import NEEDS_NODE, JsSubscriber

from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.transport import STABLE_S, Backoff

#: how long each client is left against the faulty relay, and the most connects allowed
SPAN_S = 4.0
MAX_CONNECTS = 10


def test_a_link_that_ends_soon_after_its_welcome_is_a_failed_attempt() -> None:
    b = Backoff(initial=0.1, maximum=1.0, jitter=0.0)
    delays = []
    for i in range(6):  # welcomed, then dead 0.1 s later: the delays keep growing
        b.opened(now=10.0 * i)
        delays.append(b.ended(now=10.0 * i + 0.1))
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    b.opened(now=100.0)  # a link that lasted: reconnect at once, the schedule starts again
    assert b.ended(now=100.0 + STABLE_S) == 0.0
    assert b.attempt == 0
    b.opened(now=200.0)
    assert b.ended(now=200.5) == pytest.approx(0.1)
    assert b.ended(now=300.0) == pytest.approx(0.2)  # no link at all: a failure too


async def _subscriber_connects(fault: str) -> tuple[int, list[float]]:
    welcomes: list[float] = []
    async with broken_relay(welcomes=welcomes, **{fault: True}) as url:
        sub = Subscriber(url, "s")
        try:
            await sub.connect()

            async def read() -> None:
                with contextlib.suppress(Exception):
                    async for _ in sub:
                        pass

            reader = asyncio.create_task(read())
            await asyncio.sleep(SPAN_S)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        finally:
            await sub.close()
    return sub.reconnects + 1, welcomes


@pytest.mark.parametrize("fault", ["oversize_after_welcome", "close_after_welcome"])
async def test_subscriber_backs_off_from_a_relay_that_kills_each_link_after_its_welcome(
        fault: str) -> None:
    connects, welcomes = await _subscriber_connects(fault)
    # spec §5.10: each such link is a failure, so the delays grow (0.05, 0.1, 0.2 … s)
    assert 3 <= connects <= MAX_CONNECTS, connects
    assert len(welcomes) <= MAX_CONNECTS
    gaps = [b - a for a, b in itertools.pairwise(welcomes)]
    assert gaps[-1] > 4 * gaps[0]


async def test_publisher_backs_off_from_a_relay_that_closes_each_link_after_its_welcome() -> None:
    welcomes: list[float] = []
    async with broken_relay(welcomes=welcomes, close_after_welcome=True) as url:
        pub = Publisher(url, "s")
        try:
            await pub.connect()
            await asyncio.sleep(SPAN_S)
        finally:
            await pub.close()
    assert 3 <= len(welcomes) <= MAX_CONNECTS, len(welcomes)


@NEEDS_NODE
async def test_js_subscriber_backs_off_from_a_relay_that_closes_each_link_after_its_welcome() -> None:
    welcomes: list[float] = []
    async with broken_relay(welcomes=welcomes, close_after_welcome=True) as url:
        js = JsSubscriber(url, "s", "js")
        try:
            await js.start()
            await asyncio.sleep(SPAN_S)
        finally:
            await js.close()
    subscribed = [s for s in js.status if s.startswith("subscribed")]
    # 250, 500, 1000, 2000 ms: about 5 links in 4 s (a fixed 250 ms delay: 16)
    assert 2 <= len(subscribed) <= 6, js.status
    assert len(welcomes) <= 6
