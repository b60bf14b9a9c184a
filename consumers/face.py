"""Face weights per avatar face capability (seed 001 ladder; spec §4.6, §4.7).

Seed ``001_b0dd8389a32c0279.txt`` grades avatars by face capability:
``viseme15`` (the 15 artist visemes), ``vowel5`` (five vowel morphs), ``jaw`` (only a
jaw) and ``none``. :func:`face_weights` returns what each rung plays:

* ``viseme15``: ARKit weights from :func:`posewire.codec.mouthing.mouthing_to_arkit` (mouth dims
  as the delta Δ, spec §4.7) plus the 15 viseme weights = the mix, untouched;
* ``vowel5``: the same ARKit weights, and the mix folded onto the five vowels
  ``aa E I O U`` with :data:`VOWEL_FOLD` (a consonant plays the vowel whose mouth shape is
  nearest; ``sil`` plays nothing);
* ``jaw``: only ``jawOpen``, from the effective jaw ``e_jaw = b + Δ`` (spec §4.7
  "jaw-only avatars play jawOpen from e_jaw"), positive part;
* ``none``: nothing, and the report says so.

Weights in [0, 1], arrays batch first: vector ``(..., N)``, shares ``(..., 15)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.mouthing import _valid_mouthing_arkit, _valid_mouthing_arkit1, apply_mouthing, normalize_shares
from posewire.codec.registry import ARKIT_CHANNELS, REGISTRY, VISEMES
from posewire.codec.vector import DEFAULTS, LOWER, N_DIMS, UPPER, ValidationReport, validate

__all__ = ["CAPABILITIES", "VOWELS", "VOWEL_FOLD", "FaceWeights", "face_weights"]

F64 = NDArray[np.float64]
Capability = Literal["viseme15", "vowel5", "jaw", "none"]
#: The seed 001 ladder, richest first.
CAPABILITIES: tuple[str, ...] = ("viseme15", "vowel5", "jaw", "none")
#: The five vowel morphs of a ``vowel5`` avatar.
VOWELS: tuple[str, ...] = ("aa", "E", "I", "O", "U")
#: Viseme -> vowel it folds into (``None``: plays nothing).
VOWEL_FOLD: dict[str, str | None] = {
    "sil": None, "PP": "U", "FF": "I", "TH": "E", "DD": "E", "kk": "aa", "CH": "I",
    "SS": "I", "nn": "E", "RR": "O", "aa": "aa", "E": "E", "I": "I", "O": "O", "U": "U",
}
_FOLD = np.zeros((len(VISEMES), len(VOWELS)))
for _v, _t in VOWEL_FOLD.items():
    if _t is not None:
        _FOLD[VISEMES.index(_v), VOWELS.index(_t)] = 1.0
_LOWER_OK = bool((LOWER <= DEFAULTS).all() and (DEFAULTS <= UPPER).all())


def _validate_clamp(arr: F64) -> tuple[F64, ValidationReport]:
    # = posewire.codec.vector.validate(arr, policy="clamp"); all-finite input in fewer operations
    # (clamped iff the clip changed it; nothing replaced), anything else via validate
    if arr.ndim == 0 or arr.shape[-1] != N_DIMS or not _LOWER_OK:
        return validate(arr, policy="clamp")
    finite = np.isfinite(arr)
    if not finite.all():
        return validate(arr, policy="clamp")
    out: F64 = np.minimum(np.maximum(arr, LOWER), UPPER)
    return out, ValidationReport(out != arr, ~finite)


_NO_MIX = np.zeros(len(VISEMES))  # no mouthing: an all-zero mix (read-only)
_NO_MIX.flags.writeable = False


@dataclass(frozen=True)
class FaceWeights:
    """What one capability plays: ``arkit`` ``{name: (...,) weight}`` restricted to the
    channels the rung drives (all 52 for viseme15/vowel5, ``jawOpen`` for jaw, none for
    none); ``visemes`` ``{name: (...,)}`` (the 15 visemes, the 5 vowels, or empty);
    ``report``: notes (clips, normalized mix, replaced dims, capability none)."""

    arkit: dict[str, F64]
    visemes: dict[str, F64]
    report: dict[str, object] = field(default_factory=dict)


def face_weights(vector: ArrayLike, *, capability: Capability,
                 visemes: ArrayLike | None = None) -> FaceWeights:
    """Face weights of pose vectors ``(..., N)`` for a face ``capability`` (module doc).

    ``visemes``: the mouthing mix ``(..., 15)`` (spec §3.4.1) or ``None`` (no mouthing:
    Δ = the authored mouth dims). A mix summing over 1 is normalized and reported; NaN
    dims take their defaults and are reported (spec §3.5).
    """
    if capability not in CAPABILITIES:
        raise UsageError("usage.bad_option", f"capability must be one of {CAPABILITIES}, "
                         f"not {capability!r}")
    vec, validation = _validate_clamp(np.asarray(vector, dtype=np.float64))
    return _face_weights(vec, validation, capability, visemes)


def _face_weights(vec: F64, validation: ValidationReport, capability: Capability,
                  visemes: ArrayLike | None) -> FaceWeights:
    # face_weights of a vector already validated (posewire.consumers.pose.decode_frame: once a frame)
    report: dict[str, object] = {}
    if validation.clamped.any() or validation.replaced.any():
        report = {k: v for k, v in validation.dims().items() if v}
    if capability == "none":
        report["capability"] = "none: no face morphs played"
        return FaceWeights({}, {}, report)
    shares = _NO_MIX if visemes is None else np.asarray(visemes, dtype=np.float64)
    shares, normalized = normalize_shares(shares)
    if normalized.any():
        report["mix_normalized"] = True
    if capability == "jaw":
        _, effective = apply_mouthing(vec, shares)
        jaw = np.clip(effective[..., REGISTRY.index("m_jaw")], 0.0, 1.0)
        return FaceWeights({"jawOpen": jaw}, {}, report)
    # = mouthing_to_arkit(vec, shares) for this validated vector and normalized mix
    if vec.size == N_DIMS and shares.shape[:-1] in ((), vec.shape[:-1]):  # one frame: Python floats, the same values
        one, over = _valid_mouthing_arkit1(vec.ravel().tolist(), shares.ravel().tolist())
        weights: F64 = np.array(one).reshape(*vec.shape[:-1], len(ARKIT_CHANNELS))
        if over:
            report["clipped"] = True
    else:
        weights, clipped = _valid_mouthing_arkit(vec, shares)
        if clipped.any():
            report["clipped"] = True
    arkit = _by_name(ARKIT_CHANNELS, weights)
    mix = np.empty((*weights.shape[:-1], len(VISEMES)))  # the shares, per frame
    mix[...] = shares
    if capability == "viseme15":
        return FaceWeights(arkit, _by_name(VISEMES, mix), report)
    return FaceWeights(arkit, _by_name(VOWELS, mix @ _FOLD), report)


def _by_name(names: tuple[str, ...], values: F64) -> dict[str, F64]:
    # {name: values[..., i]}: one view per name (0-d arrays for a single frame)
    if values.ndim == 1:
        return {name: values[..., i] for i, name in enumerate(names)}
    columns = values.T if values.ndim == 2 else np.moveaxis(values, -1, 0)
    return dict(zip(names, columns, strict=True))
