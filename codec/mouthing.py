"""Mouthing: the viseme mix and the mouth dims as a bounded delta (spec §4.7, §3.4.1).

While mouthing is active the artist's ``viseme_*`` morphs are the primary mouth shape,
played with the shares ``s`` of the viseme mix (15 shares in
:data:`posewire.codec.registry.VISEMES` order, each in ``[0, 1]``, sum ≤ 1). The mix implies a
baseline ``b`` over the mouth dims (``b_d = Σ_v s_v·T[v][d]``, ``T`` =
:data:`posewire.codec.registry.MOUTHING_SEED_TABLE`), and the authored mouth dim ``a`` is a
*delta* from that baseline (spec §4.7):

* same direction (``sign(a) == sign(b)`` or ``b == 0``): ``Δ = a·(1 - |b|)`` — only the
  remaining range is used;
* opposite direction: ``Δ = a·|b|`` — ``a = -sign(b)`` cancels exactly, ``b + Δ = 0``.

The effective value is ``e = b + Δ ∈ [-1, 1]``. A consumer sends ``Δ`` (never ``e``)
through the ARKit mouth channels, because the viseme morphs already show ``b``; it
never drives ``viseme_*`` from ``m_*``. Laws: ``a = 0 → Δ = 0`` (the viseme is left
untouched), ``|b + Δ| ≤ 1``, ``Δ`` monotone in ``a``. An all-zero mix gives ``b = 0``
and so ``Δ = e = a``: mouthing inactive.

Arrays are float64, batch first; vectors ``(..., N)`` in registry order, shares
``(..., 15)``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .conditions import MOUTHING_SUM_TOLERANCE
from .errors import UsageError
from .ieee import SparseTable, ordered_sum
from .morph import FACE_DIM_INDICES, _drive, _drive1, dims_to_arkit
from .registry import DIMENSIONS, MOUTHING_SEED_TABLE, REGISTRY, VISEMES
from .vector import N_DIMS, as_vector

__all__ = [
    "BASELINE_TABLE",
    "MIX_STEP",
    "MOUTH_DIM_INDICES",
    "N_VISEMES",
    "SHARE_SUM_TOLERANCE",
    "MouthingMorphs",
    "apply_mouthing",
    "as_shares",
    "mix_from_mouth",
    "mouthing_delta",
    "mouthing_to_arkit",
    "normalize_shares",
    "shares_from_dict",
    "viseme_baseline",
]

N_VISEMES = len(VISEMES)
#: A mix whose sum is at most ``1 + SHARE_SUM_TOLERANCE`` is accepted as is (spec §3.4.1).
SHARE_SUM_TOLERANCE = MOUTHING_SUM_TOLERANCE
#: Registry indices of the mouth dims (group ``mouth``), the dims mouthing acts on.
MOUTH_DIM_INDICES: NDArray[np.intp] = np.array(
    [d.index for d in DIMENSIONS if d.row.group == "mouth"], dtype=np.intp
)


def _baseline_table() -> NDArray[np.float64]:
    table = np.zeros((N_VISEMES, N_DIMS))
    for viseme, pairs in MOUTHING_SEED_TABLE:
        for dim_id, value in pairs:
            index = REGISTRY.index(dim_id)
            if DIMENSIONS[index].row.group != "mouth":
                raise RuntimeError(f"mouthing seed table names non-mouth dim {dim_id}")
            table[VISEMES.index(viseme), index] = value
    return table


#: ``BASELINE_TABLE[v, i]``: baseline of dim ``i`` implied by viseme ``v`` at share 1
#: (spec §4.7 seed table: aa -> m_jaw +0.7; PP -> m_jaw -0.7, m_press +0.7).
BASELINE_TABLE = _baseline_table()
#: :data:`BASELINE_TABLE` applied in the stated order (spec §1.5), never a BLAS product.
_BASELINE = SparseTable(BASELINE_TABLE)


def as_shares(shares: ArrayLike) -> NDArray[np.float64]:
    """``shares`` as a float64 ``(..., 15)`` array; an empty last axis (an empty mix)
    means mouthing is inactive and becomes all zeros (spec §3.4.1). Raises
    ``usage.shape``, ``usage.not_finite``, or ``usage.out_of_range`` for a negative
    share.
    """
    arr = np.asarray(shares, dtype=np.float64)
    if arr.ndim >= 1 and arr.shape[-1] == 0:
        arr = np.zeros((*arr.shape[:-1], N_VISEMES))
    if arr.ndim == 0 or arr.shape[-1] != N_VISEMES:
        raise UsageError("usage.shape", f"expected shares of shape (..., {N_VISEMES}), "
                         f"got {arr.shape}", path="mouthing")
    for bad, code, what in ((~np.isfinite(arr), "usage.not_finite", "is not finite"),
                            (arr < 0.0, "usage.out_of_range", "is negative")):
        if bad.any():
            where = tuple(np.argwhere(bad)[0])
            viseme = VISEMES[int(where[-1])]
            raise UsageError(code, f"share of {viseme} = {float(arr[where])!r} {what}",
                             path=f"mouthing.{viseme}")
    return arr


def shares_from_dict(shares: Mapping[str, float]) -> NDArray[np.float64]:
    """``{viseme: share}`` as a ``(15,)`` array in VISEMES order; visemes not named are
    0, an unknown viseme raises ``usage.unknown_id``. Values are checked by the users of
    the array (:func:`as_shares`).
    """
    out = np.zeros(N_VISEMES)
    for viseme, value in shares.items():
        if viseme not in VISEMES:
            raise UsageError("usage.unknown_id", f"no viseme {viseme!r}",
                             path=f"mouthing.{viseme}")
        out[VISEMES.index(viseme)] = float(value)
    return out


def normalize_shares(shares: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The viseme mix with sum ≤ 1 (spec §4.7).

    ``shares (..., 15)``: a mix whose sum exceeds 1 is divided by its sum (then sums
    to 1) and reported; other mixes are returned unchanged. The sum is §1.5's, left to
    right; where it overflows binary64 the shares are first multiplied by ``2⁻ᵉ`` (``e``
    the exponent of the largest, exact as §1.5 scales a length), then summed and divided,
    so a finite mix is never returned empty. Returns
    ``(shares (..., 15), normalized (...,) bool)``. Negative or non-finite shares raise
    (:func:`as_shares`).
    """
    arr = as_shares(shares)
    with np.errstate(over="ignore"):
        total = ordered_sum(arr)  # spec §1.5: left to right, the sum the rule decides on
    overflow = np.isinf(total)
    if overflow.any():  # spec §1.5: a sum beyond binary64 is taken of the shares times 2⁻ᵉ
        exponent = np.where(overflow, np.frexp(arr.max(axis=-1))[1], 0)
        arr = np.where(overflow[..., None], np.ldexp(arr, -exponent[..., None]), arr)
        total = ordered_sum(arr)
    normalized = (total > 1.0) | overflow
    divisor = np.where(normalized, total, 1.0)[..., None]
    return arr / divisor, normalized


