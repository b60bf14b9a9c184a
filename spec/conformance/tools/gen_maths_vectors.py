"""Independent expected values for palm/calibration/euler vectors (math module only, no codec imports).

Run: python spec/conformance/tools/gen_maths_vectors.py  (rewrites palm.json, calibration.json, euler.json)
"""

import json
import math
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent
def r9(x):
    return float(f"{x:.15g}")


def L(xs):
    return [r9(x) for x in xs]


H = math.sqrt(0.5)
C98 = 0.98


def recon(v, clamp=C98):
    n = math.sqrt(sum(x * x for x in v))
    lim = 1.0 if clamp is None else clamp
    ch = n > lim
    if ch:
        v = [x * lim / n for x in v]
    w = math.sqrt(max(0.0, 1 - sum(x * x for x in v)))
    return [w, *v], ch


R_RECON = (
    "§4.2: A consumer MUST reconstruct the scalar part from the unit-length constraint: w = sqrt(1 - |v|^2), w >= 0."
)
R_RESCALE = "§4.2: If the squared norm of the vector part exceeds 1, the consumer MUST rescale the vector part to length at most 1 before reconstructing (reported)."
R_CLAMP = "§4.2: ... and SHOULD clamp it slightly below 1 (0.98) to avoid the singularity near w = 0 (posewire clamps and reports)."
R_SIGN = "§4.2: Taking w >= 0 always also makes the representation unambiguous (q and -q are the same rotation)."
R_MIRROR = "§3.2/§4.2: The right hand mirrors across the sagittal plane: physical left quaternion = (w, x, -y, -z) of the stored (w, x, y, z); equal stored values = mirror-image hands."
R_IDENT = "§4.2: Identity (0,0,0) = palm to front (+z), fingers up (+y); right-hand thumb +x (character's left), left-hand thumb -x."
R_DEFAULT = "§4.2: Defaults encode 'hand hangs following the forearm, palm toward body' = 180 deg about (1,0,1)/sqrt2, clamped to |v| = 0.98."
R_ENC_CLAMP = "§4.2 producer: canonicalize w >= 0, then clamp |v| to 0.98 (reported)."

palm = []


def case(lst, id_, op, rule, inp, expect=None, error=None, tol=1e-9):
    c = {"id": id_, "op": op, "rule": rule, "input": inp}
    if rule == R_CLAMP:  # the consumer's 0.98 clamp is a SHOULD (§3.3): NON-STRICT if missing
        c["level"] = "SHOULD"
    if error:
        c["expect_error"] = error
    else:
        c["expect"] = expect
        c["tolerance"] = tol
    lst.append(c)


for side in ("r", "l"):
    case(
        palm,
        f"decode-zero-{side}",
        "palm.decode",
        R_IDENT,
        {"v": [0, 0, 0], "side": side},
        {"q": [1.0, 0.0, 0.0, 0.0], "changed": False},
    )
