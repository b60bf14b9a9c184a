"""Faces that show an expression, from the committed photos (``tests/data/photos``), for the
VMC expression presets (``posewire.bridges.vmc.expression_presets``, docs/vmc.md).

The photos have calm faces and one real smile (the astronaut); none is angry or sad. So
:func:`expression_photo` moves a photo's own face the way the expression moves it — a
smooth displacement of the pixels around points of the face mesh MediaPipe found on the
photo (Gaussian falloff, sigma 0.09 of the eye distance), the sizes in eye distances:

* ``angry``: the inner brows 0.14 down and 0.05 toward the nose, the middle 0.10 down and
  0.03 in, the outer ends 0.04 down (brows lowered and drawn together);
* ``sad``: the inner brows 0.14 up, the middle 0.05 up, the mouth corners 0.10 down;
* ``happy``: the mouth corners 0.10 up and 0.06 out, the lower lids 0.03 up.

The moved photo then goes through the producer's own models (MediaPipe Holistic and
FaceLandmarker, :class:`posewire.producers.mediapipe_source.MediaPipeEstimator`) and its
face route (:func:`posewire.producers.face.blendshape_dims`), as a webcam frame would.

``python tests/faceutil.py`` prints the table of docs/vmc.md (the cues and presets of each
face, and of the demo signer's frames).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PHOTOS = ROOT / "tests" / "data" / "photos"
#: Face-mesh points moved (478-point mesh; ``r``/``l`` the subject's own sides).
BROW = {"r": {"inner": (107, 55, 65), "mid": (66, 105, 52), "outer": (70, 63, 46, 53)},
        "l": {"inner": (336, 285, 295), "mid": (296, 334, 282), "outer": (300, 293, 276, 283)}}
CORNER = {"r": 61, "l": 291}
LOWER_LID = {"r": (145, 144, 153), "l": (374, 373, 380)}
KINDS = ("angry", "sad", "happy")
#: The photos with a face MediaPipe finds, and what their faces show as taken.
FACE_PHOTOS = {"grace_hopper.jpg": "neutral", "soccer_player.jpg": "calm (running, mouth open)",
               "astronaut.jpg": "smiling"}


def rgb(name: str) -> np.ndarray:
    import cv2

    image = cv2.imread(str(PHOTOS / name))
    assert image is not None, name
    out: np.ndarray = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    return out


def _warp(image: np.ndarray, moves: list[tuple[np.ndarray, tuple[float, float]]], sigma: float) -> np.ndarray:
    import cv2

    h, w = image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    dx = np.zeros_like(xs)
    dy = np.zeros_like(ys)
    for (px, py), (mx, my) in moves:
        g = np.exp(-((xs - px - mx) ** 2 + (ys - py - my) ** 2) / (2 * sigma**2))
        dx += g * mx
        dy += g * my
    out: np.ndarray = cv2.remap(image, xs - dx, ys - dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out


def expression_photo(image: np.ndarray, mesh: np.ndarray, kind: str) -> np.ndarray:
    """``image`` with its face (``mesh``: the 478 points in pixels, as the estimator gives
    them) moved to show ``kind`` (module docstring)."""
    iod = float(np.linalg.norm(mesh[468, :2] - mesh[473, :2]))
    centre = (mesh[33, 0] + mesh[263, 0]) / 2.0
    moves: list[tuple[np.ndarray, tuple[float, float]]] = []

    def move(i: int, across: float, down: float) -> None:
        moves.append((mesh[i, :2], (across * iod, down * iod)))

    for s in ("r", "l"):
        inward = 1.0 if mesh[BROW[s]["inner"][0], 0] < centre else -1.0
        if kind == "angry":
            for i in BROW[s]["inner"]:
                move(i, 0.05 * inward, 0.14)
            for i in BROW[s]["mid"]:
                move(i, 0.03 * inward, 0.10)
            for i in BROW[s]["outer"]:
                move(i, 0.0, 0.04)
        elif kind == "sad":
            for i in BROW[s]["inner"]:
                move(i, 0.0, -0.14)
            for i in BROW[s]["mid"]:
                move(i, 0.0, -0.05)
            move(CORNER[s], 0.0, 0.10)
        elif kind == "happy":
            move(CORNER[s], -0.06 * inward, -0.10)
            for i in LOWER_LID[s]:
                move(i, 0.0, -0.03)
        else:
            raise ValueError(kind)
    return _warp(image, moves, 0.09 * iod)


def face_dims(estimator: Any, image: np.ndarray) -> tuple[np.ndarray, Any]:
    """The face and mouth dims the producer sends for ``image`` (other dims NaN), and the
    observation."""
    from posewire.producers.face import blendshape_dims

    obs = estimator.process(image)
    assert obs.blendshapes is not None and obs.face_mesh is not None, "no face"
    return blendshape_dims(obs.blendshapes)[0], obs


def expression_faces(estimator: Any) -> dict[str, np.ndarray]:
    """``{"photo: what": dims}``: each face photo as taken and moved to each expression."""
    out: dict[str, np.ndarray] = {}
    for name, shows in FACE_PHOTOS.items():
        image = rgb(name)
        dims, obs = face_dims(estimator, image)
        out[f"{name}: {shows}"] = dims
        for kind in KINDS:
            out[f"{name}: moved to {kind}"] = face_dims(estimator, expression_photo(image, obs.face_mesh, kind))[0]
    return out


def signer_frames() -> np.ndarray:
    """The demo signer's frames ``(47, N)`` (posewire/data/holistic_signer.jsonl)."""
    from posewire.producers.recording import RecordedFrame, read_recording

    _, records = read_recording(ROOT / "posewire" / "data" / "holistic_signer.jsonl")
    return np.array([r.vector() for r in records if isinstance(r, RecordedFrame)])


def main() -> None:
    from posewire.bridges.vmc import expression_cues, expression_presets
    from posewire.producers.mediapipe_source import MediaPipeEstimator

    cues = ("smile", "brow_down", "inner_up", "frown")
    presets = ("Joy", "Angry", "Sorrow")
    print("| face | " + " | ".join(cues) + " | " + " | ".join(presets) + " |")
    print("| --- |" + " ---: |" * (len(cues) + len(presets)))

    def row(label: str, values: np.ndarray) -> str:
        c = expression_cues(values)
        p = expression_presets(values)
        return (f"| {label} | " + " | ".join(f"{c[k]:+.2f}" for k in cues) + " | "
                + " | ".join(f"{p[k]:.2f}" for k in presets) + " |")

    frames = signer_frames()
    each = [(expression_cues(v), expression_presets(v)) for v in frames]
    print(f"| demo signer, {len(frames)} frames (largest) | "
          + " | ".join(f"{max(c[k] for c, _ in each):+.2f}" for k in cues) + " | "
          + " | ".join(f"{max(p[k] for _, p in each):.2f}" for k in presets) + " |")
    with MediaPipeEstimator(mode="image", hands="off") as estimator:
        for label, values in expression_faces(estimator).items():
            print(row(label, values))


if __name__ == "__main__":
    main()
