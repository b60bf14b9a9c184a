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

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from posewire.codec.errors import UsageError
from posewire.codec.euler import matrix_to_head
from posewire.codec.morph import N_ARKIT, arkit_to_dims
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS

__all__ = [
    "EYEBALL_RADIUS_EYE_WIDTHS",
    "EYE_POINTS",
    "GAZE_FULL_DEG",
    "UNOBSERVED_BY_BLENDSHAPES",
    "blendshape_dims",
    "head_from_face_matrix",
    "iris_gaze",
    "rotation_part",
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

_EYE = np.eye(3)
_UNOBSERVED = np.array([REGISTRY.index(d) for d in UNOBSERVED_BY_BLENDSHAPES], dtype=np.intp)


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

