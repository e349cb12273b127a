"""Consistency checks of a benchmark against its registry, and of a run
against its benchmark (ECEB-0.1 §6, §7, §8, §13).

Each function returns every problem it finds, located by file, record and
field; an empty list means the input is consistent. Schema-level problems
(types, vocabularies, ranges) are caught earlier, when decoding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX, observation_cost_bounds
from eceb_worker.core.digests import is_digest
from eceb_worker.core.identifiers import identifier_problem
from eceb_worker.core.lenient import brief_repr
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.benchmark import Benchmark, SecretSpan, Task, task_root
from eceb_worker.families.eceb.run import AuxiliaryCost, Configuration, Observation, RunHeader
from eceb_worker.families.eceb.verdicts import RecordProblem

__all__ = [
    "benchmark_problems",
    "run_header_problems",
    "secret_span_problems",
    "task_problems",
    "task_record_problems",
]


def _duplicates(values: Iterable[str]) -> list[str]:
    """The values given more than once, sorted."""
    listed = list(values)
    if len(set(listed)) == len(listed):  # the usual case, without counting
        return []
    return sorted(value for value, count in Counter(listed).items() if count > 1)


def _task_problems(task: Task, index: int, artifacts: Mapping[str, Artifact] | None, file: str) -> list[Problem]:  # noqa: C901 - one check per task field (§8), each a sentence of its own
    record = f"tasks[{index}] ({task.task_id})"
    problems: list[Problem] = []

    def add(field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    for field, values in (
        ("required_artifacts", task.required_artifacts),
        ("denied_artifacts", task.denied_artifacts),
        ("allowed_classifications", task.allowed_classifications),
        ("required_answer_terms", task.required_answer_terms),
        ("abstention.refusal_markers", task.abstention.refusal_markers if task.abstention else ()),
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
    loaded (then only the benchmark's own consistency is checked). Checks:
    at least one task, the pinned corpus root, duplicate task
    ids, required artifacts missing from the registry or of a classification
    the task does not allow, denied artifacts missing from the registry, an
    artifact both required and denied, duplicate list entries, ladders
    that are empty or not strictly ascending, and secret spans
    (:func:`secret_span_problems`).
    """
    problems: list[Problem] = []
    if not benchmark.tasks:
        problems.append(Problem(file=file, field="tasks", message="is empty: a benchmark needs at least one task"))
    if corpus_root is not None and benchmark.registry.corpus_root != corpus_root:
        problems.append(
            Problem(
                file=file,
                record="registry",
                field="corpus_root",
                message=f"pins {benchmark.registry.corpus_root} but the registry's corpus root is {corpus_root}",
            )
        )
    problems.extend(task_problems(list(enumerate(benchmark.tasks)), artifacts, file=file))
    problems.extend(secret_span_problems(benchmark, artifacts, file=file))
    return problems


def task_problems(
    tasks: Sequence[tuple[int, Task]], artifacts: Mapping[str, Artifact] | None, *, file: str
) -> list[Problem]:
    """Every inconsistency of a benchmark's ``tasks``, each given with its
    position in the file's ``tasks`` (all of them, or those that decoded
    when others did not): duplicate task ids among them, and each task's
    own checks as :func:`benchmark_problems` lists them (``artifacts`` as
    there)."""
    problems: list[Problem] = []
    first_index: dict[str, int] = {}
    for index, task in tasks:
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


def secret_span_problems(
    benchmark: Benchmark | Sequence[tuple[int, SecretSpan]], artifacts: Mapping[str, Artifact] | None, *, file: str
) -> list[Problem]:
    """Every problem of the benchmark's secret spans (ECEB-0.1 §17), each
    located at ``secret_spans[i]``: an empty span (``end`` not after
    ``start``), and, given the registry's ``artifacts`` by id, an artifact
    the registry lacks or a span past the artifact's registered size; a span
    given twice. The span's bytes themselves are never quoted. Given spans
    with their positions instead of a benchmark (those that decoded of a
    benchmark that did not), checks those."""
    problems: list[Problem] = []
    seen: dict[tuple[str, int, int], int] = {}
    spans = list(enumerate(benchmark.secret_spans)) if isinstance(benchmark, Benchmark) else benchmark
    for index, span in spans:
        record = f"secret_spans[{index}]"

        def add(field: str, message: str, record: str = record) -> None:
            problems.append(Problem(file=file, record=record, field=field, message=message))

        if span.end <= span.start:
            add("end", f"{span.end} is not after start {span.start}: a secret span may not be empty")
        if artifacts is not None:
            artifact = artifacts.get(span.artifact_id)
            if artifact is None:
                add("artifact_id", f"{span.artifact_id!r} is not in the registry")
            elif span.end > artifact.size_bytes:
                add(
                    "end",
                    f"{span.end} is past the end of {span.artifact_id!r} ({artifact.size_bytes} bytes registered)",
                )
        first = seen.setdefault((span.artifact_id, span.start, span.end), index)
        if first != index:
            add("start", f"repeats secret_spans[{first}]")
    return problems


