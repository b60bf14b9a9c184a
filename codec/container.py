"""The posewire recording container (spec §8): the wire messages of a stream, in a file.

A recording holds the messages a producer sends (spec §5: hello, calibration, conditions,
frames), each as the exact msgpack bytes of the wire, with a timestamp, in
length-prefixed records that each carry a CRC32; a footer index (written at close) lets a
reader seek. A file cut mid-write has no index and is still read up to its last whole
record. Sans-I/O: bytes in, records out; nothing here opens a file.

Layout (all integers big-endian; spec §8.2–8.5):

* header, 48 bytes: magic ``89 50 57 52 0d 0a 1a 0a``, format version (u16, 1), flags
  (u16, 0), the registry sha256 (32 bytes), CRC32 of the 44 bytes before it (u32);
* records: payload length ``L`` (u32, at most 2²⁰), kind (u8: 1 message, 2 index),
  ``t_us`` (u64), ``L`` payload bytes, CRC32 of the ``13 + L`` bytes before it (u32);
* at close, one index record, then the 16-byte trailer: ``50 57 52 49`` ("PWRI"), the
  index record's offset (u64), CRC32 of the 12 bytes before it (u32).

Example::

    from posewire.codec import container, wire

    enc = container.RecordingEncoder()
    data = enc.start()
    data += enc.message(0, wire.Hello("producer", "demo"))
    data += enc.message(0, frame)                # a wire.Frame, or its bytes
    data += enc.finish()
    got = container.read(data)                   # Contents: header, records, index, error
    assert got.complete and got.records[1].message == frame
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_right
from dataclasses import dataclass

from .errors import DecodeError, PosewireError, RecordingError, UsageError
from .protocol import check_registry
from .registry import REGISTRY, Registry
from .wire import Calibration, ConditionsMessage, Frame, Hello, Message, decode, encode

__all__ = [
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "KIND_INDEX",
    "KIND_MESSAGE",
    "MAGIC",
    "MAX_PAYLOAD",
    "MEDIA_TYPE",
    "RECORD_OVERHEAD",
    "SEEK_INTERVAL_US",
    "SUFFIX",
    "TRAILER_MAGIC",
    "TRAILER_SIZE",
    "Contents",
    "Header",
    "Index",
    "IndexEntry",
    "Record",
    "RecordingDecoder",
    "RecordingEncoder",
    "is_container",
    "read",
]

#: The first 8 bytes of every recording (spec §8.2): a non-ASCII byte, "PWR", CR LF, ^Z, LF.
MAGIC = b"\x89PWR\r\n\x1a\n"
#: The container format version this module writes and reads (spec §8.2).
FORMAT_VERSION = 1
HEADER_SIZE = 48
#: Bytes a record adds to its payload: length, kind, t_us, CRC32 (spec §8.3).
RECORD_OVERHEAD = 17
#: The largest payload of a record: the largest message a relay may accept (spec §5.3 ``mb``).
MAX_PAYLOAD = 2**20
KIND_MESSAGE = 1
KIND_INDEX = 2
TRAILER_MAGIC = b"PWRI"
TRAILER_SIZE = 16
#: An index entry is written for the first frame and for each frame at least this long
#: after the previous entry's (spec §8.5).
SEEK_INTERVAL_US = 1_000_000
#: File name suffix and media type (spec §8.1; the media type is not IANA-registered).
SUFFIX = ".pwr"
MEDIA_TYPE = "application/vnd.posewire.recording"

_U64 = 2**64
_HEAD = struct.Struct(">8sHH32s")
_REC = struct.Struct(">IBQ")
_CRC = struct.Struct(">I")
_TRAILER = struct.Struct(">4sQ")
_INDEX_HEAD = struct.Struct(">IIQQI")
_ENTRY = struct.Struct(">IQQQQ")
#: Message types a recording carries (spec §8.4): the hello first, then data messages.
_DATA = (Calibration, ConditionsMessage, Frame)


def _crc(data: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def is_container(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file, at least 4) starts like a recording:
    the magic's first four bytes (a file whose line ends were rewritten still starts so,
    and is then refused by :func:`read` as ``recording.not_recording``)."""
    return head[:4] == MAGIC[:4]


