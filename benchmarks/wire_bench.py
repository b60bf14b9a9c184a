"""Wire benchmark: posewire frame size against VMC/OSC and JSON, codec speed.

Run: ``.venv/bin/python benchmarks/wire_bench.py [--json PATH] [--quick]``.

Figures (see ``benchmarks/README.md``):

* bytes per message for (a) a full frame (all 89 dims, plus typical conditions),
  (b) hands only (mask = arm + palm + fingers of both hands), (c) face only (face +
  mouth dims), each against the SAME pose content as (i) a VMC/OSC bundle built with
  python-osc and (ii) JSON (``{dim id: value}`` and the VMC-equivalent content);
* encode / decode µs per full frame (``timeit``, median of repeats);
* batch quantize / dequantize throughput (frames/s) for N = 10 000 frames.

Sizes are deterministic (a fixed pose, fixed seq and timestamp widths); timings are
not, and are printed for information only.

The VMC frame (spec comparison, brief §targets): VMC (https://protocol.vmc.info/)
streams OSC over UDP. A performer frame is one OSC bundle holding ``/VMC/Ext/OK`` (int)
and ``/VMC/Ext/T`` (float time), ``/VMC/Ext/Root/Pos`` (``"root"``, px, py, pz, qx, qy,
qz, qw), ``/VMC/Ext/Bone/Pos`` (name, px, py, pz, qx, qy, qz, qw) for every Unity
``HumanBodyBones`` bone — 55 bones including 30 finger bones, sent every frame whether
they moved or not — ``/VMC/Ext/Blend/Val`` (name, weight) per blendshape (the 52 ARKit
names, "perfect sync") and one ``/VMC/Ext/Blend/Apply``. Bone rotations come from the
pose vector through the codec maths where it exists (palm quaternions, head/body Euler
and spine shares, ARKit weights); arm bones from a crude two-bone solve on the
reference avatar, finger bones from the registry's joint angles; positions are rest
offsets of a 1.7 m humanoid. OSC floats are a fixed 4 bytes, so the size does not
depend on the values; they are real so that the JSON comparison is fair.

Sizes are application payload bytes: the OSC bundle (UDP payload) and the msgpack
message (websocket payload), without IP/UDP/TCP/websocket framing.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder

from posewire.codec import wire
from posewire.codec.conditions import Conditions
from posewire.codec.euler import euler_to_quat, head_to_quat, spine_rotations
from posewire.codec.morph import dims_to_arkit
from posewire.codec.quaternion import conjugate, from_axis_angle, multiply, palm_decode, palm_encode
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, REFERENCE_AVATAR, REGISTRY, VISEMES
from posewire.codec.vector import DEFAULTS, N_DIMS, validate

__all__ = [
    "ARM_BONES",
    "FINGER_BONES",
    "HUMAN_BODY_BONES",
    "SUBSETS",
    "SizeRow",
    "VmcFrame",
    "bone_rotations",
    "main",
    "measure_batch",
    "measure_sizes",
    "measure_timings",
    "posewire_frame",
    "typical_conditions",
    "typical_pose",
    "vmc_bundle",
    "vmc_frame",
    "vmc_json",
]

F64 = NDArray[np.float64]

#: A seq and a timestamp of realistic width: seq after ~40 min at 60 Hz needs a
#: 4-byte msgpack uint32 (5 bytes), a µs Unix timestamp a uint64 (9 bytes).
FRAME_SEQ = 150_000
FRAME_TIMESTAMP_US = 1_764_460_800_000_000


# ---------------------------------------------------------------- the pose


def typical_pose() -> F64:
    """A fixed, realistic full pose ``(N,)``: a signer mid-sign — right hand raised in
    front of the chest, palm forward, index pointing (others curled); left hand low at
    the side; head turned a little; face with raised brows, slight smile, jaw open."""
    values: dict[str, float] = {
        "a_x_r": 0.12, "a_y_r": 0.18, "a_z_r": 0.55, "a_spread_r": 0.35,
        "a_x_l": 0.24, "a_y_l": -0.55, "a_z_l": 0.08, "a_spread_l": 0.05,
        "g_thumb_curl_r": 0.45, "g_thumb_fold_r": 0.6, "g_thumb_side_r": -0.2,
        "g_thumb_roll_r": 0.3, "g_index_curl_r": 0.02, "g_index_fold_r": 0.05,
        "g_index_side_r": -0.1, "g_middle_curl_r": 0.85, "g_middle_fold_r": 0.8,
        "g_ring_curl_r": 0.9, "g_ring_fold_r": 0.82, "g_ring_side_r": 0.1,
        "g_pinky_curl_r": 0.88, "g_pinky_fold_r": 0.78, "g_pinky_side_r": 0.25,
        "g_thumb_curl_l": 0.1, "g_index_curl_l": 0.2, "g_index_fold_l": 0.15,
        "g_middle_curl_l": 0.25, "g_middle_fold_l": 0.2, "g_ring_curl_l": 0.3,
        "g_ring_fold_l": 0.22, "g_pinky_curl_l": 0.33, "g_pinky_fold_l": 0.25,
        "h_yaw": 0.11, "h_pitch": -0.06, "h_roll": 0.04,
        "b_yaw": 0.05, "b_pitch": 0.03, "b_roll": -0.02,
        "f_brow_l": 0.42, "f_brow_r": 0.38, "f_brow_inner": 0.5, "f_blink_l": 0.08,
        "f_blink_r": 0.07, "f_squint_l": 0.1, "f_squint_r": 0.12, "f_gaze_yaw": 0.15,
        "f_gaze_pitch": -0.05, "f_cheek_l": 0.2, "f_cheek_r": 0.22, "f_nose_l": 0.03,
        "f_nose_r": 0.04, "m_jaw": 0.35, "m_smile_l": 0.25, "m_smile_r": 0.28,
        "m_pucker": -0.1, "m_funnel": 0.05, "m_shift": 0.02, "m_upper_lip": 0.1,
        "m_lower_lip": 0.15,
    }
    vec = DEFAULTS.copy()
    for key, value in values.items():
        vec[REGISTRY.index(key)] = value
    # Right palm facing forward (+Z), fingers up: the identity; tilted 20° about X.
    # Left palm hanging, palm medial: a little off the default.
    right = from_axis_angle(np.array([1.0, 0.0, 0.0]), math.radians(-20.0))
    left = from_axis_angle(np.array([1.0, 0.0, 1.0]), math.radians(140.0))
    for side, (stored, _) in (("r", palm_encode(right, side="r")), ("l", palm_encode(left, side="l"))):
        for axis, v in zip("xyz", stored, strict=True):
            vec[REGISTRY.index(f"w_q{axis}_{side}")] = float(v)
    checked, _ = validate(vec)
    return checked


def typical_conditions() -> Conditions:
    """Conditions a signing producer typically sends: a two-viseme mouthing mix and the
    tracking state of the (unobserved) body."""
    shares = [0.0] * len(VISEMES)
    shares[VISEMES.index("aa")] = 0.6
    shares[VISEMES.index("O")] = 0.25
    return Conditions(mouthing=tuple(shares), tracking={"body": "not_estimated"})


#: Dim subsets of the table: name -> predicate on the dimension.
SUBSETS: dict[str, Callable[[Any], bool]] = {
    "full": lambda d: True,
    "hands": lambda d: d.row.group in ("arm", "palm", "fingers"),
    "face": lambda d: d.row.group in ("face", "mouth"),
}


def _subset_vector(vector: F64, subset: str) -> F64:
    keep = np.array([SUBSETS[subset](d) for d in DIMENSIONS])
    return np.where(keep, vector, np.nan)


def posewire_frame(vector: F64, *, subset: str = "full", conditions: Conditions | None = None,
                   seq: int = FRAME_SEQ, timestamp_us: int = FRAME_TIMESTAMP_US) -> bytes:
    """The encoded posewire frame message of ``vector`` restricted to ``subset``."""
    return wire.encode(wire.Frame(seq, timestamp_us, _subset_vector(vector, subset), conditions))


# ---------------------------------------------------------------- the VMC frame


_FINGER_NAMES = ("Thumb", "Index", "Middle", "Ring", "Little")
_SEGMENTS = ("Proximal", "Intermediate", "Distal")

#: Unity ``HumanBodyBones`` in enum order (0..54), the bone set a VMC performer sends.
HUMAN_BODY_BONES: tuple[str, ...] = (
    "Hips", "LeftUpperLeg", "RightUpperLeg", "LeftLowerLeg", "RightLowerLeg", "LeftFoot",
    "RightFoot", "Spine", "Chest", "Neck", "Head", "LeftShoulder", "RightShoulder",
    "LeftUpperArm", "RightUpperArm", "LeftLowerArm", "RightLowerArm", "LeftHand", "RightHand",
    "LeftToes", "RightToes", "LeftEye", "RightEye", "Jaw",
    *(f"{side}{f}{s}" for side in ("Left", "Right") for f in _FINGER_NAMES for s in _SEGMENTS),
    "UpperChest",
)
#: The 30 finger bones.
FINGER_BONES: tuple[str, ...] = tuple(b for b in HUMAN_BODY_BONES
                                      if any(f in b for f in _FINGER_NAMES))
#: Shoulder-to-hand bones of both sides (the VMC counterpart of the arm + palm dims).
ARM_BONES: tuple[str, ...] = tuple(f"{side}{b}" for side in ("Left", "Right")
                                   for b in ("Shoulder", "UpperArm", "LowerArm", "Hand"))

# Rest offsets (metres, parent-local, Unity left-handed X is irrelevant for size) of a
# 1.7 m humanoid in T-pose.
_REST: dict[str, tuple[float, float, float]] = {
    "Hips": (0.0, 0.98, 0.0), "Spine": (0.0, 0.092, 0.004), "Chest": (0.0, 0.118, -0.011),
    "UpperChest": (0.0, 0.121, -0.015), "Neck": (0.0, 0.133, -0.021), "Head": (0.0, 0.087, 0.017),
    "Jaw": (0.0, -0.012, 0.032), "LeftEye": (0.031, 0.068, 0.082), "RightEye": (-0.031, 0.068, 0.082),
    "LeftUpperLeg": (0.087, -0.053, 0.004), "RightUpperLeg": (-0.087, -0.053, 0.004),
    "LeftLowerLeg": (-0.013, -0.409, 0.006), "RightLowerLeg": (0.013, -0.409, 0.006),
    "LeftFoot": (0.004, -0.417, -0.027), "RightFoot": (-0.004, -0.417, -0.027),
    "LeftToes": (0.0, -0.071, 0.124), "RightToes": (0.0, -0.071, 0.124),
    "LeftShoulder": (0.021, 0.104, -0.006), "RightShoulder": (-0.021, 0.104, -0.006),
    "LeftUpperArm": (0.097, -0.006, 0.001), "RightUpperArm": (-0.097, -0.006, 0.001),
    "LeftLowerArm": (0.28, 0.0, 0.0), "RightLowerArm": (-0.28, 0.0, 0.0),
    "LeftHand": (0.28, 0.0, 0.0), "RightHand": (-0.28, 0.0, 0.0),
}
_FINGER_BASE = {"Thumb": (0.021, -0.011, 0.027), "Index": (0.087, 0.003, 0.026),
                "Middle": (0.089, 0.004, 0.004), "Ring": (0.083, 0.001, -0.014),
                "Little": (0.074, -0.004, -0.031)}
for _side, _sign in (("Left", 1.0), ("Right", -1.0)):
    for _f in _FINGER_NAMES:
        bx, by, bz = _FINGER_BASE[_f]
        _REST[f"{_side}{_f}Proximal"] = (_sign * bx, by, bz)
        _REST[f"{_side}{_f}Intermediate"] = (_sign * 0.038, 0.0, 0.0)
        _REST[f"{_side}{_f}Distal"] = (_sign * 0.026, 0.0, 0.0)

_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
_X, _Y, _Z = np.eye(3)


def _axis_angle(axis: F64, degrees: float) -> F64:
    return from_axis_angle(axis, math.radians(degrees))


def _value(vector: F64, dim_id: str) -> float:
    return float(vector[REGISTRY.index(dim_id)])


def _arm_chain(vector: F64, side: str) -> tuple[F64, F64]:
    """(upper arm, forearm) body-frame rotations from the arm dims (spec §4.1), by a
    two-bone solve on the reference avatar (L = S = 0.36 m per axis)."""
    ref = REFERENCE_AVATAR
    lengths = np.array([2.0 * r * d for r, d in zip(
        ref.r, (ref.hand_length, ref.torso_length, ref.arm_length), strict=True)])
    n = np.array([_value(vector, f"a_{a}_{side}") for a in "xyz"])
    lateral = 1.0 if side == "l" else -1.0  # spec §3.2: left lateral = +X
    hand = np.array([lateral * n[0], n[1], n[2]]) * 2.5 * lengths
    shoulder = np.array([lateral * ref.shoulder_width / 2.0, 0.0, 0.0])
    reach = hand - shoulder
    dist = float(np.linalg.norm(reach))
    direction = reach / dist if dist > 1e-9 else np.array([lateral, 0.0, 0.0])
    seg = 0.28
    bend = math.degrees(math.acos(max(-1.0, min(1.0, (2 * seg * seg - min(dist, 2 * seg) ** 2)
                                                / (2 * seg * seg)))))
    rest = np.array([lateral, 0.0, 0.0])
    axis = np.cross(rest, direction)
    swing = (_IDENTITY if np.linalg.norm(axis) < 1e-9 else
             from_axis_angle(axis, math.acos(max(-1.0, min(1.0, float(rest @ direction))))))
    spread = _axis_angle(direction, lateral * 90.0 * _value(vector, f"a_spread_{side}"))
    upper = multiply(spread, multiply(swing, _axis_angle(_Y, -lateral * (180.0 - bend) / 2.0)))
    forearm = multiply(upper, _axis_angle(_Y, lateral * (180.0 - bend)))
    return upper, forearm


def bone_rotations(vector: F64) -> dict[str, F64]:
    """Parent-local rotations ``(w, x, y, z)`` for every bone of :data:`HUMAN_BODY_BONES`."""
    rot: dict[str, F64] = dict.fromkeys(HUMAN_BODY_BONES, _IDENTITY)
    body = np.array([_value(vector, i) for i in ("b_yaw", "b_pitch", "b_roll")])
    spine = spine_rotations(body, joints=("spine_01", "spine_03", "spine_05"))
    rot["Spine"], rot["Chest"], rot["UpperChest"] = (spine["spine_01"], spine["spine_03"],
                                                     spine["spine_05"])
    rot["Head"] = head_to_quat(np.array([_value(vector, i) for i in ("h_yaw", "h_pitch", "h_roll")]))
    gaze = euler_to_quat(30.0 * _value(vector, "f_gaze_yaw"), -25.0 * _value(vector, "f_gaze_pitch"), 0.0)
    rot["LeftEye"] = rot["RightEye"] = gaze
    rot["Jaw"] = _axis_angle(_X, 25.0 * max(0.0, _value(vector, "m_jaw")))
    for side, unity in (("l", "Left"), ("r", "Right")):
        lateral = 1.0 if side == "l" else -1.0
        rot[f"{unity}Shoulder"] = _axis_angle(_Z, lateral * 4.0)
        upper, forearm = _arm_chain(vector, side)
        rot[f"{unity}UpperArm"] = upper
        rot[f"{unity}LowerArm"] = multiply(conjugate(upper), forearm)
        palm = np.array([_value(vector, f"w_q{a}_{side}") for a in "xyz"])
        hand, _ = palm_decode(palm, side=side)  # type: ignore[arg-type]
        rot[f"{unity}Hand"] = multiply(conjugate(forearm), hand)
        for finger, unity_finger in zip(("thumb", "index", "middle", "ring", "pinky"), _FINGER_NAMES,
                                        strict=True):
            fold = 90.0 * _value(vector, f"g_{finger}_fold_{side}")
            curl = 90.0 * _value(vector, f"g_{finger}_curl_{side}")
            side_deg = (45.0 if finger == "thumb" else 20.0) * _value(vector, f"g_{finger}_side_{side}")
            proximal = multiply(_axis_angle(_Y, lateral * side_deg), _axis_angle(_Z, -lateral * fold))
            if finger == "thumb":
                proximal = multiply(proximal, _axis_angle(_X, 45.0 * _value(vector, f"g_thumb_roll_{side}")))
            rot[f"{unity}{unity_finger}Proximal"] = proximal
            rot[f"{unity}{unity_finger}Intermediate"] = _axis_angle(_Z, -lateral * curl)
            rot[f"{unity}{unity_finger}Distal"] = _axis_angle(_Z, -lateral * curl)
    return rot


class VmcFrame:
    """The VMC content of one frame: bones (name → px, py, pz, qx, qy, qz, qw, as VMC
    orders them), blendshapes (ARKit name → weight), root pose and time."""

    def __init__(self, bones: dict[str, tuple[float, ...]], blends: dict[str, float],
                 root: tuple[float, ...], time_s: float) -> None:
        self.bones = bones
        self.blends = blends
        self.root = root
        self.time_s = time_s


def vmc_frame(vector: F64, *, bones: Iterable[str] | None = None, blends: bool = True,
              root: bool = True, time_s: float = 12.345678) -> VmcFrame:
    """The VMC content of ``vector`` (shape ``(N,)``).

    ``bones``: which bones to include (default: all 55, as a VMC performer sends);
    ``blends``: include the 52 ARKit blendshape values (from :func:`dims_to_arkit`);
    ``root``: include the root pose.
    """
    rot = bone_rotations(vector)
    chosen = HUMAN_BODY_BONES if bones is None else tuple(bones)
    bone_values: dict[str, tuple[float, ...]] = {}
    for name in chosen:
        w, x, y, z = (float(c) for c in rot[name])
        bone_values[name] = (*_REST[name], x, y, z, w)
    weights: dict[str, float] = {}
    if blends:
        arkit, _ = dims_to_arkit(vector)
        weights = {name: float(w) for name, w in zip(ARKIT_CHANNELS, arkit, strict=True)}
    root_pose = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0) if root else ()
    return VmcFrame(bone_values, weights, root_pose, time_s)


def _message(address: str, *args: str | float | int) -> OscMessageBuilder:
    msg = OscMessageBuilder(address=address)
    for arg in args:
        msg.add_arg(arg)
    return msg


def vmc_bundle(frame: VmcFrame) -> bytes:
    """One OSC bundle (bytes) as a VMC performer sends a frame."""
    bundle = OscBundleBuilder(IMMEDIATELY)
    bundle.add_content(_message("/VMC/Ext/OK", 1).build())
    bundle.add_content(_message("/VMC/Ext/T", float(frame.time_s)).build())
    if frame.root:
        bundle.add_content(_message("/VMC/Ext/Root/Pos", "root", *frame.root).build())
    for name, values in frame.bones.items():
        bundle.add_content(_message("/VMC/Ext/Bone/Pos", name, *values).build())
    if frame.blends:
        for name, weight in frame.blends.items():
            bundle.add_content(_message("/VMC/Ext/Blend/Val", name, weight).build())
        bundle.add_content(_message("/VMC/Ext/Blend/Apply").build())
    dgram: bytes = bundle.build().dgram
    return dgram


def vmc_json(frame: VmcFrame) -> dict[str, object]:
    """The VMC content as a plain JSON object (for the JSON comparison)."""
    out: dict[str, object] = {"t": frame.time_s}
    if frame.root:
        out["root"] = list(frame.root)
    if frame.bones:
        out["bones"] = {name: list(values) for name, values in frame.bones.items()}
    if frame.blends:
        out["blend"] = dict(frame.blends)
    return out


def _json_size(obj: object) -> int:
    return len(json.dumps(obj).encode("utf-8"))


def _vmc_for(vector: F64, subset: str) -> VmcFrame:
    if subset == "full":
        return vmc_frame(vector)
    if subset == "hands":
        return vmc_frame(vector, bones=ARM_BONES + FINGER_BONES, blends=False, root=False)
    if subset == "face":
        return vmc_frame(vector, bones=(), blends=True, root=False)
    raise ValueError(subset)


@dataclass(frozen=True)
class SizeRow:
    """Bytes of one message for one content subset, in each format."""

    subset: str
    dims: int
    posewire: int
    vmc_osc: int
    vmc_osc_all: int
    json_dims: int
    json_vmc: int

    @property
    def ratio_vmc(self) -> float:
        """How many times smaller posewire is than the VMC bundle of the same content."""
        return self.vmc_osc / self.posewire

    @property
    def ratio_vmc_all(self) -> float:
        """... than the VMC bundle a performer actually sends (always all bones)."""
        return self.vmc_osc_all / self.posewire

    @property
    def ratio_json_dims(self) -> float:
        return self.json_dims / self.posewire

    @property
    def ratio_json_vmc(self) -> float:
        return self.json_vmc / self.posewire


def measure_sizes(vector: F64 | None = None, conditions: Conditions | None = None) -> list[SizeRow]:
    """Size rows for ``full`` (with conditions), ``full`` without conditions, ``hands``
    and ``face``. Deterministic."""
    vec = typical_pose() if vector is None else vector
    cond = typical_conditions() if conditions is None else conditions
    vmc_all = len(vmc_bundle(vmc_frame(vec)))
    rows: list[SizeRow] = []
    for label, subset, with_cond in (("full + conditions", "full", True),
                                     ("full", "full", False),
                                     ("hands only", "hands", False),
                                     ("face only", "face", False)):
        sub = _subset_vector(vec, subset)
        present = ~np.isnan(sub)
        frame = _vmc_for(vec, subset)
        dims_obj: dict[str, object] = {d.id: float(vec[d.index]) for d in DIMENSIONS
                                       if present[d.index]}
        vmc_obj = vmc_json(frame)
        if with_cond:
            cobj = wire.message_to_json(wire.Frame(0, 0, vec, cond))["conditions"]
            dims_obj = {"values": dims_obj, "conditions": cobj}
        rows.append(SizeRow(
            subset=label, dims=int(present.sum()),
            posewire=len(posewire_frame(vec, subset=subset, conditions=cond if with_cond else None)),
            vmc_osc=len(vmc_bundle(frame)), vmc_osc_all=vmc_all,
            json_dims=_json_size(dims_obj), json_vmc=_json_size(vmc_obj),
        ))
    return rows


def _median_us(func: Callable[[], object], *, number: int, repeat: int) -> float:
    times = timeit.repeat(func, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def measure_timings(*, number: int = 2000, repeat: int = 7) -> dict[str, float]:
    """µs per call (median of ``repeat`` runs of ``number`` calls) for one full frame:
    posewire encode/decode, and for reference VMC bundle build and JSON dumps/loads."""
    vec = typical_pose()
    cond = typical_conditions()
    frame = wire.Frame(FRAME_SEQ, FRAME_TIMESTAMP_US, vec, None)
    frame_c = wire.Frame(FRAME_SEQ, FRAME_TIMESTAMP_US, vec, cond)
    data = wire.encode(frame)
    data_c = wire.encode(frame_c)
    vframe = vmc_frame(vec)
    dims_json = json.dumps({d.id: float(vec[d.index]) for d in DIMENSIONS})
    small = max(1, number // 10)
    return {
        "encode_us": _median_us(lambda: wire.encode(frame), number=number, repeat=repeat),
        "decode_us": _median_us(lambda: wire.decode(data), number=number, repeat=repeat),
        "encode_with_conditions_us": _median_us(lambda: wire.encode(frame_c), number=number,
                                                repeat=repeat),
        "decode_with_conditions_us": _median_us(lambda: wire.decode(data_c), number=number,
                                                repeat=repeat),
        "vmc_bundle_build_us": _median_us(lambda: vmc_bundle(vframe), number=small, repeat=repeat),
        "json_dims_dumps_us": _median_us(lambda: json.dumps({d.id: float(vec[d.index])
                                                             for d in DIMENSIONS}),
                                         number=number, repeat=repeat),
        "json_dims_loads_us": _median_us(lambda: json.loads(dims_json), number=number,
                                         repeat=repeat),
    }


def measure_batch(*, n_frames: int = 10_000, repeat: int = 7, seed: int = 1) -> dict[str, float]:
    """Frames/s of batch :func:`posewire.codec.wire.quantize` / :func:`posewire.codec.wire.dequantize` on
    ``(n_frames, N)`` random in-range vectors (best of ``repeat``, median reported too)."""
    rng = np.random.default_rng(seed)
    lower = np.array([-1.0 if d.row.polarity == "bipolar" else 0.0 for d in DIMENSIONS])
    batch = rng.uniform(lower, 1.0, size=(n_frames, N_DIMS))
    q = wire.quantize(batch)
    tq = timeit.repeat(lambda: wire.quantize(batch), number=1, repeat=repeat)
    td = timeit.repeat(lambda: wire.dequantize(q), number=1, repeat=repeat)
    return {
        "n_frames": float(n_frames),
        "quantize_frames_per_s": n_frames / statistics.median(tq),
        "dequantize_frames_per_s": n_frames / statistics.median(td),
        "quantize_best_frames_per_s": n_frames / min(tq),
        "dequantize_best_frames_per_s": n_frames / min(td),
    }


# ---------------------------------------------------------------- output


def _size_table(rows: Iterable[SizeRow]) -> str:
    lines = [
        "| content | dims | posewire B | VMC/OSC B (same content) | ×smaller | "
        "VMC/OSC B (full performer frame) | ×smaller | JSON {id: value} B | ×smaller | "
        "JSON VMC content B | ×smaller |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.subset} | {r.dims} | {r.posewire} | {r.vmc_osc} | {r.ratio_vmc:.1f} | "
            f"{r.vmc_osc_all} | {r.ratio_vmc_all:.1f} | {r.json_dims} | {r.ratio_json_dims:.1f} | "
            f"{r.json_vmc} | {r.ratio_json_vmc:.1f} |")
    return "\n".join(lines)


def _timing_table(timings: dict[str, float], batch: dict[str, float] | None) -> str:
    lines = ["| operation | figure |", "|---|---:|"]
    names = {
        "encode_us": "posewire encode, full frame (µs/msg)",
        "decode_us": "posewire decode, full frame (µs/msg)",
        "encode_with_conditions_us": "posewire encode, full frame + conditions (µs/msg)",
        "decode_with_conditions_us": "posewire decode, full frame + conditions (µs/msg)",
        "vmc_bundle_build_us": "VMC/OSC bundle build, python-osc (µs/msg)",
        "json_dims_dumps_us": "json.dumps {id: value}, 89 dims (µs/msg)",
        "json_dims_loads_us": "json.loads {id: value}, 89 dims (µs/msg)",
    }
    for key, label in names.items():
        lines.append(f"| {label} | {timings[key]:.1f} |")
    if batch is not None:
        n = int(batch["n_frames"])
        lines.append(f"| batch quantize, N = {n} (frames/s, median) | {batch['quantize_frames_per_s']:,.0f} |")
        lines.append(f"| batch dequantize, N = {n} (frames/s, median) | "
                     f"{batch['dequantize_frames_per_s']:,.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="fewer timing repeats")
    args = parser.parse_args(argv)

    rows = measure_sizes()
    number, repeat = (200, 3) if args.quick else (2000, 7)
    timings = measure_timings(number=number, repeat=repeat)
    batch = measure_batch(n_frames=10_000, repeat=3 if args.quick else 7)

    print("## posewire wire benchmark\n")
    print(f"registry {REGISTRY.version} ({N_DIMS} dims), python {sys.version.split()[0]}, "
          f"numpy {np.__version__}\n")
    print("### Bytes per message (same pose content)\n")
    print(_size_table(rows))
    print("\nVMC/OSC = one OSC bundle as a VMC performer sends it (python-osc); 'same content' "
          "keeps only the bones/blendshapes of that subset (+ /VMC/Ext/OK and /T), 'full "
          "performer frame' is what VMC actually sends every frame (all 55 bones + 52 "
          "blendshapes). JSON = json.dumps with default separators.\n")
    print("### Speed (one process, median of repeats; informational)\n")
    print(_timing_table(timings, batch))
    if args.json:
        out = {
            "generated_unix": time.time(),
            "registry_version": REGISTRY.version,
            "n_dims": N_DIMS,
            "sizes": [dict(r.__dict__, ratio_vmc=r.ratio_vmc, ratio_vmc_all=r.ratio_vmc_all,
                           ratio_json_dims=r.ratio_json_dims, ratio_json_vmc=r.ratio_json_vmc)
                      for r in rows],
            "timings_us": timings,
            "batch": batch,
        }
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
