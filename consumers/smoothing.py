"""Smoothing for consumers of jittery or lossy frame streams (spec §3.5, §5.10; seed 003).

* :class:`Interpolator` — a jitter buffer: frames are pushed as they arrive and the pose
  is rendered ``delay_us`` in the past, between the two frames that bracket that time.
  Normalized dims are interpolated linearly; the palm quaternions (spec §4.2) and the
  head and body Euler triples (spec §4.4/§4.5) by slerp of their quaternions, so
  rotations take the short path. Dims absent from a frame (NaN) hold their last value
  (spec §3.5: "last good value, else the default"). Sequence numbers follow spec §5.10
  (uint32, wrapping): duplicates and reordered frames are ignored and reported.
* :func:`smooth_quat` — frame-rate-independent exponential smoothing of rotations
  (seed ``003_95e5af7f8bdf5a13.txt`` ``QuatTemporalFilter``).
* :func:`yaw_follow` — the body yaw follows the head yaw outside a dead zone (seed 003
  ``QuatYawFollow { threshold: π/4, rate: 3.0 }``).

Quaternions are ``(w, x, y, z)`` (spec §3.3); times are µs for frames and seconds for
the smoothing rates; angles of :func:`yaw_follow` are radians.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.euler import body_to_quat, head_to_quat, quat_to_body, quat_to_head
from posewire.codec.quaternion import palm_decode, palm_encode
from posewire.codec.registry import DIMENSIONS, REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS, validate

__all__ = [
    "Interpolator",
    "PushReport",
    "SampleReport",
    "slerp",
    "smooth_quat",
    "yaw_follow",
]

F64 = NDArray[np.float64]

_SEQ_MOD = 1 << 32
#: spec §5.10: a frame at most this far behind the newest is a duplicate / reordered.
_REORDER_WINDOW = 1024
_PALM_DIMS = {s: np.array([REGISTRY.index(f"{a}_{s}") for a in ("w_qx", "w_qy", "w_qz")])
              for s in ("l", "r")}
_HEAD_DIMS = np.array([REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")])
_BODY_DIMS = np.array([REGISTRY.index(d) for d in ("b_yaw", "b_pitch", "b_roll")])


def slerp(q0: ArrayLike, q1: ArrayLike, t: ArrayLike) -> F64:
    """Spherical interpolation ``(..., 4)`` from unit quaternions ``q0`` to ``q1`` by the
    fraction ``t`` (broadcast; ``t`` outside [0, 1] extrapolates along the same arc).

    Short path: ``q1`` is negated when ``q0 · q1 < 0``. The weights
    ``sin((1 − t)θ)/sin θ`` and ``sin(tθ)/sin θ`` are evaluated through ``np.sinc`` so
    they stay exact as ``θ → 0`` (no linear fallback: slerp stays angle-linear, which
    :func:`smooth_quat`'s frame-rate independence needs). The result is normalized.
    """
    a = np.asarray(q0, dtype=np.float64)
    b = np.asarray(q1, dtype=np.float64)
    frac = np.asarray(t, dtype=np.float64)[..., None]
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0.0, -b, b)
    # θ between the 4-vectors, stable at both ends: 2·atan2(|b − a|, |b + a|)
    theta = 2.0 * np.arctan2(np.linalg.norm(b - a, axis=-1, keepdims=True),
                             np.linalg.norm(b + a, axis=-1, keepdims=True))
    base = np.sinc(theta / np.pi)  # sin θ / θ
    w0 = (1.0 - frac) * np.sinc((1.0 - frac) * theta / np.pi) / base
    w1 = frac * np.sinc(frac * theta / np.pi) / base
    out = w0 * a + w1 * b
    result: F64 = out / np.linalg.norm(out, axis=-1, keepdims=True)
    return result


def smooth_quat(previous: ArrayLike, target: ArrayLike, dt_s: ArrayLike, *, rate: float) -> F64:
    """One step of exponential rotation smoothing (seed 003 ``QuatTemporalFilter``):
    ``slerp(previous, target, 1 − exp(−rate · dt_s))`` for unit quaternions ``(..., 4)``,
    ``dt_s`` seconds (``(...,)`` or scalar, ≥ 0) and ``rate`` 1/s (> 0; seed 003's
    ``hand_rotation_smoothing: 220``). Frame-rate independent: two steps of ``dt/2`` equal
    one step of ``dt`` (the remaining angle decays as ``exp(−rate · t)``). ``dt_s = 0``
    returns ``previous``. Raises ``usage.bad_option`` for a bad rate or negative dt."""
    if not (np.isfinite(rate) and rate > 0.0):
        raise UsageError("usage.bad_option", f"rate must be a positive number, not {rate!r}")
    dt = np.asarray(dt_s, dtype=np.float64)
    if not (np.isfinite(dt).all() and (dt >= 0.0).all()):
        raise UsageError("usage.out_of_range", "dt_s must be finite and >= 0")
    return slerp(previous, target, -np.expm1(-rate * dt))


def _wrap(angle: F64) -> F64:
    # radians into (−π, π]
    out: F64 = np.pi - np.mod(np.pi - angle, 2.0 * np.pi)
    return out


def yaw_follow(body_yaw: ArrayLike, head_yaw: ArrayLike, dt_s: ArrayLike, *,
               threshold: float = np.pi / 4, rate: float = 3.0) -> F64:
    """The body yaw after one step of seed 003's ``QuatYawFollow`` (radians, wrapped to
    (−π, π], shape of the broadcast inputs).

    With ``d = wrap(head − body)``: when ``|d| ≤ threshold`` the body keeps its yaw;
    otherwise it turns toward the head by ``min(rate · dt_s, |d| − threshold)``, so the
    difference shrinks at ``rate`` rad/s and stops at the threshold (never overshoots).
    Mirror-symmetric: ``yaw_follow(−b, −h) = −yaw_follow(b, h)`` (away from ``|d| = π``).
    """
    if not (np.isfinite(threshold) and 0.0 <= threshold < np.pi):
        raise UsageError("usage.bad_option", f"threshold must be in [0, π), not {threshold!r}")
    if not (np.isfinite(rate) and rate >= 0.0):
        raise UsageError("usage.bad_option", f"rate must be >= 0, not {rate!r}")
    body = np.asarray(body_yaw, dtype=np.float64)
    dt = np.asarray(dt_s, dtype=np.float64)
    if not (np.isfinite(dt).all() and (dt >= 0.0).all()):
        raise UsageError("usage.out_of_range", "dt_s must be finite and >= 0")
    diff = _wrap(np.asarray(head_yaw, dtype=np.float64) - body)
    excess = np.abs(diff) - threshold
    step = np.where(excess > 0.0, np.minimum(rate * dt, excess), 0.0)
    return _wrap(body + np.sign(diff) * step)


@dataclass(frozen=True)
class PushReport:
    """What :meth:`Interpolator.push` did with a frame (spec §5.10 sequence states).

    ``status``: ``first``, ``in_order``, ``gap`` (``missing`` frames lost before it),
    ``reset`` (sequence restarted: buffer cleared), ``stale`` (duplicate or reordered:
    ignored) or ``timestamp`` (newer seq but not a later time: ignored). ``clamped`` /
    ``replaced``: dims clamped to bounds / infinite values replaced (spec §3.5);
    ``absent``: dims NaN in the frame, holding their last value."""

    accepted: bool
    status: Literal["first", "in_order", "gap", "reset", "stale", "timestamp"]
    missing: int = 0
    clamped: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class SampleReport:
    """How :meth:`Interpolator.sample` produced a vector.

    ``status``: ``empty`` (no frame yet: defaults), ``early`` (render time before the
    first frame: held), ``exact`` (on a frame time), ``interpolated``, ``extrapolated``
    (past the newest frame, within ``extrapolate_us``), ``held`` (no newer frame, within
    ``max_hold_us``) or ``stale`` (held longer than ``max_hold_us``). ``render_us`` =
    ``t_us − delay_us``; ``gap_us``: the interval bridged (between the bracketing frames,
    or since the newest frame when held or extrapolated); ``lost``: frames missing
    between the bracketing frames (seq gap); ``alpha``: interpolation fraction;
    ``held_dims``: dims absent from the frames used, holding an earlier value;
    ``euler_clamped``: an interpolated head/body Euler triple left its bounds and was
    clamped (spec §3.5)."""

    status: Literal["empty", "early", "exact", "interpolated", "extrapolated", "held", "stale"]
    render_us: int
    gap_us: int = 0
    lost: int = 0
    alpha: float = 0.0
    held_dims: tuple[str, ...] = ()
    euler_clamped: bool = False

    @property
    def held(self) -> bool:
        """True when the vector is a held frame (early, held or stale)."""
        return self.status in ("early", "held", "stale")

    @property
    def extrapolated(self) -> bool:
        """True when the vector was extrapolated past the newest frame."""
        return self.status == "extrapolated"

    @property
    def stale(self) -> bool:
        """True when there is no usable frame (none yet, or held past ``max_hold_us``)."""
        return self.status in ("stale", "empty")


@dataclass
class _Frame:
    seq: int
    time_us: int
    vector: F64  # (N,) complete: absent dims filled with the last value
    absent: NDArray[np.bool_]  # (N,)
    missing: int  # frames lost just before this one


def _names(mask: NDArray[np.bool_]) -> tuple[str, ...]:
    return tuple(DIMENSIONS[i].id for i in np.flatnonzero(mask))


@dataclass
class Interpolator:
    """Jitter buffer rendering pose vectors ``delay_us`` behind the caller's clock
    (module docstring). Options (keyword-only): ``delay_us`` (render delay, µs, ≥ 0),
    ``max_hold_us`` (how long the newest frame is held after the stream stops before the
    sample is reported ``stale``), ``extrapolate_us`` (how far past the newest frame to
    extrapolate along the last two frames instead of holding; 0 = never),
    ``max_frames`` (buffer length). Render times are expected not to go backwards:
    frames older than the last bracket are discarded."""

    delay_us: int = field(default=50_000, kw_only=True)
    max_hold_us: int = field(default=500_000, kw_only=True)
    extrapolate_us: int = field(default=0, kw_only=True)
    max_frames: int = field(default=64, kw_only=True)
    _frames: list[_Frame] = field(default_factory=list, init=False, repr=False)
    _last: F64 = field(default_factory=lambda: DEFAULTS.copy(), init=False, repr=False)
    _last_seq: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("delay_us", "max_hold_us", "extrapolate_us"):
            if getattr(self, name) < 0:
                raise UsageError("usage.bad_option", f"{name} must be >= 0")
        if self.max_frames < 2:
            raise UsageError("usage.bad_option", "max_frames must be >= 2")

    def push(self, seq: int, timestamp_us: int, vector: ArrayLike, *,
             reset: bool = False) -> PushReport:
        """Add a frame: ``vector (N,)`` normalized dims, NaN = absent (holds its last
        value, else the default). ``reset``: the frame starts a new producer (a
        :class:`~posewire.consumers.subscriber.SubscribedFrame` marked ``reset``, spec
        §5.10), so the buffer starts afresh from it whatever its number and time.
        Returns what was done (:class:`PushReport`)."""
        vec = np.asarray(vector, dtype=np.float64)
        if vec.shape != (N_DIMS,):
            raise UsageError("usage.shape", f"vector must have shape ({N_DIMS},), got {vec.shape}")
        missing = 0
        status: Literal["first", "in_order", "gap", "reset"]
        if self._last_seq is None:
            status = "first"
        elif reset:
            status = "reset"
            self._frames.clear()
        else:
            ahead = (seq - self._last_seq) % _SEQ_MOD  # spec §5.10, uint32 arithmetic
            if ahead == 1:
                status = "in_order"
            elif 1 < ahead < _SEQ_MOD // 2:
                status, missing = "gap", ahead - 1
            elif (self._last_seq - seq) % _SEQ_MOD <= _REORDER_WINDOW:
                return PushReport(False, "stale")
            else:
                status = "reset"
                self._frames.clear()
        if status in ("in_order", "gap") and self._frames and timestamp_us <= self._frames[-1].time_us:
            return PushReport(False, "timestamp")
        absent = np.isnan(vec)
        filled, validation = validate(np.where(absent, self._last, vec), policy="clamp")
        self._last = filled
        self._last_seq = seq
        self._frames.append(_Frame(seq, int(timestamp_us), filled, absent, missing))
        del self._frames[:-self.max_frames]
        return PushReport(True, status, missing, _names(validation.clamped),
                          _names(validation.replaced), _names(absent))

    def sample(self, t_us: int) -> tuple[F64, SampleReport]:
        """The vector ``(N,)`` to render at the caller's time ``t_us`` (µs), i.e. at
        ``t_us − delay_us`` in frame time, and how it was obtained."""
        render = int(t_us) - self.delay_us
        frames = self._frames
        if not frames:
            return DEFAULTS.copy(), SampleReport("empty", render)
        times = [f.time_us for f in frames]
        k = bisect.bisect_right(times, render)  # frames[k - 1].time_us <= render
        if k == 0:
            first = frames[0]
            return first.vector.copy(), SampleReport("early", render, first.time_us - render,
                                                     held_dims=_names(first.absent))
        f0 = frames[k - 1]
        before = frames[k - 2] if k >= 2 else None
        f1 = frames[k] if k < len(frames) else None
        del frames[:max(k - 2, 0)]  # older frames can no longer bracket a render time
        if f0.time_us == render:
            return f0.vector.copy(), SampleReport("exact", render, held_dims=_names(f0.absent))
        if f1 is not None:
            alpha = (render - f0.time_us) / (f1.time_us - f0.time_us)
            vec, clamped = _interpolate(f0.vector, f1.vector, alpha)
            return vec, SampleReport("interpolated", render, f1.time_us - f0.time_us, f1.missing,
                                     alpha, _names(f0.absent | f1.absent), clamped)
        age = render - f0.time_us
        if before is not None and age <= self.extrapolate_us:
            alpha = (render - before.time_us) / (f0.time_us - before.time_us)
            vec, clamped = _interpolate(before.vector, f0.vector, alpha)
            return vec, SampleReport("extrapolated", render, age, f0.missing, alpha,
                                     _names(before.absent | f0.absent), clamped)
        status: Literal["held", "stale"] = "held" if age <= self.max_hold_us else "stale"
        return f0.vector.copy(), SampleReport(status, render, age, held_dims=_names(f0.absent))


def _interpolate(v0: F64, v1: F64, alpha: float) -> tuple[F64, bool]:
    # linear dims lerp; palm and Euler dims by slerp of their quaternions (short path)
    out: F64 = v0 + alpha * (v1 - v0)
    for side, dims in _PALM_DIMS.items():  # spec §4.2
        q0, _ = palm_decode(v0[dims], side=side)  # type: ignore[arg-type]
        q1, _ = palm_decode(v1[dims], side=side)  # type: ignore[arg-type]
        out[dims], _ = palm_encode(slerp(q0, q1, alpha), side=side)  # type: ignore[arg-type]
    head, head_clamped = quat_to_head(slerp(head_to_quat(v0[_HEAD_DIMS]), head_to_quat(v1[_HEAD_DIMS]),
                                            alpha))
    body, body_clamped = quat_to_body(slerp(body_to_quat(v0[_BODY_DIMS]), body_to_quat(v1[_BODY_DIMS]),
                                            alpha))
    out[_HEAD_DIMS], out[_BODY_DIMS] = head, body
    # extrapolation can leave the bounds: clamp like spec §3.5
    clipped, report = validate(out, policy="clamp")
    return clipped, bool(head_clamped or body_clamped or report.clamped.any())
