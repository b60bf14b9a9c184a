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

Hand labels are the subject's own left/right (Holistic assigns them from the pose: the
left hand's wrist lies at pose 15). Only person 0 is read.

The recording (:mod:`posewire.producers.recording`) gets one line per frame, ``t_us = round(i /
fps · 10⁶)``, the dims estimated in that frame (NaN dims are left out of the mask) and the
tracking condition (spec §3.4.2); the header carries the measured calibration (§4.1).
"""

from __future__ import annotations

import importlib
import struct
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.errors import UsageError
from posewire.producers.filter import FilterResult, filter_vectors
from posewire.producers.landmarks import (
    HolisticLandmarks,
    LandmarkResult,
    image_to_world_scale,
    landmarks_to_vectors,
)
from posewire.producers.recording import RecordedFrame, write_recording

__all__ = [
    "COMPONENTS",
    "REFERENCE_SHOULDER_WIDTH",
    "PoseFile",
    "RecordSummary",
    "pose_file_to_recording",
    "pose_to_landmarks",
    "read_pose_file",
]

F64 = NDArray[np.float64]

#: Component names of a MediaPipe Holistic ``.pose`` file and their point counts.
COMPONENTS: dict[str, tuple[int, ...]] = {
    "POSE_LANDMARKS": (33,),
    "FACE_LANDMARKS": (468, 478),
    "LEFT_HAND_LANDMARKS": (21,),
    "RIGHT_HAND_LANDMARKS": (21,),
    "POSE_WORLD_LANDMARKS": (33,),
}


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
    start = 0
    for comp in header.components:
        offsets[str(comp.name)] = (start, start + len(comp.points))
        start += len(comp.points)

    def component(name: str, *, required: bool = True) -> tuple[F64, F64] | None:
        if name not in offsets:
            if required:
                raise UsageError("usage.bad_option", f"the .pose file has no {name} component "
                                 f"(has {sorted(offsets)})", path=name)
            return None
        lo, hi = offsets[name]
        if hi - lo not in COMPONENTS[name]:
            raise UsageError("usage.shape", f"{name} has {hi - lo} points, expected {COMPONENTS[name]}", path=name)
        points, c = data[:, lo:hi].copy(), conf[:, lo:hi]
        points[c <= 0.0] = np.nan  # confidence 0 marks a missing point
        return points, c

    def image(name: str, *, required: bool = True) -> F64 | None:
        got = component(name, required=required)
        if got is None:
            return None
        scaled: F64 = got[0] * np.array([1.0, 1.0, float(width)])  # isotropic pixels: z has x's scale
        return scaled

    notes: list[str] = []
    pose_image = image("POSE_LANDMARKS")
    assert pose_image is not None
    world_got = component("POSE_WORLD_LANDMARKS", required=False)
    if world_got is not None:
        world = world_got[0] / np.array([float(width), float(height), 1.0])  # undo (x·W, y·H)
        visibility = world_got[1]
    else:
        # reduced Holistic layout: world landmarks estimated from the image landmarks
        world, scale = _world_from_image(pose_image)
        pose_conf = component("POSE_LANDMARKS")
        assert pose_conf is not None
        visibility = pose_conf[1]
        notes.append("no POSE_WORLD_LANDMARKS (reduced Holistic layout): world landmarks estimated from the "
                     f"image landmarks about the hip midpoint, {scale:.5f} m per pixel from a "
                     f"{REFERENCE_SHOULDER_WIDTH} m shoulder width")
    left, right = image("LEFT_HAND_LANDMARKS"), image("RIGHT_HAND_LANDMARKS")
    assert left is not None and right is not None
    landmarks = HolisticLandmarks(
        pose_world=world,
        pose_visibility=visibility,
        left_hand=left,
        right_hand=right,
        face=image("FACE_LANDMARKS", required=False),
        hand_scale=image_to_world_scale(pose_image, world),
        pose_image=pose_image,
    )
    return PoseFile(landmarks=landmarks, pose_image=pose_image, fps=float(pose.body.fps), width=width,
                    height=height, people=people, notes=tuple(notes))


#: Shoulder width (metres) that scales image landmarks into world ones when a file has no
#: ``POSE_WORLD_LANDMARKS`` (the reference avatar's, spec §4.1); the dims do not depend on
#: it (arm units scale with the person), only the metre figures in notes do.
REFERENCE_SHOULDER_WIDTH = 0.36


def _world_from_image(pose_image: F64) -> tuple[F64, float]:
    """World-like pose landmarks ``(B, 33, 3)`` (metres, MediaPipe axes, origin at the hip
    midpoint, else the shoulder midpoint) from isotropic image landmarks, and the scale."""
    shoulders = np.linalg.norm(pose_image[:, 11] - pose_image[:, 12], axis=-1)
    finite = shoulders[np.isfinite(shoulders) & (shoulders > 0)]
    if finite.size == 0:
        raise UsageError("usage.bad_option", "no POSE_WORLD_LANDMARKS and no frame with both shoulders: "
                         "cannot estimate world landmarks")
    scale = REFERENCE_SHOULDER_WIDTH / float(np.median(finite))
    hips = 0.5 * (pose_image[:, 23] + pose_image[:, 24])
    centre = np.where(np.isfinite(hips).all(-1, keepdims=True), hips, 0.5 * (pose_image[:, 11] + pose_image[:, 12]))
    out: F64 = (pose_image - centre[:, None]) * scale
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


def pose_file_to_recording(
    path: str | Path, out_path: str | Path, *, visibility_threshold: float = 0.5, filter: bool = False,
    mirrored: Literal["report", "flip"] = "report",
) -> RecordSummary:
    """Convert a ``.pose`` file into a posewire recording at ``out_path``: one frame per
    pose frame with the estimated dims and the tracking condition; the header carries
    the calibration measured from the person (spec §4.1). ``filter=True`` smooths the
    vectors with the One-Euro filter (:func:`posewire.producers.filter.filter_vectors`;
    off by default for files) and reports the jitter before and after; ``mirrored`` as in
    :func:`posewire.producers.landmarks.landmarks_to_vectors`. Returns a summary."""
    pose_file = read_pose_file(path)
    if pose_file.fps <= 0:
        raise UsageError("usage.bad_option", f"the .pose file has no frame rate ({pose_file.fps})", path=str(path))
    started = time.perf_counter()
    result = landmarks_to_vectors(pose_file.landmarks, visibility_threshold=visibility_threshold, mirrored=mirrored)
    if pose_file.notes:
        result = replace(result, report=replace(result.report, notes=(*pose_file.notes, *result.report.notes)))
    elapsed = time.perf_counter() - started
    filtered = None
    if filter:
        times = np.arange(result.vectors.shape[0]) / pose_file.fps
        filtered = filter_vectors(result.vectors, times)
        result = replace(result, vectors=filtered.vectors)
    frames = [
        RecordedFrame.from_vector(round(i / pose_file.fps * 1e6), result.vectors[i], result.conditions(i))
        for i in range(result.vectors.shape[0])
    ]
    write_recording(out_path, frames, calibration=result.calibration.calibration)
    batch = max(result.vectors.shape[0], 1)
    return RecordSummary(result=result, fps=pose_file.fps, frames=result.vectors.shape[0],
                         seconds_per_frame=elapsed / batch, out_path=Path(out_path), filtered=filtered)
