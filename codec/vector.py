"""The pose vector: layout, defaults, bounds, validation and mirroring (spec §3.1–3.2).

A pose vector is a float64 array of shape ``(..., N)`` with ``N = len(DIMENSIONS)``
normalized values in registry order; a frame is a batch of one. Bipolar dims live in
``[-1, 1]``, unipolar dims in ``[0, 1]``; the physical value is ``n * max`` in the row's
unit (spec §3.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .registry import DIMENSIONS, REGISTRY

__all__ = [
    "DEFAULTS",
    "LOWER",
    "MIRROR_PERMUTATION",
    "MIRROR_SIGN",
    "N_DIMS",
    "UPPER",
    "ValidationReport",
    "as_vector",
    "from_dict",
    "mirror",
    "to_dict",
    "to_physical",
    "validate",
]

N_DIMS = len(DIMENSIONS)

#: Neutral normalized value per dimension (spec §3.1).
DEFAULTS: NDArray[np.float64] = np.array([d.row.default for d in DIMENSIONS], dtype=np.float64)
#: Lower bound per dimension: -1 for bipolar, 0 for unipolar (spec §3.1).
LOWER: NDArray[np.float64] = np.array(
    [-1.0 if d.row.polarity == "bipolar" else 0.0 for d in DIMENSIONS], dtype=np.float64
)
#: Upper bound per dimension (always 1).
UPPER: NDArray[np.float64] = np.ones(N_DIMS, dtype=np.float64)
_MAX: NDArray[np.float64] = np.array([d.row.max for d in DIMENSIONS], dtype=np.float64)


def _mirror_tables() -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    perm = np.arange(N_DIMS)
    sign = np.ones(N_DIMS)
    for d in DIMENSIONS:
        if d.side is not None:
            other = "r" if d.side == "l" else "l"
            perm[d.index] = REGISTRY.index(f"{d.row.id}_{other}")
        elif d.row.lateral:
            sign[d.index] = -1.0
    return perm, sign


#: ``mirror(v)[i] = MIRROR_SIGN[i] * v[MIRROR_PERMUTATION[i]]`` (spec §3.2).
MIRROR_PERMUTATION, MIRROR_SIGN = _mirror_tables()


def as_vector(values: ArrayLike) -> NDArray[np.float64]:
    """``values`` as a float64 array of shape ``(..., N)``; raises ``usage.shape``."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != N_DIMS:
        raise UsageError("usage.shape", f"expected shape (..., {N_DIMS}), got {arr.shape}")
    return arr


def from_dict(values: Mapping[str, float], *, fill_defaults: bool = True) -> NDArray[np.float64]:
    """A vector of shape ``(N,)`` from ``{dim id: normalized value}``.

    Dims not named take their default (spec §3.1), or NaN when ``fill_defaults`` is
    false (NaN marks "missing", spec §3.5). Unknown ids raise ``usage.unknown_id``.
    """
    vec = DEFAULTS.copy() if fill_defaults else np.full(N_DIMS, np.nan)
    for key, value in values.items():
        dim = REGISTRY.by_id.get(key)
        if dim is None:
            raise UsageError("usage.unknown_id", f"no dimension {key!r}", path=key)
        vec[dim.index] = float(value)
    return vec


def to_dict(vector: ArrayLike) -> dict[str, float]:
    """``{dim id: value}`` for a single vector of shape ``(N,)``."""
    vec = as_vector(vector)
    if vec.ndim != 1:
        raise UsageError("usage.shape", f"to_dict takes one vector, got shape {vec.shape}")
    return {d.id: float(vec[d.index]) for d in DIMENSIONS}


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`validate` changed: boolean masks of shape ``(..., N)`` (spec §3.5)."""

    clamped: NDArray[np.bool_]
    replaced: NDArray[np.bool_]

    @property
    def ok(self) -> bool:
        """True when nothing was clamped or replaced."""
        return not (self.clamped.any() or self.replaced.any())

    def dims(self) -> dict[str, list[str]]:
        """Ids of the dims clamped (out of range) and replaced (non-finite), any frame."""
        clamped: NDArray[np.bool_] = np.any(self.clamped.reshape(-1, N_DIMS), axis=0)
        replaced: NDArray[np.bool_] = np.any(self.replaced.reshape(-1, N_DIMS), axis=0)
        return {
            "clamped": [d.id for d in DIMENSIONS if clamped[d.index]],
            "replaced": [d.id for d in DIMENSIONS if replaced[d.index]],
        }


def validate(
    vector: ArrayLike, *, policy: Literal["raise", "clamp"] = "raise"
) -> tuple[NDArray[np.float64], ValidationReport]:
    """Check a vector batch against the registry bounds (spec §3.5).

    ``policy="raise"`` raises ``usage.not_finite`` or ``usage.out_of_range`` naming the
    first offending dim. ``policy="clamp"`` returns a copy with out-of-range values
    clamped to the bound and non-finite values replaced by the default, plus a report of
    exactly which entries it changed — never a silent change.
    """
    if policy not in ("raise", "clamp"):
        raise UsageError("usage.bad_option", f"policy must be 'raise' or 'clamp', not {policy!r}")
    vec = as_vector(vector)
    finite = np.isfinite(vec)
    below = finite & (vec < LOWER)
    above = finite & (vec > UPPER)
    if policy == "raise":
        for mask, code, what in ((~finite, "usage.not_finite", "is not finite"),
                                 (below | above, "usage.out_of_range", "is out of range")):
            if mask.any():
                where = np.argwhere(mask)[0]
                dim = DIMENSIONS[int(where[-1])]
                raise UsageError(code, f"{dim.id} = {float(vec[tuple(where)])!r} {what}",
                                 path=dim.id)
        return vec.copy(), ValidationReport(np.zeros(vec.shape, bool), np.zeros(vec.shape, bool))
    out = np.where(finite, np.clip(vec, LOWER, UPPER), DEFAULTS)
    return out, ValidationReport(below | above, ~finite)


def mirror(vector: ArrayLike) -> NDArray[np.float64]:
    """The mirror image of a pose across the sagittal plane (spec §3.2).

    Swaps every ``_l``/``_r`` pair and negates unsided lateral dims. An involution:
    ``mirror(mirror(v)) == v`` exactly.
    """
    vec = as_vector(vector)
    return MIRROR_SIGN * vec[..., MIRROR_PERMUTATION]


def to_physical(vector: ArrayLike) -> NDArray[np.float64]:
    """``n * max`` per dim in the row's unit (spec §3.1); arm dims in units of L."""
    return as_vector(vector) * _MAX
