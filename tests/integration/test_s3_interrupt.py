"""Ctrl-C while reads of object storage hang: ``eceb evaluate`` hashing an
``s3://`` corpus on a loopback server that accepts every connection and
never answers stops within seconds (exit 130), not after the reads' timeouts
and retries (minutes), and leaves no report nor any part of one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
STOP_WITHIN_S = 10.0
"""Prompt: well under one read timeout (30 s), however loaded the machine."""


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return 0


def test_ctrl_c_during_hung_corpus_reads_stops_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    with silent_loopback_port() as port:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "eceb_cli", "evaluate"),
                *(str(SEED / "benchmark.json"), str(SEED / "run.json")),
                *("--corpus", "s3://bucket/corpus", "--endpoint-url", f"http://127.0.0.1:{port}", "-o", str(out)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            # Waiting on the silent server: the artifacts' reads started, one thread each.
            deadline = time.monotonic() + 60
            while _threads(process.pid) < 8:
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, "the corpus reads never started"
                time.sleep(0.1)
            time.sleep(1)
            assert process.poll() is None, process.communicate()
            interrupted = time.monotonic()
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=120)
            took = time.monotonic() - interrupted
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == exit_codes.INTERRUPTED, stderr
    assert took < STOP_WITHIN_S, f"stopped {took:.1f} s after Ctrl-C"
    assert stderr.strip().splitlines()[-1] == "interrupted (Ctrl-C): stopped; no partial output was left"
    assert "Traceback" not in stderr
    assert list(out.parent.iterdir()) == []
