"""Reprojection fidelity: what the camera saw, rebuilt from what was sent (spec §7.3).

A camera's landmarks are encoded (:func:`posewire.producers.landmarks.landmarks_to_vectors`),
the vectors are decoded onto ``helix-humanoid@1`` and posed by FK
(:func:`posewire.groundtruth.render`), and the avatar's landmarks are compared with the
camera's, each in its own frames so that the avatar's proportions drop out:

- **fingertip direction** (degrees): the direction knuckle (MCP) → tip of each finger in the
  hand's palm frame (spec §2.4), camera hand with the producer's depth gain (§4.3) against the
  avatar hand;
- **last finger bone** (degrees): the direction DIP → tip (thumb: IP → tip), the same way;
- **fingertip position** (millimetres) on the person's own proportions: the avatar's finger
  angles put on the person's knuckle, metacarpal and phalanx lengths (:func:`person_fingers`),
  against the camera's fingertip, and the knuckle → tip direction of the same rebuilt finger
  (the owner's three finger measures are all taken on the person's own proportions);
- **image-plane tip direction** (degrees): the same directions taken into the camera's palm
  frame and projected on the image plane (x, y), against the camera's own image-plane
  directions, which need no depth;
- **elbow bend** (degrees): the angle between upper arm and forearm;
- **reach**: shoulder → wrist distance over the arm's length (upper arm + forearm), the
  person's against the avatar's.

Only frames where the part was tracked are compared. :func:`flexion_tip_errors` measures a
peer that gives finger flexion only (kalidokit's three bends per finger) the same way, on the
same avatar and frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from posewire.codec.registry import REGISTRY
from posewire.groundtruth import render
from posewire.producers.hand import FINGER_CHAINS, THUMB_CHAIN, hand_frame, with_depth_gain
from posewire.producers.landmarks import POSE_POINTS, HolisticLandmarks, LandmarkResult

__all__ = ["ArmReprojection", "FingerErrors", "Reprojection", "angle_deg", "flexion_errors", "flexion_tip_errors",
           "person_fingers", "person_phalanges", "reprojection", "unit"]

F64 = NDArray[np.float64]
_CHAINS = {"thumb": THUMB_CHAIN, **FINGER_CHAINS}


@dataclass(frozen=True)
class ArmReprojection:
    """One arm's samples over its tracked frames (NaN-free): the elbow-bend error (degrees) and
    the reach (shoulder → wrist over upper arm + forearm) of the person and of the avatar."""

    elbow_deg: F64
    reach_person: F64
    reach_avatar: F64

    @property
    def reach_error(self) -> float:
        """``|median person reach − median avatar reach|`` (NaN without a sample)."""
        if not self.reach_person.size:
            return float("nan")
        return float(abs(np.median(self.reach_person) - np.median(self.reach_avatar)))


@dataclass(frozen=True)
class Reprojection:
    """Per-sample errors (flattened over frames, fingers or sides; NaN-free): ``tip_deg``,
    ``image_tip_deg``, ``last_bone_deg`` (DIP → tip direction) and ``tip_mm`` (fingertip position
    on the person's own proportions, :func:`person_fingers`; empty without ``hand_scale``) per
    tracked finger, ``elbow_deg`` per tracked arm, ``reach`` (person,
    avatar) pairs per tracked arm, ``fingers_dropped`` = tracked hands' finger dims not sent;
    ``arms``: the same arm samples per side (``"l"``, ``"r"``; a side never tracked is absent);
    ``finger_tip_deg``, ``finger_image_tip_deg``: the tip errors of index…pinky alone (as a
    flexion-only peer is measured, :func:`flexion_tip_errors`), and ``finger_last_bone_deg``,
    ``finger_tip_mm`` the same; ``image_tip_by_side``: the image-plane tip errors of each tracked
    hand (``"l"``, ``"r"``)."""

    tip_deg: F64
    image_tip_deg: F64
    elbow_deg: F64
    reach_person: F64
    reach_avatar: F64
    fingers_dropped: int
    finger_values: int
    arms: Mapping[str, ArmReprojection] = field(default_factory=dict)
    finger_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))
    finger_image_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))
    image_tip_by_side: Mapping[str, F64] = field(default_factory=dict)
    last_bone_deg: F64 = field(default_factory=lambda: np.zeros(0))
    tip_mm: F64 = field(default_factory=lambda: np.zeros(0))
    finger_last_bone_deg: F64 = field(default_factory=lambda: np.zeros(0))
    finger_tip_mm: F64 = field(default_factory=lambda: np.zeros(0))
    person_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))
    finger_person_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class FingerErrors:
    """One hand's per-finger errors ``(b, F)`` (frames × fingers; NaN where unmeasurable):
    knuckle → tip direction and its image-plane direction (degrees), last finger bone
    (DIP → tip) direction (degrees), fingertip position on the person's own proportions
    (millimetres; NaN without ``hand_scale``) and the knuckle → tip direction on the person's
    own proportions (degrees, :func:`person_fingers`)."""

    tip_deg: F64
    image_tip_deg: F64
    last_bone_deg: F64
    tip_mm: F64
    person_tip_deg: F64


def unit(v: F64) -> F64:
    """``v`` (..., 3) over its length (NaN where the length is 0)."""
    n = np.sqrt((v * v).sum(-1, keepdims=True))
    out: F64 = v / np.where(n > 0, n, np.nan)
    return out


def angle_deg(a: F64, b: F64) -> F64:
    """Unsigned angle (degrees) between ``a`` and ``b`` (..., 3), NaN for a zero vector."""
    cos = np.clip((unit(a) * unit(b)).sum(-1), -1.0, 1.0)
    out: F64 = np.degrees(np.arccos(cos))
    return out


def _palm_basis(hand: F64, side: str) -> F64:
    fingers, normal = hand_frame(hand, side=side)  # type: ignore[arg-type]
    y = unit(fingers)
    z = unit(normal - (normal * y).sum(-1, keepdims=True) * y)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=-1)  # columns X, Y, Z


def _tip_directions(hand: F64) -> F64:
    """Knuckle → tip directions ``(B, 5, 3)`` (thumb: its CMC → tip)."""
    return np.stack([hand[:, c[3]] - hand[:, c[0]] for c in _CHAINS.values()], axis=1)


#: Each finger's knuckle (thumb: CMC), PIP, DIP and tip (thumb: MCP, IP, tip) ``(5, 4)``
_CHAIN_POINTS = np.array(list(_CHAINS.values()), dtype=np.intp)


def _in_palm(basis: F64, points: F64) -> F64:
    """World points ``(b, K, 3)`` in the palm basis ``(b, 3, 3)`` (columns X, Y, Z), relative to
    the wrist (point 0)."""
    out: F64 = np.einsum("bji,bkj->bki", basis, points - points[:, :1])
    return out


def _camera_hand(lm: HolisticLandmarks, result: LandmarkResult,
                 side: str) -> tuple[NDArray[np.intp], F64, F64, F64, F64]:
    """Rows compared for one hand (tracked, every point finite), the camera's palm basis
    ``(b, 3, 3)`` and its 21 points in it relative to the wrist ``(b, 21, 3)`` (both with the
    producer's depth gain), metres per point unit ``(b,)`` (``hand_scale``, NaN without it), and
    the raw camera points ``(b, 21, 3)`` (image plane)."""
    camera = lm.left_hand if side == "l" else lm.right_hand
    gained = with_depth_gain(camera, result.calibration.hand_depth_gain[side])
    rows = np.flatnonzero((result.tracking[f"hand_{side}"] == "tracked") & np.isfinite(camera).all(axis=(1, 2)))
    basis = _palm_basis(gained[rows], side)
    metres = lm.hand_scale[rows] if lm.hand_scale is not None else np.full(rows.size, np.nan)
    return rows, basis, _in_palm(basis, gained[rows]), metres, camera[rows]


def person_phalanges(points: F64) -> F64:
    """The person's own phalanx lengths ``(5, 3)`` (thumb: CMC → MCP, MCP → IP, IP → tip; the
    points' unit): the median over the frames of hand points ``points (b, 21, 3)`` of each
    bone's length."""
    bones = np.diff(points[:, _CHAIN_POINTS], axis=2)
    out: F64 = np.median(np.sqrt((bones * bones).sum(-1)), axis=0)
    return out


def _plane_angle(v: F64) -> F64:
    out: F64 = np.arctan2(v[..., 1], v[..., 0])
    return out


def person_fingers(person: F64, lengths: F64, model_bones: F64, model_knuckles: F64,
                   fingers: NDArray[np.intp] | None = None) -> F64:
    """A model hand's finger angles put on the person's own proportions: joint points
    ``(b, F, 4, 3)`` (knuckle, PIP, DIP, tip; thumb: CMC, MCP, IP, tip) in the person's palm frame.

    ``person (b, 21, 3)``: the person's points in their palm frame relative to the wrist;
    ``lengths (5, 3)``: the person's phalanx lengths (:func:`person_phalanges`);
    ``model_bones (b, F, 3, 3)``: the model's three bone directions of each finger and
    ``model_knuckles (b, F, 3)``: its wrist → knuckle vectors, in the model's palm frame;
    ``fingers``: which of thumb, index … pinky (0…4) the ``F`` fingers are (default all five).
    Each index…pinky bone direction is turned about the palm normal by the in-plane angle from
    the model's metacarpal (wrist → knuckle) to the person's, as a decoder poses the finger
    from its own metacarpal (side is measured from it, spec §4.3); the thumb's are not turned
    (its rest direction is fixed in the palm frame, §4.3). The unit directions, times the
    person's lengths, are chained from the person's knuckle."""
    which = np.arange(5) if fingers is None else np.asarray(fingers, dtype=np.intp)
    chains = _CHAIN_POINTS[which]
    knuckle = person[:, chains[:, 0]]  # (b, F, 3)
    turn = _plane_angle(knuckle) - _plane_angle(model_knuckles)
    turn = np.where(which == 0, 0.0, turn)[..., None]  # (b, F, 1)
    bones = unit(model_bones)
    c, s = np.cos(turn), np.sin(turn)
    x, y = bones[..., 0], bones[..., 1]
    turned = np.stack([c * x - s * y, s * x + c * y, bones[..., 2]], axis=-1)
    steps = turned * lengths[which][None, :, :, None]
    out: F64 = np.concatenate([knuckle[:, :, None], knuckle[:, :, None] + np.cumsum(steps, axis=2)], axis=2)
    return out


def _finger_errors(person: F64, metres: F64, cam_basis: F64, cam_raw: F64, model_bones: F64,
                   model_knuckles: F64, fingers: NDArray[np.intp]) -> FingerErrors:
    """Errors of a model hand's fingers (directions in the model's palm frame) against the camera
    hand (:func:`_camera_hand`): the fingertip position with the person's points and phalanx
    lengths in metres."""
    chains = _CHAIN_POINTS[fingers]
    cam = person[:, chains]  # (b, F, 4, 3)
    model_tip = model_bones.sum(axis=2)
    tip = angle_deg(cam[:, :, 3] - cam[:, :, 0], model_tip)
    raw = cam_raw[:, chains[:, 3]] - cam_raw[:, chains[:, 0]]
    image = _image_errors(cam_basis, model_tip, raw)
    last = angle_deg(cam[:, :, 3] - cam[:, :, 2], model_bones[:, :, 2])
    person_m = person * metres[:, None, None]
    rebuilt = person_fingers(person_m, person_phalanges(person_m), model_bones, model_knuckles, fingers)
    gap = rebuilt[:, :, 3] - person_m[:, chains[:, 3]]
    mm = 1000.0 * np.sqrt((gap * gap).sum(-1))
    # the direction needs no scale: the person's points in their own unit
    own = person_fingers(person, person_phalanges(person), model_bones, model_knuckles, fingers)
    person_tip = angle_deg(cam[:, :, 3] - cam[:, :, 0], own[:, :, 3] - own[:, :, 0])
    return FingerErrors(tip, image, last, mm, person_tip)


def _model_fingers(hand: F64) -> tuple[F64, F64]:
    """A hand's bone directions ``(b, 5, 3, 3)`` and wrist → knuckle vectors ``(b, 5, 3)`` (palm
    frame)."""
    pts = hand[:, _CHAIN_POINTS]
    return np.diff(pts, axis=2), pts[:, :, 0]


def _image_errors(cam_basis: F64, model_local: F64, cam_raw: F64) -> F64:
    """Image-plane angles (degrees) between directions in the palm frame placed in the camera's
    palm frame and the camera's own directions."""
    placed = np.einsum("bij,bkj->bki", cam_basis, model_local)
    return angle_deg(placed[..., :2], cam_raw[..., :2])


def flexion_errors(lm: HolisticLandmarks, result: LandmarkResult, side: str, bends: F64) -> FingerErrors:
    """The errors ``(b, 4)`` of a flexion-only hand — ``bends (B, 4, 3)``: index…pinky bent at
    the knuckle, PIP and DIP (radians, + toward the palm), as kalidokit gives them — posed on
    ``helix-humanoid@1`` with every finger at its relaxed splay (side 0: no spread, which such a
    peer does not give), against the same camera hand and frames as :func:`reprojection`
    (index…pinky; the fingertip position with the posed angles put on the person's own
    proportions, :func:`person_fingers`)."""
    rows, cam_basis, person, metres, cam_raw = _camera_hand(lm, result, side)
    straight = np.where(np.isfinite(result.vectors), result.vectors, 0.0)[rows]
    fingers = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers" and d.id.endswith(f"_{side}")]
    straight[:, fingers] = 0.0  # side 0 (the relaxed splay), fold and curl 0; the thumb at rest
    avatar = render(straight).landmarks
    hand = avatar.left_hand if side == "l" else avatar.right_hand
    local = _in_palm(_palm_basis(hand, side), hand)
    bones, knuckles = _model_fingers(local)
    bones, knuckles = bones[:, 1:], knuckles[:, 1:]  # (b, 4, 3, 3), straight along d
    lengths = np.sqrt((bones * bones).sum(-1))
    along = unit(bones.sum(axis=2))  # d: each straight finger's direction, in the palm plane
    turn = np.cumsum(bends[rows], axis=-1)  # (b, 4, 3)
    z = np.array([0.0, 0.0, 1.0])  # the palm normal, toward which a finger folds (spec §4.3)
    posed = lengths[..., None] * (np.cos(turn)[..., None] * along[:, :, None] + np.sin(turn)[..., None] * z)
    return _finger_errors(person, metres, cam_basis, cam_raw, posed, knuckles, np.arange(1, 5))


def flexion_tip_errors(lm: HolisticLandmarks, result: LandmarkResult, side: str, bends: F64) -> tuple[F64, F64]:
    """Fingertip direction and image-plane tip direction errors (degrees, flattened, NaN-free)
    of :func:`flexion_errors`."""
    errors = flexion_errors(lm, result, side, bends)
    tip, image = errors.tip_deg.ravel(), errors.image_tip_deg.ravel()
    return tip[np.isfinite(tip)], image[np.isfinite(image)]


def _elbow_and_reach(pose: F64, side: str) -> tuple[F64, F64]:
    s, e, w = (pose[:, POSE_POINTS[f"{j}_{side}"]] for j in ("shoulder", "elbow", "wrist"))
    upper, fore = e - s, w - e
    length = np.sqrt((upper * upper).sum(-1)) + np.sqrt((fore * fore).sum(-1))
    reach = np.sqrt(((w - s) ** 2).sum(-1)) / np.where(length > 0, length, np.nan)
    return angle_deg(upper, fore), reach


def reprojection(lm: HolisticLandmarks, result: LandmarkResult) -> Reprojection:
    """Compare the camera's landmarks ``lm`` with the avatar posed from ``result.vectors``."""
    vectors = result.vectors
    avatar = render(np.where(np.isfinite(vectors), vectors, 0.0)).landmarks
    tip, image_tip, elbow, reach_p, reach_a, finger_tip, finger_image_tip = [], [], [], [], [], [], []
    last, mm, finger_last, finger_mm, person_tip, finger_person_tip = [], [], [], [], [], []
    arms: dict[str, ArmReprojection] = {}
    by_side: dict[str, F64] = {}
    dropped = values = 0
    for side in ("l", "r"):
        model = avatar.left_hand if side == "l" else avatar.right_hand
        if (result.tracking[f"hand_{side}"] == "tracked").any():
            rows, cam_basis, person, metres, cam_raw = _camera_hand(lm, result, side)
            bones, knuckles = _model_fingers(_in_palm(_palm_basis(model[rows], side), model[rows]))
            errors = _finger_errors(person, metres, cam_basis, cam_raw, bones, knuckles, np.arange(5))
            tip.append(errors.tip_deg.ravel())
            finger_tip.append(errors.tip_deg[:, 1:].ravel())
            # the avatar's directions placed in the camera's palm frame, on the image plane
            image_tip.append(errors.image_tip_deg.ravel())
            flat_image = errors.image_tip_deg.ravel()
            by_side[side] = flat_image[np.isfinite(flat_image)]
            finger_image_tip.append(errors.image_tip_deg[:, 1:].ravel())
            last.append(errors.last_bone_deg.ravel())
            finger_last.append(errors.last_bone_deg[:, 1:].ravel())
            mm.append(errors.tip_mm.ravel())
            finger_mm.append(errors.tip_mm[:, 1:].ravel())
            person_tip.append(errors.person_tip_deg.ravel())
            finger_person_tip.append(errors.person_tip_deg[:, 1:].ravel())
        arm_tracked = result.tracking[f"arm_{side}"] == "tracked"
        if arm_tracked.any():
            bend_p, reach_person = _elbow_and_reach(lm.pose_world[arm_tracked], side)
            bend_a, reach_avatar = _elbow_and_reach(avatar.pose_world[arm_tracked], side)
            bend = np.abs(bend_p - bend_a)
            elbow.append(bend)
            both = np.isfinite(reach_person) & np.isfinite(reach_avatar)
            reach_p.append(reach_person[both])
            reach_a.append(reach_avatar[both])
            arms[side] = ArmReprojection(bend[np.isfinite(bend)], reach_person[both], reach_avatar[both])
    for side in ("l", "r"):
        rows = result.tracking[f"hand_{side}"] == "tracked"
        cols = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers" and d.id.endswith(f"_{side}")]
        block = vectors[rows][:, cols]
        dropped += int(np.isnan(block).sum())
        values += int(block.size)

    def flat(parts: list[F64]) -> F64:
        out = np.concatenate(parts) if parts else np.zeros(0)
        return out[np.isfinite(out)]

    return Reprojection(flat(tip), flat(image_tip), flat(elbow), flat(reach_p), flat(reach_a), dropped, values,
                        arms, flat(finger_tip), flat(finger_image_tip), by_side, flat(last), flat(mm),
                        flat(finger_last), flat(finger_mm), flat(person_tip), flat(finger_person_tip))
