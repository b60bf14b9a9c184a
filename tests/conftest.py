"""Test configuration: CI runs hypothesis derandomized so a landing run is reproducible;
local runs explore new examples each time (and keep failures in .hypothesis/)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
