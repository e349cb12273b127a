"""The README's walkthrough of ``eceb run`` ("Make a run"), run as written in
one shell from a copy of ``examples/run``: the loopback provider started in
the background, ``eceb validate``, ``eceb run --dry-run``, ``eceb run``, the
refusal to start over an existing journal, ``--resume``, ``eceb evaluate``
and ``eceb render --html``, then the provider stopped.

What changes: the port (a free loopback port in place of 8765, in the block
and in the copied profile's base URLs), the directory (``/tmp/eceb-run``
moved under a temporary directory), and the activation of the virtual
environment, left out: this interpreter's directory is first on ``PATH``, so
``eceb`` and the ``python`` the example's context system runs with are this
environment's. The copy sits in a checkout-like tree whose ``../shared`` is
the real one, so the profile's and the block's relative corpus paths hold.
The test adds one line before the last: it saves the provider's counters,
which show that nothing was sent twice. Each line must exit as its comment
says (``# exit N``; 0 when it says nothing).

The README's figures are checked too: the ``--dry-run`` output it shows, the
real-model profile's dry-run figures, the verdict and each task's minimum
viable budget.
"""

from __future__ import annotations

import contextlib
import json
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

from tests.support.paths import EXAMPLES, REPO, SHARED

pytestmark = pytest.mark.integration

HEADING = "### Walkthrough: the example run on a loopback provider"
DIRECTORY = "/tmp/eceb-run"
PORT = "8765"
ACTIVATE = ". .venv/bin/activate"
CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"
RUN_TIMEOUT_S = 600
STOP_TIMEOUT_S = 30
COMMAND_TIMEOUT_S = 300
MINIMUM_VIABLE_BUDGETS = {
    "etcd-db-quota-low-space": 8000,
    "k8s-security-fix-timeline": 8000,
    "cncf-dependency-licenses": 4000,
    "droplet-graceful-shutdown": 4000,
}
DENIED = "policy/kubernetes-security-response/private-distributors-list.md"


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def _section() -> str:
    text = _readme()
    section = text[text.index(HEADING) :]
    return section[: section.index("\n### ", len(HEADING))]


def walkthrough() -> list[str]:
    """The command lines of the walkthrough block, blank lines left out."""
    section = _section()
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("\n```", start)]
    return [line for line in block.splitlines() if line.strip()]


def shown_dry_run() -> list[str]:
    """The lines of the ``--dry-run`` output the walkthrough shows."""
    section = _section()
    start = section.index("```text\n") + len("```text\n")
    return section[start : section.index("\n```", start)].splitlines()


def _free_port() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _expected_exit(line: str) -> int:
    wanted = re.search(r"exit (\d+)", line.partition("#")[2])
    return int(wanted.group(1)) if wanted else 0


def _script(lines: list[str], stats_line: str) -> str:
    """The lines, each followed by a check of its exit status (a failed check
    stops the block's background jobs and exits 97 naming the line), with
    ``stats_line`` before the last one."""
    checked = []
    for number, line in enumerate(lines, start=1):
        if number == len(lines):
            checked.append(stats_line)
        wanted = _expected_exit(line)
        checked += [
            line,
            f'rc=$?; if [ "$rc" -ne {wanted} ]; then echo "walk-through line {number} exited $rc, expected {wanted}"'
            " >&2; kill $(jobs -p) 2>/dev/null; exit 97; fi",
        ]
    return "\n".join(checked) + "\n"


