"""A paired experiment over the example, made with the real commands, and
the checks every attempt journal must pass.

:class:`PairExperiment` copies examples/paired (so that its benchmark can
be changed), makes the fixture repository (make-repo.sh), installs the fake
codex and runs ``eceb pair freeze``, ``authorize`` and ``prepare`` through
the installed command line. :func:`check_journal` checks one attempt
directory: its files are exactly the journal's, in order, every digest is
right and every record is valid against its published schema.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from jsonschema import Draft202012Validator

from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.journal import JOURNAL_ORDER, Attempt, AttemptStart, Invocation, Request
from eceb_worker.io.paired.ledger import Ledger, LedgerEntry
from tests.support.paths import REPO
from tests.support.provider import PAIRED, example_repository, provider_env

__all__ = ["ECEB", "PairExperiment", "check_journal", "fake_processes", "wait_for"]

ECEB = (sys.executable, "-m", "eceb_cli")

_RECORDS: dict[str, tuple[str, type[msgspec.Struct]]] = {
    "request.json": ("pair-request-v0.1.json", Request),
    "invocation.json": ("pair-invocation-v0.1.json", Invocation),
    "attempt-start.json": ("pair-attempt-start-v0.1.json", AttemptStart),
    "attempt.json": ("pair-attempt-v0.1.json", Attempt),
}


def wait_for(condition: Any, timeout_s: float = 20.0, what: str = "the condition") -> None:
    """Poll ``condition()`` every 20 ms until it is true; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def fake_processes(marker: str) -> list[int]:
    """The live (not zombie) processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(b")") + 2 :][:1] != b"Z":
            found.append(int(entry.name))
    return found


class PairExperiment:
    """An experiment directory under ``root`` (a test's tmp_path) with the
    fake codex on PATH.

    ``benchmark`` changes are applied to the copied benchmark.json (a dict
    merged one level deep, e.g. ``{"provider": {"timeout_s": 1}}``).
    """

    def __init__(self, root: Path, benchmark: dict[str, Any] | None = None) -> None:
        self.root = root
        self.bench = root / "bench"
        shutil.copytree(PAIRED, self.bench, ignore=shutil.ignore_patterns("repo"))
        document = json.loads((self.bench / "benchmark.json").read_text())
        for key, value in (benchmark or {}).items():
            document[key] = {**document[key], **value} if isinstance(value, dict) else value
        (self.bench / "benchmark.json").write_text(json.dumps(document, indent=1))
        self.repo = example_repository(root / "repo")
        self.dir = root / "exp"
        self.log = root / "invocations.jsonl"
        self.bin = root / "bin"
        self._env = provider_env(self.bin, log=self.log)  # installs the fake once

    def env(self, scenario: str | None = None, sleep: float | None = None) -> dict[str, str]:
        """The environment eceb runs with: the fake on PATH, its scenario and log."""
        env = dict(self._env)
        for name, value in (("FAKE_CODEX_SCENARIO", scenario), ("FAKE_CODEX_SLEEP", sleep)):
            if value is not None:
                env[name] = str(value)
        return env

    def eceb(self, *args: str, scenario: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run ``eceb ARGS`` to its end; with ``check`` it must exit 0."""
        done = subprocess.run([*ECEB, *args], capture_output=True, text=True, env=self.env(scenario), check=False)
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def spawn(self, *args: str, scenario: str | None = None, sleep: float | None = None) -> subprocess.Popen[str]:
        """Start ``eceb ARGS`` without waiting."""
        return subprocess.Popen(
            [*ECEB, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(scenario, sleep),
        )

    def freeze(self) -> None:
        self.eceb(
            "pair",
            "freeze",
            str(self.bench / "benchmark.json"),
            "--repo",
            str(self.repo),
            "--into",
            str(self.dir),
            check=True,
        )

    def authorize(self, executions: int | None = None) -> None:
        more = ("--executions", str(executions)) if executions is not None else ()
        self.eceb("pair", "authorize", str(self.dir), "--approver", "a reviewer", *more, check=True)

    def prepare(self, position: int | None = None, *, again: bool = False) -> Path:
        more = ("--pair", str(position)) if position is not None else ()
        more += ("--again",) if again else ()
        done = self.eceb("pair", "prepare", str(self.dir), *more, check=True)
        line = next(line for line in done.stdout.splitlines() if line.startswith("prepared "))
        return Path(line.removeprefix("prepared "))

    def ready(self, executions: int | None = None) -> Path:
        """Freeze, authorize and prepare the pilot: its directory."""
        self.freeze()
        self.authorize(executions)
        return self.prepare()

    def run(self, pair: Path, scenario: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.eceb("pair", "run", str(pair), scenario=scenario)

    def invocations(self) -> list[dict[str, Any]]:
        """What the fake logged: one entry per invocation."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def ledger(self) -> list[LedgerEntry]:
        ledger = Ledger.open(self.dir / "ledger.sqlite")
        try:
            return ledger.entries()
        finally:
            ledger.close()

    def status(self) -> dict[str, Any]:
        done = self.eceb("pair", "status", str(self.dir), "--json", check=True)
        document: dict[str, Any] = json.loads(done.stdout)
        schema = json.loads((REPO / "schema" / "pair-status-v0.1.json").read_text())
        assert list(Draft202012Validator(schema).iter_errors(document)) == []
        return document

    def attempt(self, pair: Path, arm: str) -> Attempt:
        return msgspec.json.decode((pair / "attempts" / arm / "attempt.json").read_bytes(), type=Attempt)


def _validate(path: Path, schema_file: str) -> None:
    schema = json.loads((REPO / "schema" / schema_file).read_text())
    errors = [error.message for error in Draft202012Validator(schema).iter_errors(json.loads(path.read_bytes()))]
    assert errors == [], (path, errors)


def check_journal(attempt: Path, names: Sequence[str] = JOURNAL_ORDER) -> Attempt:
    """Check the complete journal in ``attempt`` (module); its record."""
    assert sorted(p.name for p in attempt.iterdir()) == sorted(names)
    for name, (schema_file, _) in _RECORDS.items():
        _validate(attempt / name, schema_file)
    start = msgspec.json.decode((attempt / "attempt-start.json").read_bytes(), type=AttemptStart)
    record = msgspec.json.decode((attempt / "attempt.json").read_bytes(), type=Attempt)
    assert [f.path for f in start.files] == list(JOURNAL_ORDER[:6])
    assert [f.path for f in record.files] == list(JOURNAL_ORDER[:-1])
    for bound in (*start.files, *record.files):
        data = (attempt / bound.path).read_bytes()
        assert (digest_bytes(data), len(data)) == (bound.blake3, bound.size), bound.path
    digests = {bound.path: bound.blake3 for bound in record.files}
    assert start.request == digests["request.json"] and start.invocation == digests["invocation.json"]
    request = msgspec.json.decode((attempt / "request.json").read_bytes(), type=Request)
    invocation = msgspec.json.decode((attempt / "invocation.json").read_bytes(), type=Invocation)
    assert request.output_schema_digest == digests["answer.schema.json"] == invocation.output_schema.blake3
    assert request.pair_schema_path == "answer.schema.json"
    assert (request.cue, request.prompt) == (digests["cue"], digests["prompt.txt"])
    assert (attempt / "prompt.txt").read_bytes() == (attempt / "submitted-prompt.txt").read_bytes()
    assert invocation.stdin.blake3 == digests["submitted-prompt.txt"]
    schema_at = invocation.argv[invocation.argv.index("--output-schema") + 1]
    assert schema_at == str(attempt / "answer.schema.json") == invocation.output_schema.path
    assert {"PATH", "FAKE_CODEX_LOG"} <= set(invocation.environment)  # names only, never values:
    assert "invocations.jsonl" not in (attempt / "invocation.json").read_text()
    assert record.attempt_id == start.attempt_id == request.attempt_id
    assert record.fingerprint_before == start.fingerprint_before
    return record