case(
    palm,
    "directions-identity-r",
    "palm.directions",
    R_IDENT,
    {"q": [1, 0, 0, 0], "side": "r"},
    {"fingers": [0.0, 1.0, 0.0], "palm_normal": [0.0, 0.0, 1.0], "thumb": [1.0, 0.0, 0.0]},
)
case(
    palm,
    "directions-identity-l",
    "palm.directions",
    R_IDENT,
    {"q": [1, 0, 0, 0], "side": "l"},
    {"fingers": [0.0, 1.0, 0.0], "palm_normal": [0.0, 0.0, 1.0], "thumb": [-1.0, 0.0, 0.0]},
)
case(
    palm,
    "reconstruct-plain",
    "palm.reconstruct",
    R_RECON,
    {"v": [0.6, 0, 0]},
    {"q": [0.8, 0.6, 0.0, 0.0], "changed": False},
)
case(
    palm,
    "reconstruct-half",
    "palm.reconstruct",
    R_RECON,
    {"v": [0.5, 0.5, 0.5]},
    {"q": [0.5, 0.5, 0.5, 0.5], "changed": False},
)
q, ch = recon([3, 4, 0], None)
case(
    palm,
    "reconstruct-over-one-must-only",
    "palm.reconstruct",
    R_RESCALE,
    {"v": [3, 4, 0], "clamp": None},
    {"q": L(q), "changed": ch},
)
case(
    palm,
    "reconstruct-exactly-one-must-only",
    "palm.reconstruct",
    R_RESCALE,
    {"v": [0, 0, 1], "clamp": None},
    {"q": [0.0, 0.0, 0.0, 1.0], "changed": False},
)
q, ch = recon([3, 4, 0])
case(
    palm,
    "decode-over-one",
    "palm.decode",
    R_RESCALE + " " + R_CLAMP,
    {"v": [3, 4, 0], "side": "r"},
    {"q": L(q), "changed": ch},
)
q, ch = recon([0.99, 0, 0])
case(palm, "decode-near-w-zero", "palm.decode", R_CLAMP, {"v": [0.99, 0, 0], "side": "r"}, {"q": L(q), "changed": ch})
q, ch = recon([0.0, -0.6, 0.79])  # |v| = 0.99202
case(
    palm,
    "decode-near-w-zero-oblique",
    "palm.decode",
    R_CLAMP,
    {"v": [0.0, -0.6, 0.79], "side": "r"},
    {"q": L(q), "changed": ch},
)
d = 0.69296
q, ch = recon([d, 0, d])
case(
    palm,
    "decode-registry-default-r",
    "palm.decode",
    R_DEFAULT,
    {"v": [d, 0, d], "side": "r"},
    {"q": L(q), "changed": ch},
)
case(
    palm,
    "decode-registry-default-l",
    "palm.decode",
    R_DEFAULT + " " + R_MIRROR,
    {"v": [d, 0, d], "side": "l"},
    {"q": L([q[0], q[1], -q[2], -q[3]]), "changed": ch},
)
q, ch = recon([0.1, 0.2, 0.3])
case(
    palm,
    "decode-left-mirror",
    "palm.decode",
    R_MIRROR,
    {"v": [0.1, 0.2, 0.3], "side": "l"},
    {"q": L([q[0], 0.1, -0.2, -0.3]), "changed": False},
)
case(
    palm,
    "decode-right-same-values",
    "palm.decode",
    R_MIRROR,
    {"v": [0.1, 0.2, 0.3], "side": "r"},
    {"q": L(q), "changed": False},
)
case(
    palm,
    "encode-q",
    "palm.encode",
    R_SIGN,
    {"q": [-0.5, 0.5, -0.5, 0.5], "side": "r"},
    {"v": [-0.5, 0.5, -0.5], "clamped": False},
)
case(
    palm,
    "encode-minus-q",
    "palm.encode",
    R_SIGN,
    {"q": [0.5, -0.5, 0.5, -0.5], "side": "r"},
    {"v": [-0.5, 0.5, -0.5], "clamped": False},
)
case(
    palm,
    "encode-unnormalized",
    "palm.encode",
    R_SIGN,
    {"q": [2, 0, 0, 0], "side": "r"},
    {"v": [0.0, 0.0, 0.0], "clamped": False},
)
case(
    palm,
    "encode-w-zero-tie-q",
    "palm.encode",
    R_SIGN + " At w = 0 the first non-zero of (x, y, z) is made positive (§3.3).",
    {"q": [0, 0, -1, 0], "side": "r"},
    {"v": [0.0, 0.98, 0.0], "clamped": True},
)
case(
    palm,
    "encode-w-zero-tie-minus-q",
    "palm.encode",
    R_SIGN + " At w = 0 the first non-zero of (x, y, z) is made positive (§3.3).",
    {"q": [0, 0, 1, 0], "side": "r"},
    {"v": [0.0, 0.98, 0.0], "clamped": True},
)
case(
    palm,
    "encode-right",
    "palm.encode",
    R_MIRROR,
    {"q": [0.8, 0.36, 0.48, 0.0], "side": "r"},
    {"v": [0.36, 0.48, 0.0], "clamped": False},
)
case(
    palm,
    "encode-left-mirror-pose",
    "palm.encode",
    R_MIRROR,
    {"q": [0.8, 0.36, -0.48, 0.0], "side": "l"},
    {"v": [0.36, 0.48, 0.0], "clamped": False},
)
case(
    palm,
    "encode-left-minus-q",
    "palm.encode",
    R_MIRROR + " " + R_SIGN,
    {"q": [-0.8, -0.36, 0.48, 0.0], "side": "l"},
    {"v": [0.36, 0.48, 0.0], "clamped": False},
)
case(
    palm,
    "encode-default-half-turn",
    "palm.encode",
    R_DEFAULT + " " + R_ENC_CLAMP,
    {"q": [0, H, 0, H], "side": "r"},
    {"v": L([C98 * H, 0, C98 * H]), "clamped": True},
)
case(
    palm,
    "directions-half-turn-r",
    "palm.directions",
    R_DEFAULT,
    {"q": [0, H, 0, H], "side": "r"},
    {"fingers": [0.0, -1.0, 0.0], "palm_normal": [1.0, 0.0, 0.0], "thumb": [0.0, 0.0, 1.0]},
)
case(
    palm,
    "directions-half-turn-l",
    "palm.directions",
    R_DEFAULT + " " + R_MIRROR,
    {"q": [0, H, 0, -H], "side": "l"},
    {"fingers": [0.0, -1.0, 0.0], "palm_normal": [-1.0, 0.0, 0.0], "thumb": [0.0, 0.0, 1.0]},
)
# from directions: fingers +X, palm +Z -> rotation -90 deg about z: x-axis = Y x Z = (0,-1,0)
case(
    palm,
    "from-directions-right",
    "palm.from_directions",
    "§3.3: hand-local frame +Y fingers, +Z palm normal, +X = Y x Z.",
    {"fingers": [2, 0, 0], "palm_normal": [0.3, 0, 1], "side": "r"},
    {"q": L([H, 0, 0, -H])},
)
case(
    palm,
    "encode-zero-norm",
    "palm.encode",
    "§3.3: a zero-norm quaternion is a usage error.",
    {"q": [0, 0, 0, 0], "side": "r"},
    error="usage.zero_norm",
)
case(
    palm,
    "decode-bad-side",
    "palm.decode",
    "§3.2: side is 'l' or 'r'.",
    {"v": [0, 0, 0], "side": "left"},
    error="usage.bad_option",
)