def run_header_problems(
    header: RunHeader, benchmark: Benchmark | None, corpus_root: str | None, *, file: str
) -> list[Problem]:
    """Every inconsistency of a run's header: duplicate configuration ids and,
    given the benchmark and the registry's corpus root, the benchmark
    reference (id and task root) and the corpus root."""
    problems: list[Problem] = []

    def add(record: str, field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    if benchmark is not None:
        if header.benchmark.benchmark_id != benchmark.benchmark_id:
            add("benchmark", "benchmark_id", f"is {header.benchmark.benchmark_id!r}, not {benchmark.benchmark_id!r}")
        expected_root = task_root(benchmark.tasks)
        if header.benchmark.task_root != expected_root:
            add(
                "benchmark",
                "task_root",
                f"is {header.benchmark.task_root} but the benchmark's task root is {expected_root}",
            )
    if corpus_root is not None and header.corpus_root != corpus_root:
        add("", "corpus_root", f"is {header.corpus_root} but the registry's corpus root is {corpus_root}")
    factorial = header.factorial_experiment
    if factorial is not None:
        for factor in _duplicates(factorial.factors):
            add("factorial_experiment", "factors", f"lists {factor!r} more than once")
    seen: set[str] = set()
    for index, configuration in enumerate(header.configurations):
        if configuration.configuration_id in seen:
            add(
                f"configurations[{index}]",
                "configuration_id",
                f"duplicate configuration_id {configuration.configuration_id!r}",
            )
        seen.add(configuration.configuration_id)
    return problems


def task_record_problems(  # noqa: C901, PLR0912, PLR0915 - one branch per §9 rule of a task's records, in the seed's order; a candidate to split by rule
    task_id: str,
    task: Task | None,
    observations: Sequence[tuple[int, Observation]],
    auxiliary_costs: Sequence[tuple[int, AuxiliaryCost]],
    configurations: Mapping[str, Configuration],
    *,
    file: str,
    benchmark_known: bool,
) -> list[RecordProblem]:
    """Every inconsistency of one task's records (positions give the record names).

    With ``benchmark_known``, ``task`` is the benchmark's task (``None``: the
    run names a task the benchmark does not have). Checks, per observation:
    a known task; no budget on the full permitted-context baseline; a known
    configuration; cached input within input tokens; recorded costs that
    follow the configuration's pricing snapshot (ECEB-0.1 §8 and the
    task-context reference's credit formula); repetition numbers unique per
    strategy/budget group (§13). A compiled budget off the task's ladder and
    an artifact selected twice are not problems of the run but failures of
    their task (:mod:`eceb_worker.families.eceb.gates`). Per auxiliary
    cost: a known task; charged to a group that has observations. Per strategy/budget
    group: a total cost within 2^53 - 1, else every record of the group is
    named. Ids that occur in every record (the task id, the selected
    artifacts' ids) are checked here, once per distinct value
    (:func:`~eceb_worker.core.identifiers.identifier_problem`), not while decoding.
    """
    problems: list[RecordProblem] = []

    def add(index: int, field: str, message: str, *, array: str = "observations") -> None:
        problem = Problem(file=file, record=f"{array}[{index}]", field=field, message=message)
        problems.append(RecordProblem(array=array, index=index, problem=problem))

    first_of_repetition: dict[tuple[str, int | None, int], int] = {}
    digests = {obs.query_digest for _, obs in observations}
    digests.update([obs.context_digest for _, obs in observations])
    digests.update([s.observed_digest for _, obs in observations for s in obs.selected_artifacts])
    malformed = {d for d in digests if not is_digest(d)}
    refused_task = identifier_problem(task_id)
    selected = {s.artifact_id for _, obs in observations for s in obs.selected_artifacts}
    refused_selections = {a: why for a in selected if (why := identifier_problem(a))}
    rates = {
        cid: (
            c.pricing.input_micro_usd_per_mtok,
            c.pricing.cached_input_micro_usd_per_mtok,
            c.pricing.output_micro_usd_per_mtok,
        )
        for cid, c in configurations.items()
    }
    for index, obs in observations:
        if malformed:
            for field, value in _digest_fields(obs):
                if value in malformed:
                    add(index, field, f"{value!r} is not a BLAKE3-256 digest (64 lowercase hex characters)")
        if refused_task:
            add(index, "task_id", f"{brief_repr(task_id)} {refused_task}")
        elif benchmark_known and task is None:
            add(index, "task_id", f"{task_id!r} is not a task of the benchmark")
        if refused_selections:
            for position, chosen in enumerate(obs.selected_artifacts):
                if chosen.artifact_id in refused_selections:
                    message = f"{brief_repr(chosen.artifact_id)} {refused_selections[chosen.artifact_id]}"
                    add(index, f"selected_artifacts[{position}].artifact_id", message)
        if obs.strategy == "full_permitted_context" and obs.budget is not None:
            add(index, "budget", "the full permitted-context baseline has no budget (must be null)")
        rate = rates.get(obs.configuration_id)
        if rate is None:
            add(index, "configuration_id", f"{obs.configuration_id!r} is not a configuration of the run")
        input_tokens = obs.input_tokens
        cached = obs.cached_input_tokens or 0
        if cached > input_tokens:
            add(index, "cached_input_tokens", f"{cached} exceeds input_tokens {input_tokens}")
        elif rate is not None:
            exact_input = (input_tokens - cached) * rate[0] + cached * rate[1]
            if (
                abs(obs.input_cost_micro_usd * 1_000_000 - exact_input) >= 1_000_000
                or abs(obs.output_cost_micro_usd * 1_000_000 - obs.output_tokens * rate[2]) >= 1_000_000
            ):
                configuration = configurations[obs.configuration_id]
                for field, message in _cost_problems(obs, cached, configuration):
                    add(index, field, message)
        seen = first_of_repetition.setdefault((obs.strategy, obs.budget, obs.repetition), index)
        if seen != index:
            add(
                index,
                "repetition",
                f"repetition {obs.repetition} of {task_id}/{obs.strategy}/{obs.budget} repeats observations[{seen}]",
            )
    if auxiliary_costs:
        groups = {(obs.strategy, obs.budget) for _, obs in observations}
        for index, aux in auxiliary_costs:
            if refused_task:
                add(index, "task_id", f"{brief_repr(task_id)} {refused_task}", array="auxiliary_costs")
            elif benchmark_known and task is None:
                add(index, "task_id", f"{task_id!r} is not a task of the benchmark", array="auxiliary_costs")
            if (aux.strategy, aux.budget) not in groups:
                add(
                    index,
                    "",
                    f"charges {task_id}/{aux.strategy}/{aux.budget}, which has no observation: "
                    "the cost would disappear",
                    array="auxiliary_costs",
                )
    # Costs are never negative: only when the task's records total beyond
    # 2^53 - 1 can one of its strategy/budget groups.
    task_total = sum([obs.input_cost_micro_usd + obs.output_cost_micro_usd for _, obs in observations])
    if task_total + sum([aux.cost_micro_usd for _, aux in auxiliary_costs]) > SAFE_INTEGER_MAX:
        _name_groups_beyond_safe_integers(task_id, observations, auxiliary_costs, add)
    return problems


def _name_groups_beyond_safe_integers(
    task_id: str,
    observations: Sequence[tuple[int, Observation]],
    auxiliary_costs: Sequence[tuple[int, AuxiliaryCost]],
    add: Callable[..., None],
) -> None:
    """Name every record of each strategy/budget group of one task whose
    costs total beyond 2^53 - 1 (not reportable exactly), through
    :func:`task_record_problems`'s ``add``: groups in order of their first
    record, records in order."""
    totals: dict[tuple[str, int | None], int] = {}
    members: dict[tuple[str, int | None], list[tuple[str, int]]] = {}
    for index, obs in observations:
        key = (obs.strategy, obs.budget)
        totals[key] = totals.get(key, 0) + obs.input_cost_micro_usd + obs.output_cost_micro_usd
        members.setdefault(key, []).append(("observations", index))
    for index, aux in auxiliary_costs:
        key = (aux.strategy, aux.budget)
        totals[key] = totals.get(key, 0) + aux.cost_micro_usd
        members.setdefault(key, []).append(("auxiliary_costs", index))
    for (strategy, budget), total in totals.items():
        if total > SAFE_INTEGER_MAX:
            records = members[(strategy, budget)]
            message = (
                f"with the {len(records)} record(s) of {task_id}/{strategy}/{budget}, costs total {total} "
                "micro-USD, beyond 2^53 - 1: not reportable exactly"
            )
            for array, index in records:
                add(index, "", message, array=array)


def _digest_fields(obs: Observation) -> list[tuple[str, str]]:
    fields = [("query_digest", obs.query_digest), ("context_digest", obs.context_digest)]
    fields.extend(
        (f"selected_artifacts[{i}].observed_digest", s.observed_digest) for i, s in enumerate(obs.selected_artifacts)
    )
    return fields


def _cost_problems(obs: Observation, cached: int, configuration: Configuration) -> list[tuple[str, str]]:
    """(field, message) of each recorded cost of ``obs`` that does not follow its pricing."""
    pricing = configuration.pricing
    (in_low, in_high), (out_low, out_high) = observation_cost_bounds(
        obs.input_tokens,
        cached,
        obs.output_tokens,
        pricing.input_micro_usd_per_mtok,
        pricing.cached_input_micro_usd_per_mtok,
        pricing.output_micro_usd_per_mtok,
    )
    problems = []
    for field, value, low, high in (
        ("input_cost_micro_usd", obs.input_cost_micro_usd, in_low, in_high),
        ("output_cost_micro_usd", obs.output_cost_micro_usd, out_low, out_high),
    ):
        if not low <= value <= high:
            expected = f"{low}" if low == high else f"{low}..{high}"
            problems.append(
                (field, f"{value} does not follow pricing {pricing.source!r} ({pricing.date}): expected {expected}")
            )
    return problems
