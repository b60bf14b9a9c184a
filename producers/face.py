"""Face, mouth, head and gaze dims from what a face model sees (spec §4.4, §4.6, §4.7).

Pure numpy, batch first, no I/O:

* :func:`blendshape_dims` — the 52 ARKit blendshape weights of MediaPipe's
  FaceLandmarker -> every face and mouth dim through the registry's inverse mapping
  (:func:`posewire.codec.morph.arkit_to_dims`, spec §4.6: joint least squares over the
  (dim, direction) columns of the registry's channel gains, so a change of the registry's channel table changes
  this producer with it). ``tongueOut`` is not in MediaPipe's model: ``m_tongue`` comes
  out 0 from it, and the producer reports ``m_tongue`` as not observed (NaN).
* :func:`head_from_face_matrix` — ``(h_yaw, h_pitch, h_roll)`` from the facial
  transformation matrix (canonical face -> camera), relative to the body frame when one
  is given (spec §4.4: the head is relative to the torso), else to the camera.
* :func:`iris_gaze` — ``(f_gaze_yaw, f_gaze_pitch)`` from the iris centres of the
  478-point mesh: each iris centre's offset from its eye's corner midpoint, in the head
  frame, read as an eyeball rotation ``θ = asin(offset / R)`` with ``R =``
  :data:`EYEBALL_RADIUS_EYE_WIDTHS` eye widths, and ``n = θ /`` :data:`GAZE_FULL_DEG`
  (producer choice: ±1 = the eye turned 30°; spec/07-camera.md).

Axes: input points and matrices are in the y-up camera frame of
:data:`posewire.producers.landmarks.MEDIAPIPE_TO_Y_UP` (x image right, y up, z toward the
camera) for an **un-mirrored** image, where the subject's left is at +x. The facial
transformation matrix of MediaPipe is already in these axes (OpenGL camera), and its
canonical face has +x toward the subject's left eye, +y up, +z out of the face.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from posewire.codec.errors import UsageError
from posewire.codec.euler import matrix_to_head
from posewire.codec.morph import FACE_DIM_INDICES, N_ARKIT, arkit_to_dims, arkit_to_dims1
from posewire.codec.quaternion import Mat3, Vec3, dot1, norm1, sub1
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS

__all__ = [
    "EYEBALL_RADIUS_EYE_WIDTHS",
    "EYE_MESH_INDEX",
    "EYE_POINTS",
    "GAZE_FULL_DEG",
    "NEUTRAL_DIM_INDICES",
    "NEUTRAL_LIMIT",
    "UNOBSERVED_BY_BLENDSHAPES",
    "NeutralFace",
    "blendshape_dims",
    "blendshape_dims1",
    "head_from_face_matrix",
    "iris_gaze",
    "iris_gaze1",
    "relative_to_neutral",
    "rotation_part",
    "rotation_part1",
]

F64 = NDArray[np.float64]
Bool = NDArray[np.bool_]

#: Face-mesh indices per eye (subject's own side): outer corner, inner corner, iris centre,
#: upper lid, lower lid (points 468–477 exist only in the 478-point mesh with irises).
EYE_POINTS: Mapping[str, tuple[int, int, int, int, int]] = {"r": (33, 133, 468, 159, 145),
                                                            "l": (263, 362, 473, 386, 374)}
#: Eyeball radius in eye widths (corner to corner): about 12 mm over about 30 mm.
EYEBALL_RADIUS_EYE_WIDTHS = 0.4
#: Eye rotation (degrees) read as ``|f_gaze_*| = 1`` (producer choice).
GAZE_FULL_DEG = 30.0
#: Dims whose only ARKit channel MediaPipe's blendshape model lacks (``tongueOut``): left
#: NaN (not estimated) rather than a made-up 0.
UNOBSERVED_BY_BLENDSHAPES: tuple[str, ...] = ("m_tongue",)
#: The mesh rows :func:`iris_gaze1` reads: :data:`EYE_POINTS` of "r" then "l", flattened.
EYE_MESH_INDEX: NDArray[np.intp] = np.array([i for eye in EYE_POINTS.values() for i in eye], dtype=np.intp)

_EYE = np.eye(3)
_UNOBSERVED = np.array([REGISTRY.index(d) for d in UNOBSERVED_BY_BLENDSHAPES], dtype=np.intp)
_UNOBSERVED_FACE = tuple(FACE_DIM_INDICES.tolist().index(i) for i in _UNOBSERVED.tolist())


def blendshape_dims(weights: NDArray[np.float64]) -> tuple[F64, list[str]]:
    """Face and mouth dims ``(..., N)`` (every other dim NaN) from ARKit weights
    ``(..., 52)`` in ``ARKIT_CHANNELS`` order, and the names clamped or clipped on the way
    (spec §4.6; weights outside [0, 1] are clamped and reported, never silent).
    ``m_tongue`` is NaN (:data:`UNOBSERVED_BY_BLENDSHAPES`)."""
    arr = np.asarray(weights, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != N_ARKIT:
        raise UsageError("usage.shape", f"expected weights (..., {N_ARKIT}), got {arr.shape}")
    vec, report = arkit_to_dims(arr, into=np.full(N_DIMS, np.nan), policy="clamp")
    vec[..., _UNOBSERVED] = np.nan
    changed = report.channels()
    return vec, changed["clamped"] + changed["replaced"] + changed["dims_clipped"]


def rotation_part(matrix: F64) -> F64:
    """The nearest rotation ``(..., 3, 3)`` to the upper-left 3×3 of ``(..., 4, 4)`` (or
    ``(..., 3, 3)``) matrices: the polar factor by SVD, which drops any scale."""
    m = np.asarray(matrix, dtype=np.float64)[..., :3, :3]
    u, _, vt = np.linalg.svd(m)
    det = np.linalg.det(u @ vt)
    fix = np.ones(m.shape[:-1])
    fix[..., -1] = np.sign(np.where(det == 0, 1.0, det))
    out: F64 = (u * fix[..., None, :]) @ vt
    return out


def head_from_face_matrix(matrix: F64, body_rotation: F64 | None = None) -> tuple[F64, Bool]:
    """Normalized ``(h_yaw, h_pitch, h_roll)`` ``(..., 3)`` and a clamp mask ``(...,)``
    from facial transformation matrices ``(..., 4, 4)`` (spec §4.4).

    ``body_rotation`` ``(..., 3, 3)``: the body frame's axes as columns in the same camera
    frame (spec §2.3); the head is then ``R_bodyᵀ · R_face``. Without it (no body seen) the
    head is relative to the camera (a torso facing the camera). Non-finite input gives NaN.
    """
    m = np.asarray(matrix, dtype=np.float64)[..., :3, :3]
    ok: Bool = np.asarray(np.isfinite(m).all(axis=(-1, -2)), dtype=bool)
    rel = rotation_part(np.where(ok[..., None, None], m, _EYE))
    if body_rotation is not None:
        rel = np.swapaxes(body_rotation, -1, -2) @ rel
        ok = ok & np.asarray(np.isfinite(rel).all(axis=(-1, -2)), dtype=bool)
    n, clamped = matrix_to_head(np.where(ok[..., None, None], rel, _EYE))
    out: F64 = np.where(ok[..., None], n, np.nan)
    return out, clamped & ok


def iris_gaze(mesh: F64, head_rotation: F64) -> tuple[F64, Bool]:
    """``(f_gaze_yaw, f_gaze_pitch)`` ``(..., 2)`` and a clamp mask from the 478-point mesh
    ``(..., 478, 3)`` (isotropic units, y-up camera axes) and the head's rotation in the
    camera frame ``(..., 3, 3)`` (columns: head +X = subject's left, +Y up, +Z forward).

    Per eye, in head axes, ``w`` = corner distance: horizontally ``o_x`` = iris centre −
    corner midpoint (the inner corner's caruncle puts each iris off-centre toward the
    outer corner; the two eyes' offsets cancel in the mean); vertically ``o_y`` = iris
    centre − eyelid midpoint (the corners sit about 0.09 w below a level iris on the
    real photos of the tests, the lid midpoint within 0.03 w).
    ``θ = asin(o / (R·w))`` (R = :data:`EYEBALL_RADIUS_EYE_WIDTHS`); both eyes averaged;
    ``n = θ / GAZE_FULL_DEG`` clipped to [-1, 1] (clips reported). + yaw = toward the
    subject's left (+X), + pitch = up.
    """
    pts = np.asarray(mesh, dtype=np.float64)
    if pts.ndim < 2 or pts.shape[-2] != 478 or pts.shape[-1] != 3:
        raise UsageError("usage.shape", f"expected a (..., 478, 3) mesh with irises, got {pts.shape}")
    angles = []
    for outer, inner, iris, upper, lower in EYE_POINTS.values():
        corners = 0.5 * (pts[..., outer, :] + pts[..., inner, :])
        lids = 0.5 * (pts[..., upper, :] + pts[..., lower, :])
        width = np.linalg.norm(pts[..., outer, :] - pts[..., inner, :], axis=-1)
        # Rᵀ·o in head axes: x from the corners, y from the lids
        off_x = np.einsum("...j,...j->...", head_rotation[..., :, 0], pts[..., iris, :] - corners)
        off_y = np.einsum("...j,...j->...", head_rotation[..., :, 1], pts[..., iris, :] - lids)
        offset = np.stack([off_x, off_y], axis=-1)
        radius = EYEBALL_RADIUS_EYE_WIDTHS * np.where(width > 0, width, np.nan)
        ratio = np.clip(offset / radius[..., None], -1.0, 1.0)
        angles.append(np.degrees(np.arcsin(ratio)))
    mean = 0.5 * (angles[0] + angles[1])
    n = mean / GAZE_FULL_DEG
    clipped: Bool = np.asarray((np.isfinite(n) & (np.abs(n) > 1.0)).any(axis=-1), dtype=bool)
    out: F64 = np.clip(n, -1.0, 1.0)
    return out, clipped



# ---------------------------------------------------------------------------- neutral face

#: The dims a neutral-face calibration re-centres (spec §7.3): every face and mouth dim but
#: gaze (looking at the camera is not an expression) and the tongue (MediaPipe does not see it).
NEUTRAL_DIM_INDICES: NDArray[np.intp] = np.array(
    [i for i in FACE_DIM_INDICES.tolist() if not REGISTRY.dimensions[i].id.startswith("f_gaze")
     and REGISTRY.dimensions[i].id not in UNOBSERVED_BY_BLENDSHAPES],
    dtype=np.intp)
#: A measured neutral is limited to ±0.9 so that the rescaling below keeps some range.
NEUTRAL_LIMIT = 0.9


def relative_to_neutral(values: F64, neutral: F64) -> F64:
    """Normalized dims ``values (..., K)`` re-centred on a performer's neutral ``neutral (K,)``
    (spec §7.3): ``(n − b)/(1 − b)`` at or above ``b``, ``(n − b)/(1 + b)`` below, so ``b`` → 0
    and ±1 stay ±1 (monotonic, in range, no clip); ``b`` is limited to ±:data:`NEUTRAL_LIMIT`.
    NaN stays NaN."""
    b = np.clip(neutral, -NEUTRAL_LIMIT, NEUTRAL_LIMIT)
    out: F64 = np.where(values >= b, (values - b) / (1.0 - b), (values - b) / (1.0 + b))
    return out


class NeutralFace:
    """A performer's neutral face (spec §7.3, ``--calibrate-face``): the per-dim median of the
    first ``frames`` frames with a face (the performer holds a relaxed face meanwhile), after
    which every frame's face and mouth dims are :func:`relative_to_neutral` of it (gaze and
    the tongue untouched). Before that the dims are sent as measured."""

    def __init__(self, frames: int) -> None:
        if frames < 1:
            raise UsageError("usage.bad_option", f"a neutral face needs at least one frame, not {frames}")
        self.frames = frames
        self._samples: list[F64] = []
        self.neutral: F64 | None = None

    def apply(self, vector: F64) -> bool:
        """Observe (while measuring) or re-centre (after) one full vector ``(N,)`` in place;
        returns True on the frame that completes the measurement."""
        values = vector[NEUTRAL_DIM_INDICES]
        if self.neutral is None:
            if np.isfinite(values).any():
                self._samples.append(values.copy())
            if len(self._samples) < self.frames:
                return False
            with np.errstate(all="ignore"):
                self.neutral = np.nan_to_num(np.nanmedian(np.stack(self._samples), axis=0))
            self._samples.clear()
            vector[NEUTRAL_DIM_INDICES] = relative_to_neutral(values, self.neutral)
            return True
        vector[NEUTRAL_DIM_INDICES] = relative_to_neutral(values, self.neutral)
        return False

    def describe(self, top: int = 4) -> str:
        """The largest offsets of the measured neutral, for the run's notes."""
        if self.neutral is None:
            return f"face neutral: measuring ({len(self._samples)} of {self.frames} frames)"
        order = np.argsort(-np.abs(self.neutral))[:top]
        parts = ", ".join(f"{REGISTRY.dimensions[int(NEUTRAL_DIM_INDICES[k])].id} {self.neutral[k]:+.2f}"
                          for k in order if self.neutral[k] != 0.0)
        return f"face neutral measured over {self.frames} frames: {parts or 'all 0'}"


# ---------------------------------------------------------------------------- one frame
# The live encoder's B = 1 path (one frame at a time, spec §7): the same formulas in Python floats (or
# one numpy call where numpy is cheaper), pinned to the batch functions above to 1e-9 by
# tests/test_face_single_frame.py.

#: Newton iterations of :func:`rotation_part1` before it hands the matrix to the SVD.
_POLAR_ITERATIONS = 30
#: Newton step (largest element change) below which the next step is the last one:
#: quadratic convergence puts it at float round-off.
_POLAR_STEP = 1e-9


def blendshape_dims1(weights: NDArray[np.float64]) -> tuple[list[float], list[str]]:
    """:func:`blendshape_dims` of one ``(52,)`` weight array: the face/mouth values in
    :data:`~posewire.codec.morph.FACE_DIM_INDICES` order (``m_tongue`` NaN) and the names
    clamped or clipped, in the same order (spec §4.6, :func:`~posewire.codec.morph.arkit_to_dims1`)."""
    face, changed = arkit_to_dims1(weights)
    for k in _UNOBSERVED_FACE:
        face[k] = math.nan
    return face, changed["clamped"] + changed["replaced"] + changed["dims_clipped"]


def rotation_part1(matrix: F64) -> Mat3:
    """:func:`rotation_part` of one ``(4, 4)`` or ``(3, 3)`` matrix, as rows of floats.

    The polar factor by the scaled Newton iteration ``X ← ½(γX + (γX)⁻ᵀ)``,
    ``γ = |det X|^(-1/3)`` (it converges quadratically to the polar factor ``U·Vᵀ`` of the
    SVD for ``det > 0``); ``(γX)⁻ᵀ = cof(X) / (γ det X)``. A matrix with ``det ≤ 0``,
    non-finite entries, or no convergence goes to :func:`rotation_part` (its SVD's sign
    fix decides there)."""
    m = np.asarray(matrix, dtype=np.float64)
    (a, b, c), (d, e, f), (g, h, i) = m[:3, :3].tolist()
    last = False
    for _ in range(_POLAR_ITERATIONS):
        ca, cb, cc = e * i - f * h, f * g - d * i, d * h - e * g  # cofactors, row by row
        cd, ce, cf = c * h - b * i, a * i - c * g, b * g - a * h
        cg, ch, ci = b * f - c * e, c * d - a * f, a * e - b * d
        det = a * ca + b * cb + c * cc
        if not 0.0 < det < math.inf:
            break
        gamma = det ** (-1.0 / 3.0)
        s, t = 0.5 * gamma, 0.5 / (gamma * det)
        x = (s * a + t * ca, s * b + t * cb, s * c + t * cc, s * d + t * cd, s * e + t * ce, s * f + t * cf,
             s * g + t * cg, s * h + t * ch, s * i + t * ci)
        step = max(abs(x[0] - a), abs(x[1] - b), abs(x[2] - c), abs(x[3] - d), abs(x[4] - e),
                   abs(x[5] - f), abs(x[6] - g), abs(x[7] - h), abs(x[8] - i))
        a, b, c, d, e, f, g, h, i = x
        if last:
            return ((a, b, c), (d, e, f), (g, h, i))
        last = step < _POLAR_STEP
    (a, b, c), (d, e, f), (g, h, i) = rotation_part(m).tolist()
    return ((a, b, c), (d, e, f), (g, h, i))


def _asin_deg(offset: float, radius: float) -> float:
    # iris_gaze's degrees(arcsin(clip(offset / radius, -1, 1))), NaN kept; numpy's
    # division by a zero radius (an underflowed width) gives ±inf or NaN
    if radius == 0.0:
        ratio = math.nan if offset == 0.0 or math.isnan(offset) else math.copysign(math.inf, offset)
    else:
        ratio = offset / radius
    if ratio > 1.0:
        ratio = 1.0
    elif ratio < -1.0:
        ratio = -1.0
    return math.degrees(math.asin(ratio)) if ratio == ratio else math.nan


def iris_gaze1(eyes: Sequence[Sequence[float]], head_rotation: Mat3) -> tuple[tuple[float, float], bool]:
    """:func:`iris_gaze` of one frame: ``eyes`` the 10 mesh points ``mesh[EYE_MESH_INDEX]``
    (y-up camera axes), ``head_rotation`` rows of floats; returns ``(f_gaze_yaw,
    f_gaze_pitch)`` and the clip flag (same formulas, spec/07-camera.md)."""
    col_x: Vec3 = (head_rotation[0][0], head_rotation[1][0], head_rotation[2][0])
    col_y: Vec3 = (head_rotation[0][1], head_rotation[1][1], head_rotation[2][1])
    yaw = pitch = 0.0
    for k in (0, 5):
        (o0, o1, o2), (n0, n1, n2), iris_pt, (u0, u1, u2), (l0, l1, l2) = eyes[k:k + 5]
        iris: Vec3 = (iris_pt[0], iris_pt[1], iris_pt[2])
        corners: Vec3 = (0.5 * (o0 + n0), 0.5 * (o1 + n1), 0.5 * (o2 + n2))
        lids: Vec3 = (0.5 * (u0 + l0), 0.5 * (u1 + l1), 0.5 * (u2 + l2))
        width = norm1(sub1((o0, o1, o2), (n0, n1, n2)))
        radius = EYEBALL_RADIUS_EYE_WIDTHS * (width if width > 0 else math.nan)
        yaw += _asin_deg(dot1(col_x, sub1(iris, corners)), radius)
        pitch += _asin_deg(dot1(col_y, sub1(iris, lids)), radius)
    n_yaw, n_pitch = 0.5 * yaw / GAZE_FULL_DEG, 0.5 * pitch / GAZE_FULL_DEG
    clipped = (math.isfinite(n_yaw) and abs(n_yaw) > 1.0) or (math.isfinite(n_pitch) and abs(n_pitch) > 1.0)
    return ((1.0 if n_yaw > 1.0 else -1.0 if n_yaw < -1.0 else n_yaw),
            (1.0 if n_pitch > 1.0 else -1.0 if n_pitch < -1.0 else n_pitch)), clipped
