"""How well a hand's size in the picture determines its finger dims (spec §4.3, §7.4, §7.5).

The landmark encoder's finger dims are angles between phalanges of a few pixels each, so what
a hand the camera sees small can give depends on how far its landmarks move. Two tables:

1. **Hand sizes**: per real recording (``fidelity_bench._reprojection_paths()``: the committed
   signer and ``../shared/data``'s where present) and for the committed photos and clip as the
   Python producer sees them (``tests/captureutil.camera_frame``, the clip's first frame), the
   hands' size in the image: wrist → middle knuckle (landmarks 0 → 9), pixels.
2. **Sub-pixel noise by hand size**: every frame of the committed signer with both hands, each
   hand's landmarks given Gaussian noise of 0.5 px (all three axes, the hand model's
   isotropic pixels) as if the hand spanned ``size`` pixels (the noise scaled by the hand's own
   size / ``size``); the live encoder's finger and palm dims against its dims without the
   noise: median and 95th percentile of the absolute deviation (normalized units), over
   ``--repeats`` fixed-seed draws. Half a pixel is less than two MediaPipe builds place a
   landmark apart on the same pixels (spec §7.5).

Prints markdown; figures only (no pass/fail).

    python benchmarks/finger_conditioning_study.py [--repeats 5] [--sizes 17 25 35 50 75 100]
"""

from __future__ import annotations

import argparse
import io
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

NOISE_PX = 0.5
PHOTOS = ["soccer_player.jpg", "astronaut.jpg", "grace_hopper.jpg"]
CLIP = ROOT / "tests" / "data" / "video" / "cut.mjpeg"


def hand_sizes(hand: np.ndarray) -> np.ndarray:
    """Wrist → middle knuckle in the image plane of hands ``(B, 21, 3)`` (NaN where missing)."""
    return np.asarray(np.linalg.norm(hand[:, 9, :2] - hand[:, 0, :2], axis=-1))


def _sizes_table() -> None:
    from captureutil import camera_frame, clip_frames
    from fidelity_bench import _reprojection_paths
    from PIL import Image

    from posewire.producers.mediapipe_source import MediaPipeEstimator
    from posewire.producers.poseformat import read_pose_file

    print("## Hand sizes in the image (wrist → middle knuckle, px)\n")
    print("| source | hands | min | p5 | median |")
    print("| --- | ---: | ---: | ---: | ---: |")
    pooled = []
    for path in _reprojection_paths():
        lm = read_pose_file(path).landmarks
        sizes = np.concatenate([hand_sizes(lm.left_hand), hand_sizes(lm.right_hand)])
        sizes = sizes[np.isfinite(sizes)]
        if sizes.size:
            pooled.append(sizes)
            print(f"| {path.name[:32]} | {sizes.size} | {sizes.min():.1f} | {np.percentile(sizes, 5):.1f} | "
                  f"{np.median(sizes):.1f} |")
    if pooled:
        every = np.concatenate(pooled)
        print(f"| **all recordings** | {every.size} | {every.min():.1f} | {np.percentile(every, 5):.1f} | "
              f"{np.median(every):.1f} |")
    frames = {name: np.asarray(Image.open(io.BytesIO(camera_frame(name))).convert("RGB")) for name in PHOTOS}
    first = clip_frames(CLIP.read_bytes())[0]
    frames["cut.mjpeg (first frame)"] = np.asarray(Image.open(io.BytesIO(first)).convert("RGB"))
    with MediaPipeEstimator(mode="image", face=False) as estimator:
        for name, rgb in frames.items():
            lm = estimator.process(rgb).landmarks
            found = {s: float(hand_sizes(h)[0]) for s, h in (("l", lm.left_hand), ("r", lm.right_hand))}
            shown = ", ".join(f"{s} {v:.1f}" for s, v in found.items() if np.isfinite(v)) or "no hand"
            print(f"| {name} (Python producer) | {shown} | | | |")


def _noise_table(sizes: list[float], repeats: int) -> None:
    from posewire.codec.registry import DIMENSIONS
    from posewire.producers.landmarks import estimate_calibration, landmarks_to_vectors
    from posewire.producers.poseformat import read_pose_file

    lm = read_pose_file(ROOT / "tests" / "data" / "holistic_signer.pose").landmarks
    cal = estimate_calibration(lm)
    both = np.flatnonzero(np.isfinite(lm.left_hand).all(axis=(-1, -2)) & np.isfinite(lm.right_hand).all(axis=(-1, -2)))

    def rows(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[both]

    base = replace(lm, pose_world=lm.pose_world[both], pose_visibility=lm.pose_visibility[both],
                   left_hand=lm.left_hand[both], right_hand=lm.right_hand[both], face=rows(lm.face),
                   hand_scale=rows(lm.hand_scale), pose_image=rows(lm.pose_image), pose_in_frame=rows(lm.pose_in_frame))
    fingers = [d.index for d in DIMENSIONS if d.row.group == "fingers"]
    palm = [d.index for d in DIMENSIONS if d.row.group == "palm"]
    clean = landmarks_to_vectors(base, calibration=cal).vectors
    own = {"l": hand_sizes(base.left_hand), "r": hand_sizes(base.right_hand)}
    print(f"\n## Finger and palm dims under {NOISE_PX} px of landmark noise, by hand size\n")
    print(f"The committed signer: {both.size} frames with both hands (own sizes: median "
          f"{np.median(own['l']):.0f} px left, {np.median(own['r']):.0f} px right), {repeats} draws each.\n")
    print("| hand size, px | fingers: median dev | fingers: p95 | palm: median dev | palm: p95 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for size in sizes:
        finger_dev, palm_dev = [], []
        for _ in range(repeats):
            noisy = {s: h + rng.normal(0.0, 1.0, h.shape) * (NOISE_PX * own[s] / size)[:, None, None]
                     for s, h in (("l", base.left_hand), ("r", base.right_hand))}
            got = landmarks_to_vectors(replace(base, left_hand=noisy["l"], right_hand=noisy["r"]),
                                       calibration=cal).vectors
            finger_dev.append(np.abs(got[:, fingers] - clean[:, fingers]))
            palm_dev.append(np.abs(got[:, palm] - clean[:, palm]))
        f, p = np.concatenate(finger_dev), np.concatenate(palm_dev)
        print(f"| {size:g} | {np.nanmedian(f):.3f} | {np.nanpercentile(f, 95):.3f} | {np.nanmedian(p):.3f} | "
              f"{np.nanpercentile(p, 95):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="noise draws per hand size (default 5)")
    ap.add_argument("--sizes", type=float, nargs="+", default=[17, 25, 35, 50, 75, 100],
                    help="hand sizes to simulate, px (default 17 25 35 50 75 100)")
    ap.add_argument("--skip-sizes", action="store_true", help="skip the hand-size table (no MediaPipe run)")
    args = ap.parse_args()
    if args.repeats < 1 or any(s <= 0 for s in args.sizes):
        ap.error("--repeats must be at least 1 and --sizes positive")
    if not args.skip_sizes:
        _sizes_table()
    _noise_table(args.sizes, args.repeats)


if __name__ == "__main__":
    main()
