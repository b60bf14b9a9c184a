"""pydantic v2 models of the registry export and of a pose object (spec §3, §4.9).

The JSON Schemas in ``schemas/`` are generated from these models (``posewire
generate``, :mod:`posewire.generate`):

* :class:`RegistryExport` mirrors ``posewire.codec.registry.REGISTRY.export()`` field for field
  (``schemas/registry.schema.json``); the export itself is ``schemas/registry.json``.
* :data:`PoseObject` is a vector plus its hyper conditions as a JSON object
  ``{"registry": version, "values": {dim id: number}, "conditions": {...}}``
  (``schemas/pose.schema.json``). It is built from the registry with
  :func:`pydantic.create_model` so that every dim id is a field with its own bounds
  (spec §3.1) and its registry default; unknown ids are rejected.

The models validate *this* registry version. A consumer that meets dims newer than its
registry follows spec §3.5 (ignore and report), not schema rejection.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    model_validator,
)

from posewire.codec.conditions import MOUTHING_SUM_TOLERANCE
from posewire.codec.registry import (
    AFFECT_LABELS,
    AFFECT_MODES,
    ARKIT_CHANNELS,
    CONTACT_SITES,
    DIMENSIONS,
    GROUPS,
    REGISTRY_VERSION,
    TRACKING_PARTS,
    TRACKING_STATES,
    VISEMES,
)

__all__ = [
    "MOUTHING_SUM_TOLERANCE",
    "AffectCondition",
    "AffectPresetExport",
    "ChannelExport",
    "ConditionExport",
    "DimensionExport",
    "MouthingSeedExport",
    "PoseConditions",
    "PoseObject",
    "PoseValues",
    "ReferenceAvatarExport",
    "RegistryExport",
    "SpineShareExport",
    "TargetExport",
    "enum_str",
]

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
_DIM_IDS: tuple[str, ...] = tuple(d.id for d in DIMENSIONS)
_BASE_IDS: tuple[str, ...] = tuple(dict.fromkeys(d.row.id for d in DIMENSIONS))


def _member_of(values: Sequence[str], what: str) -> Callable[[str], str]:
    allowed = frozenset(values)

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not a known {what}")
        return value

    return check


def enum_str(values: Sequence[str], what: str) -> tuple[AfterValidator, WithJsonSchema]:
    """Metadata restricting a ``str`` to ``values``; its JSON Schema is an ``enum``.

    Use as ``Annotated[str, *enum_str(values, what)]``.
    """
    return (
        AfterValidator(_member_of(values, what)),
        WithJsonSchema({"type": "string", "enum": list(values)}),
    )


ArkitChannel = Annotated[str, *enum_str(ARKIT_CHANNELS, "ARKit channel")]
DimId = Annotated[str, *enum_str(_DIM_IDS, "dimension id")]
BaseId = Annotated[str, *enum_str(_BASE_IDS, "registry row id")]
Viseme = Annotated[str, *enum_str(VISEMES, "viseme")]
AffectLabel = Annotated[str, *enum_str(AFFECT_LABELS, "affect label")]
AffectMode = Annotated[str, *enum_str(AFFECT_MODES, "affect mode")]
TrackingState = Annotated[str, *enum_str(TRACKING_STATES, "tracking state")]
ContactSite = Annotated[str, *enum_str(CONTACT_SITES, "contact site")]
GroupName = Annotated[str, *enum_str(GROUPS, "group")]


# --------------------------------------------------------------------------- export


class ChannelExport(BaseModel):
    """One ARKit channel of one direction of a face/mouth dim, with its gain (§4.6)."""

    model_config = _STRICT
    channel: ArkitChannel
    gain: float = Field(gt=0.0, le=1.0)


class DimensionExport(BaseModel):
    """One slot of the vector as exported (spec §4; one per dim id, registry order)."""

    model_config = _STRICT
    id: DimId
    index: int = Field(ge=0)
    base: BaseId = Field(description="registry row id; the dim id without its _l/_r suffix")
    group: GroupName
    side: Literal["l", "r"] | None
    polarity: Literal["bipolar", "unipolar"]
    max: float = Field(gt=0.0, description="physical magnitude at |n| = 1, in `unit`")
    unit: str
    default: float = Field(ge=-1.0, le=1.0)
    affect: bool
    lateral: bool
    bits: Literal[8, 16]
    angle_deg: float | None = Field(gt=0.0)
    neutral_deg: float | None = Field(description="joint angle at n = 0, degrees (spec §4.3)")
    part: str = Field(description="tracking part (spec §3.4.2)")
    meaning: str
    positive: list[ChannelExport]
    negative: list[ChannelExport]


class ConditionExport(BaseModel):
    """One hyper-condition channel (spec §3.4)."""

    model_config = _STRICT
    id: Literal["mouthing", "tracking", "contact", "affect"]
    kind: Literal["weights", "enum_map", "record"]
    keys: list[str]
    values: list[str]
    meaning: str


class ReferenceAvatarExport(BaseModel):
    """The reference avatar of spec §4.1 (metres) and its per-axis ratios r."""

    model_config = _STRICT
    hand_length: float = Field(gt=0.0)
    torso_length: float = Field(gt=0.0)
    arm_length: float = Field(gt=0.0)
    shoulder_width: float = Field(gt=0.0)
    r: list[float] = Field(min_length=3, max_length=3)


class SpineShareExport(BaseModel):
    """Share of the body rotation given to one spine joint (spec §4.5)."""

    model_config = _STRICT
    joint: str
    share: float = Field(gt=0.0, le=1.0)


class TargetExport(BaseModel):
    """A normalized value for one dim (seed-table baseline or affect target)."""

    model_config = _STRICT
    dim: DimId
    value: float = Field(ge=-1.0, le=1.0)


class MouthingSeedExport(BaseModel):
    """One row of the mouthing seed table (seed 000 §4.7, spec §4.7)."""

    model_config = _STRICT
    viseme: Viseme
    baseline: list[TargetExport]


class AffectPresetExport(BaseModel):
    """One affect preset: label and its targets (spec §3.4.4)."""

    model_config = _STRICT
    label: AffectLabel
    targets: list[TargetExport]


class RegistryExport(BaseModel):
    """``REGISTRY.export()``: the registry as plain JSON data (spec §4.9)."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        title="posewire registry export",
        json_schema_extra={
            "description": "The posewire parameter registry (spec §4). Its sha256 over the "
                           "canonical JSON form (spec §4.9) is the registry hash."
        },
    )
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    dimensions: list[DimensionExport]
    conditions: list[ConditionExport]
    reference_avatar: ReferenceAvatarExport
    spine_shares: list[SpineShareExport]
    mouthing_seed_table: list[MouthingSeedExport]
    affect_presets: list[AffectPresetExport]
    arkit_channels: list[ArkitChannel] = Field(
        min_length=len(ARKIT_CHANNELS), max_length=len(ARKIT_CHANNELS),
        description="the 52 ARKit face channels in ARKit order: the order of every channel "
                    "report (spec §4.6, §6.1)")

    @model_validator(mode="after")
    def _indices_in_order(self) -> RegistryExport:
        if len(set(self.arkit_channels)) != len(self.arkit_channels):
            raise ValueError("arkit_channels repeats a channel")
        for i, dim in enumerate(self.dimensions):
            if dim.index != i:
                raise ValueError(f"dimension {dim.id} has index {dim.index}, expected {i}")
        total = sum(s.share for s in self.spine_shares)
        if self.spine_shares and not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(f"spine shares sum to {total}, not 1")
        return self


