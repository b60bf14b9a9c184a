"""MediaPipe Holistic landmarks -> pose vectors, batch first (spec §2, §3.2, §4.1–4.4).

Pure functions on numpy arrays, no I/O. The input is one batch of ``B`` frames of
MediaPipe Holistic output (:class:`HolisticLandmarks`): pose *world* landmarks
``(B, 33, 3)`` in metres with their visibility ``(B, 33)``, the two hands ``(B, 21, 3)``
and optionally the face mesh ``(B, 468|478, 3)``. Hand and face coordinates may be image
coordinates as long as they are isotropic (x, y and z in the same unit, e.g. pixels with
``z · width``) and share the camera axes of the world landmarks. Missing points are NaN.

Axes (spec §2.3): MediaPipe gives x to the image right, y DOWN, z away from the camera, a
right-handed frame. This module first turns every point into a y-UP right-handed frame
with the proper rotation ``(x, y, z) -> (x, -y, -z)`` (180° about x, :data:`MEDIAPIPE_TO_Y_UP`;
negating y alone would be a reflection and would mirror the body). There, a person
facing the camera has +Y up and faces +z (toward the camera); their left shoulder (pose
11) is at +x in an unmirrored image, and the body frame of spec §2.3 built from sites puts
it at +X, with +Z forward (checked on the real recordings by the tests: the nose is at
+Z). Selfie (mirrored) input must be un-mirrored by the caller first (spec §2.2).

Estimated dims (everything else is NaN = not estimated):

* body (§4.5): the torso rotation ``Q`` relative to the pelvis (hips made horizontal, world
  up) with the §4.5 spine shares undone (:data:`TRUNK_MODEL`); only where both hips are
  visible (an upper-body shot reports ``body_hips_not_visible`` and keeps an upright
  chest frame from the shoulders and MediaPipe's guessed hips).
* the **chest frame** ``R_pelvis · Q`` (the decoder's: its shoulders hang on spine_05)
  carries every other dim: arm, palm and head are measured in it.
* arm (§4.1): ``a_x, a_y, a_z`` from the pose wrist (15 left / 16 right) relative to the
  neck, in calibrated units ``L = 2·r·d`` from the person's shoulder width
  (:func:`estimate_calibration`), the arm sent at its calibrated length ``d_z`` along the seen
  shoulder → wrist with the seen reach (:func:`_rigid_wrist`); ``a_spread`` in the spread frame of
  :mod:`posewire.codec.elbow` (the decoder's pole rule inverted).
* palm (§4.2): the chest-frame hand quaternion from hand points 0, 5, 9, 17; frames without
  a chest frame use :data:`CAMERA_FALLBACK_ROTATION` (reported).
* fingers (§4.3): :func:`posewire.producers.hand.finger_angles`, the exact inverse of the
  decoder's finger rotations, thumb roll included (sent as 0 and reported when the thumb
  is too straight to show it).
* head (§4.4): yaw / pitch / roll of a face frame (eye corners, forehead, chin) relative
  to the chest frame, when face landmarks are given.

Failure modes, each reported (``report.degenerate`` and ``report.notes``, never silent):
swapped hand labels (a hand at the other pose wrist) are swapped back; a mirrored frame
(a selfie image flipped without swapping labels: the head turns inside out) is reported,
or un-mirrored with ``mirrored="flip"``; hand-only frames keep palm and fingers.

Values outside the registry bounds are clamped and **counted per dim in the report**
(spec §3.1, never silent). Parts: ``arm_l/arm_r`` tracked when the chest frame exists and
the wrist visibility reaches the threshold, ``hand_l/hand_r`` when all 21 points are
present, ``head`` when the face is present (``not_estimated`` without a face array),
``body`` when both hips are visible; ``face`` and ``mouth`` are ``not_estimated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.calibration import (
    NAVEL_FRACTION,
    REFERENCE_CALIBRATION,
    Calibration,
    CalibrationUnits,
    arm_to_normalized,
    units,
)
from posewire.codec.conditions import Conditions
from posewire.codec.elbow import spread_angle_unchecked
from posewire.codec.errors import UsageError
from posewire.codec.euler import BODY_MAX_DEG, matrix_to_body, matrix_to_euler, matrix_to_head
from posewire.codec.quaternion import (
    cross_unchecked,
    rotate_unchecked,
    to_matrix,
)
from posewire.codec.registry import REGISTRY, TRACKING_PARTS
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.producers.filter import RotationFilter
from posewire.producers.hand import (
    HAND_POINTS,
    bone_length_ratios,
    estimate_depth_gain,
    finger_angles,
    hand_dims,
    with_depth_gain,
)

__all__ = [
    "BODY_CLAMP_KEY",
    "BODY_PLAUSIBLE",
    "CAMERA_FALLBACK_ROTATION",
    "CAMERA_MEASURE_REPORT",
    "CAMERA_PROPORTIONS",
    "FACE_POINTS",
    "HAND_POINTS",
    "HEAD_CLAMP_KEY",
    "HEAD_FIT_MIN",
    "HEAD_FIT_SQUARINGS",
    "HEAD_REFERENCE",
    "HIPS_VISIBILITY",
    "IMPLAUSIBLE_NOTE",
    "MEDIAPIPE_TO_Y_UP",
    "MIRRORED_NOTE",
    "MIRROR_MIN_SINE",
    "PALM_CLAMP_KEY",
    "POSE_POINTS",
    "SWAPPED_NOTE",
    "SWAP_DISTANCE_RATIO",
    "TRUNK_MODEL",
    "CalibrationSamples",
    "HolisticLandmarks",
    "LandmarkCalibration",
    "LandmarkReport",
    "LandmarkResult",
    "body_calibration",
    "calibration_from_samples",
    "calibration_samples",
    "camera_up",
    "estimate_calibration",
    "face_fit",
    "finger_angles",
    "image_in_frame",
    "image_to_world_scale",
    "landmarks_to_vectors",
    "pose_in_body_frame",
    "with_depth_gains",
]

F64 = NDArray[np.float64]
Bool = NDArray[np.bool_]
Side = Literal["l", "r"]

#: MediaPipe camera axes (x right, y down, z away) -> y-up right-handed axes: 180° about x.
MEDIAPIPE_TO_Y_UP: F64 = np.diag([1.0, -1.0, -1.0])

#: MediaPipe pose landmark indices used here (spec §2.2; "left" = the subject's own left).
POSE_POINTS: Mapping[str, int] = {
    "nose": 0, "ear_l": 7, "ear_r": 8, "shoulder_l": 11, "shoulder_r": 12, "elbow_l": 13, "elbow_r": 14,
    "wrist_l": 15, "wrist_r": 16, "hip_l": 23, "hip_r": 24,
}
#: MediaPipe face-mesh indices of the head frame (subject's own left/right).
FACE_POINTS: Mapping[str, int] = {"eye_outer_r": 33, "eye_outer_l": 263, "forehead": 10, "chin": 152}
#: spec §4.4 "The face's rotation (producer)": the stable face-mesh points of the rigid fit
#: (nose bridge and tip, forehead, eye corners, the face's sides by the ears; none on the
#: mouth, jaw, lids or brows) and their reference shape: MediaPipe's canonical face model
#: (``face_landmarker.task``, cm) in its own face frame (X = 263 − 33, Y = 10 − 152 made
#: orthogonal to X: the canonical mesh turned 0.704° about X), rounded to 0.1 mm.
HEAD_REFERENCE: Mapping[int, tuple[float, float, float]] = {
    4: (0.0, -0.3699, 7.5917), 6: (0.0, 2.5442, 5.7578), 9: (0.0, 4.9518, 5.3248), 10: (0.0, 8.3162, 4.3797),
    33: (-4.4459, 2.7028, 3.1405), 127: (-7.7431, 2.3402, -2.0341), 133: (-1.8564, 2.6312, 3.7259),
    151: (0.0, 6.6067, 4.9465), 168: (0.0, 3.3351, 5.1954), 195: (0.0, 1.1426, 6.7611),
    197: (0.0, 1.8058, 6.2950), 263: (4.4459, 2.7028, 3.1405), 356: (7.7431, 2.3402, -2.0341),
    362: (1.8564, 2.6312, 3.7259)}
#: spec §4.4: the fit needs this many of the points present (else the four-point face frame),
#: and squares its 4 × 4 matrix this many times (the 256th power).
HEAD_FIT_MIN, HEAD_FIT_SQUARINGS = 6, 8
#: spec §4.5 "Estimating the body dims": the trunk hip_mid → neck as segments (length
#: in metres of ``helix-humanoid@1``, cumulative spine share ``C`` carrying it): hip_mid →
#: spine_01 (pelvis, 0), spine_01..05 (0.10, 0.25, 0.50, 0.75), spine_05 → shoulders (1).
TRUNK_MODEL: tuple[tuple[float, float], ...] = (
    (0.10, 0.0), (0.08, 0.10), (0.08, 0.25), (0.08, 0.50), (0.08, 0.75), (0.08, 1.0))

_EPS = 1e-9
#: Shortest hip line, shoulder line and shoulder → wrist (metres) that give a direction.
_MIN_LENGTH = 1e-6
#: |shoulder line × trunk| under this: shoulders along the trunk, no chest frame.
_MIN_CROSS = 1e-9
#: The chest solve's secant method (spec §4.5): at most this many steps, stopping when
#: the miss is within the tolerance (radians); a step whose denominator is under the
#: last constant is not taken.
_SECANT_STEPS, _SECANT_TOL, _SECANT_MIN_DENOM = 6, 1e-13, 1e-15
#: An elbow nearer the shoulder → wrist line than this (metres): a straight arm, spread 0.
_STRAIGHT_ARM = 0.01
#: Right side lateral is -X, left side +X (spec §3.2).
_LATERAL = {"l": np.array([1.0, 0.0, 0.0]), "r": np.array([-1.0, 0.0, 0.0])}
def _idx(dim_id: str) -> int:
    return REGISTRY.index(dim_id)


@lru_cache(maxsize=8)
def _columns(dim_ids: tuple[str, ...]) -> NDArray[np.intp]:
    """Vector columns of registry dim ids (cached: the hand producer's ids per side)."""
    out = np.array([REGISTRY.index(d) for d in dim_ids], dtype=np.intp)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class HolisticLandmarks:
    """One batch of MediaPipe Holistic landmarks (MediaPipe camera axes; NaN = missing).

    ``pose_world (B, 33, 3)`` metres; ``pose_visibility (B, 33)`` in [0, 1];
    ``left_hand``/``right_hand (B, 21, 3)`` in any isotropic unit on the same axes (the
    subject's own left/right hand, as MediaPipe Holistic labels them); ``face (B, K, 3)``
    with ``K`` = 468 or 478, or ``None``; ``hand_scale (B,)`` metres per hand unit (used
    only to measure the hand length, spec §4.1 ``d_x``), or ``None``; ``pose_image (B, 33,
    3)`` the pose landmarks in the hands' units and axes, or ``None`` (used only to check
    each hand against the pose wrists; without it both hands are checked against the
    wrists' left-right order); ``pose_in_frame (B, 33)`` bool, whether each pose landmark
    lies inside the camera's image, or ``None`` (not known): a hip outside it is not seen,
    whatever its visibility (spec §4.5).
    """

    pose_world: F64
    pose_visibility: F64
    left_hand: F64
    right_hand: F64
    face: F64 | None = None
    hand_scale: F64 | None = None
    pose_image: F64 | None = None
    pose_in_frame: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        batch = self.pose_world.shape[0] if self.pose_world.ndim == 3 else -1
        checks: list[tuple[str, NDArray[Any] | None, tuple[int, ...]]] = [
            ("pose_world", self.pose_world, (batch, 33, 3)),
            ("pose_visibility", self.pose_visibility, (batch, 33)),
            ("left_hand", self.left_hand, (batch, 21, 3)),
            ("right_hand", self.right_hand, (batch, 21, 3)),
            ("hand_scale", self.hand_scale, (batch,)),
            ("pose_image", self.pose_image, (batch, 33, 3)),
            ("pose_in_frame", self.pose_in_frame, (batch, 33)),
        ]
        for name, arr, shape in checks:
            if arr is not None and arr.shape != shape:
                raise UsageError("usage.shape", f"{name} must have shape {shape}, got {arr.shape}", path=name)
        if self.face is not None and (self.face.ndim != 3 or self.face.shape[0] != batch
                                      or self.face.shape[1] not in (468, 478) or self.face.shape[2] != 3):
            raise UsageError("usage.shape", f"face must have shape ({batch}, 468|478, 3), got {self.face.shape}",
                             path="face")

    @property
    def batch(self) -> int:
        """Number of frames ``B``."""
        return int(self.pose_world.shape[0])


@dataclass(frozen=True)
class LandmarkCalibration:
    """Calibration measured from a recording (spec §4.1): the reference distances, the
    units ``L`` with the axes that fell back to shoulder width, and notes on how each
    distance was measured; ``hand_depth_gain``: side -> the gain applied to that hand's
    landmark depth (spec §4.3 "Hand depth gain"; 1 = the depth as given)."""

    calibration: Calibration
    units: CalibrationUnits
    notes: tuple[str, ...] = ()
    hand_depth_gain: Mapping[str, float] = field(default_factory=lambda: {"l": 1.0, "r": 1.0})


@dataclass(frozen=True)
class LandmarkReport:
    """What the conversion did (never silent): per-part tracked fraction over the batch,
    frames clamped per dim id, fallback axes, degenerate geometry counts, notes."""

    frames: int
    tracked_fraction: Mapping[str, float]
    clamped: Mapping[str, int]
    fallback_axes: tuple[str, ...]
    degenerate: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LandmarkResult:
    """``vectors (B, N)`` normalized, NaN for dims not estimated in a frame;
    ``tracking``: part -> ``(B,)`` array of states (spec §3.4.2); the calibration used;
    the report."""

    vectors: F64
    tracking: Mapping[str, NDArray[np.str_]]
    calibration: LandmarkCalibration
    report: LandmarkReport

    def conditions(self, frame: int) -> Conditions:
        """The tracking condition of one frame (parts not ``tracked`` only; absent = tracked)."""
        states = {part: str(s[frame]) for part, s in self.tracking.items() if str(s[frame]) != "tracked"}
        return Conditions(tracking=states)


# ---------------------------------------------------------------------------- geometry


def _unit(v: F64) -> F64:
    norm = np.sqrt((v * v).sum(-1, keepdims=True))  # np.linalg.norm's own arithmetic, without its overhead
    out: F64 = v / np.where(norm > _EPS, norm, np.nan)
    return out


def _norm(v: F64) -> F64:
    out: F64 = np.sqrt((v * v).sum(-1))  # as np.linalg.norm(v, axis=-1), without its overhead
    return out


def _dot(a: F64, b: F64) -> F64:
    out: F64 = (a * b).sum(-1)
    return out


def _y_up(points: F64) -> F64:
    out: F64 = points @ MEDIAPIPE_TO_Y_UP  # diagonal: the same as MEDIAPIPE_TO_Y_UP @ p
    return out


@dataclass(frozen=True)
class _Prepared:
    pose: F64  # (B, 33, 3) y-up world, metres
    left: F64  # (B, 21, 3) y-up
    right: F64
    face: F64 | None
    rotation: F64  # (B, 3, 3) chest axes as columns (NaN where invalid)
    neck: F64  # (B, 3)
    valid: Bool  # (B,) chest frame defined
    body: F64  # (B, 3) normalized (b_yaw, b_pitch, b_roll), NaN where not estimated
    quat: F64  # (B, 4) torso rotation relative to the pelvis, NaN where not estimated
    body_clamped: Bool
    mirrored: Bool  # (B,) the nose lies behind the chest frame (spec §2.2)
    swapped: Bool  # (B,) the two hands were swapped back (at the other pose wrist)
    body_implausible: Bool  # (B,) torso rotation out of range: hips misplaced
    up: F64  # (B, 3) the camera's up of an upright chest (no body dims, spec §4.5), NaN elsewhere


_EX = np.array([1.0, 0.0, 0.0])
_EY = np.array([0.0, 1.0, 0.0])
_EZ = np.array([0.0, 0.0, 1.0])


def _trunk_stretch(q: F64) -> F64:
    """Upright trunk length over the bent chord ``(B,)`` for torso rotations ``q (B, 4)``
    (1 where ``q`` is NaN: no body estimate)."""
    ok = np.isfinite(q).all(-1)
    out = np.ones(q.shape[0])
    if ok.any():
        upright = sum(length for length, _ in TRUNK_MODEL)
        out[ok] = upright / np.linalg.norm(_trunk_vector(q[ok]), axis=-1)
    return out


_TRUNK_W = np.array([length for length, _ in TRUNK_MODEL])
_TRUNK_C = np.array([share for _, share in TRUNK_MODEL])
#: Length-weighted mean spine share of the trunk model: the first secant step's slope.
_TRUNK_SHARE = float(_TRUNK_W @ _TRUNK_C / _TRUNK_W.sum())
_TRUNK_LENGTH = float(_TRUNK_W.sum())


def _trunk_vector(q: F64) -> F64:
    """hip_mid → neck ``(B, 3)`` (metres of the model) turned by ``q (B, 4)``: the sum of
    ``w_k · R(u, C_k·θ)·e_y`` by Rodrigues, ``(u, θ)`` the axis and angle of ``q``."""
    v = q[:, 1:]
    sin_half = np.sqrt((v * v).sum(-1))
    a = v / np.where(sin_half > 0, sin_half, 1.0)[:, None]
    phi = (2.0 * np.arctan2(sin_half, q[:, 0]))[:, None] * _TRUNK_C
    s_cos = np.cos(phi) @ _TRUNK_W
    s_sin = np.sin(phi) @ _TRUNK_W
    a_cross_y = np.stack([-a[:, 2], np.zeros_like(s_cos), a[:, 0]], axis=-1)
    out: F64 = (s_cos[:, None] * _EY + s_sin[:, None] * a_cross_y
                + (a[:, 1] * (_TRUNK_LENGTH - s_cos))[:, None] * a)
    return out


def _chest(sl: F64, sr: F64, hl: F64, hr: F64, wanted: Bool) -> tuple[F64, F64, F64, Bool]:
    """Chest axes ``(B, 3, 3)`` (world columns), torso rotation ``Q (B, 4)`` relative to
    the pelvis frame with its matrix ``(B, 3, 3)``, and the valid mask (spec §4.5 "Estimating the body dims"), solved
    only for the rows ``wanted`` (hips visible).

    Pelvis frame: X = hip_l − hip_r made horizontal, Y = world up, Z = X × Y (upright
    pelvis, level camera). ``Q`` is the rotation with ``Q·e_x`` = the shoulder line
    (exact: the shoulders hang on spine_05, which turns by the full ``Q``) whose trunk
    model (:func:`_trunk_vector`, made unit) points along the measured hip_mid → neck: a 1-D
    root in the twist ``ψ`` about the shoulder line, by the secant method."""
    batch = sl.shape[0]
    x_p = hl - hr
    x_p = x_p - x_p[:, 1:2] * _EY
    across = sl - sr
    trunk = 0.5 * (sl + sr) - 0.5 * (hl + hr)
    ok = (wanted & np.isfinite(x_p).all(-1) & np.isfinite(across).all(-1) & (_norm(x_p) > _MIN_LENGTH)
          & (_norm(across) > _MIN_LENGTH) & (_norm(cross_unchecked(across, trunk)) > _MIN_CROSS))
    quat = np.full((batch, 4), np.nan)
    chest = np.full((batch, 3, 3), np.nan)
    local = np.full((batch, 3, 3), np.nan)
    if not ok.any():
        return chest, quat, local, ok
    xp = _unit(x_p[ok])
    yp = np.broadcast_to(_EY, xp.shape)
    rp = np.stack([xp, yp, cross_unchecked(xp, yp)], axis=-1)
    a = _unit(np.einsum("bji,bj->bi", rp, across[ok]))
    t = _unit(np.einsum("bji,bj->bi", rp, trunk[ok]))
    ex = np.broadcast_to(_EX, a.shape)
    # Q0: the smallest rotation e_x -> a; Q(ψ) = Q0 · R_X(ψ)
    w = 1.0 + _dot(ex, a)
    q0 = np.concatenate([w[:, None], cross_unchecked(ex, a)], axis=-1)
    flip = w < _EPS
    q0[flip] = np.array([0.0, 0.0, 1.0, 0.0])
    q0 = q0 / _norm(q0)[:, None]
    y0 = rotate_unchecked(q0, np.broadcast_to(_EY, a.shape))
    z0 = rotate_unchecked(q0, np.broadcast_to(_EZ, a.shape))
    # Q(ψ) = Q0 · (cos ψ/2, sin ψ/2, 0, 0) = cos ψ/2 · Q0 + sin ψ/2 · Q0·i
    q0i = np.stack([-q0[:, 1], q0[:, 0], q0[:, 3], -q0[:, 2]], axis=-1)
    # the miss is the signed angle about a from the trunk direction d to t (both projected
    # off a): with t_p = t − (t·a)a it is atan2(d·(t_p × a), d·t_p), scale-free in d, so
    # the unnormalized trunk vector serves
    t_p = t - _dot(t, a)[:, None] * a
    t_pxa = cross_unchecked(t_p, a)

    def q_of(psi: F64) -> F64:
        half = 0.5 * psi[:, None]
        out: F64 = np.cos(half) * q0 + np.sin(half) * q0i
        return out

    def miss(psi: F64) -> F64:
        d = _trunk_vector(q_of(psi))
        out: F64 = np.arctan2((d * t_pxa).sum(-1), (d * t_p).sum(-1))
        return out

    psi0 = np.arctan2(_dot(t, z0), _dot(t, y0))
    f0 = miss(psi0)
    psi1 = psi0 + f0 / _TRUNK_SHARE
    f1 = miss(psi1)
    for _ in range(_SECANT_STEPS):
        if not (np.abs(f1) > _SECANT_TOL).any():
            break
        denom = f1 - f0
        big = np.abs(denom) > _SECANT_MIN_DENOM
        step = np.where(big, f1 * (psi1 - psi0) / np.where(big, denom, 1.0), 0.0)
        psi0, f0 = psi1, f1
        psi1 = psi1 - step
        f1 = miss(psi1)
    q = q_of(psi1)
    q = q * np.where(q[:, :1] < 0, -1.0, 1.0)
    quat[ok] = q
    local[ok] = to_matrix(q)
    chest[ok] = rp @ local[ok]
    return chest, quat, local, ok


#: Visibility from which both hips count as seen (spec §4.5), or the caller's threshold
#: if higher: hips at the frame's edge (0.4–0.7 in chest-up shots) give a pelvis whose
#: jitter becomes the chest's, and a threshold they hover around flips the chest between
#: the pelvis model and the camera's up from frame to frame.
HIPS_VISIBILITY = 0.8


def image_in_frame(image: F64, width: float, height: float) -> NDArray[np.bool_]:
    """Whether each image landmark ``(..., 2+)`` (pixels, x right, y down; NaN: missing) lies
    inside a ``width`` × ``height`` image: :attr:`HolisticLandmarks.pose_in_frame` (spec §4.5,
    a hip outside it is not seen)."""
    x, y = image[..., 0], image[..., 1]
    with np.errstate(invalid="ignore"):
        inside: NDArray[np.bool_] = (x >= 0.0) & (x <= width) & (y >= 0.0) & (y <= height)
    return inside


def camera_up(trunk: F64) -> F64:
    """The camera's up ``(B, 3)`` for a chest without hips (spec §4.5): the image axis
    (±X or ±Y, y up) nearest the guessed hip_mid → neck ``trunk (B, 3)``, so a camera
    on its side still has the person upright; +Y where the trunk is missing (NaN) or
    leans exactly 45° (``|t_x| > |t_y|`` decides)."""
    tx, ty = trunk[:, 0], trunk[:, 1]
    sideways = np.abs(tx) > np.abs(ty)
    up = np.zeros_like(trunk)
    up[:, 0] = np.where(sideways, np.where(tx < 0.0, -1.0, 1.0), 0.0)
    up[:, 1] = np.where(sideways, 0.0, np.where(ty < 0.0, -1.0, 1.0))
    return up


#: Torso angles beyond this multiple of the registry maxima (b_yaw 45°, b_pitch and
#: b_roll 30°) mark the hips as misplaced: no body dims, upright chest frame (reported).
BODY_PLAUSIBLE = 1.5
_EYE3 = np.eye(3)
#: A frame is mirrored when ``unit(ear_l − ear_r) × unit(nose − ear_mid)`` has more than
#: this component along the chest's +Y (a real head gives about −1; any head turn under
#: 90° keeps it negative).
MIRROR_MIN_SINE = 0.3
#: A hand belongs to the other side when its wrist lies nearer the other pose wrist by
#: this factor (distance to the other < factor × distance to its own), image plane.
SWAP_DISTANCE_RATIO = 0.5


def _prepare(lm: HolisticLandmarks, mirrored: str = "report", visibility_threshold: float = 0.5) -> _Prepared:
    pose = _y_up(np.asarray(lm.pose_world, dtype=np.float64))
    left = _y_up(np.asarray(lm.left_hand, dtype=np.float64))
    right = _y_up(np.asarray(lm.right_hand, dtype=np.float64))
    face = None if lm.face is None else _y_up(np.asarray(lm.face, dtype=np.float64))
    if mirrored == "flip":  # spec §2.2: un-mirror a selfie image (x -> -x), labels kept
        flip = np.array([-1.0, 1.0, 1.0])
        pose, left, right = pose * flip, left * flip, right * flip
        face = None if face is None else face * flip
    sl, sr = pose[:, POSE_POINTS["shoulder_l"]], pose[:, POSE_POINTS["shoulder_r"]]
    hl, hr = pose[:, POSE_POINTS["hip_l"]], pose[:, POSE_POINTS["hip_r"]]
    vis = np.asarray(lm.pose_visibility, dtype=np.float64)
    # a hip point that is missing (NaN) is not seen, whatever its visibility says
    # spec §4.5: hips at the frame's edge are seen only from HIPS_VISIBILITY on
    hip_threshold = max(visibility_threshold, HIPS_VISIBILITY)
    hips_seen: Bool = np.asarray((vis[:, [POSE_POINTS["hip_l"], POSE_POINTS["hip_r"]]] >= hip_threshold).all(-1)
                                 & np.isfinite(hl).all(-1) & np.isfinite(hr).all(-1))
    if lm.pose_in_frame is not None:  # spec §4.5: a hip outside the image is a guess
        hips_seen &= np.asarray(lm.pose_in_frame)[:, [POSE_POINTS["hip_l"], POSE_POINTS["hip_r"]]].all(-1)
    rotation, quat, local, valid = _chest(sl, sr, hl, hr, hips_seen)  # frames without hips: below
    # a torso turned far beyond the registry range relative to the pelvis means the hips
    # are misplaced (occluded, cropped): treated like hips out of view, reported
    implausible = np.zeros(lm.batch, dtype=bool)
    if valid.any():
        angles = np.stack(matrix_to_euler(np.where(valid[:, None, None], local, _EYE3)), axis=-1)
        implausible = valid & hips_seen & (np.abs(angles) > BODY_PLAUSIBLE * BODY_MAX_DEG).any(-1)
    hips_seen = hips_seen & ~implausible
    # spec §4.5: hips out of view (an upper-body shot) -> the pelvis is MediaPipe's guess:
    # no body dims; the chest frame is the shoulder line and the camera's up (the image
    # axis nearest the guessed hip_mid → neck), i.e. an upright torso
    upright = ~hips_seen | ~valid
    if upright.any():
        across = sl[upright] - sr[upright]
        trunk = 0.5 * (sl[upright] + sr[upright]) - 0.5 * (hl[upright] + hr[upright])
        up = camera_up(trunk)
        x = _unit(across)
        y = _unit(up - _dot(up, x)[:, None] * x)
        ok_up = np.isfinite(x).all(-1) & np.isfinite(y).all(-1)
        frame = np.stack([x, y, cross_unchecked(x, y)], axis=-1)
        frame[~ok_up] = np.nan
        rotation[upright] = frame
        up_all = np.full((lm.batch, 3), np.nan)
        up_all[upright] = np.where(np.asarray(ok_up)[:, None], up, np.nan)
        quat[upright] = np.nan
        valid = valid.copy()
        valid[upright] = ok_up
    else:
        up_all = np.full((lm.batch, 3), np.nan)
    neck = np.where(valid[:, None], 0.5 * (sl + sr), np.nan)
    body = np.full((lm.batch, 3), np.nan)
    body_clamped = np.zeros(lm.batch, dtype=bool)
    has_q = valid & np.isfinite(quat).all(-1)
    if has_q.any():
        body[has_q], body_clamped[has_q] = matrix_to_body(local[has_q])
    # a selfie image whose x was flipped without swapping labels turns the head inside
    # out: (ear_l − ear_r) × (nose − ear_mid) points up the chest instead of down (spec
    # §2.2); swapped hand labels put each hand at the other pose wrist (spec §4.3)
    ear_l, ear_r = pose[:, POSE_POINTS["ear_l"]], pose[:, POSE_POINTS["ear_r"]]
    ahead = pose[:, POSE_POINTS["nose"]] - 0.5 * (ear_l + ear_r)
    handed = cross_unchecked(_unit(ear_l - ear_r), _unit(ahead))
    with np.errstate(invalid="ignore"):
        inside_out = np.einsum("bi,bi->b", handed, rotation[:, :, 1]) > MIRROR_MIN_SINE
    mirror_mask: Bool = np.asarray(valid & inside_out)
    wrist_l, wrist_r = POSE_POINTS["wrist_l"], POSE_POINTS["wrist_r"]
    if lm.pose_image is not None:  # each hand against both pose wrists, in the image plane
        image = np.asarray(lm.pose_image, dtype=np.float64)[..., :2]
        if mirrored == "flip":
            image = image * np.array([-1.0, 1.0])

        def nearer_other(hand: F64, own: int, other: int) -> Bool:
            w = hand[:, 0, :2] * np.array([1.0, -1.0])  # back to image axes (x right, y down)
            out: Bool = np.asarray(_norm(w - image[:, other])
                                   < SWAP_DISTANCE_RATIO * _norm(w - image[:, own]))
            return out

        other_l, other_r = nearer_other(left, wrist_l, wrist_r), nearer_other(right, wrist_r, wrist_l)
        has_l, has_r = _hand_present(left), _hand_present(right)
        swapped: Bool = np.asarray((has_l & has_r & other_l & other_r) | (has_l & ~has_r & other_l)
                                   | (has_r & ~has_l & other_r))
    else:  # both hands against the pose wrists' left-right order
        across = _dot(left[:, 0] - right[:, 0], pose[:, wrist_l] - pose[:, wrist_r])
        swapped = np.asarray(across < 0.0)
    if swapped.any():
        left, right = left.copy(), right.copy()
        left[swapped], right[swapped] = right[swapped], left[swapped].copy()
    return _Prepared(pose, left, right, face, rotation, neck, valid, body, quat, body_clamped, mirror_mask, swapped,
                     implausible, up_all)


def _to_body(points: F64, prep: _Prepared) -> F64:
    """World points ``(B, K, 3)`` -> body frame ``Rᵀ (p - neck)`` (spec §2.3)."""
    out: F64 = np.einsum("bji,bkj->bki", prep.rotation, points - prep.neck[:, None, :])
    return out


def pose_in_body_frame(lm: HolisticLandmarks) -> tuple[F64, Bool]:
    """The 33 pose world landmarks in the body frame ``(B, 33, 3)`` metres (spec §2.3:
    +X the subject's left, +Y up, +Z forward, origin the neck) and the ``(B,)`` mask of
    frames whose body frame is defined (other rows are NaN)."""
    prep = _prepare(lm)
    return _to_body(prep.pose, prep), prep.valid


def image_to_world_scale(pose_image: F64, pose_world: F64) -> F64:
    """Metres per image unit ``(B,)`` from the shoulder segment (pose 11–12) seen in both
    the isotropic image landmarks ``(B, 33, 3)`` and the world landmarks ``(B, 33, 3)``
    (metres); NaN where either is missing or degenerate."""
    a, b = POSE_POINTS["shoulder_l"], POSE_POINTS["shoulder_r"]
    image = np.linalg.norm(pose_image[:, a] - pose_image[:, b], axis=-1)
    world = np.linalg.norm(pose_world[:, a] - pose_world[:, b], axis=-1)
    out: F64 = world / np.where(image > _EPS, image, np.nan)
    return out


# ---------------------------------------------------------------------------- calibration


def _hand_present(hand: F64) -> Bool:
    out: Bool = np.asarray(np.isfinite(hand).all(axis=(-1, -2)))
    return out


def _median(values: F64) -> float | None:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else None


@dataclass(frozen=True)
class CalibrationSamples:
    """The per-frame measurements behind :func:`estimate_calibration` (spec §4.1), whose
    medians over frames are the estimate (:func:`calibration_from_samples`). Frames are
    independent rows, so the samples of a stream can be taken as frames arrive and kept
    (:class:`posewire.producers.live.LiveCalibration`): medians do not depend on the order.

    ``shoulders (B, 2, 3)``: shoulder_l, shoulder_r in the body frame (used where ``valid``;
    their median distance is the shoulder width the units come from); ``trunk``, ``arm`` and
    ``hand`` are the camera's own lengths, only reported where unlike the units
    (:func:`body_calibration`). ``valid (B,)``:
    the body frame is defined; ``trunk (B,)``: the neck → hip_mid chord undone to the upright
    trunk (NaN where not valid); ``arm (B, 4)``: upper arm + forearm, right then left, where
    shoulder, elbow and wrist are seen, then right and left again where only the shoulder and
    wrist are seen and the elbow is MediaPipe's estimate (NaN elsewhere); ``hand (B, 2)``:
    the wrist → middle-tip chain × ``hand_scale``, right
    then left (NaN where the hand is absent), None without ``hand_scale``; ``bones (B, 2, G,
    20)``: :func:`posewire.producers.hand.bone_length_ratios` of the right then left hand (NaN
    where absent; spec §4.3 "Hand depth gain").
    """

    shoulders: F64
    valid: Bool
    trunk: F64
    arm: F64
    hand: F64 | None
    bones: F64


_CALIBRATION_SITES = np.array([POSE_POINTS[p] for p in ("shoulder_l", "shoulder_r", "hip_l", "hip_r")],
                              dtype=np.intp)


def _samples(lm: HolisticLandmarks, prep: _Prepared, visibility_threshold: float) -> CalibrationSamples:
    # the torso length is a chord of the bent spine: undo the bend of the trunk model
    # (spec §4.5) so that a turned torso measures the upright length
    body = _to_body(prep.pose[:, _CALIBRATION_SITES], prep)  # shoulders l, r, hips l, r
    chord = np.linalg.norm(0.5 * (body[:, 0] + body[:, 1]) - 0.5 * (body[:, 2] + body[:, 3]), axis=-1)
    trunk = np.full(lm.batch, np.nan)
    trunk[prep.valid] = chord[prep.valid] * _trunk_stretch(prep.quat[prep.valid])
    # d_z: arm length = upper arm + forearm, which is the extended-arm length whatever the
    # elbow bend (spec §4.1: never measured from the animated pose itself).
    arm = np.full((lm.batch, 4), np.nan)
    for column, side in enumerate(("r", "l")):
        s, e, w = (POSE_POINTS[f"{j}_{side}"] for j in ("shoulder", "elbow", "wrist"))
        ends = prep.valid & (lm.pose_visibility[:, [s, w]] >= visibility_threshold).all(-1)
        ends &= np.isfinite(prep.pose[:, [s, e, w]]).all(axis=(-1, -2))
        length = np.full(lm.batch, np.nan)
        pts = prep.pose[ends]
        length[ends] = (np.linalg.norm(pts[:, e] - pts[:, s], axis=-1) + np.linalg.norm(pts[:, w] - pts[:, e], axis=-1))
        seen = lm.pose_visibility[:, e] >= visibility_threshold
        arm[:, column] = np.where(seen, length, np.nan)
        # spec §4.1: an elbow out of the image (a close-up signer) still has MediaPipe's estimate
        arm[:, 2 + column] = np.where(seen, np.nan, length)
    # d_x: hand length = sum of wrist -> middle mcp -> pip -> dip -> tip = the open hand.
    hand = None
    if lm.hand_scale is not None:
        hand = np.full((lm.batch, 2), np.nan)
        for column, points in enumerate((prep.right, prep.left)):
            chain = points[:, [0, 9, 10, 11, 12]]
            length = np.linalg.norm(np.diff(chain, axis=1), axis=-1).sum(axis=-1) * lm.hand_scale
            hand[:, column] = np.where(_hand_present(points), length, np.nan)
    bones = np.stack([bone_length_ratios(prep.right), bone_length_ratios(prep.left)], axis=1)
    return CalibrationSamples(body[:, :2], prep.valid, trunk, arm, hand, bones)


def calibration_samples(lm: HolisticLandmarks, *, visibility_threshold: float = 0.5) -> CalibrationSamples:
    """The per-frame measurements of ``lm`` behind :func:`estimate_calibration`."""
    return _samples(lm, _prepare(lm, "report", visibility_threshold), visibility_threshold)


#: Body proportions a camera producer gives the performer (spec §4.1 "A camera producer's
#: units"): hand length, torso length (neck → navel by the §2.2 rule), arm length and shoulder
#: width in metres of a 1.75 m adult (``helix-humanoid@1`` measured by the §4.1 site rules),
#: scaled by the performer's measured shoulder width.
class _Proportions(NamedTuple):
    hand_length: float
    torso_length: float
    arm_length: float
    shoulder_width: float


CAMERA_PROPORTIONS = _Proportions(hand_length=0.19, torso_length=0.40, arm_length=0.56, shoulder_width=0.36)
#: A camera's own hand, torso or arm length this far (relative) from the proportions is noted.
CAMERA_MEASURE_REPORT = 0.2


def body_calibration(samples: CalibrationSamples) -> tuple[Calibration, list[str]]:
    """:func:`calibration_from_samples` without the hands' depth gains (``samples.bones`` unused):
    the distances and their notes (spec §4.1 "A camera producer's units").

    The units come from the shoulder width ``S`` (median over frames of the body-frame
    shoulder sites), the measure a camera gets right: ``d = CAMERA_PROPORTIONS · S / 0.36``
    (``d_x = 0.5278·S``, ``d_y = 1.1111·S``, ``d_z = 1.5556·S``). The camera's own hand, torso and
    arm lengths (medians of ``samples``) are not used, and noted where they are unlike these
    proportions by more than :data:`CAMERA_MEASURE_REPORT`: its arms measure 0.41–0.98 m for
    shoulders of 0.30–0.45 m and change within a recording, its hands look larger nearer the
    camera, its torso rests on guessed hips in close shots — and units in other proportions
    than the avatar's bend the avatar's arm (the arm itself is sent at ``d_z``,
    :func:`landmarks_to_vectors`)."""
    notes: list[str] = []
    shoulder_l, shoulder_r = np.median(samples.shoulders[samples.valid], axis=0)
    width = float(np.linalg.norm(shoulder_l - shoulder_r))
    scale = width / CAMERA_PROPORTIONS.shoulder_width
    cal = Calibration(hand_length=CAMERA_PROPORTIONS.hand_length * scale,
                      torso_length=CAMERA_PROPORTIONS.torso_length * scale,
                      arm_length=CAMERA_PROPORTIONS.arm_length * scale, shoulder_width=width)
    # what the camera itself measured (right side first), reported where it is unlike the
    # proportions by more than CAMERA_MEASURE_REPORT (never silent)
    trunk = _median(samples.trunk[samples.valid])
    arm = next((m for m in (_median(samples.arm[:, k]) for k in range(4)) if m is not None), None)
    hand = None
    if samples.hand is not None:
        hand = _median(samples.hand[:, 0])
        hand = hand if hand is not None else _median(samples.hand[:, 1])
    unlike = [f"{name} {measured:.3f} m ({derived:.3f} m from the shoulders)"
              for name, measured, derived in (("hand length", hand, cal.hand_length),
                                              ("torso length", None if trunk is None else NAVEL_FRACTION * trunk,
                                               cal.torso_length),
                                              ("arm length", arm, cal.arm_length))
              if measured is not None and derived and abs(measured / derived - 1.0) > CAMERA_MEASURE_REPORT]
    if unlike:
        notes.append("the camera measured, unlike adult proportions of the shoulder width and not used "
                     "(spec §4.1): " + ", ".join(unlike))
    return cal, notes


def calibration_from_samples(samples: CalibrationSamples) -> LandmarkCalibration:
    """:func:`estimate_calibration` from the per-frame measurements (medians over frames,
    spec §4.1)."""
    cal, notes = body_calibration(samples)
    found = estimate_depth_gain(samples.bones[:, 0]), estimate_depth_gain(samples.bones[:, 1])
    return with_depth_gains(cal, notes, found)


def with_depth_gains(cal: Calibration, notes: list[str],
                     found: tuple[float | None, float | None]) -> LandmarkCalibration:
    """The calibration of :func:`body_calibration` with the hands' depth gains (right, left:
    :func:`posewire.producers.hand.estimate_depth_gain`, None = not estimated: 1) and their notes."""
    # spec §4.3 "Hand depth gain": the gain that keeps each hand's bones most constant
    gain = {"r": 1.0, "l": 1.0}
    notes = list(notes)
    for value, side in zip(found, ("r", "l"), strict=True):
        if value is not None:
            gain[side] = value
            notes.append(f"hand depth gain ({side}) {value:.2f}")
    return LandmarkCalibration(calibration=cal, units=units(cal), notes=tuple(notes),
                               hand_depth_gain={"l": gain["l"], "r": gain["r"]})


def estimate_calibration(lm: HolisticLandmarks, *, visibility_threshold: float = 0.5) -> LandmarkCalibration:
    """Reference distances of the person in ``lm`` (spec §4.1 "A camera producer's units").

    The shoulder width ``S`` is the median over frames of the body-frame shoulder sites; the
    distances are :data:`CAMERA_PROPORTIONS` scaled by ``S / 0.36`` (:func:`body_calibration`),
    so no axis falls back. The camera's own hand, torso and arm lengths (medians of
    :func:`calibration_samples`) are noted where they are unlike those proportions by more than
    :data:`CAMERA_MEASURE_REPORT`. Raises ``usage.calibration`` when no frame has a body frame.
    """
    return calibration_from_samples(_samples(lm, _prepare(lm, "report", visibility_threshold), visibility_threshold))


# ---------------------------------------------------------------------------- dims


def _spread(body: F64, side: Side) -> tuple[F64, Bool]:
    """Elbow spread angle (degrees, ``(B,)``) and a mask of straight-arm frames (spec
    §4.1 "Elbow spread", :func:`posewire.codec.elbow.spread_angle` in the chest frame) of
    the pose points in the body frame ``(B, 33, 3)``."""
    shoulder = body[:, POSE_POINTS[f"shoulder_{side}"]]
    elbow = body[:, POSE_POINTS[f"elbow_{side}"]]
    wrist = body[:, POSE_POINTS[f"wrist_{side}"]]
    axis = wrist - shoulder
    offset = elbow - shoulder
    length = _norm(axis)
    ok = np.isfinite(axis).all(-1) & np.isfinite(offset).all(-1) & (length > _MIN_LENGTH)
    angle = np.full(axis.shape[0], np.nan)
    straight = np.zeros(axis.shape[0], dtype=bool)
    if ok.any():  # rows checked here: finite, non-zero axis
        u = axis[ok] / length[ok][:, None]
        angle[ok] = spread_angle_unchecked(u, offset[ok], side=side)
        perp = offset[ok] - _dot(offset[ok], u)[:, None] * u
        # a straight arm has no elbow direction: spread is undefined -> default 0, counted
        straight[ok] = _norm(perp) < _STRAIGHT_ARM
        angle[straight] = 0.0
    return angle, straight


def _rigid_wrist(body: F64, side: Side, arm_length: float | None) -> F64:
    """The wrist ``(B, 3)`` sent for the pose points in the chest frame ``(B, 33, 3)`` (spec §4.1
    "The arm at its calibrated length"): ``shoulder + (wrist − shoulder) · d_z / (|elbow −
    shoulder| + |wrist − elbow|)`` — the seen direction and reach (shoulder → wrist over the
    arm's own length in this frame) at the calibrated arm length ``d_z``. The wrist as seen
    where the elbow is missing, the arm's length is under :data:`_MIN_LENGTH` or ``d_z`` is
    None."""
    shoulder = body[:, POSE_POINTS[f"shoulder_{side}"]]
    elbow = body[:, POSE_POINTS[f"elbow_{side}"]]
    wrist = body[:, POSE_POINTS[f"wrist_{side}"]]
    if arm_length is None:
        return wrist
    length = _norm(elbow - shoulder) + _norm(wrist - elbow)
    ok = np.isfinite(length) & (length > _MIN_LENGTH)
    scale = np.where(ok, arm_length / np.where(ok, length, 1.0), 1.0)
    out: F64 = np.where(ok[:, None], shoulder + (wrist - shoulder) * scale[:, None], wrist)
    return out


_FIT_AT = np.array(list(HEAD_REFERENCE), dtype=np.intp)
_FIT_REF = np.array(list(HEAD_REFERENCE.values()))


def face_fit(points: F64) -> tuple[F64, Bool]:
    """The face's rotation ``(B, 3, 3)`` (columns: the face frame's X, Y, Z in the points'
    axes) by the rigid fit of spec §4.4 of the :data:`HEAD_REFERENCE` points ``(B, K, 3)``
    (in its order, NaN = missing), and the ``(B,)`` mask where it is defined (at least
    :data:`HEAD_FIT_MIN` points). Horn's quaternion: the dominant eigenvector of the 4 × 4
    matrix ``N`` of the cross-covariance ``S = Σ (x − x̄)(y − ȳ)ᵀ`` (x the reference, y
    the points), found as a column of ``(N + s·I)^256`` (eight squarings, each divided by its
    trace; ``s = Σ |x − x̄|·|y − ȳ|`` makes ``N + s·I`` positive semi-definite). Plain IEEE
    operations in the order written (spec §1.5), the sums over the points in table order: the
    single-frame path (:func:`posewire.producers.landmarks_single._face_fit1`) repeats them."""
    batch = points.shape[0]
    present: Bool = np.asarray(np.isfinite(points).all(-1))
    count = present.sum(-1).astype(np.float64)
    y = np.where(present[..., None], points, 0.0)
    cy = np.zeros((batch, 3))
    cx = np.zeros((batch, 3))
    for k in range(_FIT_REF.shape[0]):
        cy = cy + y[:, k]
        cx = cx + np.where(present[:, k, None], _FIT_REF[k], 0.0)
    cy, cx = cy / count[:, None], cx / count[:, None]
    sm = np.zeros((batch, 3, 3))
    shift = np.zeros(batch)
    for k in range(_FIT_REF.shape[0]):
        a = np.where(present[:, k, None], _FIT_REF[k] - cx, 0.0)
        b = np.where(present[:, k, None], y[:, k] - cy, 0.0)
        sm = sm + a[:, :, None] * b[:, None, :]
        shift = shift + (np.sqrt((a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1]) + a[:, 2] * a[:, 2])
                         * np.sqrt((b[:, 0] * b[:, 0] + b[:, 1] * b[:, 1]) + b[:, 2] * b[:, 2]))
    (sxx, sxy, sxz), (syx, syy, syz), (szx, szy, szz) = (
        (sm[:, i, 0], sm[:, i, 1], sm[:, i, 2]) for i in range(3))
    m = np.stack([
        np.stack([((sxx + syy) + szz) + shift, syz - szy, szx - sxz, sxy - syx], -1),
        np.stack([syz - szy, ((sxx - syy) - szz) + shift, sxy + syx, szx + sxz], -1),
        np.stack([szx - sxz, sxy + syx, ((syy - sxx) - szz) + shift, syz + szy], -1),
        np.stack([sxy - syx, szx + sxz, syz + szy, ((szz - sxx) - syy) + shift], -1)], -2)
    ok = count >= HEAD_FIT_MIN
    for _ in range(HEAD_FIT_SQUARINGS):
        m = (((m[:, :, 0:1] * m[:, 0:1, :] + m[:, :, 1:2] * m[:, 1:2, :]) + m[:, :, 2:3] * m[:, 2:3, :])
             + m[:, :, 3:4] * m[:, 3:4, :])
        trace = ((m[:, 0, 0] + m[:, 1, 1]) + m[:, 2, 2]) + m[:, 3, 3]
        ok = ok & (trace > 0.0) & np.isfinite(trace)
        m = m / np.where(trace > 0.0, trace, 1.0)[:, None, None]
    diag = np.stack([m[:, i, i] for i in range(4)], -1)
    column = np.argmax(diag, axis=-1)  # the first of equal ones
    q = np.take_along_axis(m, column[:, None, None], axis=2)[:, :, 0]
    out = np.full((batch, 3, 3), np.nan)
    if ok.any():
        out[ok] = to_matrix(q[ok])
    return out, ok


