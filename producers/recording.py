"""Recordings of pose frames: a plain JSON-lines tool format (not part of the wire spec).

A recording is UTF-8 text, one JSON object per line:

* line 1, the header::

    {"format": "posewire-recording", "version": 2, "registry": "1.0.0",
     "registry_hash": "<sha256 hex>", "calibration": {"hand_length": 0.19, ...} | null}

* every further line, one frame::

    {"t_us": 16667, "values": {"h_yaw": 0.25, "a_y_r": 0.4}, "conditions": {...}}

  ``t_us`` is the frame's timestamp in microseconds (non-decreasing; replay keeps the
  gaps between timestamps); ``values`` maps dimension ids to normalized values and
  names exactly the dims of the frame's mask (spec §5.4) — a dim left out was not sent;
  ``conditions`` is the plain-object form of
  :func:`posewire.codec.conditions.conditions_to_obj` (spec §3.4, §5.5).

Conditions follow spec §5.5: a ``conditions`` object is the **complete** state at that
frame and replaces the previous one (``{}`` = every part tracked, no mouthing, contact or
affect); a line without ``conditions`` (or with ``null``) leaves the state unchanged;
before the first frame the state is empty. The writer writes ``{}`` for an empty state,
so a frame with every part tracked after frames with lost parts replays as tracked.
The reader resolves this: every :class:`RecordedFrame` it returns carries the complete
state of its frame, so replaying any frame (a loop, a seek) sends exactly that state.

Version 1 files (written before version 2) are still read: their writer left an empty
state out, so there a missing ``conditions`` is the empty state, not "unchanged".

Blank lines and lines starting with ``#`` are ignored, so a recording can carry a
comment. Unknown dims in ``values`` (a newer registry) are ignored on read (spec §5.9);
the header's registry version and hash are informative.

Example::

    from posewire.producers.recording import RecordedFrame, read_recording, write_recording

    frames = [RecordedFrame(t_us=i * 16_667, values={"h_yaw": 0.1 * i}) for i in range(5)]
    write_recording("wave.pwr.jsonl", frames)
    header, again = read_recording("wave.pwr.jsonl")
    assert again[4].values["h_yaw"] == 0.4
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec.calibration import Calibration
from posewire.codec.conditions import Conditions, conditions_from_obj, conditions_to_obj
from posewire.codec.errors import UsageError
from posewire.codec.registry import DIMENSIONS, REGISTRY
from posewire.codec.vector import N_DIMS

__all__ = [
    "RECORDING_FORMAT",
    "RECORDING_VERSION",
    "RecordedFrame",
    "RecordingHeader",
    "RecordingWriter",
    "iter_recording",
    "read_recording",
    "write_recording",
]

RECORDING_FORMAT = "posewire-recording"
RECORDING_VERSION = 2
#: Versions :func:`iter_recording` reads (1: an empty condition state was left out).
_READ_VERSIONS = (1, 2)


@dataclass(frozen=True, slots=True)
class RecordingHeader:
    """The first line of a recording: format version, registry pins, calibration."""

    registry: str = REGISTRY.version
    registry_hash: str = REGISTRY.hash
    calibration: Calibration | None = None
    version: int = RECORDING_VERSION

    def to_obj(self) -> dict[str, Any]:
        """The JSON object of the header line."""
        return {
            "format": RECORDING_FORMAT,
            "version": self.version,
            "registry": self.registry,
            "registry_hash": self.registry_hash,
            "calibration": None if self.calibration is None else asdict(self.calibration),
        }


@dataclass(frozen=True, slots=True)
class RecordedFrame:
    """One recorded frame: timestamp (µs), ``{dim id: normalized value}`` for the dims of
    the frame's mask, and the hyper-condition state (spec §3.4): the complete state at
    this frame (``Conditions()`` = every part tracked), or ``None`` = unchanged (spec §5.5).
    Frames read from a file always carry the complete state."""

    t_us: int
    values: Mapping[str, float]
    conditions: Conditions | None = None

    def vector(self) -> NDArray[np.float64]:
        """The values as a ``(N,)`` vector, NaN for dims not in the frame (spec §3.5)."""
        vec = np.full(N_DIMS, np.nan)
        for key, value in self.values.items():
            dim = REGISTRY.by_id.get(key)
            if dim is not None:
                vec[dim.index] = value
        return vec

    def to_obj(self) -> dict[str, Any]:
        """The JSON object of the frame line."""
        obj: dict[str, Any] = {"t_us": int(self.t_us), "values": dict(self.values)}
        # spec §5.5: an empty state is written ({}), so it replaces the previous one on
        # replay; only None (state unchanged) leaves the key out
        if self.conditions is not None:
            obj["conditions"] = conditions_to_obj(self.conditions)
        return obj

    @classmethod
    def from_vector(cls, t_us: int, vector: NDArray[np.float64],
                    conditions: Conditions | None = None) -> RecordedFrame:
        """A frame from a ``(N,)`` vector; NaN entries are left out of the mask."""
        values = {d.id: float(vector[d.index]) for d in DIMENSIONS
                  if math.isfinite(float(vector[d.index]))}
        return cls(t_us=int(t_us), values=values, conditions=conditions)


def _bad(message: str, path: str) -> UsageError:
    return UsageError("usage.bad_option", message, path=path)


def _parse_header(obj: object, path: str) -> RecordingHeader:
    if not isinstance(obj, dict) or obj.get("format") != RECORDING_FORMAT:
        raise _bad(f"not a {RECORDING_FORMAT} file (bad header line)", path)
    version = obj.get("version")
    if isinstance(version, bool) or version not in _READ_VERSIONS:
        raise _bad(f"unsupported recording version {version!r}", path)
    cal_obj = obj.get("calibration")
    calibration: Calibration | None = None
    if cal_obj is not None:
        if not isinstance(cal_obj, dict):
            raise _bad("calibration must be an object", f"{path}.calibration")
        known = {"hand_length", "torso_length", "arm_length", "shoulder_width"}
        calibration = Calibration(**{k: (None if v is None else float(v))
                                     for k, v in cal_obj.items() if k in known})
    return RecordingHeader(registry=str(obj.get("registry", "")),
                           registry_hash=str(obj.get("registry_hash", "")),
                           calibration=calibration, version=int(version))


def _parse_frame(obj: object, path: str, previous: Conditions, version: int) -> RecordedFrame:
    """One frame line; ``previous`` is the condition state before it (spec §5.5)."""
    if not isinstance(obj, dict):
        raise _bad("a frame line must be a JSON object", path)
    t_us = obj.get("t_us")
    if isinstance(t_us, bool) or not isinstance(t_us, int):
        raise _bad("t_us must be an integer", f"{path}.t_us")
    raw = obj.get("values", {})
    if not isinstance(raw, dict):
        raise _bad("values must be an object", f"{path}.values")
    values: dict[str, float] = {}
    for key, value in raw.items():
        if key not in REGISTRY.by_id:
            continue  # spec §5.9: unknown newer dims are ignored
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad("values must be numbers", f"{path}.values.{key}")
        values[key] = float(value)
    cond_obj = obj.get("conditions")
    if cond_obj is not None:
        conditions = conditions_from_obj(cond_obj, error_family="usage", path=f"{path}.conditions")
    elif version == 1:
        conditions = Conditions()  # version 1 left an empty state out
    else:
        conditions = previous  # spec §5.5: absent = unchanged
    return RecordedFrame(t_us=t_us, values=values, conditions=conditions)


def iter_recording(path: str | Path) -> Iterator[RecordingHeader | RecordedFrame]:
    """Yield the header, then each frame of the recording at ``path`` (streaming).

    Each frame carries the complete condition state of that frame (module docstring,
    spec §5.5). A malformed file raises :class:`~posewire.codec.errors.UsageError`
    (``usage.bad_option``) whose path names the line, e.g. ``wave.jsonl:12.t_us``.
    """
    name = Path(path).name
    header: RecordingHeader | None = None
    state = Conditions()  # spec §5.5: the state before the first frame is empty
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            where = f"{name}:{lineno}"
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _bad(f"invalid JSON: {exc.msg}", where) from None
            if header is None:
                header = _parse_header(obj, where)
                yield header
            else:
                frame = _parse_frame(obj, where, state, header.version)
                assert frame.conditions is not None
                state = frame.conditions
                yield frame
    if header is None:
        raise _bad("empty recording (no header line)", name)


def read_recording(path: str | Path) -> tuple[RecordingHeader, list[RecordedFrame]]:
    """The header and all frames of the recording at ``path``."""
    items = iter(iter_recording(path))
    header = next(items)
    assert isinstance(header, RecordingHeader)
    frames = [f for f in items if isinstance(f, RecordedFrame)]
    return header, frames


class RecordingWriter:
    """Write a recording incrementally (used by ``posewire consume --record``).

    Use as a context manager; :meth:`write` takes a :class:`RecordedFrame`. The header
    is written on open; each frame line is flushed so an interrupted recording stays
    readable.
    """

    def __init__(self, path: str | Path, *, header: RecordingHeader | None = None) -> None:
        self.path = Path(path)
        self.header = header or RecordingHeader()
        self._fh: IO[str] | None = None
        self.count = 0

    def __enter__(self) -> RecordingWriter:
        self._fh = open(self.path, "w", encoding="utf-8")
        self._write_line(self.header.to_obj())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_line(self, obj: dict[str, Any]) -> None:
        if self._fh is None:
            raise UsageError("usage.state", "the recording is not open")
        self._fh.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
        self._fh.flush()

    def write(self, frame: RecordedFrame) -> None:
        """Append one frame line."""
        self._write_line(frame.to_obj())
        self.count += 1

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def write_recording(path: str | Path, frames: Iterable[RecordedFrame], *,
                    calibration: Calibration | None = None) -> int:
    """Write ``frames`` to a new recording at ``path``; returns the number of frames."""
    with RecordingWriter(path, header=RecordingHeader(calibration=calibration)) as writer:
        for frame in frames:
            writer.write(frame)
        return writer.count
