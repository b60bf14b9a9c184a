"""Why the browser route and the Python producer disagree on some still photos (spec §7.5).

The capture page runs the npm Holistic build (``@mediapipe/holistic`` 0.5.1675471629, wasm),
the Python producer the ``mediapipe`` wheel's legacy Holistic. Two questions, two tables:

1. **The weights**: is each model file of the page's packed assets
   (``holistic_solution_packed_assets.data``, its file list and byte offsets in
   ``holistic_solution_packed_assets_loader.js``) and its separate pose model the wheel's
   (``mediapipe/modules/...``)? Files whose bytes differ are compared tensor by tensor (the
   TFLite flatbuffer's ``Model.buffers``; the metadata buffers named in ``Model.metadata``
   apart). Also printed: the Holistic subgraph the web graph (``holistic.binarypb``) runs and
   whether the wasm carries the CPU graphs at all. Then the Python build run with the page's
   model files in place of the wheel's (its resource root pointed at a copy of
   ``mediapipe/modules`` with them substituted): the largest landmark difference it makes.
2. **The conditioning**: the Python build on a photo as the fake camera shows it
   (``tests/captureutil.camera_frame``, decoded by Pillow) and, with ``--pixels``, on the very
   pixels the page gave its MediaPipe (the ``agree_*.pixels.png`` that
   ``tests/test_capture_agreement.py`` writes under ``$POSEWIRE_SCREENSHOTS``, Chromium's decode
   of the same JPEG), ``--frames`` frames in video mode, the same pixels each
   frame and then with ±1 and ±2 grey levels of fixed-seed noise per frame (a difference no
   eye sees, and smaller than what two image pipelines' rounding may give): per part the
   landmark spread over the steady frames (pixels) and the dims' largest raw range (the
   Python live encoder, spec §7.3). A photo on which ±1 grey level moves the landmarks by
   pixels is one on which two builds cannot be expected to agree frame by frame.

Prints markdown; figures only (no pass/fail).

    python benchmarks/holistic_builds_study.py [--frames 20] [--photos astronaut.jpg ...]
        [--pixels shots/agree_astronaut.jpg.pixels.png ...] [--skip-conditioning]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sys
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HOLISTIC = ROOT / "js" / "node_modules" / "@mediapipe" / "holistic"
PHOTOS = ["soccer_player.jpg", "astronaut.jpg", "grace_hopper.jpg"]
#: Frames before the filters and the Python build's Holistic settle on a still photo (the
#: page's build takes up to 40: tests/test_capture_agreement.py STEADY).
STEADY = 10
#: MediaPipe pose indices per part (tests/test_capture_agreement.py POSE_PARTS).
POSE_PARTS = {"shoulders": [11, 12], "elbows": [13, 14], "wrists": [15, 16], "hips": [23, 24], "head": [0, 7, 8]}


# --- 1. the weights ------------------------------------------------------------------------

def packed_files() -> dict[str, bytes]:
    """The page's model files: ``{path under mediapipe/: bytes}`` from the packed assets, and
    the separate ``pose_landmark_full.tflite``."""
    loader = (HOLISTIC / "holistic_solution_packed_assets_loader.js").read_text()
    found = re.search(r"loadPackage\((\{.*\})\);", loader)
    if found is None:
        raise SystemExit(f"no file list in {HOLISTIC / 'holistic_solution_packed_assets_loader.js'}")
    data = (HOLISTIC / "holistic_solution_packed_assets.data").read_bytes()
    meta = json.loads(found.group(1))
    if meta["remote_package_size"] != len(data):
        raise SystemExit(f"packed assets are {len(data)} B, the loader says {meta['remote_package_size']}")
    out = {f["filename"].removeprefix("/third_party/mediapipe/"): data[f["start"]:f["end"]] for f in meta["files"]}
    out["modules/pose_landmark/pose_landmark_full.tflite"] = (HOLISTIC / "pose_landmark_full.tflite").read_bytes()
    return out


def _tables(buf: bytearray, tab: Any, field: int) -> list[Any]:
    from flatbuffers import table

    off = tab.Offset(4 + 2 * field)
    if not off:
        return []
    start = tab.Vector(off)
    return [table.Table(buf, tab.Indirect(start + 4 * i)) for i in range(tab.VectorLen(off))]


def tflite_parts(data: bytes) -> tuple[list[bytes], dict[str, int]]:
    """A .tflite's tensor buffers (``Model.buffers``, field 4, inline or by offset) and its
    metadata entries (``Model.metadata``, field 6: ``{name: buffer index}``)."""
    import flatbuffers
    from flatbuffers import number_types, table

    buf = bytearray(data)
    model = table.Table(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    buffers = []
    for b in _tables(buf, model, 4):
        inline = b.Offset(4)
        if inline:
            start = b.Vector(inline)
            buffers.append(bytes(buf[start:start + b.VectorLen(inline)]))
        elif b.Offset(6):
            at = b.Get(number_types.Uint64Flags, b.Pos + b.Offset(6))
            size = b.Get(number_types.Uint64Flags, b.Pos + b.Offset(8))
            buffers.append(bytes(buf[at:at + size]))
        else:
            buffers.append(b"")
    metadata = {}
    for m in _tables(buf, model, 6):
        name = m.String(m.Pos + m.Offset(4)).decode() if m.Offset(4) else ""
        metadata[name] = m.Get(number_types.Uint32Flags, m.Pos + m.Offset(6)) if m.Offset(6) else -1
    return buffers, metadata


def weights_table() -> str:
    import mediapipe

    wheel = Path(mediapipe.__file__).parent
    rows = ["| file | page (npm) B | wheel B | bytes | tensors | metadata page / wheel |", "| --- |" + " ---: |" * 2
            + " --- |" * 3]
    for rel, page in packed_files().items():
        path = wheel / rel
        if not path.is_file():
            rows.append(f"| `{rel}` | {len(page)} | – | not in the wheel | – | – |")
            continue
        own = path.read_bytes()
        if own == page:
            rows.append(f"| `{rel}` | {len(page)} | {len(own)} | equal | equal | – |")
            continue
        if not rel.endswith(".tflite"):
            rows.append(f"| `{rel}` | {len(page)} | {len(own)} | differ | – | – |")
            continue
        (pb, pm), (wb, wm) = tflite_parts(page), tflite_parts(own)
        pw = [b for i, b in enumerate(pb) if i not in pm.values()]
        ww = [b for i, b in enumerate(wb) if i not in wm.values()]
        same = sum(1 for a, b in zip(pw, ww, strict=False) if a == b)
        digest = hashlib.sha256(b"".join(pw)).hexdigest() == hashlib.sha256(b"".join(ww)).hexdigest()
        tensors = (f"equal ({len(pw)}, {sum(map(len, pw))} B)" if digest and len(pw) == len(ww)
                   else f"{same} of {len(pw)} / {len(ww)} equal")
        meta = " / ".join(", ".join(f"{k} {len(bufs[i])} B" for k, i in m.items()) or "none"
                          for bufs, m in ((pb, pm), (wb, wm)))
        rows.append(f"| `{rel}` | {len(page)} | {len(own)} | differ | {tensors} | {meta} |")
    return "\n".join(rows)


def web_graph() -> str:
    """The web graph's Holistic subgraph, and whether the wasm registers the CPU graphs."""
    from mediapipe.framework import calculator_pb2

    graph = calculator_pb2.CalculatorGraphConfig()
    graph.ParseFromString((HOLISTIC / "holistic.binarypb").read_bytes())
    nodes = [n.calculator for n in graph.node if "Holistic" in n.calculator or "Scaler" in n.calculator]
    wasm = (HOLISTIC / "holistic_solution_simd_wasm_bin.wasm").read_bytes()
    names = ["HolisticLandmarkCpu", "HolisticLandmarkGpu", "PoseLandmarkCpu", "HandLandmarkCpu",
             "GpuBufferToImageFrameCalculator"]
    have = ", ".join(f"{n} {'yes' if n.encode() in wasm else 'no'}" for n in names)
    return (f"web graph `holistic.binarypb`: input `{graph.input_stream[0]}` → {' → '.join(nodes)}\n"
            f"in the simd wasm: {have}")


