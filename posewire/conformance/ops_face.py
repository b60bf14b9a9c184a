"""Conformance operations for spec §4.6–4.7 (ARKit mapping, mouthing) and §3.4.4 (affect).

Inputs name dims, ARKit channels and visemes by id; outputs list only nonzero values
(plus any dim the input named) so that cases stay short and hand-checkable.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec import affect, morph, mouthing, vector
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, VISEMES

__all__ = ["OPS"]


def _dims(vec: NDArray[np.float64], indices: NDArray[np.intp], also: Collection[str] = ()
          ) -> dict[str, float]:
    wanted = {DIMENSIONS[int(i)].id for i in indices if vec[int(i)] != 0.0} | set(also)
    return {d.id: float(vec[d.index]) for d in DIMENSIONS if d.id in wanted}


def _shares(raw: Any) -> NDArray[np.float64]:
    if isinstance(raw, Mapping):
        return mouthing.shares_from_dict(raw)
    return np.asarray(raw, dtype=np.float64)


def _dims_to_arkit(inp: dict[str, Any]) -> Any:
    vec = vector.from_dict(inp["values"])
    weights, clipped = morph.dims_to_arkit(vec, policy=inp.get("policy", "clamp"))
    return {"weights": morph.arkit_array_to_dict(weights, nonzero_only=True),
            "clipped": [n for i, n in enumerate(ARKIT_CHANNELS) if clipped[i]]}


def _arkit_to_dims(inp: dict[str, Any]) -> Any:
    into = inp.get("into")
    vec, report = morph.arkit_to_dims(
        inp["weights"], into=None if into is None else vector.from_dict(into),
        policy=inp.get("policy", "raise"))
    return {"values": _dims(vec, morph.FACE_DIM_INDICES, into or ()), **report.channels()}


def _normalize(inp: dict[str, Any]) -> Any:
    shares, normalized = mouthing.normalize_shares(_shares(inp["shares"]))
    return {"shares": {v: float(shares[i]) for i, v in enumerate(VISEMES) if shares[i] != 0.0},
            "normalized": bool(normalized)}


def _apply_mouthing(inp: dict[str, Any]) -> Any:
    vec = vector.from_dict(inp["values"])
    # spec §6.5: values is a pose in bounds, every dim (face and others too): checked
    # before the shares, usage.out_of_range, never clipped silently (spec §3.5)
    vector.validate(vec, policy="raise")
    shares = _shares(inp["shares"])
    delta, effective = mouthing.apply_mouthing(vec, shares)
    morphs = mouthing.mouthing_to_arkit(vec, shares)
    mouth = mouthing.MOUTH_DIM_INDICES
    return {
        "baseline": _dims(mouthing.viseme_baseline(shares), mouth),
        "delta": _dims(delta, mouth),
        "effective": _dims(effective, mouth),
        "arkit": morph.arkit_array_to_dict(morphs.arkit, nonzero_only=True),
        "visemes": {v: float(morphs.visemes[i]) for i, v in enumerate(VISEMES)
                    if morphs.visemes[i] != 0.0},
        # spec §3.5/§4.6: a weight clipped to [0, 1] is reported, never silent
        "clipped": [n for i, n in enumerate(ARKIT_CHANNELS) if morphs.clipped[i]],
    }


def _delta(inp: dict[str, Any]) -> Any:
    a, b = float(inp["authored"]), float(inp["baseline"])
    delta = float(mouthing.mouthing_delta(a, b))
    return {"delta": delta, "effective": b + delta}


def _apply_affect(inp: dict[str, Any]) -> Any:
    vec = vector.from_dict(inp["values"])
    out, report = affect.apply_affect(vec, label=inp["label"], intensity=inp["intensity"],
                                      mode=inp["mode"])
    touched = np.flatnonzero(affect.PRESET_MASKS.get(inp["label"], np.zeros(0, bool)))
    values = {d.id: float(out[d.index]) for d in DIMENSIONS
              if d.id in inp["values"] or d.index in touched}
    return {"values": values, "clamped": report.dims()["clamped"]}


OPS = {
    "morph.dims_to_arkit": _dims_to_arkit,
    "morph.arkit_to_dims": _arkit_to_dims,
    "mouthing.normalize": _normalize,
    "mouthing.apply": _apply_mouthing,
    "mouthing.delta": _delta,
    "affect.apply": _apply_affect,
}
