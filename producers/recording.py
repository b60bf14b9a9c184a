"""Recordings of pose frames, in two formats read alike (the first bytes decide):

* the **posewire recording** (``.pwr``, spec §8, :mod:`posewire.codec.container`): the wire
  messages themselves (hello, calibration, conditions, frames: the exact bytes a producer
  sends) with their timestamps, CRC-checked, with a seek index; a file cut mid-write is
  read up to its last whole record;
* **JSON lines** (any other name), for reading by eye, described below.

:func:`read_recording` (and :func:`open_recording`, which also gives the messages) is the
one reader of every command that takes a recording; it reads ``.pose`` files too (the
``record`` extra), converted on the fly. :func:`open_writer` picks the format by the
file name: ``.pwr`` is the container, any other name JSON lines.

A JSON-lines recording is UTF-8 text, one JSON object per line:

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
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec import container, wire
from posewire.codec.calibration import Calibration
from posewire.codec.conditions import Conditions, conditions_from_obj, conditions_to_obj
from posewire.codec.errors import PosewireError, UsageError
from posewire.codec.registry import DIMENSIONS, REGISTRY
from posewire.codec.vector import N_DIMS

__all__ = [
    "RECORDING_FORMAT",
    "RECORDING_VERSION",
    "ContainerWriter",
    "RecordedFrame",
    "Recording",
    "RecordingHeader",
    "RecordingWriter",
    "iter_recording",
    "open_recording",
    "open_writer",
    "read_recording",
    "recording_kind",
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
    #: ``"jsonl"`` or ``"pwr"`` (spec §8): the format the recording was read from or is written in
    format: str = "jsonl"
    #: the stream name of a container's hello (spec §8.4; informative)
    stream: str = "demo"

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
    #: the frame's exact wire bytes, when read from a container (spec §8)
    wire: bytes | None = field(default=None, compare=False, repr=False)

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


def _iter_jsonl(path: str | Path) -> Iterator[RecordingHeader | RecordedFrame]:
    """The header, then each frame of a JSON-lines recording (module docstring)."""
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


def recording_kind(path: str | Path) -> str:
    """``"pwr"`` (a container: its first bytes are the magic, spec §8.2), ``"pose"`` (a
    pose-format file, by its ``.pose`` name) or ``"jsonl"`` (anything else)."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if container.is_container(head):
        return "pwr"
    if Path(path).suffix.lower() == ".pose":
        return "pose"
    return "jsonl"


@dataclass(frozen=True)
class Recording:
    """A recording read by :func:`open_recording`: the ``header`` (calibration: the
    newest calibration message of a container), the ``frames`` (each with the complete
    condition state of its frame, spec §5.5), and for a container its ``messages`` — every
    data message after the hello as ``(t_us, message, exact bytes)``, in order — and
    ``contents`` (index, and ``error``: why reading stopped early, e.g. a file cut
    mid-write, ``recording.truncated``; None when it was whole)."""

    header: RecordingHeader
    frames: list[RecordedFrame]
    messages: list[tuple[int, wire.Message, bytes]] | None = None
    contents: container.Contents | None = None

    @property
    def lost(self) -> str | None:
        """What was not read, in one line (None: nothing)."""
        got = self.contents
        if got is None or got.error is None:
            return None
        return f"read to its last whole record (byte {got.end}, {len(self.frames)} frames): " \
               f"{got.error.message} ({got.error.code})"


def _from_container(path: str | Path) -> Recording:
    data = Path(path).read_bytes()
    try:
        got = container.read(data)
    except PosewireError as exc:
        raise type(exc)(exc.code, f"{Path(path).name}: {exc.message}", path=exc.path) from None
    if got.error is not None and not got.records:
        raise got.error
    hello = got.records[0].message if got.records else None
    state = Conditions()  # spec §5.5: empty before the first frame
    calibration: Calibration | None = None
    frames: list[RecordedFrame] = []
    messages: list[tuple[int, wire.Message, bytes]] = []
    for rec in got.records[1:]:
        msg = rec.message
        messages.append((rec.t_us, msg, rec.payload))
        if isinstance(msg, wire.Calibration):
            calibration = Calibration(msg.hand_length, msg.torso_length, msg.arm_length, msg.shoulder_width)
        elif isinstance(msg, wire.ConditionsMessage):
            state = msg.conditions
        elif isinstance(msg, wire.Frame):
            if msg.conditions is not None:
                state = msg.conditions
            values = {d.id: float(msg.values[d.index]) for d in DIMENSIONS if not math.isnan(msg.values[d.index])}
            frames.append(RecordedFrame(rec.t_us, values, state, wire=rec.payload))
    header = RecordingHeader(
        registry=hello.registry_version if isinstance(hello, wire.Hello) else REGISTRY.version,
        registry_hash=got.header.registry_hash.hex(), calibration=calibration, format="pwr",
        stream=hello.stream if isinstance(hello, wire.Hello) else "demo")
    return Recording(header, frames, messages, got)


def open_recording(path: str | Path) -> Recording:
    """Read any recording (the one reader of every command): a container (spec §8; a file
    cut mid-write is read to its last whole record, :attr:`Recording.lost` says so), JSON
    lines, or a ``.pose`` file converted on the fly (needs the ``record`` extra).
    Malformed files raise a stable code: ``recording.*`` for a container (spec §8.8),
    ``usage.bad_option`` naming the line for JSON lines."""
    kind = recording_kind(path)
    if kind == "pwr":
        return _from_container(path)
    if kind == "pose":
        from posewire.producers.poseformat import pose_file_to_recording

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "recording.pwr"
            pose_file_to_recording(path, out)
            return _from_container(out)
    items = iter(_iter_jsonl(path))
    header = next(items)
    assert isinstance(header, RecordingHeader)
    return Recording(header, [f for f in items if isinstance(f, RecordedFrame)])