@dataclass(frozen=True, slots=True)
class Header:
    """The file header (spec §8.2): format version, flags, the writer's registry sha256."""

    registry_hash: bytes
    version: int = FORMAT_VERSION
    flags: int = 0

    def to_bytes(self) -> bytes:
        head = _HEAD.pack(MAGIC, self.version, self.flags, self.registry_hash)
        return head + _CRC.pack(_crc(head))


@dataclass(frozen=True, slots=True, eq=False)
class Record:
    """One message record: its byte ``offset`` in the file, ``t_us``, the message's exact
    wire bytes (``payload``) and the message they decode to."""

    offset: int
    t_us: int
    payload: bytes
    message: Message

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.offset, self.t_us, self.payload) == (other.offset, other.t_us, other.payload)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """A seek point (spec §8.5): the ``frame`` number (0 = the first frame message) at
    ``offset`` with ``t_us``, and the offsets of the newest calibration record and the
    newest record carrying a condition state at or before it (0: none)."""

    frame: int
    t_us: int
    offset: int
    calibration: int
    conditions: int


@dataclass(frozen=True, slots=True)
class Index:
    """The footer index (spec §8.5): message records and frames before it, the first and
    last message ``t_us``, and the seek points in file order."""

    records: int
    frames: int
    t_first: int
    t_last: int
    entries: tuple[IndexEntry, ...]

    def to_payload(self) -> bytes:
        out = [_INDEX_HEAD.pack(self.records, self.frames, self.t_first, self.t_last, len(self.entries))]
        out += [_ENTRY.pack(e.frame, e.t_us, e.offset, e.calibration, e.conditions) for e in self.entries]
        return b"".join(out)

    def seek(self, t_us: int) -> IndexEntry | None:
        """The last seek point at or before ``t_us`` (None before the first): start
        there, with the calibration and condition records it names (spec §8.5)."""
        i = bisect_right([e.t_us for e in self.entries], t_us)
        return self.entries[i - 1] if i else None


@dataclass(frozen=True, slots=True)
class Contents:
    """What :func:`read` found: the header, every whole message record in file order, the
    index (``None`` when absent), ``error`` — the fault that ended reading
    (``recording.truncated`` for a file cut mid-write; ``None`` for a complete file) — and
    ``end``, the offset just after the last whole record read."""

    header: Header
    records: tuple[Record, ...]
    index: Index | None
    error: PosewireError | None
    end: int

    @property
    def complete(self) -> bool:
        """True when the file was whole: index and trailer present and consistent."""
        return self.error is None

    @property
    def frames(self) -> int:
        return sum(1 for r in self.records if isinstance(r.message, Frame))


def _recording_error(code: str, message: str, path: str) -> RecordingError:
    return RecordingError(code, message, path=path)


def _parse_header(data: bytes | bytearray | memoryview, registry: Registry) -> Header:
    """Spec §8.2, checks in order: length, magic, CRC, version."""
    if len(data) < HEADER_SIZE:
        if bytes(data[: len(MAGIC)]) != MAGIC[: len(data)]:
            raise _recording_error("recording.not_recording", "not a posewire recording (bad magic)", "header")
        raise _recording_error("recording.truncated", f"the file ends inside its header ({len(data)} bytes)",
                               "header")
    magic, version, flags, registry_hash = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise _recording_error("recording.not_recording", "not a posewire recording (bad magic)", "header")
    (crc,) = _CRC.unpack_from(data, HEADER_SIZE - 4)
    if crc != _crc(data[: HEADER_SIZE - 4]):
        raise _recording_error("recording.corrupt", "the header's CRC32 does not match", "header")
    if version != FORMAT_VERSION:
        raise _recording_error("recording.version", f"recording format version {version} is not supported "
                               f"(this reader reads {FORMAT_VERSION})", "header.version")
    del registry  # the header's hash is compared with the hello's (spec §8.4)
    return Header(registry_hash=bytes(registry_hash), version=version, flags=flags)


