"""Test configuration.

Hypothesis profiles (``HYPOTHESIS_PROFILE`` selects one; ``CI`` set means ``ci``):

- ``ci``: derandomized and without the example database, so a landing run is reproducible
  and never depends on what an earlier run found (``.ci/run`` selects it);
- ``dev`` (default): explores new examples each run and keeps failures in ``.hypothesis/``;
- ``fuzz`` (``make fuzz``): random seeds, many more examples, no database: each failure it
  finds becomes an ``@example`` in the test.

Skips: every skip prints its reason (``-rs`` in ``pyproject.toml``). Under ``CI``, a test that
would be skipped because a dependency is missing (chromium, nats-server, node, an extra)
fails instead, naming it: a landing run never passes by not running.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# no per-example deadline: speed lives in benchmarks/, and a loaded machine must not fail a law
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.register_profile("fuzz", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "1000")), database=None,
                          print_blob=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI (a missing dependency must fail a landing run): {reason}"
    return report
