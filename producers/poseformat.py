"""Read MediaPipe Holistic recordings in the ``.pose`` format (PyPI ``pose-format``) and
turn them into posewire recordings (spec §4 dims via :mod:`posewire.producers.landmarks`).

File layout (checked on the real files in ``shared/data``): one body of shape
``(frames, people, points, 3)`` with a confidence ``(frames, people, points)``; the points
are the components, in header order, ``POSE_LANDMARKS`` (33), ``FACE_LANDMARKS`` (468 or
478), ``LEFT_HAND_LANDMARKS`` (21), ``RIGHT_HAND_LANDMARKS`` (21), ``POSE_WORLD_LANDMARKS``
(33; absent from reduced-Holistic files, whose world landmarks are then estimated from
the image landmarks, noted). ``pose_format.utils.holistic`` stores image landmarks as ``(x·W, y·H, z)`` and world
landmarks the same way, so here:

* world metres = ``(x / W, y / H, z)`` (W, H = the header's video width and height);
* isotropic image units (pixels) = ``(x, y, z · W)`` (MediaPipe's z has the scale of x);
* confidence 0 marks a missing point -> NaN; the pose confidence is the visibility.

Reduced layouts (pose-format's own component reduction: any subset of a component's
points, a face of any size, no pose at all) are read by point **name**: each present point
is placed at its MediaPipe index (pose and hand names as MediaPipe's ``PoseLandmark`` /
``HandLandmark``, face points named by their mesh index); what is absent is NaN, so it is
not estimated and is reported (spec §3.1); a note lists what the file lacks.

Hand labels are the subject's own left/right (Holistic assigns them from the pose: the
left hand's wrist lies at pose 15). Only person 0 is read.

The recording (:mod:`posewire.producers.recording`) gets one line per frame, ``t_us = round(i /
fps · 10⁶)``, the dims estimated in that frame (NaN dims are left out of the mask) and the
tracking condition (spec §3.4.2); the header carries the measured calibration (§4.1).
"""

from __future__ import annotations

import importlib
import math
import struct
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.errors import UsageError
from posewire.codec.morph import FACE_DIM_INDICES, N_ARKIT
from posewire.codec.mouthing import mix_from_mouth
from posewire.producers.filter import FilterResult, RotationFilter, filter_vectors
from posewire.producers.hand import bone_length_ratios, estimate_depth_gain
from posewire.producers.landmarks import (
    HolisticLandmarks,
    LandmarkResult,
    image_in_frame,
    image_to_world_scale,
    landmarks_to_vectors,
)
from posewire.producers.recording import RecordedFrame, write_recording

__all__ = [
    "COMPONENTS",
    "POSE_DEPTH_SCALES",
    "REFERENCE_SHOULDER_WIDTH",
    "PoseFile",
    "RecordSummary",
    "pose_depth_scale",
    "pose_file_to_recording",
    "pose_to_landmarks",
    "read_blendshapes",
    "read_pose_file",
    "with_blendshapes",
]

F64 = NDArray[np.float64]

#: Component names of a MediaPipe Holistic ``.pose`` file and their full point counts.
COMPONENTS: dict[str, tuple[int, ...]] = {
    "POSE_LANDMARKS": (33,),
    "FACE_LANDMARKS": (468, 478),
    "LEFT_HAND_LANDMARKS": (21,),
    "RIGHT_HAND_LANDMARKS": (21,),
    "POSE_WORLD_LANDMARKS": (33,),
}
#: MediaPipe's pose landmark names, in index order (the point names pose-format writes).
POSE_NAMES: tuple[str, ...] = (
    "NOSE", "LEFT_EYE_INNER", "LEFT_EYE", "LEFT_EYE_OUTER", "RIGHT_EYE_INNER", "RIGHT_EYE",
    "RIGHT_EYE_OUTER", "LEFT_EAR", "RIGHT_EAR", "MOUTH_LEFT", "MOUTH_RIGHT", "LEFT_SHOULDER",
    "RIGHT_SHOULDER", "LEFT_ELBOW", "RIGHT_ELBOW", "LEFT_WRIST", "RIGHT_WRIST", "LEFT_PINKY",
    "RIGHT_PINKY", "LEFT_INDEX", "RIGHT_INDEX", "LEFT_THUMB", "RIGHT_THUMB", "LEFT_HIP",
    "RIGHT_HIP", "LEFT_KNEE", "RIGHT_KNEE", "LEFT_ANKLE", "RIGHT_ANKLE", "LEFT_HEEL",
    "RIGHT_HEEL", "LEFT_FOOT_INDEX", "RIGHT_FOOT_INDEX")
