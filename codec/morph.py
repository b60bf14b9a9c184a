"""Face and mouth dims <-> the 52 ARKit blendshape weights (spec §4.6, §4.7).

Every face/mouth row names, per direction, the ARKit channels it drives and a gain
(registry rows): gain 1 for the channel's one PRIMARY (dim, direction), a gain < 1 for
a SECONDARY recruitment (spec §4.7: the extremes reach yawn, kiss, bared teeth). The
mapping is linear per direction and is held here as two precomputed ``(52, K)`` gain
matrices over the ``K`` face/mouth dims, built once at import from
:mod:`posewire.codec.registry`:

* dims -> weights (consumer, spec §4.6): ``w_c = Σ g·max(n, 0)`` over the positive
  drives of ``c`` plus ``Σ g·max(-n, 0)`` over its negative drives; weights clipped to
  ``[0, 1]`` and the clip reported.
* weights -> dims (producer, spec §4.6): joint least squares over all (dim, direction)
  columns, ``(p, m) = G⁺ w`` with the precomputed pseudo-inverse ``G⁺`` of the
  ``(52, 2K)`` gain matrix, then ``p, m`` clipped to ``≥ 0`` and ``n = p - m`` clipped
  to ``[-1, 1]``; a direction without channels solves to 0.

The used columns of ``G`` are linearly independent (checked at import), so the round
trip dims -> weights -> dims is exact (to rounding) for in-range dims whenever no
channel clipped — in the directions that have channels (a negative value of a dim whose
negative direction has no channel, e.g. ``f_squint``, is not representable in ARKit and
comes back as 0).

Weights are dimensionless in ``[0, 1]``; arrays are float64, batch first, the last axis
in :data:`posewire.codec.registry.ARKIT_CHANNELS` order (52) or registry order (``N``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .ieee import SparseTable, exact_pseudo_inverse
from .registry import ARKIT_CHANNELS, DIMENSIONS
from .vector import DEFAULTS, N_DIMS, as_vector

__all__ = [
    "ARKIT_INDEX",
    "ARKIT_MIRROR_PERMUTATION",
    "CHANNEL_DRIVERS",
    "FACE_DIM_INDICES",
    "IGNORED_ARKIT_NAMES",
    "NEGATIVE_GAINS",
    "N_ARKIT",
    "POSITIVE_GAINS",
    "SECONDARY_DRIVERS",
    "SOLVE_ROUNDING",
    "WeightReport",
    "arkit_array_to_dict",
    "arkit_dict_to_array",
    "arkit_to_dims",
    "arkit_to_dims1",
    "dims_to_arkit",
    "validate_weights",
]

Policy = Literal["raise", "clamp"]

#: Number of ARKit channels (spec §4.6).
N_ARKIT = len(ARKIT_CHANNELS)
#: ``{ARKit name: index}`` in :data:`ARKIT_CHANNELS` order.
ARKIT_INDEX: dict[str, int] = {name: i for i, name in enumerate(ARKIT_CHANNELS)}
#: Names a producer may meet that are not channels and are dropped on purpose:
#: MediaPipe's face blendshape list starts with ``_neutral``.
IGNORED_ARKIT_NAMES: frozenset[str] = frozenset({"_neutral"})

#: Registry indices of the dims that drive ARKit channels (groups face and mouth).
FACE_DIM_INDICES: NDArray[np.intp] = np.array(
    [d.index for d in DIMENSIONS if d.row.group in ("face", "mouth")], dtype=np.intp
)


def _gain_tables() -> tuple[NDArray[np.float64], NDArray[np.float64],
                            tuple[tuple[str, int], ...],
                            tuple[tuple[tuple[str, int, float], ...], ...]]:
    positive = np.zeros((N_ARKIT, FACE_DIM_INDICES.size))
    negative = np.zeros((N_ARKIT, FACE_DIM_INDICES.size))
    primary: list[list[tuple[str, int]]] = [[] for _ in ARKIT_CHANNELS]
    secondary: list[list[tuple[str, int, float]]] = [[] for _ in ARKIT_CHANNELS]
    for k, index in enumerate(FACE_DIM_INDICES):
        dim = DIMENSIONS[int(index)]
        for direction, table in ((1, positive), (-1, negative)):
            for channel in dim.channels(direction):
                c = ARKIT_INDEX[channel.name]  # KeyError = registry typo
                if table[c, k] != 0.0 or not 0.0 < channel.gain <= 1.0:
                    raise RuntimeError(f"{dim.id} {direction:+d}: bad channel {channel}")
                table[c, k] = channel.gain
                if channel.gain == 1.0:
                    primary[c].append((dim.id, direction))
                else:
                    secondary[c].append((dim.id, direction, channel.gain))
    # spec §4.6: every channel has exactly one primary (dim, direction), gain 1
    bad = [ARKIT_CHANNELS[c] for c, who in enumerate(primary) if len(who) != 1]
    if bad:
        raise RuntimeError(f"ARKit channels without exactly one primary driver: {bad}")
    return (positive, negative, tuple(who[0] for who in primary),
            tuple(tuple(who) for who in secondary))


#: ``POSITIVE_GAINS[c, k]``: gain of channel ``c`` on the positive part of face dim ``k``
#: (``k`` indexes :data:`FACE_DIM_INDICES`), primary (1) or secondary (< 1);
#: :data:`NEGATIVE_GAINS` likewise.
#: :data:`CHANNEL_DRIVERS` ``[c]`` is the one PRIMARY ``(dim id, direction ±1)`` of ``c``
#: (gain 1); :data:`SECONDARY_DRIVERS` ``[c]`` the ``(dim id, direction, gain < 1)``
#: triples that recruit ``c`` as well (spec §4.7), in registry order.
POSITIVE_GAINS, NEGATIVE_GAINS, CHANNEL_DRIVERS, SECONDARY_DRIVERS = _gain_tables()

#: ``(52, 2K)``: the positive columns of every face dim, then the negative columns.
_GAINS = np.hstack([POSITIVE_GAINS, NEGATIVE_GAINS])


def _exact_solve_table() -> NDArray[np.float64]:
    # spec §4.6 (§1.5): joint least squares over all (dim, direction) columns, the
    # pseudo-inverse computed exactly from the registry's decimal gains and rounded once per
    # entry, so every machine has the same table; a column without channels solves to 0.
    # The used columns must be independent (exact round trip).
    exact = [[Fraction(repr(g)) for g in row] for row in _GAINS.tolist()]
    try:
        inverse = exact_pseudo_inverse(exact)
    except ValueError as exc:
        raise RuntimeError("face/mouth (dim, direction) columns are linearly dependent") from exc
    out = np.array([[float(x) for x in row] for row in inverse])
    return out


#: The pseudo-inverse's rounding (spec §4.6): a solved part ``p`` or ``m`` up to
#: ``SOLVE_ROUNDING`` is 0 (so zero weights give exact zeros), and a solved ``|n|`` up to
#: ``1 + SOLVE_ROUNDING`` is clipped to ±1 without a report.
SOLVE_ROUNDING = 1e-12

#: ``(52, 2K)`` transposed pseudo-inverse: ``weights · _SOLVE`` = (p..., m...).
_SOLVE = np.ascontiguousarray(_exact_solve_table().T)
#: :data:`_SOLVE` applied in the stated order (spec §1.5): the batch and float paths agree bit for bit.
_SOLVE_TABLE = SparseTable(_SOLVE)
#: ``(K, 52)``: which channels a face/mouth dim drives (either direction).
_DRIVEN_BY = SparseTable(((POSITIVE_GAINS + NEGATIVE_GAINS) != 0.0).T.astype(np.float64))


def _drive_tables() -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.intp],
                             NDArray[np.float64], NDArray[np.float64],
                             tuple[tuple[NDArray[np.intp], NDArray[np.intp]], ...]]:
    k = FACE_DIM_INDICES.size
    position = {int(d): i for i, d in enumerate(FACE_DIM_INDICES)}
    prim_col = np.array([position[_DIM_INDEX[d]] + (0 if s > 0 else k)
                         for d, s in CHANNEL_DRIVERS], dtype=np.intp)
    sec = [(c, int(col)) for c in range(N_ARKIT)
           for col in np.flatnonzero((_GAINS[c] != 0.0) & (_GAINS[c] < 1.0))]
    sec_col = np.array([col for _, col in sec], dtype=np.intp)
    # layers: the j-th secondary of every channel, so that no layer names a channel twice
    layers: list[list[int]] = []
    depth: dict[int, int] = {}
    for term, (c, _) in enumerate(sec):
        j = depth[c] = depth.get(c, -1) + 1
        if j == len(layers):
            layers.append([])
        layers[j].append(term)
    return (prim_col % k, np.where(prim_col < k, 1.0, -1.0), sec_col % k,
            np.where(sec_col < k, 1.0, -1.0),
            np.array([_GAINS[c, col] for c, col in sec]),
            tuple((np.array(t, dtype=np.intp), np.array([sec[i][0] for i in t], dtype=np.intp))
                  for t in layers))


_DIM_INDEX = {d.id: d.index for d in DIMENSIONS}
_PRIM_K, _PRIM_SIGN, _SEC_K, _SEC_SIGN, _SEC_GAIN, _SEC_LAYERS = _drive_tables()


def _drive(face: NDArray[np.float64]) -> NDArray[np.float64]:
    """Raw (unclipped) weights ``(..., 52)`` of finite face/mouth values ``(..., K)``:
    the primary drive of each channel (one gather, gain 1) plus its secondary drives,
    added layer by layer (spec §4.6). The one kernel of :func:`dims_to_arkit` and the
    mouthing fast path (``posewire.codec.mouthing._valid_mouthing_arkit``)."""
    raw = np.maximum(face[..., _PRIM_K] * _PRIM_SIGN, 0.0)
    secondary = np.maximum(face[..., _SEC_K] * _SEC_SIGN, 0.0) * _SEC_GAIN
    for terms, channels in _SEC_LAYERS:
        raw[..., channels] += secondary[..., terms]
    return raw


_PRIM1 = tuple(zip(_PRIM_K.tolist(), _PRIM_SIGN.tolist(), strict=True))
_SEC1 = tuple(zip(_SEC_K.tolist(), _SEC_SIGN.tolist(), _SEC_GAIN.tolist(), strict=True))
_LAYERS1 = tuple(tuple(zip(terms.tolist(), channels.tolist(), strict=True)) for terms, channels in _SEC_LAYERS)
#: _drive1's tables: each distinct (face value, sign) drive once, the primary drive of every
#: channel as one C-level gather of those, and the secondary terms layer by layer as
#: (drive, gain, channel)
_DRIVES1 = tuple(dict.fromkeys([*_PRIM1, *((k, sign) for k, sign, _ in _SEC1)]))
_PRIM_GET1 = operator.itemgetter(*(_DRIVES1.index(p) for p in _PRIM1))
_SEC_ORDER1 = tuple((_DRIVES1.index(_SEC1[term][:2]), _SEC1[term][2], channel)
                    for layer in _LAYERS1 for term, channel in layer)


def _drive1(face: list[float]) -> list[float]:
    """:func:`_drive` of one frame's finite face/mouth values as Python floats: the same
    products, maxima and additions, layer by layer (each IEEE operation alone: the same values)."""
    # np.maximum(x, 0.0) of a finite x, zeros +0.0 as numpy's SIMD maximum gives them
    drive = [x if (x := face[k] * sign) > 0.0 else 0.0 for k, sign in _DRIVES1]
    raw = list(_PRIM_GET1(drive))
    for term, gain, channel in _SEC_ORDER1:  # a channel's secondaries in layer order
        raw[channel] = raw[channel] + drive[term] * gain
    return raw


def _mirror_permutation() -> NDArray[np.intp]:
    def swap(name: str) -> str:
        return name.replace("Left", "\0").replace("Right", "Left").replace("\0", "Right")

    return np.array([ARKIT_INDEX[swap(n)] for n in ARKIT_CHANNELS], dtype=np.intp)


#: ``weights[..., ARKIT_MIRROR_PERMUTATION]`` swaps every Left/Right channel pair
#: (``eyeLookInLeft`` <-> ``eyeLookInRight``, ``mouthLeft`` <-> ``mouthRight``, ...);
#: ``dims_to_arkit(mirror(v))`` equals it applied to ``dims_to_arkit(v)`` (spec §3.2), to
#: rounding where both sides' drives sum on one self-mirror channel (``mouthShrugLower``).
ARKIT_MIRROR_PERMUTATION = _mirror_permutation()


@dataclass(frozen=True)
class WeightReport:
    """What :func:`validate_weights` / :func:`arkit_to_dims` changed.

    ``clamped`` and ``replaced`` are ``(..., 52)`` masks over input weights outside
    ``[0, 1]`` (clamped) or non-finite (replaced by 0); ``dims_clipped`` is a
    ``(..., N)`` mask over the dims whose solved value left ``[-1, 1]`` and was clipped.
    """

    clamped: NDArray[np.bool_]
    replaced: NDArray[np.bool_]
    dims_clipped: NDArray[np.bool_]

    @property
    def ok(self) -> bool:
        """True when nothing was clamped, replaced or clipped."""
        return not (self.clamped.any() or self.replaced.any() or self.dims_clipped.any())

    def channels(self) -> dict[str, list[str]]:
        """Names of the channels clamped / replaced and dims clipped, in any frame."""
        clamped = np.any(self.clamped.reshape(-1, N_ARKIT), axis=0)
        replaced = np.any(self.replaced.reshape(-1, N_ARKIT), axis=0)
        clipped = np.any(self.dims_clipped.reshape(-1, N_DIMS), axis=0)
        return {
            "clamped": [n for i, n in enumerate(ARKIT_CHANNELS) if clamped[i]],
            "replaced": [n for i, n in enumerate(ARKIT_CHANNELS) if replaced[i]],
            "dims_clipped": [d.id for d in DIMENSIONS if clipped[d.index]],
        }


def arkit_dict_to_array(weights: Mapping[str, float]) -> NDArray[np.float64]:
    """``{ARKit name: weight}`` as a ``(52,)`` array in ARKIT_CHANNELS order.

    Channels not named are 0. ``_neutral`` (MediaPipe) is ignored; any other unknown
    name raises ``usage.unknown_id``. Values are not range-checked here
    (:func:`validate_weights` does that).
    """
    out = np.zeros(N_ARKIT)
    for name, value in weights.items():
        if name in IGNORED_ARKIT_NAMES:
            continue
        index = ARKIT_INDEX.get(name)
        if index is None:
            raise UsageError("usage.unknown_id", f"no ARKit channel {name!r}", path=name)
        out[index] = float(value)
    return out


def arkit_array_to_dict(weights: ArrayLike, *, nonzero_only: bool = False) -> dict[str, float]:
    """One ``(52,)`` weight array as ``{ARKit name: weight}`` (optionally only ≠ 0)."""
    arr = _as_weights(weights)
    if arr.ndim != 1:
        raise UsageError("usage.shape", f"expected one (52,) weight array, got {arr.shape}")
    return {n: float(arr[i]) for i, n in enumerate(ARKIT_CHANNELS)
            if not nonzero_only or arr[i] != 0.0}


def _as_weights(weights: ArrayLike | Mapping[str, float]) -> NDArray[np.float64]:
    if isinstance(weights, Mapping):
        return arkit_dict_to_array(weights)
    arr = np.asarray(weights, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != N_ARKIT:
        raise UsageError("usage.shape", f"expected shape (..., {N_ARKIT}), got {arr.shape}")
    return arr


def _check_policy(policy: str) -> None:
    if policy not in ("raise", "clamp"):
        raise UsageError("usage.bad_option", f"policy must be 'raise' or 'clamp', not {policy!r}")


def validate_weights(
    weights: ArrayLike | Mapping[str, float], *, policy: Policy = "raise"
) -> tuple[NDArray[np.float64], WeightReport]:
    """Check ARKit weights ``(..., 52)`` (or a name dict) against ``[0, 1]``.

    ``policy="raise"``: ``usage.not_finite`` / ``usage.out_of_range`` naming the first
    offending channel. ``policy="clamp"``: a copy with out-of-range weights clamped and
    non-finite ones replaced by 0, plus a :class:`WeightReport` of what changed.
    """
    _check_policy(policy)
    arr = _as_weights(weights)
    finite = np.isfinite(arr)
    outside = finite & ((arr < 0.0) | (arr > 1.0))
    no_dims = np.zeros((*arr.shape[:-1], N_DIMS), dtype=bool)
    if policy == "raise":
        for mask, code, what in ((~finite, "usage.not_finite", "is not finite"),
                                 (outside, "usage.out_of_range", "is outside [0, 1]")):
            if mask.any():
                where = tuple(np.argwhere(mask)[0])
                name = ARKIT_CHANNELS[int(where[-1])]
                raise UsageError(code, f"{name} = {float(arr[where])!r} {what}", path=name)
        none = np.zeros(arr.shape, dtype=bool)
        return arr.copy(), WeightReport(none, none.copy(), no_dims)
    out = np.where(finite, np.clip(arr, 0.0, 1.0), 0.0)
    return out, WeightReport(outside, ~finite, no_dims)


def dims_to_arkit(
    vector: ArrayLike, *, policy: Policy = "clamp"
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """ARKit weights for a pose vector (consumer side, spec §4.6).

    ``vector`` has shape ``(..., N)``; only the face and mouth dims are read, so other
    dims may be anything (NaN included). Returns ``(weights, clipped)``: weights of
    shape ``(..., 52)`` in ARKIT_CHANNELS order, in ``[0, 1]``, and a boolean mask of
    the channels whose raw weight was clipped to ``[0, 1]`` (spec §4.6: clip reported).

    ``policy="clamp"`` (default) treats a non-finite face/mouth dim as its default 0
    (spec §3.5) and flags its channels in ``clipped``; ``policy="raise"`` raises
    ``usage.not_finite`` / ``usage.out_of_range`` for a face/mouth dim that is NaN or
    outside ``[-1, 1]``.
    """
    _check_policy(policy)
    vec = as_vector(vector)
    face = vec[..., FACE_DIM_INDICES]
    finite = np.isfinite(face)
    if policy == "raise":
        bad = ~finite | (np.abs(np.where(finite, face, 0.0)) > 1.0)
        if bad.any():
            where = tuple(np.argwhere(bad)[0])
            dim = DIMENSIONS[int(FACE_DIM_INDICES[where[-1]])]
            code = "usage.not_finite" if not finite[where] else "usage.out_of_range"
            raise UsageError(code, f"{dim.id} = {float(face[where])!r}", path=dim.id)
    face = np.where(finite, face, 0.0)
    # spec §4.6: positive part through positive channels, negative part through negative,
    # the primary and secondary drives of a channel summed
    with np.errstate(over="ignore"):  # a huge finite dim (clamp policy) sums to inf -> 1
        raw = _drive(face)
    weights = np.clip(raw, 0.0, 1.0)
    nonfinite_channels = _DRIVEN_BY.apply((~finite).astype(np.float64)) > 0.0
    clipped = (raw != weights) | nonfinite_channels
    return weights, clipped


def arkit_to_dims(
    weights: ArrayLike | Mapping[str, float],
    *,
    into: ArrayLike | None = None,
    policy: Policy = "raise",
) -> tuple[NDArray[np.float64], WeightReport]:
    """Face/mouth dims solved from ARKit weights (producer side, spec §4.6).

    ``weights``: shape ``(..., 52)`` in ARKIT_CHANNELS order, or one ``{name: weight}``
    dict (see :func:`arkit_dict_to_array`). Weights are first checked with
    :func:`validate_weights` under ``policy``. Every face/mouth dim is written
    (joint least squares ``(p, m) = G⁺ w``, ``p, m ≥ 0``, ``n = p - m`` clipped to
    ``[-1, 1]``, clips reported); every other dim is taken from ``into`` (shape ``(N,)`` or
    broadcastable to ``(..., N)``) or, without ``into``, from the registry defaults.
    Returns ``(vector (..., N), report)``.
    """
    arr, report = validate_weights(weights, policy=policy)
    base = DEFAULTS if into is None else as_vector(into)
    try:
        shape = np.broadcast_shapes((*arr.shape[:-1], N_DIMS), base.shape)
    except ValueError as exc:
        raise UsageError("usage.shape", f"into {base.shape} does not fit weights {arr.shape}",
                         path="into") from exc
    out = np.array(np.broadcast_to(base, shape), dtype=np.float64)
    # spec §4.6: (p, m) = G⁺ w jointly, p, m ≥ 0, n = p - m clipped to [-1, 1]
    parts = _SOLVE_TABLE.apply(arr)  # spec §1.5: ordered, no BLAS
    parts = np.where(parts > SOLVE_ROUNDING, parts, 0.0)
    k = FACE_DIM_INDICES.size
    solved = parts[..., :k] - parts[..., k:]
    clipped_face = np.clip(solved, -1.0, 1.0)
    out[..., FACE_DIM_INDICES] = clipped_face
    dims_clipped = np.zeros(out.shape, dtype=bool)
    # a solve past ±1 by rounding only (|n| ≤ 1 + SOLVE_ROUNDING) is
    # clipped silently; a real overshoot is reported (spec §4.6)
    dims_clipped[..., FACE_DIM_INDICES] = np.abs(solved) > 1.0 + SOLVE_ROUNDING
    return out, WeightReport(report.clamped, report.replaced, dims_clipped)


def arkit_to_dims1(weights: NDArray[np.float64]) -> tuple[list[float], dict[str, list[str]]]:
    """:func:`arkit_to_dims` of one ``(52,)`` weight array under ``policy="clamp"``, for the
    live encoder's one frame at a time (spec §4.6): numpy's per-call overhead, not the
    arithmetic, is the cost there. Returns the face/mouth values in
    :data:`FACE_DIM_INDICES` order and :meth:`WeightReport.channels` of the report.

    The same steps as the batch path: weights outside ``[0, 1]`` clamped, non-finite ones
    replaced by 0 (:func:`validate_weights`); the one solve ``w @ G⁺`` (the batch path's
    ordered sum, so the parts are bit-equal); then per dim ``p, m`` rounded to 0 up to
    :data:`SOLVE_ROUNDING`, ``n = p − m`` clipped to ``[-1, 1]``, clips past the rounding
    reported.
    """
    arr = np.asarray(weights, dtype=np.float64)
    if arr.shape != (N_ARKIT,):
        raise UsageError("usage.shape", f"expected one ({N_ARKIT},) weight array, got {arr.shape}")
    values: list[float] = arr.tolist()
    clamped: list[str] = []
    replaced: list[str] = []
    if not all(0.0 <= w <= 1.0 for w in values):  # validate_weights, policy="clamp"
        for c, w in enumerate(values):
            if math.isfinite(w):
                if not 0.0 <= w <= 1.0:
                    clamped.append(ARKIT_CHANNELS[c])
                    values[c] = 0.0 if w < 0.0 else 1.0
            else:
                replaced.append(ARKIT_CHANNELS[c])
                values[c] = 0.0
        arr = np.array(values)
    return _solve1(_SOLVE_TABLE.apply1(values), clamped, replaced)


_FACE_IDS: tuple[str, ...] = tuple(DIMENSIONS[int(i)].id for i in FACE_DIM_INDICES)


def _solve1(parts: Sequence[float], clamped: list[str],
            replaced: list[str]) -> tuple[list[float], dict[str, list[str]]]:
    # spec §4.6: p, m ≥ 0 (rounding to 0), n = p − m clipped to [-1, 1], real overshoots reported
    k = len(_FACE_IDS)
    face: list[float] = []
    clipped: list[str] = []
    for i in range(k):
        p, m = parts[i], parts[k + i]
        n = (p if p > SOLVE_ROUNDING else 0.0) - (m if m > SOLVE_ROUNDING else 0.0)
        if abs(n) > 1.0 + SOLVE_ROUNDING:
            clipped.append(_FACE_IDS[i])
        face.append(1.0 if n > 1.0 else -1.0 if n < -1.0 else n)
    return face, {"clamped": clamped, "replaced": replaced, "dims_clipped": clipped}
