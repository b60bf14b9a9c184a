"""Finger model study: which finger model reproduces the fingers real cameras see (spec §4.3).

For every tracked finger of every real recording (``fidelity_bench._reprojection_paths()``), in
the hand's canonical palm frame (spec §2.4, §3.2: the left hand's x negated; the producer's
depth gain of §4.3 applied, as posewire.fidelity does; metres by the recording's
``hand_scale``), each candidate finger model is fitted to the observed PIP, DIP and tip (thumb:
MCP, IP, tip) by least squares on the three points (9 residuals, metres), starting at the
person's own knuckle (thumb: CMC) with the person's own phalanx lengths (per recording and
finger, the median over its frames of each bone's length after the depth gain). The solver is
a batched Levenberg–Marquardt with its bounds kept by an active set (every finger sample its
own damping; three starts per finger, five with a twist), cross-checked against
``scipy.optimize.least_squares`` (trf, the same bounds) on a fixed-seed subsample.

Candidates for index…pinky (angles in degrees; "anatomical" = base fold −30…+100 (inside the
registry's ±120 fold range check), side ±30 about the relaxed splay σ of the registry's side
row ``neutral_deg``, PIP −10…+110, DIP −30…+90, no sideways hinge):

1. ``registry``: fold, side, one equal curl at PIP and DIP (fold ±120, side ±30, curl ±90);
2. ``side ±60``: the same with side ±60;
3. ``split curl``: PIP and DIP bend separately (anatomical);
4. ``twist``: the registry's dims plus τ, the two distal joints bending about an axis turned
   by τ about the proximal phalanx: unbounded, |τ| ≤ 15 and ≤ 25 (the anatomical range of a
   finger's axial rotation);
5. ``split + twist``: split curl with |τ| ≤ 15, ≤ 25 (anatomical);
6. ``convergent``: no new dim; the base fold axis of each finger tilted by κ about the finger
   (the lateral axis turned toward the palm normal), so that folded fingers swing sideways as
   real ones converge toward the scaphoid; κ is one constant per finger **fitted** over all
   recordings (the least total squared residual on a 5° grid, then 1°), not taken from the
   literature; the distal joints bend about the proximal phalanx's own lateral axis;
7. ``split + convergent``: 3 and 6 (κ fitted again for it).

Thumb (CMC → MCP → IP → tip): ``registry`` (fold ±90 about the palm normal from the rest
direction, side ±45, roll ±90, one curl ±90 at MCP and IP; spec §4.3 "Thumb"), and ``split
curl`` (MCP −10…+110, IP −30…+90, side ±50, fold and roll as the registry's). A twist is the
thumb's roll already and its base has no fixed fold axis to tilt, so 2, 4–7 are not fitted.

"What is sent": the real encoder (``landmarks_to_vectors``) decoded onto ``helix-humanoid@1``
(``posewire.groundtruth.render``), its finger angles put on the person's knuckle, metacarpal
and phalanx lengths (``posewire.fidelity.person_fingers``), against the same points; and
``posewire.fidelity``'s knuckle → tip figure (the avatar's palm frame, its own metacarpals).

Measures per fit: the knuckle → tip direction error (degrees), the last finger bone (DIP → tip)
direction error (degrees), the fingertip position error (mm, on the person's proportions: the
fit is made on them) and the share of fits with a parameter on a bound. Then the same fits on
ground truth (``moving_vectors`` with its finger dims clipped to the anatomical ranges above,
``render``, ``noise`` at 0, 2, 2/6 and 6 mm): the fitted finger against the true one, and how much
each extra dim absorbs noise (the truth has τ = 0, equal curls and κ = 0).

Usage: python benchmarks/finger_model_study.py [--quick]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from posewire.codec.registry import REGISTRY
from posewire.fidelity import (
    _camera_hand,
    _in_palm,
    _model_fingers,
    _palm_basis,
    angle_deg,
    person_fingers,
    person_phalanges,
    unit,
)
from posewire.groundtruth import moving_vectors, noise, render
from posewire.producers.hand import FINGER_CHAINS, THUMB_CHAIN, THUMB_REST, THUMB_SIDE_AXIS
from posewire.producers.landmarks import HolisticLandmarks, LandmarkResult, landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity_bench import _reprojection_paths

F64 = NDArray[np.float64]
I64 = NDArray[np.intp]
FINGERS = ("thumb", *FINGER_CHAINS)
CHAINS = np.array([THUMB_CHAIN, *FINGER_CHAINS.values()], dtype=np.intp)  # (5, 4)
RAD = np.pi / 180.0
#: Relaxed splay σ of index…pinky (degrees toward the pinky from the metacarpal, spec §4.3): the
#: side rows' neutral_deg, read by id so the study follows the registry
SPLAY = np.array([0.0, *(REGISTRY.by_id[f"g_{f}_side_r"].row.neutral_deg or 0.0 for f in FINGER_CHAINS)])


def _deg(dim: str) -> float:
    return float(REGISTRY.by_id[dim].row.angle_deg or 0.0)


#: Registry ranges (degrees, normalized ±1 × angle_deg)
REG_FOLD, REG_SIDE, REG_CURL = _deg("g_index_fold_r"), _deg("g_index_side_r"), _deg("g_index_curl_r")
REG_THUMB_FOLD, REG_THUMB_SIDE, REG_THUMB_ROLL = _deg("g_thumb_fold_r"), _deg("g_thumb_side_r"), _deg("g_thumb_roll_r")
#: Anatomical ranges (degrees; the brief of this study): base fold, PIP, DIP; side about σ
ANAT_FOLD, ANAT_PIP, ANAT_DIP, ANAT_SIDE, ANAT_THUMB_SIDE = (-30.0, 100.0), (-10.0, 110.0), (-30.0, 90.0), 30.0, 50.0
#: Whether the registry already has a separate distal-joint curl per finger (``g_<f>_distal``)
HAS_DISTAL = "g_index_distal_r" in REGISTRY.by_id


# ------------------------------------------------------------------------------ geometry


_unit, _angle_deg = unit, angle_deg


def _cross(a: F64, b: F64) -> F64:
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _rotate(axis: F64, angle: F64, v: F64) -> F64:
    """``v`` turned by ``angle`` about unit ``axis`` (Rodrigues; broadcast over ``(..., 3)``)."""
    c, s = np.cos(angle)[..., None], np.sin(angle)[..., None]
    axis = np.broadcast_to(axis, v.shape)
    out: F64 = v * c + _cross(axis, v) * s + axis * ((axis * v).sum(-1, keepdims=True)) * (1.0 - c)
    return out


def finger_points(fold: F64, side: F64, pip: F64, dip: F64, twist: F64, tilt: F64, base: F64, lengths: F64) -> F64:
    """PIP, DIP, tip ``(n, 3, 3)`` from the knuckle of index…pinky in the canonical palm frame.

    ``base``: α + σ, the in-plane direction (radians toward the pinky from +Y) of the finger at
    side 0 (the metacarpal's α, spec §4.3); ``side``: the turn from it; ``fold``: about the lateral
    axis ℓ tilted by ``tilt`` about the finger (``a = cos κ·ℓ + sin κ·Z``); ``pip``/``dip``: the
    distal bends about the proximal phalanx's lateral axis turned by ``twist`` about the phalanx.
    With tilt = twist = 0 and pip = dip this is spec §4.3's finger exactly."""
    beta = base + side
    cb, sb = np.cos(beta), np.sin(beta)
    ck, sk, cf, sf = np.cos(tilt), np.sin(tilt), np.cos(fold), np.sin(fold)
    # the local finger axes e_x = ℓ = (cb, sb, 0), e_y = d = (−sb, cb, 0), e_z = Z turned by R_a(fold),
    # a = (cos κ, 0, sin κ); each as (ℓ, d, Z) coefficients
    vf = 1.0 - cf
    u = (cf + ck * ck * vf, sk * sf, ck * sk * vf)
    b1 = (-sk * sf, cf, ck * sf)
    w = (sk * ck * vf, -ck * sf, cf + sk * sk * vf)
    ct, st = np.cos(twist), np.sin(twist)
    q = tuple(st * a + ct * b for a, b in zip(u, w, strict=True))  # (turned lateral axis) × b1
    c2, s2, c3, s3 = np.cos(pip), np.sin(pip), np.cos(pip + dip), np.sin(pip + dip)
    l1, l2, l3 = lengths[:, 0], lengths[:, 1], lengths[:, 2]
    # the points in (ℓ, d, Z) coefficients: PIP = l1·b1, DIP = PIP + l2·b2, tip = DIP + l3·b3
    coef = []
    for k in range(3):
        pip_k = l1 * b1[k]
        dip_k = pip_k + l2 * (c2 * b1[k] + s2 * q[k])
        coef.append((pip_k, dip_k, dip_k + l3 * (c3 * b1[k] + s3 * q[k])))
    out = np.empty((beta.shape[0], 3, 3))
    for j in range(3):
        a, b, c = coef[0][j], coef[1][j], coef[2][j]
        out[:, j, 0] = a * cb - b * sb
        out[:, j, 1] = a * sb + b * cb
        out[:, j, 2] = c
    return out


def thumb_points(fold: F64, side: F64, roll: F64, mcp: F64, ip: F64, lengths: F64) -> F64:
    """MCP, IP, tip ``(n, 3, 3)`` from the CMC in the canonical palm frame: spec §4.3 "Thumb"
    (``R1 = R_Z(fold)·R_tx(side)·R_ty(roll)``, then ``R_Z`` bends at MCP and IP)."""
    z = np.array([0.0, 0.0, 1.0])
    n = fold.shape[0]
    ty, tx = np.broadcast_to(THUMB_REST, (n, 3)), np.broadcast_to(THUMB_SIDE_AXIS, (n, 3))
    r1y = _rotate(z, fold, _rotate(tx, side, ty))
    r1x = _rotate(z, fold, _rotate(tx, side, _rotate(ty, roll, tx)))
    bones = [r1y, np.cos(mcp)[..., None] * r1y - np.sin(mcp)[..., None] * r1x,
             np.cos(mcp + ip)[..., None] * r1y - np.sin(mcp + ip)[..., None] * r1x]
    return np.cumsum(np.stack(bones, axis=1) * lengths[..., None], axis=1)


# ------------------------------------------------------------------------------ candidates


@dataclass(frozen=True)
class Candidate:
    """A finger model: its free parameters (``fold side curl`` or ``pip dip``, ``twist``;
    thumb: ``fold side roll curl`` or ``mcp ip``), their bounds (degrees; ±inf: none), whether
    the fold axis is convergent (κ per finger, fitted), and how many dims it sends per finger."""

    name: str
    params: tuple[str, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    thumb: bool = False
    convergent: bool = False

    @property
    def dims(self) -> int:
        return len(self.params)


def _finger_candidates() -> list[Candidate]:
    reg = (("fold", "side", "curl"), (-REG_FOLD, -REG_SIDE, -REG_CURL), (REG_FOLD, REG_SIDE, REG_CURL))
    split = (("fold", "side", "pip", "dip"), (ANAT_FOLD[0], -ANAT_SIDE, ANAT_PIP[0], ANAT_DIP[0]),
             (ANAT_FOLD[1], ANAT_SIDE, ANAT_PIP[1], ANAT_DIP[1]))
    out = [Candidate("registry", *reg), Candidate("side ±60", reg[0], (-REG_FOLD, -60.0, -REG_CURL),
                                                   (REG_FOLD, 60.0, REG_CURL)),
           Candidate("split curl", *split)]
    for bound in (np.inf, 25.0, 15.0):
        label = "unbounded" if bound == np.inf else f"≤ {bound:g}"
        out.append(Candidate(f"twist {label}", (*reg[0], "twist"), (*reg[1], -bound), (*reg[2], bound)))
    for bound in (25.0, 15.0):
        out.append(Candidate(f"split + twist ≤ {bound:g}", (*split[0], "twist"), (*split[1], -bound),
                             (*split[2], bound)))
    out.append(Candidate("convergent", *reg, convergent=True))
    out.append(Candidate("split + convergent", *split, convergent=True))
    return out


def _thumb_candidates() -> list[Candidate]:
    names = ("fold", "side", "roll")
    lo = (-REG_THUMB_FOLD, -REG_THUMB_SIDE, -REG_THUMB_ROLL)
    hi = (REG_THUMB_FOLD, REG_THUMB_SIDE, REG_THUMB_ROLL)
    return [Candidate("registry", (*names, "curl"), (*lo, -REG_CURL), (*hi, REG_CURL), thumb=True),
            Candidate("split curl", (*names, "mcp", "ip"), (-REG_THUMB_FOLD, -ANAT_THUMB_SIDE, -REG_THUMB_ROLL,
                                                              ANAT_PIP[0], ANAT_DIP[0]),
                      (REG_THUMB_FOLD, ANAT_THUMB_SIDE, REG_THUMB_ROLL, ANAT_PIP[1], ANAT_DIP[1]), thumb=True)]


CANDIDATES = _finger_candidates()
THUMB_CANDIDATES = _thumb_candidates()


# ------------------------------------------------------------------------------ samples


@dataclass
class Samples:
    """Finger samples (one finger in one frame): observed PIP, DIP, tip from the knuckle
    ``obs (n, 3, 3)`` (metres, canonical palm frame), the person's phalanx lengths ``(n, 3)``,
    ``base (n,)`` = α + σ (radians; 0 for the thumb), ``finger (n,)`` 0…4, ``recording (n,)``, what
    is sent put on the person's proportions ``sent (n, 3, 3)``, posewire.fidelity's knuckle → tip
    error of what is sent ``fidelity_tip (n,)`` (the avatar's palm frame), and on ground truth the
    true points ``truth (n, 3, 3)`` (else NaN)."""

    obs: F64
    lengths: F64
    base: F64
    finger: I64
    recording: I64
    sent: F64
    fidelity_tip: F64
    truth: F64

    def select(self, keep: NDArray[np.bool_]) -> Samples:
        return Samples(*(getattr(self, k)[keep] for k in _FIELDS))


_FIELDS = ("obs", "lengths", "base", "finger", "recording", "sent", "fidelity_tip", "truth")


def _canonical(points: F64, side: str) -> F64:
    out: F64 = points * np.array([-1.0, 1.0, 1.0]) if side == "l" else points
    return out


def _hand_samples(lm: HolisticLandmarks, result: LandmarkResult, side: str, recording: int,
                  truth: HolisticLandmarks | None = None) -> Samples | None:
    """One hand's samples; ``truth``: the noiseless hand of ground truth (its points in their own
    palm frame, from their own knuckle)."""
    if not (result.tracking[f"hand_{side}"] == "tracked").any():
        return None
    rows, _, person, metres, _ = _camera_hand(lm, result, side)
    if not rows.size:
        return None
    person_m = person * metres[:, None, None]
    lengths = person_phalanges(person_m)  # (5, 3)
    vectors = np.where(np.isfinite(result.vectors), result.vectors, 0.0)[rows]
    avatar = render(vectors).landmarks
    model = avatar.left_hand if side == "l" else avatar.right_hand
    bones, knuckles = _model_fingers(_in_palm(_palm_basis(model, side), model))
    sent = person_fingers(person_m, lengths, bones, knuckles)  # (b, 5, 4, 3)
    canon = _canonical(person_m, side)
    pts = canon[:, CHAINS]  # (b, 5, 4, 3)
    obs = pts[:, :, 1:] - pts[:, :, :1]
    sent_rel = _canonical(sent[:, :, 1:] - sent[:, :, :1], side)
    meta = pts[:, :, 0]  # wrist → knuckle
    alpha = np.arctan2(-meta[..., 0], meta[..., 1])
    base = np.where(np.arange(5) == 0, 0.0, alpha + SPLAY * RAD)
    b = rows.size
    # fidelity's own figure: the avatar's knuckle → tip in its palm frame (its metacarpals)
    fid_tip = _angle_deg(obs[:, :, 2], _canonical(bones.sum(axis=2), side))
    true_rel = np.full((b * 5, 3, 3), np.nan)
    if truth is not None:
        true_hand = truth.left_hand if side == "l" else truth.right_hand
        tp = _canonical(_in_palm(_palm_basis(true_hand[rows], side), true_hand[rows]), side)[:, CHAINS]
        true_rel = (tp[:, :, 1:] - tp[:, :, :1]).reshape(b * 5, 3, 3)
    return Samples(obs.reshape(b * 5, 3, 3), np.broadcast_to(lengths, (b, 5, 3)).reshape(b * 5, 3), base.reshape(-1),
                   np.tile(np.arange(5), b), np.full(b * 5, recording), sent_rel.reshape(b * 5, 3, 3),
                   fid_tip.reshape(-1), true_rel)


def _concat(parts: Sequence[Samples]) -> Samples:
    return Samples(*(np.concatenate([getattr(p, k) for p in parts]) for k in _FIELDS))


# ------------------------------------------------------------------------------ fitting


def _initial(obs: F64, base: F64, thumb: bool) -> F64:
    """Geometric starting values (radians) per sample: fold, side, first bend, second bend (fingers);
    fold, side, 0, bend, bend (thumb)."""
    b1 = obs[:, 0]
    b2, b3 = obs[:, 1] - obs[:, 0], obs[:, 2] - obs[:, 1]
    if thumb:
        a = _unit(b1)
        side = np.arcsin(np.clip(a[:, 2], -1, 1))
        ty = THUMB_REST
        fold = np.arctan2(ty[0] * a[:, 1] - ty[1] * a[:, 0], ty[0] * a[:, 0] + ty[1] * a[:, 1])
        bend = 0.5 * (np.radians(_angle_deg(b1, b2)) + np.radians(_angle_deg(b2, b3)))
        return np.stack([fold, side, np.zeros_like(fold), bend, bend], axis=-1)
    tip = obs[:, 2]
    beta = np.arctan2(-tip[:, 0], tip[:, 1])
    side = (beta - base + np.pi) % (2 * np.pi) - np.pi
    ell = np.stack([np.cos(beta), np.sin(beta), np.zeros_like(beta)], -1)
    d = np.stack([-np.sin(beta), np.cos(beta), np.zeros_like(beta)], -1)

    def elevation(v: F64) -> F64:
        return np.arctan2(v[:, 2], (v * d).sum(-1))

    del ell
    fold = elevation(b1)
    pip = (elevation(b2) - fold + np.pi) % (2 * np.pi) - np.pi
    dip = (elevation(b3) - elevation(b2) + np.pi) % (2 * np.pi) - np.pi
    return np.stack([fold, side, pip, dip], axis=-1)


def _expand(cand: Candidate, x: F64) -> dict[str, F64]:
    p = dict(zip(cand.params, x.T, strict=True))
    zero = np.zeros(x.shape[0])
    if cand.thumb:
        mcp = p.get("mcp", p.get("curl", zero))
        return {"fold": p["fold"], "side": p["side"], "roll": p["roll"], "mcp": mcp, "ip": p.get("ip", mcp)}
    pip = p.get("pip", p.get("curl", zero))
    return {"fold": p["fold"], "side": p["side"], "pip": pip, "dip": p.get("dip", pip), "twist": p.get("twist", zero)}


def _forward(cand: Candidate, s: Samples, tilt: F64) -> Callable[[F64, I64], F64]:
    """The candidate's points ``(m, 3, 3)`` of parameters ``x (m, k)`` for the samples ``idx (m,)``."""
    def fn(x: F64, idx: I64) -> F64:
        e = _expand(cand, x)
        if cand.thumb:
            return thumb_points(e["fold"], e["side"], e["roll"], e["mcp"], e["ip"], s.lengths[idx])
        return finger_points(e["fold"], e["side"], e["pip"], e["dip"], e["twist"], tilt[idx], s.base[idx],
                             s.lengths[idx])
    return fn


def lm_fit(fn: Callable[[F64, I64], F64], obs: F64, x0: F64, lo: F64, hi: F64,
           iterations: int = 40) -> tuple[F64, F64]:
    """Batched bounded Levenberg–Marquardt: each row its own damping; a parameter on a bound whose
    gradient points outward is held (active set), a step is clipped into the box and kept only if
    it lowers the row's cost; a row stops once 4 steps in a row gained less than 1e−12 m² (or its
    damping reached 1e9). Returns ``x (n, k)`` and the cost (sum of squared residuals, m²)."""
    n, k = x0.shape
    x = np.clip(x0, lo, hi)
    target = obs.reshape(n, -1)

    def residual(v: F64, idx: I64) -> F64:
        out: F64 = fn(v, idx).reshape(idx.size, -1) - target[idx]
        return out

    every = np.arange(n)
    r = residual(x, every)
    cost = (r * r).sum(-1)
    lam = np.full(n, 1e-3)
    stall = np.zeros(n, dtype=np.intp)
    h = 1e-6
    eye = np.eye(k)
    for _ in range(iterations):
        idx = np.flatnonzero((stall < 4) & (lam < 1e9))
        if not idx.size:
            break
        xi, ri = x[idx], r[idx]
        jac = np.empty((idx.size, ri.shape[1], k))
        for j in range(k):
            step = np.zeros(k)
            step[j] = h
            jac[:, :, j] = (residual(xi + step, idx) - residual(xi - step, idx)) / (2 * h)
        grad = (jac * ri[:, :, None]).sum(1)
        held = ((xi <= lo + 1e-12) & (grad > 0)) | ((xi >= hi - 1e-12) & (grad < 0))
        jtj = (jac[:, :, :, None] * jac[:, :, None, :]).sum(1)
        free = ~held
        jtj = np.where(free[:, :, None] & free[:, None, :], jtj, 0.0)
        diag = np.diagonal(jtj, axis1=1, axis2=2)
        a = jtj + (lam[idx, None] * (diag + 1e-12))[:, :, None] * eye + np.where(free, 0.0, 1.0)[:, :, None] * eye
        delta = -np.linalg.solve(a, np.where(free, grad, 0.0)[..., None])[..., 0]
        xn = np.clip(xi + delta, lo, hi)
        rn = residual(xn, idx)
        cn = (rn * rn).sum(-1)
        gain = cost[idx] - cn
        better = gain > 0
        x[idx] = np.where(better[:, None], xn, xi)
        r[idx] = np.where(better[:, None], rn, ri)
        cost[idx] = np.where(better, cn, cost[idx])
        lam[idx] = np.clip(np.where(better, lam[idx] * 0.3, lam[idx] * 10.0), 1e-9, 1e9)
        stall[idx] = np.where(gain > 1e-12, 0, stall[idx] + 1)
    return x, cost


@dataclass(frozen=True)
class Fit:
    """A candidate's fit: parameters ``x (n, k)`` (radians), points ``(n, 3, 3)``, cost (m²) and
    which parameters ended on a bound ``(n, k)``."""

    x: F64
    points: F64
    cost: F64
    at_bound: NDArray[np.bool_]

    @property
    def on_limit(self) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = self.at_bound.any(-1)
        return out


def _starts(cand: Candidate, s: Samples) -> list[F64]:
    """Starting points (radians): the geometric reading, its mean bend, straight, hooked (PIP 90°,
    DIP 60°), the side mirrored, the side of the proximal phalanx, five sides across the side
    range each with the mean bend and with PIP 60°, DIP 45°; with a twist the first two also at
    τ = ±30°; thumb: roll 0, ±45° with the reading's bend and with 30°."""
    n = s.obs.shape[0]
    init = _initial(s.obs, s.base, cand.thumb)
    out: list[dict[str, F64]] = []
    if cand.thumb:
        for roll in (0.0, 45.0, -45.0):
            for bend in (init[:, 3], np.full(n, 30.0 * RAD)):
                out.append({"fold": init[:, 0], "side": init[:, 1], "roll": np.full(n, roll * RAD), "curl": bend,
                            "mcp": bend, "ip": bend})
    else:
        pip, dip = init[:, 2], init[:, 3]
        mean = 0.5 * (pip + dip)
        b1 = s.obs[:, 0]
        side_at = cand.params.index("side")
        sides = np.linspace(np.radians(cand.lo[side_at]), np.radians(cand.hi[side_at]), 5)
        side1 = (np.arctan2(-b1[:, 0], b1[:, 1]) - s.base + np.pi) % (2 * np.pi) - np.pi  # the proximal phalanx's
        for fold, side, a, b in ((init[:, 0], init[:, 1], pip, dip), (init[:, 0], init[:, 1], mean, mean),
                                 (init[:, 0], init[:, 1], 0 * pip, 0 * dip),
                                 (init[:, 0], init[:, 1], np.full(n, 90 * RAD), np.full(n, 60 * RAD)),
                                 (init[:, 0], -init[:, 1], mean, mean), (init[:, 0], side1, mean, mean),
                                 *((init[:, 0], np.full(n, v), a, b) for v in sides
                                   for a, b in ((mean, mean), (np.full(n, 60 * RAD), np.full(n, 45 * RAD))))):
            out.append({"fold": fold, "side": side, "pip": a, "dip": b, "curl": 0.5 * (a + b), "twist": 0 * a})
        if "twist" in cand.params:
            out += [{**e, "twist": np.full(n, t * RAD)} for e in out[:2] for t in (30.0, -30.0)]
    return [np.stack([e[p] for p in cand.params], axis=-1) for e in out]


def fit(cand: Candidate, s: Samples, tilt: F64 | None = None) -> Fit:
    """The candidate fitted to every sample: every start run 6 steps, the best per sample run on
    to convergence (at most 40 more)."""
    n = s.obs.shape[0]
    tilt_ = np.zeros(n) if tilt is None else tilt
    lo, hi = np.radians(cand.lo), np.radians(cand.hi)
    fn = _forward(cand, s, tilt_)
    best_x, best_c = None, None
    for x0 in _starts(cand, s):
        x, c = lm_fit(fn, s.obs, x0, lo, hi, iterations=6)
        if best_x is None or best_c is None:
            best_x, best_c = x, c
        else:
            better = c < best_c
            best_x = np.where(better[:, None], x, best_x)
            best_c = np.where(better, c, best_c)
    assert best_x is not None
    best_x, best_c = lm_fit(fn, s.obs, best_x, lo, hi)
    finite = np.isfinite(lo) & np.isfinite(hi)
    limit = ((np.abs(best_x - lo) < 1e-4) | (np.abs(best_x - hi) < 1e-4)) & finite
    return Fit(best_x, fn(best_x, np.arange(n)), best_c, limit)


def fit_convergent(cand: Candidate, s: Samples, search: int | None = None,
                   span: float = 30.0) -> tuple[Fit, dict[str, float]]:
    """κ per finger (index…pinky) fitted: the least total cost over the samples (``search``: over
    that many of them, drawn with a fixed seed) on a 5° grid (−span…span), then 1° around each
    finger's best; the fit of every sample at those κ."""
    best = {f: (np.inf, 0.0) for f in range(1, 5)}
    n = s.obs.shape[0]
    sub = s if search is None or search >= n else s.select(
        np.isin(np.arange(n), np.random.default_rng(11).choice(n, size=search, replace=False)))

    def scan(values: dict[int, Sequence[float]]) -> None:
        for i in range(max(len(v) for v in values.values())):
            tilt = np.zeros(sub.obs.shape[0])
            for f, v in values.items():
                tilt[sub.finger == f] = v[min(i, len(v) - 1)] * RAD
            result = fit(cand, sub, tilt)
            for f, v in values.items():
                total = float(result.cost[sub.finger == f].sum())
                if total < best[f][0]:
                    best[f] = (total, v[min(i, len(v) - 1)])

    scan({f: list(np.arange(-span, span + 0.1, 5.0)) for f in range(1, 5)})
    scan({f: [best[f][1] + d for d in (-2, -1, 1, 2)] for f in range(1, 5)})
    tilt = np.zeros(s.obs.shape[0])
    for f in range(1, 5):
        tilt[s.finger == f] = best[f][1] * RAD
    return fit(cand, s, tilt), {FINGERS[f]: best[f][1] for f in range(1, 5)}


# ------------------------------------------------------------------------------ measures


@dataclass(frozen=True)
class Measures:
    tip_deg: F64
    last_deg: F64
    tip_mm: F64


def measures(points: F64, truth: F64) -> Measures:
    return Measures(_angle_deg(points[:, 2], truth[:, 2]), _angle_deg(points[:, 2] - points[:, 1],
                                                                      truth[:, 2] - truth[:, 1]),
                    1000.0 * np.sqrt(((points[:, 2] - truth[:, 2]) ** 2).sum(-1)))


def _free_directions(s: Samples) -> F64:
    """Every phalanx along its observed direction with the person's median length: no angle model
    with the person's fixed lengths puts the knuckle → tip direction closer; what its fingertip
    misses is the frame's own phalanx lengths (a camera's change with its depth, spec §4.3)."""
    bones = np.diff(np.concatenate([np.zeros_like(s.obs[:, :1]), s.obs], axis=1), axis=1)
    out: F64 = np.cumsum(_unit(bones) * s.lengths[..., None], axis=1)
    return out


def _q(x: F64, p: float = 50.0) -> float:
    x = x[np.isfinite(x)]
    return float(np.percentile(x, p)) if x.size else float("nan")


def _per_recording(values: F64, recording: I64) -> F64:
    return np.array([_q(values[recording == r]) for r in np.unique(recording)])


# ------------------------------------------------------------------------------ data


def _label(path: Path) -> str:
    letters = path.parent / "letters.csv"
    if letters.exists():
        with letters.open() as f:
            for row in csv.DictReader(f):
                if Path(row["path"]).name == path.name:
                    return f"{path.name[:14]} ({row['words']})"
    return path.name[:24]


def real_samples(paths: Sequence[Path]) -> tuple[Samples, list[str]]:
    parts, names = [], []
    for path in paths:
        lm = read_pose_file(path).landmarks
        res = landmarks_to_vectors(lm)
        got = [h for s in ("l", "r") if (h := _hand_samples(lm, res, s, len(names))) is not None]
        if got:
            parts += got
            names.append(_label(path))
    return _concat(parts), names


def _to_anatomy(vec: F64) -> F64:
    """Finger dims drawn over the registry's range mapped linearly onto the anatomical ranges
    (index…pinky fold −30…100°; every equal curl −10…90°, inside both PIP's and DIP's)."""
    out = vec.copy()

    def onto(v: F64, lo: float, hi: float, full: float) -> F64:
        mapped: F64 = (lo + (v + 1.0) * 0.5 * (hi - lo)) / full
        return mapped

    for s in ("l", "r"):
        for f in FINGERS:
            c = REGISTRY.index(f"g_{f}_curl_{s}")
            curl_deg = _deg(f"g_{f}_curl_r")
            out[:, c] = onto(vec[:, c], -10.0, 90.0, curl_deg)
            if f != "thumb":
                k = REGISTRY.index(f"g_{f}_fold_{s}")
                out[:, k] = onto(vec[:, k], ANAT_FOLD[0], ANAT_FOLD[1], REG_FOLD)
            distal = f"g_{f}_distal_{s}"
            if distal in REGISTRY.by_id:  # the truth bends its two distal joints equally
                out[:, REGISTRY.index(distal)] = out[:, c] * curl_deg / _deg(f"g_{f}_distal_r")
    return out


def truth_samples(frames: int, noise_mm: tuple[float, float], seed: int = 2027) -> Samples:
    rng = np.random.default_rng(seed)
    parts = []
    for k in range(2):
        vec = _to_anatomy(moving_vectors(rng, frames))
        truth = render(vec, view_yaw_deg=np.full(frames, rng.uniform(-45, 45))).landmarks
        xy, z = noise_mm
        lm = truth if xy == 0 and z == 0 else noise(truth, rng, xy=xy / 1000, depth=z / 1000)
        res = landmarks_to_vectors(lm)
        for s in ("l", "r"):
            got = _hand_samples(lm, res, s, k, truth=truth)
            if got is not None:
                parts.append(got)
    return _concat(parts)


# ------------------------------------------------------------------------------ report


def _row(name: str, dims: str, m: Measures, rec: I64, on_limit: float | None) -> str:
    per = _per_recording(m.tip_deg, rec)
    limit = "–" if on_limit is None else f"{100 * on_limit:.1f} %"
    return (f"| {name} | {dims} | {_q(m.tip_deg):.2f} / {_q(m.tip_deg, 95):.1f} | {np.median(per):.2f} "
            f"| {int((per > 7).sum())} | {_q(m.last_deg):.1f} / {_q(m.last_deg, 95):.1f} "
            f"| {_q(m.tip_mm):.2f} / {_q(m.tip_mm, 95):.1f} | {limit} |")


HEADER = ("| model | dims per finger | knuckle→tip median / p95 ° | median of recording medians ° "
          "| recordings > 7° | last bone median / p95 ° | fingertip median / p95 mm | fits on a limit |\n"
          "| --- | ---: | --- | --- | ---: | --- | --- | ---: |")


def real_study(paths: Sequence[Path]) -> tuple[dict[str, Measures], Samples]:
    started = time.perf_counter()
    samples, names = real_samples(paths)
    fingers = samples.select(samples.finger > 0)
    thumbs = samples.select(samples.finger == 0)
    print(f"## Finger models fitted to real recordings ({len(names)} recordings, {fingers.obs.shape[0]} "
          f"index…pinky and {thumbs.obs.shape[0]} thumb samples)\n")
    results: dict[str, Measures] = {}
    limits: dict[str, float] = {}
    tilts: dict[str, dict[str, float]] = {}
    fits: dict[str, Fit] = {}
    for cand in CANDIDATES:
        if cand.convergent:
            got, tilts[cand.name] = fit_convergent(cand, fingers)
        else:
            got = fit(cand, fingers)
        fits[cand.name] = got
        results[cand.name] = measures(got.points, fingers.obs)
        limits[cand.name] = float(got.on_limit.mean())
    results["sent"] = measures(fingers.sent, fingers.obs)
    print(HEADER)
    print(_row("what is sent (encoder → helix-humanoid@1, on the person)", "3", results["sent"], fingers.recording,
               None))
    fid = fingers.fidelity_tip
    per = _per_recording(fid, fingers.recording)
    print(f"| what is sent, fidelity's frame (the avatar's palm and metacarpals) | 3 | {_q(fid):.2f} / "
          f"{_q(fid, 95):.1f} | {np.median(per):.2f} | {int((per > 7).sum())} | – | – | – |")
    for cand in CANDIDATES:
        print(_row(cand.name, str(cand.dims), results[cand.name], fingers.recording, limits[cand.name]))
    floor = measures(_free_directions(fingers), fingers.obs)
    print(_row("(floor) each phalanx its observed direction, the person's median lengths", "–", floor,
               fingers.recording, None))
    print("\nOn a bound, per parameter (share of fits): " + "; ".join(
        f"{cand.name}: " + ", ".join(f"{p} {100 * fits[cand.name].at_bound[:, i].mean():.0f} %"
                                     for i, p in enumerate(cand.params)) for cand in CANDIDATES))
    for name, tilt in tilts.items():
        print(f"\nκ fitted for {name} (degrees, + turns a folding finger toward the pinky): "
              + ", ".join(f"{f} {v:+.0f}" for f, v in tilt.items()))
    twist = fits["twist unbounded"].x[:, 3] / RAD
    twist = (twist + 180.0) % 360.0 - 180.0
    split = fits["split curl"].x
    print(f"\nUnbounded twist fitted: |τ| median {np.median(np.abs(twist)):.1f}°, p95 "
          f"{np.percentile(np.abs(twist), 95):.1f}°, share > 15° {100 * np.mean(np.abs(twist) > 15):.1f} %, "
          f"> 25° {100 * np.mean(np.abs(twist) > 25):.1f} %. Split curl fitted: |PIP − DIP| median "
          f"{np.median(np.abs(split[:, 2] - split[:, 3])) / RAD:.1f}°, p95 "
          f"{np.percentile(np.abs(split[:, 2] - split[:, 3]), 95) / RAD:.1f}°.")
    # per finger
    print("\nPer finger, knuckle→tip median ° / last bone median ° / fingertip median mm:\n")
    shown = ["registry", "split curl", "twist unbounded", "split + twist ≤ 25", "convergent", "split + convergent"]
    print("| finger | what is sent | " + " | ".join(shown) + " |")
    print("| --- |" + " --- |" * (len(shown) + 1))
    for f in range(1, 5):
        keep = fingers.finger == f

        def cell(m: Measures, keep: NDArray[np.bool_] = keep) -> str:
            return f"{_q(m.tip_deg[keep]):.1f} / {_q(m.last_deg[keep]):.1f} / {_q(m.tip_mm[keep]):.1f}"

        print(f"| {FINGERS[f]} | {cell(results['sent'])} | " + " | ".join(cell(results[n]) for n in shown) + " |")
    # thumb
    print("\nThumb (CMC → tip; index…pinky candidates 2, 4–7 do not apply):\n")
    print(HEADER)
    print(_row("what is sent", "4", measures(thumbs.sent, thumbs.obs), thumbs.recording, None))
    for cand in THUMB_CANDIDATES:
        got = fit(cand, thumbs)
        print(_row(cand.name, str(cand.dims), measures(got.points, thumbs.obs), thumbs.recording,
                   float(got.on_limit.mean())))
    # per recording
    short = {"what is sent": "sent", "registry": "reg", "side ±60": "side60", "split curl": "split",
             "twist unbounded": "tw∞", "twist ≤ 25": "tw25", "twist ≤ 15": "tw15", "split + twist ≤ 25": "sp+tw25",
             "split + twist ≤ 15": "sp+tw15", "convergent": "conv", "split + convergent": "sp+conv"}
    order = ["sent", *(c.name for c in CANDIDATES)]
    for title, key in (("knuckle→tip direction median °", "tip_deg"), ("last bone (DIP→tip) median °", "last_deg"),
                       ("fingertip position median mm", "tip_mm")):
        print(f"\nPer recording, index…pinky: {title}\n")
        print("| recording | " + " | ".join(short.get(n, n) for n in ["what is sent", *order[1:]]) + " |")
        print("| --- |" + " ---: |" * len(order))
        for r, name in enumerate(names):
            keep = fingers.recording == r
            print(f"| {name} | " + " | ".join(f"{_q(getattr(results[n], key)[keep]):.1f}" for n in order) + " |")
    print(f"\n(short names: {', '.join(f'{v} = {k}' for k, v in short.items())}; real study "
          f"{time.perf_counter() - started:.0f} s)\n")
    return results, fingers


#: Ground-truth noise levels (x-y, depth; mm): none, 2 mm, MediaPipe-like 2 / 6 mm, 6 mm
LEVELS: tuple[tuple[float, float], ...] = ((0.0, 0.0), (2.0, 2.0), (2.0, 6.0), (6.0, 6.0))


def truth_study(frames: int, levels: Sequence[tuple[float, float]] = LEVELS) -> dict[str, dict[str, float]]:
    """The fits on ground truth against the true finger (index…pinky); κ searched on 400 of the
    samples (fixed seed) within ±15° (a κ found on ±15 would say the span is too narrow)."""
    print(f"## On ground truth (moving_vectors, 2 × {frames} frames, finger dims mapped onto the anatomical "
          "ranges; the fit against the true finger)\n")
    print("| noise x-y / depth mm | model | knuckle→tip median / p95 ° | last bone median / p95 ° "
          "| fingertip median / p95 mm | against the noisy points: knuckle→tip / last bone ° / tip mm median "
          "| fits on a limit | the extra dims on a truth without them |")
    print("| --- | --- | --- | --- | --- | --- | ---: | --- |")
    out: dict[str, dict[str, float]] = {}
    for level in levels:
        s = truth_samples(frames, level)
        f = s.select(s.finger > 0)
        true = f.truth
        rows: list[tuple[str, Measures, Measures, str, str]] = [
            ("what is sent", measures(f.sent, true), measures(f.sent, f.obs), "–", "")]
        for cand in CANDIDATES:
            if cand.convergent:
                got, tilt = fit_convergent(cand, f, search=400, span=15.0)
                extra = "κ " + ", ".join(f"{v:+.0f}" for v in tilt.values()) + "°"
            else:
                got = fit(cand, f)
                extra = ""
                if "twist" in cand.params:
                    tw = np.abs((got.x[:, cand.params.index("twist")] / RAD + 180) % 360 - 180)
                    extra = f"|τ| > 10°: {100 * np.mean(tw > 10):.1f} %, median {np.median(tw):.1f}°"
                if "pip" in cand.params:
                    gap = np.abs(got.x[:, cand.params.index("pip")] - got.x[:, cand.params.index("dip")]) / RAD
                    extra += ("; " if extra else "") + f"|PIP − DIP| median {np.median(gap):.1f}°, p95 " \
                                                        f"{np.percentile(gap, 95):.1f}°"
            rows.append((cand.name, measures(got.points, true), measures(got.points, f.obs),
                         f"{100 * got.on_limit.mean():.1f} %", extra))
        for name, m, seen, limit, extra in rows:
            out[f"{level[0]:g}/{level[1]:g} {name}"] = {"tip": _q(m.tip_deg), "last": _q(m.last_deg),
                                                        "mm": _q(m.tip_mm), "tip95": _q(m.tip_deg, 95)}
            print(f"| {level[0]:g} / {level[1]:g} | {name} | {_q(m.tip_deg):.2f} / {_q(m.tip_deg, 95):.1f} "
                  f"| {_q(m.last_deg):.2f} / {_q(m.last_deg, 95):.1f} | {_q(m.tip_mm):.2f} / {_q(m.tip_mm, 95):.1f} "
                  f"| {_q(seen.tip_deg):.2f} / {_q(seen.last_deg):.1f} / {_q(seen.tip_mm):.1f} | {limit} | {extra} |")
    print("\nThe true finger is the noiseless rendered one (its palm frame, from its knuckle); the fits are made "
          "on the noisy camera points (their palm frame, from the noisy knuckle), so the palm frame's noise is in "
          "every row.\n")
    return out


def scipy_check(samples: Samples, count: int, seed: int = 5) -> str:
    """Our batched fit against scipy.optimize.least_squares on ``count`` random finger samples
    per candidate (fixed seed; scipy from our optimum and from zero, the better kept): the share
    of samples where ours is worse by more than 1 mm² and the largest excess of our cost over
    scipy's (mm², sum over the three points)."""
    from scipy.optimize import least_squares

    rng = np.random.default_rng(seed)
    pick = rng.choice(samples.obs.shape[0], size=min(count, samples.obs.shape[0]), replace=False)
    sub = samples.select(np.isin(np.arange(samples.obs.shape[0]), pick))
    worst = []
    for cand in CANDIDATES:
        if cand.convergent:
            continue
        ours = fit(cand, sub)
        lo, hi = np.radians(cand.lo), np.radians(cand.hi)
        excess, worse = 0.0, 0
        for i in range(sub.obs.shape[0]):
            one = sub.select(np.arange(sub.obs.shape[0]) == i)
            fn = _forward(cand, one, np.zeros(1))

            def res(v: F64, fn: Callable[[F64, I64], F64] = fn, one: Samples = one) -> F64:
                out: F64 = (fn(v[None], np.zeros(1, dtype=np.intp)) - one.obs).ravel()
                return out

            best = np.inf
            for x0 in (ours.x[i], np.clip(np.zeros(cand.dims), lo, hi)):
                x0 = np.clip(x0, np.where(np.isfinite(lo), lo + 1e-9, -10), np.where(np.isfinite(hi), hi - 1e-9, 10))
                got = least_squares(res, x0, bounds=(lo, hi), method="trf")
                best = min(best, 2 * got.cost)
            excess = max(excess, float(ours.cost[i] - best) * 1e6)
            worse += int(float(ours.cost[i] - best) * 1e6 > 1.0)
        worst.append(f"{cand.name} {worse} / {excess:.1f}")
    return ", ".join(worst)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="three recordings, short ground truth (smoke test)")
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    paths = _reprojection_paths()
    if args.quick:
        paths = paths[:3]
    print(f"Registry: {'a separate distal curl (g_<f>_distal)' if HAS_DISTAL else 'one curl per finger'}.\n")
    _, fingers = real_study(paths)
    truth_study(30 if args.quick else 100)
    count = 12 if args.quick else 60
    print(f"Cross-check against scipy.optimize.least_squares (trf, the same bounds, from our optimum and from "
          f"zero) on {count} random index…pinky samples of the real recordings (seed 5): samples where our cost "
          f"is above scipy's by more than 1 mm² / the largest excess (mm²): {scipy_check(fingers, count)}.\n")
    print(f"Total {time.perf_counter() - started:.0f} s wall, {time.process_time() - cpu:.0f} s CPU "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores).")


if __name__ == "__main__":
    main()
