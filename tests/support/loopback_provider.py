"""The loopback model provider (``examples/run/loopback_provider.py``) as a
subprocess of the test run: :func:`running_loopback_provider` starts it on a
free port of 127.0.0.1 with a script and a credential, waits until it
listens, and stops it (SIGTERM, exit 0 expected) when the block ends;
:func:`start_loopback_provider` is the same as a pytest fixture (a factory;
every provider it started is stopped after the test), available to a test
once this module is in ``pytest_plugins`` (tests/conftest.py) or given as
``-p tests.support.loopback_provider``.

The running provider (:class:`LoopbackProvider`) gives the base URLs the SDKs
take (:attr:`LoopbackProvider.openai_base_url`,
:attr:`LoopbackProvider.anthropic_base_url`), its counters
(:meth:`LoopbackProvider.stats`) and :meth:`LoopbackProvider.reset`.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import EXAMPLES

__all__ = [
    "LOOPBACK_PROVIDER",
    "LoopbackProvider",
    "running_loopback_provider",
    "start_loopback_provider",
]

LOOPBACK_PROVIDER = EXAMPLES / "run" / "loopback_provider.py"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class LoopbackProvider:
    """A running loopback provider.

    Attributes:
        port: its TCP port on 127.0.0.1.
        api_key: the credential it accepts.
        process: the subprocess.
    """

    port: int
    api_key: str
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDKs' base URL: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK's base URL: ``http://127.0.0.1:PORT``."""
        return self.base_url

    def base_url_for(self, api: str) -> str:
        """The base URL a ``ModelSpec`` of ``api`` takes."""
        return self.anthropic_base_url if api == "anthropic-messages" else self.openai_base_url

    def stats(self) -> dict[str, Any]:
        """``GET /_stats``: the counters (see the provider's docstring)."""
        with urllib.request.urlopen(f"{self.base_url}/_stats", timeout=30) as answer:
            stats: dict[str, Any] = json.load(answer)
        return stats

    def reset(self) -> dict[str, Any]:
        """``POST /_reset``: zero the counters (rule matches included)."""
        request = urllib.request.Request(f"{self.base_url}/_reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            stats: dict[str, Any] = json.load(answer)
        return stats


@contextlib.contextmanager
def running_loopback_provider(
    directory: Path,
    script: Mapping[str, Any] | Path | None = None,
    *,
    api_key: str = "sk-loopback-test-key",
    delay_ms: int = 0,
    deterministic: bool = False,
) -> Iterator[LoopbackProvider]:
    """Run the loopback provider with ``script`` (a mapping is written to
    ``directory/script.json``; a path is used as it is; None: the default
    rule alone) until the block ends. Fails the test if it does not start
    listening within :data:`START_TIMEOUT_S` or does not exit 0 on SIGTERM."""
    directory.mkdir(parents=True, exist_ok=True)
    port_file = directory / "provider.port"
    port_file.unlink(missing_ok=True)
    command = [sys.executable, str(LOOPBACK_PROVIDER), "--port", "0", "--port-file", str(port_file)]
    command += ["--api-key", api_key, "--delay-ms", str(delay_ms)]
    if deterministic:
        command.append("--deterministic")
    if isinstance(script, Path):
        command += ["--script", str(script)]
    elif script is not None:
        script_path = directory / "script.json"
        script_path.write_text(json.dumps(script), encoding="utf-8")
        command += ["--script", str(script_path)]
    log = (directory / "provider.log").open("wb")
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        port = _wait_for_port(process, port_file, directory / "provider.log")
        yield LoopbackProvider(port=port, api_key=api_key, process=process)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                pytest.fail("the loopback provider did not stop on SIGTERM")
        log.close()
    assert process.returncode == 0, (directory / "provider.log").read_text(errors="replace")


def _wait_for_port(process: subprocess.Popen[bytes], port_file: Path, log: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if port_file.is_file():
            return int(port_file.read_text(encoding="utf-8"))
        if process.poll() is not None:
            pytest.fail(f"the loopback provider exited {process.returncode}: {log.read_text(errors='replace')}")
        time.sleep(0.05)
    pytest.fail(f"the loopback provider did not listen within {START_TIMEOUT_S} s")


@pytest.fixture
def start_loopback_provider(tmp_path: Path) -> Iterator[Callable[..., LoopbackProvider]]:
    """A factory ``start(script=None, *, api_key=..., delay_ms=0)`` starting
    a loopback provider in ``tmp_path``; each is stopped after the test."""
    with contextlib.ExitStack() as stack:
        count = 0

        def start(
            script: Mapping[str, Any] | Path | None = None, *, api_key: str = "sk-loopback-test-key", delay_ms: int = 0
        ) -> LoopbackProvider:
            nonlocal count
            count += 1
            return stack.enter_context(
                running_loopback_provider(
                    tmp_path / f"loopback-provider-{count}", script, api_key=api_key, delay_ms=delay_ms
                )
            )

        yield start
