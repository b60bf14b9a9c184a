"""Decode speed: µs per frame of posewire.consumers.pose.decode_pose and posewire.consumers.face.face_weights.

Run: ``.venv/bin/python benchmarks/decode_bench.py [--quick]``; prints a markdown table
(single frame and a batch of 10 000 frames) for helix-humanoid@1 at 1.75 m, whose rest
rotations are all identity (the decoder then skips the bind-frame products), and for the
same skeleton with random bind frames (what a real avatar costs). Min and median of the
repeats (one-frame rows: loops of 100 calls).
A benchmark, not a test: the brief's target is ≤ 100 µs per frame and ≥ 20k frames/s
in batch. The JavaScript client's decoder (js/posewire/decoder.mjs, the code the browser
viewer runs) is timed in Node on the same skeleton and frame in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from posewire.codec.mouthing import shares_from_dict
from posewire.codec.vector import LOWER, N_DIMS
from posewire.consumers.face import face_weights
from posewire.consumers.pose import decode_frame, decode_pose
from posewire.consumers.skeleton import Skeleton, helix_humanoid

__all__ = ["main"]

_DECODE_JS = Path(__file__).resolve().parent.parent / "js" / "test" / "decode.mjs"


def _per_frame_us(fn: Callable[[], object], frames: int, repeats: int) -> tuple[float, float]:
    # (min, median) over ``repeats`` samples of µs per frame; a one-frame call is timed as a
    # loop of 100 calls per sample (a single call is too short to time on a shared machine)
    calls = 100 if frames == 1 else 1
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls / frames * 1e6)
    return min(samples), statistics.median(samples)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 20
    skel = helix_humanoid()
    rng = np.random.default_rng(0)
    rest, _ = skel.rest_world()
    bind = rng.normal(size=(len(skel), 4))
    bind /= np.linalg.norm(bind, axis=-1, keepdims=True)
    bound = Skeleton.from_world(skel.names, skel.parents, rest, bind, sites={
        n: (skel.names[j], rest[j] + off) for n, (j, off) in skel.sites.items()})
    one = rng.uniform(LOWER, 1.0, size=(1, N_DIMS))
    batch = rng.uniform(LOWER, 1.0, size=(10_000, N_DIMS))
    mix = shares_from_dict({"aa": 0.5, "PP": 0.2})
    rows = [
        ("decode_pose", 1, _per_frame_us(lambda: decode_pose(one, skel), 1, repeats)),
        ("decode_pose, random bind frames", 1,
         _per_frame_us(lambda: decode_pose(one, bound), 1, repeats)),
        ("face_weights viseme15", 1,
         _per_frame_us(lambda: face_weights(one, capability="viseme15", visemes=mix), 1, repeats)),
        ("decode_frame (decode_pose + face_weights viseme15, one validation)", 1,
         _per_frame_us(lambda: decode_frame(one, skel, capability="viseme15", visemes=mix), 1, repeats)),
        ("decode_pose", 10_000, _per_frame_us(lambda: decode_pose(batch, skel), 10_000, repeats)),
        ("decode_pose, random bind frames", 10_000,
         _per_frame_us(lambda: decode_pose(batch, bound), 10_000, repeats)),
        ("face_weights viseme15", 10_000,
         _per_frame_us(lambda: face_weights(batch, capability="viseme15", visemes=mix), 10_000, repeats)),
    ]
    js = _javascript(skel, one, mix, 2_000 if args.quick else 20_000)
    if js is not None:
        rows += [("JavaScript decodePose (Node, js/posewire/decoder.mjs), mean", 1, (js["pose"], js["pose"])),
                 ("JavaScript faceWeights viseme15 (Node), mean", 1, (js["face"], js["face"]))]
    print("| operation | frames per call | µs per frame, min | median | frames/s (min) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, frames, (low, mid) in rows:
        print(f"| {name} | {frames} | {low:.2f} | {mid:.2f} | {1e6 / low:,.0f} |")
    if js is not None:
        low, mid = rows[3][2]
        peer = js["pose"] + js["face"]
        print(f"\nbones + IK + face, one frame (decode_frame): Python {low:.1f} / {mid:.1f} µs (min / median), "
              f"JavaScript (Node, mean) {peer:.1f} µs (ratio {low / peer:.2f}x / {mid / peer:.2f}x)")
    else:
        print("\n(node not found: no JavaScript rows)")


def _javascript(skel: Skeleton, one: np.ndarray, mix: np.ndarray, repeat: int) -> dict[str, float] | None:
    """µs per frame of the JavaScript decoder in Node on the same skeleton and frame
    (mean over ``repeat`` calls after a warm-up, in the same run)."""
    node = shutil.which("node")
    if node is None:
        return None
    pos, rot = skel.rest_world()
    from posewire.codec.quaternion import rotate_unchecked
    doc = {"skeleton": {"names": list(skel.names), "parents": [int(p) for p in skel.parents],
                        "positions": pos.tolist(), "rotations": rot.tolist(),
                        "sites": {n: [skel.names[j], (pos[j] + rotate_unchecked(rot[j], off)).tolist()]
                                  for n, (j, off) in skel.sites.items()}},
           "frames": one.tolist(), "mouthing": [mix.tolist()], "repeat": repeat}
    done = subprocess.run([node, str(_DECODE_JS)], input=json.dumps(doc), capture_output=True, text=True,
                          check=True, timeout=300)
    timing: dict[str, float] = json.loads(done.stdout)["us_per_frame"]
    return timing


if __name__ == "__main__":
    main()
