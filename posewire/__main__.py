"""``python -m posewire``: the ``posewire`` command."""

import sys

from posewire.cli import main

sys.exit(main())
