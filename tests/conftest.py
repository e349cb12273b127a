"""Shared fixtures, and the tiers: every test is marked by its folder.

- ``tests/unit``: the pure core and the families, in this process; the quick
  loop (``pytest tests/unit`` or ``pytest -m unit``, about 30 s).
- ``tests/integration``: real files, processes, a loopback S3 server and the
  command lines; and the checks of the core too slow for the quick loop
  (the real corpus read, a fresh interpreter, pages of plots drawn many times).
- ``tests/cluster``: real Celery workers over a real Redis, and faults.

Service fixtures (the loopback S3 server, Redis, Celery workers) live in
``tests/support``.

Hypothesis profiles: ``ci``, the default, is deterministic (the same examples
on every run) and keeps no example database; ``long`` (``pytest
--hypothesis-profile=long``) draws 2,000 fresh examples for every property
that does not fix its own count, such as the fuzz tests
(``tests/unit/test_fuzz_decoding.py``, ``tests/integration/test_fuzz_inputs.py``).
A property whose every example evaluates a whole run takes its count from
``tests.support.profiles.examples``: a few under ``ci``, its full count under
any other profile.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins = ["tests.support.s3_server", "tests.support.redis_server", "tests.support.loopback_provider"]

_TIERS = ("unit", "integration", "cluster")

settings.register_profile("ci", database=None, derandomize=True, deadline=None)
settings.register_profile("long", database=None, deadline=None, max_examples=2000)
settings.load_profile("ci")  # the plugin loads the profile --hypothesis-profile names after this


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal sends it, whatever started the run: a run started
    in the background of a shell without job control (``nohup ... &``)
    inherits SIGINT ignored, and every process a test starts would inherit
    that too, so the tests of what a command does on Ctrl-C would see
    nothing happen."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier, the folder it lives in; deselect the
    one-worker variant of a test marked ``two_workers``; run the soak
    first (the longest test: started last, it would leave one process
    working alone at the end of a parallel run)."""
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        if tier in _TIERS:
            item.add_marker(getattr(pytest.mark, tier))
    one_worker = [item for item in items if item.get_closest_marker("two_workers") and _on_one_worker(item)]
    if one_worker:
        config.hook.pytest_deselected(items=one_worker)
        dropped = set(map(id, one_worker))
        items[:] = [item for item in items if id(item) not in dropped]
    items.sort(key=lambda item: item.get_closest_marker("soak") is None)


def _on_one_worker(item: pytest.Item) -> bool:
    """Whether the test runs with a module's one-worker fixture (``workers`` or ``*_workers`` at 1)."""
    params = getattr(item, "callspec", None)
    if params is None:
        return False
    return any(name.endswith("workers") and value == 1 for name, value in params.params.items())
