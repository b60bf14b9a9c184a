"""Vectors for the rules of §5.2–5.8 edges and the one input rule of §6.5.

Expected bytes are built here with the plain ``msgpack`` library (never with posewire's
codec); expected results and codes are written out by hand from the spec text.

Run: python spec/conformance/tools/gen_rule_vectors.py  (rewrites wire-rules.json, inputs.json)
"""

import json
import math
from pathlib import Path

import msgpack

OUT = Path(__file__).resolve().parent.parent
#: the per-axis ratios r of the reference avatar (spec §4.1, schemas/registry.json)
R = json.loads((OUT.parent.parent / "schemas" / "registry.json").read_text())["reference_avatar"]["r"]
H8 = bytes.fromhex("0123456789abcdef")


def hx(obj):
    return msgpack.packb(obj, use_bin_type=True).hex()


def case(lst, id_, op, rule, inp, expect=None, error=None):
    c = {"id": id_, "op": op, "rule": rule, "input": inp}
    if error:
        c["expect_error"] = error
    else:
        c["expect"] = expect
        c["tolerance"] = 1e-12
    lst.append(c)


def hello(**over):
    msg = {"t": "hello", "pv": 1, "ro": "producer", "s": "demo", "rv": "1.0.0", "rh": H8,
           "cn": ""}
    msg.update(over)
    return msg


wire = []
R_KEYS = "§5.2 every map key, at any depth (unknown keys too), is a str: a bin key is decode.malformed, path $"
case(wire, "decode-bin-key-top", "wire.decode", R_KEYS, {"hex": hx({b"t": "bye"})},
     error="decode.malformed")
case(wire, "decode-bin-key-unknown", "wire.decode", R_KEYS,
     {"hex": hx({"t": "bye", "why": "", b"zz": 1})}, error="decode.malformed")
case(wire, "decode-bin-key-condition", "wire.decode", R_KEYS,
     {"hex": hx({"t": "cond", "ts": 0, "c": {"tracking": {b"hand_l": "lost"}}})},
     error="decode.malformed")
case(wire, "decode-bin-key-deep", "wire.decode", R_KEYS,
     {"hex": hx({"t": "cond", "ts": 0, "c": {"x": {"y": {b"z": 1}}}})},
     error="decode.malformed")
case(wire, "decode-int-key", "wire.decode", R_KEYS,
     {"hex": hx({"t": "bye", "why": "", "zz": {1: 2}})}, error="decode.malformed")

R_PV = "§5.3 pv is an integer (else decode.type); every integer but 1, however large or negative, is decode.version"
for name, pv in (("300", 300), ("negative", -1), ("u64-max", 2**64 - 1), ("zero", 0)):
    case(wire, f"decode-pv-{name}", "wire.decode", R_PV, {"hex": hx(hello(pv=pv))},
         error="decode.version")
case(wire, "decode-pv-float", "wire.decode", R_PV, {"hex": hx(hello(pv=1.0))},
     error="decode.type")
case(wire, "decode-pv-bool", "wire.decode", R_PV, {"hex": hx(hello(pv=True))},
     error="decode.type")
case(wire, "decode-welcome-pv-2", "wire.decode", R_PV,
     {"hex": hx({"t": "welcome", "pv": 2, "sid": "s", "rv": "1.0.0", "rh": H8, "mb": 4096,
                 "mf": 120})}, error="decode.version")

R_ROLE = "§5.2/§6.5 an unknown enumeration value (role, condition part, state, hand, site, label, mode) is decode.unknown_id"
case(wire, "decode-role-unknown", "wire.decode", R_ROLE, {"hex": hx(hello(ro="viewer"))},
     error="decode.unknown_id")
case(wire, "decode-affect-mode-unknown", "wire.decode", R_ROLE,
     {"hex": hx({"t": "cond", "ts": 0, "c": {"affect": {"label": "happy", "intensity": 0.5,
                                                         "mode": "mul"}}})},
     error="decode.unknown_id")

R_NIL = "§5.5 a condition channel whose value is nil is inactive, exactly as if it were left out"
for ch in ("mouthing", "tracking", "contact", "affect"):
    case(wire, f"decode-nil-{ch}", "wire.decode", R_NIL,
         {"hex": hx({"t": "cond", "ts": 3, "c": {ch: None}})},
         {"type": "cond", "timestamp_us": 3, "conditions": {}})
case(wire, "decode-nil-channel-beside-others", "wire.decode", R_NIL,
     {"hex": hx({"t": "cond", "ts": 3, "c": {"tracking": None,
                                              "contact": {"hand_r": "chin"}}})},
     {"type": "cond", "timestamp_us": 3, "conditions": {"contact": {"hand_r": "chin"}}})
R_CNIL = "§5.5 the c of a cond message is a required map: nil is decode.type (a frame's c may be nil = absent)"
case(wire, "decode-cond-c-nil", "wire.decode", R_CNIL,
     {"hex": hx({"t": "cond", "ts": 3, "c": None})}, error="decode.type")
case(wire, "decode-frame-c-nil", "wire.decode", R_CNIL,
     {"hex": hx({"t": "f", "s": 1, "ts": 2, "m": b"", "v": b"", "c": None})},
     {"type": "f", "seq": 1, "timestamp_us": 2, "values": {}, "unknown_dims": 0})
R_FNULL = ("§5.5, §6.5 a frame's conditions: null in the JSON form is the same as conditions left out: "
           "no c is written (in a cond message conditions is required and null is usage.bad_option)")
case(wire, "encode-frame-conditions-null", "wire.encode", R_FNULL,
     {"message": {"type": "f", "seq": 1, "timestamp_us": 2, "values": {}, "conditions": None}},
     {"hex": hx({"t": "f", "s": 1, "ts": 2, "m": b"", "v": b""})})
case(wire, "encode-cond-conditions-null", "wire.encode", R_FNULL,
     {"message": {"type": "cond", "timestamp_us": 2, "conditions": None}}, error="usage.bad_option")
R_EMPTY = ("§3.4, §5.5 an empty tracking or contact map is the channel left out (every part tracked, no "
           "contact): accepted, left out of the JSON form, never written by the canonical encoder")
case(wire, "decode-empty-channel-maps", "wire.decode", R_EMPTY,
     {"hex": hx({"t": "cond", "ts": 3, "c": {"tracking": {}, "contact": {}}})},
     {"type": "cond", "timestamp_us": 3, "conditions": {}})
case(wire, "encode-empty-channel-maps", "wire.encode", R_EMPTY,
     {"message": {"type": "cond", "timestamp_us": 3, "conditions": {"tracking": {}, "contact": {}}}},
     {"hex": hx({"t": "cond", "ts": 3, "c": {}})})
case(wire, "encode-frame-empty-channel-map", "wire.encode", R_EMPTY,
     {"message": {"type": "f", "seq": 1, "timestamp_us": 2, "values": {}, "conditions": {"contact": {}}}},
     {"hex": hx({"t": "f", "s": 1, "ts": 2, "m": b"", "v": b"", "c": {}})})

R_ERR = "§5.8 err: n and co are required; pa and msg are optional on decode (default \"\"), an encoder always writes them"
case(wire, "decode-err-minimal", "wire.decode", R_ERR,
     {"hex": hx({"t": "err", "n": 2001, "co": "decode.malformed"})},
     {"type": "err", "number": 2001, "code": "decode.malformed", "path": "", "message": ""})
case(wire, "decode-err-no-code", "wire.decode", R_ERR, {"hex": hx({"t": "err", "n": 2001})},
     error="decode.missing_field")
case(wire, "decode-err-pa-nil", "wire.decode", R_ERR + "; nil is not allowed",
     {"hex": hx({"t": "err", "n": 2001, "co": "x", "pa": None})}, error="decode.type")
