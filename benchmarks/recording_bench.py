"""Recording benchmark (spec §8): pose-format files -> posewire recordings, size and speed.

Run: ``.venv/bin/python benchmarks/recording_bench.py [FOLDER ...] [--jobs N]`` (default
folder: ``../shared/data``, else ``tests/data``; needs the ``record`` extra).

Converts every ``.pose`` file with ``posewire convert``'s machinery
(:func:`posewire.cli.convert.run_convert`) into a temporary folder, once on one worker and
once on ``--jobs`` workers (default: every core), and prints: files, frames, bytes per frame
of pose-format, of the posewire recording (``.pwr``) and of the same frames as JSON lines,
the size ratios, and the conversion speed in frames per second per core (frames over the
workers' CPU seconds) and on all workers (frames over wall seconds). Sizes are
deterministic for given files; speeds are printed for information only.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
from pathlib import Path

from posewire.cli.convert import plan, run_convert
from posewire.producers.recording import read_recording, write_recording

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    shared = ROOT.parent / "shared" / "data"
    folders = args.folders or [str(shared if shared.is_dir() else ROOT / "tests" / "data")]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for workers in sorted({1, args.jobs}):
            out = Path(tmp) / f"w{workers}"
            jobs = plan(folders, out)
            outcomes, wall = run_convert(jobs, workers=workers, force=True, progress=io.StringIO())
            ok = [o for o in outcomes if o.status == "converted"]
            frames = sum(o.frames for o in ok)
            cpu = sum(o.cpu_s for o in ok)
            rows.append((workers, len(jobs), len(ok), frames, sum(o.source_bytes for o in ok),
                         sum(o.target_bytes for o in ok), cpu, wall, ok))
        _, files, converted, frames, src, dst, _, _, ok = rows[-1]
        lines = 0
        for o in ok:  # the same frames as JSON lines, for reading by eye
            header, recs = read_recording(o.job.target)
            path = Path(tmp) / "x.jsonl"
            write_recording(path, recs, calibration=header.calibration)
            lines += path.stat().st_size
        print(f"| files | frames | pose-format B/frame | .pwr B/frame | JSON lines B/frame | pose-format / .pwr "
              f"| JSON lines / .pwr |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
              f"| {converted} of {files} | {frames} | {src / frames:.1f} | {dst / frames:.1f} | {lines / frames:.1f} "
              f"| {src / dst:.1f}× | {lines / dst:.1f}× |\n")
        print("| workers | frames/s per core (CPU) | frames/s (wall) |\n| ---: | ---: | ---: |")
        for workers, _, _, n, _, _, cpu, wall, _ in rows:
            print(f"| {workers} | {n / cpu:.0f} | {n / wall:.0f} |")


if __name__ == "__main__":
    main()
