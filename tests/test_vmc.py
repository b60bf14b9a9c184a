"""The VMC bridge against a real python-osc server on loopback.

A real relay, publisher and ``posewire.vmc.run_vmc`` send VMC bundles over UDP to a
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

from posewire.codec.conditions import Conditions
from posewire.codec.registry import ARKIT_CHANNELS, VISEMES
from posewire.codec.vector import LOWER, UPPER
from posewire.codec.wire import Frame, decode, encode
from posewire.consumers.face import face_weights
from posewire.consumers.gltf import mannequin_skeleton
from posewire.consumers.pose import decode_pose
from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.vmc import VMC_BONES, run_vmc, to_unity, vmc_frame


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
            sent = await asyncio.wait_for(run_vmc(relay.url, "vmc", "127.0.0.1", port, count=1), 30)
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
    assert set(bones) == {n for n, c in VMC_BONES.items() if c in skel.index}
    assert len(bones) >= 50  # body, arms, legs and all 30 finger bones of the mannequin
    for name, got in bones.items():
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
    frame = vmc_frame(np.full(79, np.nan))
    names = [args[0] for addr, args in frame.messages if addr == "/VMC/Ext/Bone/Pos"]
    assert "LeftUpperArm" in names and "RightLittleDistal" in names
