"""``posewire convert``: pose-format files (or whole folders of them) -> posewire recordings.

``posewire convert corpus/ --out pwr/`` converts every ``.pose`` file under ``corpus/``
(MediaPipe Holistic, PyPI ``pose-format``; the ``record`` extra) into a posewire
recording (``.pwr``, spec §8) with :func:`posewire.producers.poseformat.pose_file_to_recording`,
keeping the folder layout. Files are converted in parallel, one per worker process
(``--jobs``, default: every core). A run is resumable: each output is written under a
temporary name and renamed when complete, and an output that is already a complete
recording is skipped (``--force`` converts it again). A file that cannot be converted is
reported and skipped, never the end of the run (exit status 3 when any was).

Progress goes to stderr (one redrawn line on a terminal, else a line at most each second);
the closing table on stdout has per file the frames, frame rate, the parts lost (share of
frames a part that the file estimates was lost) and the bytes per frame of the source and
of the recording, then the totals, the size ratio and the conversion speed in frames per
second per core (frames over the workers' CPU seconds).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

__all__ = ["EXIT_FAILED", "Job", "Outcome", "add_parser", "convert_one", "format_table", "is_complete", "plan",
           "run_convert"]

#: Exit status when some files could not be converted (the others were).
EXIT_FAILED = 3


@dataclass(frozen=True)
class Job:
    """One file to convert: the ``.pose`` source and the recording to write."""

    source: Path
    target: Path


@dataclass
class Outcome:
    """What one job did: ``status`` ``converted``, ``complete`` (the output was already a
    complete recording: skipped) or ``failed`` (``error`` says why)."""

    job: Job
    status: Literal["converted", "complete", "failed"]
    frames: int = 0
    fps: float = 0.0
    source_bytes: int = 0
    target_bytes: int = 0
    lost: dict[str, float] = field(default_factory=dict)
    cpu_s: float = 0.0
    error: str = ""


def plan(inputs: Sequence[str | Path], out: str | Path | None) -> list[Job]:
    """The jobs for ``inputs`` (files, or folders searched for ``*.pose`` recursively):
    each target is ``out/<path below the folder>.pwr``, or beside its source without
    ``out``. A missing input raises ``usage.bad_option``."""
    from posewire.codec.errors import UsageError

    jobs: list[Job] = []
    seen: set[Path] = set()
    for given in inputs:
        root = Path(given)
        if root.is_dir():
            pairs = [(p, p.relative_to(root)) for p in sorted(root.rglob("*.pose")) if p.is_file()]
        elif root.is_file():
            pairs = [(root, Path(root.name))]
        else:
            raise UsageError("usage.bad_option", f"no such file or folder: {given}", path=str(given))
        for source, rel in pairs:
            target = (Path(out) / rel if out is not None else source).with_suffix(".pwr")
            if target in seen:
                continue
            seen.add(target)
            jobs.append(Job(source, target))
    return jobs


def is_complete(path: Path) -> bool:
    """Whether ``path`` is a complete recording (header, records, index and trailer all
    check, spec §8.6): a resumed run skips it."""
    from posewire.codec import container
    from posewire.codec.errors import PosewireError

    try:
        return container.read(path.read_bytes()).complete
    except (OSError, PosewireError):
        return False


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.stem}.partial.pwr")


def convert_one(job: Job, *, filter: bool = False, mirrored: str = "report", force: bool = False) -> Outcome:
    """Convert one file (in a worker process); never raises: a failure is an outcome."""
    from posewire.codec import container
    from posewire.codec.errors import PosewireError

    started = time.process_time()
    try:
        source_bytes = job.source.stat().st_size
        if not force and is_complete(job.target):
            index = container.read(job.target.read_bytes()).index
            return Outcome(job, "complete", frames=index.frames if index else 0, source_bytes=source_bytes,
                           target_bytes=job.target.stat().st_size)
        from posewire.producers.poseformat import pose_file_to_recording

        job.target.parent.mkdir(parents=True, exist_ok=True)
        temporary = _temporary(job.target)
        summary = pose_file_to_recording(job.source, temporary, filter=filter,
                                         mirrored="flip" if mirrored == "flip" else "report")
        os.replace(temporary, job.target)  # complete: only now under its name
        tracking = summary.result.tracking
        lost = {part: float((states == "lost").mean()) for part, states in tracking.items()
                if len(states) and float((states == "lost").mean()) > 0.0}
        return Outcome(job, "converted", frames=summary.frames, fps=summary.fps, source_bytes=source_bytes,
                       target_bytes=job.target.stat().st_size, lost=lost, cpu_s=time.process_time() - started)
    except (PosewireError, OSError, ValueError) as exc:
        return Outcome(job, "failed", error=str(exc), cpu_s=time.process_time() - started)
    except Exception as exc:  # a reader bug on foreign bytes: reported, the run goes on
        return Outcome(job, "failed", error=f"{type(exc).__name__}: {exc}", cpu_s=time.process_time() - started)


class _Progress:
    """Files done, frames, failures on ``stream``: redrawn on a terminal, else a line at most
    every ``every`` seconds and the last state at the end."""

    def __init__(self, total: int, stream: TextIO, *, every: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.stream, self.every, self.clock = total, stream, every, clock
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.start = clock()
        self.done = self.frames = self.failed = 0
        self._last = -1e9
        self._line = ""

    def update(self, outcome: Outcome) -> None:
        self.done += 1
        self.frames += outcome.frames
        self.failed += outcome.status == "failed"
        elapsed = max(self.clock() - self.start, 1e-9)
        share = self.done / self.total if self.total else 1.0
        bar = "#" * int(share * 24) + "-" * (24 - int(share * 24))
        self._line = (f"[{bar}] {self.done}/{self.total} files | {self.frames} frames | "
                      f"{self.frames / elapsed:.0f} frames/s" + (f" | {self.failed} failed" if self.failed else ""))
        now = self.clock()
        if self.tty or now - self._last >= self.every or self.done == self.total:
            self._last = now
            self.stream.write(("\r\033[K" + self._line) if self.tty else self._line + "\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.tty and self._line:
            self.stream.write("\n")
            self.stream.flush()


def _run_jobs(jobs: list[Job], *, workers: int, convert: Callable[[Job], Outcome]) -> Iterator[Outcome]:
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield convert(job)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures: list[Future[Outcome]] = [pool.submit(convert, job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


@dataclass(frozen=True)
class _Convert:
    """The worker's callable (picklable): :func:`convert_one` with the run's options."""

    filter: bool
    mirrored: str
    force: bool

    def __call__(self, job: Job) -> Outcome:
        return convert_one(job, filter=self.filter, mirrored=self.mirrored, force=self.force)


def run_convert(jobs: list[Job], *, workers: int, filter: bool = False, mirrored: str = "report",
                force: bool = False, progress: TextIO | None = None) -> tuple[list[Outcome], float]:
    """Convert ``jobs`` on ``workers`` processes; the outcomes in job order and the wall seconds."""
    bar = _Progress(len(jobs), progress if progress is not None else sys.stderr)
    started = time.perf_counter()
    order = {job: i for i, job in enumerate(jobs)}
    got: list[Outcome] = []
    for outcome in _run_jobs(jobs, workers=workers, convert=_Convert(filter, mirrored, force)):
        got.append(outcome)
        bar.update(outcome)
    bar.finish()
    got.sort(key=lambda o: order[o.job])
    return got, time.perf_counter() - started


def _per_frame(total: int, frames: int) -> str:
    return f"{total / frames:.1f}" if frames else "-"


def format_table(outcomes: list[Outcome], *, seconds: float, workers: int) -> str:
    """The closing table: a row per file, the totals, the failures (module docstring)."""
    rows = [("file", "frames", "fps", "parts lost (share of frames)", "source B/frame", "pwr B/frame", "smaller")]
    for o in outcomes:
        name = str(o.job.source)
        if o.status == "failed":
            rows.append((name, "-", "-", "failed (see below)", "-", "-", "-"))
            continue
        lost = ", ".join(f"{p} {100 * s:.0f}%" for p, s in o.lost.items()) or ("-" if o.status == "complete"
                                                                                 else "none")
        ratio = f"{o.source_bytes / o.target_bytes:.0f}×" if o.target_bytes else "-"
        rows.append((name + (" (done before)" if o.status == "complete" else ""), str(o.frames),
                     f"{o.fps:g}" if o.fps else "-", lost, _per_frame(o.source_bytes, o.frames),
                     _per_frame(o.target_bytes, o.frames), ratio))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 2, 4, 5, 6}
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             .rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    ok = [o for o in outcomes if o.status != "failed"]
    converted = [o for o in outcomes if o.status == "converted"]
    failed = [o for o in outcomes if o.status == "failed"]
    frames = sum(o.frames for o in ok)
    src, dst = sum(o.source_bytes for o in ok), sum(o.target_bytes for o in ok)
    cpu = sum(o.cpu_s for o in converted)
    lost_total = sum(o.frames * sum(o.lost.values()) for o in converted)
    parts = sum(o.frames * 8 for o in converted)  # spec §3.4.2: eight parts per frame
    lines.append("")
    lines.append(f"files: {len(outcomes)} ({len(converted)} converted, {len(ok) - len(converted)} complete before, "
                 f"{len(failed)} failed); frames: {frames}"
                 + (f"; parts lost: {100 * lost_total / parts:.1f}% of part-frames" if parts else ""))
    if frames and dst:
        lines.append(f"bytes per frame: {src / frames:.1f} (pose-format) -> {dst / frames:.1f} (posewire recording), "
                     f"{src / dst:.1f}× smaller")
    if cpu > 0:
        conv_frames = sum(o.frames for o in converted)
        lines.append(f"speed: {conv_frames / cpu:.0f} frames/s per core ({conv_frames} frames in {cpu:.2f} CPU s), "
                     f"{conv_frames / seconds:.0f} frames/s on {workers} workers ({seconds:.2f} s)")
    lines += [f"failed: {o.job.source}: {o.error}" for o in failed]
    return "\n".join(lines)


def _cmd_convert(args: argparse.Namespace) -> int:
    from posewire.codec.errors import UsageError

    from .conventions import describe_error

    try:
        jobs = plan(args.inputs, args.out)
    except UsageError as exc:
        print(f"posewire convert: {describe_error(exc)}", file=sys.stderr)
        return 2
    if not jobs:
        print("posewire convert: no .pose files found (usage.bad_option)", file=sys.stderr)
        return 2
    workers = max(1, min(args.jobs or os.cpu_count() or 1, len(jobs)))
    print(f"posewire convert: {len(jobs)} files on {workers} workers", file=sys.stderr)
    outcomes, seconds = run_convert(jobs, workers=workers, filter=args.filter, mirrored=args.mirrored,
                                    force=args.force)
    print(format_table(outcomes, seconds=seconds, workers=workers))
    return EXIT_FAILED if any(o.status == "failed" for o in outcomes) else 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``posewire convert`` to the CLI's subparsers."""
    p = subparsers.add_parser("convert", help="convert pose-format files or folders into posewire recordings "
                                              "(.pwr), in parallel, resumable")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".pose files, or folders searched for them")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder for the recordings, keeping the layout below each input folder "
                        "(default: beside each source)")
    p.add_argument("--jobs", type=int, default=0, metavar="N", help="worker processes (0: one per core)")
    p.add_argument("--force", action="store_true", help="convert again files whose recording is already complete")
    p.add_argument("--filter", action="store_true", help="smooth with the per-dim One-Euro filter")
    p.add_argument("--mirrored", action="store_const", const="flip", default="report",
                   help="the inputs are mirrored (selfie): un-mirror them (spec §2.2)")
    p.set_defaults(func=_cmd_convert)