#: MediaPipe's hand landmark names, in index order.
HAND_NAMES: tuple[str, ...] = (
    "WRIST", "THUMB_CMC", "THUMB_MCP", "THUMB_IP", "THUMB_TIP", "INDEX_FINGER_MCP",
    "INDEX_FINGER_PIP", "INDEX_FINGER_DIP", "INDEX_FINGER_TIP", "MIDDLE_FINGER_MCP",
    "MIDDLE_FINGER_PIP", "MIDDLE_FINGER_DIP", "MIDDLE_FINGER_TIP", "RING_FINGER_MCP",
    "RING_FINGER_PIP", "RING_FINGER_DIP", "RING_FINGER_TIP", "PINKY_MCP", "PINKY_PIP", "PINKY_DIP",
    "PINKY_TIP")
_NAMES: dict[str, tuple[str, ...]] = {
    "POSE_LANDMARKS": POSE_NAMES, "POSE_WORLD_LANDMARKS": POSE_NAMES,
    "LEFT_HAND_LANDMARKS": HAND_NAMES, "RIGHT_HAND_LANDMARKS": HAND_NAMES,
}


def _full_indices(name: str, points: list[str]) -> tuple[NDArray[np.intp], int]:
    """Where each point of a (possibly reduced) component goes in MediaPipe's full layout,
    and that layout's size. Unknown point names raise ``usage.shape``."""
    full = COMPONENTS[name]
    if name == "FACE_LANDMARKS":
        size = max(full) if any(p.isdigit() and int(p) >= min(full) for p in points) else min(full)
        if len(points) in full and all(not p.isdigit() for p in points):  # unnamed full mesh
            return np.arange(len(points)), len(points)
        known = {str(i): i for i in range(size)}
    else:
        size = full[0]
        names = _NAMES[name]
        if len(points) == size and not set(points) & set(names):  # unnamed full component
            return np.arange(size), size
        known = {n: i for i, n in enumerate(names)}
    unknown = [p for p in points if p not in known]
    if unknown or len(set(points)) != len(points):
        raise UsageError("usage.shape", f"{name} has points this reader does not know: {unknown[:5] or 'repeated'}",
                         path=name)
    return np.array([known[p] for p in points], dtype=np.intp), size


@dataclass(frozen=True)
class PoseFile:
    """A ``.pose`` file read into landmark arrays: ``landmarks`` (MediaPipe camera axes,
    NaN = missing), the pose image landmarks ``pose_image (B, 33, 3)`` in isotropic pixels,
    ``fps``, video ``width``/``height`` in pixels, ``people`` in the file, ``notes`` on
    what was estimated (a reduced-Holistic file without world landmarks)."""

    landmarks: HolisticLandmarks
    pose_image: F64
    fps: float
    width: int
    height: int
    people: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordSummary:
    """What :func:`pose_file_to_recording` did: the conversion result (vectors, tracking,
    calibration, report; vectors filtered when asked), fps, the conversion time per frame
    in seconds, and the filter's jitter report (``None`` unfiltered)."""

    result: LandmarkResult
    fps: float
    frames: int
    seconds_per_frame: float
    out_path: Path
    filtered: FilterResult | None = None


def _pose_format() -> Any:
    try:
        return importlib.import_module("pose_format")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError("usage.dependency",
                         "reading .pose files needs pose-format, which is not installed: "
                         "pip install 'posewire[record]'") from exc