def _checked_mix(shares: ArrayLike) -> NDArray[np.float64]:
    arr = as_shares(shares)
    if (arr > 1.0).any():  # spec §3.4.1: each share in [0, 1], as conditions and wire check it
        where = tuple(np.argwhere(arr > 1.0)[0])
        viseme = VISEMES[int(where[-1])]
        raise UsageError("usage.out_of_range", f"share of {viseme} = {float(arr[where])!r} is above 1",
                         path=f"mouthing.{viseme}")
    total = ordered_sum(arr)  # spec §1.5, §3.4.1: left to right from +0.0, never pairwise
    if (total > 1.0 + SHARE_SUM_TOLERANCE).any():
        worst = float(total.max())
        raise UsageError("usage.out_of_range", f"viseme shares sum to {worst!r} > 1; "
                         "normalize_shares() them first", path="mouthing")
    return arr


def viseme_baseline(shares: ArrayLike) -> NDArray[np.float64]:
    """The baseline ``b (..., N)`` implied by a viseme mix ``shares (..., 15)`` (spec §4.7).

    ``b_d = Σ_v s_v·T[v][d]`` on the mouth dims, 0 elsewhere, limited to ``[-1, 1]``.
    The mix must already satisfy sum ≤ 1 (+1e-6): a larger sum raises
    ``usage.out_of_range`` — call :func:`normalize_shares` first, which reports.
    """
    return np.clip(_BASELINE.apply(_checked_mix(shares)), -1.0, 1.0)  # spec §1.5 order


