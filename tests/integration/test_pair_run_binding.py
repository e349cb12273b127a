"""``eceb pair run`` runs only what was frozen, through the installed
command line with the fake codex: a manifest changed by hand and written
again canonically (so that it agrees with itself) is bad input naming
manifest.json and the field; a ledger whose authorized count is not
authorization.json's is refused; a provider whose ``--version`` changed
since the freeze (its bytes the same) is refused before any start."""

from __future__ import annotations

import shlex
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.journal import AttemptStatus
from eceb_worker.families.paired.records import ArmCommand, FileDigest, Manifest, PairPosition
from eceb_worker.families.paired.schedule import Arm, plan
from tests.support.pair_experiment import PairExperiment, check_journal
from tests.support.provider import FAKE_CODEX

Change = Callable[[Manifest, Path], Manifest]


@pytest.fixture
def experiment(tmp_path: Path) -> PairExperiment:
    return PairExperiment(tmp_path)


def _rewrite(pair: Path, change: Change, tmp_path: Path) -> None:
    """Change the pair's manifest and write it back as canonical JSON (it still passes ``read_record``)."""
    path = pair / "manifest.json"
    manifest = msgspec.json.decode(path.read_bytes(), type=Manifest)
    path.write_bytes(canonical_json(change(manifest, tmp_path)))


def _option(arm: ArmCommand, flag: str, value: str) -> tuple[str, ...]:
    argv = list(arm.argv)
    argv[argv.index(flag) + 1] = value
    return tuple(argv)


def _both(manifest: Manifest, change: Callable[[ArmCommand], ArmCommand]) -> Manifest:
    first, second = manifest.arms
    return msgspec.structs.replace(manifest, arms=(change(first), change(second)))


def _model(manifest: Manifest, _: Path) -> Manifest:
    def change(arm: ArmCommand) -> ArmCommand:
        inputs = msgspec.structs.replace(arm.inputs, model="gpt-5.1-codex-max")
        return msgspec.structs.replace(arm, inputs=inputs, argv=_option(arm, "-m", "gpt-5.1-codex-max"))

    return _both(manifest, change)


def _reasoning(manifest: Manifest, _: Path) -> Manifest:
    def change(arm: ArmCommand) -> ArmCommand:
        inputs = msgspec.structs.replace(arm.inputs, reasoning_effort="xhigh")
        argv = _option(arm, "-c", 'model_reasoning_effort="xhigh"')
        return msgspec.structs.replace(arm, inputs=inputs, argv=argv)

    return _both(manifest, change)


def _repository(manifest: Manifest, tmp_path: Path) -> Manifest:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return _both(manifest, lambda arm: msgspec.structs.replace(arm, argv=_option(arm, "-C", str(elsewhere))))


def _unbound_task(manifest: Manifest, _: Path) -> Manifest:
    return msgspec.structs.replace(manifest, files=tuple(f for f in manifest.files if f.path != "task.json"))


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (_model, "inputs.model", "is 'gpt-5.1-codex-max'; the freeze has"),
        (_reasoning, "inputs.reasoning_effort", "is 'xhigh'; the freeze has"),
        (_repository, "argv", "is not the command line the freeze gives this arm"),
        (_unbound_task, "", "does not list task.json, which every pair prepared under this freeze retains"),
    ],
    ids=["model", "reasoning-effort", "repository", "task-unbound"],
)
def test_a_manifest_changed_by_hand_is_bad_input_and_nothing_runs(
    experiment: PairExperiment, tmp_path: Path, change: Change, field: str, message: str
) -> None:
    pair = experiment.ready()
    _rewrite(pair, change, tmp_path)
    done = experiment.run(pair)
    assert done.returncode == 3, done.stderr
    shown = f" field {field!r}:" if field else ":"
    lines = [line for line in done.stderr.splitlines() if line.startswith(f"error: {pair / 'manifest.json'}, ")]
    assert any(shown in line and message in line for line in lines), done.stderr
    _nothing_ran(experiment, pair)