# ---------------- calibration ----------------
RA = (0.9474, 0.36, 0.3214)
R_UNIT = "§4.1: For each axis the physical unit is L = 2 · r · d (d = calibrated reference distance, r = reference-avatar ratio)."
R_FALLBACK = "§4.1: A consumer lacking a valid reference measurement SHOULD use its legacy shoulder-width unit for that axis and report the missing calibration."
R_ARM = "§4.1/§3.2: p = (-n_x, n_y, n_z) · 2.5 · L for the right arm (lateral = -X), (+n_x, n_y, n_z) · 2.5 · L for the left."
R_MEAS = "§4.1: Distances MUST be measured between calibrated Body sites in fixed reference poses: d_x wrist_r -> middle_tip_r, d_y neck -> navel, d_z shoulder_r -> wrist_r."
cal = []
ref = {"hand_length": 0.19, "torso_length": 0.5, "arm_length": 0.56, "shoulder_width": 0.36}
Lref = [2 * RA[0] * 0.19, 2 * RA[1] * 0.5, 2 * RA[2] * 0.56]
case(cal, "units-reference-avatar", "calibration.units", R_UNIT, ref, {"L": L(Lref), "fallback_axes": []})
w = {"hand_length": 0.2, "torso_length": 0.45, "arm_length": 0.6, "shoulder_width": 0.4}
Lw = [2 * RA[0] * 0.2, 2 * RA[1] * 0.45, 2 * RA[2] * 0.6]
case(cal, "units-worked", "calibration.units", R_UNIT, w, {"L": L(Lw), "fallback_axes": []})
case(
    cal,
    "units-fallback-x-z",
    "calibration.units",
    R_FALLBACK,
    {"hand_length": None, "torso_length": 0.5, "arm_length": -0.1, "shoulder_width": 0.4},
    {"L": L([0.4, 0.36, 0.4]), "fallback_axes": ["x", "z"]},
)
case(
    cal,
    "units-fallback-all",
    "calibration.units",
    R_FALLBACK,
    {"hand_length": None, "torso_length": None, "arm_length": None, "shoulder_width": 0.36},
    {"L": [0.36, 0.36, 0.36], "fallback_axes": ["x", "y", "z"]},
)
case(
    cal,
    "units-fallback-zero-distance",
    "calibration.units",
    R_FALLBACK,
    {"hand_length": 0.19, "torso_length": 0.0, "arm_length": 0.56, "shoulder_width": 0.5},
    {"L": L([Lref[0], 0.5, Lref[2]]), "fallback_axes": ["y"]},
)
case(
    cal,
    "units-no-fallback-available",
    "calibration.units",
    R_FALLBACK + " Without a valid shoulder width either, the calibration is unusable.",
    {"hand_length": 0.19, "torso_length": None, "arm_length": 0.56, "shoulder_width": None},
    error="usage.calibration",
)
case(
    cal,
    "units-complete-without-shoulder-width",
    "calibration.units",
    R_UNIT,
    {"hand_length": 0.19, "torso_length": 0.5, "arm_length": 0.56, "shoulder_width": None},
    {"L": L(Lref), "fallback_axes": []},
)
n = [0.2, -0.6222, 0.0]
case(
    cal,
    "arm-default-right",
    "arm.to_physical",
    R_ARM,
    {"n": n, "side": "r", "calibration": ref},
    {"p": L([-n[0] * 2.5 * Lref[0], n[1] * 2.5 * Lref[1], 0.0])},
)
case(
    cal,
    "arm-default-left",
    "arm.to_physical",
    R_ARM,
    {"n": n, "side": "l", "calibration": ref},
    {"p": L([n[0] * 2.5 * Lref[0], n[1] * 2.5 * Lref[1], 0.0])},
)
n = [1.0, 1.0, 1.0]
case(
    cal,
    "arm-extremes-worked-right",
    "arm.to_physical",
    R_ARM,
    {"n": n, "side": "r", "calibration": w},
    {"p": L([-2.5 * Lw[0], 2.5 * Lw[1], 2.5 * Lw[2]])},
)
case(
    cal,
    "arm-fallback-left",
    "arm.to_physical",
    R_ARM + " " + R_FALLBACK,
    {"n": [-0.4, 0.5, 0.8], "side": "l", "calibration": {"shoulder_width": 0.4}},
    {"p": L([-0.4 * 2.5 * 0.4, 0.5 * 2.5 * 0.4, 0.8 * 2.5 * 0.4])},
)
case(
    cal,
    "arm-inverse-right",
    "arm.to_normalized",
    R_ARM,
    {"p": [-0.18, 0.3, 0.45], "side": "r", "calibration": ref},
    {"n": L([0.18 / (2.5 * Lref[0]), 0.3 / (2.5 * Lref[1]), 0.45 / (2.5 * Lref[2])])},
)
case(
    cal,
    "arm-bad-side",
    "arm.to_physical",
    "§3.2: side is 'l' or 'r'.",
    {"n": [0, 0, 0], "side": "x", "calibration": ref},
    error="usage.bad_option",
)
neck = [0.0, 1.45, 0.0]
sites = {
    "shoulder_l": [0.18, 1.45, 0.0],
    "shoulder_r": [-0.18, 1.45, 0.0],
    "hip_mid": [0.0, 0.825, 0.0],
    "wrist_r": [-0.18, 1.45, 0.56],
    "middle_tip_r": [-0.18, 1.45, 0.75],
}
case(
    cal,
    "measure-reference-sites",
    "calibration.measure",
    R_MEAS + " neck = shoulder midpoint; navel = neck + 0.8 · (hip_mid - neck) (§2).",
    {"sites": sites},
    {"hand_length": 0.19, "torso_length": 0.5, "arm_length": 0.56, "shoulder_width": 0.36},
)
case(
    cal,
    "measure-missing-sites",
    "calibration.measure",
    R_MEAS + " " + R_FALLBACK,
    {"sites": {"neck": [0, 0, 0], "navel": [0, -0.3, -0.4]}},
    {"hand_length": None, "torso_length": 0.5, "arm_length": None, "shoulder_width": None},
)


