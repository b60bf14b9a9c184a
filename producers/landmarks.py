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

* arm (§4.1): ``a_x, a_y, a_z`` from the pose wrist (15 left / 16 right) relative to the
  neck in the body frame, in calibrated units ``L = 2·r·d`` measured from the person
  (:func:`estimate_calibration`); ``a_spread`` from the elbow (13 / 14) swung about the
  shoulder→wrist axis away from the "down" pole toward lateral.
* palm (§4.2): the body-frame hand quaternion from hand points 0, 5, 9, 17.
* fingers (§4.3): curl / fold / side from bone-segment angles; thumb per §4.3;
  ``g_thumb_roll = 0`` (unobservable; seed 000 §4.3 default).
* head (§4.4): yaw / pitch / roll of a face frame (eye corners, forehead, chin) relative
  to the body frame, when face landmarks are given.

Values outside the registry bounds are clamped and **counted per dim in the report**
(spec §3.1, never silent). Parts: ``arm_l/arm_r`` tracked when the body frame exists and
the wrist visibility reaches the threshold, ``hand_l/hand_r`` when all 21 points are
present, ``head`` when the face is present (``not_estimated`` without a face array);
``body``, ``face`` and ``mouth`` are ``not_estimated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.calibration import (
    Calibration,
    CalibrationUnits,
    arm_to_normalized,
    body_frame,
    measure_calibration,
    units,
)
from posewire.codec.conditions import Conditions
from posewire.codec.errors import UsageError
from posewire.codec.euler import quat_to_head
from posewire.codec.quaternion import from_matrix
from posewire.codec.registry import REGISTRY, TRACKING_PARTS
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.producers.hand import HAND_POINTS, finger_angles, hand_dims

__all__ = [
    "FACE_POINTS",
    "HAND_LENGTH_RANGE",
    "HAND_POINTS",
    "MEDIAPIPE_TO_Y_UP",
    "POSE_POINTS",
    "HolisticLandmarks",
    "LandmarkCalibration",
    "LandmarkReport",
    "LandmarkResult",
    "estimate_calibration",
    "finger_angles",
    "image_to_world_scale",
    "landmarks_to_vectors",
    "pose_in_body_frame",
]

F64 = NDArray[np.float64]
Bool = NDArray[np.bool_]
Side = Literal["l", "r"]

#: MediaPipe camera axes (x right, y down, z away) -> y-up right-handed axes: 180° about x.
MEDIAPIPE_TO_Y_UP: F64 = np.diag([1.0, -1.0, -1.0])

#: MediaPipe pose landmark indices used here (spec §2.2; "left" = the subject's own left).
POSE_POINTS: Mapping[str, int] = {
    "nose": 0, "shoulder_l": 11, "shoulder_r": 12, "elbow_l": 13, "elbow_r": 14,
    "wrist_l": 15, "wrist_r": 16, "hip_l": 23, "hip_r": 24,
}
#: MediaPipe face-mesh indices of the head frame (subject's own left/right).
FACE_POINTS: Mapping[str, int] = {"eye_outer_r": 33, "eye_outer_l": 263, "forehead": 10, "chin": 152}

_EPS = 1e-9
#: Right side lateral is -X, left side +X (spec §3.2).
_LATERAL = {"l": np.array([1.0, 0.0, 0.0]), "r": np.array([-1.0, 0.0, 0.0])}
def _idx(dim_id: str) -> int:
    return REGISTRY.index(dim_id)


