"""The pure layers (``tests/unit/test_layers.py``), checked in a fresh
interpreter: importing them loads no service client."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO
from tests.unit.test_layers import PURE, SERVICE_CLIENTS, modules


def test_pure_layers_pull_in_no_service_client() -> None:
    """Importing every pure module, in a fresh interpreter, loads no service
    client, not even through a library."""
    pure = [module for module, _ in modules() if module.startswith(PURE)]
    code = (
        "import importlib, sys\n"
        f"for name in {pure!r}: importlib.import_module(name)\n"
        f"print(sorted({{n.split('.')[0] for n in sys.modules}} & {SERVICE_CLIENTS!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "[]"
