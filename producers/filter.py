"""Temporal filtering of pose vectors: a per-dim One-Euro filter (spec §3.1, §7).

The One-Euro filter (Casiez, Roussel, Vogel, CHI 2012) is a low-pass filter whose cutoff
rises with speed: steady values are smoothed hard (little jitter), fast moves pass with
little lag. Per step with time step ``dt`` (seconds):

    α(fc) = 1 / (1 + 1 / (2π · fc · dt))
    d̂ = α(d_cutoff) · (x − x̂_prev) / dt + (1 − α(d_cutoff)) · d̂_prev     (smoothed speed)
    fc = min_cutoff + beta · |d̂|
    x̂ = α(fc) · x + (1 − α(fc)) · x̂_prev

Here ``x`` is a normalized dim (unit 1 = the registry max), so ``beta`` is in seconds
per normalized unit. The palm is filtered as a rotation, not per component: the stored
vector part of each hand (spec §4.2) is made a unit quaternion (``w`` rebuilt), the speed
is its angular speed (radians / s), and the filtered rotation is the slerp from the
previous one toward the new one by ``α(fc)`` (shortest arc), stored back with ``w ≥ 0``.

A NaN value (dim not estimated in that frame) passes through as NaN and restarts that
dim's filter, so a hand that reappears is not dragged from where it was lost.

The thumb's roll is filtered on its double cover (spec §4.3): landmark positions cannot
tell ``(roll, curl, distal)`` from ``(roll ∓ 180°, −curl, −distal)``, and a producer keeps
``|roll| ≤ 90°``, so near ±90° noise flips a reading to the other end of the range. Before
filtering, a reading whose other form (``roll ∓ 2`` normalized, clamped to ±1, with both bends negated)
lies nearer the filtered roll is taken in that form: the thumb does not spin 180°.

Defaults (:data:`DEFAULT_PARAMS`, per registry group; chosen on the real MediaPipe
recordings at 25–30 fps, see ``benchmarks/fidelity_bench.py``): fingers
``min_cutoff 0.5 Hz, beta 0.1``; palm ``1.0 Hz, beta 0.3 s/rad``; arm, head, body
``1.5 Hz, beta 0.5``; face and mouth ``3.0 Hz, beta 1.0`` (expressions are fast);
``d_cutoff`` 1 Hz everywhere. Live sources filter by default; files on request
(:func:`filter_vectors`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS

__all__ = ["CHEST_PARAMS", "DEFAULT_PARAMS", "VISIBILITY_HOLD", "FilterResult", "OneEuroParams", "RotationFilter",
           "VectorFilter", "VisibilityHold", "filter_vectors", "group_jitter", "jitter"]

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class OneEuroParams:
    """One-Euro parameters: ``min_cutoff`` (Hz), ``beta`` (s per normalized unit; for the
    palm s per radian), ``d_cutoff`` (Hz) of the speed estimate."""

    min_cutoff: float = 1.0
    beta: float = 0.5
    d_cutoff: float = 1.0

    def __post_init__(self) -> None:
        if not (self.min_cutoff > 0 and self.d_cutoff > 0 and self.beta >= 0):
            raise UsageError("usage.bad_option", f"One-Euro parameters must be positive: {self}")


#: Parameters per registry group (module docstring).
DEFAULT_PARAMS: Mapping[str, OneEuroParams] = {
    "fingers": OneEuroParams(0.5, 0.1),
    "palm": OneEuroParams(1.0, 0.3),
    "arm": OneEuroParams(1.5, 0.5),
    "head": OneEuroParams(1.5, 0.5),
    "body": OneEuroParams(1.5, 0.5),
    "face": OneEuroParams(3.0, 1.0),
    "mouth": OneEuroParams(3.0, 1.0),
}

#: The chest frame of a time series (spec §7.3 "Smoothing"): it turns slowly, and its
#: estimate (guessed hips, shoulder depth) jitters in close-up shots, which the head, arms
#: and palms are relative to.
CHEST_PARAMS = OneEuroParams(0.3, 0.3)

_PALM = np.array([[REGISTRY.index(f"w_q{a}_{s}") for a in "xyz"] for s in ("l", "r")])
#: (roll, curl, distal) columns of each thumb, l then r (spec §4.3 double cover)
_THUMB = tuple((REGISTRY.index(f"g_thumb_roll_{s}"), REGISTRY.index(f"g_thumb_curl_{s}"),
                REGISTRY.index(f"g_thumb_distal_{s}")) for s in ("l", "r"))
_SCALAR = np.array([d.index for d in REGISTRY.dimensions if d.row.group != "palm"])
_SCALAR_POS = {int(index): k for k, index in enumerate(_SCALAR)}


#: The width of the visibility hold (spec §7.3 "Visibility hysteresis"), in visibility units.
VISIBILITY_HOLD = 0.15


class VisibilityHold:
    """Hysteresis on the pose landmarks' visibility of a stream (spec §7.3 "Visibility
    hysteresis"): a backlash of width ``width`` per landmark. The held value starts at the
    first visibility; each frame it moves to the new visibility where that differs from it
    by more than ``width`` and stays otherwise. Every visibility cut of the encoder (§6.10's
    ``visibility_threshold``, the hips' §4.5) is taken on the held value, so a visibility
    wandering within ``width`` of where it last settled never changes a part's state, and a
    drop to more than ``width`` below a cut ends the part in that frame. A landmark outside
    the image (``in_frame`` False: the pose model's guess beyond the picture) and a frame
    without a pose count visibility 0: a drop like any other."""

    def __init__(self, width: float = VISIBILITY_HOLD) -> None:
        if not 0.0 <= width < 1.0:
            raise UsageError("usage.out_of_range", f"the visibility hold's width must be in [0, 1), got {width}",
                             path="width")
        self.width = width
        self._held: F64 | None = None

    def __call__(self, visibility: ArrayLike, in_frame: ArrayLike | None = None) -> F64:
        """The held visibility ``(33,)`` after this frame's ``visibility (33,)`` and, where
        known, whether each landmark lies inside the image, ``in_frame (33,)`` (a new array)."""
        v = np.array(visibility, dtype=np.float64)
        if v.shape != (33,):
            raise UsageError("usage.shape", f"visibility must have shape (33,), got {v.shape}")
        seen = np.isfinite(v)  # a missing visibility is not seen
        if in_frame is not None:
            inside = np.asarray(in_frame, dtype=bool)
            if inside.shape != (33,):
                raise UsageError("usage.shape", f"in_frame must have shape (33,), got {inside.shape}")
            seen &= inside  # nor is a landmark outside the image
        v = np.where(seen, v, 0.0)
        if self._held is None:
            self._held = v
        else:
            self._held = np.where(np.abs(v - self._held) > self.width, v, self._held)
        return self._held.copy()


def _alpha(cutoff: F64 | float, dt: float) -> F64:
    out: F64 = 1.0 / (1.0 + 1.0 / (2.0 * np.pi * np.asarray(cutoff) * dt))
    return out


class VectorFilter:
    """Streaming One-Euro filter over full-width vectors ``(N,)`` (module docstring).

    ``params`` maps registry group -> :class:`OneEuroParams` (missing groups use
    :data:`DEFAULT_PARAMS`). Call with the frame time in seconds (strictly increasing)
    and the vector; returns the filtered vector (NaN where the input is NaN).
    """

    def __init__(self, *, params: Mapping[str, OneEuroParams] | None = None) -> None:
        chosen = {**DEFAULT_PARAMS, **(params or {})}
        unknown = set(chosen).difference(DEFAULT_PARAMS)
        if unknown:
            raise UsageError("usage.bad_option", f"unknown filter groups {sorted(unknown)}")
        group = [d.row.group for d in REGISTRY.dimensions]
        self._min = np.array([chosen[g].min_cutoff for g in group])[_SCALAR]
        self._beta = np.array([chosen[g].beta for g in group])[_SCALAR]
        self._dcut = np.array([chosen[g].d_cutoff for g in group])[_SCALAR]
        palm = chosen["palm"]
        self._palm = palm
        self._x = np.full(_SCALAR.size, np.nan)
        self._dx = np.zeros(_SCALAR.size)
        self._q = np.full((2, 4), np.nan)
        self._dq = np.zeros(2)
        self._t: float | None = None

    def __call__(self, t: float, vector: ArrayLike) -> F64:
        v = np.array(vector, dtype=np.float64)
        if v.shape != (N_DIMS,):
            raise UsageError("usage.shape", f"vector must have shape ({N_DIMS},), got {v.shape}")
        out = v.copy()
        if self._t is not None and not t > self._t:
            raise UsageError("usage.bad_option", f"frame times must increase ({t} after {self._t})")
        dt = None if self._t is None else t - self._t
        self._t = t
        # spec §4.3: the thumb's double cover, continuous with the filtered roll
        for roll_i, curl_i, distal_i in _THUMB:
            prev = self._x[_SCALAR_POS[roll_i]]
            roll, curl, distal = v[roll_i], v[curl_i], v[distal_i]
            if np.isfinite(prev) and np.isfinite(roll) and np.isfinite(curl) and roll != 0.0:
                other = roll - np.copysign(2.0, roll)
                if abs(other - prev) < abs(roll - prev):
                    v[roll_i], v[curl_i], v[distal_i] = max(-1.0, min(1.0, other)), -curl, -distal
        # scalar dims
        x = v[_SCALAR]
        fresh = np.isfinite(x) & ~np.isfinite(self._x)
        if dt is None:
            new = x
            self._dx = np.zeros_like(x)
        else:
            dx = np.where(fresh, 0.0, (x - self._x) / dt)
            a_d = _alpha(self._dcut, dt)
            self._dx = np.where(np.isfinite(dx), a_d * dx + (1.0 - a_d) * self._dx, 0.0)
            a = _alpha(self._min + self._beta * np.abs(self._dx), dt)
            new = np.where(fresh, x, a * x + (1.0 - a) * self._x)
        self._x = np.where(np.isfinite(x), new, np.nan)
        out[_SCALAR] = self._x
        # palms: rotations
        for k in range(2):
            p = v[_PALM[k]]
            if not np.isfinite(p).all():
                self._q[k] = np.nan
                out[_PALM[k]] = np.nan
                continue
            q = np.concatenate([[np.sqrt(max(0.0, 1.0 - float(p @ p)))], p])
            q /= np.linalg.norm(q)
            prev = self._q[k]
            if dt is None or not np.isfinite(prev).all():
                self._q[k], self._dq[k] = q, 0.0
                out[_PALM[k]] = p
                continue
            self._q[k], self._dq[k] = _rotation_step(prev, float(self._dq[k]), q, dt, self._palm)
            r = self._q[k] if self._q[k][0] >= 0 else -self._q[k]
            out[_PALM[k]] = r[1:]
        return out


def _rotation_step(prev: F64, speed: float, q: F64, dt: float, params: OneEuroParams) -> tuple[F64, float]:
    """One One-Euro step on unit quaternions ``(4,)``: the previous filtered rotation, its
    smoothed angular speed (rad/s) and the new measurement; the cutoff grows with the speed,
    the step is a slerp. Returns the filtered rotation and the new speed."""
    if q @ prev < 0.0:
        q = -q
    angle = 2.0 * np.arccos(min(1.0, abs(float(q @ prev))))
    a_speed = float(_alpha(params.d_cutoff, dt))
    speed = a_speed * angle / dt + (1.0 - a_speed) * speed
    a = float(_alpha(params.min_cutoff + params.beta * speed, dt))
    return _slerp(prev, q, a), speed


class RotationFilter:
    """Streaming One-Euro filter of one rotation, given as its axes (the columns of a
    ``(3, 3)`` rotation matrix) — the chest frame of a live source or a recording (spec
    §7.3 "Smoothing", :data:`CHEST_PARAMS`). Call with the frame time in seconds (strictly
    increasing) and the axes; :meth:`reset` when the rotation is not seen."""

    def __init__(self, params: OneEuroParams = CHEST_PARAMS) -> None:
        self.params = params
        self._q: F64 | None = None
        self._speed = 0.0
        self._t: float | None = None

    def reset(self) -> None:
        """Forget the state (the next rotation is taken as it is)."""
        self._q, self._speed = None, 0.0

    def __call__(self, t: float, rotation: ArrayLike) -> F64:
        from posewire.codec.quaternion import from_matrix_unchecked, to_matrix

        if self._t is not None and not t > self._t:
            raise UsageError("usage.bad_option", f"frame times must increase ({t} after {self._t})")
        dt = None if self._t is None else t - self._t
        self._t = t
        q = from_matrix_unchecked(np.asarray(rotation, dtype=np.float64))
        if self._q is None or dt is None:
            self._q, self._speed = q, 0.0
        else:
            self._q, self._speed = _rotation_step(self._q, self._speed, q, dt, self.params)
        out: F64 = to_matrix(self._q)
        return out


def _slerp(a: F64, b: F64, t: float) -> F64:
    dot = float(np.clip(a @ b, -1.0, 1.0))
    theta = np.arccos(dot)
    if theta < 1e-9:
        out: F64 = a + t * (b - a)
    else:
        out = (np.sin((1.0 - t) * theta) * a + np.sin(t * theta) * b) / np.sin(theta)
    res: F64 = out / np.linalg.norm(out)
    return res


@dataclass(frozen=True)
class FilterResult:
    """:func:`filter_vectors` output: the filtered ``vectors (B, N)`` and, per registry
    group, the median frame-to-frame change (normalized units per frame; palm: radians per
    frame) ``before`` and ``after`` filtering (the jitter report)."""

    vectors: F64
    jitter_before: Mapping[str, float]
    jitter_after: Mapping[str, float]


def filter_vectors(vectors: ArrayLike, times: ArrayLike, *,
                   params: Mapping[str, OneEuroParams] | None = None) -> FilterResult:
    """Filter a recording ``(B, N)`` with frame times ``(B,)`` in seconds (strictly
    increasing) through one :class:`VectorFilter`, with the jitter report."""
    vec = np.asarray(vectors, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if vec.ndim != 2 or vec.shape[1] != N_DIMS or t.shape != (vec.shape[0],):
        raise UsageError("usage.shape", f"vectors (B, {N_DIMS}) and times (B,) expected, got {vec.shape}, {t.shape}")
    f = VectorFilter(params=params)
    out = np.stack([f(float(ti), row) for ti, row in zip(t, vec, strict=True)]) if vec.shape[0] else vec.copy()
    return FilterResult(out, group_jitter(vec), group_jitter(out))


def group_jitter(vectors: ArrayLike) -> dict[str, float]:
    """Median frame-to-frame change per registry group of a series ``(B, N)`` (palm: the
    angle between consecutive palm rotations, radians); groups never present are left out."""
    vec = np.asarray(vectors, dtype=np.float64)
    out: dict[str, float] = {}
    for group in DEFAULT_PARAMS:
        if group == "palm":
            angles = []
            for k in range(2):
                p = vec[:, _PALM[k]]
                w = np.sqrt(np.maximum(0.0, 1.0 - (p * p).sum(-1)))
                q = np.concatenate([w[:, None], p], axis=-1)
                dot = np.abs((q[1:] * q[:-1]).sum(-1))
                angles.append(2.0 * np.arccos(np.minimum(1.0, dot)))
            change = np.concatenate(angles)
        else:
            idx = [d.index for d in REGISTRY.dimensions if d.row.group == group]
            change = jitter(vec[:, idx]).ravel()
        change = change[np.isfinite(change)]
        if change.size:
            out[group] = float(np.median(change))
    return out


def jitter(values: ArrayLike) -> F64:
    """Frame-to-frame change ``|x[t+1] − x[t]|`` ``(B−1, K)`` of a series ``(B, K)``, NaN
    where either frame is NaN (the jitter figures of the benchmark)."""
    arr = np.asarray(values, dtype=np.float64)
    out: F64 = np.abs(np.diff(arr, axis=0))
    return out
