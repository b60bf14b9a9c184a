"""The relay's cheap check of producer frames (posewire/relay/framecheck.py, spec §5.7
rule 2): a frame it accepts is one the full decoder accepts, with the same sequence,
time and dims; everything else goes to the full decoder, so every rejection keeps the
decoder's stable code and path (the relay end to end: tests/test_relay.py)."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import conditions_strategy

from posewire.codec.conditions import Conditions
from posewire.codec.errors import DecodeError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import Frame, decode, encode
from posewire.relay.framecheck import RawFrame, check_frame

LOWER = np.array([-1.0 if d.row.polarity == "bipolar" else 0.0 for d in REGISTRY.dimensions])


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    present = np.array(draw(st.lists(st.booleans(), min_size=N_DIMS, max_size=N_DIMS)))
    unit = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=N_DIMS, max_size=N_DIMS)))
    values = np.where(present, LOWER + unit * (1.0 - LOWER), np.nan)
    return Frame(draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**64 - 1)), values)


def same_as_decode(data: bytes, raw: RawFrame) -> None:
    frame = decode(data)
    assert isinstance(frame, Frame)
    assert (raw.seq, raw.timestamp_us) == (frame.seq, frame.timestamp_us)
    present = sum(1 << int(i) for i in np.flatnonzero(frame.mask))
    assert raw.bits == present and raw.is_full == frame.is_full
    assert frame.conditions is None


@given(frames())
@example(Frame(0, 0, DEFAULTS.copy()))
@example(Frame(2**32 - 1, 2**64 - 1, np.full(N_DIMS, np.nan)))
def test_every_canonical_frame_without_conditions_takes_the_cheap_path(frame: Frame) -> None:
    data = encode(frame)
    raw = check_frame(data)
    assert raw is not None
    same_as_decode(data, raw)


@given(frames(), st.data())
def test_a_mutated_frame_is_accepted_only_when_the_decoder_accepts_it(frame: Frame,
                                                                      data: st.DataObject) -> None:
    good = bytearray(encode(frame))
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "extend"]))
        at = data.draw(st.integers(0, len(good)))
        if op == "flip" and at < len(good):
            good[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del good[at:at + data.draw(st.integers(1, 4))]
        elif op == "insert":
            good[at:at] = bytes([data.draw(st.integers(0, 255))])
        else:
            good += b"\x00"
    mutated = bytes(good)
    raw = check_frame(mutated)
    if raw is not None:  # never accepts what the decoder rejects
        same_as_decode(mutated, raw)


# every value byte the spec forbids (§5.4), on dims of each kind
# (bipolar: q = −2^(b−1); unipolar: any negative q, −1 and the most negative)
BAD_VALUES = [
    *[(d.id, b"\x80" if d.row.bits == 8 else b"\x80\x00") for d in REGISTRY.dimensions
      if d.row.polarity == "bipolar"],
    *[(d.id, bad if d.row.bits == 8 else bad + b"\x00") for d in REGISTRY.dimensions
      if d.row.polarity == "unipolar" for bad in (b"\xff", b"\x80")],
]
assert {REGISTRY.dimensions[REGISTRY.index(dim)].row.polarity for dim, _ in BAD_VALUES} == {
    "bipolar", "unipolar"}


@pytest.mark.parametrize(("dim", "bad"), BAD_VALUES)
def test_a_forbidden_code_point_goes_to_the_decoder_which_names_it(dim: str, bad: bytes) -> None:
    data = encode(Frame(1, 2, DEFAULTS.copy()))
    obj = msgpack.unpackb(data)
    values = bytearray(obj["v"])
    index = REGISTRY.index(dim)
    offset = sum(d.row.bits // 8 for d in REGISTRY.dimensions[:index])
    values[offset:offset + len(bad)] = bad
    obj["v"] = bytes(values)
    broken = msgpack.packb(obj, use_bin_type=True)
    assert broken.startswith(data[:20])  # still the canonical layout
    assert check_frame(broken) is None
    with pytest.raises(DecodeError) as err:
        decode(broken)
    assert (err.value.code, err.value.path) == ("decode.out_of_range", f"v.{dim}")


def test_the_edges_of_each_kind_of_value_are_accepted() -> None:
    # 16-bit bipolar −32767 (80 01), 8-bit bipolar −127 (81), unipolar 127 / 32767
    data = encode(Frame(1, 2, np.where(LOWER < 0, -1.0, 1.0)))
    raw = check_frame(data)
    assert raw is not None
    same_as_decode(data, raw)


@pytest.mark.parametrize("obj", [
    {"t": "f", "s": 1, "ts": 2, "m": b"", "v": b"", "c": None},  # a c, even nil: decoded
    {"t": "f", "ts": 2, "s": 1, "m": b"", "v": b""},  # another key order
    {"t": "f", "s": 1, "ts": 2, "m": b"\x00" * 33, "v": b""},  # mask > 32 bytes
    {"t": "f", "s": -1, "ts": 2, "m": b"", "v": b""},
    {"t": "f", "s": 2**32, "ts": 2, "m": b"", "v": b""},
    {"t": "f", "s": 1, "ts": 2, "m": b"\x01", "v": b""},  # v too short for the mask
    {"t": "f", "s": 1, "ts": 2, "m": b"", "v": b"\x00"},  # v too long
    {"t": "f", "s": 1, "ts": 2, "m": b"", "v": "text"},
    {"t": "f", "s": 1.0, "ts": 2, "m": b"", "v": b""},
])
def test_other_forms_and_faults_are_left_to_the_decoder(obj: dict[str, object]) -> None:
    assert check_frame(msgpack.packb(obj, use_bin_type=True)) is None


def test_trailing_bytes_and_oversize_are_left_to_the_decoder() -> None:
    data = encode(Frame(1, 2, DEFAULTS.copy()))
    assert check_frame(data) is not None
    assert check_frame(data + b"\xc0") is None
    assert check_frame(data[:-1]) is None
    assert check_frame(data, max_size=len(data) - 1) is None


def test_dims_of_a_newer_registry_are_skipped_like_the_decoder_does() -> None:
    data = encode(Frame(1, 2, DEFAULTS.copy()))
    obj = msgpack.unpackb(data)
    obj["m"] = obj["m"] + b"\xff"  # 8 more dims beyond this registry: 16 bytes more
    obj["v"] = obj["v"] + b"\x80\x00" * 8  # skipped unread, whatever they hold
    newer = msgpack.packb(obj, use_bin_type=True)
    raw = check_frame(newer)
    assert raw is not None and raw.is_full
    same_as_decode(newer, raw)
    assert check_frame(msgpack.packb({**obj, "v": obj["v"][:-1]}, use_bin_type=True)) is None


@given(conditions_strategy())
def test_a_frame_with_conditions_is_always_decoded_in_full(conditions: Conditions) -> None:
    assert check_frame(encode(Frame(1, 2, DEFAULTS.copy(), conditions))) is None