case(wire, "encode-err-minimal", "wire.encode", R_ERR,
     {"message": {"type": "err", "number": 2001, "code": "decode.malformed"}},
     {"hex": hx({"t": "err", "n": 2001, "co": "decode.malformed", "pa": "", "msg": ""})})

R_ENC = "§6.5 wire.encode: "
j_hello = {"type": "hello", "role": "producer", "stream": "demo", "registry_version": "1.0.0",
           "registry_hash": "0123456789abcdef"}
case(wire, "encode-pv-2", "wire.encode", R_ENC + "an encoder writes pv = 1 only (usage.bad_option)",
     {"message": {**j_hello, "protocol": 2}}, error="usage.bad_option")
case(wire, "encode-welcome-pv-0", "wire.encode",
     R_ENC + "an encoder writes pv = 1 only (usage.bad_option)",
     {"message": {"type": "welcome", "session": "s", "protocol": 0}}, error="usage.bad_option")
case(wire, "encode-pv-default", "wire.encode", R_ENC + "protocol left out is 1",
     {"message": j_hello}, {"hex": hx(hello())})
case(wire, "encode-role-unknown", "wire.encode",
     R_ENC + "one code for an unknown enumeration value: usage.unknown_id",
     {"message": {**j_hello, "role": "viewer"}}, error="usage.unknown_id")
case(wire, "encode-type-unknown", "wire.encode",
     R_ENC + "one code for an unknown enumeration value: usage.unknown_id",
     {"message": {"type": "frame"}}, error="usage.unknown_id")
case(wire, "encode-affect-mode-unknown", "wire.encode",
     R_ENC + "one code for an unknown enumeration value: usage.unknown_id",
     {"message": {"type": "cond", "conditions": {"affect": {"label": "happy",
                                                             "intensity": 0.5,
                                                             "mode": "mul"}}}},
     error="usage.unknown_id")
case(wire, "encode-frame-values-missing", "wire.encode",
     R_ENC + "a frame needs values (an empty frame is values: {}); a missing key is usage.bad_option",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1}}, error="usage.bad_option")
case(wire, "encode-frame-values-empty", "wire.encode",
     R_ENC + "values {} is a frame with nothing present (empty mask)",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1, "values": {}}},
     {"hex": hx({"t": "f", "s": 1, "ts": 1, "m": b"", "v": b""})})
case(wire, "encode-value-string", "wire.encode",
     R_ENC + "a value of the wrong JSON type is usage.bad_option",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1, "values": {"h_yaw": "0.5"}}},
     error="usage.bad_option")
case(wire, "encode-value-bool", "wire.encode",
     R_ENC + "a boolean is never a number: usage.bad_option",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1, "values": {"m_jaw": True}}},
     error="usage.bad_option")
case(wire, "encode-seq-bool", "wire.encode",
     R_ENC + "a boolean is never an integer: usage.bad_option",
     {"message": {"type": "f", "seq": True, "timestamp_us": 1, "values": {}}},
     error="usage.bad_option")
case(wire, "encode-unknown-key", "wire.encode", R_ENC + "an unknown key is usage.bad_option",
     {"message": {"type": "bye", "reason": "", "why": "x"}}, error="usage.bad_option")
case(wire, "encode-stream-number", "wire.encode",
     R_ENC + "a value of the wrong JSON type is usage.bad_option",
     {"message": {**j_hello, "stream": 5}}, error="usage.bad_option")
for name, h in (("uppercase", "0123456789ABCDEF"), ("short", "0123"), ("not-hex", "zz" * 8)):
    case(wire, f"encode-hash-{name}", "wire.encode",
         R_ENC + "registry_hash is 16 lowercase hex digits, else usage.out_of_range",
         {"message": {**j_hello, "registry_hash": h}}, error="usage.out_of_range")
for name, h in (("uppercase", "82A174A3627965A3776879A0"), ("odd", "82a"), ("not-hex", "zz")):
    case(wire, f"decode-hex-{name}", "wire.decode",
         "§6.5 byte strings in JSON are lowercase hex, two digits a byte, else usage.out_of_range",
         {"hex": h}, error="usage.out_of_range")

R_PALM = ("§5.4 palm rule: a palm vector part (w_qx, w_qy, w_qz of one side) with |v| <= 0.98 "
          "keeps |q/32767| <= 0.98: where rounding to nearest would exceed 0.98, the three are "
          "rounded toward zero")
S16 = 32767
case(wire, "quantize-palm-axis-0.98", "wire.quantize", R_PALM + " (0.98·32767 = 32111.66 -> 32111, not 32112 = 0.980010)",
     {"values": {"w_qx_r": 0.98, "w_qy_r": 0.0, "w_qz_r": 0.0}},
     {"q": {"w_qx_r": 32111, "w_qy_r": 0, "w_qz_r": 0}})
case(wire, "quantize-palm-inside-rounds-to-nearest", "wire.quantize",
     R_PALM + "; a vector that stays inside is rounded to nearest as every dim",
     {"values": {"w_qx_l": 0.6, "w_qy_l": 0.0, "w_qz_l": 0.7}},
     {"q": {"w_qx_l": round(0.6 * S16), "w_qy_l": 0, "w_qz_l": round(0.7 * S16)}})
case(wire, "quantize-palm-single-dim", "wire.quantize",
     R_PALM + "; the rule applies to a whole triple only: one dim alone rounds to nearest",
     {"values": {"w_qx_r": 0.98}}, {"q": {"w_qx_r": 32112}})
# a palm clamped to 0.98 by scaling: its squared length is 0.9604 > 0.98² by one ulp, its
# length sqrt(a·a + b·b + c·c) is 0.98: the rule applies (30464, 10155 would be 0.980012)
_clamped = [t / math.sqrt(0.75 * 0.75 + 0.25 * 0.25) * 0.98 for t in (0.0, 0.75, 0.25)]
assert math.sqrt(_clamped[0] ** 2 + _clamped[1] ** 2 + _clamped[2] ** 2) <= 0.98
case(wire, "quantize-palm-clamped-0.98", "wire.quantize",
     R_PALM + "; |v| = sqrt(a·a + b·b + c·c) in binary64, in that order (a vector scaled to 0.98)",
     {"values": {"w_qx_l": _clamped[0], "w_qy_l": _clamped[1], "w_qz_l": _clamped[2]}},
     {"q": {"w_qx_l": 0, "w_qy_l": math.trunc(_clamped[1] * S16), "w_qz_l": math.trunc(_clamped[2] * S16)}})
case(wire, "encode-frame-palm-clamped-0.98", "wire.encode", R_PALM + " (frames too; dims 8, 10, 12)",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1,
                  "values": {"w_qx_l": _clamped[0], "w_qy_l": _clamped[1], "w_qz_l": _clamped[2]}}},
     {"hex": hx({"t": "f", "s": 1, "ts": 1, "m": bytes([0, 0b00010101]),
                 "v": b"\0\0" + math.trunc(_clamped[1] * S16).to_bytes(2, "big")
                 + math.trunc(_clamped[2] * S16).to_bytes(2, "big")})})
case(wire, "encode-frame-palm-axis-0.98", "wire.encode", R_PALM + " (frames too)",
     {"message": {"type": "f", "seq": 1, "timestamp_us": 1,
                  "values": {"w_qx_r": 0.98, "w_qy_r": 0.0, "w_qz_r": 0.0}}},
     {"hex": hx({"t": "f", "s": 1, "ts": 1, "m": bytes([0, 0b00101010]),
                 "v": (32111).to_bytes(2, "big") + b"\0\0" + b"\0\0"})})

inputs = []
R1 = ("§6.5 one rule: a missing required key, an unknown key, a value of the wrong JSON type "
      "(a boolean is never a number) or null where the row allows none is usage.bad_option")
