"""The real Codex CLI in tests: its pinned version, a loopback model provider
that drops every connection, and the recording of the stream of a turn that
fails for want of network (tests/fixtures/codex).

The version is pinned once, in ``.ci/run`` (``CODEX_VERSION=...``), which
installs it; :func:`require_codex` fails a test, saying what to install,
when ``codex`` is missing or another version.

The recording runs exactly the adapter's command line
(:func:`eceb_worker.families.paired.prompts.codex_argv`) with test-only
``-c`` options inserted before its final ``-``: a model provider on a
loopback port that accepts and closes every connection, with no request
retry and two stream retries. A closed port is not enough: Codex CLI
0.171.0 then reports ``Reconnecting... waiting for network`` and waits for
minutes; a dropped connection fails the turn within seconds. HOME and
CODEX_HOME are a temporary directory; the API key is a dummy. Nothing but
loopback is contacted.

To re-record the fixture: ``python -m tests.support.codex_cli
tests/fixtures/codex``.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eceb_worker.families.paired.benchmark import PairBenchmark
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.schedule import Arm
from tests.support.paths import REPO
from tests.support.provider import PAIRED, example_prompt, example_repository

__all__ = [
    "CODEX_VERSION",
    "FIXTURES",
    "Recording",
    "dropping_provider",
    "record_network_failure",
    "require_codex",
    "shapes",
    "loopback_provider_options",
]

FIXTURES = REPO / "tests" / "fixtures" / "codex"
CODEX_VERSION = re.search(r"^CODEX_VERSION=(\S+)$", (REPO / ".ci" / "run").read_text(), re.MULTILINE).group(1)  # type: ignore[union-attr]
"""The Codex CLI version the tests check, as .ci/run pins it."""
INSTALL = f"install it: apt-get install nodejs npm && npm install -g @openai/codex@{CODEX_VERSION}"
DUMMY_KEY = "sk-eceb-test-dummy-key"


def require_codex() -> str:
    """The path of the installed ``codex``; fails the test, saying what to
    install, when it is missing or not version :data:`CODEX_VERSION`."""
    path = shutil.which("codex")
    if path is None:
        pytest.fail(f"the real Codex CLI is not on PATH: {INSTALL}")
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    if done.stdout.strip() != f"codex-cli {CODEX_VERSION}":
        pytest.fail(f"codex --version printed {done.stdout.strip()!r}, not 'codex-cli {CODEX_VERSION}': {INSTALL}")
    return path


@contextmanager
def dropping_provider() -> Iterator[int]:
    """A loopback TCP port that accepts every connection and closes it at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


def loopback_provider_options(port: int) -> list[str]:
    """The ``-c`` options that point the CLI at the dropping loopback provider."""
    provider = (
        f'{{name="eceb-test",base_url="http://127.0.0.1:{port}/v1",env_key="OPENAI_API_KEY",'
        'wire_api="responses",request_max_retries=0,stream_max_retries=2}'
    )
    return ["-c", 'model_provider="eceb-test"', "-c", f"model_providers.eceb-test={provider}"]


class Recording(msgspec.Struct, frozen=True, kw_only=True):
    """One run of the real CLI: the adapter's argv, the argv run, exit code, stdout and stderr."""

    adapter_argv: tuple[str, ...]
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str


def example_argv(executable: str, work: Path, *, speed_tier: str | None = None) -> tuple[str, ...]:
    """The adapter's command line for the example's explanation task in ``work/repo``."""
    benchmark = msgspec.json.decode((PAIRED / "benchmark.json").read_bytes(), type=PairBenchmark)
    provider = benchmark.provider
    return codex_argv(
        executable=executable,
        output_schema=str(PAIRED / "tasks" / "explanation.answer.schema.json"),
        repository=str(work / "repo"),
        model=provider.model,
        reasoning_effort=provider.reasoning_effort,
        speed_tier=speed_tier or provider.speed_tier,
        sandbox=provider.sandbox,
    )


def record_network_failure(executable: str, *, speed_tier: str | None = None, timeout: float = 60) -> Recording:
    """Run the adapter's command line with the real CLI against :func:`dropping_provider`."""
    with tempfile.TemporaryDirectory(prefix="eceb-codex-") as temporary, dropping_provider() as port:
        work = Path(temporary)
        example_repository(work / "repo")
        (work / "home").mkdir()
        (work / "codex-home").mkdir()
        adapter = example_argv(executable, work, speed_tier=speed_tier)
        argv = (*adapter[:-1], *loopback_provider_options(port), adapter[-1])
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(work / "home"),
            "CODEX_HOME": str(work / "codex-home"),
            "OPENAI_API_KEY": DUMMY_KEY,
        }
        done = subprocess.run(
            argv,
            input=example_prompt("explanation", Arm.A),
            capture_output=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        stderr = done.stderr.decode("utf-8", errors="replace").replace(temporary, "<tmp>")
        return Recording(adapter_argv=adapter, argv=argv, returncode=done.returncode, stdout=done.stdout, stderr=stderr)


def shapes(data: bytes) -> list[Any]:
    """The key shape of each event of a JSONL stream: its keys, the values of
    ``type`` kept, every other value replaced by its JSON type's name (ids,
    timestamps and messages may differ between recordings)."""

    def shape(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: shape(v, k) for k, v in sorted(value.items())}
        if isinstance(value, list):
            return [shape(v) for v in value]
        if key == "type":
            return value
        return {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}[type(value)]

    return [shape(json.loads(line)) for line in data.splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    """Re-record the fixture into the directory ``argv[0]``."""
    recording = record_network_failure(shutil.which("codex") or "codex")
    out = Path(argv[0])
    (out / "network-failure.jsonl").write_bytes(recording.stdout)
    (out / "network-failure.stderr").write_text(recording.stderr, encoding="utf-8")
    sys.stdout.write(f"exit {recording.returncode}; {len(recording.stdout.splitlines())} events\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