def _environment() -> dict[str, str]:
    """The caller's environment without eceb's settings or provider keys, this interpreter first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ECEB_", "OPENAI_", "ANTHROPIC_")) and k != "VIRTUAL_ENV"
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _checkout(root: Path, port: str) -> Path:
    """``root/checkout/examples/run`` (a copy, its profile's port changed) and
    ``root/shared`` (the real one); returns the checkout."""
    checkout = root / "checkout"
    example = checkout / "examples" / "run"
    shutil.copytree(EXAMPLES / "run", example, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "shared").symlink_to(SHARED, target_is_directory=True)
    profile = example / "profile.json"
    text = profile.read_text(encoding="utf-8")
    assert text.count(f'"http://127.0.0.1:{PORT}/v1"') == 2, "the model's and the judge's base URL"
    profile.write_text(text.replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}"), encoding="utf-8")
    return checkout


def _run_block(script: str, checkout: Path, logs: Path) -> tuple[int, str, str]:
    stdout_path, stderr_path = logs / "stdout", logs / "stderr"
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", script],
            cwd=checkout,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        returncode = shell.wait(timeout=RUN_TIMEOUT_S)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _group_alive(shell.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(shell.pid), "the walk-through left processes running"
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(shell.pid, signal.SIGKILL)
    return returncode, stdout_path.read_text(encoding="utf-8"), stderr_path.read_text(encoding="utf-8")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _key(lines: list[str]) -> str:
    """The credential the block exports (``ECEB_LOOPBACK_KEY``)."""
    line = next(line for line in lines if line.startswith("export ECEB_LOOPBACK_KEY="))
    return line.partition("=")[2].split("#")[0].strip().strip('"')


def _require_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"the real corpus is missing: put public-eng-mix in {CORPUS.parent} (see README, Set-up)")


def test_the_readme_walkthrough_makes_resumes_evaluates_and_renders_the_example_run(tmp_path: Path) -> None:
    _require_corpus()
    lines = walkthrough()
    text = "\n".join(lines)
    assert lines[0].startswith(ACTIVATE)
    assert lines[-1].startswith("kill ")
    for needle in (PORT, DIRECTORY, "--dry-run", "--resume", "eceb evaluate", "eceb render", "--html"):
        assert needle in text, needle
    key = _key(lines)

    port = _free_port()
    checkout = _checkout(tmp_path, port)
    directory = tmp_path / "eceb-run"
    stats_line = (
        'python -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('
        f"'http://127.0.0.1:{PORT}/_stats', timeout=60).read().decode())\" > {DIRECTORY}/stats.json"
    )
    script = _script(lines[1:], stats_line)
    script = re.sub(rf"\b{PORT}\b", port, script).replace(DIRECTORY, str(directory))

    returncode, out, err = _run_block(script, checkout, tmp_path)
    assert returncode == 0, (out, err)

    # The dry run prints what the README shows.
    for shown in shown_dry_run():
        assert shown in out.splitlines(), (shown, out)
    # The run, its transcripts and judgments, and its journal; made once, written again by --resume.
    for name in ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl", "run.journal"):
        assert (directory / name).is_file(), name
    assert (out + err).count("72/72 executions made, 0 failed") == 2, (out, err)
    assert "a run journal is already here: --resume goes on with it" in err
    stats = json.loads((directory / "stats.json").read_text(encoding="utf-8"))
    assert stats["total"] == stats["answered"] == 144, stats  # 72 answers, 72 judgments: nothing sent twice
    assert stats["unauthorized"] == 0, stats
    assert "unmatched" not in stats["rules"], stats  # every request met its task's rule

    run = json.loads((directory / "run.json").read_text(encoding="utf-8"))
    assert run["non_empirical"] is True
    assert run["claim_class"] == "public_reproduction"
    assert len(run["observations"]) == 72
    selected = {a["artifact_id"] for o in run["observations"] for a in o["selected_artifacts"]}
    assert DENIED not in selected

    # Evaluated: every task passes, at the minimum viable budgets the README names.
    assert "4/4 tasks pass" in out + err
    report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    assert {t["task_id"]: t["minimum_viable_budget"] for t in report["tasks"]} == MINIMUM_VIABLE_BUDGETS
    assert all(t["passed"] for t in report["tasks"])
    section = _section()
    for task_id, budget in MINIMUM_VIABLE_BUDGETS.items():
        assert f"`{task_id}`" in section, task_id
        assert f"{budget:,}" in section, budget
    page = (directory / "report.html").read_text(encoding="utf-8")
    assert "NON-EMPIRICAL" in page

    # The credential is in no output.
    assert key not in out + err
    for path in directory.iterdir():
        assert key.encode() not in path.read_bytes(), path.name


def test_the_example_profiles_validate() -> None:
    for name in ("profile.json", "profile-openai.json"):
        done = subprocess.run(
            [sys.executable, "-m", "eceb_cli", "validate", str(EXAMPLES / "run" / name)],
            env=_environment(),
            capture_output=True,
            text=True,
            check=False,
            timeout=COMMAND_TIMEOUT_S,
        )
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        assert "valid run-profile" in done.stdout


def test_the_real_model_dry_run_figures_are_the_readme_s() -> None:
    _require_corpus()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "run",
            str(EXAMPLES / "run" / "benchmark.json"),
            str(EXAMPLES / "run" / "profile-openai.json"),
            "--corpus",
            str(CORPUS),
            "--dry-run",
        ],
        env=_environment(),  # no OPENAI_API_KEY: a dry run reads no credential and calls nothing
        capture_output=True,
        text=True,
        check=False,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "paid calls: 144 (answers and LLM judgments)" in done.stdout
    assert "tokens at most: 1,639,450 input (estimated), 79,200 output" in done.stdout
    assert "spend at most: $0.782518 " in done.stdout
    readme = _readme()
    assert "at most 1,639,450 input and 79,200 output\ntokens, and a spend of at most $0.782518" in readme
    example = (EXAMPLES / "run" / "README.md").read_text(encoding="utf-8")
    assert "| 1,639,450 | 79,200 | $0.782518 |" in example
    assert "| 871,450 | 79,200 | $0.475318 |" in example