def pose_to_landmarks(pose: Any) -> PoseFile:
    """Landmark arrays from a ``pose_format.Pose`` of MediaPipe Holistic output
    (module docstring for units). Missing components raise ``usage.bad_option``; the
    face is optional."""
    header = pose.header
    width, height = int(header.dimensions.width), int(header.dimensions.height)
    if width <= 0 or height <= 0:
        raise UsageError("usage.bad_option", f"the .pose header has no video size ({width}x{height})")
    data = np.asarray(np.ma.getdata(pose.body.data), dtype=np.float64)
    conf = np.asarray(np.ma.getdata(pose.body.confidence), dtype=np.float64)
    if data.ndim != 4 or data.shape[-1] < 3:
        raise UsageError("usage.shape", f"expected body data (frames, people, points, 3), got {data.shape}")
    people = int(data.shape[1])
    data, conf = data[:, 0, :, :3], conf[:, 0]
    offsets: dict[str, tuple[int, int]] = {}
    point_names: dict[str, list[str]] = {}
    start = 0
    for comp in header.components:
        offsets[str(comp.name)] = (start, start + len(comp.points))
        point_names[str(comp.name)] = [str(p) for p in comp.points]
        start += len(comp.points)

    notes: list[str] = []
    frames = data.shape[0]

    def component(name: str, *, required: bool = True) -> tuple[F64, F64] | None:
        if name not in offsets:
            if required:
                raise UsageError("usage.bad_option", f"the .pose file has no {name} component "
                                 f"(has {sorted(offsets)})", path=name)
            return None
        lo, hi = offsets[name]
        where, size = _full_indices(name, point_names[name])
        points = np.full((frames, size, 3), np.nan)
        c = np.zeros((frames, size))
        points[:, where], c[:, where] = data[:, lo:hi], conf[:, lo:hi]
        points[c <= 0.0] = np.nan  # confidence 0 (or a point the layout left out) is missing
        if where.size < size:
            notes.append(f"{name}: {where.size} of {size} points in the file (a reduced layout); "
                         "the others are missing")
        return points, c

    def image(name: str, *, required: bool = True) -> F64 | None:
        got = component(name, required=required)
        if got is None:
            return None
        scaled: F64 = got[0] * np.array([1.0, 1.0, float(width)])  # isotropic pixels: z has x's scale
        return scaled

    pose_got = component("POSE_LANDMARKS", required=False)
    if pose_got is None:  # hands (and face) only: no body, hands in the camera frame (spec §4.2)
        pose_image = np.full((frames, 33, 3), np.nan)
        pose_visibility = np.zeros((frames, 33))
        notes.append("no POSE_LANDMARKS: no arm, head or body dims; hands in the camera frame")
    else:
        pose_image = pose_got[0] * np.array([1.0, 1.0, float(width)])
        pose_visibility = pose_got[1]
    world_got = component("POSE_WORLD_LANDMARKS", required=False)
    if world_got is not None:
        world = world_got[0] / np.array([float(width), float(height), 1.0])  # undo (x·W, y·H)
        visibility = world_got[1]
    elif pose_got is None:
        world, visibility = pose_image.copy(), pose_visibility
    else:
        # reduced Holistic layout: world landmarks estimated from the image landmarks
        world, scale = _world_from_image(pose_image)
        visibility = pose_visibility
        if math.isnan(scale):
            notes.append("no POSE_WORLD_LANDMARKS and no frame with both shoulders: arms and body not estimated")
        else:
            notes.append("no POSE_WORLD_LANDMARKS (reduced Holistic layout): world landmarks estimated from the "
                         f"image landmarks about the hip midpoint, {scale:.5f} m per pixel from a "
                         f"{REFERENCE_SHOULDER_WIDTH} m shoulder width, depth × "
                         f"{pose_depth_scale(pose_image) or 1.0:.2f} (the body's bones most rigid)")
    left, right = image("LEFT_HAND_LANDMARKS", required=False), image("RIGHT_HAND_LANDMARKS", required=False)
    if left is None or right is None:
        notes.append("no " + " and ".join(n for n, h in (("LEFT_HAND_LANDMARKS", left), ("RIGHT_HAND_LANDMARKS", right))
                                         if h is None) + ": that hand is not estimated")
    left = np.full((frames, 21, 3), np.nan) if left is None else left
    right = np.full((frames, 21, 3), np.nan) if right is None else right
    if pose_got is None and not (np.isfinite(left).any() or np.isfinite(right).any()):
        raise UsageError("usage.bad_option", "the .pose file has neither POSE_LANDMARKS nor hands: nothing to encode")
    landmarks = HolisticLandmarks(
        pose_world=world,
        pose_visibility=visibility,
        left_hand=left,
        right_hand=right,
        face=image("FACE_LANDMARKS", required=False),
        hand_scale=image_to_world_scale(pose_image, world),
        pose_image=pose_image,
        pose_in_frame=image_in_frame(pose_image, width, height),
    )
    return PoseFile(landmarks=landmarks, pose_image=pose_image, fps=float(pose.body.fps), width=width,
                    height=height, people=people, notes=tuple(notes))


#: Shoulder width (metres) that scales image landmarks into world ones when a file has no
#: ``POSE_WORLD_LANDMARKS`` (the reference avatar's, spec §4.1); the dims do not depend on
#: it (arm units scale with the person), only the metre figures in notes do.
REFERENCE_SHOULDER_WIDTH = 0.36