class RecordingDecoder:
    """Incremental reader (spec §8.6): :meth:`feed` bytes as they come, get the whole
    message records so far; :meth:`close` at the end of the bytes gives the
    :class:`Contents`. The first fault stops reading: the records before it stay.
    Header faults raise :class:`~posewire.codec.errors.RecordingError` at once (nothing
    can be read). ``registry``: the reader's own (spec §5.9.5 applied to the hello)."""

    def __init__(self, *, registry: Registry = REGISTRY) -> None:
        self.registry = registry
        self._buf = bytearray()
        self._pos = 0  # absolute offset of _buf[0]
        self.header: Header | None = None
        self.records: list[Record] = []
        self.index: Index | None = None
        self.error: PosewireError | None = None
        self._index_at = -1
        self._done = False  # trailer read
        self._frames = 0
        self._last_t = 0
        self._cal_at = 0
        self._cond_at = 0
        self.end = 0

    def feed(self, data: bytes | bytearray | memoryview) -> list[Record]:
        """Add bytes; returns the message records completed by them."""
        if self.error is not None:
            return []
        self._buf += data
        if self.header is None:
            if len(self._buf) < HEADER_SIZE:
                if bytes(self._buf[: len(MAGIC)]) != MAGIC[: len(self._buf)]:
                    _parse_header(self._buf, self.registry)  # raises not_recording
                return []
            self.header = _parse_header(self._buf, self.registry)
            self._consume(HEADER_SIZE)
            self.end = HEADER_SIZE
        out: list[Record] = []
        try:
            while self._step(out):
                pass
        except PosewireError as exc:
            self.error = exc
            self._buf.clear()
        return out

    def _consume(self, n: int) -> None:
        del self._buf[:n]
        self._pos += n

    def _fault(self, code: str, message: str, path: str) -> RecordingError:
        return _recording_error(code, message, path)

    def _step(self, out: list[Record]) -> bool:
        """Parse one record (or the trailer) from the buffer; False when more bytes are needed."""
        buf, at = self._buf, self._pos
        if self._done:
            if buf:
                raise self._fault("recording.corrupt", "bytes after the trailer", f"@{at}")
            return False
        if self.index is not None:  # spec §8.5: the trailer follows the index record
            if len(buf) < TRAILER_SIZE:
                return False
            magic, offset = _TRAILER.unpack_from(buf, 0)
            (crc,) = _CRC.unpack_from(buf, 12)
            if magic != TRAILER_MAGIC or crc != _crc(buf[:12]):
                raise self._fault("recording.corrupt", "the trailer's magic or CRC32 does not match", f"@{at}")
            if offset != self._index_at:
                raise self._fault("recording.index", f"the trailer names offset {offset}, the index is at "
                                  f"{self._index_at}", f"@{at}")
            self._consume(TRAILER_SIZE)
            self.end = self._pos
            self._done = True
            return True
        if len(buf) < _REC.size:
            return False
        length, kind, t_us = _REC.unpack_from(buf, 0)
        if length > MAX_PAYLOAD:
            raise self._fault("recording.corrupt", f"a record of {length} bytes (at most {MAX_PAYLOAD})", f"@{at}")
        total = _REC.size + length + 4
        if len(buf) < total:
            return False
        (crc,) = _CRC.unpack_from(buf, total - 4)
        if crc != _crc(memoryview(buf)[: total - 4]):
            raise self._fault("recording.corrupt", "a record's CRC32 does not match", f"@{at}")
        payload = bytes(buf[_REC.size: total - 4])
        if kind == KIND_MESSAGE:
            out.append(self._message(at, t_us, payload))
        elif kind == KIND_INDEX:
            self.index = self._check_index(at, t_us, payload)
            self._index_at = at
        # other kinds: reserved, skipped (spec §8.3)
        self._consume(total)
        self.end = self._pos
        return True

    def _message(self, at: int, t_us: int, payload: bytes) -> Record:
        where = f"records[{len(self.records)}]"
        if t_us < self._last_t:
            raise self._fault("recording.structure", f"t_us {t_us} is before the previous record's "
                              f"{self._last_t}", f"{where}.t_us")
        try:
            msg = decode(payload, max_size=MAX_PAYLOAD, registry=self.registry)
        except DecodeError as exc:
            raise DecodeError(exc.code, exc.message, path=f"{where}.{exc.path}") from None
        if not self.records:
            if not isinstance(msg, Hello) or msg.role != "producer" or msg.token is not None:
                raise self._fault("recording.structure", "the first record is not a producer hello "
                                  "without a token", where)
            assert self.header is not None
            try:
                check_registry(self.registry, msg.registry_version, msg.registry_hash)
            except DecodeError as exc:
                raise self._fault("recording.registry", exc.message, f"{where}.{exc.path}") from None
            if msg.registry_hash != self.header.registry_hash[:8]:
                raise self._fault("recording.registry", "the hello's registry hash is not the header's",
                                  f"{where}.rh")
        elif not isinstance(msg, _DATA):
            raise self._fault("recording.structure", f"a {msg.TYPE!r} message after the hello "
                              "(only cal, cond and f)", where)
        if isinstance(msg, Frame):
            self._frames += 1
            if msg.conditions is not None:
                self._cond_at = at
        elif isinstance(msg, Calibration):
            self._cal_at = at
        elif isinstance(msg, ConditionsMessage):
            self._cond_at = at
        self._last_t = t_us
        rec = Record(at, t_us, payload, msg)
        self.records.append(rec)
        return rec

    def _check_index(self, at: int, t_us: int, payload: bytes) -> Index:
        """Spec §8.5: the index must be exactly the one the records before it give."""
        where = f"@{at}"
        if len(payload) < _INDEX_HEAD.size:
            raise self._fault("recording.index", "the index record is too short", where)
        records, frames, t_first, t_last, n = _INDEX_HEAD.unpack_from(payload, 0)
        if len(payload) != _INDEX_HEAD.size + n * _ENTRY.size:
            raise self._fault("recording.index", "the index's length does not match its entries", where)
        entries = tuple(IndexEntry(*_ENTRY.unpack_from(payload, _INDEX_HEAD.size + i * _ENTRY.size))
                        for i in range(n))
        got = Index(records, frames, t_first, t_last, entries)
        expected = _index_of(self.records)
        if got != expected or t_us != expected.t_last:
            raise self._fault("recording.index", "the index does not match the records before it", where)
        return got

    def close(self) -> Contents:
        """The end of the bytes: the :class:`Contents` (``recording.truncated`` when the
        file ends inside a record or before its trailer)."""
        if self.header is None:
            _parse_header(self._buf, self.registry)  # raises: truncated or not a recording
            raise AssertionError("unreachable")  # pragma: no cover
        if self.error is None and not self._done:
            where = f"@{self._pos}"
            if self._buf:
                self.error = _recording_error("recording.truncated", f"the file ends inside a record "
                                              f"({len(self._buf)} bytes of it)", where)
            else:
                self.error = _recording_error("recording.truncated", "the file ends without its index "
                                              "(cut mid-write)", where)
        return Contents(self.header, tuple(self.records), self.index, self.error, self.end)


