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
  and local rotation; and the face bones the mannequin lacks (:data:`FACE_BONES`, nominal
  offsets): ``LeftEye``/``RightEye`` turned by the gaze dims (yaw ``f_gaze_yaw`` ±1 = ±30°,
  the producer's scale, spec §7.3; pitch ``f_gaze_pitch`` ±1 = ±20°), ``Jaw`` opened by
  ``m_jaw`` (+1 = 25° down; closed at 0 and below);
* ``/VMC/Ext/Blend/Val name value`` — the 52 ARKit channels (perfect sync), the VRM 0.x
  presets ``A I U E O`` (viseme mix folded onto the vowels, or ``A`` = jawOpen without
  mouthing), ``Blink_L``/``Blink_R`` (eyeBlinkLeft/Right) and ``Joy Angry Sorrow Fun``
  (:func:`expression_presets`: each from the face cue that shows it — the smile, the
  lowered brows, the raised inner brows or the corners down — past what a calm face
  shows, or the frame's affect condition, spec §3.4.4); names spelled for the
  receiver (``--blend-names``, :data:`BLEND_NAME_STYLES`, docs/vmc.md); then
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
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from posewire.codec.conditions import Affect
from posewire.codec.registry import VISEMES

if TYPE_CHECKING:
    from posewire.consumers.face import FaceWeights

__all__ = ["BLEND_NAME_STYLES", "DEFAULT_PORT", "EXPRESSION_RAMPS", "EYE_PITCH_DEG", "EYE_YAW_DEG", "FACE_BONES",
           "JAW_OPEN_DEG", "VMC_BONES", "VmcFrame", "add_parser", "blend_name", "effective_vector", "expression_cues",
           "expression_presets", "face_bone_rotations", "run_vmc_recording", "to_unity", "vmc_frame", "vrm_presets"]

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
#: The face bones of Unity's ``HumanBodyBones`` the mannequin has no joint for, with a
#: nominal local offset from their parent (metres, body frame, spec §2.1: +X = the
#: character's left): the VMC marionette sends every humanoid bone, and receivers turn
#: the eyes and the jaw of their own model by these rotations.
FACE_BONES: dict[str, tuple[float, float, float]] = {
    "LeftEye": (0.032, 0.07, 0.09), "RightEye": (-0.032, 0.07, 0.09), "Jaw": (0.0, 0.0, 0.03)}
#: Eye yaw at ``f_gaze_yaw`` = ±1 (degrees): the producer's scale (spec §7.3: ±1 = 30°).
EYE_YAW_DEG = 30.0
#: Eye pitch at ``f_gaze_pitch`` = ±1 (degrees): about the comfortable vertical range of
#: human eyes (the producer reads it from ARKit's eyeLookUp/Down, which have no angle).
EYE_PITCH_DEG = 20.0
#: Jaw rotation at ``m_jaw`` = +1 (a yawn; degrees): about the mandible's largest opening.
JAW_OPEN_DEG = 25.0
#: ``--blend-names``: how blend names are spelled (docs/vmc.md has the sources):
#: ``perfect-sync`` — ARKit names with the first letter capitalised (``JawOpen``), the
#: clip names of VRoid perfect-sync models (HANA_Tool) and what UniVRM 0.56+ receivers
#: match exactly; ``arkit`` — Apple's camelCase (``jawOpen``), for models whose clips or
#: shape keys carry ARKit's own names; ``upper`` — everything upper case (``JAWOPEN``,
#: ``BLINK_L``), what UniVRM's ``BlendShapeKey.ToString()`` and so the VirtualMotionCapture
#: sender emit, matched by receivers on UniVRM before 0.56 (case-insensitive keys).
BLEND_NAME_STYLES = ("perfect-sync", "arkit", "upper")
#: The VRM 0.x expression presets sent, with the affect label (spec §3.4.4) each reads.
_EXPRESSIONS = {"Joy": "happy", "Angry": "angry", "Sorrow": "sad"}
#: ``cue: (calm, full)`` of :func:`expression_presets`: a preset is 0 while its cue
#: (:func:`expression_cues`) is at most ``calm`` and 1 from ``full``. ``calm`` sits above what
#: calm faces show on the committed data (the demo signer's 47 frames: smile ≤ 0.014, brows
#: lowered ≤ 0.19, inner brows ≤ 0.005, no frown; Grace Hopper's neutral portrait; the running
#: footballer's brows 0.22) and below the faces that show the expression (docs/vmc.md has
#: the measured table, tests/test_vmc.py checks it).
EXPRESSION_RAMPS: dict[str, tuple[float, float]] = {
    "smile": (0.15, 0.75), "brow_down": (0.25, 0.65), "inner_up": (0.10, 0.50), "frown": (0.15, 0.60)}
#: Viseme -> VRM 0.x vowel preset (posewire.consumers.face.VOWEL_FOLD, then aa E I O U -> A E I O U).
_VOWEL_PRESET = {"aa": "A", "E": "E", "I": "I", "O": "O", "U": "U"}


def to_unity(position: NDArray[np.float64], rotation: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """Body-frame position ``(3,)`` and rotation ``(w, x, y, z)`` -> Unity's
    ``[px, py, pz]`` and ``[qx, qy, qz, qw]`` (module docstring)."""
    x, y, z = (float(v) for v in position)
    w, qx, qy, qz = (float(v) for v in rotation)
    return [-x, y, z], [qx, -qy, -qz, w]


def blend_name(name: str, style: str, *, preset: bool = False) -> str:
    """``name`` (an ARKit channel, or with ``preset`` a VRM 0.x preset as UniVRM's
    ``BlendShapePreset`` spells it: ``A``, ``Blink_L``, ``Joy``) as ``style`` spells it
    (:data:`BLEND_NAME_STYLES`)."""
    if style not in BLEND_NAME_STYLES:
        from posewire.codec.errors import UsageError

        raise UsageError("usage.bad_option", f"--blend-names must be one of {', '.join(BLEND_NAME_STYLES)}, "
                                             f"not {style!r}", path="blend_names")
    if style == "upper":
        return name.upper()
    if preset or style == "arkit":
        return name
    return name[:1].upper() + name[1:]


def _axis_angle(axis: int, degrees: float) -> NDArray[np.float64]:
    half = np.radians(degrees) / 2.0
    q = np.zeros(4)
    q[0] = np.cos(half)
    q[1 + axis] = np.sin(half)
    return q


def face_bone_rotations(values: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Local rotations ``(w, x, y, z)`` in the body frame (spec §2.1) of
    :data:`FACE_BONES` from one effective pose vector ``(N,)`` (NaN = default): both eyes
    turned by the gaze, yaw about +Y (+ = toward the character's left, registry
    ``f_gaze_yaw``) then pitch about −X (+ = up); the jaw about +X (the chin down) by
    ``max(m_jaw, 0)``."""
    from posewire.codec.quaternion import multiply

    yaw = _axis_angle(1, EYE_YAW_DEG * _dim(values, "f_gaze_yaw"))
    pitch = _axis_angle(0, -EYE_PITCH_DEG * _dim(values, "f_gaze_pitch"))
    eye = multiply(yaw, pitch)
    jaw = _axis_angle(0, JAW_OPEN_DEG * max(_dim(values, "m_jaw"), 0.0))
    return {"LeftEye": eye, "RightEye": eye, "Jaw": jaw}


def _ramp(x: float, calm: float, full: float) -> float:
    """0 up to ``calm``, 1 from ``full``, linear between."""
    return float(np.clip((x - calm) / (full - calm), 0.0, 1.0))


def expression_cues(values: NDArray[np.float64]) -> dict[str, float]:
    """The face cues the expression presets read (:func:`expression_presets`), from one
    effective pose vector ``(N,)`` (NaN = default, 0 for these):

    * ``smile`` — ``mean(max(m_smile_l, 0), max(m_smile_r, 0))``, the mouth corners up;
    * ``brow_down`` — ``−mean(f_brow_l, f_brow_r)``, both outer brows lowered (one brow
      alone averages out);
    * ``inner_up`` — ``f_brow_inner − max(mean(f_brow_l, f_brow_r), 0)``, the inner brows
      raised *more than the outer ones* (raising all of them is surprise, not sorrow);
    * ``frown`` — ``mean(max(−m_smile_l, 0), max(−m_smile_r, 0))``, the corners down."""
    smile_l, smile_r = _dim(values, "m_smile_l"), _dim(values, "m_smile_r")
    brow = (_dim(values, "f_brow_l") + _dim(values, "f_brow_r")) / 2.0
    return {"smile": (max(smile_l, 0.0) + max(smile_r, 0.0)) / 2.0, "brow_down": -brow,
            "inner_up": _dim(values, "f_brow_inner") - max(brow, 0.0),
            "frown": (max(-smile_l, 0.0) + max(-smile_r, 0.0)) / 2.0}


def expression_presets(values: NDArray[np.float64], affect: Affect | None = None) -> dict[str, float]:
    """``Joy``, ``Angry``, ``Sorrow``, ``Fun`` (VRM 0.x presets, ``[0, 1]``) of one
    effective pose vector ``(N,)`` (the affect condition already applied, spec §3.4.4) and
    the frame's ``affect`` condition (docs/vmc.md, "Expression presets").

    Each preset reads the cue that shows it (:func:`expression_cues`), past the level a
    calm face already shows (:data:`EXPRESSION_RAMPS`: 0 up to ``calm``, 1 from ``full``):
    ``Joy`` = the smile; ``Angry`` = the brows lowered; ``Sorrow`` = the larger of the inner
    brows raised and the corners down. A smile overrules the other two (``× (1 − Joy)``:
    lowered brows over a smile are concentration, not anger). Every other face dim — the
    squint that MediaPipe reads at 0.3–0.7 on any face, the lips of speech, the jaw, blinks,
    gaze — moves none of them. ``Fun`` is sent as 0: no dim tells VRM's lighter, open-eyed
    smile from ``Joy``. An affect condition whose label has a preset (``happy`` → ``Joy``,
    ``angry`` → ``Angry``, ``sad`` → ``Sorrow``) sets that preset to its intensity: the
    producer said what the expression is."""
    cues = expression_cues(values)
    joy = _ramp(cues["smile"], *EXPRESSION_RAMPS["smile"])
    out = {"Joy": joy,
           "Angry": _ramp(cues["brow_down"], *EXPRESSION_RAMPS["brow_down"]) * (1.0 - joy),
           "Sorrow": max(_ramp(cues["inner_up"], *EXPRESSION_RAMPS["inner_up"]),
                         _ramp(cues["frown"], *EXPRESSION_RAMPS["frown"])) * (1.0 - joy),
           "Fun": 0.0}
    if affect is not None:
        for name, label in _EXPRESSIONS.items():
            if affect.label == label:
                out[name] = float(np.clip(affect.intensity, 0.0, 1.0))
    return out


def effective_vector(values: NDArray[np.float64], affect: Affect | None) -> NDArray[np.float64]:
    """One pose vector ``(N,)`` with its affect condition applied (spec §3.4.4: the
    preset's dims move toward it, NaN read as the default first); unchanged without one."""
    from posewire.codec.affect import apply_affect
    from posewire.codec.vector import DEFAULTS

    vec = np.asarray(values, dtype=np.float64)
    if affect is None:
        return vec
    out, _ = apply_affect(np.where(np.isnan(vec), DEFAULTS, vec), label=affect.label,
                          intensity=affect.intensity, mode=affect.mode)  # type: ignore[arg-type]
    return out


def vrm_presets(values: NDArray[np.float64], face: FaceWeights, affect: Affect | None = None) -> dict[str, float]:
    """The VRM 0.x expression presets (UniVRM's spelling, ``[0, 1]``) of one effective
    pose vector ``(N,)`` (:func:`effective_vector`) and its face weights (capability
    ``viseme15``): the vowels ``A E I O U`` from the visemes folded to five
    (:data:`posewire.consumers.face.VOWEL_FOLD`; without visemes ``A`` = ``jawOpen``),
    ``Blink_L``/``Blink_R`` from ARKit's blinks, and :func:`expression_presets` (with the
    frame's ``affect`` condition)."""
    from posewire.consumers.face import VOWEL_FOLD

    vowels = dict.fromkeys(_VOWEL_PRESET.values(), 0.0)
    for viseme in VISEMES:
        target = VOWEL_FOLD[viseme]
        if target is not None:
            vowels[_VOWEL_PRESET[target]] += float(face.visemes[viseme])
    if not any(v > 0.0 for v in vowels.values()):
        vowels["A"] = float(face.arkit["jawOpen"])
    return {**{k: min(1.0, w) for k, w in vowels.items()},
            "Blink_L": float(face.arkit["eyeBlinkLeft"]), "Blink_R": float(face.arkit["eyeBlinkRight"]),
            **expression_presets(values, affect)}


def _dim(values: NDArray[np.float64], name: str) -> float:
    """The value of dim ``name`` (its default, 0 for these, when NaN)."""
    from posewire.codec.registry import REGISTRY

    v = float(values[REGISTRY.index(name)])
    return 0.0 if np.isnan(v) else v


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
              affect: Affect | None = None, t: float = 0.0, blend_names: str = "perfect-sync") -> VmcFrame:
    """The VMC messages of one pose vector ``(N,)`` (NaN = default, spec §3.5), its
    mouthing mix (15 shares or ``None``) and affect condition (spec §3.4.4, applied to the
    vector first) at sender time ``t`` seconds, blend names spelled ``blend_names``
    (:data:`BLEND_NAME_STYLES`)."""
    from posewire.consumers.face import face_weights
    from posewire.consumers.pose import decode_pose

    vec = effective_vector(values, affect)
    av = _avatar()
    pose = decode_pose(vec[None], av.skeleton)
    local = pose.local_rotations[0]
    msgs: list[tuple[str, list[Any]]] = [("/VMC/Ext/Root/Pos", ["root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])]
    for name, j in av.bones:
        p, q = to_unity(av.skeleton.offsets[j], local[j])
        msgs.append(("/VMC/Ext/Bone/Pos", [name, *p, *q]))
    for name, rotation in face_bone_rotations(vec).items():
        p, q = to_unity(np.array(FACE_BONES[name]), rotation)
        msgs.append(("/VMC/Ext/Bone/Pos", [name, *p, *q]))
    face = face_weights(vec, capability="viseme15", visemes=None if mouthing is None else list(mouthing))
    for channel, weight in face.arkit.items():
        msgs.append(("/VMC/Ext/Blend/Val", [blend_name(channel, blend_names), float(weight)]))
    for preset, w in vrm_presets(vec, face, affect).items():
        msgs.append(("/VMC/Ext/Blend/Val", [blend_name(preset, blend_names, preset=True), w]))
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
                  client_options: dict[str, Any] | None = None, blend_names: str = "perfect-sync") -> int:
    """Subscribe to ``stream`` and send every frame to ``host:port`` as one VMC bundle;
    ``count``: stop after that many frames (0: never). Says on stderr where it connects
    and what it waits for; ``timeout``: give up (:class:`~posewire.cli.waiting.WaitTimeoutError`)
    when no frame came within that many seconds (:mod:`posewire.cli.waiting`);
    ``client_options``: TLS and liveness (:func:`posewire.cli.net_options.client_options`);
    ``blend_names``: :data:`BLEND_NAME_STYLES`.
    Returns the frames sent."""
    import socket

    from posewire.cli.waiting import StatusLines, first_frame, then, within
    from posewire.consumers.subscriber import Subscriber

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
                affect = frame.conditions.affect if frame.conditions else None
                data = _bundle(vmc_frame(frame.values, mouthing=mouthing, affect=affect,
                                         t=time.monotonic() - started, blend_names=blend_names))
                sock.sendto(data, (host, port))
                sent += 1
                if count and sent >= count:
                    break
    finally:
        await sub.close()
        sock.close()
    return sent


async def run_vmc_recording(path: str, host: str, port: int, *, count: int = 0, speed: float = 1.0,
                            blend_names: str = "perfect-sync") -> int:
    """Send the frames of a recording (any format, :func:`posewire.producers.recording.read_recording`)
    to ``host:port`` as VMC bundles at their recorded gaps (``speed``: playback rate, 0: at
    once), each frame merged over the ones before it (a masked frame keeps the other dims);
    ``count``: stop after that many (0: all). Returns the bundles sent."""
    import socket

    from posewire.producers.recording import open_recording

    recording = open_recording(path)
    if recording.lost is not None:
        print(f"posewire vmc: {path}: {recording.lost}", file=sys.stderr)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    state: NDArray[np.float64] | None = None
    sent = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        frames = recording.frames[:count] if count else recording.frames
        t0 = frames[0].t_us if frames else 0
        for frame in frames:
            if speed > 0:
                delay = start + (frame.t_us - t0) / 1e6 / speed - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            vec = frame.vector()
            state = vec if state is None else np.where(np.isnan(vec), state, vec)
            cond = frame.conditions
            data = _bundle(vmc_frame(state, mouthing=cond.mouthing if cond else None,
                                     affect=cond.affect if cond else None, t=(frame.t_us - t0) / 1e6,
                                     blend_names=blend_names))
            sock.sendto(data, (host, port))
            sent += 1
    finally:
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
    from posewire.cli.conventions import describe_error
    from posewire.cli.net_options import client_options
    from posewire.cli.waiting import WaitTimeoutError
    from posewire.codec.errors import PosewireError, UsageError
    from posewire.transport import RelayError

    try:
        if args.recording is not None:
            sent = asyncio.run(run_vmc_recording(args.recording, host, port, count=args.frames, speed=args.speed,
                                                 blend_names=args.blend_names))
        else:
            sent = asyncio.run(run_vmc(args.url, args.stream, host, port, token=token, count=args.frames,
                                       timeout=args.timeout, client_options=client_options(args),
                                       blend_names=args.blend_names))
    except KeyboardInterrupt:
        return 0
    except (OSError, UsageError, PosewireError, RelayError, WaitTimeoutError) as exc:
        print(f"posewire vmc: {describe_error(exc)}", file=sys.stderr)
        return 1
    print(f"sent {sent} VMC bundles to {host}:{port}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``vmc`` sub-command to the ``posewire`` parser."""
    from posewire.cli.conventions import add_frames_option, add_speed_option, add_stream_option
    from posewire.cli.net_options import add_client_options
    from posewire.cli.waiting import add_timeout_option

    p = subparsers.add_parser("vmc", help="send a stream as the VMC protocol (OSC/UDP) to a VTuber app")
    p.add_argument("--recording", metavar="FILE", default=None,
                   help="send a recording (.pwr, JSON lines or .pose) at its own timing instead of a relay's stream")
    add_speed_option(p, help="playback rate of --recording (1: as recorded, 0: at once)")
    add_stream_option(p)
    p.add_argument("--to", default=f"127.0.0.1:{DEFAULT_PORT}", metavar="HOST:PORT", help="VMC receiver")
    p.add_argument("--url", default="ws://127.0.0.1:8765", help="relay URL")
    p.add_argument("--token", help="auth token (default: $POSEWIRE_TOKEN)")
    p.add_argument("--blend-names", choices=BLEND_NAME_STYLES, default="perfect-sync",
                   help="how blend names are spelled: perfect-sync = JawOpen, the clip names of VRoid "
                        "perfect-sync models (HANA_Tool), matched exactly by receivers on UniVRM 0.56 or later; "
                        "arkit = jawOpen, Apple's names, for models that carry them verbatim; upper = JAWOPEN "
                        "and BLINK_L, what VirtualMotionCapture sends, for receivers on older UniVRM "
                        "(docs/vmc.md)")
    add_frames_option(p)
    add_timeout_option(p, what="receiving frames")
    add_client_options(p)
    p.set_defaults(func=_cmd_vmc)
