"""One arm's two-bone IK in Python floats, for the decoder's single frame (spec §4.1;
:func:`posewire.consumers.pose.decode_frame` with a batch of one).

The same formulas as :mod:`posewire.consumers.ik`'s ``_pole`` / ``_solve`` /
``_min_rotation`` on 3-tuples, in the same order of operations (the scalar kernels of
:mod:`posewire.codec.quaternion` and :mod:`posewire.codec.elbow`); only sin/cos come from
libm instead of numpy (they agree to a few ulp). A typed float kernel: ``setup.py`` compiles
it with mypyc where it can (:mod:`posewire.native`, spec §1.5: the same IEEE results); the pure module is the
reference, and the compiled one is pinned to it (tests/test_native.py).
"""

from __future__ import annotations

import math

from posewire.codec.elbow import ELBOW_REFERENCE, spread_basis1
from posewire.codec.quaternion import Quat, Vec3, cross1, dot1, reject1

__all__ = ["AT_SHOULDER", "arm1", "min_rotation1", "unit1"]

#: A target nearer the shoulder than this (metres) takes the upper bone's rest direction as
#: its axis (spec §4.1; posewire.consumers.ik's solve alike).
AT_SHOULDER = 1e-9

def unit1(v: Vec3) -> tuple[Vec3, float]:
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    d = n if n > 0.0 else 1.0
    return (v[0] / d, v[1] / d, v[2] / d), n


def min_rotation1(va: Vec3, vb: Vec3) -> Quat:
    w = 1.0 + dot1(va, vb)
    xyz = cross1(va, vb)
    if w < 1e-12:
        alt = cross1(va, (0.0, 0.0, 1.0))
        if math.sqrt(alt[0] * alt[0] + alt[1] * alt[1] + alt[2] * alt[2]) < 1e-6:
            alt = cross1(va, (1.0, 0.0, 0.0))
        xyz, _ = unit1(alt)
        w = 0.0
    n = math.sqrt(w * w + xyz[0] * xyz[0] + xyz[1] * xyz[1] + xyz[2] * xyz[2])
    return (w / n, xyz[0] / n, xyz[1] / n, xyz[2] / n)


_REF1 = (float(ELBOW_REFERENCE[0]), float(ELBOW_REFERENCE[1]), float(ELBOW_REFERENCE[2]))
_HALF_PI = math.pi / 2.0


