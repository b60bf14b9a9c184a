"""The relay's check of a producer frame from its bytes (spec §5.7 rule 2, §5.2, §5.4).

A frame in the canonical layout (spec §5.2: a map of the keys ``t s ts m v`` in that
order, no ``c``) is validated here without being decoded: the map header, the five keys,
``s`` and ``ts`` as msgpack unsigned integers (within uint32 / uint64), ``m`` and ``v`` as
bin, the mask length (at most 32 bytes), the length of ``v`` against the mask and each
value's code point (``q = −2^(b−1)`` and a negative ``q`` on a unipolar dim are invalid),
and that nothing follows the map. Such a frame is exactly one that
:func:`posewire.codec.wire.decode` accepts; :func:`check_frame` returns ``None`` for any
other message (another key order, another integer or bin form, a ``c``, an error of any
kind), which the relay then decodes in full, so every rejection carries the decoder's
code and path (pinned: ``tests/test_relay_framecheck.py``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from posewire.codec.registry import REGISTRY, Registry
from posewire.codec.wire import DEFAULT_MAX_MESSAGE_BYTES, MAX_MASK_BYTES, UNKNOWN_DIM_BYTES

__all__ = ["RawFrame", "check_frame"]

#: The canonical frame up to the mask's length (spec §5.2): a fixmap of 5 entries, ``t`` =
#: ``"f"``, ``s`` an unsigned integer of at most 32 bits, ``ts`` of at most 64, ``m`` a bin 8.
_HEAD = re.compile(rb"\x85\xa1t\xa1f\xa1s([\x00-\x7f]|\xcc.|\xcd..|\xce....)"
                   rb"\xa2ts([\x00-\x7f]|\xcc.|\xcd..|\xce....|\xcf.{8})\xa1m\xc4", re.DOTALL)
#: ``v`` as a bin 8 / bin 16
_V8 = b"\xa1v\xc4"
_V16 = b"\xa1v\xc5"


class RawFrame:
    """A producer frame that :func:`check_frame` validated from its bytes: what the relay
    needs of it (sequence, time, which dims it carries), its values left encoded. It
    stands where a decoded :class:`~posewire.codec.wire.Frame` would (``TYPE``, ``seq``,
    ``timestamp_us``, ``is_full``, ``conditions``)."""

    __slots__ = ("bits", "is_full", "mask", "seq", "timestamp_us", "values_bytes")
    TYPE: ClassVar[str] = "f"
    #: a frame checked here never carries a condition state (spec §5.5)
    conditions: ClassVar[None] = None

    def __init__(self, seq: int, timestamp_us: int, mask: bytes, bits: int, is_full: bool,
                 values_bytes: bytes) -> None:
        self.seq = seq
        self.timestamp_us = timestamp_us
        self.mask = mask
        #: the known dims present, as an integer (bit i = dim i, registry order)
        self.bits = bits
        self.is_full = is_full
        self.values_bytes = values_bytes

    def __repr__(self) -> str:
        return (f"RawFrame(seq={self.seq}, timestamp_us={self.timestamp_us}, "
                f"dims={self.bits.bit_count()}, full={self.is_full})")


class _MaskCheck:
    """Per mask: the known dims as an integer, the length of ``v``, and the bit masks
    that find an invalid code point in ``v`` read as one big-endian integer (spec §5.4):
    ``top`` and ``low`` select the sign bit and the other bits of every bipolar value (8
    or 16 bits), ``unipolar`` the sign bit of every unipolar value."""

    __slots__ = ("bits", "is_full", "length", "low", "top", "unipolar")

    def __init__(self, mask: bytes, registry: Registry) -> None:
        n = len(registry)
        bits = int.from_bytes(mask, "little")
        known = bits & ((1 << n) - 1)
        unknown = (bits >> n).bit_count()
        lanes: list[tuple[int, bool]] = []  # (bytes, bipolar) per value, in order
        for d in registry.dimensions:
            if known >> d.index & 1:
                lanes.append((d.row.bits // 8, d.row.polarity == "bipolar"))
        # dims of a newer registry: 16-bit by rule, skipped unread (spec §5.9)
        length = sum(w for w, _ in lanes) + UNKNOWN_DIM_BYTES * unknown
        top = low = unipolar = 0
        shift = 8 * length  # bits below the start of the next value
        for width, bipolar in lanes:
            shift -= 8 * width
            sign = 1 << (shift + 8 * width - 1)
            if bipolar:  # q = −2^(b−1) (80 / 80 00) is invalid
                top |= sign
                low |= sign - (1 << shift)
            else:  # no negative q
                unipolar |= sign
        self.bits = known
        self.is_full = known == (1 << n) - 1
        self.length = length
        self.top = top
        self.low = low
        self.unipolar = unipolar


def _bad_values(x: int, check: _MaskCheck) -> int:
    """Non-zero when ``v`` (as the integer ``x``) holds an invalid code point: a unipolar
    value with its sign bit set, or a bipolar value equal to its sign bit alone (its
    other bits are zero exactly when adding all ones to them does not reach the sign
    bit, per value, without a carry into the next one)."""
    low = check.low
    return x & (check.unipolar | (check.top & ~((x & low) + low)))


#: mask → its check, for the registry of this build (and per registry hash, any other)
_CHECKS: dict[bytes, _MaskCheck] = {}
_OTHER: dict[str, dict[bytes, _MaskCheck]] = {}


def _mask_check(checks: dict[bytes, _MaskCheck], mask: bytes, registry: Registry) -> _MaskCheck:
    if len(checks) >= 1024:  # bounded against hostile masks
        checks.clear()
    check = checks[mask] = _MaskCheck(mask, registry)
    return check


def check_frame(data: bytes, *, max_size: int = DEFAULT_MAX_MESSAGE_BYTES,
                registry: Registry = REGISTRY) -> RawFrame | None:
    """The frame ``data`` holds, validated from its bytes, when it is in the canonical
    layout without ``c``; ``None`` for anything else (decode it in full: it may be valid
    in another form, or invalid). Never raises."""
    head = _HEAD.match(data)
    if head is None or len(data) > max_size:
        return None
    s, t = head.groups()
    off = head.end()
    n = data[off] if off < len(data) else MAX_MASK_BYTES + 1
    if n > MAX_MASK_BYTES:
        return None
    off += 1
    mask = data[off:off + n]
    off += n
    tail = data[off:off + 5]
    if tail[:3] == _V8 and len(tail) > 3:
        length, off = tail[3], off + 4
    elif tail[:3] == _V16 and len(tail) == 5:
        length, off = int.from_bytes(tail[3:], "big"), off + 5
    else:
        return None
    if off + length != len(data):
        return None  # truncated, or bytes after the map
    checks = _CHECKS if registry is REGISTRY else _OTHER.setdefault(registry.hash, {})
    check = checks.get(mask) or _mask_check(checks, mask, registry)
    if length != check.length:
        return None
    values = data[off:]
    if _bad_values(int.from_bytes(values, "big"), check):
        return None
    return RawFrame(s[0] if len(s) == 1 else int.from_bytes(s[1:], "big"),
                    t[0] if len(t) == 1 else int.from_bytes(t[1:], "big"),
                    mask, check.bits, check.is_full, values)
