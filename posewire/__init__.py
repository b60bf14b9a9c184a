"""posewire: pose-parameter codec and streaming protocol for avatars.

The pure codec lives in :mod:`codec`; producers (landmarks -> vector) in
:mod:`producers`; consumers (vector -> avatar) in :mod:`consumers`. This package holds
the command line, the relay server and the conformance kit.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"

# the live encoder's float kernels: compiled or pure Python, decided before they load (issue 22)
from posewire import native as _native

_native.install()
