"""``posewire record``: make a posewire recording from captured landmarks.

``posewire record --from-pose FILE.pose --out REC.pwr`` converts a MediaPipe Holistic
``.pose`` file (PyPI ``pose-format``) with :func:`posewire.producers.poseformat.pose_file_to_recording`
and prints a summary: frames, fps, tracked share per part, the calibration with the axes
that fell back to shoulder width (spec §4.1), and every clamp (spec §3.1, never silent).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from posewire.codec.errors import UsageError

if TYPE_CHECKING:
    from posewire.producers.poseformat import RecordSummary

__all__ = ["add_parser", "format_summary"]


def format_summary(summary: RecordSummary) -> str:
    """The human-readable summary of a :class:`posewire.producers.poseformat.RecordSummary`."""
    result = summary.result
    report = result.report
    cal = result.calibration
    lines = [
        f"wrote {summary.frames} frames at {summary.fps:.2f} fps to {summary.out_path}",
        "tracked: " + ", ".join(f"{part} {100 * share:.0f}%" for part, share in report.tracked_fraction.items()
                                if result.tracking[part][0] != "not_estimated" or share > 0),
        "not estimated: " + (", ".join(part for part, states in result.tracking.items()
                                       if (states == "not_estimated").all()) or "none"),
        "calibration: " + ", ".join(f"{k} {'-' if v is None else f'{v:.3f} m'}"
                                    for k, v in asdict(cal.calibration).items()),
        "units L (m): " + ", ".join(f"L_{a} {v:.3f}" for a, v in zip("xyz", cal.units.L, strict=True)),
        "fallback axes (shoulder width): " + (", ".join(report.fallback_axes) or "none"),
    ]
    lines += [f"note: {note}" for note in report.notes]
    if report.clamped:
        lines.append("clamped (frames): " + ", ".join(f"{k} {v}" for k, v in report.clamped.items()))
    else:
        lines.append("clamped: none")
    degenerate = {k: v for k, v in report.degenerate.items() if v}
    if degenerate:
        lines.append("degenerate geometry (frames): " + ", ".join(f"{k} {v}" for k, v in degenerate.items()))
    if summary.filtered is not None:
        before, after = summary.filtered.jitter_before, summary.filtered.jitter_after
        lines.append("One-Euro filter, median jitter per frame before -> after: "
                     + ", ".join(f"{g} {before[g]:.4f} -> {after[g]:.4f}" for g in before if g in after))
    lines.append(f"conversion: {summary.seconds_per_frame * 1e6:.1f} µs per frame (batch)")
    return "\n".join(lines)


def _cmd_record(args: argparse.Namespace) -> int:
    from posewire.producers.poseformat import pose_file_to_recording

    try:
        summary = pose_file_to_recording(args.from_pose, args.out, visibility_threshold=args.visibility,
                                         filter=args.filter, mirrored=args.mirrored)
    except (UsageError, OSError) as exc:
        from .conventions import describe_error

        print(f"posewire record: {describe_error(exc)}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``record`` sub-command to the ``posewire`` parser."""
    p = subparsers.add_parser("record", help="make a recording from captured landmarks (.pose files)")
    p.add_argument("--from-pose", required=True, metavar="FILE.pose",
                   help="a MediaPipe Holistic recording in the pose-format .pose format")
    p.add_argument("--out", required=True, metavar="REC.pwr",
                   help="the recording to write: REC.pwr a posewire recording (spec §8), any other name JSON lines")
    p.add_argument("--visibility", type=float, default=0.5, metavar="V",
                   help="pose wrist visibility below which an arm counts as lost")
    p.add_argument("--filter", action="store_true",
                   help="smooth with the per-dim One-Euro filter (posewire.producers.filter) and report jitter")
    # a flag, as in produce (posewire.cli.conventions); without it a mirrored input is only reported
    p.add_argument("--mirrored", action="store_const", const="flip", default="report",
                   help="the input is mirrored (selfie): un-mirror it (spec §2.2); without it, "
                        "a mirrored input is reported, not changed")
    p.set_defaults(func=_cmd_record)
