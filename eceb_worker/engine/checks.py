"""Consistency checks of a benchmark against its registry, and of a run
against its benchmark (ECEB-0.1 §6, §7, §8, §13).

Each function returns every problem it finds, located by file, record and
field; an empty list means the input is consistent. Schema-level problems
(types, vocabularies, ranges) are caught earlier, when decoding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Benchmark, Task, query_digest, task_root
from eceb_worker.engine.metrics import observation_cost_bounds
from eceb_worker.engine.run import Configuration, Run
from eceb_worker.errors import Problem

__all__ = ["benchmark_problems", "run_problems"]


def _duplicates(values: Iterable[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


def _task_problems(task: Task, index: int, artifacts: Mapping[str, Artifact] | None, file: str) -> list[Problem]:
    record = f"tasks[{index}] ({task.task_id})"
    problems: list[Problem] = []

    def add(field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    for field, values in (
        ("required_artifacts", task.required_artifacts),
        ("denied_artifacts", task.denied_artifacts),
        ("allowed_classifications", task.allowed_classifications),
        ("required_answer_terms", task.required_answer_terms),
    ):
        for value in _duplicates(values):
            add(field, f"lists {value!r} more than once")
    allowed = set(task.allowed_classifications)
    registry: Mapping[str, Artifact] = artifacts if artifacts is not None else {}
    for artifact_id in task.required_artifacts if artifacts is not None else ():
        artifact = registry.get(artifact_id)
        if artifact is None:
            add("required_artifacts", f"{artifact_id!r} is not in the registry")
        elif artifact.classification not in allowed:
            add(
                "required_artifacts",
                f"{artifact_id!r} is {artifact.classification}, which the task does not allow "
                f"(allowed: {', '.join(task.allowed_classifications) or 'none'})",
            )
    for artifact_id in task.denied_artifacts if artifacts is not None else ():
        if artifact_id not in registry:
            add("denied_artifacts", f"{artifact_id!r} is not in the registry")
    for artifact_id in sorted(set(task.required_artifacts) & set(task.denied_artifacts)):
        add("denied_artifacts", f"{artifact_id!r} is both required and denied")
    ladder = task.budget_ladder
    if not ladder:
        add("budget_ladder", "is empty: a task needs at least one budget")
    for position in range(1, len(ladder)):
        if ladder[position] <= ladder[position - 1]:
            add(
                f"budget_ladder[{position}]",
                f"{ladder[position]} does not ascend strictly after {ladder[position - 1]}",
            )
    return problems


def benchmark_problems(
    benchmark: Benchmark, artifacts: Mapping[str, Artifact] | None, corpus_root: str | None, *, file: str
) -> list[Problem]:
    """Every inconsistency of a benchmark with itself and its registry.

    ``artifacts`` maps artifact id to artifact; ``corpus_root`` is the
    registry's recomputed root; both ``None`` when the registry could not be
    loaded (then only the benchmark's own consistency is checked). Checks: the pinned corpus root, duplicate task
    ids, required artifacts missing from the registry or of a classification
    the task does not allow, denied artifacts missing from the registry, an
    artifact both required and denied, duplicate list entries, and ladders
    that are empty or not strictly ascending.
    """
    problems: list[Problem] = []
    if corpus_root is not None and benchmark.registry.corpus_root != corpus_root:
        problems.append(
            Problem(
                file=file,
                record="registry",
                field="corpus_root",
                message=f"pins {benchmark.registry.corpus_root} but the registry's corpus root is {corpus_root}",
            )
        )
    first_index: dict[str, int] = {}
    for index, task in enumerate(benchmark.tasks):
        seen = first_index.setdefault(task.task_id, index)
        if seen != index:
            problems.append(
                Problem(
                    file=file,
                    record=f"tasks[{index}]",
                    field="task_id",
                    message=f"duplicate task_id {task.task_id!r} (first at tasks[{seen}])",
                )
            )
        problems.extend(_task_problems(task, index, artifacts, file))
    return problems


def _configuration_problems(run: Run, file: str) -> tuple[dict[str, Configuration], list[Problem]]:
    configurations: dict[str, Configuration] = {}
    problems: list[Problem] = []
    for index, configuration in enumerate(run.configurations):
        if configuration.configuration_id in configurations:
            problems.append(
                Problem(
                    file=file,
                    record=f"configurations[{index}]",
                    field="configuration_id",
                    message=f"duplicate configuration_id {configuration.configuration_id!r}",
                )
            )
        configurations.setdefault(configuration.configuration_id, configuration)
    return configurations, problems


def run_problems(run: Run, benchmark: Benchmark, corpus_root: str, *, file: str) -> list[Problem]:
    """Every inconsistency of a run with its benchmark and corpus.

    Checks: the benchmark reference (id and task root) and the corpus root;
    duplicate configuration ids; for every observation, a known task, a
    budget that fits its strategy (compiled: a budget of the task's ladder;
    full_permitted_context: none; naive_top_k: any or none), a known
    configuration, cached input within input tokens, recorded costs that
    follow the configuration's pricing snapshot, no artifact selected twice;
    repetition numbers unique per task/strategy/budget group; and auxiliary
    costs charged to groups that have observations.
    """
    problems: list[Problem] = []

    def add(record: str, field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    if run.benchmark.benchmark_id != benchmark.benchmark_id:
        add("benchmark", "benchmark_id", f"is {run.benchmark.benchmark_id!r}, not {benchmark.benchmark_id!r}")
    expected_root = task_root(benchmark.tasks)
    if run.benchmark.task_root != expected_root:
        add("benchmark", "task_root", f"is {run.benchmark.task_root} but the benchmark's task root is {expected_root}")
    if run.corpus_root != corpus_root:
        add("", "corpus_root", f"is {run.corpus_root} but the verified corpus root is {corpus_root}")
    configurations, config_problems = _configuration_problems(run, file)
    problems.extend(config_problems)

    tasks = {task.task_id: task for task in benchmark.tasks}
    first_of_repetition: dict[tuple[str, str, int | None, int], int] = {}
    groups_with_observations: set[tuple[str, str, int | None]] = set()
    for index, obs in enumerate(run.observations):
        record = f"observations[{index}]"
        task = tasks.get(obs.task_id)
        if task is None:
            add(record, "task_id", f"{obs.task_id!r} is not a task of the benchmark")
        elif obs.strategy == "compiled" and obs.budget not in task.budget_ladder:
            shown = "no budget" if obs.budget is None else f"budget {obs.budget}"
            add(record, "budget", f"{shown} is not on task {obs.task_id!r}'s ladder {list(task.budget_ladder)}")
        if obs.strategy == "full_permitted_context" and obs.budget is not None:
            add(record, "budget", "the full permitted-context baseline has no budget (must be null)")
        configuration = configurations.get(obs.configuration_id)
        if configuration is None:
            add(record, "configuration_id", f"{obs.configuration_id!r} is not a configuration of the run")
        cached = obs.cached_input_tokens or 0
        if cached > obs.input_tokens:
            add(record, "cached_input_tokens", f"{cached} exceeds input_tokens {obs.input_tokens}")
        elif configuration is not None:
            pricing = configuration.pricing
            (in_low, in_high), (out_low, out_high) = observation_cost_bounds(
                obs.input_tokens,
                cached,
                obs.output_tokens,
                pricing.input_micro_usd_per_mtok,
                pricing.cached_input_micro_usd_per_mtok,
                pricing.output_micro_usd_per_mtok,
            )
            if not in_low <= obs.input_cost_micro_usd <= in_high:
                add(
                    record,
                    "input_cost_micro_usd",
                    f"{obs.input_cost_micro_usd} does not follow pricing {pricing.source!r} ({pricing.date}): "
                    f"expected {in_low}" + (f"..{in_high}" if in_high != in_low else ""),
                )
            if not out_low <= obs.output_cost_micro_usd <= out_high:
                add(
                    record,
                    "output_cost_micro_usd",
                    f"{obs.output_cost_micro_usd} does not follow pricing {pricing.source!r} ({pricing.date}): "
                    f"expected {out_low}" + (f"..{out_high}" if out_high != out_low else ""),
                )
        selected_ids = [s.artifact_id for s in obs.selected_artifacts]
        if len(set(selected_ids)) != len(selected_ids):
            for artifact_id in _duplicates(selected_ids):
                add(record, "selected_artifacts", f"selects {artifact_id!r} more than once")
        key = (obs.task_id, obs.strategy, obs.budget, obs.repetition)
        seen = first_of_repetition.setdefault(key, index)
        if seen != index:
            add(
                record,
                "repetition",
                f"repetition {obs.repetition} of {obs.task_id}/{obs.strategy}/{obs.budget} "
                f"repeats observations[{seen}]",
            )
        groups_with_observations.add((obs.task_id, obs.strategy, obs.budget))

    for index, aux in enumerate(run.auxiliary_costs):
        if (aux.task_id, aux.strategy, aux.budget) not in groups_with_observations:
            add(
                f"auxiliary_costs[{index}]",
                "",
                f"charges {aux.task_id}/{aux.strategy}/{aux.budget}, which has no observation: "
                "the cost would disappear",
            )
    return problems


def query_matches(task: Task, digest: str) -> bool:
    """True when ``digest`` is the BLAKE3 of the task's query text."""
    return query_digest(task.query) == digest
