"""The wire format (spec §5): msgpack messages of the ``posewire.v1`` subprotocol.

Every message is one binary websocket message holding one msgpack map with short
string keys; key ``"t"`` is the message type, a short string (:data:`TYPE_TAGS`).
:func:`encode` turns a message dataclass into bytes (canonical key order, spec §5.2);
:func:`decode` turns peer bytes back into a message and raises **only**
:class:`~posewire.codec.errors.DecodeError` (stable code + path) on bad input.

Frame values (spec §5.4): each dim is quantized with its registry row's ``bits``
``b ∈ {8, 16}`` as ``q = round_half_even(n · (2^(b−1) − 1))``, written big-endian two's
complement, only for the dims whose bit is set in the mask, in registry order, in one
``bin`` field. ``q = −2^(b−1)`` is invalid, and so is ``q < 0`` on a unipolar dim.
Mask bits at index ``>= N`` (dims of a newer registry, spec §5.9) are 16-bit by rule
and are skipped on decode (counted in :attr:`Frame.unknown_dims`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, ClassVar, Literal, TypeAlias

import msgpack
import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import calibration
from .conditions import Conditions, conditions_from_obj, conditions_to_obj
from .errors import ERROR_CODES, DecodeError, PosewireError, UsageError
from .quaternion import PALM_CLAMP
from .registry import REGISTRY, REGISTRY_VERSION, Registry

__all__ = [
    "BASE_DIMS",
    "DEFAULT_MAX_FPS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_MASK_BYTES",
    "PROTOCOL_VERSION",
    "REGISTRY_HASH8",
    "ROLES",
    "SUBPROTOCOL",
    "TYPE_TAGS",
    "UNKNOWN_DIM_BYTES",
    "Bye",
    "Calibration",
    "ConditionsMessage",
    "ErrorMessage",
    "Frame",
    "Hello",
    "Message",
    "Welcome",
    "decode",
    "dequantize",
    "encode",
    "message_from_json",
    "message_to_json",
    "quantize",
    "registry_hash8",
]

#: Websocket subprotocol name (spec §5.1).
SUBPROTOCOL = "posewire.v1"
#: Protocol version carried in hello/welcome (``"pv"``, spec §5.3).
PROTOCOL_VERSION = 1
#: Default limits a relay announces in its welcome (spec §5.8).
DEFAULT_MAX_MESSAGE_BYTES = 4096
DEFAULT_MAX_FPS = 120
#: Dims of registry 1.0.0; every dim appended later is 16-bit on the wire (spec §5.9).
BASE_DIMS = 89
#: Width in bytes of a mask bit this decoder does not know (spec §5.9).
UNKNOWN_DIM_BYTES = 2
#: Longest accepted mask: 256 dims (spec §5.4).
MAX_MASK_BYTES = 32
#: Hello roles (spec §5.3).
ROLES: tuple[str, ...] = ("producer", "consumer")

_U32 = 2**32
_U64 = 2**64
_STREAM_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_VERSION_RE = re.compile(r"(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})")
_MAX_TEXT = 256


def registry_hash8(registry: Registry = REGISTRY) -> bytes:
    """First 8 bytes of the registry's sha256 (spec §4.9), as sent in hello/welcome."""
    return bytes.fromhex(registry.hash)[:8]


#: ``registry_hash8(REGISTRY)``.
REGISTRY_HASH8 = registry_hash8(REGISTRY)

Family = Literal["usage", "decode"]
_USAGE_OF = {
    "decode.type": "usage.bad_option", "decode.missing_field": "usage.bad_option",
    "decode.not_finite": "usage.not_finite", "decode.out_of_range": "usage.out_of_range",
    "decode.version": "usage.bad_option", "decode.length": "usage.shape",
    "decode.unknown_id": "usage.unknown_id",
}


def _err(family: Family, code: str, message: str, path: str) -> PosewireError:
    if family == "decode":
        return DecodeError(code, message, path=path)
    return UsageError(_USAGE_OF.get(code, "usage.bad_option"), message, path=path)


# ---------------------------------------------------------------- field checks