def arm1(s0: Vec3, upper_dir0: Vec3, a_len: float, lower_dir0: Vec3, b_len: float,
          t: Vec3, spread: float, lateral: Vec3, fixed: float) -> tuple[Quat, Quat, Vec3, Vec3, bool]:
    """One arm's IK for one frame in Python floats (spec §4.1): the pole of ``spread`` about
    the shoulder ``s0`` → target ``t`` axis, then the two-bone solve; returns the upper and
    lower bones' rotations (w, x, y, z) from their rest directions, the elbow, the wrist and
    whether the target was clamped to the reachable shell. ``_solve(..., t, _pole(t − s0,
    spread, lateral, fixed))`` of :mod:`posewire.consumers.ik` in one function, equal to that
    array path to 1e-12 (tests/test_consumer_ik_single.py); the rare degenerate branches
    call the helpers."""
    sx, sy, sz = s0
    tx, ty, tz = t
    # the pole: unit shoulder -> target axis, spread basis (codec.elbow.spread_basis1)
    ax, ay, az = tx - sx, ty - sy, tz - sz
    n_axis = math.sqrt(ax * ax + ay * ay + az * az)
    d = n_axis if n_axis > 0.0 else 1.0
    ux, uy, uz = ax / d, ay / d, az / d
    rx0, ry0, rz0 = _REF1
    k = 0.0 + rx0 * ux + ry0 * uy + rz0 * uz
    rx, ry, rz = rx0 - k * ux, ry0 - k * uy, rz0 - k * uz
    n = math.sqrt(0.0 + rx * rx + ry * ry + rz * rz)
    if n < 1e-9:  # codec.elbow._REF_PARALLEL: the reference is along the arm
        (rx, ry, rz), (bx, by, bz) = spread_basis1((ux, uy, uz), lateral, fixed)
    else:
        rx, ry, rz = rx / n, ry / n, rz / n
        bx, by, bz = uy * rz - uz * ry, uz * rx - ux * rz, ux * ry - uy * rx
        toward = 0.0 + bx * lateral[0] + by * lateral[1] + bz * lateral[2]
        sense = math.copysign(1.0, toward) if abs(toward) > 1e-6 else fixed  # elbow._SENSE_MIN
        bx, by, bz = bx * sense, by * sense, bz * sense
    phi = spread * _HALF_PI
    c, s = math.cos(phi), math.sin(phi)
    px, py, pz = rx * c + bx * s, ry * c + by * s, rz * c + bz * s
    # the solve (its unit axis is the pole's u unless the target is at the shoulder; min/max
    # of finite floats written as comparisons)
    dist = n_axis
    if dist < AT_SHOULDER:
        ux, uy, uz = upper_dir0
    lo, hi = abs(a_len - b_len), a_len + b_len
    d = lo if lo > dist else dist
    d = hi if hi < d else d
    clamped = dist > hi * (1.0 + 1e-12) or dist < lo * (1.0 - 1e-12)
    cos_a = (a_len * a_len + d * d - b_len * b_len) / (2.0 * a_len * (AT_SHOULDER if d < AT_SHOULDER else d))
    cos_a = -1.0 if cos_a < -1.0 else cos_a
    cos_a = 1.0 if cos_a > 1.0 else cos_a
    sin_a = math.sqrt(1.0 - cos_a * cos_a)
    k = px * ux + py * uy + pz * uz
    vx, vy, vz = px - k * ux, py - k * uy, pz - k * uz
    vn = math.sqrt(vx * vx + vy * vy + vz * vz)
    if vn > 0.0:
        vx, vy, vz = vx / vn, vy / vn, vz / vn
    k = vx * ux + vy * uy + vz * uz
    vx, vy, vz = vx - k * ux, vy - k * uy, vz - k * uz
    n = math.sqrt(vx * vx + vy * vy + vz * vz)
    if n > 0.0:
        vx, vy, vz = vx / n, vy / n, vz / n
    if vn < 1e-9:
        alt = reject1((0.0, 0.0, 1.0), (ux, uy, uz))
        if math.sqrt(dot1(alt, alt)) < 1e-6:
            alt = reject1((0.0, -1.0, 0.0), (ux, uy, uz))
        (vx, vy, vz), _ = unit1(alt)
    ex = sx + a_len * (cos_a * ux + sin_a * vx)
    ey = sy + a_len * (cos_a * uy + sin_a * vy)
    ez = sz + a_len * (cos_a * uz + sin_a * vz)
    wx, wy, wz = sx + d * ux, sy + d * uy, sz + d * uz
    # g_upper = min_rotation1(upper_dir0, (elbow - s0) / a_len)
    ax, ay, az = upper_dir0
    bx, by, bz = (ex - sx) / a_len, (ey - sy) / a_len, (ez - sz) / a_len
    w = 1.0 + (0.0 + ax * bx + ay * by + az * bz)
    if w < 1e-12:
        uw, ux, uy, uz = min_rotation1(upper_dir0, (bx, by, bz))
    else:
        cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
        n = math.sqrt(w * w + cx * cx + cy * cy + cz * cz)
        uw, ux, uy, uz = w / n, cx / n, cy / n, cz / n
    # lower_dir1 = unit1(wrist - elbow)
    ax, ay, az = wx - ex, wy - ey, wz - ez
    n = math.sqrt(ax * ax + ay * ay + az * az)
    dd = n if n > 0.0 else 1.0
    bx, by, bz = ax / dd, ay / dd, az / dd
    # rotate1(g_upper, lower_dir0)
    lx, ly, lz = lower_dir0
    cx, cy, cz = uy * lz - uz * ly, uz * lx - ux * lz, ux * ly - uy * lx
    t0, t1, t2 = 2.0 * cx, 2.0 * cy, 2.0 * cz
    cx, cy, cz = uy * t2 - uz * t1, uz * t0 - ux * t2, ux * t1 - uy * t0
    ax, ay, az = lx + uw * t0 + cx, ly + uw * t1 + cy, lz + uw * t2 + cz
    # min_rotation1(rotated, lower_dir1) · g_upper
    w = 1.0 + (0.0 + ax * bx + ay * by + az * bz)
    if w < 1e-12:
        mw, mx, my, mz = min_rotation1((ax, ay, az), (bx, by, bz))
    else:
        cx, cy, cz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
        n = math.sqrt(w * w + cx * cx + cy * cy + cz * cz)
        mw, mx, my, mz = w / n, cx / n, cy / n, cz / n
    g_lower = (mw * uw - mx * ux - my * uy - mz * uz, mw * ux + mx * uw + my * uz - mz * uy,
               mw * uy - mx * uz + my * uw + mz * ux, mw * uz + mx * uy - my * ux + mz * uw)
    return (uw, ux, uy, uz), g_lower, (ex, ey, ez), (wx, wy, wz), clamped
