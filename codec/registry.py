"""The parameter registry — the one normative table of posewire (spec §4).

Every dimension of the vector is one :class:`DimensionRow`; sided rows expand into an
``_l``/``_r`` pair that shares the definition (spec §3.2). The hyper conditions of
spec §3.4 are :class:`ConditionRow` s. The constants that the maths of §4 needs
(reference avatar, spine shares, mouthing seed table, affect presets) live here too,
because they are part of what the registry hash pins.

The spec's registry tables (``spec/04-registry-tables.md``) and the JSON Schemas in
``schemas/`` are generated from this module (``posewire generate``); a test fails when
the committed files differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

__all__ = [
    "AFFECT_LABELS",
    "AFFECT_MODES",
    "AFFECT_PRESETS",
    "ARKIT_CHANNELS",
    "CONDITIONS",
    "CONTACT_SITES",
    "DIMENSIONS",
    "GROUPS",
    "MOUTHING_SEED_TABLE",
    "REFERENCE_AVATAR",
    "REGISTRY",
    "REGISTRY_VERSION",
    "ROWS",
    "SIDES",
    "SPINE_SHARES",
    "TRACKING_PARTS",
    "TRACKING_STATES",
    "VISEMES",
    "Channel",
    "ConditionRow",
    "Dimension",
    "DimensionRow",
    "ReferenceAvatar",
    "Registry",
]

REGISTRY_VERSION = "1.0.0"

Polarity = Literal["bipolar", "unipolar"]
Group = Literal["arm", "palm", "fingers", "head", "body", "face", "mouth"]

GROUPS: tuple[str, ...] = ("arm", "palm", "fingers", "head", "body", "face", "mouth")
SIDES: tuple[str, ...] = ("l", "r")
_ARKIT_SIDE = {"l": "Left", "r": "Right"}

#: The 52 ARKit blendshape names (Apple ARFaceAnchor.BlendShapeLocation), in Apple's order.
ARKIT_CHANNELS: tuple[str, ...] = (
    "eyeBlinkLeft", "eyeLookDownLeft", "eyeLookInLeft", "eyeLookOutLeft", "eyeLookUpLeft",
    "eyeSquintLeft", "eyeWideLeft", "eyeBlinkRight", "eyeLookDownRight", "eyeLookInRight",
    "eyeLookOutRight", "eyeLookUpRight", "eyeSquintRight", "eyeWideRight",
    "jawForward", "jawLeft", "jawRight", "jawOpen",
    "mouthClose", "mouthFunnel", "mouthPucker", "mouthLeft", "mouthRight",
    "mouthSmileLeft", "mouthSmileRight", "mouthFrownLeft", "mouthFrownRight",
    "mouthDimpleLeft", "mouthDimpleRight", "mouthStretchLeft", "mouthStretchRight",
    "mouthRollLower", "mouthRollUpper", "mouthShrugLower", "mouthShrugUpper",
    "mouthPressLeft", "mouthPressRight", "mouthLowerDownLeft", "mouthLowerDownRight",
    "mouthUpperUpLeft", "mouthUpperUpRight",
    "browDownLeft", "browDownRight", "browInnerUp", "browOuterUpLeft", "browOuterUpRight",
    "cheekPuff", "cheekSquintLeft", "cheekSquintRight", "noseSneerLeft", "noseSneerRight",
    "tongueOut",
)

#: The 15 visemes of the mouthing condition (spec §3.4.1), in wire order.
VISEMES: tuple[str, ...] = (
    "sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "I", "O", "U",
)


@dataclass(frozen=True, slots=True)
class Channel:
    """One ARKit morph channel driven by one direction of a dim, with its gain.

    Gain 1 marks the channel's PRIMARY driver (exactly one (dim, direction) per ARKit
    channel); a gain in ``(0, 1)`` is a SECONDARY recruitment (spec §4.6, §4.7).

    ``name`` may contain ``{S}``, replaced by ``Left``/``Right`` for the ``_l``/``_r``
    member of a sided row (spec §3.2).
    """

    name: str
    gain: float = 1.0


@dataclass(frozen=True, slots=True)
class DimensionRow:
    """One registry row (spec §4). Sided rows stand for an ``_l``/``_r`` pair.

    ``max`` is the physical magnitude at normalized ``|n| = 1`` in ``unit``; the stored
    value is always normalized (bipolar ``[-1, 1]``, unipolar ``[0, 1]``).
    ``lateral`` marks an unsided dim whose sign flips under mirroring (spec §3.2).
    ``angle_deg`` is, for finger dims, the joint rotation at ``|n| = 1`` (spec §4.3);
    ``neutral_deg`` the joint rotation at ``n = 0`` (spec §4.3: ``θ = neutral_deg + n ·
    angle_deg``; non-zero only for the index…pinky side rows, the relaxed splay).
    ``bits`` is the wire quantization width (spec §5.4).
    """

    id: str
    group: Group
    sided: bool
    polarity: Polarity
    max: float
    unit: str
    default: float
    affect: bool
    meaning: str
    bits: int = 8
    lateral: bool = False
    angle_deg: float | None = None
    neutral_deg: float | None = None
    positive: tuple[Channel, ...] = ()
    negative: tuple[Channel, ...] = ()


@dataclass(frozen=True, slots=True)
class Dimension:
    """One slot of the vector: a row, expanded for one side, at one index."""

    id: str
    index: int
    row: DimensionRow
    side: str | None  # "l", "r" or None

    @property
    def part(self) -> str:
        """The tracking part (spec §3.4.2) this dimension belongs to."""
        g = self.row.group
        if g == "arm":
            return f"arm_{self.side}"
        if g in ("palm", "fingers"):
            return f"hand_{self.side}"
        return g

    def channels(self, direction: int) -> tuple[Channel, ...]:
        """ARKit channels for ``direction`` (+1 or -1), side placeholders resolved."""
        raw = self.row.positive if direction > 0 else self.row.negative
        if self.side is None:
            return raw
        s = _ARKIT_SIDE[self.side]
        return tuple(Channel(c.name.replace("{S}", s), c.gain) for c in raw)


@dataclass(frozen=True, slots=True)
class ConditionRow:
    """One hyper-condition channel (spec §3.4): id, value type and enumeration."""

    id: str
    kind: str  # "weights" | "enum_map" | "record"
    keys: tuple[str, ...]
    values: tuple[str, ...]
    meaning: str


@dataclass(frozen=True, slots=True)
class ReferenceAvatar:
    """The official reference avatar of spec §4.1 (metres) and its ratios r."""

    hand_length: float  # d_x: wrist -> middle fingertip, hand open
    torso_length: float  # d_y: neck -> navel
    arm_length: float  # d_z: shoulder -> wrist, arm extended
    shoulder_width: float  # S: shoulder_l -> shoulder_r
    r: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0))


def _c(*pairs: tuple[str, float] | str) -> tuple[Channel, ...]:
    return tuple(Channel(p) if isinstance(p, str) else Channel(*p) for p in pairs)


def _arm() -> list[DimensionRow]:
    common = dict(group="arm", sided=True, max=2.5, affect=False, bits=16)
    return [
        DimensionRow("a_x", polarity="bipolar", unit="L_x", default=0.2, lateral=False,
                     meaning="hand position across the body; + = lateral (away from the midline)",
                     **common),  # type: ignore[arg-type]
        DimensionRow("a_y", polarity="bipolar", unit="L_y", default=-0.6222,
                     meaning="hand position up/down; + = up (toward the head)",
                     **common),  # type: ignore[arg-type]
        DimensionRow("a_z", polarity="bipolar", unit="L_z", default=0.0,
                     meaning="hand position front/back; + = forward (in front of the body)",
                     **common),  # type: ignore[arg-type]
        DimensionRow("a_spread", group="arm", sided=True, polarity="unipolar", max=90.0,
                     unit="deg", default=0.0, affect=False, bits=8,
                     meaning="elbow spread: 0 = elbow hangs at the side, 1 = elbow raised "
                             "90 deg sideways about the shoulder-wrist axis"),
    ]


def _palm() -> list[DimensionRow]:
    common = dict(group="palm", sided=True, polarity="bipolar", max=1.0, unit="1",
                  affect=False, bits=16)
    return [
        DimensionRow("w_qx", default=0.69296, meaning="palm quaternion x (pitch axis)",
                     **common),  # type: ignore[arg-type]
        DimensionRow("w_qy", default=0.0, meaning="palm quaternion y (pronation axis)",
                     **common),  # type: ignore[arg-type]
        DimensionRow("w_qz", default=0.69296, meaning="palm quaternion z (roll axis)",
                     **common),  # type: ignore[arg-type]
    ]


_FINGERS = ("thumb", "index", "middle", "ring", "pinky")


#: Relaxed splay of index, middle, ring, pinky (degrees toward the pinky from the finger's
#: metacarpal, spec §4.3 and A.2): ``g_<finger>_side = 0`` there. The medians, rounded to
#: 5°, of five real hands in three MediaPipe Holistic recordings of signers (index 15–24°,
#: middle 3–25°, ring 8–16°, pinky 2–10°).
_RELAXED_SPLAY_DEG: dict[str, float] = {"index": 20.0, "middle": 10.0, "ring": 10.0, "pinky": 5.0}


#: Joint angle at |n| = 1 (degrees) of the curl (PIP; thumb MCP) and distal (DIP; thumb IP)
#: rows (spec §4.3 "Joint ranges", appendix A50): the flexion real joints reach (PIP about
#: 100–110°, DIP and the thumb's joints about 80–90°); a camera's bend beyond them is passed
#: on to the joint nearer the palm, never left on a rail.
_CURL_DEG: dict[str, float] = {"thumb": 90.0, "index": 110.0, "middle": 110.0, "ring": 110.0, "pinky": 110.0}
_DISTAL_DEG: dict[str, float] = {"thumb": 90.0, "index": 90.0, "middle": 90.0, "ring": 90.0, "pinky": 90.0}


def _fingers() -> list[DimensionRow]:
    rows: list[DimensionRow] = []
    common = dict(group="fingers", sided=True, polarity="bipolar", max=1.0, unit="1",
                  default=0.0, affect=False, bits=8)
    for f in _FINGERS:
        thumb = f == "thumb"
        rows.append(DimensionRow(
            f"g_{f}_curl", angle_deg=_CURL_DEG[f],
            meaning=f"{f} bend of the {'MCP' if thumb else 'PIP'} joint (proximal -> "
                    f"{'proximal' if thumb else 'middle'} phalanx): +1 hooked toward the palm, "
                    "-1 bent backward", **common))  # type: ignore[arg-type]
        rows.append(DimensionRow(
            f"g_{f}_fold", angle_deg=(90.0 if thumb else 120.0),  # spec §4.3, appendix A44
            meaning=("thumb opposition: +1 across the palm toward the pinky base, "
                     "-1 swung away from the palm") if thumb else
                    f"{f} fold about the base knuckle: +1 folded toward the palm, "
                    "-1 raised backward", **common))  # type: ignore[arg-type]
        rows.append(DimensionRow(
            f"g_{f}_side", angle_deg=(50.0 if thumb else 30.0),  # spec §4.3, appendix A49
            neutral_deg=(None if thumb else _RELAXED_SPLAY_DEG[f]),
            meaning=("thumb abduction: +1 out of the palm plane (palm-normal side), "
                     "-1 pressed in to the palm") if thumb else
                    f"{f} side spread: +1 toward the pinky, -1 toward the thumb",
            **common))  # type: ignore[arg-type]
    rows.append(DimensionRow(
        "g_thumb_roll", angle_deg=90.0,
        meaning="thumb roll about its own axis (default 0 when unobservable)",
        **common))  # type: ignore[arg-type]
    # spec §4.3, appendix A50: each finger's last joint bends on its own
    rows.extend(DimensionRow(
        f"g_{f}_distal", angle_deg=_DISTAL_DEG[f],
        meaning=f"{f} bend of the {'IP' if f == 'thumb' else 'DIP'} joint (to the distal phalanx): "
                "+1 hooked toward the palm, -1 bent backward", **common)  # type: ignore[arg-type]
        for f in _FINGERS)
    return rows




def _head_body() -> list[DimensionRow]:
    def row(i: str, g: Group, mx: float, lateral: bool, meaning: str) -> DimensionRow:
        return DimensionRow(i, group=g, sided=False, polarity="bipolar", max=mx, unit="deg",
                            default=0.0, affect=True, bits=16, lateral=lateral,
                            meaning=meaning)

    return [
        row("h_yaw", "head", 90.0, True, "head yaw about +Y; + = face turns to the character's left"),
        row("h_pitch", "head", 60.0, False, "head pitch about +X; + = chin down"),
        row("h_roll", "head", 45.0, True, "head roll about +Z; + = tilts to the character's right"),
        row("b_yaw", "body", 45.0, True, "torso yaw about +Y, spread along the spine; + = to the left"),
        row("b_pitch", "body", 30.0, False, "torso pitch about +X, spread along the spine; + = lean forward"),
        row("b_roll", "body", 30.0, True, "torso roll about +Z, spread along the spine; + = lean right"),
    ]


def _face() -> list[DimensionRow]:
    def row(i: str, sided: bool, meaning: str, pos: tuple[Channel, ...],
            neg: tuple[Channel, ...] = (), lateral: bool = False) -> DimensionRow:
        return DimensionRow(i, group="face", sided=sided, polarity="bipolar", max=1.0, unit="1",
                            default=0.0, affect=True, bits=8, lateral=lateral, meaning=meaning,
                            positive=pos, negative=neg)

    return [
        row("f_brow", True, "outer brow: + raised, - lowered",
            _c("browOuterUp{S}"), _c("browDown{S}")),
        row("f_brow_inner", False, "inner brows: + raised; - knit (no ARKit channel)",
            _c("browInnerUp")),
        row("f_blink", True, "eyelid: + closed (blink), - opened wide",
            _c("eyeBlink{S}"), _c("eyeWide{S}")),
        row("f_squint", True, "lower lid: + squinting; - lowered (no ARKit channel)",
            _c("eyeSquint{S}")),
        row("f_gaze_yaw", False, "gaze of both eyes: + toward the character's left, - right",
            _c("eyeLookOutLeft", "eyeLookInRight"), _c("eyeLookInLeft", "eyeLookOutRight"),
            lateral=True),
        row("f_gaze_pitch", False, "gaze of both eyes: + up, - down",
            _c("eyeLookUpLeft", "eyeLookUpRight"), _c("eyeLookDownLeft", "eyeLookDownRight")),
        row("f_cheek", True, "cheek: + raised (cheek squint); - lowered (no ARKit channel)",
            _c("cheekSquint{S}")),
        row("f_nose", True, "nose: + sneer; - nostril flattened (no ARKit channel)",
            _c("noseSneer{S}")),
    ]


def _mouth() -> list[DimensionRow]:
    def row(i: str, sided: bool, meaning: str, pos: tuple[Channel, ...],
            neg: tuple[Channel, ...] = (), lateral: bool = False) -> DimensionRow:
        return DimensionRow(i, group="mouth", sided=sided, polarity="bipolar", max=1.0,
                            unit="1", default=0.0, affect=True, bits=8, lateral=lateral,
                            meaning=meaning, positive=pos, negative=neg)

    # spec §4.7 (seed 000 §4.7): each direction has its PRIMARY channels (gain 1, every
    # ARKit channel is the primary of exactly one (dim, direction)) and may recruit
    # SECONDARY channels with a gain < 1, so that the extremes reach the strong shapes:
    # m_jaw +1 = yawn, m_pucker +1 = kiss, m_upper_lip +1 = bared teeth. The rationale
    # of each gain is in spec §4.7 ("Recruited channels").
    return [
        row("m_jaw", False, "jaw: + open (yawn at +1), - clenched with lips closed",
            _c("jawOpen", ("mouthLowerDownLeft", 0.3), ("mouthLowerDownRight", 0.3),
               ("mouthFunnel", 0.2)),
            _c("mouthClose", ("mouthPressLeft", 0.3), ("mouthPressRight", 0.3))),
        row("m_press", False, "lips: + pressed together; - relaxed (no ARKit channel)",
            _c("mouthPressLeft", "mouthPressRight", ("mouthRollUpper", 0.2),
               ("mouthRollLower", 0.2))),
        row("m_smile", True, "mouth corner: + smile, - frown",
            _c("mouthSmile{S}", ("mouthDimple{S}", 0.25)),
            _c("mouthFrown{S}", ("mouthShrugLower", 0.2))),
        row("m_pucker", False, "lips: + puckered (kiss at +1), - stretched wide",
            _c("mouthPucker", ("mouthFunnel", 0.3)),
            _c("mouthStretchLeft", "mouthStretchRight")),
        row("m_funnel", False, "lips: + funnelled, - drawn back (dimpled)",
            _c("mouthFunnel"), _c("mouthDimpleLeft", "mouthDimpleRight")),
        row("m_shift", False, "whole mouth: + toward the character's left, - right",
            _c("mouthLeft"), _c("mouthRight"), lateral=True),
        row("m_roll", False, "lips: + rolled in, - shrugged out",
            _c("mouthRollUpper", "mouthRollLower"), _c("mouthShrugUpper", "mouthShrugLower")),
        row("m_upper_lip", False,
            "upper lip: + raised (bared teeth at +1); - lowered over the teeth",
            _c("mouthUpperUpLeft", "mouthUpperUpRight", ("mouthLowerDownLeft", 0.3),
               ("mouthLowerDownRight", 0.3), ("mouthStretchLeft", 0.3),
               ("mouthStretchRight", 0.3)),
            _c(("mouthRollUpper", 0.5))),
        row("m_lower_lip", False, "lower lip: + pulled down; - pushed up",
            _c("mouthLowerDownLeft", "mouthLowerDownRight", ("mouthStretchLeft", 0.2),
               ("mouthStretchRight", 0.2)),
            _c(("mouthShrugLower", 0.5))),
        row("m_jaw_shift", False, "jaw sideways: + toward the character's left, - right",
            _c("jawLeft"), _c("jawRight"), lateral=True),
        row("m_jaw_forward", False, "jaw: + thrust forward; - retracted (no ARKit channel)",
            _c("jawForward")),
        row("m_cheek_puff", False, "cheeks: + puffed; - sucked in (no ARKit channel)",
            _c("cheekPuff")),
        row("m_tongue", False, "tongue: + out; - retracted (no ARKit channel)",
            _c("tongueOut", ("jawOpen", 0.2))),
    ]


ROWS: tuple[DimensionRow, ...] = tuple(
    _arm() + _palm() + _fingers() + _head_body() + _face() + _mouth()
)


def _expand(rows: tuple[DimensionRow, ...]) -> tuple[Dimension, ...]:
    out: list[Dimension] = []
    for row in rows:
        for side in (SIDES if row.sided else (None,)):
            name = f"{row.id}_{side}" if side else row.id
            out.append(Dimension(name, len(out), row, side))
    return tuple(out)


DIMENSIONS: tuple[Dimension, ...] = _expand(ROWS)

TRACKING_PARTS: tuple[str, ...] = (
    "arm_l", "arm_r", "hand_l", "hand_r", "head", "body", "face", "mouth",
)
TRACKING_STATES: tuple[str, ...] = ("tracked", "lost", "not_estimated")

CONTACT_SITES: tuple[str, ...] = (
    "none", "head_top", "forehead", "eye_l", "eye_r", "nose", "mouth", "chin", "cheek_l",
    "cheek_r", "ear_l", "ear_r", "neck", "chest", "stomach", "shoulder_l", "shoulder_r",
    "upperarm_l", "upperarm_r", "forearm_l", "forearm_r", "hand_l", "hand_r", "hip_l", "hip_r",
)

AFFECT_LABELS: tuple[str, ...] = (
    "neutral", "happy", "sad", "angry", "surprised", "fearful", "disgusted",
)
AFFECT_MODES: tuple[str, ...] = ("add", "blend")

CONDITIONS: tuple[ConditionRow, ...] = (
    ConditionRow("mouthing", "weights", VISEMES, (),
                 "viseme mix: a share in [0, 1] per viseme, sum <= 1; "
                 "an empty or all-zero mix means mouthing is inactive (spec §4.7)"),
    ConditionRow("tracking", "enum_map", TRACKING_PARTS, TRACKING_STATES,
                 "tracking state per part; an absent part is tracked"),
    ConditionRow("contact", "enum_map", ("hand_l", "hand_r"), CONTACT_SITES,
                 "body site each hand touches; absent or 'none' = no contact"),
    ConditionRow("affect", "record", ("label", "intensity", "mode"), AFFECT_LABELS,
                 "affect layer: label, intensity in [0, 1], mode add|blend over the "
                 "affect-capable dims (spec §3.4.4)"),
)

#: Reference avatar of spec §4.1 (metres). r = S / (2 d) per axis so that L = S on it.
REFERENCE_AVATAR = ReferenceAvatar(
    hand_length=0.19, torso_length=0.50, arm_length=0.56, shoulder_width=0.36,
    r=(0.9474, 0.36, 0.3214),
)

#: Share of the body rotation per helix-humanoid@1 spine joint (spec §4.5), hips to neck.
SPINE_SHARES: tuple[tuple[str, float], ...] = (
    ("spine_01", 0.10), ("spine_02", 0.15), ("spine_03", 0.25), ("spine_04", 0.25),
    ("spine_05", 0.25),
)

#: The conservative seed table of seed 000 §4.7: viseme -> implied mouth-dim baseline.
MOUTHING_SEED_TABLE: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = (
    ("aa", (("m_jaw", 0.7),)),
    ("PP", (("m_jaw", -0.7), ("m_press", 0.7))),
)

#: Affect presets (spec §3.4.4): label -> normalized target per affect-capable dim.
AFFECT_PRESETS: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = (
    ("neutral", ()),
    ("happy", (("m_smile_l", 0.8), ("m_smile_r", 0.8), ("f_cheek_l", 0.5),
               ("f_cheek_r", 0.5), ("f_squint_l", 0.3), ("f_squint_r", 0.3))),
    ("sad", (("f_brow_inner", 0.7), ("m_smile_l", -0.6), ("m_smile_r", -0.6),
             ("h_pitch", 0.15), ("b_pitch", 0.1))),
    ("angry", (("f_brow_l", -0.8), ("f_brow_r", -0.8), ("f_squint_l", 0.4),
               ("f_squint_r", 0.4), ("f_nose_l", 0.3), ("f_nose_r", 0.3), ("m_press", 0.5))),
    ("surprised", (("f_brow_l", 0.8), ("f_brow_r", 0.8), ("f_brow_inner", 0.6),
                   ("f_blink_l", -0.7), ("f_blink_r", -0.7), ("m_jaw", 0.5))),
    ("fearful", (("f_brow_inner", 0.8), ("f_brow_l", 0.4), ("f_brow_r", 0.4),
                 ("f_blink_l", -0.6), ("f_blink_r", -0.6), ("m_pucker", -0.5),
                 ("b_pitch", -0.1))),
    ("disgusted", (("f_nose_l", 0.8), ("f_nose_r", 0.8), ("m_upper_lip", 0.6),
                   ("f_brow_l", -0.3), ("f_brow_r", -0.3), ("m_smile_l", -0.3),
                   ("m_smile_r", -0.3))),
)


class Registry:
    """Thin front over the frozen tables: lookups, the export and the content hash."""

    version = REGISTRY_VERSION

    def __init__(self, dimensions: tuple[Dimension, ...] = DIMENSIONS) -> None:
        self.dimensions = dimensions
        self.by_id: dict[str, Dimension] = {d.id: d for d in dimensions}

    def __len__(self) -> int:
        return len(self.dimensions)

    def index(self, dim_id: str) -> int:
        """Vector index of ``dim_id``; raises ``KeyError`` for an unknown id."""
        return self.by_id[dim_id].index

    def ids(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.dimensions)

    def export(self) -> dict[str, object]:
        """The registry as plain JSON data (schema: ``schemas/registry.schema.json``)."""
        ref = REFERENCE_AVATAR
        return {
            "version": self.version,
            "dimensions": [
                {
                    "id": d.id, "index": d.index, "base": d.row.id, "group": d.row.group,
                    "side": d.side, "polarity": d.row.polarity, "max": d.row.max,
                    "unit": d.row.unit, "default": d.row.default, "affect": d.row.affect,
                    "lateral": d.row.lateral, "bits": d.row.bits,
                    "angle_deg": d.row.angle_deg, "neutral_deg": d.row.neutral_deg, "part": d.part,
                    "meaning": d.row.meaning,
                    "positive": [{"channel": c.name, "gain": c.gain} for c in d.channels(1)],
                    "negative": [{"channel": c.name, "gain": c.gain} for c in d.channels(-1)],
                }
                for d in self.dimensions
            ],
            "conditions": [
                {"id": c.id, "kind": c.kind, "keys": list(c.keys), "values": list(c.values),
                 "meaning": c.meaning}
                for c in CONDITIONS
            ],
            "reference_avatar": {
                "hand_length": ref.hand_length, "torso_length": ref.torso_length,
                "arm_length": ref.arm_length, "shoulder_width": ref.shoulder_width,
                "r": list(ref.r),
            },
            "spine_shares": [{"joint": j, "share": s} for j, s in SPINE_SHARES],
            "mouthing_seed_table": [
                {"viseme": v, "baseline": [{"dim": d, "value": x} for d, x in pairs]}
                for v, pairs in MOUTHING_SEED_TABLE
            ],
            "affect_presets": [
                {"label": lab, "targets": [{"dim": d, "value": x} for d, x in pairs]}
                for lab, pairs in AFFECT_PRESETS
            ],
            # spec §4.6, §6.1: the 52 ARKit channels in ARKit order (the order of reports)
            "arkit_channels": list(ARKIT_CHANNELS),
        }

    @cached_property
    def hash(self) -> str:
        """sha256 (hex) of the canonical JSON export (spec §4.9): sorted keys, no spaces."""
        text = json.dumps(self.export(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()


REGISTRY = Registry()
