"""A posewire stream out to other protocols.

* :mod:`.vmc` — ``posewire vmc``: the VMC protocol (OSC over UDP) for VTuber
  applications (VSeeFace, VNyan, Warudo, ...).
"""

__all__: list[str] = []