THIRD0 = 0.98 / math.sqrt(3.0)
R_FIN = "§6.5 numbers are finite float64: an integer beyond float64 is usage.not_finite"
R_RANGE = "§6.5 a number outside the range stated for its key is usage.out_of_range"
for id_, op, inp in (
    ("validate-value-string", "vector.validate", {"values": {"h_yaw": "x"}}),
    ("validate-value-bool", "vector.validate", {"values": {"h_yaw": True}}),
    ("validate-values-missing", "vector.validate", {}),
    ("validate-values-array", "vector.validate", {"values": [0.5]}),
    ("validate-unknown-key", "vector.validate", {"values": {}, "polcy": "clamp"}),
    ("validate-policy-null", "vector.validate", {"values": {}, "policy": None}),
    ("euler-roll-missing", "euler.to_quat", {"yaw": 10, "pitch": 0}),
    ("euler-yaw-string", "euler.to_quat", {"yaw": "10", "pitch": 0, "roll": 0}),
    ("affect-intensity-string", "affect.apply",
     {"values": {}, "label": "happy", "intensity": "x", "mode": "add"}),
    ("affect-values-missing", "affect.apply", {"label": "happy", "intensity": 0.5, "mode": "add"}),
    ("arm-calibration-missing", "arm.to_physical", {"n": [0, 0, 0], "side": "r"}),
    ("arm-calibration-unknown-key", "arm.to_physical",
     {"n": [0, 0, 0], "side": "r", "calibration": {"shoulder_width": 0.4, "hand": 0.2}}),
    ("arm-calibration-string", "arm.to_physical",
     {"n": [0, 0, 0], "side": "r", "calibration": {"shoulder_width": "0.4"}}),
    ("mouthing-shares-missing", "mouthing.apply", {"values": {}}),
    ("mouthing-shares-string", "mouthing.apply", {"values": {}, "shares": "aa"}),
    ("palm-v-bool", "palm.decode", {"v": [0, 0, False], "side": "r"}),
    ("palm-side-number", "palm.decode", {"v": [0, 0, 0], "side": 1}),
    ("quat-not-array", "euler.from_quat", {"q": {"w": 1}}),
    ("wire-hex-number", "wire.decode", {"hex": 12}),
    ("wire-max-size-float", "wire.decode", {"hex": "c0", "max_size": 10.5}),
    ("spine-joints-number", "spine.rotations", {"n": [0, 0, 0], "joints": [1]}),
    ("registry-id-missing", "registry.row", {}),
):
    case(inputs, id_, op, R1, inp, error="usage.bad_option")
case(inputs, "euler-yaw-huge", "euler.to_quat", R_FIN,
     {"yaw": 10**400, "pitch": 0, "roll": 0}, error="usage.not_finite")
for id_, op, inp in (
    ("mirror-mouthing-integer-huge", "conditions.mirror", {"conditions": {"mouthing": [10**400] + [0] * 14}}),
    ("encode-cal-integer-huge", "wire.encode", {"message": {"t": "cal", "hand_length": 10**400}}),
):
    case(inputs, id_, op, R_FIN + ", at any depth of the input (inside maps and arrays too)", inp,
         error="usage.not_finite")
R_BIG = ("§1.5 lengths of finite vectors never overflow: outside [2^-500, 2^500] a vector is scaled by an "
         "exact power of two before its squares are summed")
case(inputs, "palm-encode-huge-finite", "palm.encode", R_BIG,
     {"q": [1e300, 1e300, 0, 0], "side": "r"}, {"v": [math.sqrt(0.5), 0.0, 0.0], "clamped": False})
case(inputs, "palm-encode-largest-finite", "palm.encode", R_BIG,
     {"q": [0, 1.7e308, 1.7e308, 1.7e308], "side": "r"}, {"v": [THIRD0, THIRD0, THIRD0], "clamped": True})
for id_, op, inp in (
    ("delta-authored-above", "mouthing.delta", {"authored": 1.5, "baseline": 0.0}),
    ("delta-baseline-below", "mouthing.delta", {"authored": 0.0, "baseline": -1.01}),
    ("affect-intensity-above", "affect.apply",
     {"values": {}, "label": "happy", "intensity": 1.5, "mode": "add"}),
    ("palm-clamp-above-one", "palm.reconstruct", {"v": [0, 0, 0], "clamp": 1.5}),
    ("wire-max-size-zero", "wire.decode", {"hex": "c0", "max_size": 0}),
):
    case(inputs, id_, op, R_RANGE + " (mouthing.delta a, b in [-1, 1]; affect intensity in "
         "[0, 1]; palm clamp in [0, 1]; max_size >= 1)", inp, error="usage.out_of_range")
case(inputs, "delta-at-bounds", "mouthing.delta", R_RANGE + "; the bounds themselves are in",
     {"authored": -1.0, "baseline": 1.0}, {"delta": -1.0, "effective": 0.0})
case(inputs, "mirror-unknown-expect-id", "vector.mirror",
     "§6.5 an unknown dim id, in values or expect_ids, is usage.unknown_id",
     {"values": {}, "expect_ids": ["h_yaww"]}, error="usage.unknown_id")
case(inputs, "measure-unknown-site", "calibration.measure",
     "§6.5 calibration.measure reads the sites shoulder_l, shoulder_r, neck, hip_mid, navel, "
     "wrist_r, middle_tip_r; any other name is usage.unknown_id",
     {"sites": {"elbow_r": [0, 0, 0]}}, error="usage.unknown_id")
case(inputs, "measure-site-short", "calibration.measure",
     "§6.5 a site is a 3-vector (usage.shape)",
     {"sites": {"wrist_r": [0, 0]}}, error="usage.shape")
R_DIST = ("§4.1 a calibration distance is valid in (0, 10] m (as on the wire, §5.6); "
          "an axis whose distance is outside falls back to S, reported")
case(inputs, "units-distance-above-10m", "calibration.units", R_DIST,
     {"hand_length": 11.0, "torso_length": 0.5, "arm_length": 0.6, "shoulder_width": 0.4},
     {"L": [0.4, 2 * R[1] * 0.5, 2 * R[2] * 0.6], "fallback_axes": ["x"]})

palm = []
R_HEMI = ("§3.3 hemisphere rule: when the canonical vector part is longer than 0.98 (the clamp band, "
          "w < 0.198997), its sign is chosen so that v·h >= 0, h = (1, 0, 1)/√2 (the default's axis); "
          "so the hanging default does not flip by 45.9° when w crosses 0")
H = [math.sqrt(0.5), 0.0, math.sqrt(0.5)]
DEF = [0.98 * math.sqrt(0.5), 0.0, 0.98 * math.sqrt(0.5)]
for name, w in (("plus", 1e-12), ("minus", -1e-12), ("w-0.1", 0.1), ("w-minus-0.1", -0.1)):
    s_ = math.sqrt(1 - w * w)
    case(palm, f"hemisphere-default-{name}", "palm.encode", R_HEMI,
         {"q": [w, s_ * H[0], 0.0, s_ * H[2]], "side": "r"}, {"v": DEF, "clamped": True})
case(palm, "hemisphere-negated-axis", "palm.encode", R_HEMI + " (the same rotation written about −h)",
     {"q": [0.1, -0.99498743710662 * H[0], 0.0, -0.99498743710662 * H[2]], "side": "r"},
     {"v": DEF, "clamped": True})
case(palm, "hemisphere-left-mirror", "palm.encode", R_HEMI + "; for the left hand after the §4.2 mirror",
     {"q": [-1e-12, H[0], 0.0, -H[2]], "side": "l"}, {"v": DEF, "clamped": True})