def python_on(rgb: np.ndarray, frames: int, root: Path | None) -> list[Any]:
    """The Python build on ``rgb`` ``frames`` times (video mode); ``root``: the resource root
    its models load from (``root/mediapipe/modules/...``; None: the wheel's)."""
    from mediapipe.python import solution_base

    from posewire.producers.mediapipe_source import MediaPipeEstimator

    real = solution_base.resource_util
    if root is not None:
        solution_base.resource_util = SimpleNamespace(set_resource_dir=lambda _wheel: real.set_resource_dir(str(root)))
    try:
        with MediaPipeEstimator(mode="video") as est:
            return [est.process(rgb, timestamp_ms=250 * i) for i in range(frames)]
    finally:
        solution_base.resource_util = real


def swapped_table(sources: list[str], frames: int) -> str:
    """Per frame source, the largest |wheel − page files| over the landmarks the Python build gives."""
    import mediapipe

    wheel = Path(mediapipe.__file__).parent
    rows = ["| frame | pose (px) | pose world (m) | visibility | hands (px) |", "| --- |" + " ---: |" * 4]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path in (wheel / "modules").rglob("*"):
            if path.is_file():
                target = root / "mediapipe" / path.relative_to(wheel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(path)
        for rel, data in packed_files().items():
            target = root / "mediapipe" / rel
            target.unlink(missing_ok=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for source in sources:
            rgb = frame_pixels(source)
            a, b = python_on(rgb, frames, None)[-1], python_on(rgb, frames, root)[-1]

            def gap(x: np.ndarray, y: np.ndarray) -> str:
                d = np.abs(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64))
                return "–" if not np.isfinite(d).any() else f"{float(np.nanmax(d)):.2g}"

            la, lb = a.landmarks, b.landmarks
            hands = gap(np.stack([la.left_hand[0], la.right_hand[0]]), np.stack([lb.left_hand[0], lb.right_hand[0]]))
            vis = gap(la.pose_visibility, lb.pose_visibility)
            rows.append(f"| {Path(source).name} | {gap(a.pose_image, b.pose_image)} | "
                        f"{gap(la.pose_world, lb.pose_world)} | {vis} | {hands} |")
    return "\n".join(rows)


# --- 2. the conditioning -------------------------------------------------------------------

def frame_pixels(source: str) -> np.ndarray:
    """RGB of a committed photo's fake-camera frame (a name under tests/data/photos) or of an
    image file (a path)."""
    from captureutil import camera_frame
    from PIL import Image

    data = Path(source).read_bytes() if Path(source).is_file() else camera_frame(source)
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def conditioning(rgb: np.ndarray, frames: int, noise: int, seed: int = 0) -> tuple[dict[str, float], dict[str, float]]:
    """The Python build on ``rgb`` ``frames`` times, each frame with ±``noise`` grey levels
    (0: the same pixels): per part the landmark spread over the steady frames (px), per dim
    its raw range (the live encoder, no filter)."""

    from captureutil import perturbed

    from posewire.producers.filter import VisibilityHold
    from posewire.producers.live import LiveEncoder
    from posewire.producers.mediapipe_source import MediaPipeEstimator

    rng = np.random.default_rng(seed)
    with MediaPipeEstimator(mode="video") as est:
        seen = []
        for i in range(frames):
            x = rgb if noise == 0 else perturbed(rgb, rng, noise)
            seen.append(est.process(x, timestamp_ms=250 * i))
    steady = seen[STEADY:]

    def spread(points: np.ndarray) -> float:
        with warnings.catch_warnings():  # a part missing on some frames: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            if not np.isfinite(points).any():
                return float("nan")
            return float(np.nanmax(np.linalg.norm(points - np.nanmean(points, axis=0), axis=-1)))

    parts = {name: spread(np.array([o.pose_image[idx, :2] for o in steady])) for name, idx in POSE_PARTS.items()}
    parts["hand_l"] = spread(np.array([o.landmarks.left_hand[0][:, :2] for o in steady]))
    parts["hand_r"] = spread(np.array([o.landmarks.right_hand[0][:, :2] for o in steady]))
    from posewire.codec.registry import DIMENSIONS

    live = LiveEncoder(visibility_hold=VisibilityHold())
    for obs in seen:
        live.encode(obs)
    # the hand depth gain held at 1, as the agreement test's (a still photo gives its fit nothing)
    cal = None if live.calibration is None else replace(live.calibration, hand_depth_gain={"l": 1.0, "r": 1.0})
    enc = LiveEncoder(calibration=cal, visibility_hold=VisibilityHold())
    raw = np.array([enc.encode(obs).vector for obs in seen])[STEADY:]
    ranges = {d.id: float(np.nanmax(raw[:, k]) - np.nanmin(raw[:, k]))
              for k, d in enumerate(DIMENSIONS) if np.isfinite(raw[:, k]).any()}
    return parts, ranges


def conditioning_table(sources: list[str], frames: int) -> str:
    rows = ["| frame | noise | landmark spread over steady frames, px | largest raw dim ranges |",
            "| --- | ---: | --- | --- |"]
    for source in sources:
        rgb = frame_pixels(source)
        for noise in (0, 1, 2):
            parts, ranges = conditioning(rgb, frames, noise)
            worst = sorted(ranges.items(), key=lambda kv: -kv[1])[:4]
            spreads = "; ".join(f"{k} {v:.1f}" for k, v in parts.items() if np.isfinite(v))
            dims = ", ".join(f"`{k}` {v:.2f}" for k, v in worst)
            rows.append(f"| {Path(source).name} | ±{noise} | {spreads} | {dims} |")
            print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--photos", nargs="*", default=PHOTOS, help="committed photos (none: only --pixels)")
    ap.add_argument("--pixels", nargs="*", default=[], help="image files (the page's agree_*.pixels.png)")
    ap.add_argument("--skip-conditioning", action="store_true")
    args = ap.parse_args()
    if args.frames <= STEADY:
        ap.error(f"--frames must be more than {STEADY} (the steady frames follow the first {STEADY})")
    sys.path.insert(0, str(ROOT / "tests"))  # captureutil: the fake camera's frame of a photo
    print("## The model files: the page's npm Holistic against the mediapipe wheel\n")
    print(weights_table())
    print()
    print(web_graph())
    print(f"\nThe Python build with the page's model files, against the wheel's (frame {args.frames}):\n")
    print(swapped_table(args.photos + args.pixels, args.frames))
    if not args.skip_conditioning:
        print(f"\n## The Python build on a still photo, {args.frames} frames (steady: from frame {STEADY})\n")
        print(conditioning_table(args.photos + args.pixels, args.frames))


if __name__ == "__main__":
    main()