def _upright(up: F64) -> F64:
    """The camera's upright frame ``(B, 3, 3)`` of spec §4.4 for the camera's up ``(B, 3)``
    (an image axis, §4.5): X = up × +z, Y = up, Z = +z (toward the camera)."""
    z = np.broadcast_to(_EZ, up.shape)
    out: F64 = np.stack([cross_unchecked(up, z), up, z], axis=-1)
    return out


def _head(prep: _Prepared) -> tuple[F64, Bool, Bool]:
    """Normalized ``(h_yaw, h_pitch, h_roll)`` ``(B, 3)`` (NaN without a face), the clamp
    mask and the face-present mask (spec §4.4): the face's rotation ``F`` by the rigid fit
    (:func:`face_fit`), else the four-point face frame (X = eye_outer_l − eye_outer_r, Y =
    chin → forehead orthogonalized, Z = X × Y); head = ``Cᵀ · F`` with ``C`` the chest frame
    where the body dims are sent and the camera's upright frame where they are not (the avatar's
    chest then stands upright, so its head turns as the camera saw the face)."""
    batch = prep.valid.shape[0]
    out = np.full((batch, 3), np.nan)
    clamped = np.zeros(batch, dtype=bool)
    if prep.face is None:
        return out, clamped, np.zeros(batch, dtype=bool)
    pts = prep.face[:, [FACE_POINTS["eye_outer_l"], FACE_POINTS["eye_outer_r"], FACE_POINTS["forehead"],
                        FACE_POINTS["chin"]]]
    present = np.isfinite(pts).all(axis=(-1, -2)) & prep.valid
    x = _unit(pts[:, 0] - pts[:, 1])
    up = pts[:, 2] - pts[:, 3]
    y = _unit(up - _dot(up, x)[:, None] * x)
    four = present & np.isfinite(x).all(-1) & np.isfinite(y).all(-1)
    face_rot = np.stack([x, y, cross_unchecked(x, y)], axis=-1)
    fitted, fit_ok = face_fit(prep.face[:, _FIT_AT])
    fit_ok = fit_ok & prep.valid
    face_rot = np.where(fit_ok[:, None, None], fitted, face_rot)
    ok = fit_ok | four
    if ok.any():
        upright: Bool = np.asarray(np.isfinite(prep.up).all(-1))
        ref = np.where(upright[:, None, None], _upright(np.where(upright[:, None], prep.up, _EY)), prep.rotation)
        c, f = ref[ok], face_rot[ok]  # Cᵀ·F, the sum over j in order (spec §1.5)
        rel = ((c[:, 0, :, None] * f[:, 0, None, :] + c[:, 1, :, None] * f[:, 1, None, :])
               + c[:, 2, :, None] * f[:, 2, None, :])
        out[ok], clamped[ok] = matrix_to_head(rel)
    return out, clamped, ok


