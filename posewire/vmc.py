"""``posewire vmc``: a posewire stream as the VMC protocol (OSC over UDP), so VTuber
applications that take VMC (VSeeFace, VNyan, Warudo, ...) can be driven by posewire.

Each received frame is decoded (:func:`posewire.consumers.pose.decode_pose`, spec
§4.1–§4.5; :func:`posewire.consumers.face.face_weights`, spec §4.6–§4.7) on the
``mannequin-x`` mannequin — T-pose with world-aligned bind frames, like a VRM's
normalized humanoid, so its local rotations are what a VMC receiver applies to its own
humanoid bones — and sent as one OSC bundle:

* ``/VMC/Ext/Root/Pos "root" px py pz qx qy qz qw`` — the model root (origin, identity);
* ``/VMC/Ext/Bone/Pos name px py pz qx qy qz qw`` — per humanoid bone (Unity
  ``HumanBodyBones`` / VRM 0.x humanoid names, :data:`VMC_BONES`): its local rest offset
  and local rotation;
* ``/VMC/Ext/Blend/Val name value`` — the 52 ARKit channels (perfect sync names) and the
  VRM 0.x presets ``A I U E O`` (viseme mix folded onto the vowels, or ``A`` = jawOpen
  without mouthing) and ``Blink_L``/``Blink_R`` (eyeBlinkLeft/Right); then
  ``/VMC/Ext/Blend/Apply``;
* ``/VMC/Ext/OK 1`` (model loaded) and ``/VMC/Ext/T seconds`` (sender time).

Coordinates: posewire's body frame (spec §2.1: +Y up, +Z forward, +X = the character's
left, right-handed) is the VRM 1.0 / glTF frame; Unity is left-handed with +X the
character's right. The change is the reflection ``x → −x`` (UniVRM "Unity <-> VRM1:
invert X axis"): positions ``(−x, y, z)``, rotations ``(w, x, y, z) → (w, x, −y, −z)``,
sent in VMC's ``qx qy qz qw`` order.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec.registry import VISEMES

__all__ = ["DEFAULT_PORT", "VMC_BONES", "VmcFrame", "add_parser", "to_unity", "vmc_frame"]

#: The VMC protocol's usual receiver port (VSeeFace, VNyan, Warudo).
DEFAULT_PORT = 39539
#: VMC bone name -> canonical ``helix-humanoid@1`` joint.
VMC_BONES: dict[str, str] = {"Hips": "pelvis", "Spine": "spine_01", "Chest": "spine_03",
                             "UpperChest": "spine_05", "Neck": "neck_01", "Head": "head"}
for _s, _side in (("l", "Left"), ("r", "Right")):
    VMC_BONES |= {f"{_side}Shoulder": f"clavicle_{_s}", f"{_side}UpperArm": f"upperarm_{_s}",
                  f"{_side}LowerArm": f"lowerarm_{_s}", f"{_side}Hand": f"hand_{_s}",
                  f"{_side}UpperLeg": f"thigh_{_s}", f"{_side}LowerLeg": f"calf_{_s}",
                  f"{_side}Foot": f"foot_{_s}", f"{_side}Toes": f"ball_{_s}"}
    for _f, _canon in (("Thumb", "thumb"), ("Index", "index"), ("Middle", "middle"), ("Ring", "ring"),
                       ("Little", "pinky")):
        for _k, _seg in enumerate(("Proximal", "Intermediate", "Distal"), start=1):
            VMC_BONES[f"{_side}{_f}{_seg}"] = f"{_canon}_{_k:02d}_{_s}"
#: Viseme -> VRM 0.x vowel preset (posewire.consumers.face.VOWEL_FOLD, then aa E I O U -> A E I O U).
_VOWEL_PRESET = {"aa": "A", "E": "E", "I": "I", "O": "O", "U": "U"}


def to_unity(position: NDArray[np.float64], rotation: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """Body-frame position ``(3,)`` and rotation ``(w, x, y, z)`` -> Unity's
    ``[px, py, pz]`` and ``[qx, qy, qz, qw]`` (module docstring)."""
    x, y, z = (float(v) for v in position)
    w, qx, qy, qz = (float(v) for v in rotation)
    return [-x, y, z], [qx, -qy, -qz, w]


@dataclass(frozen=True)
class VmcFrame:
    """One frame as VMC messages: ``(address, args)`` in sending order."""

    messages: list[tuple[str, list[Any]]]


class _Avatar:
    def __init__(self) -> None:
        from posewire.consumers.gltf import mannequin_skeleton

        skel, retarget = mannequin_skeleton()
        self.skeleton = retarget.apply(skel).skeleton
        index = self.skeleton.index
        self.bones = [(name, index[canon]) for name, canon in VMC_BONES.items() if canon in index]


_AVATAR: _Avatar | None = None


def _avatar() -> _Avatar:
    global _AVATAR
    if _AVATAR is None:
        _AVATAR = _Avatar()
    return _AVATAR


def vmc_frame(values: NDArray[np.float64], *, mouthing: Sequence[float] | None = None,
              t: float = 0.0) -> VmcFrame:
    """The VMC messages of one pose vector ``(N,)`` (NaN = default, spec §3.5) and its
    mouthing mix (15 shares or ``None``) at sender time ``t`` seconds."""
    from posewire.consumers.face import VOWEL_FOLD, face_weights
    from posewire.consumers.pose import decode_pose

    av = _avatar()
    pose = decode_pose(np.asarray(values, dtype=np.float64)[None], av.skeleton)
    local = pose.local_rotations[0]
    msgs: list[tuple[str, list[Any]]] = [("/VMC/Ext/Root/Pos", ["root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])]
    for name, j in av.bones:
        p, q = to_unity(av.skeleton.offsets[j], local[j])
        msgs.append(("/VMC/Ext/Bone/Pos", [name, *p, *q]))
    face = face_weights(np.asarray(values, dtype=np.float64), capability="viseme15",
                        visemes=None if mouthing is None else list(mouthing))
    for channel, weight in face.arkit.items():
        msgs.append(("/VMC/Ext/Blend/Val", [channel, float(weight)]))
    vowels = dict.fromkeys(_VOWEL_PRESET.values(), 0.0)
    for viseme in VISEMES:
        target = VOWEL_FOLD[viseme]
        if target is not None:
            vowels[_VOWEL_PRESET[target]] += float(face.visemes[viseme])
    if not any(v > 0.0 for v in vowels.values()):
        vowels["A"] = float(face.arkit["jawOpen"])
    for preset, w in vowels.items():
        msgs.append(("/VMC/Ext/Blend/Val", [preset, min(1.0, w)]))
    msgs.append(("/VMC/Ext/Blend/Val", ["Blink_L", float(face.arkit["eyeBlinkLeft"])]))
    msgs.append(("/VMC/Ext/Blend/Val", ["Blink_R", float(face.arkit["eyeBlinkRight"])]))
    msgs.append(("/VMC/Ext/Blend/Apply", []))
    msgs.append(("/VMC/Ext/OK", [1]))
    msgs.append(("/VMC/Ext/T", [float(t)]))
    return VmcFrame(msgs)


def _bundle(frame: VmcFrame) -> bytes:
    from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
    from pythonosc.osc_message_builder import OscMessageBuilder

    builder = OscBundleBuilder(IMMEDIATELY)
    for address, args in frame.messages:
        msg = OscMessageBuilder(address=address)
        for a in args:
            msg.add_arg(a)
        builder.add_content(msg.build())
    data: bytes = builder.build().dgram
    return data


async def run_vmc(url: str, stream: str, host: str, port: int, *, token: str | None = None,
                  count: int = 0, timeout: float | None = None,
                  client_options: dict[str, Any] | None = None) -> int:
    """Subscribe to ``stream`` and send every frame to ``host:port`` as one VMC bundle;
    ``count``: stop after that many frames (0: never). Says on stderr where it connects
    and what it waits for; ``timeout``: give up (:class:`~posewire.waiting.WaitTimeoutError`)
    when no frame came within that many seconds (:mod:`posewire.waiting`);
    ``client_options``: TLS and liveness (:func:`posewire.net_options.client_options`).
    Returns the frames sent."""
    import socket

    from posewire.consumers.subscriber import Subscriber

    from .waiting import StatusLines, first_frame, then, within

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    started = time.monotonic()
    sent = 0
    status = StatusLines("vmc")
    sub = Subscriber(url, stream, token=token, merge=True, on_status=status, client="posewire-vmc",
                     **(client_options or {}))
    status.start(sub.url, stream)
    try:
        first = await within(timeout, started, status, first_frame(sub, status))
        if first is not None:
            async for frame in then(first, sub):
                mouthing = frame.conditions.mouthing if frame.conditions else None
                data = _bundle(vmc_frame(frame.values, mouthing=mouthing, t=time.monotonic() - started))
                sock.sendto(data, (host, port))
                sent += 1
                if count and sent >= count:
                    break
    finally:
        await sub.close()
        sock.close()
    return sent


def _cmd_vmc(args: argparse.Namespace) -> int:
    host, _, port_text = args.to.rpartition(":")
    try:
        port = int(port_text) if host else DEFAULT_PORT
    except ValueError:
        print(f"posewire vmc: --to must be HOST:PORT, not {args.to!r} (usage.bad_option)", file=sys.stderr)
        return 2
    host = (host or args.to).strip("[]")
    token = args.token or os.environ.get("POSEWIRE_TOKEN")
    from posewire.codec.errors import UsageError

    from .conventions import describe_error
    from .net_options import client_options
    from .transport import RelayError
    from .waiting import WaitTimeoutError

    try:
        sent = asyncio.run(run_vmc(args.url, args.stream, host, port, token=token, count=args.frames,
                                   timeout=args.timeout, client_options=client_options(args)))
    except KeyboardInterrupt:
        return 0
    except (OSError, UsageError, RelayError, WaitTimeoutError) as exc:
        print(f"posewire vmc: {describe_error(exc)}", file=sys.stderr)
        return 1
    print(f"sent {sent} VMC bundles to {host}:{port}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``vmc`` sub-command to the ``posewire`` parser."""
    from .conventions import add_frames_option, add_stream_option
    from .net_options import add_client_options
    from .waiting import add_timeout_option

    p = subparsers.add_parser("vmc", help="send a stream as the VMC protocol (OSC/UDP) to a VTuber app")
    add_stream_option(p)
    p.add_argument("--to", default=f"127.0.0.1:{DEFAULT_PORT}", metavar="HOST:PORT", help="VMC receiver")
    p.add_argument("--url", default="ws://127.0.0.1:8765", help="relay URL")
    p.add_argument("--token", help="auth token (default: $POSEWIRE_TOKEN)")
    add_frames_option(p)
    add_timeout_option(p, what="receiving frames")
    add_client_options(p)
    p.set_defaults(func=_cmd_vmc)
