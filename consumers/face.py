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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.ieee import ordered_sum1
from posewire.codec.mouthing import _mouthing_drive1, _valid_mouthing_arkit, apply_mouthing, normalize_shares
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
#: Per vowel, the visemes folding into it, in VISEMES order: a vowel's weight is
#: ``0.0 + share + share ...`` in that order (stated additions, no matrix product, so one
#: frame and a batch give the same bits).
_FOLD_INTO: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, v in enumerate(VISEMES) if VOWEL_FOLD[v] == vowel) for vowel in VOWELS)


def _fold(mix: F64) -> F64:
    # (..., 15) mix -> (..., 5) vowel weights (_FOLD_INTO)
    out = np.zeros((*mix.shape[:-1], len(VOWELS)))
    for j, rows in enumerate(_FOLD_INTO):
        for i in rows:
            out[..., j] += mix[..., i]
    return out


def _fold1(mix: list[float]) -> list[float]:
    # _fold of one frame's mix in Python floats (the same additions)
    out = []
    for rows in _FOLD_INTO:
        acc = 0.0
        for i in rows:
            acc += mix[i]
        out.append(acc)
    return out
_LOWER_OK = bool((LOWER <= DEFAULTS).all() and (DEFAULTS <= UPPER).all())


def _validate_clamp(arr: F64) -> tuple[F64, ValidationReport]:
    # = posewire.codec.vector.validate(arr, policy="clamp"); all-finite input in fewer operations
    # (clamped iff the clip changed it; nothing replaced), anything else via validate
    out, report, _ = _validate_clamp_changed(arr)
    return out, report


def _validate_clamp_changed(arr: F64) -> tuple[F64, ValidationReport, bool]:
    # _validate_clamp and whether it changed anything (report.ok is False), known without
    # another pass over the masks for all-finite input (nothing replaced there)
    # (a NaN or ±inf passes the clip as NaN or a bound, so it shows as changed: only then
    # is finiteness looked at)
    if arr.ndim == 0 or arr.shape[-1] != N_DIMS or not _LOWER_OK:
        out, report = validate(arr, policy="clamp")
        return out, report, not report.ok
    clipped: F64 = np.minimum(np.maximum(arr, LOWER), UPPER)
    clamped = clipped != arr
    changed = bool(np.count_nonzero(clamped))  # a C call (ndarray.any goes through Python)
    if changed:
        finite = np.isfinite(arr)
        if not finite.all():  # a dim absent from the frame (NaN) or ±inf: the default
            # = validate: finite out-of-range values clamped (clipped differs), the rest replaced
            return np.where(finite, clipped, DEFAULTS), ValidationReport(clamped & finite, ~finite), True
    none = _NONE_REPLACED.get(arr.shape)
    if none is None:
        none = np.zeros(arr.shape, dtype=np.bool_)
    return clipped, ValidationReport(clamped, none), changed


#: All-False ``replaced`` masks of one frame, shared (read-only)
_NONE_REPLACED = {shape: np.zeros(shape, dtype=np.bool_) for shape in ((N_DIMS,), (1, N_DIMS))}
for _mask in _NONE_REPLACED.values():
    _mask.flags.writeable = False


_NO_MIX = np.zeros(len(VISEMES))  # no mouthing: an all-zero mix (read-only)
_NO_MIX.flags.writeable = False


@dataclass(frozen=True)
class FaceWeights:
    """What one capability plays: ``arkit`` ``{name: (...,) weight}`` restricted to the
    channels the rung drives (all 52 for viseme15/vowel5, ``jawOpen`` for jaw, none for
    none); ``visemes`` ``{name: (...,)}`` (the 15 visemes, the 5 vowels, or empty);
    ``report``: notes (clips, normalized mix, replaced dims, capability none), a read-only
    mapping; the replaced and clamped dims are named on first access (diagnostics, built
    only when asked for)."""

    arkit: dict[str, F64]
    visemes: dict[str, F64]
    report: Mapping[str, object] = field(default_factory=dict)


class _FaceReport(Mapping[str, object]):
    # FaceWeights.report of a validation that changed dims: {"clamped": [...], "replaced":
    # [...]} (the non-empty ones) and then the notes, built on first access
    __slots__ = ("_built", "_notes", "_validation")

    def __init__(self, validation: ValidationReport, notes: dict[str, object]) -> None:
        self._validation, self._notes = validation, notes
        self._built: dict[str, object] | None = None

    def _dict(self) -> dict[str, object]:
        if self._built is None:
            self._built = {**{k: v for k, v in self._validation.dims().items() if v}, **self._notes}
        return self._built

    def __getitem__(self, key: str) -> object:
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __repr__(self) -> str:
        return repr(self._dict())


def _report(changed: ValidationReport | None, notes: dict[str, object]) -> Mapping[str, object]:
    # FaceWeights.report: the notes, and the dims a validation changed (None: none changed)
    return notes if changed is None else _FaceReport(changed, notes)


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
    vec, validation, changed = _validate_clamp_changed(np.asarray(vector, dtype=np.float64))
    return _face_weights(vec, validation, capability, visemes, changed)