#: Pose depth scales tried on image landmarks without world landmarks (0.00, 0.05 … 1.50).
POSE_DEPTH_SCALES = np.round(np.arange(0.0, 1.5 + 1e-9, 0.05), 2)
#: The body's bones whose rigidity picks the pose depth scale: shoulders, upper arms,
#: forearms, the trunk's sides, the hips.
_BODY_BONES = ((11, 12), (11, 13), (13, 15), (12, 14), (14, 16), (11, 23), (12, 24), (23, 24))


def pose_depth_scale(pose_image: F64) -> float | None:
    """The factor on the depth of MediaPipe's pose *image* landmarks ``(B, 33, 3)`` that keeps
    the body's bones most constant over frames (the rigidity rule of spec §4.3's hand depth
    gain, on :data:`_BODY_BONES` and :data:`POSE_DEPTH_SCALES`); None with too few frames.
    MediaPipe says that depth has "roughly the same scale as x"; on real recordings the
    bones stay most rigid at 0.15–0.8 of it."""
    return estimate_depth_gain(bone_length_ratios(pose_image, bones=_BODY_BONES, gains=POSE_DEPTH_SCALES),
                               gains=POSE_DEPTH_SCALES)


def _world_from_image(pose_image: F64) -> tuple[F64, float]:
    """World-like pose landmarks ``(B, 33, 3)`` (metres, MediaPipe axes, origin at the hip
    midpoint, else the shoulder midpoint) from isotropic image landmarks, with their depth
    scaled by :func:`pose_depth_scale` (the caller notes it), and the metres per pixel."""
    shoulders = np.linalg.norm(pose_image[:, 11] - pose_image[:, 12], axis=-1)
    finite = shoulders[np.isfinite(shoulders) & (shoulders > 0)]
    if finite.size == 0:  # no shoulders to scale by: no world landmarks (arms, body not estimated)
        return np.full(pose_image.shape, np.nan), math.nan
    scale = REFERENCE_SHOULDER_WIDTH / float(np.median(finite))
    hips = 0.5 * (pose_image[:, 23] + pose_image[:, 24])
    centre = np.where(np.isfinite(hips).all(-1, keepdims=True), hips, 0.5 * (pose_image[:, 11] + pose_image[:, 12]))
    depth = pose_depth_scale(pose_image)
    out: F64 = (pose_image - centre[:, None]) * scale * np.array([1.0, 1.0, 1.0 if depth is None else depth])
    return out, scale


def read_pose_file(path: str | Path) -> PoseFile:
    """Read a MediaPipe Holistic ``.pose`` file (see :func:`pose_to_landmarks`)."""
    module = _pose_format()
    buffer = Path(path).read_bytes()
    try:
        pose = module.Pose.read(buffer)
    except Exception as exc:  # the reader raises assorted errors on foreign bytes: no internals shown
        # ran past the end of the bytes: struct (the header) or numpy (the frames)
        short = isinstance(exc, struct.error) or (isinstance(exc, TypeError) and "buffer is too small" in str(exc))
        why = (f"it ends early ({len(buffer)} bytes; truncated or damaged)" if short
               else f"pose-format cannot parse it ({type(exc).__name__})")
        raise UsageError("usage.bad_option", f"not a readable .pose file: {why}", path=str(path)) from exc
    return pose_to_landmarks(pose)


def read_blendshapes(path: str | Path) -> F64:
    """ARKit weights ``(B, 52)`` in ``ARKIT_CHANNELS`` order from a blendshape file of
    ``tools/face_blendshapes.py`` (JSON: ``channels``, ``frames`` of weights or null; a null
    frame is a NaN row: no face)."""
    import json

    from posewire.codec.registry import ARKIT_CHANNELS

    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        order = [doc["channels"].index(name) for name in ARKIT_CHANNELS]
        rows = [[math.nan] * len(doc["channels"]) if f is None else f for f in doc["frames"]]
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(doc["channels"]))[:, order]
    except (KeyError, ValueError, TypeError) as exc:
        raise UsageError("usage.bad_option", f"not a blendshape file ({type(exc).__name__})", path=str(path)) from exc


