"""posewire codec: pure, sans-I/O logic (registry, vector maths, wire format).

Nothing in this package performs I/O or imports asyncio or websockets (spec §1.4).
"""

from .errors import ERROR_CODES, DecodeError, PosewireError, UsageError
from .registry import DIMENSIONS, REGISTRY, REGISTRY_VERSION, ROWS, Registry
from .vector import DEFAULTS, N_DIMS, ValidationReport, from_dict, mirror, to_dict, validate

__all__ = [
    "DEFAULTS",
    "DIMENSIONS",
    "ERROR_CODES",
    "N_DIMS",
    "REGISTRY",
    "REGISTRY_VERSION",
    "ROWS",
    "DecodeError",
    "PosewireError",
    "Registry",
    "UsageError",
    "ValidationReport",
    "from_dict",
    "mirror",
    "to_dict",
    "validate",
]