#: Palm fallback frame of hand-only frames (no chest frame): the camera's y-up axes, i.e.
#: the person assumed upright and squarely facing an unmirrored camera (spec §4.2).
CAMERA_FALLBACK_ROTATION: F64 = np.eye(3)


#: Report notes and clamp keys shared by the batch and single-frame paths (never silent).
MIRRORED_NOTE = ("mirrored input in {} frame(s): the nose lies behind the chest (a selfie image?); "
                 "pass mirrored='flip' to un-mirror")
SWAPPED_NOTE = "left/right hands swapped back in {} frame(s) (each hand lay at the other pose wrist)"
IMPLAUSIBLE_NOTE = (f"torso turned beyond {BODY_PLAUSIBLE}x the body maxima against the hips in {{}} frame(s): "
                    "hips taken as misplaced, body not estimated")
PALM_CLAMP_KEY = "w_q_{} (|v| > 0.98)"
HEAD_CLAMP_KEY = "h_* (angle beyond max)"
BODY_CLAMP_KEY = "b_* (angle beyond max)"


def landmarks_to_vectors(
    lm: HolisticLandmarks,
    *,
    calibration: LandmarkCalibration | None = None,
    visibility_threshold: float = 0.5,
    mirrored: Literal["report", "flip"] = "report",
    chest_filter: RotationFilter | None = None,
    times: ArrayLike | None = None,
) -> LandmarkResult:
    """Pose vectors ``(B, N)`` from a batch of Holistic landmarks (module docstring).

    ``calibration`` defaults to :func:`estimate_calibration` on the same batch (a
    recording calibrates itself; a batch without any body frame uses the reference
    avatar's, noted). Dims of a part that is lost in a frame, or never estimated, are
    NaN; every finite value is inside the registry bounds, and every clamp is counted in
    ``report.clamped``. ``mirrored``: ``"report"`` counts frames whose nose lies behind
    the chest (a selfie image whose x was flipped without swapping labels) in
    ``report.degenerate["mirrored"]``; ``"flip"`` un-mirrors every point (x → −x) first.

    ``chest_filter`` with ``times`` (seconds, ``(B,)``, increasing): the frames are a time
    series (a recording, or one live frame at a time with the same filter): the chest frame,
    which the arms, palms and head are relative to, is smoothed by the rotation One-Euro
    filter (:class:`posewire.producers.filter.RotationFilter`, spec §7.3 "Smoothing"), frame
    by frame in order; without them every frame is independent (photos).

    A batch of one frame (a live source) takes the single-frame path in Python floats,
    :func:`posewire.producers.landmarks_single.encode1`: the same result, without numpy's
    per-call overhead.
    """
    if mirrored not in ("report", "flip"):
        raise UsageError("usage.bad_option", f"mirrored must be 'report' or 'flip', not {mirrored!r}")
    frame_times = None
    if chest_filter is not None:
        if times is None:
            raise UsageError("usage.bad_option", "a chest filter needs the frame times", path="times")
        frame_times = np.asarray(times, dtype=np.float64).reshape(-1)
        if frame_times.shape != (lm.batch,) or not np.isfinite(frame_times).all():
            raise UsageError("usage.shape", f"times must be {lm.batch} finite seconds", path="times")
    if lm.batch != 1:
        return _encode_batch(lm, calibration, visibility_threshold, mirrored, chest_filter, frame_times)
    from posewire.producers.landmarks_single import encode1  # imports this module's tables

    if calibration is None:
        calibration = _own_calibration(lm, _prepare(lm, mirrored, visibility_threshold), visibility_threshold)
    return encode1(lm, calibration, visibility_threshold=visibility_threshold, mirrored=mirrored,
                   chest=chest_filter, t=None if frame_times is None else float(frame_times[0]))


