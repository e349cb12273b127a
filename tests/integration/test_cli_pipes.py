"""The command lines writing to a pipe whose reader has gone (``eceb ... |
head -1``): output that cannot be delivered is dropped, the command carries
on and exits with the code its outcome has in the README table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from tests.support.helpers import refusing_loopback_port, run_with_closed_reader
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
ECEB = (sys.executable, "-m", "eceb_cli")
ECEB_DIST = (sys.executable, "-m", "eceb_cli.dist")


def evaluate_args(report: Path, run: Path = SEED / "run.json") -> tuple[str, ...]:
    return (
        "evaluate",
        str(SEED / "benchmark.json"),
        str(run),
        "--corpus",
        str(SEED / "corpus"),
        "--workers",
        "1",
        "-o",
        str(report),
    )


def test_evaluate_into_a_closed_pipe_keeps_its_exit_code_and_writes_the_report(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = run_with_closed_reader("stdout", *ECEB, *evaluate_args(report))
    assert done.returncode == exit_codes.TASKS_FAILED, done.stderr
    assert b"internal error" not in done.stderr
    assert b"Traceback" not in done.stderr
    assert b"Exception ignored" not in done.stderr
    assert json.loads(report.read_bytes())["summary"]["passing_tasks"] == 8


def test_bad_input_with_stderr_closed_is_still_exit_3(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text('{"schema": "symgliph.eceb/run-v0.1"}')
    report = tmp_path / "report.json"
    done = run_with_closed_reader("stderr", *ECEB, *evaluate_args(report, run))
    assert done.returncode == exit_codes.BAD_INPUT
    assert done.stdout == b""
    assert not report.exists()


def test_corpus_verify_json_into_a_closed_pipe(tmp_path: Path) -> None:
    args = ("corpus", "verify", str(SEED / "registry.jsonl"), "--source", str(SEED / "corpus"), "--json")
    done = run_with_closed_reader("stdout", *ECEB, *args, "--workers", "1")
    assert (done.returncode, done.stderr) == (exit_codes.OK, b"")
    (tmp_path / "absent").mkdir()
    stale = ("corpus", "verify", str(SEED / "registry.jsonl"), "--source", str(tmp_path / "absent"))
    done = run_with_closed_reader("stdout", *ECEB, *stale, "--json", "--workers", "1")
    assert (done.returncode, done.stderr) == (exit_codes.VERIFICATION_FAILED, b"")
    done = run_with_closed_reader("stderr", *ECEB, *stale, "--workers", "1")
    assert done.returncode == exit_codes.VERIFICATION_FAILED


def test_dist_with_stderr_closed_keeps_the_storage_exit_code() -> None:
    with refusing_loopback_port() as port:
        broker = f"redis://127.0.0.1:{port}/0"
        done = run_with_closed_reader("stderr", *ECEB_DIST, "status", "0" * 32, "--broker-url", broker)
    assert (done.returncode, done.stdout) == (exit_codes.STORAGE, b"")


def test_help_into_a_closed_pipe_is_quiet() -> None:
    done = run_with_closed_reader("stdout", *ECEB, "corpus", "--help")
    assert (done.returncode, done.stderr) == (exit_codes.OK, b"")


def _run_with(redirection: str, *command: str) -> subprocess.CompletedProcess[bytes]:
    """``command`` run by the shell with ``redirection`` applied (``2>&-``,
    ``>/dev/full``, ...); what the redirection leaves of the two streams is
    captured."""
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {redirection}', "sh", *command],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("closed", ["2>&-", ">&-", ">&- 2>&-"])
def test_a_closed_standard_stream_keeps_the_exit_code_and_the_report(tmp_path: Path, closed: str) -> None:
    """A descriptor closed before eceb starts is not taken by the first file
    eceb opens (the report would receive its messages): it reads as empty."""
    expected = tmp_path / "expected.json"
    assert subprocess.run([*ECEB, *evaluate_args(expected)], capture_output=True, check=False).returncode == 1
    report = tmp_path / "report.json"
    done = _run_with(closed, *ECEB, *evaluate_args(report))
    assert done.returncode == exit_codes.TASKS_FAILED, done.stderr
    assert report.read_bytes() == expected.read_bytes()


def test_standard_output_on_a_full_device_is_an_output_error(tmp_path: Path) -> None:
    """The report on standard output, or the summary beside a report file,
    that cannot be written (ENOSPC) is exit 6 naming standard output; the
    report file is written all the same. Standard error that cannot be
    written changes nothing."""
    if not Path("/dev/full").exists():
        pytest.fail("this test needs /dev/full (a Linux character device)")
    args = list(evaluate_args(tmp_path / "unused.json"))
    args[-1] = "-"
    done = _run_with(">/dev/full", *ECEB, *args)
    assert done.returncode == exit_codes.OUTPUT, done.stderr
    assert b"error: output: standard output: cannot be written" in done.stderr, done.stderr
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    report = tmp_path / "report.json"
    done = _run_with(">/dev/full", *ECEB, *evaluate_args(report))
    assert done.returncode == exit_codes.OUTPUT, done.stderr
    assert b"Exception ignored" not in done.stderr
    assert json.loads(report.read_bytes())["summary"]["passing_tasks"] == 8
    report.unlink()
    done = _run_with("2>/dev/full", *ECEB, *evaluate_args(report))
    assert done.returncode == exit_codes.TASKS_FAILED
    assert report.exists()
