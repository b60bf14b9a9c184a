"""Test configuration: CI runs hypothesis derandomized so a landing run is reproducible;
local runs explore new examples each time (and keep failures in .hypothesis/)."""

from __future__ import annotations

import os

from hypothesis import settings

# no per-example deadline: speed lives in benchmarks/, and a loaded machine must not fail a law
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
