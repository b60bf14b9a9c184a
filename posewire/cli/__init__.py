"""The ``posewire`` command line.

* :mod:`.command` — the parser (:func:`~posewire.cli.command.build_parser`), the entry
  point (:func:`~posewire.cli.command.main`) and the small subcommands (``registry``,
  ``serve``, ``consume``, ``generate``);
* :mod:`.produce`, :mod:`.record`, :mod:`.convert`, :mod:`.export` — the ``produce``,
  ``record``, ``convert`` and ``export`` subcommands;
* :mod:`.conventions`, :mod:`.net_options`, :mod:`.waiting` — what every subcommand
  shares: the one option convention and plain-language errors, the TLS/admission/ping
  options, and what a client says while it connects and waits;
* :mod:`.extras` — which optional extra a feature needs, said in one line.

The servers (:mod:`posewire.servers`) and bridges (:mod:`posewire.bridges`) add their own
subcommands with the shared options of this package. This ``__init__`` imports nothing,
so that they can use those options without importing the whole command line.
"""

__all__: list[str] = []