# ----------------------------------------------------------------------- pose object


def _value_field(index: int) -> tuple[Any, Any]:
    dim = DIMENSIONS[index]
    lower = -1.0 if dim.row.polarity == "bipolar" else 0.0
    return (
        float,
        Field(
            default=dim.row.default,
            ge=lower,
            le=1.0,
            allow_inf_nan=False,
            description=f"[{dim.index}] {dim.row.meaning} (max {dim.row.max:g} {dim.row.unit})",
        ),
    )


#: ``{dim id: normalized value}``: every dim optional (absent = its default, spec §3.1),
#: each bounded by its polarity (spec §3.1); unknown ids are rejected.
PoseValues: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "PoseValues",
    __config__=_STRICT,
    __doc__="Normalized dim values by id (spec §3.1); an absent dim takes its default.",
    **{d.id: _value_field(d.index) for d in DIMENSIONS},
)


class AffectCondition(BaseModel):
    """The affect condition (spec §3.4.4)."""

    model_config = _STRICT
    label: AffectLabel
    intensity: float = Field(ge=0.0, le=1.0)
    mode: AffectMode


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _absent(description: str | None = None) -> Any:
    """An optional field that may be absent but never null (no ``default`` in the schema)."""
    return Field(default=None, json_schema_extra=_drop_default, description=description)


def _mouthing_schema(schema: dict[str, Any]) -> None:
    schema.pop("default", None)
    schema["minItems"] = len(VISEMES)


def _fields_for(keys: Sequence[str], value_type: Any) -> dict[str, Any]:
    return {key: (value_type, _absent()) for key in keys}


#: ``{part: state}`` (spec §3.4.2); an absent part is tracked.
TrackingCondition: type[BaseModel] = create_model(
    "TrackingCondition", __config__=_STRICT, **_fields_for(TRACKING_PARTS, TrackingState)
)

#: ``{hand_l | hand_r: site}`` (spec §3.4.3); absent or "none" = no contact.
ContactCondition: type[BaseModel] = create_model(
    "ContactCondition", __config__=_STRICT, **_fields_for(("hand_l", "hand_r"), ContactSite)
)


def _check_mouthing(shares: list[float]) -> list[float]:
    if len(shares) != len(VISEMES):
        raise ValueError(f"mouthing has {len(shares)} shares, expected {len(VISEMES)}")
    if sum(shares) > 1.0 + MOUTHING_SUM_TOLERANCE:
        raise ValueError(f"mouthing shares sum to {sum(shares)!r} > 1")
    return shares


Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Mouthing = Annotated[
    list[Share], Field(max_length=len(VISEMES)), AfterValidator(_check_mouthing)
]


class PoseConditions(BaseModel):
    """The hyper conditions beside the vector (spec §3.4); each one optional.

    Unknown condition ids are ignored, not rejected (evolution rule, spec §3.5, §5),
    as ``posewire.codec.conditions.conditions_from_obj`` does.
    """

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    mouthing: Mouthing = Field(
        default=None,  # type: ignore[arg-type]
        json_schema_extra=_mouthing_schema,
        description="viseme shares in the order " + " ".join(VISEMES)
        + f"; exactly {len(VISEMES)} entries, each in [0, 1], sum <= 1 + "
        f"{MOUTHING_SUM_TOLERANCE:g}; absent = mouthing inactive (spec §3.4.1)",
    )
    tracking: TrackingCondition = _absent()
    contact: ContactCondition = _absent()
    affect: AffectCondition = _absent()


class PoseObject(BaseModel):
    """A pose as a JSON object: registry version, values by id, conditions (spec §3)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, title="posewire pose object")
    registry: Annotated[
        str,
        AfterValidator(_member_of((REGISTRY_VERSION,), "registry version")),
        WithJsonSchema({"type": "string", "const": REGISTRY_VERSION}),
    ]
    values: PoseValues
    conditions: PoseConditions = PoseConditions()
