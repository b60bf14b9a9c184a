"""posewire: pose-parameter codec and streaming protocol for avatars.

The pure codec lives in :mod:`codec`; producers (landmarks -> vector) in
:mod:`producers`; consumers (vector -> avatar) in :mod:`consumers`; the transport
client in :mod:`transport`. This package holds the application on top of them, grouped
by what each part is:

* :mod:`posewire.cli` — the ``posewire`` command line: the parser and its subcommands
  (``produce``, ``record``, ``export``, ``registry``, ``serve``, ``consume``), the options
  and conventions they share, what a client says while it waits, the optional extras;
* :mod:`posewire.relay` — the relay server (``posewire serve``) and its NATS cluster link;
* :mod:`posewire.servers` — the loopback servers a person looks at: the live browser
  viewer (``posewire view``), the one-command demo (``posewire demo``) and the files they
  serve;
* :mod:`posewire.bridges` — a stream out to other protocols: VMC (``posewire vmc``);
* :mod:`posewire.conformance` — the conformance kit (``posewire conformance``);
* :mod:`posewire.models` and :mod:`posewire.generate` — the registry export's and the
  pose object's models and the generated files (schemas, tables, the CLI reference);
* :mod:`posewire.fidelity` and :mod:`posewire.groundtruth` — measuring the encoder.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"

# the live encoder's float kernels: compiled or pure Python, decided before they load (posewire.native)
from posewire import native as _native

_native.install()
