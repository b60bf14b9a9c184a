"""Arithmetic in a stated order: the sums and products that normative results depend on
(spec §1.5 "Arithmetic that travels").

Every value that a tie, clamp, hemisphere or quantization rule decides on is computed with
plain IEEE-754 binary64 operations (each correctly rounded) in the order stated here, never
through BLAS (``@``, ``np.dot``, ``np.linalg``) or ``einsum``, whose summation order and use
of fused multiply-add change with the CPU kernel and the thread count. numpy's element-wise
``+ - * / sqrt`` are correctly rounded and never fused, so the functions below give the same
bits on every machine, and a JavaScript, C# or Rust implementation that performs the same
operations in the same order gets them too.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

__all__ = ["SparseTable", "exact_pseudo_inverse", "ordered_norm", "ordered_norm1", "ordered_scale_to",
           "ordered_scale_to1", "ordered_sum", "ordered_sum1", "ordered_unit", "ordered_unit1"]

F64 = NDArray[np.float64]


def ordered_sum(terms: F64) -> F64:
    """``((t₀ + t₁) + t₂) + …`` over the last axis of ``terms (..., k)``, ``k ≥ 1``: left to
    right, one rounding per addition (spec §1.5)."""
    acc: F64 = terms[..., 0] + 0.0  # from +0.0, as every sum in the spec
    for i in range(1, terms.shape[-1]):
        acc = acc + terms[..., i]
    return acc


def ordered_sum1(terms: tuple[float, ...] | list[float]) -> float:
    """:func:`ordered_sum` of one sequence of Python floats: ``((0 + t₀) + t₁) + …`` (spec §1.5).

    Not Python's ``math.fsum`` (exactly rounded) nor numpy's pairwise ``sum``: for 15 shares
    near 1 + 1e−6 either can fall on the other side of a limit than the stated order."""
    acc = 0.0
    for t in terms:
        acc = acc + t
    return acc


#: |v|max outside [2⁻⁵⁰⁰, 2⁵⁰⁰]: the squares could overflow or lose bits to underflow, so a
#: length is taken of ``v·2⁻ᵉ`` (|v|max = m·2ᵉ, 0.5 ≤ m < 1) and scaled back by ``2ᵉ`` (spec §1.5).
_SAFE_LOW, _SAFE_HIGH = 2.0**-500, 2.0**500


def _scaled(vectors: F64) -> tuple[F64, NDArray[np.int_] | None]:
    # spec §1.5: vectors whose largest component lies outside [2⁻⁵⁰⁰, 2⁵⁰⁰] times 2⁻ᵉ (exact)
    big = np.abs(vectors).max(axis=-1, initial=0.0)
    extreme = ((big > _SAFE_HIGH) | ((big < _SAFE_LOW) & (big > 0.0))) & np.isfinite(big)
    if not extreme.any():
        return vectors, None
    exponent: NDArray[np.int_] = np.where(extreme, np.frexp(big)[1], 0)
    return np.ldexp(vectors, -exponent[..., None]), exponent


def _sum_of_squares(vectors: F64) -> F64:
    acc: F64 = vectors[..., 0] * vectors[..., 0]
    for i in range(1, vectors.shape[-1]):
        acc = acc + vectors[..., i] * vectors[..., i]
    return acc


def ordered_norm(vectors: F64) -> F64:
    """Euclidean length ``sqrt(v₀·v₀ + v₁·v₁ + …)`` of ``vectors (..., k)`` with the squares
    summed left to right (spec §1.5): the arithmetic of §5.4's palm norm, for any ``k``.

    A vector whose largest component lies outside [2⁻⁵⁰⁰, 2⁵⁰⁰] is scaled by a power of two
    first (exact), so tiny finite vectors get their true length instead of 0 and huge ones
    theirs (∞ only when the length itself exceeds float64); elsewhere that scaling would
    change no bit, so it is skipped."""
    scaled, exponent = _scaled(vectors)
    out: F64 = np.sqrt(_sum_of_squares(scaled))
    if exponent is not None:
        with np.errstate(over="ignore"):
            out = np.ldexp(out, exponent)
    return out


def ordered_unit(vectors: F64) -> F64:
    """``v / |v|`` of ``vectors (..., k)`` by :func:`ordered_norm`'s arithmetic, taken on the
    scaled vector so that a length beyond float64 still normalizes (spec §1.5). Zero
    vectors give NaN: callers check lengths first."""
    scaled, _ = _scaled(vectors)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: F64 = scaled / np.sqrt(_sum_of_squares(scaled))[..., None]
    return out


def ordered_scale_to(vectors: F64, selected: NDArray[np.bool_], target: float) -> F64:
    """Where ``selected``, ``v · s`` with ``s = target / |v|`` (one division, then one product
    per component), elsewhere ``v`` unchanged (spec §1.5, §3.3: the palm clamp and rescale).

    ``|v|`` is :func:`ordered_norm`'s; a vector whose largest component lies outside
    [2⁻⁵⁰⁰, 2⁵⁰⁰] is scaled by ``2⁻ᵉ`` first (exact), so a length beyond float64 still
    rescales; in that range the scaling changes no bit of the result."""
    scaled, _ = _scaled(vectors)
    length = np.sqrt(_sum_of_squares(scaled))
    factor = target / np.where(selected, length, 1.0)
    out: F64 = np.where(selected[..., None], scaled * factor[..., None], vectors)
    return out


def ordered_scale_to1(values: tuple[float, float, float], target: float) -> tuple[float, float, float]:
    """:func:`ordered_scale_to` of one selected 3-vector of Python floats (the same operations)."""
    x, y, z = values
    big = max(abs(x), abs(y), abs(z))
    if (big > _SAFE_HIGH or 0.0 < big < _SAFE_LOW) and math.isfinite(big):
        exponent = math.frexp(big)[1]
        x, y, z = math.ldexp(x, -exponent), math.ldexp(y, -exponent), math.ldexp(z, -exponent)
    s = target / math.sqrt(x * x + y * y + z * z)
    return (x * s, y * s, z * s)


def ordered_unit1(values: tuple[float, float, float]) -> tuple[float, float, float]:
    """:func:`ordered_unit` of one non-zero 3-vector of Python floats: the scaled vector, each
    component divided by its length (spec §1.5)."""
    x, y, z = values
    big = max(abs(x), abs(y), abs(z))
    if (big > _SAFE_HIGH or 0.0 < big < _SAFE_LOW) and math.isfinite(big):
        exponent = math.frexp(big)[1]
        x, y, z = math.ldexp(x, -exponent), math.ldexp(y, -exponent), math.ldexp(z, -exponent)
    n = math.sqrt(x * x + y * y + z * z)
    return (x / n, y / n, z / n)


def ordered_norm1(values: tuple[float, ...]) -> float:
    """:func:`ordered_norm` of one vector of Python floats (the same operations and scaling)."""
    big = max(abs(x) for x in values)
    if (big > _SAFE_HIGH or 0.0 < big < _SAFE_LOW) and math.isfinite(big):
        exponent = math.frexp(big)[1]
        acc = 0.0
        for i, x in enumerate(values):
            x = math.ldexp(x, -exponent)
            acc = x * x if i == 0 else acc + x * x
        return math.ldexp(math.sqrt(acc), exponent)
    acc = values[0] * values[0]
    for x in values[1:]:
        acc = acc + x * x
    return math.sqrt(acc)


class SparseTable:
    """A constant ``(n, m)`` table applied as ``out[..., j] = Σ_k values[..., k] · table[k, j]``
    with the products summed in increasing ``k``, from +0.0 (spec §1.5).

    Terms whose table entry is exactly 0 are left out: for finite ``values`` such a term is
    ±0, and adding ±0 to a sum that started from +0.0 never changes it, so the result is the
    dense ordered sum's, bit for bit. ``values`` must be finite (callers validate first).
    """

    __slots__ = ("_coefficients", "_rows", "_terms1", "shape")

    def __init__(self, table: NDArray[np.float64]) -> None:
        dense = np.asarray(table, dtype=np.float64)
        if dense.ndim != 2:
            raise ValueError(f"a table is two-dimensional, not {dense.shape}")
        self.shape: tuple[int, int] = (int(dense.shape[0]), int(dense.shape[1]))
        width = max(1, int((dense != 0.0).sum(axis=0).max(initial=0)))
        rows = np.zeros((self.shape[1], width), dtype=np.intp)
        coefficients = np.zeros((self.shape[1], width))
        for j in range(self.shape[1]):
            (nonzero,) = np.nonzero(dense[:, j])
            rows[j, :nonzero.size] = nonzero
            coefficients[j, :nonzero.size] = dense[nonzero, j]
        # padding terms are value·0 = ±0 at the end of each column: no change to the sum
        self._rows = rows
        self._coefficients = coefficients
        # apply1's terms, as Python floats once: the non-zero entries of each column in
        # increasing k (the padding terms add ±0 to a sum from +0.0: no change, as above)
        self._terms1: tuple[tuple[tuple[int, float], ...], ...] = tuple(
            tuple((k, c) for k, c in zip(r, cs, strict=True) if c != 0.0)
            for r, cs in zip(rows.tolist(), coefficients.tolist(), strict=True))

    def apply(self, values: F64) -> F64:
        """``values (..., n)`` through the table: ``(..., m)`` in the stated order."""
        return ordered_sum(values[..., self._rows] * self._coefficients)

    def apply1(self, values: list[float]) -> list[float]:
        """:meth:`apply` of one row of Python floats (the same operations, the same order)."""
        out: list[float] = []
        for terms in self._terms1:
            acc = 0.0
            for k, c in terms:
                acc = acc + values[k] * c
            out.append(acc)
        return out


def exact_pseudo_inverse(table: list[list[Fraction]]) -> list[list[Fraction]]:
    """The Moore–Penrose pseudo-inverse ``(n, m)`` of an exact ``(m, n)`` table of full column
    rank, in rational arithmetic: ``(GᵀG)⁻¹Gᵀ`` (spec §4.6). Columns that are all zero solve
    to 0. Independent blocks (columns that share no row) are solved separately, so a sparse
    table costs little. Raises ``ValueError`` when the non-zero columns are dependent.
    """
    m = len(table)
    n = len(table[0]) if m else 0
    used = [j for j in range(n) if any(table[i][j] != 0 for i in range(m))]
    # connected blocks of columns through shared rows
    parent = {j: j for j in used}

    def find(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    for i in range(m):
        cols = [j for j in used if table[i][j] != 0]
        for j in cols[1:]:
            parent[find(j)] = find(cols[0])
    blocks: dict[int, list[int]] = {}
    for j in used:
        blocks.setdefault(find(j), []).append(j)
    out = [[Fraction(0)] * m for _ in range(n)]
    for cols in blocks.values():
        rows = [i for i in range(m) if any(table[i][j] != 0 for j in cols)]
        k = len(cols)
        # normal equations [GᵀG | Gᵀ] reduced by Gauss–Jordan
        gram = [[sum((table[i][a] * table[i][b] for i in rows), Fraction(0)) for b in cols]
                + [table[i][a] for i in rows] for a in cols]
        for p in range(k):
            pivot = next((r for r in range(p, k) if gram[r][p] != 0), None)
            if pivot is None:
                raise ValueError(f"columns {cols} are linearly dependent")
            gram[p], gram[pivot] = gram[pivot], gram[p]
            lead = gram[p][p]
            gram[p] = [x / lead for x in gram[p]]
            for r in range(k):
                if r != p and gram[r][p] != 0:
                    factor = gram[r][p]
                    gram[r] = [x - factor * y for x, y in zip(gram[r], gram[p], strict=True)]
        for a, j in enumerate(cols):
            for b, i in enumerate(rows):
                out[j][i] = gram[a][k + b]
    return out
