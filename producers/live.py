"""Live encoding: one :class:`~posewire.producers.mediapipe_source.Observation` at a time ->
one pose vector, its tracking condition, and the performer's calibration (spec §3.4.2, §4).

:class:`LiveEncoder` joins the pieces, each owned by its module:

* arm, palm, finger and body dims: :func:`posewire.producers.landmarks.landmarks_to_vectors`
  on a batch of one frame (a hand seen without a body keeps palm, in its camera fallback
  frame, and fingers: the hand-only route);
* head from the facial transformation matrix: its rotation is handed to the landmark
  encoder as the four face points of its head frame (eye corners ±X, forehead/chin ±Y), so
  the head goes through the landmark encoder's own head maths and body frame (spec §4.4);
  without a body frame, relative to the camera (:func:`posewire.producers.face.head_from_face_matrix`);
* face and mouth dims from the blendshapes, gaze from the irises: :mod:`posewire.producers.face`;
* tracking per part: ``face``/``mouth`` are ``tracked`` when FaceLandmarker found a face,
  ``lost`` when it did not, ``not_estimated`` when it does not run; ``head`` is tracked
  when the face transform (or the mesh) gave it.

Live calibration (:class:`LiveCalibration`, spec §4.1): the performer's distances are a
running robust estimate — medians over the last ``window`` frames that show a body,
re-estimated every ``every`` such frames (each re-estimate spread over the following
frames, :class:`LiveCalibration`). The first estimate is used (and sent) at once;
afterwards a new estimate replaces it only when it has **settled**: the last ``settle``
estimates agree within ``tolerance`` (relative, every distance) and differ from the one
in use by more than ``tolerance``. Each replacement is returned by :meth:`LiveEncoder.encode`
so the caller re-sends the calibration message (spec §5.6). Before any body is seen the
arm units are the reference avatar's (arms are not tracked then, so nothing depends on it).
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Generator
from dataclasses import dataclass, field, fields, replace

import numpy as np
from numpy.typing import NDArray

from posewire.codec.calibration import REFERENCE_CALIBRATION, Calibration, units
from posewire.codec.conditions import Conditions
from posewire.codec.errors import UsageError
from posewire.codec.morph import FACE_DIM_INDICES, N_ARKIT
from posewire.codec.mouthing import mix_from_mouth
from posewire.codec.registry import REGISTRY
from posewire.producers.face import (
    EYE_MESH_INDEX,
    NeutralFace,
    blendshape_dims,
    blendshape_dims1,
    head_from_face_matrix,
    iris_gaze1,
    rotation_part1,
)
from posewire.producers.filter import RotationFilter, VectorFilter, VisibilityHold
from posewire.producers.hand import (
    DEPTH_GAIN_MIN_FRAMES,
    DEPTH_GAINS,
    HAND_BONES,
    bone_length_ratios,
    gain_measure,
    least_gain,
)
from posewire.producers.landmarks import (
    FACE_POINTS,
    MEDIAPIPE_TO_Y_UP,
    POSE_POINTS,
    CalibrationSamples,
    HolisticLandmarks,
    LandmarkCalibration,
    body_calibration,
    landmarks_to_vectors,
    with_depth_gains,
)
from posewire.producers.landmarks_single import _Frame, encode1, prepare1, samples1
from posewire.producers.mediapipe_source import Observation

__all__ = ["EncodedFrame", "LiveCalibration", "LiveEncoder", "LiveReport"]

F64 = NDArray[np.float64]

_HEAD = np.array([REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")], dtype=np.intp)
_GAZE = np.array([REGISTRY.index(d) for d in ("f_gaze_yaw", "f_gaze_pitch")], dtype=np.intp)
#: The face points of the landmark encoder's head frame, at +X, −X, +Y, −Y (spec §4.4).
_HEAD_FRAME_POINTS = np.array([FACE_POINTS[p] for p in ("eye_outer_l", "eye_outer_r", "forehead", "chin")],
                              dtype=np.intp)
_HEAD_FRAME_SIGNS = np.array([[1.0], [-1.0], [1.0], [-1.0]])
_REFERENCE = LandmarkCalibration(REFERENCE_CALIBRATION, units(REFERENCE_CALIBRATION),
                                 ("reference avatar: no body seen yet",))


def _has_body(lm: HolisticLandmarks) -> bool:
    pts = lm.pose_world[0, [POSE_POINTS["shoulder_l"], POSE_POINTS["shoulder_r"], POSE_POINTS["hip_l"],
                            POSE_POINTS["hip_r"]]]
    return bool(np.isfinite(pts).all())


def _has_body1(frame: _Frame) -> bool:
    """:func:`_has_body` of the frame :func:`~posewire.producers.landmarks_single.prepare1`
    took (a point with a non-finite coordinate is NaN throughout there)."""
    pose = frame.pose
    return all(p[0] == p[0] for p in (pose["shoulder_l"], pose["shoulder_r"], pose["hip_l"], pose["hip_r"]))


def _axes_as_face_points(rotation: F64) -> F64:
    """A ``(1, 478, 3)`` face array (MediaPipe camera axes, NaN elsewhere) whose
    :data:`~posewire.producers.landmarks.FACE_POINTS` span the face frame ``rotation``
    (y-up camera axes, columns X = subject's left, Y = up): eye corners at ±X, forehead and
    chin at ±Y, so the landmark encoder's head frame equals ``rotation``."""
    pts = np.full((1, 478, 3), np.nan)
    axes = rotation[:, :2].T @ MEDIAPIPE_TO_Y_UP  # rows X, Y in MediaPipe axes
    pts[0, _HEAD_FRAME_POINTS] = axes[[0, 0, 1, 1]] * _HEAD_FRAME_SIGNS
    return pts


def _distances(cal: Calibration) -> F64:
    return np.array([np.nan if getattr(cal, f.name) is None else float(getattr(cal, f.name))
                     for f in fields(cal)])


def _close(a: F64, b: F64, tolerance: float) -> bool:
    both = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return False
    return bool(np.all(np.abs(a[both] - b[both]) <= tolerance * np.abs(b[both])))


class LiveCalibration:
    """The running robust estimate of the performer's calibration (module docstring).

    Incremental and spread, so that no frame pays for a whole estimate (spec §4.1 live calibration): each
    frame's measurements (:func:`~posewire.producers.landmarks_single.samples1`: body-frame
    shoulders, trunk, arm and hand lengths, the single-frame path of
    :func:`~posewire.producers.landmarks.calibration_samples`) are taken as it arrives and
    kept in a ring of the last ``window`` frames with a body. An estimate (every ``every``
    such frames) is a job of small steps, one a frame from the frame that starts it: the
    medians (:func:`~posewire.producers.landmarks.body_calibration`), the hands' bone
    measures of the frames not measured yet
    (:func:`~posewire.producers.hand.bone_length_ratios`, spread evenly over the job's
    frames between the medians and the gains, or ``bone_frames`` frames a step), then both
    hands' depth gains from running sums (below) on a frame of their own. The job reads the
    rows of the window it started on (the ring holds ``window + every + 2`` rows, so none is
    overwritten meanwhile, nor the two before it); its result is the same values as
    :func:`~posewire.producers.landmarks.estimate_calibration` of those frames (the depth
    gain: the same grid gain, its measure to round-off), taken up to ``every`` frames later
    (a job still running when the next is due is finished first). The first estimate is
    taken at once.

    Depth gain (spec §4.3 "Hand depth gain", :func:`~posewire.producers.hand.depth_gain_spread`:
    the gain whose bones vary least over the window's frames, their noise taken out): the
    count, sum and sum of squares over frames of every (hand, gain, bone) ratio are kept for
    the rows in the last estimate's window, each taken from a fixed reference (the hand's
    first usable row) so that no cancellation occurs, and with them the count and sum of
    the squared second differences, each kept on the last row of its run of three; an
    estimate adds the rows that entered the window and removes those that left (about
    ``every`` each), instead of reducing the whole window again (benchmarks/README.md: that reduction,
    2 × 81 × 20 values over 150 frames per estimate, was most of the live encoder's time),
    and leaves out the runs of the window's first two rows (they reach before it). The
    variance is ``Σd²/n − (Σd/n)²``, equal to the window's two-pass value to round-off, so
    the least measure is the same gain but for ties within round-off.
    """

    def __init__(self, *, window: int = 150, every: int = 15, settle: int = 3, tolerance: float = 0.03,
                 visibility_threshold: float = 0.5, bone_frames: int | None = None) -> None:
        if window < 1 or every < 1 or settle < 1 or not 0 < tolerance < 1 or (bone_frames is not None
                                                                               and bone_frames < 1):
            raise UsageError("usage.bad_option", "window, every, settle, bone_frames must be >= 1 "
                             "and 0 < tolerance < 1")
        self.window, self.every, self.settle, self.tolerance = window, every, settle, tolerance
        self.visibility_threshold = visibility_threshold
        self.bone_frames = bone_frames
        # the rows of a running job's window are kept until it ends, and the two before it
        # (the runs of three that end on its first rows)
        size = window + every + 2
        self._size = size
        self._shoulders = np.full((size, 2, 3), np.nan)
        self._valid = np.zeros(size, dtype=bool)
        self._trunk = np.full(size, np.nan)
        self._arm = np.full((size, 4), np.nan)
        self._hand = np.full((size, 2), np.nan)
        self._points = np.full((size, 2, 21, 3), np.nan)  # right, left hand (y-up, after the swap check)
        self._bones = np.full((size, 2, DEPTH_GAINS.size, len(HAND_BONES)), np.nan)
        self._measured = np.zeros(size, dtype=bool)  # the row's bones are measured
        self._frame = np.full(size, -3, dtype=np.intp)  # the row's frame (count of frames with a body before it)
        # the depth gains' running sums (class docstring): rows summed, per hand the count,
        # Σd and Σd² of d = ratio − the hand's reference row
        self._summed = np.zeros(size, dtype=bool)
        self._reference = np.full((2, DEPTH_GAINS.size, len(HAND_BONES)), np.nan)
        self._referenced = False  # both hands' reference rows are set
        self._usable = np.zeros((size, 2), dtype=bool)  # per row and hand: its bones are finite
        # per row, its terms of the sums, stacked (one sum adds them all): d (0 where not
        # usable), d², and the squared second difference of the run of three ending on the
        # row (0 where none)
        self._terms = np.zeros((size, 3, 2, DEPTH_GAINS.size, len(HAND_BONES)))
        self._ran = np.zeros((size, 2), dtype=bool)
        self._n = np.zeros(2)
        self._n3 = np.zeros(2)
        self._sums = np.zeros((3, 2, DEPTH_GAINS.size, len(HAND_BONES)))  # Σd, Σd², Σ of the runs'
        self._count = 0  # frames with a body so far (the ring's next row: _count % size)
        self._job: Generator[None, None, LandmarkCalibration] | None = None
        self._estimates: deque[F64] = deque(maxlen=settle)
        self._since = 0
        self.current: LandmarkCalibration | None = None
        self.updates = 0

    def _add(self, frame: _Frame, lm: HolisticLandmarks) -> None:
        """One frame's measurements into the ring (spec §4.1)."""
        hand_scale = math.nan if lm.hand_scale is None else float(lm.hand_scale[0])
        row = self._count % self._size
        if self._summed[row]:  # the row is taken for a new frame: out of the sums first
            self._accumulate(np.array([row]), -1.0)
        got = samples1(frame, visibility_threshold=self.visibility_threshold, hand_scale=hand_scale)
        self._shoulders[row] = got.shoulders
        self._valid[row] = got.valid
        self._trunk[row] = got.trunk
        self._arm[row] = got.arm
        self._hand[row] = got.hand
        # the hands as given: bone lengths do not see the y-up axis change (a sign per axis),
        # and a hand with a point missing measures NaN as in the batch path
        self._points[row, 0], self._points[row, 1] = ((lm.left_hand[0], lm.right_hand[0]) if frame.swapped
                                                      else (lm.right_hand[0], lm.left_hand[0]))
        self._measured[row] = False
        self._frame[row] = self._count
        self._count += 1

    def _measure(self, rows: list[int]) -> None:
        """The bone measures of ``rows`` and their terms of the running sums."""
        one = slice(rows[0], rows[0] + 1) if len(rows) == 1 else rows  # one row: views, not copies
        bones = bone_length_ratios(self._points[one].reshape(-1, 21, 3))
        bones = bones.reshape(len(rows), 2, *bones.shape[1:])
        self._bones[one] = bones
        usable = np.isfinite(bones[:, :, 0, 0])  # a hand's row is finite throughout or NaN
        if not self._referenced:
            for column in (0, 1):
                if np.isnan(self._reference[column, 0, 0]) and usable[:, column].any():
                    self._reference[column] = bones[int(np.argmax(usable[:, column])), column]
            self._referenced = not np.isnan(self._reference[:, 0, 0]).any()
        terms = np.empty((len(rows), *self._terms.shape[1:]))
        d = np.subtract(bones, self._reference, out=terms[:, 0])
        if not usable.all():
            d[~usable] = 0.0
        np.multiply(d, d, out=terms[:, 1])
        self._usable[one] = usable
        self._measured[one] = True
        # the runs of three ending on these rows: the two frames before each, measured
        # (oldest rows are measured first) and still in the ring
        at = np.array(rows)
        before, twice = (at - 1) % self._size, (at - 2) % self._size
        frame = self._frame[at]
        ran = (self._measured[before] & self._measured[twice] & (self._frame[before] == frame - 1)
               & (self._frame[twice] == frame - 2))[:, None] & usable & self._usable[before] & self._usable[twice]
        c = terms[:, 2]
        c[...] = 0.0
        if ran.any():
            second = self._bones[at] - 2.0 * self._bones[before] + self._bones[twice]
            c[ran] = second[ran] ** 2
        self._ran[one], self._terms[one] = ran, terms
        # into the running sums at once (a job's window holds the rows it measures)
        self._n += usable.sum(axis=0)
        self._n3 += ran.sum(axis=0)
        self._sums += terms[0] if len(rows) == 1 else terms.sum(axis=0)
        self._summed[one] = True

    def _steps(self) -> Generator[None, None, LandmarkCalibration]:
        """One estimate of the last ``window`` frames (taken now), a step per ``next``
        (class docstring)."""
        n = min(self._count, self.window)
        rows = (self._count - n + np.arange(n)) % self._size  # oldest first
        return self._run(rows, rows[~self._measured[rows]].tolist())

    def _run(self, rows: NDArray[np.intp], todo: list[int]) -> Generator[None, None, LandmarkCalibration]:
        # each step one piece of work, then yield: the medians (the frame that starts the job
        # takes this step, alone), the bones of a few frames a step (each step also brings the
        # running sums toward this window: the rows it measured in, its share of the rows that
        # left out), both depth gains on a frame of their own (the job's last). ``bone_frames``
        # None (the default): the bones spread evenly over the job's frames between (step k
        # takes rows ⌊k·n/s⌋ … ⌊(k+1)·n/s⌋ − 1 of the n to measure, s = min(n, every − 2)
        # steps), so every frame carries about the same work and the medians' and the gains'
        # frames no other (no spike in the per-frame time); 3: fewer, larger steps (a lower median, a
        # higher p99: one frame a call costs ~60 % of three; benchmarks/README.md)
        samples = CalibrationSamples(self._shoulders[rows], self._valid[rows], self._trunk[rows], self._arm[rows],
                                     self._hand[rows], self._bones[:0])
        window = np.zeros(self._size, dtype=bool)
        window[rows] = True
        leaving = np.flatnonzero(self._summed & ~window)
        cal, notes = body_calibration(samples)  # usage.calibration: no body frame in the window
        yield
        n = len(todo)
        if self.bone_frames:
            bounds = [*range(0, n, self.bone_frames), n]
        else:
            steps = max(1, min(n, self.every - 2))
            bounds = [k * n // steps for k in range(steps + 1)]
        steps = len(bounds) - 1
        for step in range(steps):
            # the rows not measured by another job meanwhile
            chunk = [row for row in todo[bounds[step]:bounds[step + 1]] if not self._measured[row]]
            out = leaving[step * leaving.size // steps:(step + 1) * leaving.size // steps]
            out = out[self._summed[out]]
            if out.size:
                self._accumulate(out, -1.0)
            if chunk:
                self._measure(chunk)
            if (chunk or out.size) and step < steps - 1:
                yield
        if self.every > 2:
            yield
        right, left = self._depth_gains(rows)
        return with_depth_gains(cal, notes, (right, left))

    def _accumulate(self, rows: NDArray[np.intp], sign: float) -> None:
        """Add (``sign`` 1) or remove (−1) measured ``rows`` to or from the running sums."""
        if rows.size == 1:  # one row: views, not copies
            row = int(rows[0])
            self._n += sign * self._usable[row]
            self._n3 += sign * self._ran[row]
            if sign > 0:
                self._sums += self._terms[row]
            else:
                self._sums -= self._terms[row]
            self._summed[row] = sign > 0
            return
        self._n += sign * self._usable[rows].sum(axis=0)
        self._n3 += sign * self._ran[rows].sum(axis=0)
        if sign > 0:
            self._sums += self._terms[rows].sum(axis=0)
        else:
            self._sums -= self._terms[rows].sum(axis=0)
        self._summed[rows] = sign > 0

    def _depth_gains(self, rows: NDArray[np.intp]) -> tuple[float | None, float | None]:
        """hand.estimate_depth_gain of each hand over ``rows`` (measured), from the running
        sums brought to these rows (class docstring)."""
        window = np.zeros(self._size, dtype=bool)
        window[rows] = True
        leaving, entering = np.flatnonzero(self._summed & ~window), np.flatnonzero(window & ~self._summed)
        if leaving.size:
            self._accumulate(leaving, -1.0)
        if entering.size:
            self._accumulate(entering, 1.0)
        found: list[float | None] = []
        for column in (0, 1):  # right, left
            spread = self._spread(column, rows[:2])
            found.append(None if spread is None else least_gain(spread))
        return found[0], found[1]

    def _spread(self, column: int, first: NDArray[np.intp]) -> F64 | None:
        """hand.depth_gain_spread ``(G,)`` of one hand (0 right, 1 left) over the rows summed,
        whose first two are ``first`` (their runs of three reach before the window); None with
        fewer than DEPTH_GAIN_MIN_FRAMES usable ones."""
        n = float(self._n[column])
        if n < DEPTH_GAIN_MIN_FRAMES:
            return None
        mean = self._sums[0, column] / n
        variance = self._sums[1, column] / n - mean * mean
        first = first[self._summed[first] & self._ran[first, column]]
        runs = float(self._n3[column]) - first.size
        curvature = ((self._sums[2, column] - self._terms[first, 2, column].sum(axis=0)) / runs if runs > 0
                     else np.zeros_like(mean))
        return gain_measure(self._reference[column] + mean, variance, curvature)

    @staticmethod
    def _finish(job: Generator[None, None, LandmarkCalibration]) -> LandmarkCalibration:
        while True:
            try:
                next(job)
            except StopIteration as done:
                result: LandmarkCalibration = done.value
                return result

    def _estimate(self) -> LandmarkCalibration:
        """The estimate of the last ``window`` frames with a body, at once."""
        if self._count == 0:
            raise UsageError("usage.calibration", "no frame with a body yet")
        return self._finish(self._steps())

    def update(self, lm: HolisticLandmarks, frame: _Frame | None = None) -> LandmarkCalibration | None:
        """Feed one frame; returns the new calibration when it changed (to be sent).
        ``frame``: :func:`~posewire.producers.landmarks_single.prepare1` of ``lm`` at this
        threshold, without ``pose_image`` (taken here when None)."""
        if not (_has_body(lm) if frame is None else _has_body1(frame)):
            return None
        if frame is None:  # the hands' swap check by the pose wrists' order, as estimate_calibration
            frame = prepare1(replace(lm, face=None, hand_scale=None, pose_image=None),
                             visibility_threshold=self.visibility_threshold)
        self._add(frame, lm)
        self._since += 1
        if self.current is None:  # the first estimate: at once
            self._since = 0
            try:
                return self._accept(self._estimate())
            except UsageError:  # a degenerate body frame in every buffered frame
                return None
        out = None
        if self._job is not None:
            try:
                if self._since >= self.every:  # the next is due: this one ends now
                    out = self._accept(self._finish(self._job))
                else:
                    next(self._job)
            except StopIteration as done:
                out = self._accept(done.value)
                self._job = None
            except UsageError:  # a degenerate body frame in every buffered frame
                self._job = None
            if self._since >= self.every:
                self._job = None
        if self._since >= self.every:  # a new job, its first step (the medians) on this frame
            self._since = 0
            self._job = self._steps()
            try:
                next(self._job)
            except UsageError:  # a degenerate body frame in every buffered frame
                self._job = None
        return out

    def flush(self) -> LandmarkCalibration | None:
        """Finish a running estimate now (the end of a stream or a recording): the state the
        frames so far give, as if every estimate took effect when due; returns the new
        calibration when it changed."""
        if self._job is None:
            return None
        job, self._job = self._job, None
        try:
            return self._accept(self._finish(job))
        except UsageError:  # a degenerate body frame in every buffered frame
            return None

    def _accept(self, estimate: LandmarkCalibration) -> LandmarkCalibration | None:
        """The settle rule (module docstring) for a finished estimate."""
        values = _distances(estimate.calibration)
        self._estimates.append(values)
        if self.current is None:
            self.current = estimate
            self.updates += 1
            return estimate
        settled = len(self._estimates) == self.settle and all(
            _close(e, values, self.tolerance) for e in self._estimates)
        if settled and not _close(values, _distances(self.current.calibration), self.tolerance):
            self.current = estimate
            self.updates += 1
            return estimate
        if estimate.hand_depth_gain != self.current.hand_depth_gain:  # the producer's own (§4.3): not sent
            self.current = replace(self.current, hand_depth_gain=estimate.hand_depth_gain)
        return None


@dataclass(frozen=True)
class EncodedFrame:
    """One encoded frame: ``vector (N,)`` (NaN = not sent), its ``conditions``, the new
    calibration to send (or None), the encode time in µs (``landmarks_us`` of it in the
    landmark encoder), and the parts tracked."""

    vector: F64
    conditions: Conditions
    calibration: Calibration | None
    encode_us: float
    tracked: tuple[str, ...]
    landmarks_us: float = 0.0


@dataclass
class LiveReport:
    """Totals over a run: frames, frames with each part tracked, clamps per dim or
    channel, calibration updates, notes (never silent)."""

    frames: int = 0
    tracked: Counter[str] = field(default_factory=Counter)
    clamped: Counter[str] = field(default_factory=Counter)
    calibration_updates: int = 0
    notes: Counter[str] = field(default_factory=Counter)


class LiveEncoder:
    """Observation -> :class:`EncodedFrame`, one frame at a time (module docstring).

    ``calibration``: a fixed calibration (no live estimate) or None for
    :class:`LiveCalibration`; ``face_expected``: FaceLandmarker runs, so a frame without
    blendshapes is ``lost`` for face/mouth rather than ``not_estimated``; ``smoothing``: a
    :class:`posewire.producers.filter.VectorFilter` (the landmark encoder's per-dim
    One-Euro filter, quaternion-aware for the palm) applied to every encoded vector, or
    None for raw values; with it, :meth:`encode` needs the frame time ``t_us``;
    ``neutral_face_frames``: when > 0, the performer's neutral face is measured over that many
    frames with a face and the face and mouth dims are re-centred on it afterwards
    (:class:`posewire.producers.face.NeutralFace`, spec §7.3); ``mouthing``: a frame with a
    tracked mouth also carries a viseme mix estimated from it, its mouth dims sent as the
    deltas that give the same mouth (:func:`posewire.codec.mouthing.mix_from_mouth`, spec §4.7);
    ``visibility_hold``: a :class:`posewire.producers.filter.VisibilityHold` the pose
    visibilities of a stream pass through before anything reads them (spec §7.3 "Visibility
    hysteresis"), or None for independent images.
    """

    def __init__(self, *, calibration: LandmarkCalibration | None = None, face_expected: bool = True,
                 visibility_threshold: float = 0.5, live: LiveCalibration | None = None,
                 smoothing: VectorFilter | None = None, neutral_face_frames: int = 0,
                 mouthing: bool = False, visibility_hold: VisibilityHold | None = None) -> None:
        self.smoothing = smoothing
        self.visibility_hold = visibility_hold
        self.mouthing = mouthing
        # spec §7.3 "Smoothing": with the vector filter, the chest frame is smoothed as well
        self.chest = RotationFilter() if smoothing is not None else None
        self.neutral_face = NeutralFace(neutral_face_frames) if neutral_face_frames > 0 else None
        self.fixed = calibration
        self.live = None if calibration is not None else (live or LiveCalibration(
            visibility_threshold=visibility_threshold))
        self.face_expected = face_expected
        self.visibility_threshold = visibility_threshold
        self.report = LiveReport()
        self._condition_key: tuple[tuple[float, ...] | None, tuple[tuple[str, str], ...]] | None = None
        self._conditions = Conditions()

    @property
    def calibration(self) -> LandmarkCalibration | None:
        """The calibration in use (None before any body was seen)."""
        return self.fixed if self.fixed is not None else (None if self.live is None else self.live.current)

    def encode(self, obs: Observation, *, t_us: int | None = None) -> EncodedFrame:
        """Encode one observation (module docstring); ``t_us``: the frame time, required
        (strictly increasing) when smoothing."""
        if self.smoothing is not None and t_us is None:
            raise UsageError("usage.bad_option", "smoothing needs the frame time t_us", path="t_us")
        start = time.perf_counter()
        lm = obs.landmarks
        if self.visibility_hold is not None and lm.batch == 1:  # spec §7.3 "Visibility hysteresis"
            lm = replace(lm, pose_visibility=self.visibility_hold(
                lm.pose_visibility[0], None if lm.pose_in_frame is None else lm.pose_in_frame[0])[None])
        # one frame prepared once for the live calibration and the encoder, where both take
        # it alike (no image-plane swap check, the same threshold)
        frame = prepare1(lm, visibility_threshold=self.visibility_threshold) if (
            lm.batch == 1 and lm.pose_image is None and self.live is not None
            and self.live.visibility_threshold == self.visibility_threshold) else None
        changed = None if self.live is None else self.live.update(lm, frame)
        cal = self.calibration or _REFERENCE
        # one frame: the face path's float kernels (producers.face *1, pinned to the batch
        # functions by tests/test_face_single_frame.py)
        face_rot1 = None if obs.face_matrix is None else rotation_part1(obs.face_matrix)
        face_points = None
        if face_rot1 is not None:
            # head from the face transform, through the landmark encoder's own head maths
            # and body frame (spec §4.4): its face frame is X = eye_outer_l − eye_outer_r,
            # Y = chin → forehead, so these four points carry exactly the transform's rotation
            if frame is None:  # the batch path: as a face array
                lm = replace(lm, face=_axes_as_face_points(np.array(face_rot1)), pose_image=None)
            else:  # the single-frame path: the same points (y-up; zeros +0.0 as _axes_as_face_points')
                (x0, y0, _), (x1, y1, _), (x2, y2, _) = face_rot1
                face_points = [(x0 + 0.0, x1 + 0.0, x2 + 0.0), (-x0 + 0.0, -x1 + 0.0, -x2 + 0.0),
                               (y0 + 0.0, y1 + 0.0, y2 + 0.0), (-y0 + 0.0, -y1 + 0.0, -y2 + 0.0)]
        lm_start = time.perf_counter()
        t_s = None if t_us is None or self.chest is None else t_us / 1e6
        result = landmarks_to_vectors(lm, calibration=cal, visibility_threshold=self.visibility_threshold,
                                      chest_filter=None if t_s is None else self.chest,
                                      times=None if t_s is None else [t_s]) \
            if frame is None else encode1(lm, cal, visibility_threshold=self.visibility_threshold, mirrored="report",
                                          frame=frame, chest=self.chest, t=t_s, face_points=face_points)
        landmarks_us = (time.perf_counter() - lm_start) * 1e6
        vec = result.vectors[0].copy()
        states = {part: str(s[0]) for part, s in result.tracking.items()}
        for key, count in result.report.clamped.items():
            self.report.clamped[key] += count
        for key, count in result.report.degenerate.items():  # never silent (e.g. mirrored frames)
            if count and key != "body_frame":  # no body frame: already in the tracking states
                hint = " (selfie frames? use --mirrored)" if key == "mirrored" else ""
                self.report.notes[f"landmark encoder: {key}{hint}"] += count

        if obs.blendshapes is not None:
            if np.shape(obs.blendshapes) == (N_ARKIT,):
                face1, clipped = blendshape_dims1(obs.blendshapes)
                vec[FACE_DIM_INDICES] = face1
            else:  # a batch of weights: the batch path (and its usage.shape error)
                face, clipped = blendshape_dims(obs.blendshapes)
                vec[FACE_DIM_INDICES] = face[FACE_DIM_INDICES]
            for name in clipped:
                self.report.clamped[name] += 1
            states["face"] = states["mouth"] = "tracked"
        elif self.face_expected:
            vec[FACE_DIM_INDICES] = np.nan
            states["face"] = states["mouth"] = "lost"

        if face_rot1 is not None and obs.face_matrix is not None:
            if states["head"] != "tracked":  # no body frame: the head relative to the camera
                head, clamped = head_from_face_matrix(obs.face_matrix)
                if np.isfinite(head).all():
                    vec[_HEAD] = head
                    states["head"] = "tracked"
                    self.report.notes["no body frame: head relative to the camera"] += 1
                    if bool(clamped):
                        self.report.clamped["h_* (angle beyond max)"] += 1
            if obs.face_mesh is not None and obs.face_mesh.shape[0] == 478:
                if obs.face_mesh.shape != (478, 3):
                    raise UsageError("usage.shape", f"expected a (478, 3) mesh with irises, got {obs.face_mesh.shape}")
                # y-up (MEDIAPIPE_TO_Y_UP, a sign per axis; zeros +0.0 as its product's sums)
                it = iter(obs.face_mesh[EYE_MESH_INDEX].ravel().tolist())
                eyes = [(x + 0.0, -y + 0.0, -z + 0.0) for x, y, z in zip(it, it, it, strict=True)]
                gaze, gaze_clipped = iris_gaze1(eyes, face_rot1)
                # spec §7.3: the iris gives the yaw; the pitch comes from the blendshapes when
                # there are any (the iris's vertical reference is the lids, which move with a blink)
                pitch_from_blendshapes = obs.blendshapes is not None and math.isfinite(float(vec[_GAZE[1]]))
                if math.isfinite(gaze[0]) and (pitch_from_blendshapes or math.isfinite(gaze[1])):
                    vec[_GAZE[0]] = gaze[0]
                    if not pitch_from_blendshapes:
                        vec[_GAZE[1]] = gaze[1]
                    if gaze_clipped:
                        self.report.clamped["f_gaze_* (eye angle beyond max)"] += 1
        if self.face_expected and states.get("head") == "not_estimated":
            states["head"] = "lost"  # the face models ran and saw no face
        for note in obs.notes:
            self.report.notes[note] += 1

        if self.neutral_face is not None and states.get("face") == "tracked" \
                and self.neutral_face.apply(vec):  # spec §7.3: the performer's neutral measured
            self.report.notes[self.neutral_face.describe()] += 1
        if self.smoothing is not None and t_us is not None:
            vec = self.smoothing(t_us / 1e6, vec)
        tracked = tuple(p for p, s in states.items() if s == "tracked")
        mix = None
        if self.mouthing and states.get("mouth") == "tracked":  # spec §4.7: a mix from the mouth
            shares, vec = mix_from_mouth(vec)
            mix = tuple(float(x) for x in shares) if shares.any() else None
        untracked = tuple((p, s) for p, s in states.items() if s != "tracked")
        if (mix, untracked) != self._condition_key:  # the same as the last frame: its (immutable) conditions
            self._condition_key = (mix, untracked)
            self._conditions = Conditions(mouthing=mix, tracking=dict(untracked))
        conditions = self._conditions
        self.report.frames += 1
        self.report.tracked.update(tracked)
        if changed is not None:
            self.report.calibration_updates += 1
        elapsed = (time.perf_counter() - start) * 1e6
        return EncodedFrame(vector=vec, conditions=conditions,
                            calibration=None if changed is None else changed.calibration,
                            encode_us=elapsed, tracked=tracked, landmarks_us=landmarks_us)

