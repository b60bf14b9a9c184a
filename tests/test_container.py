"""The recording container (spec §8, ``posewire.codec.container``): its laws as properties.

* write → read gives back every message, byte for byte, with its time and the index §8.5
  derives (round trip);
* a file cut at **any** byte offset reads as a prefix of whole records (§8.6), with
  ``recording.truncated`` unless it is whole;
* a file with any byte changed gives a stable code or a shorter prefix, never a crash and
  never a record that was not written (§8.6);
* the incremental decoder fed in pieces reads what the whole-file reader reads;
* the writer refuses what a recording cannot hold (§8.7).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import conditions_strategy

from posewire.codec import container, wire
from posewire.codec.conditions import Conditions
from posewire.codec.errors import DecodeError, PosewireError, RecordingError, UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS

# dims present or absent, values on the wire grid (so they survive quantization exactly)
_VALUES = st.lists(st.one_of(st.none(), st.integers(0, 127)), min_size=N_DIMS, max_size=N_DIMS)


def _frame_values(raw: list[int | None]) -> np.ndarray:
    vec = np.full(N_DIMS, np.nan)
    for i, q in enumerate(raw):
        if q is not None:
            vec[i] = q / 127 if REGISTRY.dimensions[i].row.bits == 8 else q / 32767
    return vec


@st.composite
def messages(draw: st.DrawFn) -> list[tuple[int, wire.Message]]:
    """A producer's stream: the hello, then cal, cond and frames, times non-decreasing."""
    out: list[tuple[int, wire.Message]] = []
    t = draw(st.integers(0, 2**40))
    out.append((t, wire.Hello("producer", draw(st.sampled_from(["demo", "signer-1"])), client="test")))
    seq = 0
    for kind in draw(st.lists(st.sampled_from(["f", "f", "f", "cal", "cond"]), max_size=12)):
        t += draw(st.sampled_from([0, 1, 16_667, 40_000, 1_000_000, 3_000_000]))
        if kind == "cal":
            msg: wire.Message = wire.Calibration(draw(st.none() | st.floats(0.05, 0.3)), 0.5, None, 0.36)
        elif kind == "cond":
            msg = wire.ConditionsMessage(draw(conditions_strategy()), t)
        else:
            msg = wire.Frame(seq, t, _frame_values(draw(_VALUES)), draw(st.none() | conditions_strategy()))
            seq += 1
        out.append((t, msg))
    return out


def _write(stream: list[tuple[int, wire.Message]], *, close: bool = True) -> bytes:
    enc = container.RecordingEncoder()
    data = enc.start() + b"".join(enc.message(t, m) for t, m in stream)
    return data + enc.finish() if close else data


@settings(max_examples=60)
@given(messages())
def test_write_then_read_gives_every_message_back_byte_for_byte(stream: list[tuple[int, wire.Message]]) -> None:
    data = _write(stream)
    got = container.read(data, strict=True)
    assert got.complete and got.end == len(data)
    assert [r.t_us for r in got.records] == [t for t, _ in stream]
    assert [r.payload for r in got.records] == [wire.encode(m) for _, m in stream]
    assert [r.message for r in got.records] == [m for _, m in stream]
    frames = [r for r in got.records if isinstance(r.message, wire.Frame)]
    assert got.index is not None and got.index.frames == len(frames) == got.frames
    assert got.index.records == len(stream)
    # spec §8.5: a seek point for the first frame, then one per second of record time
    if frames:
        assert got.index.entries[0].offset == frames[0].offset
        gaps = [b.t_us - a.t_us for a, b in zip(got.index.entries, got.index.entries[1:], strict=False)]
        assert all(g >= container.SEEK_INTERVAL_US for g in gaps)
    else:
        assert got.index.entries == ()


@settings(max_examples=15)
@given(messages())
def test_cut_at_every_offset_reads_a_prefix_of_whole_records(stream: list[tuple[int, wire.Message]]) -> None:
    data = _write(stream)
    whole = container.read(data).records
    for cut in range(len(data) + 1):
        try:
            got = container.read(data[:cut])
        except RecordingError as exc:
            assert cut < container.HEADER_SIZE and exc.code == "recording.truncated", (cut, exc)
            continue
        n = len(got.records)
        assert got.records == whole[:n], cut
        # every record that lies wholly before the cut is read
        assert n == sum(1 for r in whole if r.offset + container.RECORD_OVERHEAD + len(r.payload) <= cut), cut
        if cut == len(data):
            assert got.error is None
        else:
            assert got.error is not None and got.error.code == "recording.truncated", (cut, got.error)
        assert got.end <= cut


@settings(max_examples=25)
@given(messages(), st.data())
def test_corrupt_bytes_give_a_code_or_a_shorter_prefix(stream: list[tuple[int, wire.Message]],
                                                     data_: st.DataObject) -> None:
    data = _write(stream)
    whole = container.read(data).records
    for _ in range(8):
        at = data_.draw(st.integers(0, len(data) - 1))
        bad = bytearray(data)
        bad[at] ^= data_.draw(st.integers(1, 255))
        try:
            got = container.read(bytes(bad))
        except PosewireError as exc:  # only the header's faults raise
            assert at < container.HEADER_SIZE, (at, exc)
            assert exc.code in ("recording.not_recording", "recording.corrupt", "recording.version")
            continue
        # never a record that was not written: the records read are a prefix of the file's
        assert got.records == whole[: len(got.records)], at
        # every byte is under a CRC32 (or is a length, read as a cut or too long): never unnoticed
        assert got.error is not None, at
        assert got.error.code.startswith(("recording.", "decode.")), got.error