def _index_of(records: list[Record] | tuple[Record, ...]) -> Index:
    """The index the spec (§8.5) derives from the message records of a file."""
    entries: list[IndexEntry] = []
    frames = 0
    cal = cond = 0
    last_entry_t: int | None = None
    for rec in records:
        msg = rec.message
        if isinstance(msg, Calibration):
            cal = rec.offset
        elif isinstance(msg, ConditionsMessage):
            cond = rec.offset
        elif isinstance(msg, Frame):
            if msg.conditions is not None:
                cond = rec.offset
            if last_entry_t is None or rec.t_us - last_entry_t >= SEEK_INTERVAL_US:
                entries.append(IndexEntry(frames, rec.t_us, rec.offset, cal, cond))
                last_entry_t = rec.t_us
            frames += 1
    t_first = records[0].t_us if records else 0
    t_last = records[-1].t_us if records else 0
    return Index(len(records), frames, t_first, t_last, tuple(entries))


def read(data: bytes | bytearray | memoryview, *, strict: bool = False,
         registry: Registry = REGISTRY) -> Contents:
    """Read a whole recording (spec §8.6). ``strict``: raise the fault that ended reading
    (a file cut mid-write: ``recording.truncated``); otherwise it is in
    :attr:`Contents.error` and the records before it are returned. Header faults always
    raise. Raises only :class:`~posewire.codec.errors.RecordingError` and, for a record
    whose message does not decode, :class:`~posewire.codec.errors.DecodeError`."""
    dec = RecordingDecoder(registry=registry)
    dec.feed(data)
    got = dec.close()
    if strict and got.error is not None:
        raise got.error
    return got