def iter_recording(path: str | Path) -> Iterator[RecordingHeader | RecordedFrame]:
    """Yield the header, then each frame of the recording at ``path`` (JSON lines: streaming).

    Each frame carries the complete condition state of that frame (module docstring,
    spec §5.5). A malformed JSON-lines file raises :class:`~posewire.codec.errors.UsageError`
    (``usage.bad_option``) whose path names the line, e.g. ``wave.jsonl:12.t_us``; a
    container raises the codes of spec §8.8.
    """
    if recording_kind(path) == "jsonl":
        yield from _iter_jsonl(path)
        return
    rec = open_recording(path)
    yield rec.header
    yield from rec.frames


def read_recording(path: str | Path) -> tuple[RecordingHeader, list[RecordedFrame]]:
    """The header and all frames of the recording at ``path`` (any format, :func:`open_recording`)."""
    rec = open_recording(path)
    return rec.header, rec.frames


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


class ContainerWriter:
    """Write a container recording (spec §8) incrementally, as a producer would send it.

    Use as a context manager. The hello (role producer, ``header.stream``, no token) and
    the header's calibration are the first records; :meth:`write` takes a
    :class:`RecordedFrame` and writes the frame the publisher would send (``seq`` +1 per
    frame, ``ts`` = ``t_us``, the condition state only when it changed, spec §5.5);
    :meth:`write_message` writes any data message (an object or its exact bytes). Each
    record is flushed, so a killed writer leaves a file read to its last whole record;
    :meth:`close` writes the index. The file is written under a temporary name beside
    ``path`` and renamed at close, unless ``atomic=False``.
    """

    def __init__(self, path: str | Path, *, header: RecordingHeader | None = None, client: str = "posewire",
                 atomic: bool = False) -> None:
        self.path = Path(path)
        self.header = header or RecordingHeader(format="pwr")
        self.client = client
        self.atomic = atomic
        self._fh: IO[bytes] | None = None
        self._enc = container.RecordingEncoder()
        self._seq = 0
        self._sent: Conditions | None = None
        self._open_path = self.path
        self.count = 0
        self.bytes = 0

    def __enter__(self) -> ContainerWriter:
        self.open()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(complete=exc_type is None or self.atomic is False)

    def open(self) -> None:
        if self.atomic:
            self._open_path = self.path.with_name(self.path.name + ".part")
        self._fh = open(self._open_path, "wb")  # noqa: SIM115 - closed in close()
        self._put(self._enc.start())

    def _put(self, data: bytes) -> None:
        if self._fh is None:
            raise UsageError("usage.state", "the recording is not open")
        self._fh.write(data)
        self._fh.flush()
        self.bytes += len(data)

    def _ensure_hello(self, t_us: int) -> None:
        if self._enc.records:
            return
        self._put(self._enc.message(t_us, wire.Hello("producer", self.header.stream, client=self.client)))
        if self.header.calibration is not None:
            self._put(self._enc.message(t_us, wire.Calibration.of(self.header.calibration)))

    def write_message(self, t_us: int, message: wire.Message | bytes) -> None:
        """Append one data message (cal, cond, f), as an object or its exact wire bytes."""
        self._ensure_hello(int(t_us))
        self._put(self._enc.message(int(t_us), message))
        msg = self._enc.records[-1].message
        if isinstance(msg, wire.Frame):
            self.count += 1
            self._seq = (msg.seq + 1) % 2**32
            if msg.conditions is not None:
                self._sent = msg.conditions
        elif isinstance(msg, wire.ConditionsMessage):
            self._sent = msg.conditions

    def write(self, frame: RecordedFrame) -> None:
        """Append the frame a publisher would send for ``frame`` (spec §5.4–5.5)."""
        changed = frame.conditions is not None and frame.conditions != self._sent
        self.write_message(frame.t_us, wire.Frame(self._seq, int(frame.t_us), frame.vector(),
                                                  frame.conditions if changed else None))

    def close(self, *, complete: bool = True) -> None:
        """Write the index and trailer, close (idempotent); ``complete=False`` leaves the
        file as cut (no index), as a crash would."""
        if self._fh is None:
            return
        if complete:
            self._ensure_hello(0)
            self._put(self._enc.finish())
        self._fh.close()
        self._fh = None
        if self.atomic and complete:
            os.replace(self._open_path, self.path)


def open_writer(path: str | Path, *, header: RecordingHeader | None = None,
                client: str = "posewire") -> RecordingWriter | ContainerWriter:
    """A writer for ``path``, by its name: ``.pwr`` a container (spec §8), any other
    name JSON lines (:class:`RecordingWriter`). Not opened yet (use ``with``)."""
    if Path(path).suffix.lower() == container.SUFFIX:
        base = header or RecordingHeader()
        return ContainerWriter(path, header=RecordingHeader(
            registry=base.registry, registry_hash=base.registry_hash, calibration=base.calibration,
            format="pwr", stream=base.stream), client=client)
    return RecordingWriter(path, header=header)


def write_recording(path: str | Path, frames: Iterable[RecordedFrame], *,
                    calibration: Calibration | None = None, stream: str = "demo") -> int:
    """Write ``frames`` to a new recording at ``path`` (the format by its name, :func:`open_writer`);
    returns the number of frames."""
    with open_writer(path, header=RecordingHeader(calibration=calibration, stream=stream)) as writer:
        for frame in frames:
            writer.write(frame)
        return writer.count
