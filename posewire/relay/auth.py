"""Auth beyond the comparison (spec §5.7 rule 5): how strong a token is, the fresh ones
``posewire token`` prints, and wrong tokens answered slowly, per client address.

A relay beyond loopback refuses at start a token weaker than :data:`MIN_TOKEN_BITS` by
:func:`token_bits`. Guessing is slowed by :class:`AuthThrottle`: once an address has sent
a wrong token, each later hello with a token from it waits for a slot of its own before
its token is checked (right or wrong alike, so a right guess is no faster to learn), the
first 1/5 s after the wrong token, each next twice as far from the one before, up to
:data:`AUTH_BACKOFF_MAX_S` apart, until a right token from it (which waited for its slot
too) starts it afresh; a hello whose slot is more than :data:`AUTH_MAX_WAIT_S` away
is refused at once, unchecked (``decode.rate``). The table of addresses is bounded.
"""

from __future__ import annotations

import ipaddress
import math
import secrets
import string
from dataclasses import dataclass

__all__ = ["AUTH_BACKOFF_BASE_S", "AUTH_BACKOFF_MAX_S", "AUTH_MAX_ADDRESSES", "AUTH_MAX_WAIT_S",
           "MIN_TOKEN_BITS", "AuthThrottle", "new_token", "token_bits"]

#: The least strength of a relay's token beyond loopback (spec §5.7 rule 5).
MIN_TOKEN_BITS = 128
#: Seconds between two token checks of one address after a wrong token (at most 5 a
#: second), doubling with each further wrong token up to AUTH_BACKOFF_MAX_S.
AUTH_BACKOFF_BASE_S = 0.2
AUTH_BACKOFF_MAX_S = 10.0
#: A hello whose check would wait longer than this is refused at once, unchecked.
AUTH_MAX_WAIT_S = 2.0
#: Seconds after its last slot that an address's wrong tokens are forgotten.
AUTH_FORGET_S = 60.0
#: Addresses the throttle remembers at most; beyond, new addresses share one entry.
AUTH_MAX_ADDRESSES = 4096

_HEX = frozenset(string.hexdigits)
#: The alphabets a token is measured against, smallest first (spec §5.7 rule 5).
_ALPHABETS: tuple[tuple[int, frozenset[str]], ...] = (
    (10, frozenset(string.digits)),
    (16, frozenset(string.digits + "abcdef")),
    (16, frozenset(string.digits + "ABCDEF")),
    (26, frozenset(string.ascii_lowercase)),
    (26, frozenset(string.ascii_uppercase)),
    (36, frozenset(string.digits + string.ascii_lowercase)),
    (36, frozenset(string.digits + string.ascii_uppercase)),
    (52, frozenset(string.ascii_letters)),
    (62, frozenset(string.ascii_letters + string.digits)),
    (64, frozenset(string.ascii_letters + string.digits + "+/-_")),
    (95, frozenset(string.printable[:95])),
)


def token_bits(token: str) -> float:
    """The strength of ``token`` in bits as the relay estimates it (spec §5.7 rule 5): its
    length (trailing ``=`` padding left out; in a hexadecimal token, ``-`` and ``:``
    separators too) times log2 of the smallest alphabet that holds all its characters —
    decimal digits (10), hexadecimal digits of one case (16), letters of one case (26),
    those and digits (36), letters (52), letters and digits (62), base64 (64), printable
    ASCII (95; any other character counts as one of 95) — and 0 when it has fewer different characters than half its
    alphabet, at most 8 (``aaaa…`` is not strong however long)."""
    core = token.rstrip("=")
    bare = core.replace("-", "").replace(":", "")
    if bare and set(bare) <= _HEX and (bare == bare.lower() or bare == bare.upper()):
        core = bare
    chars = set(core)
    size = next((n for n, alphabet in _ALPHABETS if chars <= alphabet), 95)
    if len(chars) < min(8, size // 2):
        return 0.0
    return len(core) * math.log2(size)


def new_token(bits: int = 256) -> str:
    """A fresh random token of at least ``bits`` bits (base64url, from :mod:`secrets`),
    whose :func:`token_bits` estimate is at least ``bits`` too."""
    while True:
        token = secrets.token_urlsafe(math.ceil(bits / 8))
        if token_bits(token) >= bits:
            return token


@dataclass
class _Entry:
    failures: int = 0
    #: loop time of the address's next free slot
    next: float = 0.0


class AuthThrottle:
    """Wrong tokens answered slowly, per client address (an IPv6 address by its /64, the
    block one host is usually given): see the module docstring. Memory is bounded by
    ``max_addresses`` entries."""

    def __init__(self, *, base: float = AUTH_BACKOFF_BASE_S, cap: float = AUTH_BACKOFF_MAX_S,
                 max_wait: float = AUTH_MAX_WAIT_S, forget: float = AUTH_FORGET_S,
                 max_addresses: int = AUTH_MAX_ADDRESSES) -> None:
        self.base = base
        self.cap = cap
        self.max_wait = max_wait
        self.forget = forget
        self.max_addresses = max_addresses
        #: address → entry, least recently used first
        self._entries: dict[str, _Entry] = {}
        #: the entry of the addresses that find the table full
        self._overflow = _Entry()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(host: str) -> str:
        """The address ``host`` is counted under: itself, or its /64 for IPv6."""
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return host
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.ipv4_mapped is not None:
                return str(ip.ipv4_mapped)
            return str(ipaddress.IPv6Network((ip, 64), strict=False))
        return host

    def interval(self, failures: int) -> float:
        """Seconds between slots after ``failures`` wrong tokens in a row."""
        return min(self.cap, self.base * 2.0 ** max(0, failures - 1))

    def _find(self, key: str, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self.max_addresses:
                self._trim(now)
            if len(self._entries) >= self.max_addresses:
                entry = self._overflow
        elif now - entry.next > self.forget:
            del self._entries[key]  # forgotten
            return None
        else:  # most recently used last
            del self._entries[key]
            self._entries[key] = entry
        if entry is not None and entry.failures and now - entry.next > self.forget:
            entry.failures = 0
        return entry

    def _trim(self, now: float) -> None:
        """Forget the least recently used entries whose wrong tokens are forgotten."""
        for key in list(self._entries):
            if now - self._entries[key].next <= self.forget:
                break
            del self._entries[key]

    def slot(self, host: str, now: float) -> float | None:
        """Seconds the hello of ``host`` (at loop time ``now``) waits before its token is
        checked: 0 at once, None refused unchecked (it would wait over ``max_wait``)."""
        entry = self._find(self.key(host), now)
        if entry is None or not entry.failures:
            return 0.0
        at = max(now, entry.next)
        if at - now > self.max_wait:
            return None
        # each check it waits for counts as a wrong token (it is, but for a right guess):
        # so the slots of hellos sent at once spread out as far as those of hellos in turn
        entry.failures += 1
        entry.next = at + self.interval(entry.failures)
        return at - now

    def succeeded(self, host: str) -> None:
        """``host`` sent the right token (after waiting for its slot, if any): it has the
        token, so its checks are at once again (a shared entry, when the table is full,
        stays as it is)."""
        self._entries.pop(self.key(host), None)

    def failed(self, host: str, now: float) -> None:
        """``host`` sent a wrong token at ``now``: from now on its checks wait for slots
        (a check that waited for its slot was counted by :meth:`slot`)."""
        key = self.key(host)
        entry = self._find(key, now)
        if entry is None:
            entry = self._entries[key] = _Entry()
        if not entry.failures:
            entry.failures = 1
            entry.next = max(entry.next, now + self.interval(1))