def _face_weights(vec: F64, validation: ValidationReport, capability: Capability,
                  visemes: ArrayLike | None, changed: bool | None = None,
                  vl: list[float] | None = None) -> FaceWeights:
    # face_weights of a vector already validated (posewire.consumers.pose.decode_frame: once a
    # frame); ``changed``: whether the validation changed anything (None: look at the masks);
    # ``vl``: one frame's vector as Python floats, when the caller has them
    report: dict[str, object] = {}  # notes; the changed dims are named on first access (_report)
    if changed is None:
        changed = not validation.ok
    shown = validation if changed else None
    if capability == "none":
        report["capability"] = "none: no face morphs played"
        return FaceWeights({}, {}, _report(shown, report))
    if capability != "jaw" and vec.size == N_DIMS:
        one = _shares1(visemes, vec.shape[:-1])
        if one is not None:  # one frame, a valid mix: Python floats, the same values
            return _face_weights1(vec, one[0], one[1], capability, shown, report, vl)
    shares = _NO_MIX if visemes is None else np.asarray(visemes, dtype=np.float64)
    shares, normalized = normalize_shares(shares)
    if normalized.any():
        report["mix_normalized"] = True
    if capability == "jaw":
        _, effective = apply_mouthing(vec, shares)
        jaw = np.clip(effective[..., REGISTRY.index("m_jaw")], 0.0, 1.0)
        return FaceWeights({"jawOpen": jaw}, {}, _report(shown, report))
    # = mouthing_to_arkit(vec, shares) for this validated vector and normalized mix (one
    # frame with a valid mix took _face_weights1 above)
    weights, clipped = _valid_mouthing_arkit(vec, shares)
    if clipped.any():
        report["clipped"] = True
    arkit = _by_name(ARKIT_CHANNELS, weights)
    mix = np.empty((*weights.shape[:-1], len(VISEMES)))  # the shares, per frame
    mix[...] = shares
    if capability == "viseme15":
        return FaceWeights(arkit, _by_name(VISEMES, mix), _report(shown, report))
    return FaceWeights(arkit, _by_name(VOWELS, _fold(mix)), _report(shown, report))


_NO_MIX1 = [0.0] * len(VISEMES)
_MAX = float(np.finfo(np.float64).max)


def _shares1(visemes: ArrayLike | None, batch: tuple[int, ...]) -> tuple[list[float], bool] | None:
    # normalize_shares of one frame's mix as Python floats: (mix, normalized), or None when
    # the mix is not one valid frame's (the array path then raises or broadcasts). The sum
    # is spec §1.5's, left to right from +0.0, as the array path's, so the normalized mix is
    # the same, bit for bit.
    if visemes is None:
        return _NO_MIX1, False
    arr = np.asarray(visemes, dtype=np.float64)
    if arr.shape[:-1] not in ((), batch) or arr.shape[-1:] != (len(VISEMES),):
        return None
    s = arr.ravel().tolist()
    total = ordered_sum1(s)
    # negative, NaN or inf (as_shares raises), or a sum that overflows: the array path.
    # A NaN makes the total NaN; without one, min() is exact
    if not (total <= _MAX and min(s) >= 0.0):
        return None
    if total > 1.0:
        return [x / total for x in s], True
    return s, False


def _face_weights1(vec: F64, shares: list[float], normalized: bool, capability: Capability,
                   shown: ValidationReport | None, notes: dict[str, object],
                   vl: list[float] | None = None) -> FaceWeights:
    # the viseme15 / vowel5 rungs of one frame (vec (1, N) or (N,)) and a normalized mix;
    # the report: ``notes`` (mix normalized, clipped added here) and the dims ``shown`` changed
    if normalized:
        notes["mix_normalized"] = True
    raw = _mouthing_drive1(vec.ravel().tolist() if vl is None else vl, shares)
    if max(raw) > 1.0:
        notes["clipped"] = True
    shape = vec.shape[:-1]
    report = _report(shown, notes)
    # one array of every weight (the ARKit ones clipped to 1 in place: = _valid_mouthing_arkit1,
    # bit for bit), then the mix; named rows of it
    names = VISEMES if capability == "viseme15" else VOWELS
    n = len(ARKIT_CHANNELS)
    weights = np.array(raw + (shares if capability == "viseme15" else _fold1(shares)))
    np.minimum(weights[:n], 1.0, out=weights[:n])
    if shape == (1,):  # (1,) rows
        rows = list(weights.reshape(-1, 1))
        return FaceWeights(dict(zip(ARKIT_CHANNELS, rows, strict=False)),  # the first n
                           dict(zip(names, rows[n:], strict=True)), report)
    return FaceWeights(_by_name(ARKIT_CHANNELS, weights[:n]), _by_name(names, weights[n:]), report)


def _by_name(names: tuple[str, ...], values: F64) -> dict[str, F64]:
    # {name: values[..., i]}: one view per name (0-d arrays for a single frame)
    if values.ndim == 1:
        return {name: values[..., i] for i, name in enumerate(names)}
    columns = values.T if values.ndim == 2 else np.moveaxis(values, -1, 0)
    return dict(zip(names, columns, strict=True))