# ---------------- euler ----------------
def eq(y, p, r):
    cy, sy = math.cos(math.radians(y) / 2), math.sin(math.radians(y) / 2)
    cp, sp = math.cos(math.radians(p) / 2), math.sin(math.radians(p) / 2)
    cr, sr = math.cos(math.radians(r) / 2), math.sin(math.radians(r) / 2)
    q = [
        cy * cp * cr + sy * sp * sr,
        cy * sp * cr + sy * cp * sr,
        sy * cp * cr - cy * sp * sr,
        cy * cp * sr - sy * sp * cr,
    ]
    return [-x for x in q] if q[0] < 0 else q


R_ORDER = "§4.4: q = q_Y(yaw) · q_X(pitch) · q_Z(roll) (intrinsic Y-X'-Z'', body frame, degrees, right-hand rule); yaw+ turns the face toward +X, pitch+ = chin down, roll+ tilts toward -X; returned with w >= 0."
R_INV = "§4.4: inverse = YXZ decomposition; pitch in [-90, 90], yaw and roll in (-180, 180]."
R_GIMBAL = "§4.4: gimbal at |pitch| = 90: roll = 0, yaw carries the combined angle."
R_HEAD = "§4.4: stored normalized n; angle = n · max (h_yaw 90, h_pitch 60, h_roll 45 deg)."
R_HEAD_CLAMP = R_HEAD + " Decoded angles beyond the maxima are clamped to |n| = 1 and reported."
R_BODY = "§4.5: body angle = n · max (b_yaw 45, b_pitch 30, b_roll 30 deg)."
R_SPINE = (
    "§4.5: joint j gets the fractional power Q^s_j of the full body rotation Q (same axis, angle × share_j; "
    "spine_01 .10, 02 .15, 03 .25, 04 .25, 05 .25); the chain product equals Q exactly."
)


