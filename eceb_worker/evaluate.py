"""The evaluation job (ECEB-0.1): load and check a benchmark, its registry and
a run; verify the corpus; evaluate every task; reduce to one report.

Wires the pure engine to storage and an executor. Nothing is written here:
the caller writes the report (atomically).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from eceb_worker import __version__
from eceb_worker.corpus import load_registry, verify_corpus
from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Benchmark, Task, task_root
from eceb_worker.engine.checks import benchmark_problems, run_problems
from eceb_worker.engine.documents import decode_document
from eceb_worker.engine.evaluation import TaskEvidence, TaskResult, evaluate_task
from eceb_worker.engine.registry import Registry
from eceb_worker.engine.report import Report, ReportInputs, reduce_report, run_digest
from eceb_worker.engine.run import AuxiliaryCost, Configuration, FactorialExperiment, Observation, Run
from eceb_worker.engine.verification import ShardVerification, VerificationReport
from eceb_worker.errors import InputError, Problem, VerificationError
from eceb_worker.executors.inprocess import ShardExecutor
from eceb_worker.files import read_input
from eceb_worker.storage import StorageSpec

__all__ = [
    "EvaluationInputs",
    "check_benchmark",
    "evaluate",
    "evaluate_tasks",
    "load_benchmark",
    "load_inputs",
    "load_run",
    "partition_evidence",
]


class EvaluationInputs(msgspec.Struct, frozen=True, kw_only=True):
    """A benchmark, its registry and a run, each checked against the others."""

    benchmark: Benchmark
    registry: Registry
    run: Run


def load_benchmark(path: Path) -> Benchmark:
    """Decode a benchmark file; raises :class:`InputError` with every schema problem."""
    return decode_document(read_input(path), Benchmark, "benchmark-v0.1.json", file=str(path))


def load_run(path: Path) -> Run:
    """Decode a run file; raises :class:`InputError` with every schema problem
    (observations and auxiliary costs are checked one by one)."""
    return decode_document(
        read_input(path),
        Run,
        "run-v0.1.json",
        file=str(path),
        item_fields={"observations": Observation, "auxiliary_costs": AuxiliaryCost},
    )


def registry_path(benchmark: Benchmark, benchmark_path: Path) -> Path:
    """The registry file a benchmark names, relative to the benchmark's directory."""
    return benchmark_path.parent / benchmark.registry.path


def _benchmark_with_registry(path: Path, problems: list[Problem]) -> tuple[Benchmark | None, Registry | None]:
    """Load a benchmark and its registry, appending every problem to ``problems``."""
    benchmark = registry = None
    try:
        benchmark = load_benchmark(path)
    except InputError as exc:
        problems.extend(exc.problems)
        return None, None
    try:
        registry = load_registry(registry_path(benchmark, path))
    except InputError as exc:
        problems.extend(exc.problems)
        problems.extend(benchmark_problems(benchmark, None, None, file=str(path)))
        return benchmark, None
    artifacts = {a.artifact_id: a for a in registry.artifacts}
    problems.extend(benchmark_problems(benchmark, artifacts, registry.corpus_root, file=str(path)))
    return benchmark, registry


def check_benchmark(path: Path) -> tuple[Benchmark, Registry]:
    """Load a benchmark and its registry and check them together (ECEB-0.1 §6).

    Raises :class:`InputError` holding every problem of both files.
    """
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(path, problems)
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None
    return benchmark, registry


def load_inputs(benchmark_path: Path, run_path: Path) -> EvaluationInputs:
    """Load the benchmark, its registry and the run, and check them together.

    Raises :class:`InputError` holding every problem of all three files (each
    problem names its file), before any corpus byte is read.
    """
    problems: list[Problem] = []
    benchmark, registry = _benchmark_with_registry(benchmark_path, problems)
    run = None
    try:
        run = load_run(run_path)
    except InputError as exc:
        problems.extend(exc.problems)
    if benchmark is not None and registry is not None and run is not None:
        problems.extend(run_problems(run, benchmark, registry.corpus_root, file=str(run_path)))
    if problems:
        raise InputError(problems)
    assert benchmark is not None and registry is not None and run is not None
    return EvaluationInputs(benchmark=benchmark, registry=registry, run=run)


def partition_evidence(run: Run) -> dict[str, TaskEvidence]:
    """Split a run's observations and auxiliary costs by task id."""
    observations: dict[str, list[Observation]] = defaultdict(list)
    auxiliary: dict[str, list[AuxiliaryCost]] = defaultdict(list)
    for obs in run.observations:
        observations[obs.task_id].append(obs)
    for aux in run.auxiliary_costs:
        auxiliary[aux.task_id].append(aux)
    return {
        task_id: TaskEvidence(observations=tuple(observations[task_id]), auxiliary_costs=tuple(auxiliary[task_id]))
        for task_id in observations.keys() | auxiliary.keys()
    }


def evaluate_tasks(
    tasks: Sequence[Task],
    evidence: Mapping[str, TaskEvidence],
    *,
    artifacts: Mapping[str, Artifact],
    configurations: Mapping[str, Configuration],
    factorial: FactorialExperiment | None,
) -> list[TaskResult]:
    """Map step of evaluation: evaluate each task of a shard (ECEB-0.1 §10-§14)."""
    empty = TaskEvidence()
    return [
        evaluate_task(
            task,
            evidence.get(task.task_id, empty),
            artifacts=artifacts,
            configurations=configurations,
            factorial=factorial,
        )
        for task in tasks
    ]


def evaluate(
    inputs: EvaluationInputs,
    corpus: StorageSpec,
    *,
    executor: ShardExecutor | None = None,
    shard_bytes: int | None = None,
    on_shard: Callable[[ShardVerification], object] | None = None,
) -> tuple[Report, VerificationReport]:
    """Verify the corpus (ECEB-0.1 §5), then evaluate every task and reduce.

    Raises :class:`VerificationError` (holding the verification report) when
    any registered artifact is missing, stale, unreadable or escapes the
    corpus; ``StorageError`` when the corpus cannot be read at all.
    """
    kwargs = {} if shard_bytes is None else {"shard_bytes": shard_bytes}
    verification = verify_corpus(inputs.registry, corpus, executor=executor, on_shard=on_shard, **kwargs)
    if not verification.ok:
        raise VerificationError(
            f"corpus verification failed: {len(verification.findings)} of {verification.artifact_count} "
            "artifacts do not match the registry",
            verification,
        )
    benchmark, run = inputs.benchmark, inputs.run
    results = evaluate_tasks(
        sorted(benchmark.tasks, key=lambda t: t.task_id),
        partition_evidence(run),
        artifacts={a.artifact_id: a for a in inputs.registry.artifacts},
        configurations={c.configuration_id: c for c in run.configurations},
        factorial=run.factorial_experiment,
    )
    report_inputs = ReportInputs(
        benchmark_id=benchmark.benchmark_id,
        task_root=task_root(benchmark.tasks),
        corpus_root=inputs.registry.corpus_root,
        artifact_count=verification.verified_count,
        run_id=run.run_id,
        run_digest=run_digest(run),
    )
    report = reduce_report(
        results,
        inputs=report_inputs,
        claim_class=run.claim_class,
        non_empirical=run.non_empirical,
        factorial_experiment=run.factorial_experiment,
        eceb_version=__version__,
    )
    return report, verification
