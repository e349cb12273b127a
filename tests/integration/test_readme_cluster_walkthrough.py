"""The README's walk-through without Docker, run as written in one shell: a
loopback ``redis-server`` with a password, moto's S3 server, the example
uploaded, one worker, then ``eceb-dist submit``, ``wait`` and ``result``;
then a second job whose only worker is killed whole (``kill -9``) once it holds a shard,
which ends with the same report once another worker starts.

Only its ports (free loopback ports in place of 16379 and 19000) and its
directory (``/tmp/eceb-cluster`` moved under a temporary directory) are
changed, and the bounds of a lost step are shorter
(:data:`~tests.support.faults.SHORT_BOUNDS`, in the environment the block
starts with), so that the second job's lost shard runs again within seconds
rather than half a minute; the default bounds are pinned by
``tests/cluster/test_dist_leases.py``. Each line must exit as its comment says (``# exit N``; 0 when it
says nothing); the report fetched is byte for byte the one ``eceb evaluate``
writes; the last line stops every process the block started."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.dist_support import embedded_report
from tests.support.faults import SHORT_BOUNDS, bounds_settings
from tests.support.paths import REPO
from tests.support.redis_server import group_alive

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HEADING = "### Walk-through without Docker"
DIRECTORY = "/tmp/eceb-cluster"
REDIS_PORT = "16379"
S3_PORT = "19000"
SECRET = "eceb-local-secret"
RUN_TIMEOUT_S = 300
STOP_TIMEOUT_S = 30
INSTALL_HINT = "install the Debian package redis-server (it brings redis-cli)"


def walkthrough() -> list[str]:
    """The command lines of the README's walk-through block, blank lines left out."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("\n```", start)]
    return [line for line in block.splitlines() if line.strip()]


def _free_ports(count: int) -> list[str]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [str(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _expected_exit(line: str) -> int:
    wanted = re.search(r"exit (\d+)", line.partition("#")[2])
    return int(wanted.group(1)) if wanted else 0


def _script(lines: list[str]) -> str:
    """The lines, each followed by a check of its exit status (a failed check
    stops the block's background jobs and exits 97 naming the line)."""
    checked = []
    for number, line in enumerate(lines, start=1):
        wanted = _expected_exit(line)
        checked += [
            line,
            f'rc=$?; if [ "$rc" -ne {wanted} ]; then echo "walk-through line {number} exited $rc, expected {wanted}"'
            " >&2; kill $(jobs -p) 2>/dev/null; exit 97; fi",
        ]
    return "\n".join(checked) + "\n"


def _logs(directory: Path) -> str:
    return "\n".join(
        f"--- {path.name}\n{path.read_text(encoding='utf-8', errors='replace')[-3000:]}"
        for path in sorted(directory.glob("*.log"))
    )


def test_the_readme_walkthrough_without_docker_runs_a_job_on_a_local_cluster(tmp_path: Path) -> None:
    missing = [tool for tool in ("redis-server", "redis-cli") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the walk-through needs {', '.join(missing)}: {INSTALL_HINT}", pytrace=False)
    lines = walkthrough()
    text = "\n".join(lines)
    for needle in (REDIS_PORT, S3_PORT, DIRECTORY, "eceb-dist worker", "eceb-dist submit", "eceb-dist result"):
        assert needle in text, needle
    assert lines[-1].startswith("kill ")
    # The block waits for a worker to consume the queue before each submit
    # (under load, submit's own one-second look for a consumer may miss it).
    for number, line in enumerate(lines):
        if "eceb-dist submit" in line:
            assert "eceb-dist probe" in lines[number - 1], line

    redis_port, s3_port = _free_ports(2)
    directory = tmp_path / "eceb-cluster"
    script = _script(lines)
    script = re.sub(rf"\b{REDIS_PORT}\b", redis_port, script)
    script = re.sub(rf"\b{S3_PORT}\b", s3_port, script)
    script = script.replace(DIRECTORY, str(directory))

    # The block's exports are what counts: none of the caller's eceb or AWS settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECEB_", "AWS_", "REDISCLI_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    env.update(bounds_settings(SHORT_BOUNDS))
    stdout_path, stderr_path = tmp_path / "stdout", tmp_path / "stderr"
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", script],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        returncode = shell.wait(timeout=RUN_TIMEOUT_S)
        out = stdout_path.read_text(encoding="utf-8")
        err = stderr_path.read_text(encoding="utf-8")
        assert returncode == 0, (out, err, _logs(directory))
        # The block's last line stopped Redis, the S3 server and the worker with its pool.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while group_alive(shell.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(shell.pid), "the walk-through left processes running"
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(shell.pid, signal.SIGKILL)

    assert "uploaded 25 files of enterprise-seed to s3://eceb-inputs/enterprise-seed/" in out
    assert "8/15 tasks pass" in out + err
    assert SECRET not in out + err
    expected = embedded_report(tmp_path / "embedded")
    assert (directory / "report.json").read_bytes() == expected
    # The second job, its worker killed whole holding a shard, none left until another started:
    # the lost shard was published again by the next worker's watch.
    assert (directory / "report-2.json").read_bytes() == expected
    assert "published again" in (directory / "worker.log").read_text(encoding="utf-8"), _logs(directory)