def qpow(q, s):
    """Q^s for a unit quaternion with w >= 0 (same axis, angle * s)."""
    w, x, y, z = q
    n = math.sqrt(x * x + y * y + z * z)
    if n == 0.0:
        return [1.0, 0.0, 0.0, 0.0]
    half = math.atan2(n, w) * s
    return [math.cos(half), *(c / n * math.sin(half) for c in (x, y, z))]


R_SPINE_MISSING = R_SPINE + " Missing joints: shares renormalized over the present ones."
eul = []
ET = 1e-7
for y, p, r in [(90, 0, 0), (0, 30, 0), (0, 0, -45), (90, 90, 0), (30, 20, 10), (-120, -45, 170), (179, 60, -100)]:
    case(
        eul, f"to-quat-{y}-{p}-{r}", "euler.to_quat", R_ORDER, {"yaw": y, "pitch": p, "roll": r}, {"q": L(eq(y, p, r))}
    )
for y, p, r in [(30, 20, 10), (-120, -45, 170), (179, 60, -100), (0, -89, 0)]:
    case(
        eul,
        f"from-quat-{y}-{p}-{r}",
        "euler.from_quat",
        R_INV,
        {"q": L(eq(y, p, r))},
        {"yaw": y, "pitch": p, "roll": r},
        tol=ET,
    )
