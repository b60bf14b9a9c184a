"""``python -m posewire``: the ``posewire`` command."""

import sys

from posewire.cli.command import main

sys.exit(main())