def _own_calibration(lm: HolisticLandmarks, prep: _Prepared, visibility_threshold: float) -> LandmarkCalibration:
    """The calibration of a batch encoded without one (:func:`landmarks_to_vectors`)."""
    if prep.valid.any():
        return calibration_from_samples(_samples(lm, prep, visibility_threshold))
    # spec §4.3 "Hand depth gain": measured on the hands alone, so hands without a body keep it
    notes = ["no frame has a body (shoulders and hips): reference-avatar calibration, arms and body not estimated"]
    gain = {"r": 1.0, "l": 1.0}
    for side, hand in (("r", prep.right), ("l", prep.left)):
        found = estimate_depth_gain(bone_length_ratios(hand))
        if found is not None:
            gain[side] = found
            notes.append(f"hand depth gain ({side}) {found:.2f}")
    return LandmarkCalibration(REFERENCE_CALIBRATION, units(REFERENCE_CALIBRATION), tuple(notes),
                               hand_depth_gain={"l": gain["l"], "r": gain["r"]})


def _encode_batch(lm: HolisticLandmarks, calibration: LandmarkCalibration | None, visibility_threshold: float,
                  mirrored: Literal["report", "flip"], chest_filter: RotationFilter | None = None,
                  times: F64 | None = None) -> LandmarkResult:
    """:func:`landmarks_to_vectors` on numpy arrays, any batch size."""
    prep = _prepare(lm, mirrored, visibility_threshold)
    notes: list[str] = []
    cal = calibration if calibration is not None else _own_calibration(lm, prep, visibility_threshold)
    if chest_filter is not None and times is not None:  # spec §7.3: a time series' chest smoothed
        rotation = prep.rotation.copy()
        for i in range(lm.batch):
            if prep.valid[i]:
                rotation[i] = chest_filter(float(times[i]), prep.rotation[i])
            else:
                chest_filter.reset()
        prep = replace(prep, rotation=rotation)
    batch = lm.batch
    vec = np.full((batch, N_DIMS), np.nan)
    extra_clamps: dict[str, Bool] = {}
    degenerate: dict[str, int] = {"body_frame": int((~prep.valid).sum())}
    if prep.mirrored.any():
        degenerate["mirrored"] = int(prep.mirrored.sum())
        notes.append(MIRRORED_NOTE.format(int(prep.mirrored.sum())))
    if prep.swapped.any():
        degenerate["hands_swapped"] = int(prep.swapped.sum())
        notes.append(SWAPPED_NOTE.format(int(prep.swapped.sum())))
    tracked: dict[str, Bool] = {}

    # spec §4.5: torso rotation relative to the pelvis, spine shares undone
    body_ok = prep.valid & np.isfinite(prep.body).all(-1)
    tracked["body"] = body_ok
    if (prep.valid & ~body_ok & ~prep.body_implausible).any():
        degenerate["body_hips_not_visible"] = int((prep.valid & ~body_ok & ~prep.body_implausible).sum())
    if prep.body_implausible.any():
        degenerate["body_implausible"] = int(prep.body_implausible.sum())
        notes.append(IMPLAUSIBLE_NOTE.format(int(prep.body_implausible.sum())))
    for k, row_id in enumerate(("b_yaw", "b_pitch", "b_roll")):
        vec[body_ok, _idx(row_id)] = prep.body[body_ok, k]

    body = _to_body(prep.pose, prep)
    # hand-only frames: palm in the camera fallback frame (reported)
    hand_rotation = np.where(prep.valid[:, None, None], prep.rotation, CAMERA_FALLBACK_ROTATION)
    for side in ("l", "r"):
        s: Side = side
        wrist_i = POSE_POINTS[f"wrist_{s}"]
        # spec §7.4: a wrist is seen when the pose says so or the hand model found that hand
        hand_seen = _hand_present(prep.right if s == "r" else prep.left)
        arm_ok = prep.valid & ((lm.pose_visibility[:, wrist_i] >= visibility_threshold) | hand_seen)
        arm_ok &= np.isfinite(body[:, wrist_i]).all(-1)
        tracked[f"arm_{s}"] = arm_ok
        if arm_ok.any():  # spec §4.1 inverse: n = sign_side · p / (2.5 L)
            n = arm_to_normalized(_rigid_wrist(body[arm_ok], s, cal.calibration.arm_length), cal.units, side=s)
            for k, axis in enumerate("xyz"):
                vec[arm_ok, _idx(f"a_{axis}_{s}")] = n[:, k]
            spread, straight = _spread(body, s)
            vec[arm_ok, _idx(f"a_spread_{s}")] = spread[arm_ok] / REGISTRY.by_id[f"a_spread_{s}"].row.max
            degenerate[f"spread_straight_arm_{s}"] = int((straight & arm_ok).sum())

        # spec §4.3 "Hand depth gain": the depth of a camera's hand landmarks rescaled
        hand = with_depth_gain(prep.right if s == "r" else prep.left, cal.hand_depth_gain[s])
        present = _hand_present(hand)
        # spec §4.2, §4.3: the hand maths shared with the VR producer (posewire.producers.hand)
        # spec §4.3: monocular depth, so a depth-flipped hand is read mirrored (reported)
        dims = hand_dims(hand, hand_rotation, present, side=s, depth_ambiguous=True)
        tracked[f"hand_{s}"] = dims.tracked
        degenerate[f"palm_{s}"] = int(dims.degenerate.sum())
        if dims.depth_flipped is not None and dims.depth_flipped.any():
            degenerate[f"hand_depth_flipped_{s}"] = int(dims.depth_flipped.sum())
        if dims.fingers_side_clamped is not None and dims.fingers_side_clamped.any():
            degenerate[f"fingers_side_clamped_{s}"] = int(dims.fingers_side_clamped.sum())
        if dims.fingers_depth_repaired is not None and dims.fingers_depth_repaired.any():
            degenerate[f"fingers_depth_repaired_{s}"] = int(dims.fingers_depth_repaired.sum())
        fallback = dims.tracked & ~prep.valid
        if fallback.any():
            degenerate[f"palm_camera_frame_{s}"] = int(fallback.sum())
        if dims.roll_unobservable is not None and dims.roll_unobservable.any():
            degenerate[f"thumb_roll_unobservable_{s}"] = int(dims.roll_unobservable.sum())
        rows = np.flatnonzero(dims.tracked)
        if rows.size:
            vec[rows[:, None], _columns(tuple(dims.values))] = np.stack(list(dims.values.values()), axis=-1)[rows]
        extra_clamps[f"w_q_{s}"] = dims.palm_clamped

    head, head_clamped, head_ok = _head(prep)
    for k, row_id in enumerate(("h_yaw", "h_pitch", "h_roll")):
        vec[head_ok, _idx(row_id)] = head[head_ok, k]

    # spec §3.1: only finite in-bounds values leave the producer; clamps are reported
    finite = np.isfinite(vec)
    out_of_range = finite & ((vec < LOWER) | (vec > UPPER))
    vec = np.where(out_of_range, np.clip(vec, LOWER, UPPER), vec)
    counts = out_of_range.sum(axis=0)
    clamped: dict[str, int] = {REGISTRY.dimensions[i].id: int(counts[i]) for i in np.flatnonzero(counts)}
    for s in ("l", "r"):
        count = int(extra_clamps[f"w_q_{s}"].sum())
        if count:
            clamped[PALM_CLAMP_KEY.format(s)] = count
    if int(head_clamped.sum()):
        clamped[HEAD_CLAMP_KEY] = int(head_clamped.sum())
    if int((prep.body_clamped & body_ok).sum()):
        clamped[BODY_CLAMP_KEY] = int((prep.body_clamped & body_ok).sum())

    if prep.face is not None:
        tracked["head"] = head_ok
    states: dict[str, NDArray[np.str_]] = {}
    fractions: dict[str, float] = {}
    for part in TRACKING_PARTS:
        if part in tracked:
            states[part] = np.where(tracked[part], "tracked", "lost")
            fractions[part] = float(tracked[part].mean()) if batch else 0.0
        else:
            states[part] = np.full(batch, "not_estimated")
            fractions[part] = 0.0
    report = LandmarkReport(frames=batch, tracked_fraction=fractions, clamped=clamped,
                            fallback_axes=cal.units.fallback_axes, degenerate=degenerate,
                            notes=(*cal.notes, *notes))
    return LandmarkResult(vectors=vec, tracking=states, calibration=cal, report=report)