class RecordingEncoder:
    """Writer (spec §8.7): :meth:`start` gives the header, :meth:`message` one record
    per message (a message object, encoded canonically, or wire bytes, stored exactly
    after they decode), :meth:`finish` the index and trailer. The first message is the
    producer hello (no token); then calibration, conditions and frames; ``t_us``
    never decreases. Misuse raises :class:`~posewire.codec.errors.UsageError`."""

    def __init__(self, *, registry: Registry = REGISTRY, registry_hash: bytes | None = None) -> None:
        self.registry = registry
        self.header = Header(registry_hash=bytes.fromhex(registry.hash) if registry_hash is None
                             else bytes(registry_hash))
        if len(self.header.registry_hash) != 32:
            raise UsageError("usage.shape", "the registry hash is 32 bytes (sha256)", path="registry_hash")
        self.offset = 0
        self.records: list[Record] = []
        self._started = False
        self._finished = False

    @property
    def frames(self) -> int:
        return sum(1 for r in self.records if isinstance(r.message, Frame))

    def start(self) -> bytes:
        """The 48 header bytes (spec §8.2)."""
        if self._started:
            raise UsageError("usage.state", "the recording has started already")
        self._started = True
        data = self.header.to_bytes()
        self.offset = len(data)
        return data

    def message(self, t_us: int, message: Message | bytes) -> bytes:
        """One message record (spec §8.3–8.4)."""
        if not self._started or self._finished:
            raise UsageError("usage.state", "message() needs start() and no finish() yet")
        if isinstance(t_us, bool) or not isinstance(t_us, int) or not 0 <= t_us < _U64:
            raise UsageError("usage.out_of_range", "t_us must be an integer in [0, 2^64)", path="t_us")
        if self.records and t_us < self.records[-1].t_us:
            raise UsageError("usage.out_of_range", f"t_us {t_us} is before the previous record's "
                             f"{self.records[-1].t_us}", path="t_us")
        if isinstance(message, bytes | bytearray | memoryview):
            payload = bytes(message)
            try:
                msg = decode(payload, max_size=MAX_PAYLOAD, registry=self.registry)
            except DecodeError as exc:
                raise UsageError("usage.bad_option", f"the bytes are not a wire message ({exc.code})",
                                 path="message") from None
        else:
            msg = message
            payload = encode(msg, registry=self.registry)
        if len(payload) > MAX_PAYLOAD:
            raise UsageError("usage.out_of_range", f"a message of {len(payload)} bytes (at most {MAX_PAYLOAD})",
                             path="message")
        if not self.records:
            if not isinstance(msg, Hello) or msg.role != "producer":
                raise UsageError("usage.bad_option", "the first record is the producer's hello", path="message")
            if msg.token is not None:
                raise UsageError("usage.bad_option", "a recording never holds an auth token", path="message.token")
            if msg.registry_hash != self.header.registry_hash[:8]:
                raise UsageError("usage.bad_option", "the hello's registry hash is not the header's",
                                 path="message.registry_hash")
        elif not isinstance(msg, _DATA):
            raise UsageError("usage.bad_option", f"after the hello a recording holds cal, cond and f, not "
                             f"{msg.TYPE!r}", path="message")
        head = _REC.pack(len(payload), KIND_MESSAGE, t_us) + payload
        data = head + _CRC.pack(_crc(head))
        self.records.append(Record(self.offset, t_us, payload, msg))
        self.offset += len(data)
        return data

    def finish(self) -> bytes:
        """The index record and the trailer (spec §8.5); the recording is then complete."""
        if not self._started or self._finished:
            raise UsageError("usage.state", "finish() needs start() and is called once")
        if not self.records:
            raise UsageError("usage.state", "a recording holds at least its hello")
        self._finished = True
        index = _index_of(self.records)
        payload = index.to_payload()
        head = _REC.pack(len(payload), KIND_INDEX, index.t_last) + payload
        at = self.offset
        data = head + _CRC.pack(_crc(head))
        trailer = _TRAILER.pack(TRAILER_MAGIC, at)
        data += trailer + _CRC.pack(_crc(trailer))
        self.offset += len(data)
        return data

