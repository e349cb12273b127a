"""The pure core of ``eceb run``: plan, prompt, digests, costs, judgments, the run assembled."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.arithmetic import observation_cost_bounds
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.making.assemble import (
    MadeExecution,
    PossibleCost,
    StreamedRun,
    assemble_run,
    encode_run,
)
from eceb_worker.families.eceb.making.costs import call_cost, upper_bound
from eceb_worker.families.eceb.making.exchange import Usage
from eceb_worker.families.eceb.making.judging import (
    NotAJudgment,
    command_judge_input,
    judge_prompt,
    parse_command_score,
    parse_judgment,
)
from eceb_worker.families.eceb.making.plan import Call, executions, paid_calls, plan_digest
from eceb_worker.families.eceb.making.profile import PromptSpec, RunProfile
from eceb_worker.families.eceb.making.prompt import context_digest, query_digest, render_prompt
from eceb_worker.families.eceb.making.records import AnswerRecord, JudgeRecord, decode_record, encode_record
from eceb_worker.families.eceb.run import BenchmarkReference, PricingSnapshot, Run, SelectedArtifact
from tests.support.evaluation_builders import task

PRICING = PricingSnapshot(
    source="list",
    date="2026-12-01",
    input_micro_usd_per_mtok=2_500_000,
    cached_input_micro_usd_per_mtok=1_250_000,
    output_micro_usd_per_mtok=10_000_000,
)

PROFILE = msgspec.convert(
    {
        "schema": "symgliph.eceb/run-profile-v0.1",
        "run_id": "r",
        "claim_class": "conformance_seed",
        "model": {"api": "openai-chat", "provider": "p", "name": "m", "input_window_tokens": 1000},
        "decoding": {"temperature_milli": 0, "max_output_tokens": 100},
        "pricing": msgspec.to_builtins(PRICING),
        "context_system": {"url": "http://127.0.0.1:1/"},
        "judge": {"kind": "command", "profile": "exact", "command": ["judge"]},
    },
    RunProfile,
)


def _benchmark(*tasks: object) -> Benchmark:
    return msgspec.convert(
        {
            "schema": "symgliph.eceb/benchmark-v0.1",
            "benchmark_id": "b",
            "registry": {"path": "r.jsonl", "corpus_root": "0" * 64},
            "tasks": [msgspec.to_builtins(t) for t in tasks],
        },
        Benchmark,
    )


def test_plan_order_is_baseline_then_compiled_then_naive_each_ladder_ascending() -> None:
    benchmark = _benchmark(task(task_id="t1", budget_ladder=(300, 100), required_repetitions=2), task(task_id="t2"))
    plan = list(executions(benchmark, PROFILE))
    first = [(e.strategy, e.budget, e.repetition) for e in plan if e.task_id == "t1"]
    assert first == [
        ("full_permitted_context", None, 1),
        ("full_permitted_context", None, 2),
        ("compiled", 100, 1),
        ("compiled", 100, 2),
        ("compiled", 300, 1),
        ("compiled", 300, 2),
        ("naive_top_k", 100, 1),
        ("naive_top_k", 100, 2),
        ("naive_top_k", 300, 1),
        ("naive_top_k", 300, 2),
    ]
    assert [e.position for e in plan] == list(range(len(plan)))
    assert len({e.execution_id for e in plan}) == len(plan)
    assert paid_calls(PROFILE, len(plan)) == len(plan)  # a command judge is not paid
    no_naive = msgspec.structs.replace(
        PROFILE, strategies=msgspec.structs.replace(PROFILE.strategies, naive_top_k=False)
    )
    assert all(e.strategy != "naive_top_k" for e in executions(benchmark, no_naive))


def test_execution_ids_are_stable_and_calls_named_by_kind() -> None:
    benchmark = _benchmark(task(task_id="t/with|bars"))
    one, two = list(executions(benchmark, PROFILE)), list(executions(benchmark, PROFILE))
    assert [e.execution_id for e in one] == [e.execution_id for e in two]
    assert Call(execution=one[0], kind="judge").call_id == f"{one[0].execution_id}:judge"


def test_plan_digest_binds_inputs_but_not_spending_limits() -> None:
    base = plan_digest(benchmark_digest="a" * 64, corpus_root="b" * 64, profile=PROFILE)
    raised = msgspec.structs.replace(PROFILE, spending=msgspec.structs.replace(PROFILE.spending, stop_micro_usd=5))
    assert plan_digest(benchmark_digest="a" * 64, corpus_root="b" * 64, profile=raised) == base
    other = msgspec.structs.replace(PROFILE, run_id="another")
    assert plan_digest(benchmark_digest="a" * 64, corpus_root="b" * 64, profile=other) != base
    assert plan_digest(benchmark_digest="c" * 64, corpus_root="b" * 64, profile=PROFILE) != base


@given(st.text(), st.text())
def test_prompt_replaces_placeholders_once(query: str, context: str) -> None:
    spec = PromptSpec(template="C={context} Q={query} {other}")
    assert render_prompt(spec, query=query, context=context) == f"C={context} Q={query} {{other}}"


def test_a_query_holding_a_placeholder_is_not_expanded() -> None:
    spec = PromptSpec(template="{query}|{context}")
    assert render_prompt(spec, query="{context}", context="X") == "{context}|X"


def test_digests_change_with_any_byte_of_the_model_input() -> None:
    assert query_digest("q") != query_digest("q ")
    assert context_digest("", "ab") != context_digest("a", "b")
    assert context_digest("s", "p") == context_digest("s", "p")


@given(
    st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**8), st.integers(0, 10**8)
)
def test_recorded_costs_are_within_what_evaluate_accepts(
    input_tokens: int, cached: int, output: int, rate: int, cached_rate: int
) -> None:
    pricing = msgspec.structs.replace(
        PRICING, input_micro_usd_per_mtok=rate, cached_input_micro_usd_per_mtok=cached_rate
    )
    cached = min(cached, input_tokens)
    usage = Usage(input_tokens=input_tokens, cached_input_tokens=cached, output_tokens=output)
    recorded = call_cost(usage, pricing)
    (input_low, input_high), (output_low, output_high) = observation_cost_bounds(
        input_tokens, cached, output, rate, cached_rate, pricing.output_micro_usd_per_mtok
    )
    assert input_low <= recorded[0] <= input_high
    assert output_low <= recorded[1] <= output_high
    assert upper_bound(input_tokens, output, pricing) >= sum(recorded)


def test_judgments_parse_or_are_refused() -> None:
    assert parse_judgment('{"score": 850, "rationale": "ok"}') == (850, "ok")
    for bad in (
        '{"score": 1001, "rationale": ""}',
        '{"score": "9"}',
        "not json",
        '{"score": 1, "rationale": "", "x": 1}',
    ):
        with pytest.raises(NotAJudgment):
            parse_judgment(bad)
    assert parse_command_score(b"1000\nanything") == 1000
    assert parse_command_score(b" 7 \n") == 7
    for bad in (b"", b"-1", b"1001", b"12.5", b"99999"):
        with pytest.raises(NotAJudgment):
            parse_command_score(bad)


def test_the_judge_sees_the_answer_not_the_context() -> None:
    t = task(query="How?", required_answer_terms=("pg_ctl",))
    prompt = judge_prompt("Rubric.", t, "the answer")
    assert "How?" in prompt and "pg_ctl" in prompt and "the answer" in prompt and "Rubric." in prompt
    assert command_judge_input(t, "a").endswith(b"\n")


def _answer(revision: str = "rev-1", cost: int = 10) -> AnswerRecord:
    return AnswerRecord(
        selected_artifacts=(SelectedArtifact(artifact_id="a", observed_digest="d" * 64),),
        local_prompt_tokens=5,
        query_digest="q" * 64,
        context_digest="c" * 64,
        usage=Usage(input_tokens=4, cached_input_tokens=None, output_tokens=2),
        input_cost_micro_usd=cost,
        output_cost_micro_usd=1,
        latency_ms=3,
        answer="A",
        model_revision=revision,
        request_body=msgspec.Raw(b"{}"),
        response_body=msgspec.Raw(b"{}"),
    )


def _judgment(cost: int = 7) -> JudgeRecord:
    return JudgeRecord(
        quality_milli=900,
        rationale="r",
        judge_prompt="p",
        raw_judgment="{}",
        usage=None,
        cost_micro_usd=cost,
        model_revision="",
    )


def test_records_round_trip() -> None:
    for record in (_answer(), _judgment()):
        assert decode_record(encode_record(record)) == record


def test_the_run_holds_every_judged_execution_and_every_other_spend() -> None:
    plan = list(executions(_benchmark(task(task_id="t", budget_ladder=(100,), required_repetitions=1)), PROFILE))
    made = [
        MadeExecution(execution=plan[0], answer=_answer("rev-1"), judgment=_judgment()),
        MadeExecution(execution=plan[1], answer=_answer("rev-2"), judgment=None),  # paid, not judged
        MadeExecution(execution=plan[2]),
    ]
    possible = [PossibleCost(execution=plan[2], call="answer", micro_usd=99, reason="HTTP 500", upper=True)]
    run = assemble_run(
        PROFILE,
        benchmark=BenchmarkReference(benchmark_id="b", task_root="0" * 64),
        corpus_root="1" * 64,
        made=made,
        possible_costs=possible,
    )
    assert [o.strategy for o in run.observations] == ["full_permitted_context"]
    assert run.configurations[0].model.revision == "rev-1"
    assert [(a.strategy, a.kind, a.cost_micro_usd) for a in run.auxiliary_costs] == [
        ("full_permitted_context", "other", 7),
        ("compiled", "other", 11),
        ("naive_top_k", "retry", 99),
    ]
    again = msgspec.json.decode(encode_run(run), type=Run)
    assert again == run


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 50)), min_size=0, max_size=12))
def test_a_streamed_run_is_the_assembled_runs_bytes(shape: list[tuple[bool, bool, int]]) -> None:
    benchmark = _benchmark(
        task(task_id="t1", budget_ladder=(100, 200), required_repetitions=2), task(task_id="t2", budget_ladder=(50,))
    )
    plan = list(executions(benchmark, PROFILE))
    made = [
        MadeExecution(
            execution=execution,
            answer=_answer(f"rev-{i}", cost) if answered else None,
            judgment=_judgment(cost) if answered and judged else None,
        )
        for i, (execution, (answered, judged, cost)) in enumerate(zip(plan, shape, strict=False))
    ]
    possible = [
        PossibleCost(execution=m.execution, call="answer", micro_usd=i, reason="HTTP 500", upper=i % 2 == 0)
        for i, m in enumerate(made)
        if m.answer is None
    ]
    arguments = {
        "benchmark": BenchmarkReference(benchmark_id="b", task_root="0" * 64),
        "corpus_root": "1" * 64,
        "possible_costs": possible,
    }
    whole = encode_run(assemble_run(PROFILE, made=made, **arguments))
    streamed = StreamedRun(PROFILE, made=lambda: iter(made), **arguments)
    assert b"".join(streamed.chunks()) == whole
    assert streamed.observations == sum(1 for m in made if m.answer is not None and m.judgment is not None)