def mouthing_delta(authored: ArrayLike, baseline: ArrayLike) -> NDArray[np.float64]:
    """The delta ``Δ`` of the §4.7 law, elementwise on broadcastable arrays.

    ``authored`` ``a`` and ``baseline`` ``b`` in ``[-1, 1]``. Same direction
    (equal signs, or ``b == 0``, or ``a == 0``): ``Δ = a·(1 - |b|)``;
    opposite: ``Δ = a·|b|``. Hence ``b + Δ ∈ [-1, 1]`` and ``a = -sign(b)`` gives
    ``b + Δ = 0`` exactly.
    """
    a = np.asarray(authored, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    magnitude = np.abs(b)
    # spec §4.7: b == 0 counts as the same direction; signs are compared directly
    # (not via a·b, which underflows to 0 for tiny operands and breaks monotonicity)
    same = (a == 0.0) | (b == 0.0) | ((a > 0.0) == (b > 0.0))
    return np.where(same, a * (1.0 - magnitude), a * magnitude)


def apply_mouthing(
    vector: ArrayLike, shares: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Split the authored mouth dims into delta and effective values (spec §4.7).

    ``vector (..., N)``: the authored pose; its mouth dims (``a``) must be finite and
    in ``[-1, 1]`` (else ``usage.not_finite`` / ``usage.out_of_range``; validate first).
    ``shares (..., 15)``: the viseme mix, sum ≤ 1 (see :func:`viseme_baseline`).
    Returns ``(delta, effective)``, both ``(..., N)``: a copy of ``vector`` whose mouth
    dims are replaced by ``Δ`` — what goes through the ARKit mouth channels — and one
    whose mouth dims are ``e = b + Δ``, the mouth the avatar shows. Non-mouth dims are
    passed through unchanged.
    """
    vec = as_vector(vector)
    authored = vec[..., MOUTH_DIM_INDICES]
    for bad, code in ((~np.isfinite(authored), "usage.not_finite"),
                      (np.abs(np.nan_to_num(authored)) > 1.0, "usage.out_of_range")):
        if bad.any():
            where = tuple(np.argwhere(bad)[0])
            dim = DIMENSIONS[int(MOUTH_DIM_INDICES[where[-1]])]
            raise UsageError(code, f"{dim.id} = {float(authored[where])!r}", path=dim.id)
    baseline = viseme_baseline(shares)[..., MOUTH_DIM_INDICES]
    delta = mouthing_delta(authored, baseline)
    shape = np.broadcast_shapes(vec.shape, (*delta.shape[:-1], N_DIMS))
    delta_vec = np.array(np.broadcast_to(vec, shape), dtype=np.float64)
    effective_vec = delta_vec.copy()
    delta_vec[..., MOUTH_DIM_INDICES] = delta
    # spec §4.7: e = b + Δ, kept in [-1, 1] by the law (the clip only absorbs rounding)
    effective_vec[..., MOUTH_DIM_INDICES] = np.clip(baseline + delta, -1.0, 1.0)
    return delta_vec, effective_vec


class MouthingMorphs(NamedTuple):
    """What a consumer plays while mouthing (spec §4.7).

    ``arkit (..., 52)``: ARKit weights with the mouth channels driven by ``Δ``;
    ``visemes (..., 15)``: the ``viseme_*`` morph weights (= the shares, untouched);
    ``clipped (..., 52)``: channels whose weight was clipped (from
    :func:`posewire.codec.morph.dims_to_arkit`).
    """

    arkit: NDArray[np.float64]
    visemes: NDArray[np.float64]
    clipped: NDArray[np.bool_]


def mouthing_to_arkit(vector: ArrayLike, shares: ArrayLike) -> MouthingMorphs:
    """The morph weights a consumer sends for ``vector (..., N)`` under mix ``shares``.

    Mouth dims go through the ARKit mouth channels as ``Δ`` (spec §4.7); face dims as
    usual (spec §4.6). The viseme weights are the shares themselves, broadcast to the
    batch.
    """
    delta_vec, _ = apply_mouthing(vector, shares)
    weights, clipped = dims_to_arkit(delta_vec)
    mix = _checked_mix(shares)
    visemes = np.array(np.broadcast_to(mix, (*weights.shape[:-1], N_VISEMES)))
    return MouthingMorphs(weights, visemes, clipped)


# -- fast kernel for already-validated inputs (posewire.consumers.face) ---------------------------
# The same drive kernel as dims_to_arkit (posewire.codec.morph._drive: one gather for the
# primary driver of every channel plus the secondary recruitments, spec §4.6/§4.7), fed with
# the face dims of the vector and the mouth deltas in place of the mouth dims.
_FACE_MOUTH_K = np.array([list(FACE_DIM_INDICES).index(int(d)) for d in MOUTH_DIM_INDICES],
                         dtype=np.intp)
_BASELINE_MOUTH = SparseTable(BASELINE_TABLE[:, MOUTH_DIM_INDICES])


def _valid_mouthing_arkit(
    vec: NDArray[np.float64], shares: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """``dims_to_arkit(apply_mouthing(vec, shares)[0])`` for a vector already through
    ``validate(policy="clamp")`` (finite, in range) and shares already through
    :func:`normalize_shares` (no checks here; same formulas, fewer array operations)."""
    authored = vec[..., MOUTH_DIM_INDICES]
    baseline = np.minimum(np.maximum(_BASELINE_MOUTH.apply(shares), -1.0), 1.0)  # = np.clip
    magnitude = np.abs(baseline)
    # mouthing_delta: opposite directions iff the signs multiply to -1 (exact)
    opposite = np.sign(authored) * np.sign(baseline) < 0.0
    delta = authored * np.where(opposite, magnitude, 1.0 - magnitude)
    face = vec[..., FACE_DIM_INDICES]
    if face.shape[:-1] != delta.shape[:-1]:
        shape = np.broadcast_shapes(face.shape[:-1], delta.shape[:-1])
        face = np.array(np.broadcast_to(face, (*shape, face.shape[-1])))
    face[..., _FACE_MOUTH_K] = delta
    raw = _drive(face)
    return np.minimum(raw, 1.0), raw > 1.0


_MOUTH1 = tuple(MOUTH_DIM_INDICES.tolist())
_FACE1 = tuple(FACE_DIM_INDICES.tolist())
_FACE_MOUTH_K1 = tuple(_FACE_MOUTH_K.tolist())
_FACE_GET1 = operator.itemgetter(*_FACE1)
#: (face slot, vector index, baseline terms) of the mouth dims with a baseline term: the
#: non-zero entries of BASELINE_TABLE's column in increasing viseme order, as
#: _BASELINE_MOUTH.apply1 adds them. A mouth dim without any has the baseline +0.0 for
#: every mix, so its delta is ``authored · (1.0 − 0.0)`` = the authored value, bit for bit
#: (spec §4.7: an all-zero baseline leaves the dim as authored)
_MOUTH_TERMS1 = tuple(
    (k, i, terms) for k, i, column in zip(_FACE_MOUTH_K1, _MOUTH1, BASELINE_TABLE[:, MOUTH_DIM_INDICES].T.tolist(),
                                          strict=True)
    if (terms := tuple((v, c) for v, c in enumerate(column) if c != 0.0)))


def _valid_mouthing_arkit1(vec: list[float], shares: list[float]) -> tuple[list[float], bool]:
    """:func:`_valid_mouthing_arkit` of one frame in Python floats (the live decoder's one frame
    at a time, where numpy's per-call overhead is the cost): the raw weights clipped to 1, and
    whether any was over 1. The same operations in the same order (bit for bit)."""
    raw = _mouthing_drive1(vec, shares)
    return [w if w < 1.0 else 1.0 for w in raw], max(raw) > 1.0


def _mouthing_drive1(vec: list[float], shares: list[float]) -> list[float]:
    """The raw (unclipped) weights of :func:`_valid_mouthing_arkit1`."""
    face = list(_FACE_GET1(vec))
    for k, i, terms in _MOUTH_TERMS1:  # the mouth dims with a baseline (the others: as authored)
        b = 0.0
        for v, c in terms:
            b = b + shares[v] * c
        baseline = b if -1.0 <= b <= 1.0 else (-1.0 if b < -1.0 else 1.0)  # np.clip of a finite b
        magnitude = abs(baseline)
        authored = vec[i]
        opposite = (authored > 0.0 and baseline < 0.0) or (authored < 0.0 and baseline > 0.0)
        face[k] = authored * (magnitude if opposite else 1.0 - magnitude)
    return _drive1(face)


# ---------------------------------------------------------------------------- a producer's mix
#: Step of the shares a producer estimates from the mouth it measured (spec §4.7 "A mix from
#: the measured mouth"): the mix changes, and travels (§5.5), only when the mouth does.
MIX_STEP = 0.05
_MIX_DIVISIONS = 20  # 1 / MIX_STEP: shares are k / 20, the nearest doubles to 0.05, 0.1, …
#: Projected-gradient steps of :func:`mix_from_mouth` (a fixed count: the same bits everywhere).
_MIX_ITERATIONS = 64


def _project_mix(shares: NDArray[np.float64]) -> NDArray[np.float64]:
    """The nearest point of ``{s ≥ 0, Σ s ≤ 1}`` to ``shares (..., V)`` (Euclidean)."""
    s = np.maximum(shares, 0.0)
    total = ordered_sum(s)  # spec §1.5
    over = total > 1.0
    if over.any():  # onto the simplex Σ s = 1 (sort-based threshold)
        u = -np.sort(-shares[over], axis=-1)
        cumulative = np.cumsum(u, axis=-1) - 1.0
        k = np.arange(1, u.shape[-1] + 1)
        rho = (u - cumulative / k > 0.0).sum(axis=-1)
        theta = cumulative[np.arange(u.shape[0]), rho - 1] / rho
        s[over] = np.maximum(shares[over] - theta[:, None], 0.0)
    return s


def mix_from_mouth(mouth: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A viseme mix and the authored mouth dims that give the measured mouth (spec §4.7 "A mix
    from the measured mouth"): ``mouth (..., N)`` vectors with the measured mouth dims ``e``
    (an absent, NaN, dim is left out of the fit and stays absent; ±inf is
    ``usage.not_finite``). Returns ``(shares (..., 15), authored (..., N))``: the shares
    ``s ≥ 0, Σ s ≤ 1`` whose baseline ``b`` (:func:`viseme_baseline`) best explains ``e`` in
    least squares (the seed table's visemes only; 64 projected-gradient steps from 0 with step
    ``1/ΣT²``), rounded to :data:`MIX_STEP` (no mix — all zero — where its baseline would point
    against the measured mouth on a dim: the law cannot reach that); and ``vector`` with each
    mouth dim replaced by the ``a`` whose law value is ``e``: ``b + Δ(a) = e`` (``a = (e − b)/(1 − |b|)`` in ``b``'s
    direction or at ``b = 0``, ``(e − b)/|b|`` against it; 0 where ``e = b``), limited to
    ``[-1, 1]``. Other dims pass through."""
    vec = as_vector(mouth)
    measured = vec[..., MOUTH_DIM_INDICES]
    if np.isinf(measured).any():
        raise UsageError("usage.not_finite", "a mouth dim is infinite", path="mouth")
    known = ~np.isnan(measured)  # an absent dim (NaN) is left out of the fit and stays absent
    e = np.where(known, measured, 0.0)
    table = BASELINE_TABLE[:, MOUTH_DIM_INDICES]  # (V, M)
    used = np.flatnonzero(np.abs(table).sum(axis=-1) > 0.0)
    t = table[used]  # (U, M)
    # spec §1.5: every sum in stated order (row-major, left to right), never numpy's pairwise sum
    step = 1.0 / float(ordered_sum((t * t).reshape(-1)))
    # the gradient T·(Tᵀs − e) over the measured dims is G·s − T·e: G and T·e once per frame
    measured_t = np.where(known[..., None, :], t, 0.0)  # (…, U, M)
    gram = ordered_sum(measured_t[..., :, None, :] * measured_t[..., None, :, :])  # (…, U, U)
    target = ordered_sum(measured_t * e[..., None, :])  # (…, U)
    s = np.zeros((*e.shape[:-1], used.size))
    for _ in range(_MIX_ITERATIONS):
        s = _project_mix(s - step * (ordered_sum(gram * s[..., None, :]) - target))
    shares = np.zeros((*e.shape[:-1], N_VISEMES))
    shares[..., used] = np.round(s * _MIX_DIVISIONS) / _MIX_DIVISIONS
    shares = _project_mix(shares)  # rounding up may pass Σ = 1
    # the law reaches only e on b's side of 0: a mix whose baseline points against the
    # measured mouth on some dim is not sent (that frame's mouth stays absolute)
    b = viseme_baseline(shares)[..., MOUTH_DIM_INDICES]
    # spec §1.5: a sign test on a product is taken on its factors' signs (b·e can underflow)
    against: NDArray[np.bool_] = np.asarray(((np.sign(b) * np.sign(e)) < 0.0).any(axis=-1))
    shares = np.where(against[..., None], 0.0, shares)
    b = np.where(against[..., None], 0.0, b)  # no mix: baseline 0
    d = e - b
    magnitude = np.abs(b)
    same = (d == 0.0) | (b == 0.0) | ((d > 0.0) == (b > 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(same, d / (1.0 - magnitude), d / magnitude)
    a = np.where(d == 0.0, 0.0, np.nan_to_num(a, nan=0.0, posinf=1.0, neginf=-1.0))
    authored = vec.copy()
    authored[..., MOUTH_DIM_INDICES] = np.where(known, np.clip(a, -1.0, 1.0), np.nan)
    return shares, authored
