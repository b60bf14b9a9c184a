"""Decode speed: µs per frame of posewire.consumers.pose.decode_pose and posewire.consumers.face.face_weights.

Run: ``.venv/bin/python benchmarks/decode_bench.py [--quick]``; prints a markdown table
(single frame and a batch of 10 000 frames) for helix-humanoid@1 at 1.75 m, whose rest
rotations are all identity (the decoder then skips the bind-frame products), and for the
same skeleton with random bind frames (what a real avatar costs). Best of the repeats.
A benchmark, not a test: the brief's target is ≤ 100 µs per frame and ≥ 20k frames/s
in batch.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from posewire.codec.mouthing import shares_from_dict
from posewire.codec.vector import LOWER, N_DIMS
from posewire.consumers.face import face_weights
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton, helix_humanoid

__all__ = ["main"]


def _per_frame_us(fn: Callable[[], object], frames: int, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / frames * 1e6


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
        ("decode_pose", 1, _per_frame_us(lambda: decode_pose(one, skel), 1, repeats * 10)),
        ("decode_pose, random bind frames", 1,
         _per_frame_us(lambda: decode_pose(one, bound), 1, repeats * 10)),
        ("face_weights viseme15", 1,
         _per_frame_us(lambda: face_weights(one, capability="viseme15", visemes=mix), 1, repeats * 10)),
        ("decode_pose", 10_000, _per_frame_us(lambda: decode_pose(batch, skel), 10_000, repeats)),
        ("decode_pose, random bind frames", 10_000,
         _per_frame_us(lambda: decode_pose(batch, bound), 10_000, repeats)),
        ("face_weights viseme15", 10_000,
         _per_frame_us(lambda: face_weights(batch, capability="viseme15", visemes=mix), 10_000, repeats)),
    ]
    print("| operation | frames per call | µs per frame | frames/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, frames, us in rows:
        print(f"| {name} | {frames} | {us:.2f} | {1e6 / us:,.0f} |")


if __name__ == "__main__":
    main()
