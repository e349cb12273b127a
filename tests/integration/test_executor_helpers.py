"""The embedded executor's helper processes give the same results as one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import InputError
from eceb_worker.executors import InProcessExecutor, helpers, inprocess
from eceb_worker.families.eceb.options import EvaluationOptions
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.pipeline.embedded import evaluate, verify_corpus
from eceb_worker.pipeline.inputs import check_inputs
from eceb_worker.pipeline.register import register_corpus
from tests.integration.test_verify_local import FILES, make_corpus
from tests.support.paths import EXAMPLES, SHARED

RULES = parse_rules(
    b'schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "**"\nkind = "runbook"\nclassification = "internal"\n',
    "rules.toml",
)


@pytest.fixture
def always_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start helper processes for any amount of work."""
    monkeypatch.setattr(inprocess, "HELPER_MIN_WORK_BYTES", 1)


@pytest.mark.usefixtures("always_help")
def test_helpers_verify_like_one_process(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path, FILES)
    (tmp_path / "d1/f4.md").write_bytes(b"tampered")
    (tmp_path / "d2/f5.md").unlink()
    (tmp_path / "d0/f0.md").unlink()
    (tmp_path / "d0/f0.md").symlink_to(tmp_path.parent)
    spec = StorageSpec(source=str(tmp_path))
    alone = verify_corpus(registry, spec, executor=InProcessExecutor(1), shard_bytes=10**12)
    helped = verify_corpus(registry, spec, executor=InProcessExecutor(3), shard_bytes=1)
    assert helped == alone
    assert {f.path: f.status for f in helped.findings} == {
        "d0/f0.md": "outside_corpus",
        "d1/f4.md": "stale",
        "d2/f5.md": "missing",
    }


@pytest.mark.usefixtures("always_help")
def test_helpers_register_like_one_process(tmp_path: Path) -> None:
    make_corpus(tmp_path, FILES)
    spec = StorageSpec(source=str(tmp_path))
    alone = register_corpus(spec, RULES, rules_name="r", executor=InProcessExecutor(1), shard_bytes=10**12)
    helped = register_corpus(spec, RULES, rules_name="r", executor=InProcessExecutor(2), shard_bytes=1)
    assert helped == alone
    assert len(helped.artifacts) == len(FILES)


@pytest.mark.usefixtures("always_help")
def test_helpers_report_a_failing_storage(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path / "corpus", FILES)
    spec = StorageSpec(source=str(tmp_path / "absent"))
    from eceb_worker.errors import StorageError

    with pytest.raises(StorageError, match="absent"):
        verify_corpus(registry, spec, executor=InProcessExecutor(2), shard_bytes=1)


@pytest.mark.usefixtures("always_help")
def test_helpers_run_this_eceb_whatever_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory holding another ``eceb_worker`` (a checkout, a decoy) is
    never put first on a helper's path."""
    decoy = tmp_path / "elsewhere" / "eceb_worker"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the wrong eceb_worker')\n")
    registry = make_corpus(tmp_path / "corpus", FILES)
    monkeypatch.chdir(decoy.parent)
    spec = StorageSpec(source=str(tmp_path / "corpus"))
    assert verify_corpus(registry, spec, executor=InProcessExecutor(2), shard_bytes=1).ok


EXAMPLE_CORPORA = {
    EXAMPLES / "enterprise-seed": EXAMPLES / "enterprise-seed" / "corpus",
    EXAMPLES / "public-eng-mix": SHARED / "corpora" / "public-eng-mix" / "files",
}


def _report(
    example: Path, workers: int, shard_observations: int, run: Path | None = None, shard_bytes: int = 64 << 20
) -> bytes:
    inputs = check_inputs(example / "benchmark.json", run or example / "run.json")
    spec = StorageSpec(source=str(EXAMPLE_CORPORA[example]))
    executor = InProcessExecutor(workers)
    evaluation = EvaluationOptions(shard_observations=shard_observations)
    report, _ = evaluate(inputs, spec, executor=executor, evaluation=evaluation, shard_bytes=shard_bytes)
    return encode_report(report)


@pytest.mark.usefixtures("always_help")
@pytest.mark.parametrize("example", sorted(EXAMPLE_CORPORA), ids=lambda p: p.name)
@pytest.mark.parametrize(("workers", "shard_observations"), [(2, 1), (3, 7), (2, 40)])
def test_helpers_evaluate_like_one_process(
    example: Path, workers: int, shard_observations: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evaluation shards detached to helper processes give the report's very bytes."""
    alone = _report(example, 1, 10**9)
    sent: list[str] = []
    send = helpers.HelperProcess.send

    def counting(self: helpers.HelperProcess, request: object) -> None:
        sent.append(type(request).__name__)
        send(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(helpers.HelperProcess, "send", counting)
    assert _report(example, workers, shard_observations) == alone
    assert "DetachedEvaluation" in sent


@pytest.mark.usefixtures("always_help")
@pytest.mark.parametrize("example", sorted(EXAMPLE_CORPORA), ids=lambda p: p.name)
def test_helpers_scan_for_disclosures_like_one_process(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-hash shards that scan for disclosures, detached to helper
    processes (what they scan for lent once each), give the report's very bytes."""
    alone = _report(example, 1, 10**9)
    sent: list[tuple[str, bool]] = []
    send = helpers.HelperProcess.send

    def counting(self: helpers.HelperProcess, request: object) -> None:
        sent.append((type(request).__name__, getattr(request, "spec", None) is not None))
        send(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(helpers.HelperProcess, "send", counting)
    assert _report(example, 3, 10**9, shard_bytes=4096) == alone
    rehashes = [lent for kind, lent in sent if kind == "DetachedRehash"]
    assert rehashes.count(True) == 2 and len(rehashes) > 2


@pytest.mark.usefixtures("always_help")
def test_helpers_find_every_record_problem_like_one_process(tmp_path: Path) -> None:
    """A run whose records have problems (found only while they are
    evaluated) gives the same problems, in record order, whichever process
    evaluated which task: a wrong type, a repeated key, an unknown task."""
    example = EXAMPLES / "enterprise-seed"
    text = (example / "run.json").read_text()
    run = json.loads(text)
    observations = run["observations"]
    observations[3]["input_tokens"] = "many"
    observations[40]["task_id"] = "no-such-task"
    run_path = tmp_path / "run.json"
    data = json.dumps(run, indent=1)
    # A key given twice in the last observation: json.dumps cannot write it.
    last = data.rindex('"task_id"')
    data = data[:last] + '"answer": "again", ' + data[last:]
    run_path.write_text(data)

    def problems(workers: int, shard_observations: int) -> list[str]:
        with pytest.raises(InputError) as caught:
            _report(example, workers, shard_observations, run=run_path)
        return [str(p) for p in caught.value.problems]

    alone = problems(1, 10**9)
    assert len(alone) >= 3
    assert problems(2, 1) == alone
    assert problems(3, 5) == alone


def test_a_helper_killed_from_outside_is_a_shard_that_did_not_complete() -> None:
    """A helper that dies (the OOM killer, an operator's kill) is a failed
    shard (exit 5), never an internal error."""
    from eceb_worker.errors import ShardFailedError
    from eceb_worker.pipeline.messages import HashTask

    helper = helpers.HelperProcess()
    helper._process.kill()
    helper._process.wait()
    with pytest.raises(ShardFailedError, match="killed by signal 9"):
        helper.send(HashTask(corpus=StorageSpec(source="."), index=0, paths=()))
    with pytest.raises(ShardFailedError, match="killed by signal 9"):
        helper.answer()
    helper.close()
