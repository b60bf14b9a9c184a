"""Ground truth for the encoder: known vectors rendered through the decoder into the
landmark layouts the producers read (spec §2.2, §4.1–§4.5).

``render(vectors)`` decodes ``(B, N)`` vectors on ``helix-humanoid@1``
(:func:`posewire.consumers.pose.decode_pose` + :func:`posewire.consumers.skeleton.fk`),
turns the avatar by ``view_yaw_deg`` about +Y (the person standing turned to the
camera, hips included) and writes what an unmirrored camera would report:

* :class:`posewire.producers.landmarks.HolisticLandmarks` in MediaPipe camera axes (x right,
  y down, z away; ``(x, y, z) = (X, −Y, −Z)`` of the avatar facing the camera), world
  landmarks in metres with the origin at the hip midpoint, pose 33 (face points of the
  pose from fixed head-local offsets), both hands (21) in metres (``hand_scale = 1``) and
  the four face-mesh points of the head frame (33, 263, 10, 152; others NaN);
* OpenXR's 26 hand joints per side (positions, and orientations with OpenXR's joint axes:
  −Z along the bone toward the tip, +Y out of the back of the finger) in the avatar frame.

``noise(landmarks, rng, xy=0.002, depth=0.006)`` adds MediaPipe-like Gaussian noise
(metres; x/y in the image plane, depth along z).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import from_matrix, multiply_unchecked, rotate_unchecked
from posewire.codec.registry import REGISTRY
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton, fk, helix_humanoid
from posewire.producers.hand import THUMB_ROLL_MIN_CURL_DEG
from posewire.producers.landmarks import MEDIAPIPE_TO_Y_UP, HolisticLandmarks
from posewire.producers.vr import VR_JOINTS

__all__ = ["HEAD_POINTS", "GroundTruth", "moving_vectors", "noise", "random_vectors", "render",
           "thumb_roll_error_deg", "thumb_roll_seen"]

F64 = NDArray[np.float64]

#: Head-local offsets (metres, helix ``head`` joint frame at rest: +X left, +Y up, +Z
#: forward) of the face points: forehead and chin share z, the eye corners share y and z,
#: so the encoder's face frame (§4.4) is the head joint's frame.
HEAD_POINTS: dict[str, tuple[float, float, float]] = {
    "nose": (0.0, 0.02, 0.11), "eye_inner_l": (0.015, 0.05, 0.095), "eye_l": (0.032, 0.05, 0.09),
    "eye_outer_l": (0.048, 0.05, 0.085), "eye_inner_r": (-0.015, 0.05, 0.095), "eye_r": (-0.032, 0.05, 0.09),
    "eye_outer_r": (-0.048, 0.05, 0.085), "ear_l": (0.075, 0.03, 0.0), "ear_r": (-0.075, 0.03, 0.0),
    "mouth_l": (0.025, -0.02, 0.095), "mouth_r": (-0.025, -0.02, 0.095),
    "forehead": (0.0, 0.12, 0.09), "chin": (0.0, -0.05, 0.09),
}
_POSE_HEAD = ["nose", "eye_inner_l", "eye_l", "eye_outer_l", "eye_inner_r", "eye_r", "eye_outer_r",
              "ear_l", "ear_r", "mouth_l", "mouth_r"]
_POSE_JOINTS = {11: "upperarm_l", 12: "upperarm_r", 13: "lowerarm_l", 14: "lowerarm_r", 15: "hand_l",
                16: "hand_r", 17: "pinky_01_l", 18: "pinky_01_r", 19: "index_01_l", 20: "index_01_r",
                21: "thumb_02_l", 22: "thumb_02_r", 23: "thigh_l", 24: "thigh_r", 25: "calf_l", 26: "calf_r",
                27: "foot_l", 28: "foot_r", 29: "foot_l", 30: "foot_r", 31: "ball_l", 32: "ball_r"}
_FACE_MESH = {33: "eye_outer_r", 263: "eye_outer_l", 10: "forehead", 152: "chin"}


@dataclass(frozen=True)
class GroundTruth:
    """``landmarks``: what MediaPipe Holistic would report; ``openxr``: per side
    ``(positions (B, 26, 3), orientations (B, 26, 4) wxyz)`` in the avatar frame turned by
    the view (+Y up, the avatar's forward = +Z before the turn); ``view`` ``(B, 4)``:
    the view rotation; ``vectors``: the rendered vectors after the decoder's validation."""

    landmarks: HolisticLandmarks
    openxr: dict[str, tuple[F64, F64]]
    view: F64


def _hand_names(s: str) -> list[str]:
    names = [f"hand_{s}", f"thumb_01_{s}", f"thumb_02_{s}", f"thumb_03_{s}", f"thumb_tip_{s}"]
    for f in ("index", "middle", "ring", "pinky"):
        names += [f"{f}_01_{s}", f"{f}_02_{s}", f"{f}_03_{s}", f"{f}_tip_{s}"]
    return names


def _basis_quat(bone: F64, dorsal: F64) -> F64:
    # OpenXR joint axes: −Z along the bone, +Y dorsal (orthogonalized), X = Y × Z
    z = -bone / np.linalg.norm(bone, axis=-1, keepdims=True)
    y = dorsal - (dorsal * z).sum(-1, keepdims=True) * z
    y = y / np.linalg.norm(y, axis=-1, keepdims=True)
    x = np.cross(y, z)
    return from_matrix(np.stack([x, y, z], axis=-1))


def render(vectors: ArrayLike, *, view_yaw_deg: ArrayLike = 0.0, skeleton: Skeleton | None = None) -> GroundTruth:
    """Render ``vectors (B, N)`` (module docstring)."""
    skel = skeleton if skeleton is not None else helix_humanoid()
    vec = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    batch = vec.shape[0]
    res = decode_pose(vec, skel)
    pos, rot = fk(skel, res.local_rotations)
    yaw = np.radians(np.broadcast_to(np.asarray(view_yaw_deg, dtype=np.float64), (batch,)))
    view = np.stack([np.cos(yaw / 2), np.zeros(batch), np.sin(yaw / 2), np.zeros(batch)], axis=-1)
    ix = skel.index
    hip_mid = 0.5 * (pos[:, ix["thigh_l"]] + pos[:, ix["thigh_r"]])
    pos = rotate_unchecked(view[:, None], pos - hip_mid[:, None])
    rot = multiply_unchecked(view[:, None], rot)

    def site(name: str) -> F64:
        return skel.site(name, pos, rot)

    head_p, head_q = pos[:, ix["head"]], rot[:, ix["head"]]
    head = {k: head_p + rotate_unchecked(head_q, np.array(v)) for k, v in HEAD_POINTS.items()}
    pose = np.full((batch, 33, 3), np.nan)
    for i, name in enumerate(_POSE_HEAD):
        pose[:, i] = head[name]
    for i, joint in _POSE_JOINTS.items():
        pose[:, i] = pos[:, ix[joint]]
    pose[:, 29:31] += rotate_unchecked(view[:, None], np.array([0.0, -0.05, -0.07]))
    face = np.full((batch, 468, 3), np.nan)
    for i, name in _FACE_MESH.items():
        face[:, i] = head[name]
    hands = {s: np.stack([site(n) for n in _hand_names(s)], axis=1) for s in ("l", "r")}
    to_mp = MEDIAPIPE_TO_Y_UP  # its own inverse
    lm = HolisticLandmarks(
        pose_world=pose @ to_mp, pose_visibility=np.ones((batch, 33)),
        left_hand=hands["l"] @ to_mp, right_hand=hands["r"] @ to_mp, face=face @ to_mp,
        hand_scale=np.ones(batch), pose_image=pose @ to_mp)

    openxr: dict[str, tuple[F64, F64]] = {}
    for s in ("l", "r"):
        h = hands[s]
        wrist = h[:, 0]
        joints: dict[str, F64] = {"wrist": wrist, "palm": 0.5 * (wrist + h[:, 9])}
        for k, part in enumerate(("metacarpal", "proximal", "distal", "tip")):
            joints[f"thumb-{part}"] = h[:, 1 + k]
        for f, base in (("index", 5), ("middle", 9), ("ring", 13), ("little", 17)):
            joints[f"{f}-metacarpal"] = wrist + 0.3 * (h[:, base] - wrist)
            for k, part in enumerate(("proximal", "intermediate", "distal", "tip")):
                joints[f"{f}-{part}"] = h[:, base + k]
        positions = np.stack([joints[n] for n in VR_JOINTS], axis=1)
        # dorsal axis of each bone: the back of the hand carried by the bone's own rotation
        hand_q = rot[:, ix[f"hand_{s}"]]
        fingers_dir = h[:, 9] - wrist
        across = h[:, 5] - h[:, 17]
        normal = np.cross(across, fingers_dir) if s == "r" else np.cross(fingers_dir, across)
        dorsal_rest = rotate_unchecked(_conj(hand_q), -normal)  # in the hand joint's frame
        orient = np.empty((batch, len(VR_JOINTS), 4))
        children = {"thumb-metacarpal": ("thumb_01", "thumb-proximal"), "thumb-proximal": ("thumb_02", "thumb-distal"),
                    "thumb-distal": ("thumb_03", "thumb-tip")}
        for f, sk in (("index", "index"), ("middle", "middle"), ("ring", "ring"), ("little", "pinky")):
            children[f"{f}-proximal"] = (f"{sk}_01", f"{f}-intermediate")
            children[f"{f}-intermediate"] = (f"{sk}_02", f"{f}-distal")
            children[f"{f}-distal"] = (f"{sk}_03", f"{f}-tip")
        for k, name in enumerate(VR_JOINTS):
            if name in children:
                joint, child = children[name]
                q = rot[:, ix[f"{joint}_{s}"]]
                bone = joints[child] - joints[name]
            else:
                q = hand_q
                bone = fingers_dir
            orient[:, k] = _basis_quat(bone, rotate_unchecked(q, dorsal_rest))
        openxr[s] = (positions, orient)
    return GroundTruth(landmarks=lm, openxr=openxr, view=view)


def random_vectors(rng: np.random.Generator, batch: int, *, reach: float = 0.9,
                   skeleton: Skeleton | None = None) -> F64:
    """``(batch, N)`` vectors over the whole range of every dim the encoder estimates
    (arm, palm, fingers, head, body; face and mouth at their defaults), with wrist targets
    inside ``reach`` × the arm length of ``skeleton`` (so the IK solves them exactly),
    palm vector parts of length ≤ 0.97 (inside the 0.98 clamp), and index…pinky joints
    within their anatomical ranges (spec §4.3 "Joint ranges": base knuckles, PIPs and DIPs
    bent back at most :data:`~posewire.producers.hand.MCP_EXTENSION_DEG`,
    :data:`~posewire.producers.hand.PIP_EXTENSION_DEG` and
    :data:`~posewire.producers.hand.DIP_EXTENSION_DEG`; so no hand reads as depth-flipped)."""
    from posewire.codec.calibration import arm_to_normalized, units
    from posewire.codec.registry import REGISTRY
    from posewire.codec.vector import DEFAULTS, LOWER, UPPER
    from posewire.consumers.pose import decode_plan
    from posewire.producers.hand import DIP_EXTENSION_DEG, FINGER_CHAINS, MCP_EXTENSION_DEG, PIP_EXTENSION_DEG

    skel = skeleton if skeleton is not None else helix_humanoid()
    plan = decode_plan(skel)
    vec = rng.uniform(LOWER, UPPER, (batch, DEFAULTS.size))
    for d in REGISTRY.dimensions:
        if d.row.group in ("face", "mouth"):
            vec[:, d.index] = DEFAULTS[d.index]
    arm_units = units(plan.calibration)
    for s in ("l", "r"):  # spec §4.3 "Joint ranges": [−extension, flexion limit], as fractions of it
        for f in FINGER_CHAINS:
            for joint, back in (("fold", MCP_EXTENSION_DEG), ("curl", PIP_EXTENSION_DEG),
                                ("distal", DIP_EXTENSION_DEG)):
                at = REGISTRY.index(f"g_{f}_{joint}_{s}")
                low = -back / float(REGISTRY.by_id[f"g_{f}_{joint}_{s}"].row.angle_deg or 1.0)
                vec[:, at] = low + (vec[:, at] + 1.0) * 0.5 * (1.0 - low)
    for k, s in enumerate(("l", "r")):
        palm = [REGISTRY.index(f"w_q{a}_{s}") for a in "xyz"]
        v = rng.normal(size=(batch, 3))
        v *= (0.97 * rng.uniform(0, 1, batch) ** (1 / 3) / np.linalg.norm(v, axis=-1))[:, None]
        vec[:, palm] = v
        length = plan.upper_len[k] + plan.lower_len[k]
        lo = abs(plan.upper_len[k] - plan.lower_len[k]) * 1.2
        direction = rng.normal(size=(batch, 3))
        direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
        dist = rng.uniform(lo, reach * length, batch)
        target = plan.shoulder[k] + direction * dist[:, None] - plan.neck
        n = arm_to_normalized(target, arm_units, side=s)  # type: ignore[arg-type]
        vec[:, [REGISTRY.index(f"a_{a}_{s}") for a in "xyz"]] = np.clip(n, -1.0, 1.0)
    return vec


def moving_vectors(rng: np.random.Generator, frames: int, *, key_every: int = 15,
                   skeleton: Skeleton | None = None) -> F64:
    """``(frames, N)`` vectors of a performer moving as a camera films one: key poses of
    :func:`random_vectors` every ``key_every`` frames (0.5 s at 30 fps by default), eased
    between (``½ − ½·cos(π·t)`` of the way, so each value moves smoothly from key to key).
    Every frame keeps :func:`random_vectors`' bounds on the palm and the folds (they hold
    for a mix of two keys); a wrist between two keys may pass nearer its shoulder than a key."""
    if key_every < 1 or frames < 1:
        raise UsageError("usage.bad_option", "frames and key_every must be >= 1")
    keys = random_vectors(rng, frames // key_every + 2, skeleton=skeleton)
    t = np.arange(frames) / key_every
    k = np.floor(t).astype(np.intp)
    ease = (0.5 - 0.5 * np.cos(np.pi * (t - k)))[:, None]
    out: F64 = keys[k] * (1.0 - ease) + keys[k + 1] * ease
    return out


def _conj(q: F64) -> F64:
    out: F64 = q * np.array([1.0, -1.0, -1.0, -1.0])
    return out


def noise(lm: HolisticLandmarks, rng: np.random.Generator, *, xy: float = 0.002,
          depth: float = 0.006) -> HolisticLandmarks:
    """``lm`` with independent Gaussian noise on every point: ``xy`` metres on x and y,
    ``depth`` on z (MediaPipe-like: depth is the least certain), hands in metres."""
    sigma = np.array([xy, xy, depth])

    def jitter(a: F64) -> F64:
        out: F64 = a + rng.normal(size=a.shape) * sigma
        return out

    return replace(lm, pose_world=jitter(lm.pose_world), left_hand=jitter(lm.left_hand),
                   right_hand=jitter(lm.right_hand), face=None if lm.face is None else jitter(lm.face))


def thumb_roll_error_deg(got: F64, want: F64) -> F64:
    """Error (degrees) of normalized ``g_thumb_roll`` values ``got`` against ``want``
    (same shape), up to the thumb's double cover (spec §4.3): the bend axis and its
    opposite describe the same thumb, so ``(roll, curl)`` and ``(roll ∓ 180°, −curl)``
    are one pose, and near ``|roll| = 90°`` noise flips between them (the producer keeps
    ``|roll| ≤ 90°``, then clamps). The smaller of the two distances."""
    deg = float(REGISTRY.by_id["g_thumb_roll_r"].row.angle_deg or 0.0)
    direct = np.abs(got - want) * deg
    flipped = np.abs(got * deg - (want * deg - np.copysign(180.0, want)))
    out: F64 = np.minimum(direct, flipped)
    return out


def thumb_roll_seen(vectors: F64, side: str, *, margin_deg: float = 1.0) -> NDArray[np.bool_]:
    """Which rows of normalized vectors ``(B, D)`` bend the ``side`` ("l" or "r") thumb
    enough for a producer to see its roll (spec §4.3 "Thumb": the bend axis shows where
    ``|sin c| + |sin t|`` of the MCP and IP bends reaches ``2·sin 8°``), with ``margin_deg``
    of margin on the 8°."""
    bends = [np.radians(vectors[:, REGISTRY.index(f"g_thumb_{k}_{side}")]
                        * float(REGISTRY.by_id[f"g_thumb_{k}_{side}"].row.angle_deg or 0.0))
             for k in ("curl", "distal")]
    seen: NDArray[np.bool_] = (np.abs(np.sin(bends[0])) + np.abs(np.sin(bends[1]))
                               > 2.0 * np.sin(np.radians(THUMB_ROLL_MIN_CURL_DEG + margin_deg)))
    return seen
