"""Avatar skeletons: joints, rest pose, forward kinematics, calibration and retargeting.

Frame (spec §2.1, seed ``001_b0dd8389a32c0279.txt`` "Frame, units and rest pose"): metres,
+Y up, +Z forward (the character's facing), +X = the character's left, feet on Y = 0.
Quaternions are ``(w, x, y, z)`` Hamilton unit quaternions (spec §3.3), batch first.

A :class:`Skeleton` holds, per joint ``j`` (parents before children):

* ``offsets[j]`` ``(3,)`` — rest position of ``j`` in its parent's local frame (metres);
* ``rest_rotations[j]`` ``(4,)`` — rest local rotation (parent frame -> joint frame).

Forward kinematics (:func:`fk`)::

    W_j = W_parent · L_j                       (world rotation; L_j the local rotation)
    P_j = P_parent + rotate(W_parent, offset_j)

``helix_humanoid()`` builds the 68 canonical joints of ``helix-humanoid@1`` (seed 001) in
an A-pose with **identity rest rotations** (world-aligned bind frames). A real avatar's
bind frames differ (seed 001 measures spine bones with local +X up); the decoder handles
any rest rotations (see :func:`Skeleton.from_world`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from posewire.codec.calibration import NAVEL_FRACTION, Calibration
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import conjugate_unchecked, multiply_unchecked, rotate_unchecked

__all__ = [
    "CANONICAL_JOINTS",
    "FINGERS",
    "HELIX_HEIGHT",
    "METACARPALS",
    "OPTIONAL_JOINTS",
    "REQUIRED_JOINTS",
    "RetargetMap",
    "RetargetResult",
    "Skeleton",
    "calibration_of",
    "fk",
    "helix_humanoid",
]

F64 = NDArray[np.float64]

#: The five fingers, thumb first (spec §4.3).
FINGERS: tuple[str, ...] = ("thumb", "index", "middle", "ring", "pinky")
#: Default body height of :func:`helix_humanoid` (metres).
HELIX_HEIGHT = 1.75


def _canonical_names() -> tuple[str, ...]:
    names = ["root", "pelvis", "spine_01", "spine_02", "spine_03", "spine_04", "spine_05",
             "neck_01", "neck_02", "head"]
    for s in ("l", "r"):
        names += [f"clavicle_{s}", f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}"]
        names += [f"{f}_{k:02d}_{s}" for f in FINGERS for k in (1, 2, 3)]
        names += [f"upperarm_twist_01_{s}", f"upperarm_twist_02_{s}", f"lowerarm_twist_01_{s}",
                  f"lowerarm_twist_02_{s}", f"thigh_twist_01_{s}", f"calf_twist_01_{s}"]
        names += [f"thigh_{s}", f"calf_{s}", f"foot_{s}", f"ball_{s}"]
    return tuple(names)


#: The 68 canonical joints of ``helix-humanoid@1`` (seed 001): 10 axial + 29 per side
#: (4 arm, 15 finger, 6 twist, 4 leg). The importer-owned metacarpals are not among them.
CANONICAL_JOINTS: tuple[str, ...] = _canonical_names()
#: Importer-owned metacarpals (seed 001 "plus the importer-owned metacarpals"), extra
#: joints between ``hand`` and the index..pinky base; the thumb's metacarpal is
#: ``thumb_01`` itself (spec §4.3). Built only with ``helix_humanoid(metacarpals=True)``.
METACARPALS: tuple[str, ...] = tuple(
    f"{f}_metacarpal_{s}" for s in ("l", "r") for f in FINGERS[1:])
#: Bones the backend gate requires (seed 001 "Bones each gate requires").
REQUIRED_JOINTS: frozenset[str] = frozenset(
    ["root", "pelvis", "spine_01", "spine_03", "spine_05", "neck_01", "head"]
    + [f"{b}_{s}" for s in ("l", "r")
       for b in ("clavicle", "upperarm", "lowerarm", "hand", "thigh", "calf", "foot")])
#: Optional bones (seed 001): fingers, twists, ball, spine_02/04, neck_02 (+ metacarpals).
OPTIONAL_JOINTS: frozenset[str] = frozenset(
    n for n in CANONICAL_JOINTS + METACARPALS if n not in REQUIRED_JOINTS)


@dataclass(frozen=True, eq=False)
class Skeleton:
    """A joint hierarchy at rest (module docstring for conventions).

    ``names`` ``(J,)``; ``parents`` ``(J,)`` int, ``-1`` for the root, every parent index
    smaller than its child's; ``offsets`` ``(J, 3)`` metres in the parent's local frame;
    ``rest_rotations`` ``(J, 4)`` local rest rotations; ``sites`` extra named points
    ``{name: (joint index, local offset (3,))}`` such as ``middle_tip_r`` (spec §2.2:
    "end of the third middle-finger segment").
    """

    names: tuple[str, ...]
    parents: NDArray[np.intp]
    offsets: F64
    rest_rotations: F64
    sites: Mapping[str, tuple[int, F64]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        j = len(self.names)
        if self.parents.shape != (j,) or self.offsets.shape != (j, 3) \
                or self.rest_rotations.shape != (j, 4):
            raise UsageError("usage.shape", "skeleton arrays do not match the joint count")
        if len(set(self.names)) != j:
            raise UsageError("usage.bad_option", "joint names are not unique")
        for i, p in enumerate(self.parents):
            if not -1 <= p < i or (p == -1) != (i == 0):
                raise UsageError("usage.bad_option",
                                 f"joint {self.names[i]}: parent {p} must precede it (root first)")

    @property
    def index(self) -> dict[str, int]:
        """``{joint name: index}``."""
        return {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def rest_world(self) -> tuple[F64, F64]:
        """Rest world positions ``(J, 3)`` and rotations ``(J, 4)``."""
        pos, rot = fk(self, self.rest_rotations[None])
        return pos[0], rot[0]

    def site(self, name: str, positions: F64, rotations: F64) -> F64:
        """World position ``(..., 3)`` of a named site or joint given FK results
        ``positions (..., J, 3)``, ``rotations (..., J, 4)``."""
        if name in self.sites:
            j, off = self.sites[name]
            return positions[..., j, :] + rotate_unchecked(rotations[..., j, :], off)
        idx = self.index.get(name)
        if idx is None:
            raise UsageError("usage.unknown_id", f"no joint or site {name!r}", path=name)
        return positions[..., idx, :]

    @classmethod
    def from_world(cls, names: Sequence[str], parents: Sequence[int], positions: ArrayLike,
                   rotations: ArrayLike | None = None, *,
                   sites: Mapping[str, tuple[str, ArrayLike]] | None = None) -> Skeleton:
        """A skeleton from rest **world** positions ``(J, 3)`` and bind rotations
        ``(J, 4)`` (default identity). ``sites``: ``{name: (joint name, WORLD point)}``."""
        pos = np.asarray(positions, dtype=np.float64)
        rot = np.tile([1.0, 0.0, 0.0, 0.0], (len(names), 1)) if rotations is None \
            else np.asarray(rotations, dtype=np.float64)
        par = np.asarray(parents, dtype=np.intp)
        offsets = pos.copy()
        local = rot.copy()
        for j, p in enumerate(par):
            if p >= 0:
                inv = conjugate_unchecked(rot[p])
                offsets[j] = rotate_unchecked(inv, pos[j] - pos[p])
                local[j] = multiply_unchecked(inv, rot[j])
        index = {n: i for i, n in enumerate(names)}
        local_sites: dict[str, tuple[int, F64]] = {}
        for site, (joint, point) in (sites or {}).items():
            j = index[joint]
            local_sites[site] = (j, rotate_unchecked(conjugate_unchecked(rot[j]),
                                                     np.asarray(point, float) - pos[j]))
        return cls(tuple(names), par, offsets, local, local_sites)

    def without(self, drop: Iterable[str]) -> Skeleton:
        """This skeleton with the joints ``drop`` removed; their children are re-parented
        to the nearest kept ancestor with their rest world transform kept (seed 001:
        optional bones may be missing). Sites on dropped joints move to that ancestor."""
        gone = set(drop)
        unknown = gone.difference(self.names)
        if unknown:
            raise UsageError("usage.unknown_id", f"no joints {sorted(unknown)}")
        if self.names[0] in gone:
            raise UsageError("usage.bad_option", "cannot drop the root")
        pos, rot = self.rest_world()
        keep = [i for i, n in enumerate(self.names) if n not in gone]
        new_index = {old: k for k, old in enumerate(keep)}

        def kept_ancestor(i: int) -> int:
            p = int(self.parents[i])
            while self.names[p] in gone:
                p = int(self.parents[p])
            return p

        parents = [-1] + [new_index[kept_ancestor(i)] for i in keep[1:]]
        sites: dict[str, tuple[str, ArrayLike]] = {}
        for name, (j, off) in self.sites.items():
            owner = j if self.names[j] not in gone else kept_ancestor(j)
            sites[name] = (self.names[owner], pos[j] + rotate_unchecked(rot[j], off))
        return Skeleton.from_world([self.names[i] for i in keep], parents, pos[keep],
                                   rot[keep], sites=sites)


@functools.lru_cache(maxsize=64)
@functools.lru_cache(maxsize=64)
def _depth_levels(skeleton: Skeleton) -> tuple[tuple[NDArray[np.intp], NDArray[np.intp]], ...]:
    # (joints, their parents) per tree depth >= 1: every parent lies in an earlier level;
    # computed once per skeleton (Skeleton hashes by identity: eq=False)
    depth = np.zeros(len(skeleton), dtype=np.intp)
    for j in range(1, len(skeleton)):
        depth[j] = depth[skeleton.parents[j]] + 1
    levels = []
    for d in range(1, int(depth.max(initial=0)) + 1):
        joints = np.flatnonzero(depth == d)
        levels.append((joints, skeleton.parents[joints]))
    return tuple(levels)


def fk(skeleton: Skeleton, local_rotations: ArrayLike) -> tuple[F64, F64]:
    """Forward kinematics: world positions ``(B, J, 3)`` (metres) and rotations
    ``(B, J, 4)`` from local rotations ``(B, J, 4)`` (module docstring formulas). The root
    offset is its world position. Evaluated one tree depth at a time (all joints of a
    depth in one array operation)."""
    local = np.asarray(local_rotations, dtype=np.float64)
    if local.ndim != 3 or local.shape[1:] != (len(skeleton), 4):
        raise UsageError("usage.shape",
                         f"local rotations must be (B, {len(skeleton)}, 4), got {local.shape}")
    b, j = local.shape[0], local.shape[1]
    pos = np.empty((b, j, 3))
    rot = np.empty((b, j, 4))
    pos[:, 0] = skeleton.offsets[0]
    rot[:, 0] = local[:, 0]
    for joints, parents in _depth_levels(skeleton):
        parent_rot = rot[:, parents]
        pos[:, joints] = pos[:, parents] + rotate_unchecked(parent_rot, skeleton.offsets[joints])
        rot[:, joints] = multiply_unchecked(parent_rot, local[:, joints])
    return pos, rot


# -- helix-humanoid@1 -------------------------------------------------------------------

#: Right-hand layout in the hand-canonical frame (identity palm pose, spec §2.4: +Y
#: fingers, +Z palm normal, +X toward the thumb), metres from the wrist: finger base
#: (``*_01``) and the three segment lengths 01->02, 02->03, 03->tip.
_HAND_LAYOUT: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "thumb": ((0.020, 0.025, 0.010), (0.045, 0.033, 0.028)),
    "index": ((0.022, 0.090, 0.0), (0.042, 0.025, 0.022)),
    "middle": ((0.0, 0.095, 0.0), (0.045, 0.028, 0.022)),
    "ring": ((-0.020, 0.090, 0.0), (0.042, 0.026, 0.022)),
    "pinky": ((-0.038, 0.080, 0.0), (0.032, 0.020, 0.020)),
}
#: Thumb direction in the hand-canonical frame (toward +X thumb side and +Y fingers).
_THUMB_DIR = np.array([0.6, 0.8, 0.0])
#: Upper-arm angle below horizontal... expressed from straight down: 45 degrees (A-pose).
_A_POSE_DEG = 45.0


def helix_humanoid(height: float = HELIX_HEIGHT, *, metacarpals: bool = False) -> Skeleton:
    """The ``helix-humanoid@1`` joint set (seed 001) in its A-pose, scaled to ``height``.

    Proportions at 1.75 m (all scale with ``height / 1.75``; y = height above the feet):

    * pelvis y 0.98; spine_01..05 y 1.03, 1.11, 1.19, 1.27, 1.35; neck_01 1.47,
      neck_02 1.52, head 1.58 (crown about 1.75);
    * clavicle (±0.03, 1.43, 0); upperarm = shoulder site (±0.18, 1.43, 0): shoulder
      width 0.36, neck site (0, 1.43, 0);
    * arms 45° down from horizontal in the coronal plane (A-pose; seed 001 gate ≥ 17°
      from straight down): upper arm 0.30, forearm 0.26 (arm length 0.56);
      twists at 1/3 and 2/3 of each segment (leaf children);
    * hand: palm normal medial-down, thumb forward, fingers along the forearm; finger
      layout :data:`_HAND_LAYOUT` (wrist -> middle tip 0.19 straight);
    * thigh (±0.09, 0.93, 0), calf (±0.09, 0.50, 0), foot (±0.09, 0.08, −0.02),
      ball (±0.09, 0.02, 0.12); thigh/calf twists at half the segment.

    Reference distances (spec §4.1, :func:`calibration_of`) at 1.75 m: hand 0.19,
    torso 0.40, arm 0.56, shoulder width 0.36. All rest rotations are identity.
    ``metacarpals=True`` adds :data:`METACARPALS` (76 joints).
    """
    if not np.isfinite(height) or height <= 0:
        raise UsageError("usage.out_of_range", f"height must be positive, not {height!r}")
    k = height / HELIX_HEIGHT
    names: list[str] = []
    parents: list[int] = []
    world: list[F64] = []
    sites: dict[str, tuple[str, ArrayLike]] = {}

    def add(name: str, parent: str | None, p: ArrayLike) -> None:
        names.append(name)
        parents.append(-1 if parent is None else names.index(parent))
        world.append(np.asarray(p, dtype=np.float64))

    add("root", None, (0, 0, 0))
    add("pelvis", "root", (0, 0.98, 0))
    prev = "pelvis"
    for i, y in enumerate((1.03, 1.11, 1.19, 1.27, 1.35), start=1):
        add(f"spine_{i:02d}", prev, (0, y, 0))
        prev = f"spine_{i:02d}"
    add("neck_01", "spine_05", (0, 1.47, 0))
    add("neck_02", "neck_01", (0, 1.52, 0))
    add("head", "neck_02", (0, 1.58, 0))
    a = np.radians(_A_POSE_DEG)
    for s, sx in (("l", 1.0), ("r", -1.0)):
        shoulder = np.array([sx * 0.18, 1.43, 0.0])
        arm_dir = np.array([sx * np.cos(a), -np.sin(a), 0.0])
        elbow = shoulder + 0.30 * arm_dir
        wrist = elbow + 0.26 * arm_dir
        add(f"clavicle_{s}", "spine_05", (sx * 0.03, 1.43, 0))
        add(f"upperarm_{s}", f"clavicle_{s}", shoulder)
        add(f"lowerarm_{s}", f"upperarm_{s}", elbow)
        add(f"hand_{s}", f"lowerarm_{s}", wrist)
        # hand-canonical -> body: fingers along the arm, palm medial-down, thumb forward
        # (right hand; the left is the sagittal mirror of it)
        fingers = np.array([-np.cos(a), -np.sin(a), 0.0])
        normal = np.array([np.sin(a), -np.cos(a), 0.0])
        basis = np.stack([np.cross(fingers, normal), fingers, normal], axis=-1)
        mirror = np.array([sx * -1.0, 1.0, 1.0])  # identity for r, diag(-1,1,1) for l

        def to_body(local: ArrayLike, wrist: F64 = wrist, basis: F64 = basis,
                    mirror: F64 = mirror) -> F64:
            out: F64 = wrist + mirror * (basis @ np.asarray(local, dtype=np.float64))
            return out

        for f in FINGERS:
            base, seg = _HAND_LAYOUT[f]
            direction = _THUMB_DIR / np.linalg.norm(_THUMB_DIR) if f == "thumb" \
                else np.array([0.0, 1.0, 0.0])
            parent = f"hand_{s}"
            if metacarpals and f != "thumb":
                add(f"{f}_metacarpal_{s}", parent, to_body((0.3 * base[0], 0.02, 0.0)))
                parent = f"{f}_metacarpal_{s}"
            point = np.asarray(base, dtype=np.float64)
            for n in range(3):
                add(f"{f}_{n + 1:02d}_{s}", parent, to_body(point))
                parent = f"{f}_{n + 1:02d}_{s}"
                point = point + seg[n] * direction
            sites[f"{f}_tip_{s}"] = (parent, to_body(point))
        for t, (bone, frac, start, end) in enumerate((
                ("upperarm", 1 / 3, shoulder, elbow), ("upperarm", 2 / 3, shoulder, elbow),
                ("lowerarm", 1 / 3, elbow, wrist), ("lowerarm", 2 / 3, elbow, wrist))):
            add(f"{bone}_twist_{t % 2 + 1:02d}_{s}", f"{bone}_{s}",
                start + frac * (end - start))
        hip = np.array([sx * 0.09, 0.93, 0.0])
        knee = np.array([sx * 0.09, 0.50, 0.0])
        ankle = np.array([sx * 0.09, 0.08, -0.02])
        add(f"thigh_{s}", "pelvis", hip)
        add(f"calf_{s}", f"thigh_{s}", knee)
        add(f"foot_{s}", f"calf_{s}", ankle)
        add(f"ball_{s}", f"foot_{s}", (sx * 0.09, 0.02, 0.12))
        add(f"thigh_twist_01_{s}", f"thigh_{s}", 0.5 * (hip + knee))
        add(f"calf_twist_01_{s}", f"calf_{s}", 0.5 * (knee + ankle))
    # keep the canonical order of CANONICAL_JOINTS (metacarpals after their hand's fingers)
    order = [n for n in CANONICAL_JOINTS] + ([m for m in METACARPALS] if metacarpals else [])
    order = _topological(order, names, parents)
    idx = {n: i for i, n in enumerate(names)}
    pos = np.stack(world)[[idx[n] for n in order]] * k
    new = {n: i for i, n in enumerate(order)}
    par = [-1 if parents[idx[n]] < 0 else new[names[parents[idx[n]]]] for n in order]
    return Skeleton.from_world(order, par, pos,
                               sites={n: (j, np.asarray(p, float) * k) for n, (j, p) in sites.items()})


def _topological(order: list[str], names: list[str], parents: list[int]) -> list[str]:
    # stable: keep ``order`` but move each joint after its parent
    placed: list[str] = []
    seen: set[str] = set()
    idx = {n: i for i, n in enumerate(names)}

    def place(n: str) -> None:
        if n in seen:
            return
        p = parents[idx[n]]
        if p >= 0:
            place(names[p])
        seen.add(n)
        placed.append(n)

    for n in order:
        place(n)
    return placed


def calibration_of(skeleton: Skeleton) -> Calibration:
    """The §4.1 reference distances of an avatar, measured in fixed reference poses.

    The reference poses are not the A-pose span: ``arm_length`` is the **chain length**
    shoulder (``upperarm_r``) -> elbow -> wrist (``hand_r``), i.e. the arm fully extended;
    ``hand_length`` the chain wrist -> ``middle_01_r`` -> ``02`` -> ``03`` ->
    ``middle_tip_r`` (hand open; the straight distance when there is no middle finger
    chain). ``torso_length`` = |navel − neck| and ``shoulder_width`` = |shoulder_l −
    shoulder_r| at rest (spec §2.2: neck = shoulder midpoint, hip_mid = thigh midpoint,
    navel = neck + 0.8·(hip_mid − neck)). A distance whose joints are missing is
    ``None`` (the units then fall back, reported by :func:`posewire.codec.calibration.units`).
    """
    pos, rot = skeleton.rest_world()
    ix = skeleton.index

    def point(name: str) -> F64 | None:
        if name in ix:
            found: F64 = pos[ix[name]]
            return found
        if name in skeleton.sites:
            j, off = skeleton.sites[name]
            out: F64 = pos[j] + rotate_unchecked(rot[j], off)
            return out
        return None

    def chain(points: Sequence[str]) -> float | None:
        pts = [point(n) for n in points]
        present = [p for p in pts if p is not None]
        if pts[0] is None or pts[-1] is None:
            return None
        return float(sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(present)))

    sl, sr = point("upperarm_l"), point("upperarm_r")
    torso = None
    width = None
    if sl is not None and sr is not None:
        width = float(np.linalg.norm(sl - sr))
        tl, tr = point("thigh_l"), point("thigh_r")
        if tl is not None and tr is not None:
            neck = 0.5 * (sl + sr)
            navel = neck + NAVEL_FRACTION * (0.5 * (tl + tr) - neck)
            torso = float(np.linalg.norm(navel - neck))
    return Calibration(
        hand_length=chain(["hand_r", "middle_01_r", "middle_02_r", "middle_03_r", "middle_tip_r"]),
        torso_length=torso,
        arm_length=chain(["upperarm_r", "lowerarm_r", "hand_r"]),
        shoulder_width=width,
    )


# -- retargeting -------------------------------------------------------------------------

@dataclass(frozen=True)
class RetargetResult:
    """:meth:`RetargetMap.apply` output: the avatar skeleton renamed to canonical names
    (unmapped avatar joints keep their own names: auxiliary joints, seed 001),
    ``avatar_names`` the original name per joint, and ``skipped`` the optional canonical
    bones the avatar lacks (reported, skipped — seed 001 "A missing bone is skipped")."""

    skeleton: Skeleton
    avatar_names: tuple[str, ...]
    skipped: tuple[str, ...]


@dataclass(frozen=True)
class RetargetMap:
    """Canonical ``helix-humanoid@1`` joint name -> an avatar's bone name.

    ``bones`` need not name every canonical joint; a canonical joint not named, or named
    but absent from the avatar, is skipped when optional and an error
    (``usage.bad_option``) when in :data:`REQUIRED_JOINTS`.
    """

    bones: Mapping[str, str]

    @classmethod
    def identity(cls) -> RetargetMap:
        """The map of an avatar that already uses canonical names."""
        return cls({n: n for n in CANONICAL_JOINTS + METACARPALS})

    def apply(self, avatar: Skeleton) -> RetargetResult:
        """Rename ``avatar``'s bones to canonical names (see class docstring)."""
        unknown = set(self.bones).difference(CANONICAL_JOINTS + METACARPALS)
        if unknown:
            raise UsageError("usage.unknown_id", f"not canonical joints: {sorted(unknown)}")
        present = set(avatar.names)
        to_canonical = {a: c for c, a in self.bones.items() if a in present}
        missing = [c for c in CANONICAL_JOINTS if c not in self.bones
                   or self.bones[c] not in present]
        required = sorted(REQUIRED_JOINTS.intersection(missing))
        if required:
            raise UsageError("usage.bad_option", f"avatar lacks required bones {required}")
        renamed = tuple(to_canonical.get(n, n) for n in avatar.names)
        clash = [n for n in renamed if renamed.count(n) > 1]
        if clash:
            raise UsageError("usage.bad_option", f"bone names collide after renaming: {clash}")
        skel = Skeleton(renamed, avatar.parents, avatar.offsets, avatar.rest_rotations,
                        avatar.sites)
        return RetargetResult(skel, avatar.names, tuple(missing))