case(palm, "hemisphere-tie-on-boundary", "palm.encode",
     R_HEMI + "; on v·h = 0 the §3.3 tie rule decides",
     {"q": [0.0, 0.0, -1.0, 0.0], "side": "r"}, {"v": [0.0, 0.98, 0.0], "clamped": True})
R_TIE = (R_HEMI + "; v·h < 0 is decided as x + z < 0 in binary64 (§1.5): on x + z = 0 exactly "
         "nothing flips and the canonical form (w >= 0, then the tie rule) stands")
THIRD = 0.98 / math.sqrt(3.0)
for name, q, side, v in (
        ("hemisphere-plane-left-w-zero", [0.0, 0.1875, 0.1875, 0.1875], "l", [THIRD, -THIRD, -THIRD]),
        ("hemisphere-plane-left-w-zero-large", [0.0, 0.75, 0.75, 0.75], "l", [THIRD, -THIRD, -THIRD]),
        ("hemisphere-plane-right-w-zero", [0.0, 0.75, 0.75, -0.75], "r", [THIRD, THIRD, -THIRD]),
        ("hemisphere-plane-right-w-positive", [0.05, 0.6, 0.2, -0.6], "r",
         [0.98 * x / math.sqrt(0.76) for x in (0.6, 0.2, -0.6)])):
    case(palm, name, "palm.encode", R_TIE, {"q": q, "side": side}, {"v": v, "clamped": True})
case(palm, "hemisphere-outside-band-unchanged", "palm.encode",
     R_HEMI + "; outside the band (|v| <= 0.98) w >= 0 alone decides",
     {"q": [0.3, -0.6, 0.0, -math.sqrt(1 - 0.09 - 0.36)], "side": "r"},
     {"v": [-0.6, 0.0, -math.sqrt(1 - 0.09 - 0.36)], "clamped": False})


# -- one reading for every condition object (spec §3.4, the one place) ----------
AFF = {"label": "happy", "intensity": 0.5, "mode": "add"}
R_CH = "§3.4 an unknown condition channel is ignored, from a peer and a caller alike (§5.9 rule 4)"
case(wire, "decode-unknown-channel-ignored", "wire.decode", R_CH,
     {"hex": hx({"t": "cond", "ts": 3, "c": {"gesture": {"x": 1}, "contact": {"hand_r": "chin"}}})},
     {"type": "cond", "timestamp_us": 3, "conditions": {"contact": {"hand_r": "chin"}}})
case(inputs, "mirror-unknown-channel-dropped", "conditions.mirror", R_CH,
     {"conditions": {"gesture": "wave", "affect": AFF}}, {"conditions": {"affect": AFF}})
R_CNULL = "§3.4 a null channel is inactive, exactly as if left out, from a peer and a caller alike"
case(inputs, "mirror-null-channel", "conditions.mirror", R_CNULL,
     {"conditions": {"tracking": None, "mouthing": None, "contact": {"hand_r": "cheek_l"}}},
     {"conditions": {"contact": {"hand_l": "cheek_r"}}})
R_AX = ("§3.4 the affect map is a record of label, intensity, mode: another key is ignored "
        "(§5.9 rule 4); tracking and contact keys are enumeration values (unknown: unknown_id)")
case(wire, "decode-affect-extra-key", "wire.decode", R_AX,
     {"hex": hx({"t": "cond", "ts": 3, "c": {"affect": {**AFF, "speed": 2}}})},
     {"type": "cond", "timestamp_us": 3, "conditions": {"affect": AFF}})
case(inputs, "mirror-affect-extra-key", "conditions.mirror", R_AX,
     {"conditions": {"affect": {**AFF, "speed": 2}}}, {"conditions": {"affect": AFF}})
case(inputs, "mirror-tracking-unknown-part", "conditions.mirror", R_AX,
     {"conditions": {"tracking": {"tail": "lost"}}}, error="usage.unknown_id")
R_ORD = ("§3.4 order of checks: channels mouthing, tracking, contact, affect; mouthing: list, "
         "length, each share (type, finiteness, range), sum; map entries each completely (key "
         "known, value type, value known); affect: the three fields present, then label, "
         "intensity, mode")
BAD_MIX = [2] + [0] * 14
for id_, c, code in (
    ("channels", {"contact": {"hand_r": "elbow"}, "mouthing": BAD_MIX}, "out_of_range"),
    ("mouthing-length-first", {"mouthing": ["x", "y"]}, "out_of_range"),
    ("mouthing-share-complete", {"mouthing": [1.5, "x"] + [0] * 13}, "out_of_range"),
    ("entry-key-first", {"tracking": {"tail": 5}}, "unknown_id"),
    ("affect-fields-first", {"affect": {"label": "joy", "intensity": 0.5}}, "missing_field"),
    ("affect-label-before-intensity", {"affect": {"label": "joy", "intensity": 7, "mode": "add"}},
     "unknown_id"),
):
    case(wire, f"decode-cond-order-{id_}", "wire.decode", R_ORD,
         {"hex": hx({"t": "cond", "ts": 0, "c": c})}, error=f"decode.{code}")
    ucode = {"missing_field": "bad_option"}.get(code, code)
    case(inputs, f"mirror-order-{id_}", "conditions.mirror", R_ORD, {"conditions": c},
         error=f"usage.{ucode}")

# -- a number's JSON spelling never matters (spec §6.5 rule 1) --------------------
R_SPELL = ("§6.5 a number's JSON spelling never matters, only its value: 4096.0 is the integer "
           "4096, 1 is the real number 1.0 (msgpack types on the wire are another matter, §5.2)")
case(inputs, "spelling-integer-as-float", "wire.decode", R_SPELL,
     {"hex": hx({"t": "bye", "why": ""}), "max_size": 4096.0}, {"type": "bye", "reason": ""})
case(inputs, "spelling-fraction-not-integer", "wire.decode", R_SPELL,
     {"hex": hx({"t": "bye", "why": ""}), "max_size": 4096.5}, error="usage.bad_option")
case(wire, "encode-seq-spelled-float", "wire.encode", R_SPELL,
     {"message": {"type": "f", "seq": 7.0, "timestamp_us": 1e3, "values": {}}},
     {"hex": hx({"t": "f", "s": 7, "ts": 1000, "m": b"", "v": b""})})
case(wire, "encode-welcome-limits-spelled-float", "wire.encode", R_SPELL,
     {"message": {"type": "welcome", "session": "s", "registry_hash": "0123456789abcdef",
                  "protocol": 1.0, "max_message_bytes": 4096.0, "max_fps": 120.0}},
     {"hex": hx({"t": "welcome", "pv": 1, "sid": "s", "rv": "1.0.0", "rh": H8, "mb": 4096,
                 "mf": 120})})
case(wire, "encode-cal-spelled-integer", "wire.encode", R_SPELL + " (a real number is float 64 on the wire)",
     {"message": {"type": "cal", "hand_length": 1, "torso_length": None, "arm_length": None,
                  "shoulder_width": None}},
     {"hex": hx({"t": "cal", "hl": 1.0, "tl": None, "al": None, "sw": None})})

# -- which recomputed dims morph.arkit_to_dims lists (spec §4.6, §6.5) -----------
R_SOLVE = ("§4.6/§6.5 values lists a recomputed dim when n = p − m is not exactly 0; p and m at "
           "or below 1e-12 are 0 (the §4.6 rounding), so a weight of 1e-13 lists nothing and "
           "one of 2e-12 lists its dim")
case(inputs, "solve-below-rounding-lists-nothing", "morph.arkit_to_dims", R_SOLVE,
     {"weights": {"jawOpen": 1e-13}},
     {"values": {}, "clamped": [], "replaced": [], "dims_clipped": []})