q = eq(30, 20, 10)
case(
    eul,
    "from-quat-minus-q",
    "euler.from_quat",
    R_INV + " q and -q give the same angles.",
    {"q": L([-x for x in q])},
    {"yaw": 30, "pitch": 20, "roll": 10},
    tol=ET,
)
case(
    eul,
    "from-quat-gimbal-plus",
    "euler.from_quat",
    R_GIMBAL,
    {"q": L(eq(30, 90, 20))},
    {"yaw": 10, "pitch": 90, "roll": 0},
    tol=ET,
)
case(
    eul,
    "from-quat-gimbal-minus",
    "euler.from_quat",
    R_GIMBAL,
    {"q": L(eq(30, -90, 20))},
    {"yaw": 50, "pitch": -90, "roll": 0},
    tol=ET,
)
case(eul, "head-to-quat", "head.to_quat", R_HEAD, {"n": [0.5, -0.5, 0.5]}, {"q": L(eq(45, -30, 22.5))})
case(eul, "head-to-quat-extremes", "head.to_quat", R_HEAD, {"n": [1, 1, -1]}, {"q": L(eq(90, 60, -45))})
case(
    eul,
    "head-from-quat",
    "head.from_quat",
    R_HEAD,
    {"q": L(eq(-45, 30, 9))},
    {"n": [-0.5, 0.5, 0.2], "clamped": False},
    tol=ET,
)
case(
    eul,
    "head-from-quat-clamped",
    "head.from_quat",
    R_HEAD_CLAMP,
    {"q": L(eq(120, 0, 0))},
    {"n": [1.0, 0.0, 0.0], "clamped": True},
    tol=ET,
)
case(
    eul,
    "head-out-of-range",
    "head.to_quat",
    R_HEAD + " Stored n lies in [-1, 1].",
    {"n": [1.5, 0, 0]},
    error="usage.out_of_range",
)
case(eul, "body-to-quat", "body.to_quat", R_BODY, {"n": [1, -0.5, 0.5]}, {"q": L(eq(45, -15, 15))})
shares = {"spine_01": 0.10, "spine_02": 0.15, "spine_03": 0.25, "spine_04": 0.25, "spine_05": 0.25}
case(
    eul,
    "spine-yaw-all-joints",
    "spine.rotations",
    R_SPINE,
    {"n": [1, 0, 0]},
    {"rotations": {j: L(eq(45 * s, 0, 0)) for j, s in shares.items()}},
)
nb = [0.2, 0.4, -0.6]
ang = [nb[0] * 45, nb[1] * 30, nb[2] * 30]
case(
    eul,
    "spine-general-all-joints",
    "spine.rotations",
    R_SPINE,
    {"n": nb},
    {"rotations": {j: L(qpow(eq(*ang), s)) for j, s in shares.items()}},
)
present = ["spine_01", "spine_03", "spine_05"]
tot = sum(shares[j] for j in present)
case(
    eul,
    "spine-missing-joints",
    "spine.rotations",
    R_SPINE_MISSING,
    {"n": nb, "joints": present},
    {"rotations": {j: L(qpow(eq(*ang), shares[j] / tot)) for j in present}},
)
case(
    eul,
    "spine-single-joint",
    "spine.rotations",
    R_SPINE_MISSING,
    {"n": nb, "joints": ["spine_03"]},
    {"rotations": {"spine_03": L(eq(*ang))}},
)
case(
    eul,
    "spine-unknown-joint",
    "spine.rotations",
    R_SPINE_MISSING,
    {"n": nb, "joints": ["spine_06"]},
    error="usage.bad_option",
)

for name, section, title, cases in [
    ("palm.json", "§4.2", "Palm quaternion: reconstruction, clamping, sign, mirroring", palm),
    ("calibration.json", "§4.1", "Arm units, calibration fallback and arm positions", cal),
    ("euler.json", "§4.4–4.5", "Head/body Euler angles and the spine split", eul),
]:
    (OUT / name).write_text(
        json.dumps({"section": section, "title": title, "cases": cases}, indent=1, ensure_ascii=False) + "\n"
    )
    print(name, len(cases))
