"""The live viewer in real headless Chromium (Debian ``chromium`` via npm ``playwright-core``).

A real relay and the viewer server run on loopback; a real publisher sends frames; the
page subscribes over the websocket, decodes each frame with the JavaScript client and
poses the three.js mannequin. For every frame the bone quaternions read back from the
page's scene graph must equal the Python decoder's (run now on the same quantized
frame) within 1e-4; the face panel's weights equal :func:`posewire.consumers.face.face_weights`;
a part reported lost holds its last pose (0.4 s of stream time), then eases to its defaults;
and two poses render differently where the mannequin stands and in the face inset (and
nowhere else), with the mannequin visible against the background.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pageutil import BROWSER_MISSING, viewer_page
from vrmutil import mannequin_as_vrm

from posewire.codec.conditions import Conditions
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, VISEMES
from posewire.codec.vector import DEFAULTS, LOWER, N_DIMS, UPPER
from posewire.codec.wire import Frame, decode, encode
from posewire.consumers.face import face_weights
from posewire.consumers.gltf import mannequin_skeleton
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton
from posewire.producers.publisher import Publisher
from posewire.producers.recording import read_recording
from posewire.relay import Relay
from posewire.servers.viewer import ViewerConfig, ViewerServer

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    BROWSER_MISSING,
    reason="needs node, /usr/bin/chromium and js/node_modules (make install; .ci/run installs chromium)")


def on_the_wire(values: np.ndarray) -> np.ndarray:
    """The values as the page receives them (quantized, spec §5.4)."""
    frame = decode(encode(Frame(0, 0, values)))
    assert isinstance(frame, Frame)
    return frame.values


def same_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.minimum(np.abs(a - b).max(axis=-1), np.abs(a + b).max(axis=-1))
    return out


def check_vrm(answer: dict[str, Any], values: np.ndarray) -> None:
    vrm = answer["vrm"]
    assert vrm is not None, answer["drop"]
    desc = vrm["skeleton"]
    assert len(desc["names"]) == 1 + 52  # root + the 52 humanoid bones of the file
    skel = Skeleton.from_world(desc["names"], desc["parents"], desc["positions"],
                               sites={k: (j, p) for k, (j, p) in desc["sites"].items()})
    want = decode_pose(values[None], skel).local_rotations[0]
    names = desc["names"][1:]
    got = np.array([vrm["bones"][n] for n in names])
    err = same_rotation(got, want[1:])
    assert err.max() < 1e-4, (float(err.max()), names[int(err.argmax())])
    # the right arm is raised on the VRM too
    assert same_rotation(np.array(vrm["bones"]["upperarm_r"]), np.array([1.0, 0, 0, 0])) > 0.1


def check_bones(answer: dict[str, Any], values: np.ndarray, avatar_names: tuple[str, ...], skel: Any) -> float:
    want = decode_pose(values[None], skel).local_rotations[0]
    got = np.array([answer["bones"][n] for n in avatar_names])
    err = same_rotation(got, want)
    assert err.max() < 1e-4, (float(err.max()), avatar_names[int(err.argmax())])
    return float(err.max())


async def test_viewer_in_chromium_matches_the_python_decoder(tmp_path: Path) -> None:
    base, retarget = mannequin_skeleton()
    canon = retarget.apply(base)
    skel = canon.skeleton
    _, recs = read_recording(ROOT / "tests" / "data" / "wave.jsonl")
    rng = np.random.default_rng(19)
    # right arm raised, waving; a registry 1.0.0 recording: the dims it lacks (the distal
    # bends, spec §4.3) sent as their defaults, since a consumer keeps a missing dim's last
    # good value (spec §3.5) where the Python decoder takes NaN as the default
    wave = recs[40].vector()
    raised = on_the_wire(np.where(np.isnan(wave), np.array(DEFAULTS, dtype=np.float64), wave))
    rest = on_the_wire(np.array(DEFAULTS, dtype=np.float64))  # arms down
    randoms = [on_the_wire(rng.uniform(LOWER, UPPER)) for _ in range(3)]
    mix = rng.dirichlet(np.ones(len(VISEMES))) * 0.8
    shots = Path(os.environ.get("POSEWIRE_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)

    # the relay accepts the page's origin (spec §5.8: browsers only from allowed origins)
    with ViewerServer(ViewerConfig("", "view"), port=0) as viewer:
        async with Relay("127.0.0.1", port=0, status_every=0, allow_origins=viewer.origins) as relay:
            viewer.config = ViewerConfig(relay.url, "view")
            async with Publisher(relay.url, "view") as pub:
                await pub.send_frame(raised, conditions=Conditions())  # seq 0: a late joiner gets it
                async with viewer_page(viewer.url) as page:
                    a = await page.ask(seq=0, screenshot=str(shots / "pose_raised.png"))
                    assert a["seq"] == 0
                    check_bones(a, raised, canon.avatar_names, skel)

                    await pub.send_frame(rest, conditions=Conditions())  # seq 1
                    b = await page.ask(seq=1, screenshot=str(shots / "pose_rest.png"))
                    check_bones(b, rest, canon.avatar_names, skel)

                    for k, values in enumerate(randoms, start=2):
                        cond = Conditions(mouthing=tuple(mix)) if k == 3 else Conditions()
                        await pub.send_frame(values, conditions=cond)
                        r = await page.ask(seq=k)
                        assert r["seq"] == k
                        check_bones(r, values, canon.avatar_names, skel)
                        face = face_weights(values, capability="viseme15",
                                            visemes=list(mix) if k == 3 else None)
                        np.testing.assert_allclose([r["face"]["arkit"][c] for c in ARKIT_CHANNELS],
                                                   [float(face.arkit[c]) for c in ARKIT_CHANNELS], atol=1e-9)
                        np.testing.assert_allclose([r["face"]["visemes"][v] for v in VISEMES],
                                                   [float(face.visemes[v]) for v in VISEMES], atol=1e-9)

                    # the right arm is lost: its dims ease to their defaults (the rest stays)
                    lost = randoms[0]
                    await pub.send_frame(lost, conditions=Conditions(tracking={"arm_r": "lost"}))
                    seq = 2 + len(randoms)
                    first = await page.ask(seq=seq)
                    # a stream that stops while the arm is lost eases it after HOLD_S + 1 s of page time
                    eased = await page.ask(seq=seq, delay_ms=5000)
                    target = lost.copy()
                    for d in DIMENSIONS:
                        if d.part == "arm_r":
                            target[d.index] = DEFAULTS[d.index]
                    check_bones(eased, target, canon.avatar_names, skel)
                    with pytest.raises(AssertionError):  # it had not jumped there at once
                        check_bones(first, target, canon.avatar_names, skel)
                    # it holds the last tracked arm first (HOLD_S = 0.4 s of stream time, spec §3.4.2
                    # "hold or ease"): a wrist missed for a few frames does not drop the arm
                    held = lost.copy()
                    for d in DIMENSIONS:
                        if d.part == "arm_r":
                            held[d.index] = randoms[-1][d.index]
                    check_bones(first, held, canon.avatar_names, skel)
                    assert "lost/not estimated: arm_r" in eased["status"]

                    # a dropped .vrm is decoded on its own humanoid and driven too
                    vrm_path = tmp_path / "mannequin.vrm"
                    vrm_path.write_bytes(mannequin_as_vrm())
                    await pub.send_frame(raised, conditions=Conditions())
                    v = await page.ask(seq=seq + 1, vrm=str(vrm_path), delay_ms=500,
                                       screenshot=str(shots / "vrm_dropped.png"))
                    check_vrm(v, raised)
                    assert not a["page_errors"], a["page_errors"]
                    # everything came from loopback: the page and its libraries from the
                    # viewer, the stream from the relay (no CDN at run time)
                    assert set(v["origins"]) == {viewer.origin, relay.url.rstrip("/")}, v["origins"]

    # the two poses differ where the mannequin stands, and only there
    w, h = a["grid"]["w"], a["grid"]["h"]
    lum_a = np.array(a["grid"]["lum"]).reshape(h, w)
    lum_b = np.array(b["grid"]["lum"]).reshape(h, w)
    changed = np.abs(lum_a - lum_b) > 12.0
    x0 = min(a["box"][0], b["box"][0]) - 1
    y0 = min(a["box"][1], b["box"][1]) - 1
    x1 = max(a["box"][2], b["box"][2]) + 1
    y1 = max(a["box"][3], b["box"][3]) + 1
    ys, xs = np.nonzero(changed)
    assert len(xs) >= 20, "the two poses look the same"
    inside = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
    # the face inset (top right) shows the mannequin's head close up: it changes too
    assert a["inset"] is not None and a["inset"] == b["inset"]
    i0, j0, i1, j1 = a["inset"]
    in_inset = (xs >= i0 - 1) & (xs <= i1 + 1) & (ys >= j0 - 1) & (ys <= j1 + 1)
    assert in_inset.any(), "the face inset did not follow the head"
    inside |= in_inset
    assert inside.all(), f"{(~inside).sum()} changed cells outside the mannequin's bounds"
    # ... and the mannequin shows: inside its bounds most cells differ from the background
    background = np.median(np.concatenate([lum_b[:, :3].ravel(), lum_b[:3, :].ravel()]))
    box = lum_b[int(max(y0, 0)):int(y1), int(max(x0, 0)):int(x1)]
    assert (np.abs(box - background) > 20).mean() > 0.2
    assert (np.abs(lum_b[:, : int(x0) - 2] - background) <= 20).mean() > 0.7  # left of it: scene
    assert len(DIMENSIONS) == N_DIMS
