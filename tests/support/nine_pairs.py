"""Paired experiments run to their end with the real commands, for the tests
of ``eceb pair summary``.

:func:`run_pairs` freezes the bundled example (examples/paired) through the
installed command line, runs the pilot with the fake codex, approves the
continuation and prepares and runs the next pairs of the schedule, each
with its own fake scenario if asked; the benchmark's rates can be changed
before the freeze. :func:`nine_pairs` is the clean run of all nine pairs,
built once per test process under pytest's base temporary directory, with
a pristine copy of its experiment directory that :func:`restore` puts
back. The records of a run hold absolute paths (the manifests' command
lines, ``invocation.json``, the freeze's repository), so a run cannot be
copied elsewhere and still be the same evidence: a test that changes a
file changes it in place and restores the experiment directory after.

:func:`summary_cli` runs ``eceb pair summary`` and decodes its ``-o``
document, validated against schema/pair-summary-v0.1.json;
:func:`write_assessments` writes an assessment bundle
(repocue/task-evaluation-1, kind assessments, synthetic) binding every
explanation attempt of a summary from its ``binding``; :func:`rebind`
replaces files of an attempt's journal and rebinds them in
``attempt-start.json`` and ``attempt.json`` so that only the change itself
shows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.journal import Attempt, AttemptStart, Invocation
from eceb_worker.families.paired.records import FileDigest
from tests.support.pair_experiment import PairExperiment
from tests.support.paths import REPO

__all__ = [
    "PairsRun",
    "Summarized",
    "attempts_of",
    "invocation_of",
    "nine_pairs",
    "rebind",
    "restore",
    "run_pairs",
    "summary_cli",
    "validate_summary",
    "write_assessments",
]

SUMMARY_VALIDATOR = Draft202012Validator(json.loads((REPO / "schema" / "pair-summary-v0.1.json").read_text()))


@dataclass(frozen=True)
class PairsRun:
    """A paired experiment whose pairs ran: ``experiment`` (its root, bench,
    repository and fake codex), ``pairs`` (the task-pair directories by
    position), ``pristine`` (a copy of the experiment directory as the run
    left it, or ``None``) and ``bundle`` (accurate assessments of every
    explanation attempt, or ``None``)."""

    experiment: PairExperiment
    pairs: tuple[Path, ...]
    pristine: Path | None = None
    bundle: Path | None = None

    @property
    def dir(self) -> Path:
        """The experiment directory."""
        return self.experiment.dir

    def pair(self, position: int) -> Path:
        """The task-pair directory of schedule position ``position``."""
        return self.pairs[position - 1]


@dataclass(frozen=True)
class Summarized:
    """One ``eceb pair summary`` run: its process and its ``-o`` document (and bytes)."""

    done: subprocess.CompletedProcess[str]
    document: dict[str, Any]
    data: bytes


def run_pairs(
    root: Path,
    *,
    count: int = 9,
    scenarios: Mapping[int, str] | None = None,
    rates: Mapping[str, Any] | None = None,
) -> PairsRun:
    """Freeze the example into ``root``, run the pilot and, after approving
    the continuation, the next ``count - 1`` pairs of the schedule.
    ``scenarios``: the fake's ``FAKE_CODEX_SCENARIO`` by pair position;
    ``rates``: fields replacing those of the example's one rate snapshot
    before the freeze."""
    root.mkdir(parents=True, exist_ok=True)
    experiment = PairExperiment(root)
    if rates is not None:
        document = json.loads((experiment.bench / "rates.json").read_text())
        document["rates"][0].update(rates)
        (experiment.bench / "rates.json").write_text(json.dumps(document, indent=1))
    chosen = scenarios or {}
    pairs = [experiment.ready()]
    _run(experiment, pairs[0], chosen.get(1))
    if count > 1:
        experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    for position in range(2, count + 1):
        pairs.append(experiment.prepare())
        _run(experiment, pairs[-1], chosen.get(position))
    return PairsRun(experiment=experiment, pairs=tuple(pairs))


def _run(experiment: PairExperiment, pair: Path, scenario: str | None) -> None:
    done = experiment.run(pair, scenario=scenario)
    assert done.returncode in (0, 1), (pair, done.stdout, done.stderr)
    for arm in ("A", "B"):
        assert (pair / "attempts" / arm / "attempt.json").is_file(), (pair, arm, done.stderr)


_BUILT: dict[Path, PairsRun] = {}


def nine_pairs(factory: pytest.TempPathFactory) -> PairsRun:
    """The clean run of all nine pairs, built once per test process (under
    ``factory``'s base directory), with its pristine copy and a bundle of
    accurate assessments of its six explanation attempts."""
    base = factory.getbasetemp() / "nine-pairs"
    if base not in _BUILT:
        built = run_pairs(base / "run")
        pristine = base / "pristine"
        shutil.copytree(built.dir, pristine, symlinks=True)
        document = summary_cli(built.experiment, str(built.dir), out=base / "unassessed.json").document
        bundle = write_assessments(document, base / "accurate.json")
        _BUILT[base] = PairsRun(experiment=built.experiment, pairs=built.pairs, pristine=pristine, bundle=bundle)
    return _BUILT[base]


def restore(run: PairsRun) -> None:
    """Put ``run``'s experiment directory back as the run left it."""
    assert run.pristine is not None
    shutil.rmtree(run.dir)
    shutil.copytree(run.pristine, run.dir, symlinks=True)


def validate_summary(document: Any) -> None:
    """Fail unless ``document`` is valid against schema/pair-summary-v0.1.json."""
    errors = [f"{list(error.absolute_path)}: {error.message}" for error in SUMMARY_VALIDATOR.iter_errors(document)]
    assert errors == [], errors


def summary_cli(experiment: PairExperiment, *args: str, out: Path) -> Summarized:
    """``eceb pair summary ARGS -o OUT`` through the installed command line;
    the document it wrote, validated against its schema."""
    done = experiment.eceb("pair", "summary", *args, "-o", str(out))
    assert done.returncode in (0, 1), (args, done.returncode, done.stdout, done.stderr)
    data = out.read_bytes()
    document = json.loads(data)
    validate_summary(document)
    assert data == canonical_json(document) + b"\n", "the document is canonical JSON"
    return Summarized(done=done, document=document, data=data)


def attempts_of(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every attempt of a summary document by its id."""
    return {arm["attempt_id"]: arm for pair in document["pairs"] for arm in pair["arms"]}


def write_assessments(
    document: Mapping[str, Any],
    path: Path,
    *,
    accurate: bool | Mapping[str, bool] = True,
    changes: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Write to ``path`` a synthetic assessment bundle binding every attempt
    of the summary ``document`` that has a ``binding`` (the explanation
    attempts with an answer); ``accurate``: the judgment, for all or by
    attempt id (default true); ``changes``: bound fields replaced, by attempt id."""
    assessments = []
    for attempt_id, attempt in sorted(attempts_of(document).items()):
        binding = attempt["binding"]
        if binding is None:
            continue
        judged = accurate if isinstance(accurate, bool) else accurate.get(attempt_id, True)
        assessment = {**binding, "accurate": judged, "notes": "synthetic judgment: verifies software handling only"}
        assessment.update((changes or {}).get(attempt_id, {}))
        assessments.append(assessment)
    bundle = {"schema": "repocue/task-evaluation-1", "kind": "assessments", "synthetic": True}
    path.write_text(json.dumps({**bundle, "assessments": assessments}, indent=1))
    return path


def _rebound(files: tuple[FileDigest, ...], attempt: Path) -> tuple[FileDigest, ...]:
    shown = []
    for bound in files:
        data = (attempt / bound.path).read_bytes()
        shown.append(msgspec.structs.replace(bound, blake3=digest_bytes(data), size=len(data)))
    return tuple(shown)


def rebind(attempt: Path, changed: Mapping[str, bytes]) -> None:
    """Replace the files ``changed`` (name -> bytes) of the journal in
    ``attempt`` and rebind what binds them: ``attempt-start.json`` (the
    request's and invocation's digests, its files) and then ``attempt.json``
    (its files), both rewritten as canonical JSON."""
    for name, data in changed.items():
        (attempt / name).write_bytes(data)
    start = msgspec.json.decode((attempt / "attempt-start.json").read_bytes(), type=AttemptStart)
    start = msgspec.structs.replace(
        start,
        request=digest_bytes((attempt / "request.json").read_bytes()),
        invocation=digest_bytes((attempt / "invocation.json").read_bytes()),
        files=_rebound(start.files, attempt),
    )
    (attempt / "attempt-start.json").write_bytes(canonical_json(start))
    record = msgspec.json.decode((attempt / "attempt.json").read_bytes(), type=Attempt)
    record = msgspec.structs.replace(record, files=_rebound(record.files, attempt))
    (attempt / "attempt.json").write_bytes(canonical_json(record))


def invocation_of(attempt: Path) -> Invocation:
    """The attempt's ``invocation.json``."""
    return msgspec.json.decode((attempt / "invocation.json").read_bytes(), type=Invocation)
