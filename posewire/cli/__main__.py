"""``python -m posewire.cli``: the ``posewire`` command (as ``python -m posewire``)."""

import sys

from posewire.cli.command import main

sys.exit(main())