def _replace_context(pair: Path, replaced: Arm, context: bytes) -> None:
    """Replace an arm's context and rewrite the manifest to bind it (digest, size, token estimate)."""
    (pair / "arms" / replaced.value / "context").write_bytes(context)
    bound = FileDigest(path=f"arms/{replaced.value}/context", blake3=digest_bytes(context), size=len(context))

    def change(manifest: Manifest, _: Path) -> Manifest:
        files = tuple(bound if f.path == bound.path else f for f in manifest.files)
        arms = tuple(
            msgspec.structs.replace(arm, context=bound, context_tokens=-(-len(context) // 4))
            if arm.arm is replaced
            else arm
            for arm in manifest.arms
        )
        return msgspec.structs.replace(manifest, files=files, arms=(arms[0], arms[1]))

    _rewrite(pair, change, pair)


def _nothing_ran(experiment: PairExperiment, pair: Path) -> None:
    assert experiment.invocations() == [] and experiment.ledger() == []
    assert not (pair / "attempts").exists()


def test_an_overview_replaced_with_its_manifest_entry_is_bad_input(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    context = b"# Another overview\n\nNot the frozen one.\n"
    _replace_context(pair, Arm.A, context)
    done = experiment.run(pair)
    assert done.returncode == 3, done.stderr
    assert "field 'blake3': binds arms/A/context as BLAKE3" in done.stderr
    assert "arms[0]: field 'context': is not the frozen overview" in done.stderr
    _nothing_ran(experiment, pair)


def test_a_directory_whose_manifest_claims_another_pair_is_bad_input(experiment: PairExperiment) -> None:
    """Pair 4's directory (explanation, repeat 2, B/A) rewritten to claim the
    pilot (pair 1, A/B): the directory's name says which pair it is."""
    experiment.ready()
    pair = experiment.prepare(4)
    pilot = plan().pairs[0]

    def change(manifest: Manifest, _: Path) -> Manifest:
        claimed = PairPosition(position=1, task=pilot.task, repeat=1, order=pilot.order, pilot=True)
        second, first = manifest.arms
        return msgspec.structs.replace(manifest, pair=claimed, arms=(first, second))

    _rewrite(pair, change, pair)
    done = experiment.run(pair)
    assert done.returncode == 3, done.stderr
    where = f"error: {pair / 'manifest.json'}, pair: field"
    assert f"{where} 'position': is 1; the schedule's pair 4 (the directory's) has 4" in done.stderr
    assert f"{where} 'pilot': is True; the schedule's pair 4 (the directory's) has False" in done.stderr
    assert "field 'arm': is A; the schedule runs arm B here" in done.stderr
    _nothing_ran(experiment, pair)


def test_a_ledger_whose_authorized_count_is_not_the_authorizations_is_refused(experiment: PairExperiment) -> None:
    pair = experiment.ready(executions=2)
    ledger = experiment.dir / "ledger.sqlite"
    with sqlite3.connect(ledger) as db:
        db.execute("UPDATE ledger SET authorized_executions = 18")
    db.close()
    done = experiment.run(pair)
    assert done.returncode == 9, done.stderr
    assert f"refused: the ledger {ledger} holds 18 authorized executions" in done.stderr
    assert f"{experiment.dir / 'authorization.json'} authorizes 2" in done.stderr
    _nothing_ran(experiment, pair)


def _versioned_provider(experiment: PairExperiment) -> tuple[Path, Path]:
    """Replace the fake codex by a wrapper whose ``--version`` prints the
    file ``version`` (which the test edits; the wrapper's bytes never
    change) and which, after each ``exec``, copies ``next-version`` over it
    when that file exists. Returns both files."""
    version, upcoming = experiment.root / "version", experiment.root / "next-version"
    shown, next_shown = shlex.quote(str(version)), shlex.quote(str(upcoming))
    version.write_text("codex-cli 0.171.0-fake\n")
    script = (
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then exec cat {shown}; fi\n'
        'FAKE_CODEX_ARGV0="$0"\n'
        "export FAKE_CODEX_ARGV0\n"
        f'{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_CODEX))} "$@"\n'
        "status=$?\n"
        f"if [ -f {next_shown} ]; then cp {next_shown} {shown}; fi\n"
        'exit "$status"\n'
    )
    codex = experiment.bin / "codex"
    codex.write_text(script)
    codex.chmod(0o755)
    return version, upcoming


def test_a_provider_whose_version_changed_since_the_freeze_is_refused(experiment: PairExperiment) -> None:
    version, _ = _versioned_provider(experiment)
    pair = experiment.ready()
    codex = (experiment.bin / "codex").read_bytes()
    version.write_text("codex-cli 0.172.0\n")
    done = experiment.run(pair)
    assert done.returncode == 9, done.stderr
    assert "--version prints 'codex-cli 0.172.0', the freeze holds 'codex-cli 0.171.0-fake'" in done.stderr
    assert (experiment.bin / "codex").read_bytes() == codex
    _nothing_ran(experiment, pair)
    version.unlink()
    failing = experiment.run(pair)
    assert failing.returncode == 9, failing.stderr
    assert "the frozen provider's version cannot be asked again:" in failing.stderr
    assert "--version exited with 1" in failing.stderr
    _nothing_ran(experiment, pair)


def test_a_version_changed_by_the_first_arm_leaves_the_second_unstarted(experiment: PairExperiment) -> None:
    _, upcoming = _versioned_provider(experiment)
    pair = experiment.ready()
    upcoming.write_text("codex-cli 0.172.0\n")
    done = experiment.run(pair)
    assert "pair 1: no further arm starts: refused: the provider at" in done.stderr, done.stderr
    assert "--version prints 'codex-cli 0.172.0'" in done.stderr
    assert check_journal(pair / "attempts" / "A").status is AttemptStatus.COMPLETED
    assert not (pair / "attempts" / "B").exists()
    assert [call["arm"] for call in experiment.invocations()] == ["A"]
    assert [(entry.arm, entry.outcome) for entry in experiment.ledger()] == [("A", "completed")]


@pytest.mark.parametrize("size", [300, 17_000], ids=["within-the-budget", "over-the-budget"])
def test_a_cue_replaced_with_its_manifest_entry_is_bad_input(experiment: PairExperiment, size: int) -> None:
    """Arm B's context must still be a task cue of the pair's task within the
    common budget when the pair runs, whatever the manifest says of it."""
    pair = experiment.ready()
    context = b"x" * size
    _replace_context(pair, Arm.B, context)
    done = experiment.run(pair)
    assert done.returncode == 3, done.stderr
    assert "the cue is not a JSON document" in done.stderr
    if size > 4800:
        assert "arm B's context estimates 4250 tokens" in done.stderr
    _nothing_ran(experiment, pair)


def test_attempts_on_disk_that_the_ledger_does_not_hold_stop_every_start(experiment: PairExperiment) -> None:
    """A ledger whose rows were deleted (or restored from before the
    attempts) would let the pilot run again: the journals on disk say
    otherwise, and nothing starts."""
    pilot = experiment.ready()
    assert experiment.run(pilot).returncode == 0
    with sqlite3.connect(experiment.dir / "ledger.sqlite") as db:
        db.execute("DELETE FROM executions")
    db.close()
    again = experiment.prepare(1, again=True)
    done = experiment.run(again)
    assert done.returncode == 9, done.stdout + done.stderr
    assert "the attempt started, and the ledger" in done.stderr and "does not hold it" in done.stderr
    assert len(experiment.invocations()) == 2 and not (again / "attempts").exists()
