"""posewire codec: pure, sans-I/O logic (registry, vector maths, wire format).

Nothing in this package performs I/O or imports asyncio or websockets (spec §1.4); the
relay and the clients are thin asyncio layers over :mod:`posewire.codec.protocol`.

Modules: :mod:`~posewire.codec.registry` (the one normative table, spec §4),
:mod:`~posewire.codec.vector` (§3.1–3.2, §3.5), :mod:`~posewire.codec.quaternion` (§3.3, §4.2),
:mod:`~posewire.codec.calibration` (§2, §4.1), :mod:`~posewire.codec.euler` (§4.4–4.5),
:mod:`~posewire.codec.morph` (§4.6), :mod:`~posewire.codec.mouthing` (§4.7), :mod:`~posewire.codec.affect`
(§3.4.4), :mod:`~posewire.codec.conditions` (§3.4), :mod:`~posewire.codec.wire` (§5.1–5.6),
:mod:`~posewire.codec.protocol` (§5.8–5.10), :mod:`~posewire.codec.errors` (§1.3).
"""

from .affect import apply_affect
from .calibration import Calibration, CalibrationUnits, arm_to_normalized, arm_to_physical, body_frame, units
from .conditions import Affect, Conditions, conditions_from_obj, conditions_to_obj, mirror_conditions
from .errors import ERROR_CODES, DecodeError, PosewireError, UsageError
from .euler import body_to_quat, euler_to_quat, head_to_quat, quat_to_euler, spine_rotations
from .morph import arkit_to_dims, dims_to_arkit
from .mouthing import apply_mouthing, mouthing_delta, mouthing_to_arkit, viseme_baseline
from .protocol import Connection, Limits, State
from .quaternion import palm_decode, palm_encode, reconstruct_w
from .registry import DIMENSIONS, REGISTRY, REGISTRY_VERSION, ROWS, Registry
from .vector import DEFAULTS, N_DIMS, ValidationReport, from_dict, mirror, to_dict, validate
from .wire import SUBPROTOCOL, Frame, decode, encode

__all__ = [
    "DEFAULTS",
    "DIMENSIONS",
    "ERROR_CODES",
    "N_DIMS",
    "REGISTRY",
    "REGISTRY_VERSION",
    "ROWS",
    "SUBPROTOCOL",
    "Affect",
    "Calibration",
    "CalibrationUnits",
    "Conditions",
    "Connection",
    "DecodeError",
    "Frame",
    "Limits",
    "PosewireError",
    "Registry",
    "State",
    "UsageError",
    "ValidationReport",
    "apply_affect",
    "apply_mouthing",
    "arkit_to_dims",
    "arm_to_normalized",
    "arm_to_physical",
    "body_frame",
    "body_to_quat",
    "conditions_from_obj",
    "conditions_to_obj",
    "decode",
    "dims_to_arkit",
    "encode",
    "euler_to_quat",
    "from_dict",
    "head_to_quat",
    "mirror",
    "mirror_conditions",
    "mouthing_delta",
    "mouthing_to_arkit",
    "palm_decode",
    "palm_encode",
    "quat_to_euler",
    "reconstruct_w",
    "spine_rotations",
    "to_dict",
    "units",
    "validate",
    "viseme_baseline",
]
