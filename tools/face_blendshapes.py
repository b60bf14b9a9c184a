"""MediaPipe's face blendshape model on the face mesh of a ``.pose`` recording.

A MediaPipe Holistic capture (a ``.pose`` file with the 478-point refined face mesh) has
no ARKit weights: Holistic has no blendshape model. FaceLandmarker's third stage,
``face_blendshapes.tflite`` (inside the pinned ``face_landmarker.task``), reads nothing but
146 of the 478 mesh points (x, y in image pixels) and gives the 52 weights; this script runs
that stage on each frame's mesh, so the live producer's face path (``blendshape_dims``,
spec §4.6) can encode the recording's face and mouth. On a photo the replica matches
FaceLandmarker's own weights to 5e-7 (checked on the astronaut and Grace Hopper photos).

Needs ``ai-edge-litert`` (the TFLite runtime; not a posewire dependency, so run it from a
virtual environment that has it, with posewire installed ``--no-deps`` beside
``pose-format``) and the cached model (``posewire models fetch``)::

    python tools/face_blendshapes.py tests/data/holistic_signer.pose \\
        tests/data/holistic_signer_blendshapes.json

The output is a neutral JSON file: ``channels`` (ARKit names, ``ARKIT_CHANNELS`` order),
``frames`` (one list of 52 weights per frame, or null without a face mesh) and where they
came from. ``posewire generate`` builds the demo recording from it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from posewire.codec.registry import ARKIT_CHANNELS
from posewire.producers.model_files import model_path
from posewire.producers.poseformat import read_pose_file

#: The 146 mesh points the blendshape model reads, in its input order: ``kLandmarksSubsetIdxs``
#: of MediaPipe's ``mediapipe/tasks/cc/vision/face_landmarker/face_blendshapes_graph.cc``.
MODEL_INPUT_POINTS = (
    0, 1, 4, 5, 6, 7, 8, 10, 13, 14, 17, 21, 33, 37, 39, 40, 46, 52, 53, 54, 55, 58, 61, 63, 65, 66, 67, 70, 78, 80,
    81, 82, 84, 87, 88, 91, 93, 95, 103, 105, 107, 109, 127, 132, 133, 136, 144, 145, 146, 148, 149, 150, 152, 153,
    154, 155, 157, 158, 159, 160, 161, 162, 163, 168, 172, 173, 176, 178, 181, 185, 191, 195, 197, 234, 246, 249,
    251, 263, 267, 269, 270, 276, 282, 283, 284, 285, 288, 291, 293, 295, 296, 297, 300, 308, 310, 311, 312, 314,
    317, 318, 321, 323, 324, 332, 334, 336, 338, 356, 361, 362, 365, 373, 374, 375, 377, 378, 379, 380, 381, 382,
    384, 385, 386, 387, 388, 389, 390, 397, 398, 400, 402, 405, 409, 415, 454, 466, 468, 469, 470, 471, 472, 473,
    474, 475, 476, 477)
#: The model's 52 outputs: ``_neutral``, then the 51 ARKit names it has (no ``tongueOut``) in
#: alphabetical order (``kBlendshapeNames`` of the same file).
MODEL_OUTPUTS = ("_neutral", *sorted(name for name in ARKIT_CHANNELS if name != "tongueOut"))


def blendshapes(mesh: np.ndarray, interpreter: object) -> list[list[float] | None]:
    """ARKit weights ``(B, 52)`` in ``ARKIT_CHANNELS`` order for meshes ``(B, 478, 3)`` in
    image pixels (None for a frame whose mesh is incomplete)."""
    inp = interpreter.get_input_details()[0]["index"]  # type: ignore[attr-defined]
    out = interpreter.get_output_details()[0]["index"]  # type: ignore[attr-defined]
    frames: list[list[float] | None] = []
    for points in mesh:
        subset = points[list(MODEL_INPUT_POINTS), :2]
        if not np.isfinite(subset).all():
            frames.append(None)
            continue
        interpreter.set_tensor(inp, subset[None].astype(np.float32))  # type: ignore[attr-defined]
        interpreter.invoke()  # type: ignore[attr-defined]
        weights = dict(zip(MODEL_OUTPUTS, interpreter.get_tensor(out).reshape(-1).tolist(), strict=True))  # type: ignore[attr-defined]
        frames.append([round(float(weights.get(name, 0.0)), 6) for name in ARKIT_CHANNELS])
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pose_file", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    from ai_edge_litert.interpreter import Interpreter

    task = model_path("face_landmarker")
    with zipfile.ZipFile(task) as bundle:
        model = bundle.read("face_blendshapes.tflite")
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    pose = read_pose_file(args.pose_file)
    if pose.landmarks.face is None or pose.landmarks.face.shape[1] != 478:
        raise SystemExit(f"{args.pose_file}: no 478-point face mesh (refined, with irises)")
    frames = blendshapes(pose.landmarks.face, interpreter)
    doc = {
        "source": args.pose_file.name,
        "model": {"file": "face_landmarker.task/face_blendshapes.tflite",
                  "sha256": hashlib.sha256(model).hexdigest()},
        "input": "146 face mesh points (kLandmarksSubsetIdxs), x and y in image pixels",
        "channels": list(ARKIT_CHANNELS),
        "frames": frames,
    }
    args.out.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{sum(f is not None for f in frames)} of {len(frames)} frames -> {args.out}")


if __name__ == "__main__":
    main()
