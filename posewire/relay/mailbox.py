"""The latest-wins mailbox of a consumer that does not keep up (spec §5.7 rule 4)."""

from __future__ import annotations

import asyncio
from collections import Counter
from itertools import count
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Latest-wins mailbox (spec §5.7): one slot per message kind + an asyncio.Event.

    :meth:`put` never blocks: a message replaces an unsent one of the same kind (a
    counted drop). :meth:`get` returns the pending message that was put first, so the
    order of kinds is kept. At most one message per kind is ever held.
    """

    __slots__ = ("_closed", "_event", "_order", "delivered", "dropped", "slots")

    def __init__(self) -> None:
        #: kind → (order, item): the pending messages (empty: nothing pending)
        self.slots: dict[str, tuple[int, T]] = {}
        self._event = asyncio.Event()
        self._order = count()
        self._closed = False
        #: Messages replaced before they were sent, per kind.
        self.dropped: Counter[str] = Counter()
        #: Messages handed to the sender, per kind.
        self.delivered: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def put(self, kind: str, item: T) -> None:
        """Store ``item`` in the ``kind`` slot, replacing (and counting) an unsent one."""
        if self._closed:
            return
        if self.slots.pop(kind, None) is not None:
            self.dropped[kind] += 1
        self.slots[kind] = (next(self._order), item)
        self._event.set()

    def pending(self, kind: str) -> T | None:
        """The unsent item of ``kind``, if any."""
        slot = self.slots.get(kind)
        return None if slot is None else slot[1]

    def take(self) -> tuple[str, T] | None:
        """The oldest pending ``(kind, item)`` without waiting, or ``None``."""
        if not self.slots:
            return None
        kind = min(self.slots, key=lambda k: self.slots[k][0])
        _, item = self.slots.pop(kind)
        self.delivered[kind] += 1
        return kind, item

    async def wait(self) -> bool:
        """Wait until a message is pending (True) or the mailbox is closed (False)."""
        while not self.slots:
            if self._closed:
                return False
            self._event.clear()
            await self._event.wait()
        return not self._closed

    async def get(self) -> tuple[str, T] | None:
        """Wait for the oldest pending message; ``None`` once closed."""
        while True:
            if self._closed:
                return None
            item = self.take()
            if item is not None:
                return item
            self._event.clear()
            await self._event.wait()

    def close(self) -> None:
        """Discard pending messages and wake the waiting sender (it gets ``None``)."""
        self._closed = True
        self.slots.clear()
        self._event.set()