@settings(max_examples=20)
@given(messages(), st.lists(st.integers(1, 97), min_size=1, max_size=30))
def test_the_incremental_decoder_reads_what_the_whole_reader_reads(stream: list[tuple[int, wire.Message]],
                                                                   pieces: list[int]) -> None:
    data = _write(stream)
    dec = container.RecordingDecoder()
    seen: list[container.Record] = []
    at = 0
    i = 0
    while at < len(data):
        step = pieces[i % len(pieces)]
        seen += dec.feed(data[at:at + step])
        at += step
        i += 1
    got = dec.close()
    assert got.complete and seen == list(got.records) == list(container.read(data).records)


def test_a_file_cut_mid_write_is_read_to_its_last_whole_frame() -> None:
    hello = wire.Hello("producer", "demo")
    frames = [wire.Frame(i, i * 40_000, _frame_values([i] + [None] * (N_DIMS - 1))) for i in range(5)]
    data = _write([(0, hello), *((f.timestamp_us, f) for f in frames)], close=False)
    got = container.read(data[:-3])  # the last frame's CRC32 is not all there
    assert [r.message for r in got.records[1:]] == frames[:4]
    assert got.error is not None and got.error.code == "recording.truncated" and got.index is None
    with pytest.raises(RecordingError) as exc:
        container.read(data[:-3], strict=True)
    assert exc.value.code == "recording.truncated"


def test_the_index_seeks_to_a_frame_with_its_calibration_and_conditions() -> None:
    cal = wire.Calibration(0.19, 0.52, 0.6, 0.36)
    cond = wire.ConditionsMessage(Conditions(tracking={"hand_l": "lost"}), 0)
    stream: list[tuple[int, wire.Message]] = [(0, wire.Hello("producer", "demo")), (0, cal), (0, cond)]
    stream += [(i * 100_000, wire.Frame(i, i * 100_000, _frame_values([1] * N_DIMS))) for i in range(35)]
    got = container.read(_write(stream), strict=True)
    assert got.index is not None
    assert [e.frame for e in got.index.entries] == [0, 10, 20, 30]
    point = got.index.seek(2_550_000)
    assert point is not None and point.frame == 20 and point.t_us == 2_000_000
    by_offset = {r.offset: r.message for r in got.records}
    assert by_offset[point.calibration] == cal and by_offset[point.conditions] == cond
    assert by_offset[point.offset].seq == 20  # type: ignore[union-attr]
    assert got.index.seek(-1) is None


@pytest.mark.parametrize(("first", "then", "code"), [
    (wire.Calibration(0.2, None, None, None), None, "usage.bad_option"),
    (wire.Hello("consumer", "demo"), None, "usage.bad_option"),
    (wire.Hello("producer", "demo", token="s3cret"), None, "usage.bad_option"),
    (wire.Hello("producer", "demo"), wire.Bye("x"), "usage.bad_option"),
])
def test_the_writer_refuses_what_a_recording_cannot_hold(first: wire.Message, then: wire.Message | None,
                                                         code: str) -> None:
    enc = container.RecordingEncoder()
    enc.start()
    with pytest.raises(UsageError) as exc:
        enc.message(0, first)
        assert then is not None
        enc.message(0, then)
    assert exc.value.code == code


def test_the_writer_refuses_time_going_back_and_bytes_that_are_no_message() -> None:
    enc = container.RecordingEncoder()
    enc.start()
    enc.message(10, wire.Hello("producer", "demo"))
    with pytest.raises(UsageError) as exc:
        enc.message(9, wire.Calibration(0.2, None, None, None))
    assert exc.value.code == "usage.out_of_range"
    with pytest.raises(UsageError) as exc:
        enc.message(10, b"\xc1")
    assert exc.value.code == "usage.bad_option"
    frame = wire.encode(wire.Frame(0, 10, _frame_values([3] * N_DIMS)))
    enc.message(10, frame)  # exact bytes are stored as they are
    assert container.read(enc.header.to_bytes()).records == ()  # a header alone: no record
    assert enc.records[-1].payload == frame


def test_a_message_that_does_not_decode_ends_reading_with_its_wire_code() -> None:
    enc = container.RecordingEncoder()
    data = enc.start() + enc.message(0, wire.Hello("producer", "demo"))
    head = b"\x00\x00\x00\x01\x01" + (0).to_bytes(8, "big") + b"\xc1"
    data += head + container._crc(head).to_bytes(4, "big")
    got = container.read(data)
    assert isinstance(got.error, DecodeError) and got.error.code == "decode.malformed"
    assert got.error.path.startswith("records[1]") and len(got.records) == 1