def _int(v: object, lo: int, hi: int, fam: Family, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(fam, "decode.type", "expected an integer", path)
    if not lo <= v <= hi:
        raise _err(fam, "decode.out_of_range", f"expected an integer in [{lo}, {hi}]", path)
    return v


def _text(v: object, fam: Family, path: str, *, pattern: re.Pattern[str] | None = None,
          max_len: int = _MAX_TEXT) -> str:
    if not isinstance(v, str):
        raise _err(fam, "decode.type", "expected a string", path)
    if len(v) > max_len or (pattern is not None and not pattern.fullmatch(v)):
        raise _err(fam, "decode.out_of_range", "string has the wrong form or length", path)
    return v


def _blob(v: object, fam: Family, path: str) -> bytes:
    if not isinstance(v, bytes):
        raise _err(fam, "decode.type", "expected bin", path)
    return v


def _metres(v: object, fam: Family, path: str) -> float | None:
    # spec §5.6: a positive finite distance in metres, at most 10, or nil
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _err(fam, "decode.type", "expected a number or nil", path)
    x = float(v)
    if not math.isfinite(x):
        raise _err(fam, "decode.not_finite", "distance is not finite", path)
    if not 0.0 < x <= 10.0:
        raise _err(fam, "decode.out_of_range", "distance must be in (0, 10] m", path)
    return x


def _req(obj: Mapping[Any, Any], key: str) -> Any:
    if key not in obj:
        raise DecodeError("decode.missing_field", f"{key!r} is required", path=key)
    return obj[key]


# ---------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Hello:
    """Client → relay, first message (spec §5.3). ``registry_hash``: 8 raw bytes."""

    TYPE: ClassVar[str] = "hello"
    role: str  # "producer" | "consumer"
    stream: str
    client: str = ""
    token: str | None = None
    registry_version: str = REGISTRY_VERSION
    registry_hash: bytes = REGISTRY_HASH8
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class Welcome:
    """Relay → client, answer to an accepted hello (spec §5.3): session id, the relay's
    protocol and registry, and the limits it enforces (bytes per message, frames/s)."""

    TYPE: ClassVar[str] = "welcome"
    session: str
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_fps: int = DEFAULT_MAX_FPS
    registry_version: str = REGISTRY_VERSION
    registry_hash: bytes = REGISTRY_HASH8
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class Calibration(calibration.Calibration):
    """The calibration message (spec §5.6): a :class:`posewire.codec.calibration.Calibration`
    (the producer's reference distances in metres, spec §4.1; ``None`` = unknown) with its
    wire type tag, so it can be passed to :func:`posewire.codec.calibration.units` as it is."""

    TYPE: ClassVar[str] = "cal"

    @classmethod
    def of(cls, cal: calibration.Calibration) -> Calibration:
        """The message carrying ``cal``'s distances (``cal`` itself when it is one)."""
        if isinstance(cal, cls):
            return cal
        return cls(cal.hand_length, cal.torso_length, cal.arm_length, cal.shoulder_width)


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """One pose frame (spec §5.4).

    ``seq``: uint32, +1 per frame, wrapping; ``timestamp_us``: uint64 µs on the
    producer's clock; ``values``: float64 ``(N,)`` normalized, NaN = dim absent (mask bit
    0); ``conditions``: full condition state or ``None`` (not sent in this frame);
    ``unknown_dims``: on decode, how many newer dims were present and skipped.
    """

    TYPE: ClassVar[str] = "f"
    seq: int
    timestamp_us: int
    values: NDArray[np.float64]
    conditions: Conditions | None = None
    unknown_dims: int = 0

    @property
    def mask(self) -> NDArray[np.bool_]:
        """``(N,)`` True where the dim is present."""
        return ~np.isnan(self.values)

    @property
    def is_full(self) -> bool:
        """True when every known dim is present (a late joiner's start frame, §5.7)."""
        return not bool(np.isnan(self.values).any())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return (self.seq == other.seq and self.timestamp_us == other.timestamp_us
                and self.conditions == other.conditions
                and self.unknown_dims == other.unknown_dims
                and np.array_equal(self.values, other.values, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        present = int((~np.isnan(self.values)).sum())
        return (f"Frame(seq={self.seq}, timestamp_us={self.timestamp_us}, "
                f"values=<{present}/{len(self.values)} dims>, conditions={self.conditions!r}, "
                f"unknown_dims={self.unknown_dims})")


@dataclass(frozen=True, slots=True)
class ConditionsMessage:
    """Standalone condition state (spec §5.5): replaces the whole current state."""

    TYPE: ClassVar[str] = "cond"
    conditions: Conditions
    timestamp_us: int = 0


@dataclass(frozen=True, slots=True)
class ErrorMessage:
    """An error report (spec §5.8): public information only."""

    TYPE: ClassVar[str] = "err"
    number: int
    code: str
    path: str = ""
    message: str = ""

    @classmethod
    def from_exception(cls, exc: DecodeError) -> ErrorMessage:
        """The public form of ``exc``: code, number, path, the registry meaning."""
        return cls(exc.number, exc.code, exc.path[:_MAX_TEXT], ERROR_CODES[exc.code].meaning)


@dataclass(frozen=True, slots=True)
class Bye:
    """Orderly goodbye (spec §5.3); the websocket close (1000) follows."""

    TYPE: ClassVar[str] = "bye"
    reason: str = ""


Message: TypeAlias = Hello | Welcome | Calibration | Frame | ConditionsMessage | ErrorMessage | Bye

#: Message type tag (``"t"``) → class (spec §5.2).
TYPE_TAGS: dict[str, type[Any]] = {
    c.TYPE: c for c in (Hello, Welcome, Calibration, Frame, ConditionsMessage, ErrorMessage, Bye)
}


# ---------------------------------------------------------------- quantization (spec §5.4)


@dataclass(frozen=True)
class _MaskLayout:
    idx: NDArray[np.intp]  # known dims present, registry order
    wide: NDArray[np.bool_]  # per idx entry: 16-bit
    start16: NDArray[np.intp]  # byte offsets of 16-bit entries
    start8: NDArray[np.intp]  # byte offsets of 8-bit entries
    scale: NDArray[np.float64]  # per idx entry: 2^(b-1) - 1
    lower: NDArray[np.float64]  # per idx entry: -1 or 0
    qmin: NDArray[np.int64]  # per idx entry: smallest valid q
    known_bytes: int
    unknown: int  # mask bits >= N
    palm_pos: tuple[tuple[int, int, int], ...]  # positions in idx of complete palm triples


class _Layout:
    """Per-registry quantization tables and a bounded cache of mask layouts."""

    def __init__(self, registry: Registry) -> None:
        self.n = len(registry)
        self.ids = registry.ids()
        bits = np.array([d.row.bits for d in registry.dimensions], dtype=np.int64)
        for d in registry.dimensions:
            if d.row.bits not in (8, 16) or (d.index >= BASE_DIMS and d.row.bits != 16):
                raise UsageError("usage.bad_option", f"{d.id}: invalid wire bits {d.row.bits}")
        self.bits = bits
        self.scale = (2.0 ** (bits - 1) - 1.0).astype(np.float64)
        self.width = (bits // 8).astype(np.intp)
        self.qmin = np.array([-(2 ** (d.row.bits - 1) - 1) if d.row.polarity == "bipolar"
                              else 0 for d in registry.dimensions], dtype=np.int64)
        self.lower = np.array([-1.0 if d.row.polarity == "bipolar" else 0.0
                               for d in registry.dimensions])
        self.mask_len = (self.n + 7) // 8
        self.palm = _palm_triples(registry)
        self._cache: dict[bytes, _MaskLayout] = {}

    def for_mask(self, mask: bytes) -> _MaskLayout:
        lay = self._cache.get(mask)
        if lay is None:
            bits = np.unpackbits(np.frombuffer(mask, np.uint8), bitorder="little")
            known = bits[: self.n]
            idx = np.flatnonzero(known).astype(np.intp)
            w = self.width[idx]
            starts = np.cumsum(w) - w
            wide = w == 2
            where = {int(i): k for k, i in enumerate(idx)}
            palm_pos = tuple((where[a], where[b], where[c]) for a, b, c in self.palm.tolist()
                             if a in where and b in where and c in where)
            lay = _MaskLayout(idx, wide, starts[wide], starts[~wide], self.scale[idx],
                              self.lower[idx], self.qmin[idx], int(w.sum()),
                              int(bits[self.n:].sum()), palm_pos)
            if len(self._cache) >= 1024:  # bound memory against hostile masks
                self._cache.clear()
            self._cache[mask] = lay
        return lay


@lru_cache(maxsize=8)
def _layout(registry: Registry) -> _Layout:
    return _Layout(registry)


def _palm_triples(registry: Registry) -> NDArray[np.intp]:
    ids = registry.by_id
    rows = [[ids[f"w_q{a}_{s}"].index for a in "xyz"] for s in "lr"
            if all(f"w_q{a}_{s}" in ids for a in "xyz")]
    return np.array(rows, dtype=np.intp).reshape(-1, 3)


def _length(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """spec §5.4 palm rule: ``sqrt(a·a + b·b + c·c)`` of triples ``(..., 3)``, summed in
    that order (binary64), so that every encoder decides the boundary alike."""
    a, b, c = v[..., 0], v[..., 1], v[..., 2]
    out: NDArray[np.float64] = np.sqrt(a * a + b * b + c * c)
    return out


def _keep_palm_clamp(x: NDArray[np.float64], q: NDArray[np.float64],
                     scale: NDArray[np.float64]) -> NDArray[np.float64]:
    """spec §5.4 palm rule on triples ``x (..., 3)`` with rounded ``q``: a vector part
    with ``|v| ≤ 0.98`` keeps ``|q / s| ≤ 0.98``; where rounding to nearest would push it
    above, the three components are rounded toward zero instead."""
    over = (_length(q / scale) > PALM_CLAMP) & (_length(x) <= PALM_CLAMP)
    if not over.any():
        return q
    return np.where(over[..., None], np.trunc(x * scale), q)


def quantize(values: ArrayLike, *, registry: Registry = REGISTRY) -> NDArray[np.int32]:
    """Quantize a batch ``(..., N)`` of normalized values to wire integers (spec §5.4).

    ``q = round_half_even(n · (2^(b−1) − 1))`` with ``b`` the row's bits, except that a
    palm vector part with ``|v| ≤ 0.98`` is rounded toward zero where rounding to nearest
    would make its length exceed 0.98 (spec §5.4). Values must be finite and in range
    (``usage.not_finite`` / ``usage.out_of_range`` otherwise). Returns int32 ``(..., N)``.
    """
    lay = _layout(registry)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != lay.n:
        raise UsageError("usage.shape", f"expected shape (..., {lay.n}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise UsageError("usage.not_finite", "values must be finite")
    if ((arr < lay.lower) | (arr > 1.0)).any():
        raise UsageError("usage.out_of_range", "values must be within the registry bounds")
    q = np.rint(arr * lay.scale)
    for tri in lay.palm:
        q[..., tri] = _keep_palm_clamp(arr[..., tri], q[..., tri], lay.scale[tri])
    return q.astype(np.int32)


def dequantize(q: ArrayLike, *, registry: Registry = REGISTRY) -> NDArray[np.float64]:
    """Inverse of :func:`quantize`: ``n = q / (2^(b−1) − 1)``, float64 ``(..., N)``.

    The round trip error is at most ``1 / (2 · (2^(b−1) − 1))`` per dim.
    """
    lay = _layout(registry)
    arr = np.asarray(q)
    if arr.ndim == 0 or arr.shape[-1] != lay.n:
        raise UsageError("usage.shape", f"expected shape (..., {lay.n}), got {arr.shape}")
    return arr.astype(np.float64) / lay.scale


def _pack_values(values: NDArray[np.float64], lay: _Layout) -> tuple[bytes, bytes]:
    if values.shape != (lay.n,):
        raise UsageError("usage.shape", f"frame values must have shape ({lay.n},)",
                         path="values")
    present = ~np.isnan(values)
    # spec §5.4: trailing zero mask bytes are not sent (the decoder zero-extends)
    mask = np.packbits(present, bitorder="little").tobytes().rstrip(b"\x00")
    ml = lay.for_mask(mask)
    x = values[ml.idx]
    if not ((x >= ml.lower) & (x <= 1.0)).all():  # also false for +-inf
        code = "usage.out_of_range" if np.isfinite(x).all() else "usage.not_finite"
        raise UsageError(code, "frame values must be within the registry bounds or NaN "
                         "(absent)", path="values")
    q = np.rint(x * ml.scale)
    for a, b, c in ml.palm_pos:  # spec §5.4: a palm triple keeps |v| <= 0.98
        # _keep_palm_clamp in floats (one frame: numpy's per-call cost would triple the
        # encode); the same IEEE operations in the same order, so the same decision
        s = float(ml.scale[a])
        xa, xb, xc = float(x[a]), float(x[b]), float(x[c])
        qa, qb, qc = float(q[a]) / s, float(q[b]) / s, float(q[c]) / s
        if (math.sqrt(qa * qa + qb * qb + qc * qc) > PALM_CLAMP
                and math.sqrt(xa * xa + xb * xb + xc * xc) <= PALM_CLAMP):
            q[a], q[b], q[c] = math.trunc(xa * s), math.trunc(xb * s), math.trunc(xc * s)
    q = q.astype(np.int64)
    out = np.empty(ml.known_bytes, np.uint8)
    q16 = q[ml.wide]
    out[ml.start16] = (q16 >> 8) & 0xFF
    out[ml.start16 + 1] = q16 & 0xFF
    out[ml.start8] = q[~ml.wide] & 0xFF
    return mask, out.tobytes()


def _unpack_values(mask: bytes, data: bytes, lay: _Layout) -> tuple[NDArray[np.float64], int]:
    ml = lay.for_mask(mask)
    if len(data) != ml.known_bytes + UNKNOWN_DIM_BYTES * ml.unknown:
        raise DecodeError("decode.length", "values length does not match the mask", path="v")
    b = np.frombuffer(data, np.uint8)
    q = np.empty(len(ml.idx), np.int64)
    hi = b[ml.start16].astype(np.int64)
    q16 = (hi << 8) | b[ml.start16 + 1]
    q[ml.wide] = np.where(q16 >= 0x8000, q16 - 0x10000, q16)
    q[~ml.wide] = b[ml.start8].view(np.int8)
    if (q < ml.qmin).any():
        bad = int(ml.idx[np.flatnonzero(q < ml.qmin)[0]])
        raise DecodeError("decode.out_of_range", "quantized value out of range",
                          path=f"v.{lay.ids[bad]}")
    values = np.full(lay.n, np.nan)
    values[ml.idx] = q / ml.scale
    return values, ml.unknown


# ---------------------------------------------------------------- encode


def _conditions_wire(c: Conditions) -> dict[str, Any]:
    obj = conditions_to_obj(c)
    if "mouthing" in obj:  # spec §5.5: exact zeros as the integer 0 (1 byte)
        obj["mouthing"] = [0 if s == 0.0 else s for s in obj["mouthing"]]
    return obj


def _check_hash(h: object, fam: Family, path: str) -> bytes:
    b = _blob(h, fam, path)
    if len(b) != 8:
        raise _err(fam, "decode.length", "registry hash must be 8 bytes", path)
    return b


def _protocol_ok(pv: object) -> None:
    # spec §5.3: an encoder writes pv = 1 and nothing else (usage.bad_option)
    if isinstance(pv, bool) or not isinstance(pv, int) or pv != PROTOCOL_VERSION:
        raise UsageError("usage.bad_option", f"protocol must be {PROTOCOL_VERSION}",
                         path="protocol")


def _to_obj(msg: Message, registry: Registry) -> dict[str, Any]:
    u: Family = "usage"
    if isinstance(msg, Frame):
        _int(msg.seq, 0, _U32 - 1, u, "seq")
        _int(msg.timestamp_us, 0, _U64 - 1, u, "timestamp_us")
        mask, vals = _pack_values(np.asarray(msg.values, dtype=np.float64), _layout(registry))
        obj: dict[str, Any] = {"t": "f", "s": msg.seq, "ts": msg.timestamp_us, "m": mask,
                               "v": vals}
        if msg.conditions is not None:
            obj["c"] = _conditions_wire(msg.conditions)
        return obj
    if isinstance(msg, Hello):
        if not isinstance(msg.role, str):
            raise UsageError("usage.bad_option", "role must be a string", path="role")
        if msg.role not in ROLES:  # spec §6.5: one code for an unknown enumeration value
            raise UsageError("usage.unknown_id", "role must be producer or consumer",
                             path="role")
        _text(msg.stream, u, "stream", pattern=_STREAM_RE)
        _text(msg.client, u, "client", max_len=64)
        _text(msg.registry_version, u, "registry_version", pattern=_VERSION_RE)
        _check_hash(msg.registry_hash, u, "registry_hash")
        _protocol_ok(msg.protocol)
        obj = {"t": "hello", "pv": msg.protocol, "ro": msg.role, "s": msg.stream,
               "rv": msg.registry_version, "rh": msg.registry_hash, "cn": msg.client}
        if msg.token is not None:
            obj["tk"] = _text(msg.token, u, "token")
        return obj
    if isinstance(msg, Welcome):
        _text(msg.session, u, "session", max_len=64)
        _int(msg.max_message_bytes, 256, 2**20, u, "max_message_bytes")
        _int(msg.max_fps, 1, 1000, u, "max_fps")
        _text(msg.registry_version, u, "registry_version", pattern=_VERSION_RE)
        _check_hash(msg.registry_hash, u, "registry_hash")
        _protocol_ok(msg.protocol)
        return {"t": "welcome", "pv": msg.protocol, "sid": msg.session,
                "rv": msg.registry_version, "rh": msg.registry_hash,
                "mb": msg.max_message_bytes, "mf": msg.max_fps}
    if isinstance(msg, Calibration):
        cal = [_metres(getattr(msg, k), u, k) for k in
                ("hand_length", "torso_length", "arm_length", "shoulder_width")]
        return {"t": "cal", "hl": cal[0], "tl": cal[1], "al": cal[2], "sw": cal[3]}
    if isinstance(msg, ConditionsMessage):
        _int(msg.timestamp_us, 0, _U64 - 1, u, "timestamp_us")
        if not isinstance(msg.conditions, Conditions):
            raise UsageError("usage.bad_option", "conditions must be Conditions",
                             path="conditions")
        return {"t": "cond", "ts": msg.timestamp_us, "c": _conditions_wire(msg.conditions)}
    if isinstance(msg, ErrorMessage):
        _int(msg.number, 0, 65535, u, "number")
        _text(msg.code, u, "code", max_len=64)
        _text(msg.path, u, "path")
        _text(msg.message, u, "message")
        return {"t": "err", "n": msg.number, "co": msg.code, "pa": msg.path,
                "msg": msg.message}
    if isinstance(msg, Bye):
        return {"t": "bye", "why": _text(msg.reason, u, "reason")}
    raise UsageError("usage.bad_option", f"not a message: {type(msg).__name__}")


def encode(msg: Message, *, registry: Registry = REGISTRY) -> bytes:
    """Encode one message to its canonical msgpack bytes (spec §5.2).

    Keys are written in the order of spec §5.3–5.8; floats as float64; ``bin`` for
    bytes. Caller mistakes (values out of range, bad strings) raise
    :class:`~posewire.codec.errors.UsageError`.
    """
    return msgpack.packb(_to_obj(msg, registry), use_bin_type=True)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- decode


def _version_ok(pv: object) -> int:
    # spec §5.3: pv is an integer (else decode.type); any integer but 1, in or out of
    # any range, is decode.version
    if isinstance(pv, bool) or not isinstance(pv, int):
        raise DecodeError("decode.type", "expected an integer", path="pv")
    v = pv
    if v != PROTOCOL_VERSION:
        raise DecodeError("decode.version", f"protocol version {v} is not supported", path="pv")
    return v


def _from_obj(obj: Mapping[Any, Any], registry: Registry) -> Message:
    d: Family = "decode"
    t = _req(obj, "t")
    if not isinstance(t, str):
        raise DecodeError("decode.type", "message type must be a string", path="t")
    if t == "f":
        seq = _int(_req(obj, "s"), 0, _U32 - 1, d, "s")
        ts = _int(_req(obj, "ts"), 0, _U64 - 1, d, "ts")
        mask = _blob(_req(obj, "m"), d, "m")
        if len(mask) > MAX_MASK_BYTES:
            raise DecodeError("decode.length", "mask longer than 32 bytes", path="m")
        vals = _blob(_req(obj, "v"), d, "v")
        values, unknown = _unpack_values(mask, vals, _layout(registry))
        c = obj.get("c")
        cond = None if c is None else conditions_from_obj(c, error_family=d, path="c")
        return Frame(seq, ts, values, cond, unknown)
    if t == "hello":
        protocol = _version_ok(_req(obj, "pv"))
        role = _text(_req(obj, "ro"), d, "ro")
        if role not in ROLES:
            # spec §5.2: an unknown enumeration value is decode.unknown_id
            raise DecodeError("decode.unknown_id", "role must be producer or consumer",
                              path="ro")
        token = obj.get("tk")
        return Hello(
            role=role,
            stream=_text(_req(obj, "s"), d, "s", pattern=_STREAM_RE),
            client=_text(obj.get("cn", ""), d, "cn", max_len=64),
            token=None if token is None else _text(token, d, "tk"),
            registry_version=_text(_req(obj, "rv"), d, "rv", pattern=_VERSION_RE),
            registry_hash=_check_hash(_req(obj, "rh"), d, "rh"),
            protocol=protocol,
        )
    if t == "welcome":
        protocol = _version_ok(_req(obj, "pv"))
        return Welcome(
            session=_text(_req(obj, "sid"), d, "sid", max_len=64),
            max_message_bytes=_int(_req(obj, "mb"), 256, 2**20, d, "mb"),
            max_fps=_int(_req(obj, "mf"), 1, 1000, d, "mf"),
            registry_version=_text(_req(obj, "rv"), d, "rv", pattern=_VERSION_RE),
            registry_hash=_check_hash(_req(obj, "rh"), d, "rh"),
            protocol=protocol,
        )
    if t == "cal":
        return Calibration(*(_metres(obj.get(k), d, k) for k in ("hl", "tl", "al", "sw")))
    if t == "cond":
        ts = _int(obj.get("ts", 0), 0, _U64 - 1, d, "ts")
        return ConditionsMessage(conditions_from_obj(_req(obj, "c"), error_family=d,
                                                     path="c"), ts)
    if t == "err":
        return ErrorMessage(
            number=_int(_req(obj, "n"), 0, 65535, d, "n"),
            code=_text(_req(obj, "co"), d, "co", max_len=64),
            path=_text(obj.get("pa", ""), d, "pa"),
            message=_text(obj.get("msg", ""), d, "msg"),
        )
    if t == "bye":
        return Bye(_text(obj.get("why", ""), d, "why"))
    raise DecodeError("decode.unknown_type", "unknown message type", path="t")


def _str_key_map(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    # spec §5.2: every map key, at any depth, is a str (a bin key is decode.malformed);
    # a key that occurs twice is read with its last value
    for key, _ in pairs:
        if type(key) is not str:
            raise ValueError("map key is not a str")
    return dict(pairs)


def decode(data: bytes | bytearray | memoryview, *,
           max_size: int = DEFAULT_MAX_MESSAGE_BYTES, registry: Registry = REGISTRY) -> Message:
    """Decode one peer message (spec §5.2). Raises only :class:`~posewire.codec.errors.DecodeError`.

    Checks, in order: size (``decode.too_large``), msgpack validity (``decode.malformed``:
    also trailing bytes, invalid UTF-8), top-level map (``decode.type``, path ``$``),
    then per-field types, ranges and lengths. Unknown keys are ignored (spec §5.9).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DecodeError("decode.type", "a message must be binary", path="$")
    if len(data) > max_size:
        raise DecodeError("decode.too_large", f"message of {len(data)} bytes exceeds "
                          f"{max_size}", path="$")
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True,
                              object_pairs_hook=_str_key_map)
    except Exception as exc:  # any msgpack/UTF-8 failure is bad peer data
        raise DecodeError("decode.malformed", "not a valid msgpack document",
                          path="$") from exc
    if not isinstance(obj, dict):
        raise DecodeError("decode.type", "a message must be a msgpack map", path="$")
    try:
        return _from_obj(obj, registry)
    except DecodeError:
        raise
    except Exception as exc:  # defensive: never leak anything but DecodeError
        raise DecodeError("decode.malformed", "message could not be decoded",
                          path="$") from exc


# ---------------------------------------------------------------- JSON form (spec §6)


def message_to_json(msg: Message, *, registry: Registry = REGISTRY) -> dict[str, Any]:
    """A message as a plain JSON object (conformance files, logs): long field names,
    ``"type"`` = the class's tag, bytes as lowercase hex, frame values as
    ``{dim id: value}`` for the present dims."""
    if isinstance(msg, Frame):
        vals = np.asarray(msg.values, dtype=np.float64)
        out: dict[str, Any] = {
            "type": "f", "seq": msg.seq, "timestamp_us": msg.timestamp_us,
            "values": {d.id: float(vals[d.index]) for d in registry.dimensions
                       if not math.isnan(vals[d.index])},
            "unknown_dims": msg.unknown_dims,
        }
        if msg.conditions is not None:
            out["conditions"] = conditions_to_obj(msg.conditions)
        return out
    if isinstance(msg, ConditionsMessage):
        return {"type": "cond", "timestamp_us": msg.timestamp_us,
                "conditions": conditions_to_obj(msg.conditions)}
    out = {"type": msg.TYPE}
    for f in fields(msg):
        value = getattr(msg, f.name)
        out[f.name] = value.hex() if isinstance(value, bytes) else value
    return out


_HEX8_RE = re.compile(r"[0-9a-f]{16}")
#: JSON-form keys an encoder needs (spec §6.5); the others take the dataclass default.
_JSON_REQUIRED: dict[str, tuple[str, ...]] = {
    "hello": ("role", "stream"), "welcome": ("session",), "bye": (), "cal": (),
    "err": ("number", "code"), "cond": ("conditions",), "f": ("seq", "timestamp_us", "values"),
}


_JSON_INT_KEYS = ("seq", "timestamp_us", "unknown_dims", "protocol", "number",
                  "max_message_bytes", "max_fps")


def _json_number(value: object) -> object:
    """Spec §6.5 rule 1: a number's JSON spelling never matters, only its value, so an
    integral float (``7.0``, ``1e3``) is that integer (JavaScript cannot tell them apart)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: The keys of each message's JSON form in the order of the spec §6.5 table: the order in
#: which their JSON types are checked (step 2 of ``wire.encode``).
_JSON_ORDER: dict[str, tuple[str, ...]] = {
    "hello": ("protocol", "role", "stream", "registry_version", "registry_hash", "client", "token"),
    "welcome": ("protocol", "session", "registry_version", "registry_hash", "max_message_bytes",
                "max_fps"),
    "bye": ("reason",), "err": ("number", "code", "path", "message"),
    "cal": ("hand_length", "torso_length", "arm_length", "shoulder_width"),
    "cond": ("timestamp_us", "conditions"),
    "f": ("seq", "timestamp_us", "values", "conditions", "unknown_dims"),
}


def _json_type_ok(kind: type, name: str, value: object) -> bool:
    """Spec §6.5 wire.encode step 2: the JSON type of one key of a message's JSON form."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    integer = not isinstance(value, bool) and isinstance(value, int)
    if kind is Calibration:
        return value is None or number
    if name in _JSON_INT_KEYS:
        return integer
    if name == "token":
        return value is None or isinstance(value, str)
    if name == "values":
        return isinstance(value, Mapping) and all(
            not isinstance(x, bool) and isinstance(x, int | float) for x in value.values())
    if name == "conditions":  # a frame's may be null (no condition state)
        return isinstance(value, Mapping) or (kind is Frame and value is None)
    return isinstance(value, str)


def message_from_json(obj: Mapping[str, Any], *, registry: Registry = REGISTRY) -> Message:
    """Inverse of :func:`message_to_json`; bad input raises :class:`UsageError` (spec §6.5).

    The checks run in the order of spec §6.5 (``wire.encode``), each over the whole message
    before the next: (1) ``type`` (not a string ``usage.bad_option``, unknown
    ``usage.unknown_id``); (2) unknown keys, missing required keys, then the JSON type of
    every key in the order of the §6.5 table (a boolean is never a number, an integer has no
    fraction; its spelling does not matter) ``usage.bad_option``; (3) a frame value that is
    not finite ``usage.not_finite``; (4) ``protocol`` other than 1 ``usage.bad_option``;
    (5) unknown dim ids, ``role``, then the condition object as a whole by spec §3.4
    (``usage.*`` codes, its own order); (6) ranges, bounds and patterns
    ``usage.out_of_range`` (``registry_hash`` first, then :func:`encode`'s checks).
    """
    if not isinstance(obj, Mapping):
        raise UsageError("usage.bad_option", "a message must be a JSON object", path="$")
    tag = obj.get("type")
    if not isinstance(tag, str):
        raise UsageError("usage.bad_option", "type must be a string", path="type")
    kind = TYPE_TAGS.get(tag)
    if kind is None:
        raise UsageError("usage.unknown_id", f"unknown message type {tag!r}", path="type")
    # step 2: keys, then JSON types (spec §6.5 rule 1: spelling never matters)
    args: dict[str, Any] = {k: _json_number(v) if k in _JSON_INT_KEYS else v
                            for k, v in obj.items() if k != "type"}
    allowed = {f.name for f in fields(kind)}
    for key in args:
        if key not in allowed:
            raise UsageError("usage.bad_option", f"{tag} has no key {key!r}", path=str(key))
    for key in _JSON_REQUIRED[tag]:
        if key not in args:
            raise UsageError("usage.bad_option", f"{tag} needs {key!r}", path=key)
    for name in _JSON_ORDER[tag]:  # the §6.5 table's key order
        if name in args and not _json_type_ok(kind, name, args[name]):
            raise UsageError("usage.bad_option", f"{name} has the wrong JSON type", path=name)
    # step 3: frame values are finite (a dim is absent by being left out)
    raw_values: Mapping[str, Any] = args.get("values", {}) if kind is Frame else {}
    for key, value in raw_values.items():
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        if not finite:
            raise UsageError("usage.not_finite", f"{key} is not finite", path=f"values.{key}")
    # step 4: an encoder writes pv = 1 only
    if "protocol" in args and args["protocol"] != PROTOCOL_VERSION:
        raise UsageError("usage.bad_option", f"protocol must be {PROTOCOL_VERSION}",
                         path="protocol")
    # step 5: unknown ids and enumeration values
    for key in raw_values:
        if key not in registry.by_id:
            raise UsageError("usage.unknown_id", f"no dimension {key!r}", path=f"values.{key}")
    if kind is Hello and args["role"] not in ("producer", "consumer"):
        raise UsageError("usage.unknown_id", "role must be producer or consumer", path="role")
    c = args.get("conditions")
    conditions = None if c is None else conditions_from_obj(c, error_family="usage")
    # step 6: ranges, bounds, patterns
    if "registry_hash" in args:
        h = args["registry_hash"]
        if not _HEX8_RE.fullmatch(h):
            raise UsageError("usage.out_of_range", "registry_hash must be 16 lowercase hex "
                             "digits", path="registry_hash")
        args["registry_hash"] = bytes.fromhex(h)
    if kind is Frame:
        values = np.full(len(registry), np.nan)
        for key, value in raw_values.items():
            values[registry.by_id[key].index] = float(value)
        # integers stay integers: 0.5 is refused, never truncated (spec §1.3)
        return Frame(_int(args["seq"], 0, _U32 - 1, "usage", "seq"),
                     _int(args["timestamp_us"], 0, _U64 - 1, "usage", "timestamp_us"),
                     values, conditions,
                     _int(args.get("unknown_dims", 0), 0, _U32, "usage", "unknown_dims"))
    if kind is ConditionsMessage:
        assert conditions is not None
        return ConditionsMessage(
            conditions, _int(args.get("timestamp_us", 0), 0, _U64 - 1, "usage", "timestamp_us"))
    msg: Message = kind(**args)
    return msg
