"""The viewer's face in real headless Chromium: the mannequin's procedural face follows the
decoded weights.

A real relay and viewer server on loopback; a real publisher sends a neutral face, a blink,
an open jaw, a smile, a look to one side and a mouthed viseme. For each frame the page's
face morph influences (read back from the three.js meshes) equal the ARKit and viseme
weights of :func:`posewire.consumers.face.face_weights` on the same quantized frame — the
values the side panel shows — the eyes turn by the eyeLook* weights, and the face inset's
pixels change where they should (dark mouth interior grows with the jaw, the eyes' whites
go under the lids in a blink). Screenshots of each go to ``$POSEWIRE_SCREENSHOTS``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pageutil import BROWSER_MISSING, viewer_page

from posewire.codec.conditions import Conditions
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, MOUTHING_SEED_TABLE, VISEMES
from posewire.codec.vector import DEFAULTS
from posewire.codec.wire import Frame, decode, encode
from posewire.consumers.face import face_weights
from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.servers.viewer import ViewerConfig, ViewerServer

pytestmark = pytest.mark.skipif(
    BROWSER_MISSING,
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")

GAZE_YAW = math.radians(32)  # js/viewer/face.mjs: the eye turn at eyeLook* weight 1
GAZE_PITCH = math.radians(24)
INDEX = {d.id: d.index for d in DIMENSIONS}


def frame(**dims: float) -> np.ndarray:
    """DEFAULTS with the named dims set, as the page receives them (quantized, spec §5.4)."""
    values = np.array(DEFAULTS, dtype=np.float64)
    for name, value in dims.items():
        values[INDEX[name]] = value
    f = decode(encode(Frame(0, 0, values)))
    assert isinstance(f, Frame)
    return f.values


def check_rig(answer: dict[str, Any], values: np.ndarray, mix: list[float] | None) -> dict[str, float]:
    """Every morph influence equals its ARKit / viseme weight; the eyes turn by eyeLook*."""
    face = face_weights(values, capability="viseme15", visemes=mix)
    arkit = {c: float(face.arkit[c]) for c in ARKIT_CHANNELS}
    visemes = {v: float(face.visemes[v]) for v in VISEMES}
    # the page's own decode (the panel's values) agrees with Python's
    np.testing.assert_allclose([answer["face"]["arkit"][c] for c in ARKIT_CHANNELS], list(arkit.values()), atol=1e-9)
    rig = answer["face_rig"]
    assert rig is not None
    seen: set[str] = set()
    for mesh, targets in rig["meshes"].items():
        for name, got in targets.items():
            want = visemes[name[7:]] if name.startswith("viseme_") else arkit[name]
            assert got == pytest.approx(want, abs=1e-9), (mesh, name, got, want)
            seen.add(name)
    # eyelids, brows, jaw and mouth corners and every viseme have a shape
    for name in ("eyeBlinkLeft", "eyeBlinkRight", "eyeWideLeft", "eyeSquintRight", "browDownLeft",
                 "browInnerUp", "browOuterUpRight", "jawOpen", "mouthSmileLeft", "mouthSmileRight",
                 "mouthFrownLeft", "mouthPucker", "mouthFunnel", "mouthClose"):
        assert name in seen, name
    # a viseme target for each viseme with a seed-table baseline (spec §4.7), and only those
    # (the others' lips are in the mouth dims already)
    assert {n for n in seen if n.startswith("viseme_")} == {f"viseme_{v}" for v, b in MOUTHING_SEED_TABLE if b}
    eyes = rig["eyes"]
    yaw = {"l": arkit["eyeLookOutLeft"] - arkit["eyeLookInLeft"],
           "r": arkit["eyeLookInRight"] - arkit["eyeLookOutRight"]}
    pitch = {s: arkit[f"eyeLookUp{S}"] - arkit[f"eyeLookDown{S}"] for s, S in (("l", "Left"), ("r", "Right"))}
    for s in "lr":
        assert eyes[s]["yaw"] == pytest.approx(GAZE_YAW * yaw[s], abs=1e-6), (s, eyes[s])
        assert eyes[s]["pitch"] == pytest.approx(GAZE_PITCH * pitch[s], abs=1e-6), (s, eyes[s])
    return arkit


def inset(answer: dict[str, Any]) -> np.ndarray:
    lum = answer["inset_lum"]
    assert lum is not None and len(lum) == 64 * 64
    return np.array(lum, dtype=np.float64).reshape(64, 64)


async def test_the_face_follows_the_decoded_weights(tmp_path: Path) -> None:
    aa = [0.0] * len(VISEMES)
    aa[VISEMES.index("aa")] = 1.0
    pp = [0.0] * len(VISEMES)
    pp[VISEMES.index("PP")] = 1.0
    cases: list[tuple[str, np.ndarray, list[float] | None]] = [
        ("neutral", frame(), None),
        ("blink", frame(f_blink_l=1.0, f_blink_r=1.0), None),
        ("jaw_open", frame(m_jaw=0.8), None),
        ("smile", frame(m_smile_l=0.9, m_smile_r=0.9, f_cheek_l=0.4, f_cheek_r=0.4), None),
        ("look_left", frame(f_gaze_yaw=0.8), None),
        ("look_right_up", frame(f_gaze_yaw=-0.6, f_gaze_pitch=0.5), None),
        ("brows_up", frame(f_brow_l=0.9, f_brow_r=0.9, f_brow_inner=0.8, f_blink_l=-0.6, f_blink_r=-0.6), None),
        ("frown", frame(f_brow_l=-0.9, f_brow_r=-0.9, m_smile_l=-0.8, m_smile_r=-0.8), None),
        ("viseme_aa", frame(), aa),
        ("viseme_PP", frame(m_jaw=0.6), pp),  # lips pressed shut over an open jaw's residual
        ("pucker", frame(m_pucker=0.9, m_funnel=0.4), None),  # an "oo" as a producer sends it
    ]
    shots = Path(os.environ.get("POSEWIRE_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    got: dict[str, dict[str, Any]] = {}
    with ViewerServer(ViewerConfig("", "face"), port=0) as viewer:
        async with Relay("127.0.0.1", port=0, status_every=0, allow_origins=viewer.origins) as relay:
            viewer.config = ViewerConfig(relay.url, "face")
            async with Publisher(relay.url, "face") as pub:
                await pub.send_frame(cases[0][1], conditions=Conditions())
                async with viewer_page(viewer.url) as page:
                    for seq, (name, values, mix) in enumerate(cases):
                        if seq:
                            cond = Conditions(mouthing=tuple(mix)) if mix else Conditions()
                            await pub.send_frame(values, conditions=cond)
                        a = await page.ask(seq=seq, screenshot=str(shots / f"face_{name}.png"),
                                           face_shot=str(shots / f"face_{name}_inset.png"))
                        assert a["seq"] == seq
                        a["arkit"] = check_rig(a, values, mix)
                        got[name] = a
                    assert not got["neutral"]["page_errors"], got["neutral"]["page_errors"]
                    assert set(got["pucker"]["origins"]) == {viewer.origin, relay.url.rstrip("/")}

    # the weights the frames carry (not zero: the test can fail)
    assert got["blink"]["arkit"]["eyeBlinkLeft"] == pytest.approx(1.0, abs=0.01)
    assert got["jaw_open"]["arkit"]["jawOpen"] == pytest.approx(0.8, abs=0.01)
    assert got["smile"]["arkit"]["mouthSmileLeft"] == pytest.approx(0.9, abs=0.01)
    assert got["look_left"]["face_rig"]["eyes"]["l"]["yaw"] > 0.4  # toward the character's left (+x)
    assert got["look_left"]["face_rig"]["eyes"]["r"]["yaw"] > 0.4
    assert got["look_right_up"]["face_rig"]["eyes"]["l"]["yaw"] < -0.3
    assert got["look_right_up"]["face_rig"]["eyes"]["l"]["pitch"] > 0.15

    # ... and what the inset shows: the face is there (eyes, brows, mouth against the wood)
    neutral = inset(got["neutral"])
    assert neutral.std() > 20, "the face inset is flat"
    diff = {k: np.abs(inset(v) - neutral) > 25 for k, v in got.items() if k != "neutral"}
    for k, d in diff.items():
        assert d.sum() >= 6, f"{k} looks like the neutral face"
    # a blink covers the bright whites of the eyes: the upper half of the inset darkens there
    bright = lambda img: (img[8:40] > 200).sum()  # noqa: E731
    assert bright(inset(got["blink"])) < 0.5 * bright(neutral), (bright(inset(got["blink"])), bright(neutral))
    # an open jaw shows the dark mouth interior in the lower half
    dark = lambda img: (img[32:] < 45).sum()  # noqa: E731
    assert dark(inset(got["jaw_open"])) >= dark(neutral) + 8, (dark(inset(got["jaw_open"])), dark(neutral))
    # the eyes' changes sit in the upper half, the mouth's in the lower half
    assert diff["blink"][:32].sum() > 3 * diff["blink"][32:].sum()
    assert diff["jaw_open"][32:].sum() > 3 * diff["jaw_open"][:32].sum()
    assert diff["smile"][32:].sum() > diff["smile"][:32].sum()
    # the aa viseme alone (neutral dims) opens the mouth from its seed baseline, m_jaw 0.7
    assert dark(inset(got["viseme_aa"])) >= dark(neutral) + 8
