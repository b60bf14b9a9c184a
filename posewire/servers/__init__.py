"""The loopback servers a person looks at.

* :mod:`.viewer` — ``posewire view``: the live browser viewer of a stream (and the
  capture page that makes the browser's webcam a producer);
* :mod:`.demo` — ``posewire demo``: relay, viewer, a looped producer and a decoding
  subscriber in one command;
* :mod:`.assets` — the files they serve and play, from a checkout or from the wheel.

The relay server itself is :mod:`posewire.relay`.
"""

__all__: list[str] = []