# -- an all-zero mix is inactive (spec §3.4.1, glossary) --------------------------
R_ZERO = ("§3.4.1 a mix whose shares are all 0 is mouthing inactive, like an absent one: b = 0, "
          "so Δ = e = a and the mouth dims drive their ARKit channels directly (§4.6)")
case(inputs, "mouthing-all-zero-inactive", "mouthing.apply", R_ZERO,
     {"values": {"m_jaw": 0.4}, "shares": [0] * 15},
     {"baseline": {}, "delta": {"m_jaw": 0.4}, "effective": {"m_jaw": 0.4},
      "arkit": {"jawOpen": 0.4, "mouthLowerDownLeft": 0.3 * 0.4, "mouthLowerDownRight": 0.3 * 0.4,
                "mouthFunnel": 0.2 * 0.4}, "visemes": {}, "clipped": []})

# -- underflow and overflow (spec §1.5, §6.5 rules 4 and 5) ----------------------
R_TINY = ("§6.5 rule 4: a quaternion or direction the caller gives is zero only when every "
          "component is exactly 0; any other finite vector, however short, is normalized by its "
          "§1.5 length (scale-free)")
case(inputs, "tiny-palm-encode-subnormal", "palm.encode", R_TINY,
     {"q": [5e-324, 0, 0, 0], "side": "r"}, {"v": [0.0, 0.0, 0.0], "clamped": False})
case(inputs, "tiny-palm-encode-1e-300", "palm.encode", R_TINY + " (180° about x: the clamp band)",
     {"q": [0, 1e-300, 0, 0], "side": "r"}, {"v": [0.98, 0.0, 0.0], "clamped": True})
case(inputs, "tiny-euler-from-quat", "euler.from_quat", R_TINY,
     {"q": [1e-300, 0, 0, 0]}, {"yaw": 0.0, "pitch": 0.0, "roll": 0.0})
case(inputs, "tiny-palm-directions-subnormal", "palm.directions", R_TINY + " (180° about z)",
     {"q": [0, 0, 0, 5e-324], "side": "r"},
     {"fingers": [0.0, -1.0, 0.0], "palm_normal": [0.0, 0.0, 1.0], "thumb": [-1.0, 0.0, 0.0]})
case(inputs, "tiny-palm-from-directions", "palm.from_directions", R_TINY,
     {"fingers": [0, 1e-300, 0], "palm_normal": [0, 0, 5e-324], "side": "r"}, {"q": [1.0, 0.0, 0.0, 0.0]})
case(inputs, "tiny-frame-body", "frame.body", R_TINY + " (sites 2e-300 apart)",
     {"shoulder_l": [1e-300, 0, 0], "shoulder_r": [-1e-300, 0, 0], "hip_mid": [0, -1e-300, 0]},
     {"origin": [0.0, 0.0, 0.0], "x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0],
      "points": []})
case(inputs, "zero-exact-palm-encode", "palm.encode", R_TINY, {"q": [0, 0, 0, 0], "side": "r"},
     error="usage.zero_norm")
case(inputs, "zero-exact-frame-body", "frame.body", R_TINY + " (shoulder_l = shoulder_r exactly)",
     {"shoulder_l": [5e-324, 0, 0], "shoulder_r": [5e-324, 0, 0], "hip_mid": [0, -1, 0]},
     error="usage.zero_norm")
R_DERIVED = ("§6.5 rule 4: a direction an op derives from another (palm.from_directions' palm normal "
             "orthogonalized against the fingers, frame.body's up orthogonalized against the shoulder "
             "line) is degenerate, usage.zero_norm, when its length is at most 1e-12 times the length "
             "of the vector it came from (scale-free)")
case(inputs, "derived-parallel-huge", "palm.from_directions", R_DERIVED,
     {"fingers": [0, 1, 0], "palm_normal": [0, 1e300, 0], "side": "r"}, error="usage.zero_norm")
case(inputs, "derived-parallel-tiny", "frame.body", R_DERIVED,
     {"shoulder_l": [1e-300, 0, 0], "shoulder_r": [-1e-300, 0, 0], "hip_mid": [1e-300, 0, 0]},
     error="usage.zero_norm")
case(inputs, "derived-not-parallel-tiny", "palm.from_directions", R_DERIVED + " (tiny but not parallel)",
     {"fingers": [0, 1e-300, 0], "palm_normal": [0, 1e-300, 1e-300], "side": "r"},
     {"q": [1.0, 0.0, 0.0, 0.0]})
R_OVER = ("§6.5 rule 5: no op answers a number that is not finite; where finite inputs overflow "
          "binary64 in a step the spec does not scale (the formulas as written, left to right), "
          "the op fails with usage.out_of_range")
case(inputs, "overflow-arm-to-physical", "arm.to_physical", R_OVER + " (1e308 · 2.5 · 10 m)",
     {"n": [1e308, 0, 0], "side": "r", "calibration": {"shoulder_width": 10.0}},
     error="usage.out_of_range")
case(inputs, "overflow-frame-body", "frame.body", R_OVER + " (shoulder_l − shoulder_r = 2e308)",
     {"shoulder_l": [1e308, 0, 0], "shoulder_r": [-1e308, 0, 0], "hip_mid": [0, -1, 0]},
     error="usage.out_of_range")
case(inputs, "huge-finite-palm-directions", "palm.directions", R_BIG,
     {"q": [0, 0, 0, 1e300], "side": "r"},
     {"fingers": [0.0, -1.0, 0.0], "palm_normal": [0.0, 0.0, 1.0], "thumb": [-1.0, 0.0, 0.0]})

# -- palm.reconstruct clamp 0 (spec §6.5 rule 3: [0, 1]) ---------------------------
case(inputs, "palm-clamp-zero", "palm.reconstruct",
     R_RANGE + "; palm.reconstruct clamp is in [0, 1]: 0 clamps every v to 0 (reported)",
     {"v": [0.5, 0, 0], "clamp": 0}, {"q": [1.0, 0.0, 0.0, 0.0], "changed": True})

# -- mouthing.apply checks every dim and never clips silently (spec §3.5, §6.5) ----
R_MAPPLY = ("§6.5 mouthing.apply: values is a pose in bounds — every dim, face and others too "
            "(usage.out_of_range), checked before the shares; §3.5 a weight clipped to [0, 1] is "
            "reported in clipped (ARKit order), never silent")
case(inputs, "mouthing-face-dim-out-of-range", "mouthing.apply", R_MAPPLY,
     {"values": {"f_blink_l": 1.5}, "shares": {"aa": 0.5}}, error="usage.out_of_range")
case(inputs, "mouthing-other-dim-out-of-range", "mouthing.apply", R_MAPPLY,
     {"values": {"h_yaw": 7}, "shares": []}, error="usage.out_of_range")
case(inputs, "mouthing-values-before-shares", "mouthing.apply", R_MAPPLY,
     {"values": {"h_yaw": 7}, "shares": {"ah": 0.5}}, error="usage.out_of_range")
case(inputs, "mouthing-clip-reported", "mouthing.apply", R_MAPPLY + " (§4.6 worked: bared teeth "
     "plus m_lower_lip = 1 gives mouthLowerDown* = 1 + 0.3, clipped)",
     {"values": {"m_upper_lip": 1, "m_lower_lip": 1}, "shares": []},
     {"baseline": {}, "delta": {"m_upper_lip": 1.0, "m_lower_lip": 1.0},
      "effective": {"m_upper_lip": 1.0, "m_lower_lip": 1.0},
      "arkit": {"mouthUpperUpLeft": 1.0, "mouthUpperUpRight": 1.0, "mouthLowerDownLeft": 1.0,
                "mouthLowerDownRight": 1.0, "mouthStretchLeft": 0.3 + 0.2,
                "mouthStretchRight": 0.3 + 0.2},
      "visemes": {}, "clipped": ["mouthLowerDownLeft", "mouthLowerDownRight"]})