@dataclass(frozen=True)
class HolisticLandmarks:
    """One batch of MediaPipe Holistic landmarks (MediaPipe camera axes; NaN = missing).

    ``pose_world (B, 33, 3)`` metres; ``pose_visibility (B, 33)`` in [0, 1];
    ``left_hand``/``right_hand (B, 21, 3)`` in any isotropic unit on the same axes (the
    subject's own left/right hand, as MediaPipe Holistic labels them); ``face (B, K, 3)``
    with ``K`` = 468 or 478, or ``None``; ``hand_scale (B,)`` metres per hand unit (used
    only to measure the hand length, spec §4.1 ``d_x``), or ``None``.
    """

    pose_world: F64
    pose_visibility: F64
    left_hand: F64
    right_hand: F64
    face: F64 | None = None
    hand_scale: F64 | None = None

    def __post_init__(self) -> None:
        batch = self.pose_world.shape[0] if self.pose_world.ndim == 3 else -1
        checks: list[tuple[str, F64 | None, tuple[int, ...]]] = [
            ("pose_world", self.pose_world, (batch, 33, 3)),
            ("pose_visibility", self.pose_visibility, (batch, 33)),
            ("left_hand", self.left_hand, (batch, 21, 3)),
            ("right_hand", self.right_hand, (batch, 21, 3)),
            ("hand_scale", self.hand_scale, (batch,)),
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
    distance was measured."""

    calibration: Calibration
    units: CalibrationUnits
    notes: tuple[str, ...] = ()


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
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    out: F64 = v / np.where(norm > _EPS, norm, np.nan)
    return out


def _dot(a: F64, b: F64) -> F64:
    out: F64 = np.sum(a * b, axis=-1)
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
    rotation: F64  # (B, 3, 3) body axes as columns (NaN where invalid)
    neck: F64  # (B, 3)
    valid: Bool  # (B,) body frame defined


def _prepare(lm: HolisticLandmarks) -> _Prepared:
    pose = _y_up(np.asarray(lm.pose_world, dtype=np.float64))
    sl, sr = pose[:, POSE_POINTS["shoulder_l"]], pose[:, POSE_POINTS["shoulder_r"]]
    hip = 0.5 * (pose[:, POSE_POINTS["hip_l"]] + pose[:, POSE_POINTS["hip_r"]])
    finite: Bool = np.asarray(np.isfinite(sl).all(-1) & np.isfinite(sr).all(-1) & np.isfinite(hip).all(-1))
    across = np.where(finite[:, None], sl - sr, 0.0)
    up = np.where(finite[:, None], 0.5 * (sl + sr) - hip, 0.0)
    across_n = np.linalg.norm(across, axis=-1)
    # spec §2.3: the frame is undefined when the shoulders coincide or neck - hip_mid is
    # parallel to the shoulder line; such frames are reported, not raised, here.
    ortho = np.linalg.norm(np.cross(across, up), axis=-1)
    valid = finite & (across_n > 1e-6) & (ortho > 1e-6 * np.maximum(across_n, _EPS))
    rotation = np.full((lm.batch, 3, 3), np.nan)
    neck = np.full((lm.batch, 3), np.nan)
    if valid.any():
        frame = body_frame(sl[valid], sr[valid], hip[valid])
        rotation[valid] = frame.rotation
        neck[valid] = frame.origin
    face = None if lm.face is None else _y_up(np.asarray(lm.face, dtype=np.float64))
    return _Prepared(pose, _y_up(np.asarray(lm.left_hand, dtype=np.float64)),
                     _y_up(np.asarray(lm.right_hand, dtype=np.float64)), face, rotation, neck, valid)


def _to_body(points: F64, prep: _Prepared) -> F64:
    """World points ``(B, K, 3)`` -> body frame ``Rᵀ (p - neck)`` (spec §2.3)."""
    out: F64 = np.einsum("bji,bkj->bki", prep.rotation, points - prep.neck[:, None, :])
    return out


def _dirs_to_body(vectors: F64, prep: _Prepared) -> F64:
    """World directions ``(B, 3)`` -> body frame ``Rᵀ v``."""
    out: F64 = np.einsum("bji,bj->bi", prep.rotation, vectors)
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


#: Plausible adult hand length (wrist -> middle tip), metres; a measurement outside is
#: rejected (noted) and the x axis falls back to shoulder width.
HAND_LENGTH_RANGE: tuple[float, float] = (0.12, 0.26)


def _calibrate(lm: HolisticLandmarks, prep: _Prepared, visibility_threshold: float,
               hand_length_range: tuple[float, float]) -> LandmarkCalibration:
    notes: list[str] = []
    body = _to_body(prep.pose, prep)[prep.valid]
    if body.shape[0] == 0:
        raise UsageError("usage.calibration", "no frame has a body frame (shoulders and hips missing)")
    med = np.median(body, axis=0)  # (33, 3) robust body-frame sites
    shoulder_l, shoulder_r = med[POSE_POINTS["shoulder_l"]], med[POSE_POINTS["shoulder_r"]]
    hip_mid = 0.5 * (med[POSE_POINTS["hip_l"]] + med[POSE_POINTS["hip_r"]])

    # d_z: arm length = upper arm + forearm, which is the extended-arm length whatever the
    # elbow bend (spec §4.1: never measured from the animated pose itself).
    def arm_length(side: Side) -> float | None:
        s, e, w = (POSE_POINTS[f"{j}_{side}"] for j in ("shoulder", "elbow", "wrist"))
        seen = prep.valid & (lm.pose_visibility[:, [s, e, w]] >= visibility_threshold).all(-1)
        pts = prep.pose[seen]
        return _median(np.linalg.norm(pts[:, e] - pts[:, s], axis=-1) + np.linalg.norm(pts[:, w] - pts[:, e], axis=-1))

    # d_x: hand length = sum of wrist -> middle mcp -> pip -> dip -> tip = the open hand.
    def hand_length(side: Side) -> float | None:
        if lm.hand_scale is None:
            return None
        hand = prep.right if side == "r" else prep.left
        chain = hand[:, [0, 9, 10, 11, 12]]
        length = np.linalg.norm(np.diff(chain, axis=1), axis=-1).sum(axis=-1) * lm.hand_scale
        measured = _median(np.where(_hand_present(hand), length, np.nan))
        low, high = hand_length_range
        if measured is not None and not low <= measured <= high:
            notes.append(f"hand length {measured:.3f} m ({side}) outside the plausible range "
                         f"[{low}, {high}] m (perspective: hands nearer the camera than the "
                         "shoulders look larger); not used")
            return None
        return measured

    d_z = arm_length("r")
    if d_z is None and (d_z := arm_length("l")) is not None:
        notes.append("arm length measured on the left arm (no usable right-arm measurement)")
    d_x = hand_length("r")
    if d_x is None and (d_x := hand_length("l")) is not None:
        notes.append("hand length measured on the left hand (no usable right-hand measurement)")
    if lm.hand_scale is None:
        notes.append("hand length not measurable: no hand_scale (image -> metres)")
    # reference pose (spec §4.1): the measured arm hangs straight down from shoulder_r and
    # the open hand continues it; measure_calibration then applies the §2.2 site rules.
    sites: dict[str, F64] = {"shoulder_l": shoulder_l, "shoulder_r": shoulder_r, "hip_mid": hip_mid}
    if d_z is not None:
        sites["wrist_r"] = shoulder_r + np.array([0.0, -d_z, 0.0])
        if d_x is not None:
            sites["middle_tip_r"] = sites["wrist_r"] + np.array([0.0, -d_x, 0.0])
    elif d_x is not None:
        notes.append("hand length unused: no wrist site without an arm length")
    cal = measure_calibration(sites)
    return LandmarkCalibration(calibration=cal, units=units(cal), notes=tuple(notes))


def estimate_calibration(lm: HolisticLandmarks, *, visibility_threshold: float = 0.5,
                         hand_length_range: tuple[float, float] = HAND_LENGTH_RANGE) -> LandmarkCalibration:
    """Reference distances of the person in ``lm`` (spec §4.1), from robust statistics.

    Medians over frames: shoulder and hip sites in the body frame (shoulder width ``S``,
    torso ``d_y = 0.8·|neck − hip_mid|``); arm length ``d_z`` = median of upper arm +
    forearm (right arm; left if the right is never visible, noted); hand length ``d_x`` =
    median of the wrist→middle-tip bone chain × ``hand_scale`` (right hand; left if the
    right is never tracked, noted; a value outside ``hand_length_range`` is rejected and
    noted — hands held toward the camera look larger than the shoulder-plane scale says).
    Axes left without a distance fall back to ``S``
    (:func:`posewire.codec.calibration.units` reports them). Raises ``usage.calibration`` when no
    frame has a body frame.
    """
    return _calibrate(lm, _prepare(lm), visibility_threshold, hand_length_range)


# ---------------------------------------------------------------------------- dims


def _spread(prep: _Prepared, side: Side) -> tuple[F64, Bool]:
    """Elbow spread angle (degrees, ``(B,)``) and a mask of degenerate frames (spec §4.1):
    the elbow's offset from the shoulder→wrist axis, measured from the "down" pole (−Y
    projected off the axis; −Z when the arm is vertical) toward lateral."""
    body = _to_body(prep.pose[:, [POSE_POINTS[f"shoulder_{side}"], POSE_POINTS[f"elbow_{side}"],
                                  POSE_POINTS[f"wrist_{side}"]]], prep)
    shoulder, elbow, wrist = body[:, 0], body[:, 1], body[:, 2]
    axis = _unit(wrist - shoulder)
    offset = (elbow - shoulder) - _dot(elbow - shoulder, axis)[:, None] * axis
    down = np.array([0.0, -1.0, 0.0])
    pole = down - _dot(np.broadcast_to(down, axis.shape), axis)[:, None] * axis
    back = np.array([0.0, 0.0, -1.0])
    pole_back = back - _dot(np.broadcast_to(back, axis.shape), axis)[:, None] * axis
    vertical = np.linalg.norm(pole, axis=-1) < 0.1
    pole = _unit(np.where(vertical[:, None], pole_back, pole))
    lateral_dir = np.cross(axis, pole)
    lateral_dir *= np.where(_dot(lateral_dir, np.broadcast_to(_LATERAL[side], axis.shape)) < 0, -1.0, 1.0)[:, None]
    angle = np.degrees(np.arctan2(_dot(offset, lateral_dir), _dot(offset, pole)))
    # a straight arm has no elbow direction: spread is undefined -> default 0, counted
    straight = np.linalg.norm(offset, axis=-1) < 0.01
    angle = np.where(straight & np.isfinite(angle), 0.0, angle)
    return angle, straight


def _head(prep: _Prepared) -> tuple[F64, Bool, Bool]:
    """Normalized ``(h_yaw, h_pitch, h_roll)`` ``(B, 3)`` (NaN without a face), the clamp
    mask and the face-present mask (spec §4.4): face frame X = eye_outer_l − eye_outer_r,
    Y = chin→forehead orthogonalized, Z = X × Y; head rotation = R_bodyᵀ · R_face."""
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
    ok = present & np.isfinite(x).all(-1) & np.isfinite(y).all(-1)
    if ok.any():
        face_rot = np.stack([x, y, np.cross(x, y)], axis=-1)[ok]
        rel = np.einsum("bji,bjk->bik", prep.rotation[ok], face_rot)
        out[ok], clamped[ok] = quat_to_head(from_matrix(rel))
    return out, clamped, ok


def landmarks_to_vectors(
    lm: HolisticLandmarks,
    *,
    calibration: LandmarkCalibration | None = None,
    visibility_threshold: float = 0.5,
) -> LandmarkResult:
    """Pose vectors ``(B, N)`` from a batch of Holistic landmarks (module docstring).

    ``calibration`` defaults to :func:`estimate_calibration` on the same batch (a
    recording calibrates itself). Dims of a part that is lost in a frame, or never
    estimated, are NaN; every finite value is inside the registry bounds, and every clamp
    is counted in ``report.clamped``.
    """
    prep = _prepare(lm)
    cal = calibration if calibration is not None else _calibrate(lm, prep, visibility_threshold, HAND_LENGTH_RANGE)
    batch = lm.batch
    vec = np.full((batch, N_DIMS), np.nan)
    extra_clamps: dict[str, Bool] = {}
    degenerate: dict[str, int] = {"body_frame": int((~prep.valid).sum())}
    tracked: dict[str, Bool] = {}

    body = _to_body(prep.pose, prep)
    for side in ("l", "r"):
        s: Side = side
        wrist_i = POSE_POINTS[f"wrist_{s}"]
        arm_ok = prep.valid & (lm.pose_visibility[:, wrist_i] >= visibility_threshold)
        arm_ok &= np.isfinite(body[:, wrist_i]).all(-1)
        tracked[f"arm_{s}"] = arm_ok
        if arm_ok.any():  # spec §4.1 inverse: n = sign_side · p / (2.5 L)
            n = arm_to_normalized(body[arm_ok, wrist_i], cal.units, side=s)
            for k, axis in enumerate("xyz"):
                vec[arm_ok, _idx(f"a_{axis}_{s}")] = n[:, k]
            spread, straight = _spread(prep, s)
            vec[arm_ok, _idx(f"a_spread_{s}")] = spread[arm_ok] / REGISTRY.by_id[f"a_spread_{s}"].row.max
            degenerate[f"spread_straight_arm_{s}"] = int((straight & arm_ok).sum())

        hand = prep.right if s == "r" else prep.left
        # spec §4.2, §4.3: the hand maths shared with the VR producer (posewire.producers.hand)
        dims = hand_dims(hand, prep.rotation, _hand_present(hand) & prep.valid, side=s)
        present = dims.tracked
        tracked[f"hand_{s}"] = present
        degenerate[f"palm_{s}"] = int(dims.degenerate.sum())
        for dim_id, values in dims.values.items():
            vec[present, _idx(dim_id)] = values[present]
        extra_clamps[f"w_q_{s}"] = dims.palm_clamped

    head, head_clamped, head_ok = _head(prep)
    for k, row_id in enumerate(("h_yaw", "h_pitch", "h_roll")):
        vec[head_ok, _idx(row_id)] = head[head_ok, k]

    # spec §3.1: only finite in-bounds values leave the producer; clamps are reported
    finite = np.isfinite(vec)
    out_of_range = finite & ((vec < LOWER) | (vec > UPPER))
    vec = np.where(out_of_range, np.clip(vec, LOWER, UPPER), vec)
    clamped: dict[str, int] = {}
    for d in REGISTRY.dimensions:
        count = int(out_of_range[:, d.index].sum())
        if count:
            clamped[d.id] = count
    for s in ("l", "r"):
        count = int(extra_clamps[f"w_q_{s}"].sum())
        if count:
            clamped[f"w_q_{s} (|v| > 0.98)"] = count
    if int(head_clamped.sum()):
        clamped["h_* (angle beyond max)"] = int(head_clamped.sum())

    states: dict[str, NDArray[np.str_]] = {}
    for part in TRACKING_PARTS:
        if part in tracked:
            states[part] = np.where(tracked[part], "tracked", "lost")
        elif part == "head" and prep.face is not None:
            states[part] = np.where(head_ok, "tracked", "lost")
        else:
            states[part] = np.full(batch, "not_estimated")
    fractions = {part: float((s == "tracked").mean()) if batch else 0.0 for part, s in states.items()}
    report = LandmarkReport(frames=batch, tracked_fraction=fractions, clamped=clamped,
                            fallback_axes=cal.units.fallback_axes, degenerate=degenerate, notes=cal.notes)
    return LandmarkResult(vectors=vec, tracking=states, calibration=cal, report=report)
