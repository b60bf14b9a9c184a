"""The error families of posewire (spec §1.3).

* :class:`UsageError` — the *caller* misused the API (wrong shape, unknown option,
  a value that the caller, not a peer, produced). Raised to the local program only.
* :class:`DecodeError` — *data from a peer* is bad (malformed msgpack, wrong types,
  NaN/inf, out-of-range values, unknown versions, oversized messages). It carries a
  stable ``code`` and a ``path`` naming where in the input the problem is; its
  :meth:`DecodeError.public` form is what a peer may be told — never internal details.
* :class:`RecordingError` — a *recording file* (spec §8) is bad: not a recording, an
  unknown format version, cut mid-write, a CRC32 that does not match, an index that does
  not match its records. Raised to the local reader only (a file has no peer to tell).

Every code is listed once in :data:`ERROR_CODES`; the spec's error table is generated
from it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ERROR_CODES",
    "DecodeError",
    "ErrorCode",
    "PosewireError",
    "RecordingError",
    "UsageError",
]


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One stable error code: its string id, wire number, family and meaning."""

    code: str
    number: int
    family: str  # "usage" | "decode" | "recording"
    meaning: str


_CODES: tuple[ErrorCode, ...] = (
    # caller misuse (spec §1.3)
    ErrorCode("usage.shape", 1001, "usage", "an array has the wrong shape or dtype"),
    ErrorCode("usage.unknown_id", 1002, "usage",
              "an id or enumeration value is not known (dim, condition entry, role, type)"),
    ErrorCode("usage.not_finite", 1003, "usage", "a value is NaN or infinite"),
    ErrorCode("usage.out_of_range", 1004, "usage", "a value is outside its declared range"),
    ErrorCode("usage.zero_norm", 1005, "usage", "a quaternion or direction has zero length"),
    ErrorCode("usage.bad_option", 1006, "usage", "an option or input key is missing, unknown, mistyped or invalid"),
    ErrorCode("usage.calibration", 1007, "usage", "a calibration distance is missing or outside (0, 10] m"),
    ErrorCode("usage.state", 1008, "usage", "the operation is not allowed in the current stream state"),
    ErrorCode("usage.avatar", 1009, "usage",
              "an avatar file is not a VRM 0.x or 1.0 model, lacks a required humanoid bone, or cannot be animated"),
    # live producer (numbers from 1101 on): inputs that are missing on this machine
    ErrorCode("usage.model_missing", 1101, "usage",
              "a model file is not in the cache, or its sha256 does not match the pinned one"),
    ErrorCode("usage.no_source", 1102, "usage", "a camera, video or image source cannot be opened or read"),
    ErrorCode("usage.dependency", 1103, "usage", "an optional dependency (an extra) is not installed"),
    # bad data from a peer (spec §5.8)
    ErrorCode("decode.malformed", 2001, "decode", "the bytes are not a valid msgpack document"),
    ErrorCode("decode.type", 2002, "decode", "a field has the wrong type"),
    ErrorCode("decode.missing_field", 2003, "decode", "a required field is absent"),
    ErrorCode("decode.unknown_type", 2004, "decode", "the message type is not known"),
    ErrorCode("decode.not_finite", 2005, "decode", "a value is NaN or infinite"),
    ErrorCode("decode.out_of_range", 2006, "decode", "a value is outside its declared range"),
    ErrorCode("decode.unknown_id", 2007, "decode",
              "an id or enumeration value is not known (condition entry, role)"),
    ErrorCode("decode.length", 2008, "decode", "a binary field has the wrong length for its mask"),
    ErrorCode("decode.too_large", 2009, "decode", "the message exceeds the size limit"),
    ErrorCode("decode.version", 2010, "decode", "the protocol version is not supported"),
    ErrorCode("decode.registry", 2011, "decode", "the registry version or hash does not match"),
    ErrorCode("decode.auth", 2012, "decode", "the auth token is missing or wrong"),
    ErrorCode("decode.state", 2013, "decode", "the message is not allowed in the current stream state"),
    ErrorCode("decode.rate", 2014, "decode", "the peer sends frames faster than the rate limit"),
    ErrorCode("decode.sequence", 2015, "decode", "a sequence number went backwards"),
    # a recording file (spec §8.8): never sent to a peer, no close code
    ErrorCode("recording.not_recording", 3001, "recording", "the bytes are not a posewire recording (bad magic)"),
    ErrorCode("recording.version", 3002, "recording", "the recording's format version is not supported"),
    ErrorCode("recording.truncated", 3003, "recording",
              "the file ends inside its header, inside a record or before its index (cut mid-write)"),
    ErrorCode("recording.corrupt", 3004, "recording",
              "a CRC32 does not match, a record is longer than allowed, or bytes follow the trailer"),
    ErrorCode("recording.index", 3005, "recording", "the index or trailer does not match the records"),
    ErrorCode("recording.structure", 3006, "recording",
              "the records break the recording's order (hello first, then cal, cond and f; t_us never decreasing)"),
    ErrorCode("recording.registry", 3007, "recording",
              "the recording's registry cannot be read by this reader, or its hello and header disagree"),
)

ERROR_CODES: dict[str, ErrorCode] = {c.code: c for c in _CODES}


class PosewireError(Exception):
    """Base of both families; ``code`` is a key of :data:`ERROR_CODES`."""

    family = ""

    def __init__(self, code: str, message: str, *, path: str = "") -> None:
        if code not in ERROR_CODES or ERROR_CODES[code].family != self.family:
            raise ValueError(f"{code!r} is not a {self.family} error code")
        self.code = code
        self.message = message
        self.path = path
        # plain language first, the stable code last (for scripts): "what (at PATH) (code)"
        where = f" (at {path})" if path and path not in message else ""
        super().__init__(f"{message}{where} ({code})")

    @property
    def number(self) -> int:
        """The stable numeric form of :attr:`code` (used on the wire)."""
        return ERROR_CODES[self.code].number


class UsageError(PosewireError, ValueError):
    """The caller misused the API."""

    family = "usage"


class RecordingError(PosewireError, ValueError):
    """A bad recording file (spec §8.8)."""

    family = "recording"


class DecodeError(PosewireError):
    """Bad data from a peer."""

    family = "decode"

    def public(self) -> dict[str, object]:
        """The form a peer may see: code, number, path and the registry meaning only."""
        return {"code": self.code, "number": self.number, "path": self.path,
                "message": ERROR_CODES[self.code].meaning}