# -- the order of rules 1-4 (spec §6.5) --------------------------------------------
R_ORDER = ("§6.5 order: unknown keys, then the row's keys in the row's order, each completely "
           "(rule 1 type, rule 2 finite, rule 3 range), then rule 2 at any depth, then rule 4 (the "
           "op's own checks, in the order its row states)")
case(inputs, "order-rule-1-before-rule-4", "affect.apply", R_ORDER,
     {"values": {"nope": 0.1}, "label": "joy", "intensity": "x", "mode": "add"}, error="usage.bad_option")
case(inputs, "order-rule-3-before-rule-4", "affect.apply", R_ORDER,
     {"values": {"nope": 0.1}, "label": "joy", "intensity": 2, "mode": "add"}, error="usage.out_of_range")
case(inputs, "order-row-key-order", "euler.to_quat", R_ORDER + " (yaw before pitch)",
     {"pitch": "x", "yaw": 10**400, "roll": 0}, error="usage.not_finite")
case(inputs, "order-unknown-key-first", "euler.to_quat", R_ORDER,
     {"yaw": "x", "pitch": 0, "roll": 0, "tilt": 1}, error="usage.bad_option")
case(inputs, "order-rule-2-deep-before-rule-4", "wire.encode", R_ORDER,
     {"message": {"type": "nope", "x": 10**400}}, error="usage.not_finite")
case(inputs, "order-ids-before-bounds", "vector.validate", R_ORDER + "; values: every id known, then bounds",
     {"values": {"h_yaw": 7, "nope": 0}}, error="usage.unknown_id")

# -- wire.encode check order (spec §6.5), a case for each step that decides -------------------
R_WORD = ("§6.5 wire.encode order, each step over the whole message: type; keys and JSON types "
          "(table order); frame values finite; protocol 1; dim ids, role, conditions (§3.4); ranges")
FR = {"type": "f", "seq": 1, "timestamp_us": 1}
case(wire, "encode-order-type-before-unknown-dim", "wire.encode", R_WORD,
     {"message": {**FR, "seq": "x", "values": {"nope": 1}}}, error="usage.bad_option")
case(wire, "encode-order-value-type-before-unknown-dim", "wire.encode", R_WORD,
     {"message": {**FR, "values": {"nope": 1, "h_yaw": "x"}}}, error="usage.bad_option")
case(wire, "encode-order-protocol-before-role", "wire.encode", R_WORD,
     {"message": {**j_hello, "role": "viewer", "protocol": 2}}, error="usage.bad_option")
case(wire, "encode-order-role-before-hash-pattern", "wire.encode", R_WORD,
     {"message": {**j_hello, "role": "viewer", "registry_hash": "zz"}}, error="usage.unknown_id")
case(wire, "encode-order-unknown-dim-before-range", "wire.encode", R_WORD,
     {"message": {**FR, "values": {"h_yaw": 2, "nope": 1}}}, error="usage.unknown_id")
case(wire, "encode-order-conditions-before-range", "wire.encode", R_WORD,
     {"message": {**FR, "seq": -1, "values": {}, "conditions": {"tracking": {"tail": "lost"}}}},
     error="usage.unknown_id")
case(wire, "encode-order-not-finite-value-before-every-step", "wire.encode",
     "§6.5 wire.encode step 3 never decides: a frame value too large for binary64 is rule 2's usage.not_finite, "
     "met at any depth before step 1 (here before the mistyped seq of step 2)",
     {"message": {**FR, "seq": "x", "values": {"h_yaw": 10**400}}}, error="usage.not_finite")
# -- spec §6.5: found by running the generated boundary set through the JS kit -------------
R_SIGN = ("§4.7/§1.5 the direction of the delta law is decided on the signs of a and b, never on "
          "the rounded product a·b (0.5 · −5e−324 underflows to −0): opposite, Δ = a·|b| = 0")
case(inputs, "subnormal-delta-signs-not-product", "mouthing.delta", R_SIGN,
     {"authored": 0.5, "baseline": -5e-324}, {"delta": 0.0, "effective": -5e-324})
case(inputs, "subnormal-normalize-non-zero-after-division", "mouthing.normalize",
     "§6.5 non-zero only is judged on the normalized share: 5e−324 / 2 rounds to 0 and is left out",
     {"shares": [5e-324] + [0] * 9 + [1.0, 0, 0, 0, 1.0]},
     {"shares": {"aa": 0.5, "U": 0.5}, "normalized": True})
R_SUBUNIT = ("§1.5 a vector is normalized as its scaled self over its scaled length, so a subnormal "
             "vector gets a unit result (its length alone would round)")
case(inputs, "subnormal-frame-body-unit-axes", "frame.body", R_SUBUNIT,
     {"shoulder_l": [0, 0, 0], "shoulder_r": [5e-324, -5e-324, 0], "hip_mid": [0, -1, 0]},
     {"origin": [0.0, 0.0, 0.0], "x": [-math.sqrt(0.5), math.sqrt(0.5), 0.0],
      "y": [math.sqrt(0.5), math.sqrt(0.5), 0.0], "z": [0.0, 0.0, -1.0], "points": []})

# -- §1.5 "Clamps to a length", §3.3: the clamp arithmetic at tolerance 0 -----------------
# Palms in the band where the readings v·(0.98/|v|), (v·0.98)/|v| of the old text give
# different wire codes and the first measures 0.98 + 1 ulp; expected values follow the
# §3.3 pseudocode operation by operation.
T98 = 0.98 - 2.0**-49  # spec §1.5: T = 0.98 · (1 − 2⁻⁴⁹) rounded once, exactly 0.98 − 2⁻⁴⁹
assert T98 == 0.98 * (1.0 - 2.0**-49)


def norm3(v):
    return math.sqrt((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2])


def palm_encode_exact(q, side):
    if side == "l":
        q = [q[0], q[1], -q[2], -q[3]]
    n4 = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    u = [c / n4 for c in q]
    lead = next((c for c in u if c != 0.0), 0.0)
    if lead < 0.0:
        u = [-c for c in u]
    v = u[1:]
    n = norm3(v)
    if n > 0.98 and v[0] + v[2] < 0.0:
        v = [-c for c in v]
    if n > 0.98:
        s = T98 / n
        return [c * s for c in v], v, True
    return v, v, False


def quantize_palm(v):  # §5.4 with the palm rule
    q = [round(c * S16) for c in v]
    if norm3([c / S16 for c in q]) > 0.98 and norm3(v) <= 0.98:
        q = [math.trunc(c * S16) for c in v]
    return q


def palm_reconstruct_exact(v):  # §3.3 consumer with the SHOULD clamp
    n = norm3(v)
    changed = n > 0.98
    if changed:
        s = T98 / n
        v = [c * s for c in v]
    return [math.sqrt(max(0.0, 1.0 - ((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2]))), *v], changed


R_CLAMPX = ("§1.5 clamps to a length, §3.3: n = sqrt((x·x + y·y) + z·z); in the band s = T / n with "
            "T = 0.98 − 2⁻⁴⁹, then x·s, y·s, z·s; the clamped length is never above 0.98 (tolerance 0; "
            "v·0.98/|v| read two ways gives other codes here, and 0.98 + 1 ulp)")
