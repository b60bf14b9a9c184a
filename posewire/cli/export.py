"""``posewire export``: a recording -> an animated, skinned glTF binary (GLB).

``posewire export --recording REC.pwr --out anim.glb`` reads a recording of any format
(:func:`posewire.producers.recording.read_recording`), decodes every frame on the mannequin-x
wooden mannequin (:func:`posewire.consumers.gltf.export_glb`; spec §4.1–§4.5) and prints a
summary: frames, duration, joints animated, bytes, skipped canonical joints (seed 001)
and what the decoder clamped or replaced (spec §3.5, never silent).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from posewire.codec.errors import PosewireError, UsageError

if TYPE_CHECKING:
    from posewire.consumers.gltf import ExportSummary

__all__ = ["add_parser", "format_summary"]


def format_summary(summary: ExportSummary) -> str:
    """The human-readable summary of a :class:`posewire.consumers.gltf.ExportSummary`."""
    changed = {k: v for k, v in summary.report.items() if v and k != "skipped_joints"}
    return "\n".join([
        f"wrote {summary.path}: {summary.frames} frames, {summary.duration_s:.3f} s, "
        f"{summary.joints_animated} joints animated, {summary.bytes} bytes",
        "skipped (avatar lacks): " + (", ".join(summary.skipped) or "none"),
        "decoder changes: " + (", ".join(f"{k} {v}" for k, v in changed.items()) or "none"),
    ])


def _cmd_export(args: argparse.Namespace) -> int:
    import numpy as np

    from posewire.consumers.gltf import export_glb
    from posewire.producers.recording import open_recording

    try:
        recording = open_recording(args.recording)
        frames = recording.frames
        if recording.lost is not None:  # spec §8.6: a cut file, read to its last whole record
            print(f"posewire export: {args.recording}: {recording.lost}", file=sys.stderr)
        if not frames:
            raise UsageError("usage.bad_option", f"{args.recording} holds no frames")
        vectors = np.stack([f.vector() for f in frames])
        summary = export_glb(vectors, [f.t_us for f in frames], args.out)
    except (OSError, PosewireError) as exc:
        from .conventions import describe_error

        print(f"posewire export: {describe_error(exc)}", file=sys.stderr)
        return 1
    print(format_summary(summary))
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``posewire export`` to the CLI's subparsers."""
    p = subparsers.add_parser("export", help="export a recording as an animated glTF (GLB) of a mannequin")
    p.add_argument("--recording", type=Path, required=True,
                   help="a recording: posewire (.pwr, spec §8), JSON lines, or a .pose file (the record extra)")
    p.add_argument("--out", type=Path, required=True, help="output file (.glb)")
    p.set_defaults(func=_cmd_export)