def with_blendshapes(result: LandmarkResult, weights: ArrayLike) -> LandmarkResult:
    """The face and mouth dims of ARKit ``weights (B, 52)`` (``ARKIT_CHANNELS`` order) put into
    ``result`` where a row is finite (spec §4.6, as :class:`posewire.producers.live.LiveEncoder`
    does), tracked there."""
    from posewire.producers.face import blendshape_dims

    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (result.vectors.shape[0], N_ARKIT):
        raise UsageError("usage.shape", f"expected blendshapes ({result.vectors.shape[0]}, {N_ARKIT}), "
                         f"got {weights.shape}")
    seen: NDArray[np.bool_] = np.asarray(np.isfinite(weights).all(-1))
    vectors = result.vectors.copy()
    face, _ = blendshape_dims(np.where(seen[:, None], weights, 0.0))
    vectors[np.ix_(seen, FACE_DIM_INDICES)] = face[np.ix_(seen, FACE_DIM_INDICES)]
    tracking = dict(result.tracking)
    for part in ("face", "mouth"):
        tracking[part] = np.where(seen, "tracked", tracking[part])
    return replace(result, vectors=vectors, tracking=tracking)


def pose_file_to_recording(
    path: str | Path, out_path: str | Path, *, visibility_threshold: float = 0.5, filter: bool = False,
    mirrored: Literal["report", "flip"] = "report", blendshapes: ArrayLike | None = None,
    mouthing: bool = False,
) -> RecordSummary:
    """Convert a ``.pose`` file into a posewire recording at ``out_path``: one frame per
    pose frame with the estimated dims and the tracking condition; the header carries
    the calibration measured from the person (spec §4.1). ``filter=True`` smooths the
    vectors with the One-Euro filter (:func:`posewire.producers.filter.filter_vectors`;
    off by default for files) and reports the jitter before and after; ``mirrored`` as in
    :func:`posewire.producers.landmarks.landmarks_to_vectors`. ``blendshapes``: ARKit weights
    ``(B, 52)`` per frame in ``ARKIT_CHANNELS`` order (a NaN row: no face), e.g. MediaPipe's
    blendshape model run on the file's face mesh (``tools/face_blendshapes.py``), encoded as
    the live producer encodes them (spec §4.6: face and mouth tracked); ``mouthing``: each frame
    with a tracked mouth also carries the viseme mix estimated from it (spec §4.7,
    :func:`posewire.codec.mouthing.mix_from_mouth`; ``LiveEncoder(mouthing=True)``). Returns a
    summary."""
    pose_file = read_pose_file(path)
    if pose_file.fps <= 0:
        raise UsageError("usage.bad_option", f"the .pose file has no frame rate ({pose_file.fps})", path=str(path))
    started = time.perf_counter()
    times = np.arange(pose_file.landmarks.batch) / pose_file.fps
    # spec §7.3 "Smoothing": a filtered recording smooths its chest frame too
    result = landmarks_to_vectors(pose_file.landmarks, visibility_threshold=visibility_threshold, mirrored=mirrored,
                                  chest_filter=RotationFilter() if filter else None, times=times if filter else None)
    if pose_file.notes:
        result = replace(result, report=replace(result.report, notes=(*pose_file.notes, *result.report.notes)))
    if blendshapes is not None:
        result = with_blendshapes(result, blendshapes)
    elapsed = time.perf_counter() - started
    filtered = None
    if filter:
        times = np.arange(result.vectors.shape[0]) / pose_file.fps
        filtered = filter_vectors(result.vectors, times)
        result = replace(result, vectors=filtered.vectors)
    vectors = result.vectors
    mixes: list[tuple[float, ...] | None] = [None] * vectors.shape[0]
    if mouthing:  # spec §4.7 "A mix from the measured mouth", on the frames with a mouth
        mouth = np.asarray(result.tracking["mouth"] == "tracked")
        if mouth.any():
            shares, authored = mix_from_mouth(vectors[mouth])
            vectors = vectors.copy()
            vectors[mouth] = authored
            for i, row in zip(np.flatnonzero(mouth).tolist(), shares, strict=True):
                mixes[i] = tuple(float(x) for x in row) if row.any() else None
    frames = [
        RecordedFrame.from_vector(round(i / pose_file.fps * 1e6), vectors[i],
                                  replace(result.conditions(i), mouthing=mixes[i]))
        for i in range(vectors.shape[0])
    ]
    write_recording(out_path, frames, calibration=result.calibration.calibration)
    batch = max(result.vectors.shape[0], 1)
    return RecordSummary(result=result, fps=pose_file.fps, frames=result.vectors.shape[0],
                         seconds_per_frame=elapsed / batch, out_path=Path(out_path), filtered=filtered)
