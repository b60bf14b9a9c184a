"""The affect layer: a labelled expression preset applied over a pose (spec §3.4.4).

An affect condition is ``{label, intensity, mode}``. The label selects a target ``A``
from :data:`posewire.codec.registry.AFFECT_PRESETS` over affect-capable dims; only the dims the
preset lists are touched (a dim not listed keeps its value in every mode):

* ``add``:   ``n' = n + i·A``
* ``blend``: ``n' = n + i·(A - n)``, evaluated as ``(1 - i)·n + i·A`` so that ``i = 0``
  returns ``n`` and ``i = 1`` returns ``A`` exactly.

Results are clamped to the registry bounds and the clamp reported
(:class:`posewire.codec.vector.ValidationReport`). Vectors are float64 ``(..., N)`` in registry
order; ``intensity`` is a scalar or an array broadcastable to the batch shape ``(...)``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import UsageError
from .registry import AFFECT_LABELS, AFFECT_MODES, AFFECT_PRESETS, DIMENSIONS, REGISTRY
from .vector import LOWER, N_DIMS, UPPER, ValidationReport, as_vector

__all__ = [
    "AFFECT_DIM_MASK",
    "PRESET_MASKS",
    "PRESET_TARGETS",
    "apply_affect",
]

#: True for the affect-capable dims (spec §3.4.4: head, body, face, mouth).
AFFECT_DIM_MASK: NDArray[np.bool_] = np.array([d.row.affect for d in DIMENSIONS], dtype=bool)


def _preset_tables() -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.bool_]]]:
    targets: dict[str, NDArray[np.float64]] = {}
    masks: dict[str, NDArray[np.bool_]] = {}
    for label, pairs in AFFECT_PRESETS:
        target = np.zeros(N_DIMS)
        mask = np.zeros(N_DIMS, dtype=bool)
        for dim_id, value in pairs:
            index = REGISTRY.index(dim_id)
            if not AFFECT_DIM_MASK[index]:
                raise RuntimeError(f"affect preset {label} names non-affect dim {dim_id}")
            target[index] = value
            mask[index] = True
        targets[label] = target
        masks[label] = mask
    if set(targets) != set(AFFECT_LABELS):
        raise RuntimeError("AFFECT_PRESETS and AFFECT_LABELS disagree")
    return targets, masks


#: ``PRESET_TARGETS[label]``: target ``A (N,)``, 0 on dims the preset does not list;
#: ``PRESET_MASKS[label]``: the listed dims (the only dims the label touches).
PRESET_TARGETS, PRESET_MASKS = _preset_tables()


def apply_affect(
    vector: ArrayLike,
    *,
    label: str,
    intensity: float | ArrayLike,
    mode: Literal["add", "blend"],
) -> tuple[NDArray[np.float64], ValidationReport]:
    """The pose with affect ``label`` at ``intensity`` applied in ``mode`` (spec §3.4.4).

    ``vector (..., N)``; only the dims listed by the preset change, and those must be
    finite (``usage.not_finite``). ``intensity`` in ``[0, 1]`` (``usage.out_of_range``;
    NaN: ``usage.not_finite``). Unknown ``label`` or ``mode``: ``usage.unknown_id`` (one
    code for an unknown enumeration value, spec §6.5).
    Returns ``(vector' (..., N), report)``; ``report.clamped`` marks the touched dims
    whose result left the bounds and was clamped (``report.replaced`` is all False).
    """
    if label not in PRESET_TARGETS:
        raise UsageError("usage.unknown_id", f"affect label must be one of {AFFECT_LABELS}, "
                         f"not {label!r}", path="affect.label")
    if mode not in AFFECT_MODES:
        raise UsageError("usage.unknown_id", f"affect mode must be one of {AFFECT_MODES}, "
                         f"not {mode!r}", path="affect.mode")
    level = np.asarray(intensity, dtype=np.float64)
    if not np.isfinite(level).all():
        raise UsageError("usage.not_finite", "affect intensity is not finite",
                         path="affect.intensity")
    if ((level < 0.0) | (level > 1.0)).any():
        raise UsageError("usage.out_of_range", f"affect intensity {intensity!r} is outside "
                         "[0, 1]", path="affect.intensity")
    vec = as_vector(vector)
    touched = PRESET_MASKS[label]
    current = vec[..., touched]
    if not np.isfinite(current).all():
        raise UsageError("usage.not_finite", f"a dim that affect {label!r} touches is not "
                         "finite", path="affect")
    target = PRESET_TARGETS[label][touched]
    i = level[..., None]
    # spec §3.4.4: add n' = n + i·A; blend n' = n + i·(A − n)
    moved = current + i * target if mode == "add" else (1.0 - i) * current + i * target
    bounded = np.clip(moved, LOWER[touched], UPPER[touched])
    shape = np.broadcast_shapes(vec.shape, (*moved.shape[:-1], N_DIMS))
    out = np.array(np.broadcast_to(vec, shape), dtype=np.float64)
    out[..., touched] = bounded
    clamped = np.zeros(shape, dtype=bool)
    clamped[..., touched] = bounded != moved
    return out, ValidationReport(clamped, np.zeros(shape, dtype=bool))
