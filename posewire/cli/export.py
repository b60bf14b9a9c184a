"""``posewire export``: a recording -> an animated, skinned glTF binary (GLB) or a BVH file.

``posewire export --recording REC.pwr --out anim.glb`` reads a recording of any format
(:func:`posewire.producers.recording.read_recording`), decodes every frame on the mannequin-x
wooden mannequin (:func:`posewire.consumers.gltf.export_glb`; spec §4.1–§4.5) and prints a
summary: frames, duration, joints animated, bytes, skipped canonical joints (seed 001)
and what the decoder clamped or replaced (spec §3.5, never silent).

``--out anim.bvh`` writes a Biovision Hierarchy file instead
(:func:`posewire.consumers.bvh.write_bvh`), on ``--avatar reference`` (the reference
avatar, the default), ``--avatar mannequin`` or ``--avatar my.vrm`` (a VRM model's
skeleton): offsets in that avatar's proportions,
rotations at the recording's rate. ``--out take.vrma`` writes a VRM Animation
(:func:`posewire.bridges.vrma.export_vrma`): humanoid bones, expressions and gaze that
play on any VRM avatar. ``--out take.glb --avatar my.vrm`` writes the user's own VRM 0.x
or 1.0 model with the take as one glTF animation on its humanoid bones
(:func:`posewire.consumers.vrm.export_avatar_glb`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from posewire.codec.errors import PosewireError, UsageError

if TYPE_CHECKING:
    from posewire.consumers.bvh import BvhSummary
    from posewire.consumers.gltf import ExportSummary

__all__ = ["add_parser", "format_bvh_summary", "format_summary"]


def format_summary(summary: ExportSummary) -> str:
    """The human-readable summary of a :class:`posewire.consumers.gltf.ExportSummary`."""
    changed = {k: v for k, v in summary.report.items() if v and k != "skipped_joints"}
    lines = [
        f"wrote {summary.path}: {summary.frames} frames, {summary.duration_s:.3f} s, "
        f"{summary.joints_animated} joints animated, {summary.bytes} bytes",
        "skipped (avatar lacks): " + (", ".join(summary.skipped) or "none"),
        "decoder changes: " + (", ".join(f"{k} {v}" for k, v in changed.items()) or "none"),
    ]
    if summary.stand_ins:
        lines.insert(2, "stand-ins (zero-length joints for bones the avatar lacks): " + ", ".join(summary.stand_ins))
    return "\n".join(lines)


def format_bvh_summary(summary: BvhSummary) -> str:
    """The human-readable summary of a :class:`posewire.consumers.bvh.BvhSummary`."""
    changed = {k: v for k, v in summary.report.items() if v and k != "skipped_joints"}
    return "\n".join([
        f"wrote {summary.path}: {summary.frames} frames at {1.0 / summary.frame_time_s:.3f} Hz, "
        f"{summary.joints} joints of the {summary.avatar} avatar, {summary.bytes} bytes",
        "skipped (avatar lacks): " + (", ".join(summary.skipped) or "none"),
        "decoder changes: " + (", ".join(f"{k} {v}" for k, v in changed.items()) or "none"),
    ])


#: Output formats by file extension.
_FORMATS = {".glb": "glb", ".bvh": "bvh", ".vrma": "vrma"}
#: The built-in avatars ``--avatar`` names; anything else is a VRM file's path.
_BUILT_IN = ("reference", "mannequin")


def _cmd_export(args: argparse.Namespace) -> int:
    import numpy as np

    from posewire.producers.recording import open_recording

    try:
        kind = _FORMATS.get(args.out.suffix.lower())
        if kind is None:
            raise UsageError("usage.bad_option",
                             f"--out {args.out}: the extension names the format, one of {sorted(_FORMATS)}")
        avatar = args.avatar or ("mannequin" if kind == "glb" else "reference")
        own = avatar not in _BUILT_IN
        if kind == "vrma" and args.avatar is not None:
            raise UsageError("usage.bad_option", "a VRM Animation plays on any VRM avatar: leave out --avatar")
        if kind == "glb" and avatar == "reference":
            raise UsageError("usage.bad_option",
                             "a GLB is written on the mannequin or on your VRM model (--avatar my.vrm)")
        if own and not Path(avatar).is_file():
            raise UsageError("usage.bad_option", f"--avatar {avatar}: not {' or '.join(_BUILT_IN)}, nor a VRM file")
        recording = open_recording(args.recording)
        frames = recording.frames
        if recording.lost is not None:  # spec §8.6: a cut file, read to its last whole record
            print(f"posewire export: {args.recording}: {recording.lost}", file=sys.stderr)
        if not frames:
            raise UsageError("usage.bad_option", f"{args.recording} holds no frames")
        vectors = np.stack([f.vector() for f in frames])
        stamps = [f.t_us for f in frames]
        if kind == "bvh":
            from posewire.consumers.bvh import write_bvh

            text = format_bvh_summary(write_bvh(vectors, stamps, args.out, avatar=avatar,
                                                vrm=Path(avatar) if own else None))
        elif kind == "vrma":
            from posewire.bridges.vrma import export_vrma

            vrma = export_vrma(frames, args.out)
            text = (f"wrote {vrma.path}: {vrma.frames} frames, {vrma.duration_s:.3f} s, {vrma.bones} humanoid "
                    f"bones, {len(vrma.expressions)} expressions and the gaze, {vrma.bytes} bytes")
        elif own:
            from posewire.consumers.vrm import export_avatar_glb

            text = format_summary(export_avatar_glb(vectors, stamps, Path(avatar), args.out))
        else:
            from posewire.consumers.gltf import export_glb

            text = format_summary(export_glb(vectors, stamps, args.out))
    except (OSError, PosewireError) as exc:
        from .conventions import describe_error

        print(f"posewire export: {describe_error(exc)}", file=sys.stderr)
        return 1
    print(text)
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``posewire export`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "export", help="export a recording as an animated glTF (GLB) of the mannequin or your VRM, as BVH "
                       "or as VRM Animation")
    p.add_argument("--recording", type=Path, required=True,
                   help="a recording: posewire (.pwr, spec §8), JSON lines, or a .pose file (the record extra)")
    p.add_argument("--out", type=Path, required=True,
                   help="output file: .glb (skinned mannequin or your VRM), .bvh or .vrma (VRM Animation)")
    p.add_argument("--avatar", default=None, metavar="reference|mannequin|MODEL.vrm",
                   help="a BVH's skeleton: the reference avatar (default), the mannequin or your VRM's; a GLB's "
                        "model: the mannequin (default) or your own VRM 0.x / 1.0 file")
    p.set_defaults(func=_cmd_export)
