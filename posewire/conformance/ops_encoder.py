"""Conformance operation ``encoder.landmarks`` (spec §6.10): the producer's encoder as a kit op.

MediaPipe landmarks of one or more frames (and, per frame, the face blendshapes) with an
optional fixed calibration -> the normalized dims of each frame, its tracking states, and
the report counts summed over the frames. Each frame is encoded on its own, as a live
producer does (:func:`posewire.producers.landmarks_single.encode1`, the same maths as the
batch encoder, spec §4.1–§4.5; face and mouth from the blendshapes,
:func:`posewire.producers.face.blendshape_dims1`, spec §4.6).

Input (JSON, spec §6.10): ``frames`` a non-empty array of objects

* ``pose_world``: 33 points ``[x, y, z]`` in metres, MediaPipe camera axes (x right, y down,
  z away from the camera); ``pose_visibility``: 33 numbers; ``pose_image`` (optional): 33
  points ``[x, y]`` or ``[x, y, z]`` in the hands' units and axes; ``pose_in_frame``
  (optional, nullable): 33 booleans, whether each pose landmark lies inside the camera's image;
* ``left_hand`` / ``right_hand``: 21 points or ``null`` (no hand), the subject's own
  left/right hand as MediaPipe Holistic labels them;
* ``face`` (optional, nullable): 468 or 478 face-mesh points (only 33, 263, 10 and 152
  are read);
* ``blendshapes`` (optional, nullable): ARKit name -> weight (missing names are 0, ``_neutral`` ignored);
  ``null`` means the face model ran and found no face (face and mouth ``lost``).

A point is ``null`` where it is missing. ``calibration`` (optional, nullable): the four
``calibration.units`` distances; absent or null = the reference avatar's (spec §4.1).
``mirrored``: ``"report"`` (default) or ``"flip"``; ``visibility_threshold`` (default 0.5).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Literal

import numpy as np

from posewire.codec import calibration
from posewire.codec.errors import UsageError
from posewire.codec.morph import FACE_DIM_INDICES
from posewire.codec.registry import ARKIT_CHANNELS, REGISTRY, TRACKING_PARTS
from posewire.producers.face import blendshape_dims1
from posewire.producers.landmarks import HolisticLandmarks, LandmarkCalibration
from posewire.producers.landmarks_single import encode1

__all__ = ["OPS", "encode_frames"]

_IDS = [d.id for d in REGISTRY.dimensions]
_ARKIT_AT = {name: k for k, name in enumerate(ARKIT_CHANNELS)}
_FRAME_KEYS = {"pose_world", "pose_visibility", "pose_image", "pose_in_frame", "left_hand", "right_hand", "face",
               "blendshapes"}


def _shape(message: str, path: str) -> UsageError:
    return UsageError("usage.shape", message, path=path)


def _array(raw: Any, counts: tuple[int, ...], path: str, what: str) -> list[Any]:
    """``raw`` as a list of one of ``counts`` entries: not an array is a wrong JSON type,
    ``usage.bad_option`` (spec §6.5 rule 1); an array of another length ``usage.shape``
    (rule 4, §6.10)."""
    if not isinstance(raw, list):
        raise UsageError("usage.bad_option", f"expected an array of {what}", path=path)
    if len(raw) not in counts:
        raise _shape(f"expected an array of {' or '.join(map(str, counts))} {what}", path)
    return raw


def _points(raw: Any, counts: tuple[int, ...], path: str, width: tuple[int, ...] = (3,)) -> np.ndarray:
    """An array ``(K, 3)`` of points (null, or a point with a null coordinate = missing = NaN,
    spec §6.10); a point that is not an array (nor null) or a coordinate that is not a number
    (nor null) ``usage.bad_option``, ``K`` not one of ``counts`` or a point of the wrong length
    ``usage.shape`` (spec §6.5 rules 1 and 4)."""
    out = np.full((len(_array(raw, counts, path, "points")), 3), np.nan)
    for i, p in enumerate(raw):
        if p is None:
            continue
        if not isinstance(p, list):
            raise UsageError("usage.bad_option", "a point is an array of numbers or null", path=f"{path}[{i}]")
        if len(p) not in width:
            raise _shape(f"a point is an array of {' or '.join(map(str, width))} numbers or null", f"{path}[{i}]")
        for k, x in enumerate(p):
            if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
                raise UsageError("usage.bad_option", "expected a number or null", path=f"{path}[{i}][{k}]")
        if any(x is None for x in p):  # spec §6.10: a point with a missing coordinate is missing
            continue
        out[i, :len(p)] = [float(x) for x in p]
        if len(p) == 2:
            out[i, 2] = 0.0
    return out


def _hand(raw: Any, path: str) -> np.ndarray:
    return np.full((21, 3), np.nan) if raw is None else _points(raw, (21,), path)


def _blendshapes(raw: dict[str, Any], path: str) -> np.ndarray:
    weights = np.zeros(len(ARKIT_CHANNELS))
    for name, w in raw.items():
        if name != "_neutral" and name not in _ARKIT_AT:
            raise UsageError("usage.unknown_id", f"not an ARKit channel: {name!r}", path=f"{path}.{name}")
        # spec §6.5 rule 1: an object of numbers holds numbers only, MediaPipe's _neutral included
        if isinstance(w, bool) or not isinstance(w, int | float):
            raise UsageError("usage.bad_option", "expected a number", path=f"{path}.{name}")
        if name == "_neutral":  # MediaPipe's extra category: its value is not used (spec §6.10)
            continue
        weights[_ARKIT_AT[name]] = float(w)
    return weights


def _calibration(raw: dict[str, Any] | None) -> LandmarkCalibration:
    cal = calibration.REFERENCE_CALIBRATION if raw is None else calibration.Calibration(
        hand_length=raw.get("hand_length"), torso_length=raw.get("torso_length"),
        arm_length=raw.get("arm_length"), shoulder_width=raw.get("shoulder_width"))
    return LandmarkCalibration(cal, calibration.units(cal))


def encode_frames(inp: dict[str, Any]) -> dict[str, Any]:
    """The op (module docstring)."""
    frames = inp["frames"]
    if not isinstance(frames, list):
        raise UsageError("usage.bad_option", "frames is an array of frame objects", path="frames")
    if not frames:
        raise _shape("frames must be a non-empty array of frame objects", "frames")
    mirrored: Literal["report", "flip"] = inp.get("mirrored", "report")
    if mirrored not in ("report", "flip"):
        raise UsageError("usage.bad_option", "mirrored must be 'report' or 'flip'", path="mirrored")
    threshold = float(inp.get("visibility_threshold", 0.5))
    cal = _calibration(inp.get("calibration"))
    out_frames: list[dict[str, Any]] = []
    clamped: Counter[str] = Counter()
    degenerate: Counter[str] = Counter()
    for f, frame in enumerate(frames):
        at = f"frames[{f}]"
        if not isinstance(frame, dict):
            raise UsageError("usage.bad_option", "a frame is an object", path=at)
        for key in frame:
            if key not in _FRAME_KEYS:
                raise UsageError("usage.bad_option", f"unknown key {key!r}", path=f"{at}.{key}")
        for key in ("pose_world", "pose_visibility", "left_hand", "right_hand"):
            if key not in frame:
                raise UsageError("usage.bad_option", f"{key!r} is required", path=f"{at}.{key}")
        pose = _points(frame["pose_world"], (33,), f"{at}.pose_world")
        vis_raw = _array(frame["pose_visibility"], (33,), f"{at}.pose_visibility", "visibilities")
        for i, v in enumerate(vis_raw):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise UsageError("usage.bad_option", "expected a number or null", path=f"{at}.pose_visibility[{i}]")
        vis = np.array([math.nan if v is None else float(v) for v in vis_raw])
        image = frame.get("pose_image")
        face = frame.get("face")
        in_frame = frame.get("pose_in_frame")
        if in_frame is not None:  # spec §6.5: a wrong JSON type bad_option, a wrong length shape
            for i, b in enumerate(_array(in_frame, (33,), f"{at}.pose_in_frame", "booleans")):
                if not isinstance(b, bool):
                    raise UsageError("usage.bad_option", "expected a boolean", path=f"{at}.pose_in_frame[{i}]")
        lm = HolisticLandmarks(
            pose[None], vis[None], _hand(frame["left_hand"], f"{at}.left_hand")[None],
            _hand(frame["right_hand"], f"{at}.right_hand")[None],
            None if face is None else _points(face, (468, 478), f"{at}.face")[None], None,
            None if image is None else _points(image, (33,), f"{at}.pose_image", (2, 3))[None],
            None if in_frame is None else np.array([in_frame], dtype=bool))
        result = encode1(lm, cal, visibility_threshold=threshold, mirrored=mirrored)
        row = result.vectors[0]
        states = {part: str(s[0]) for part, s in result.tracking.items()}
        clamped.update(result.report.clamped)
        degenerate.update(result.report.degenerate)
        if "blendshapes" in frame:  # spec §4.6: face and mouth from the face model's blendshapes
            raw = frame["blendshapes"]
            if raw is None:
                states["face"] = states["mouth"] = "lost"
            elif not isinstance(raw, dict):
                raise UsageError("usage.bad_option", "blendshapes is an object or null", path=f"{at}.blendshapes")
            else:
                face_dims, changed = blendshape_dims1(_blendshapes(raw, f"{at}.blendshapes"))
                row = row.copy()
                row[FACE_DIM_INDICES] = face_dims
                clamped.update(changed)
                states["face"] = states["mouth"] = "tracked"
        out_frames.append({
            "values": {_IDS[i]: float(row[i]) for i in range(len(_IDS)) if math.isfinite(row[i])},
            "tracking": {part: states[part] for part in TRACKING_PARTS},
        })
    return {"frames": out_frames, "clamped": dict(sorted((+clamped).items())),
            "degenerate": dict(sorted((+degenerate).items())), "fallback_axes": list(cal.units.fallback_axes)}


OPS = {"encoder.landmarks": encode_frames}