MASK = {"l": bytes([0, 0b00010101]), "r": bytes([0, 0b00101010])}
for name, q, side in (("right", [0.055, 0.923, 0.078, 0.356], "r"),
                      ("right-hemisphere-flip", [0.131, 0.439, 0.461, -0.656], "r"),
                      ("right-flip-2", [0.028, 0.221, -0.172, -0.678], "r"),
                      ("left", [0.084, -0.414, 0.563, 0.654], "l")):
    v, unclamped, clamped = palm_encode_exact(q, side)
    n = norm3(unclamped)
    assert norm3([c * (0.98 / n) for c in unclamped]) > 0.98  # the old reading: 0.98 + 1 ulp
    assert clamped and norm3(v) <= 0.98
    case(palm, f"clamp-exact-encode-{name}", "palm.encode", R_CLAMPX, {"q": q, "side": side},
         {"v": v, "clamped": True})
    palm[-1]["tolerance"] = 0
    codes = quantize_palm(v)
    ids = [f"w_q{a}_{side}" for a in "xyz"]
    case(wire, f"clamp-exact-quantize-{name}", "wire.quantize", R_CLAMPX + "; then the §5.4 palm rule",
         {"values": dict(zip(ids, v, strict=True))}, {"q": dict(zip(ids, codes, strict=True))})
    wire[-1]["tolerance"] = 0
    case(wire, f"clamp-exact-frame-{name}", "wire.encode", R_CLAMPX + "; the frame's bytes",
         {"message": {"type": "f", "seq": 1, "timestamp_us": 1, "values": dict(zip(ids, v, strict=True))}},
         {"hex": hx({"t": "f", "s": 1, "ts": 1, "m": MASK[side],
                     "v": b"".join(c.to_bytes(2, "big", signed=True) for c in codes)})})
    # the consumer side: the codes an encoder that scaled to 0.98 itself sent (above 0.98)
    old_codes = [round(c * (0.98 / n) * S16) for c in unclamped]
    old_v = [c / S16 for c in old_codes]
    if norm3(old_v) > 0.98:
        qq, changed = palm_reconstruct_exact(old_v)
        case(palm, f"clamp-exact-decode-{name}", "palm.decode", R_CLAMPX + "; the consumer's clamp (SHOULD)",
             {"v": old_v, "side": "r"}, {"q": qq, "changed": changed})
        palm[-1]["tolerance"] = 0
        palm[-1]["level"] = "SHOULD"
    qq, changed = palm_reconstruct_exact(v)
    assert not changed  # a clamped value is not clamped again
    case(palm, f"clamp-exact-decode-idempotent-{name}", "palm.decode",
         R_CLAMPX + "; a value the producer clamped is at most 0.98: the consumer leaves it",
         {"v": v, "side": "r"}, {"q": qq, "changed": False})
    palm[-1]["tolerance"] = 0
qq, changed = palm_reconstruct_exact([0.8, 0.6, 0.6])
case(palm, "clamp-exact-decode-over-one", "palm.decode",
     R_CLAMPX + "; one scaling of the received v to T, never to 1 and then to 0.98",
     {"v": [0.8, 0.6, 0.6], "side": "r"}, {"q": qq, "changed": True})
palm[-1]["tolerance"] = 0
palm[-1]["level"] = "SHOULD"
case(palm, "clamp-exact-reconstruct-must-only", "palm.reconstruct",
     "§3.3 without the clamp, |v| > 1 is rescaled as §1.5's normalized vector v / |v| (tolerance 0)",
     {"v": [3, 4, 0], "clamp": None}, {"q": [0.0, 0.6, 0.8, 0.0], "changed": True})
palm[-1]["tolerance"] = 0
case(palm, "clamp-exact-encode-w-zero-tie", "palm.encode", R_CLAMPX + " (n = 1: v = (0, T, 0))",
     {"q": [0, 0, -1, 0], "side": "r"}, {"v": [0.0, T98, 0.0], "clamped": True})
palm[-1]["tolerance"] = 0

# -- §1.5 sums, §3.4.1: the mouthing sum runs left to right from +0.0 ----------------------
LIMIT = 1.0 + 1e-6


def left_to_right(xs):
    acc = 0.0
    for x in xs:
        acc = acc + x
    return acc


# found by search: ACCEPT sums to exactly 1 + 1e−6 left to right, 1.0000010000000001 exactly
# rounded (math.fsum) and pairwise (numpy); REJECT the other way round
ACCEPT = [0.03148127116523634, 0.08479803186320908, 0.09759350308755788, 0.03794328683033256, 0.02623445119942361, 0.0658759524056092, 0.07840664318284253, 0.11092949315935642, 0.023637464577369798, 0.030867590604442587, 0.03845400881716622, 0.04173643379535579, 0.04354087874295287, 0.0917243734537903, 0.1967776171153549]
REJECT = [0.09151579278581233, 0.03067436974828122, 0.0948964921384405, 0.11345623445013134, 0.026113949827937792, 0.052424686751829555, 0.07639773471684916, 0.10280593311588299, 0.04421260625001018, 0.03797724414316779, 0.04499660808901569, 0.08159809805461268, 0.0953543309439895, 0.05937299493916036, 0.04820392404487872]
assert left_to_right(ACCEPT) <= LIMIT < math.fsum(ACCEPT)
assert left_to_right(REJECT) > LIMIT >= math.fsum(REJECT)
R_SUM = ("§1.5, §3.4.1 the mouthing sum Σ s_v ≤ 1 + 1e−6 is the left-to-right sum from +0.0 "
         "(not an exactly rounded or pairwise sum, which fall on the other side here)")
case(inputs, "mouthing-sum-order-mirror-accepted", "conditions.mirror", R_SUM,
     {"conditions": {"mouthing": ACCEPT}}, {"conditions": {"mouthing": ACCEPT}})
inputs[-1]["tolerance"] = 0
case(inputs, "mouthing-sum-order-mirror-rejected", "conditions.mirror", R_SUM,
     {"conditions": {"mouthing": REJECT}}, error="usage.out_of_range")
case(inputs, "mouthing-sum-order-apply-rejected", "mouthing.apply", R_SUM,
     {"values": {}, "shares": REJECT}, error="usage.out_of_range")
total = left_to_right(ACCEPT)
VIS = ["sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "I", "O", "U"]
case(inputs, "mouthing-sum-order-normalize-divisor", "mouthing.normalize",
     R_SUM + "; the divisor is that sum too",
     {"shares": ACCEPT}, {"shares": {k: x / total for k, x in zip(VIS, ACCEPT, strict=True) if x / total != 0.0},
                          "normalized": total > 1.0})
inputs[-1]["tolerance"] = 0
case(wire, "mouthing-sum-order-decode-accepted", "wire.decode", R_SUM,
     {"hex": hx({"t": "cond", "ts": 5, "c": {"mouthing": ACCEPT}})},
     {"type": "cond", "timestamp_us": 5, "conditions": {"mouthing": ACCEPT}})
wire[-1]["tolerance"] = 0
case(wire, "mouthing-sum-order-decode-rejected", "wire.decode", R_SUM,
     {"hex": hx({"t": "cond", "ts": 5, "c": {"mouthing": REJECT}})}, error="decode.out_of_range")
case(wire, "mouthing-sum-order-encode-rejected", "wire.encode", R_SUM,
     {"message": {"type": "cond", "timestamp_us": 5, "conditions": {"mouthing": REJECT}}},
     error="usage.out_of_range")
case(wire, "mouthing-sum-order-encode-accepted", "wire.encode", R_SUM,
     {"message": {"type": "cond", "timestamp_us": 5, "conditions": {"mouthing": ACCEPT}}},
     {"hex": hx({"t": "cond", "ts": 5, "c": {"mouthing": ACCEPT}})})
case(inputs, "mirror-empty-channel-maps", "conditions.mirror",
     "§3.4 an empty tracking or contact map is the channel left out: accepted, nothing to mirror",
     {"conditions": {"tracking": {}, "contact": {}}}, {"conditions": {}})
# both directions in every op: mouthing.apply accepts ACCEPT (the baseline of §4.7 summed in
# viseme order, PP before aa) and mouthing.normalize divides REJECT by its left-to-right sum
PP, AA = ACCEPT[VIS.index("PP")], ACCEPT[VIS.index("aa")]
case(inputs, "mouthing-sum-order-apply-accepted", "mouthing.apply", R_SUM,
     {"values": {}, "shares": ACCEPT},
     {"baseline": {"m_jaw": (0.0 + PP * -0.7) + AA * 0.7, "m_press": 0.0 + PP * 0.7}, "delta": {},
      "effective": {"m_jaw": (0.0 + PP * -0.7) + AA * 0.7, "m_press": 0.0 + PP * 0.7}, "arkit": {},
      "visemes": dict(zip(VIS, ACCEPT, strict=True)), "clipped": []})
inputs[-1]["tolerance"] = 0
total = left_to_right(REJECT)
case(inputs, "mouthing-sum-order-normalize-rejected-divided", "mouthing.normalize",
     R_SUM + "; a mix over the limit is divided by that sum",
     {"shares": REJECT}, {"shares": {k: x / total for k, x in zip(VIS, REJECT, strict=True)},
                          "normalized": True})
inputs[-1]["tolerance"] = 0
R_SHARE = ("§3.4.1, §6.5 each share is in [0, 1] in every op that takes a mix to play: a share of "
           "1.000001 is usage.out_of_range although the sum is within 1 + 1e−6")
case(inputs, "mouthing-share-over-one-apply-rejected", "mouthing.apply", R_SHARE,
     {"values": {}, "shares": {"sil": 1.000001}}, error="usage.out_of_range")
case(inputs, "mouthing-share-over-one-mirror-rejected", "conditions.mirror", R_SHARE,
     {"conditions": {"mouthing": [1.000001] + [0] * 14}}, error="usage.out_of_range")
case(inputs, "mouthing-share-over-one-normalize-divided", "mouthing.normalize",
     "§6.5 mouthing.normalize takes a share above 1 (the raw mix of a producer) and divides by the sum",
     {"shares": {"sil": 1.000001}}, {"shares": {"sil": 1.0}, "normalized": True})
inputs[-1]["tolerance"] = 0
R_OVER = ("§1.5, §6.5 a mix whose left-to-right sum overflows binary64 is summed as the shares times "
          "2⁻ᵉ (e the exponent of the largest share, exact) and divided by that: never an empty mix")
case(inputs, "mouthing-normalize-overflow-equal", "mouthing.normalize", R_OVER,
     {"shares": {"PP": 1.7e308, "aa": 1.7e308}}, {"shares": {"PP": 0.5, "aa": 0.5}, "normalized": True})
inputs[-1]["tolerance"] = 0
# 1.5e308 = 0.8151…·2¹⁰²⁴, 1e308 = 0.5434…·2¹⁰²⁴: both scaled exactly; 1e−300·2⁻¹⁰²⁴ underflows to 0
O_AA, O_PP = 1.5e308 * 2.0**-1000 * 2.0**-24, 1e308 * 2.0**-1000 * 2.0**-24
O_SUM = ((0.0 + 0.0) + O_PP) + O_AA
case(inputs, "mouthing-normalize-overflow-scaled", "mouthing.normalize", R_OVER,
     {"shares": {"sil": 1e-300, "PP": 1e308, "aa": 1.5e308}},
     {"shares": {"PP": O_PP / O_SUM, "aa": O_AA / O_SUM}, "normalized": True})
inputs[-1]["tolerance"] = 0


# -- pins that must be able to fail (tools/mutate_pins.py, spec §6.9) -----------------------
# §3.3: v·h < 0 is decided as x + z < 0, one IEEE addition. A palm in the band where the
# rounded dot product x·c + z·c (c = 1/√2 rounded) has the other sign than x + z: an encoder
# deciding the hemisphere with it sends the opposite v.
C_H = 1.0 / math.sqrt(2.0)


def _hemisphere_split(seed):
    """A unit quaternion in the clamp band whose normalized v has sign(x + z) != sign of the
    rounded dot product (deterministic search from ``seed``)."""
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        x = -(0.3 + 0.3 * (state >> 11) / 2**53)
        for k in (-3, -2, -1, 1, 2, 3):
            z = -x + k * math.ulp(x)
            w = 0.01
            y = math.sqrt(1.0 - w * w - x * x - z * z)
            q = [w, x, y, z]
            _, _, clamped = palm_encode_exact(q, "r")
            n4 = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
            u = [c / n4 for c in q][1:]
            exact, rounded = u[0] + u[2] < 0.0, u[0] * C_H + u[2] * C_H < 0.0
            if clamped and exact != rounded:
                return q


R_HDOT = (R_HEMI + "; v·h < 0 is decided as x + z < 0 in binary64 (§1.5), never as a rounded "
          "dot product with (1, 0, 1)/√2, whose sign differs here (tolerance 0)")
for name, seed in (("hemisphere-sum-not-dot-1", 1), ("hemisphere-sum-not-dot-2", 7)):
    q = _hemisphere_split(seed)
    v, _, clamped = palm_encode_exact(q, "r")
    case(palm, name, "palm.encode", R_HDOT, {"q": q, "side": "r"}, {"v": v, "clamped": clamped})
    palm[-1]["tolerance"] = 0


def _order_split(seed):
    """A unit quaternion in the clamp band whose |v| summed (x·x + y·y) + z·z differs from
    x·x + (y·y + z·z) (another summation order)."""
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        w = 0.02 + 0.15 * (state >> 11) / 2**53
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        a = 2.0 * math.pi * (state >> 11) / 2**53
        r = math.sqrt(1.0 - w * w)
        q = [w, r * math.cos(a) * 0.6, r * math.sin(a), r * math.cos(a) * 0.8]
        n4 = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
        x, y, z = (c / n4 for c in q[1:])
        if (x * x + y * y) + z * z != x * x + (y * y + z * z):
            return q


R_ORDER = ("§1.5 the length a clamp decides on is sqrt((x·x + y·y) + z·z) in that order; another "
           "order (a BLAS kernel's) gives another n, hence another s = T / n (tolerance 0)")
for name, seed in (("clamp-exact-encode-order-1", 3), ("clamp-exact-encode-order-2", 11)):
    q = _order_split(seed)
    v, _, clamped = palm_encode_exact(q, "r")
    assert clamped
    case(palm, name, "palm.encode", R_ORDER, {"q": q, "side": "r"}, {"v": v, "clamped": True})
    palm[-1]["tolerance"] = 0

# §5.4: v longer than the mask says is decode.length, as a shorter one is (err-length)
case(wire, "err-length-long", "wire.decode",
     "§5.4 the length of v MUST equal the mask's dims' bytes: one byte more is decode.length",
     {"hex": hx({"t": "f", "s": 1, "ts": 2, "m": bytes([1]), "v": b"\x00\x10\x00"})},
     error="decode.length")
# §5.2: an unknown value of every enumeration is decode.unknown_id (a tracking state here)
case(wire, "decode-tracking-state-unknown", "wire.decode",
     "§5.2 an unknown enumeration value (a tracking state) is decode.unknown_id",
     {"hex": hx({"t": "cond", "ts": 1, "c": {"tracking": {"hand_l": "asleep"}}})},
     error="decode.unknown_id")

for name, lst, section, title in (
    ("palm-rules.json", palm, "§3.3, §4.2", "Palm encoding near w = 0: the hemisphere rule and the clamp arithmetic"),
    ("wire-rules.json", wire, "§5.2–5.8, §6.5",
     "Wire edges: str keys at any depth, pv, nil channels, err fields, uniform encoder validation"),
    ("inputs.json", inputs, "§6.5", "The one rule for op input: missing, mistyped, booleans, ranges"),
):
    doc = {"section": section, "title": title, "cases": lst}
    (OUT / name).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"{name}: {len(lst)} cases")
