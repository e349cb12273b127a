"""The pure checks of a paired experiment's preflight and of a prepared
pair: cross-references found together, the common budget, the work tree's
cleanliness, the cue's shape, and two arms that differ only in their
context."""

from __future__ import annotations

import json

import msgspec
import pytest

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.benchmark import PairBenchmark
from eceb_worker.families.paired.pairs import arm_problems, cue_problems, pair_directory_name, pilot_evidence_digest
from eceb_worker.families.paired.preflight import (
    budget_problems,
    control_problems,
    dirty_problems,
    read_declaration,
    task_problems,
)
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.records import (
    MANIFEST_SCHEMA,
    ArmCommand,
    ArmInputs,
    Executable,
    FileDigest,
    Manifest,
    PairPosition,
)
from eceb_worker.families.paired.schedule import Arm, TaskKind, plan
from eceb_worker.families.paired.specs import Check, Declaration, DiscoveryTask, Selector, VerificationTask
from tests.support.paths import EXAMPLES

DIGEST = "a" * 64
PAIR = "/exp/task-pair-01-explanation-r1-0badcafe"


def arm(name: Arm, inputs: ArmInputs, *, model: str | None = None) -> ArmCommand:
    return ArmCommand(
        arm=name,
        inputs=inputs,
        context=FileDigest(path=f"arms/{name.value}/context", blake3=DIGEST, size=10),
        context_tokens=3,
        cue_command=None if name is Arm.A else Executable(name="./cue.py", path="/b/cue.py", blake3=DIGEST, size=1),
        argv=codex_argv(
            executable="/usr/bin/codex",
            output_schema=f"{PAIR}/attempts/{name.value}/answer.schema.json",
            repository="/repo",
            model=model or inputs.model,
            reasoning_effort=inputs.reasoning_effort,
            speed_tier=inputs.speed_tier,
            sandbox=inputs.sandbox,
        ),
        attempt=f"attempts/{name.value}",
    )


INPUTS = ArmInputs(
    task_id="explain-hello",
    declaration=".repocue/declaration.json",
    targets=("greet/greet.go",),
    checks=(),
    model="gpt-5-codex",
    reasoning_effort="medium",
    speed_tier="standard",
    sandbox="read-only",
    output_schema_digest=DIGEST,
)


def manifest(first: ArmCommand, second: ArmCommand) -> Manifest:
    return Manifest(
        schema=MANIFEST_SCHEMA,
        label="test",
        synthetic=True,
        freeze_digest=DIGEST,
        pair=PairPosition(position=1, task=TaskKind.EXPLANATION, repeat=1, order=(Arm.A, Arm.B), pilot=True),
        task_id="explain-hello",
        output_schema_digest=DIGEST,
        answer_schema="answer.schema.json",
        files=(),
        arms=(first, second),
        prepared_at="2026-12-01T00:00:00Z",
    )


def test_two_arms_that_differ_only_in_their_context_pass() -> None:
    assert arm_problems(manifest(arm(Arm.A, INPUTS), arm(Arm.B, INPUTS)), "m") == []


def test_arms_differing_in_anything_but_their_context_are_named() -> None:
    other = msgspec.structs.replace(INPUTS, model="gpt-5", targets=("greet",))
    found = arm_problems(manifest(arm(Arm.A, INPUTS), arm(Arm.B, other)), "m")
    assert [(p.record, p.field, p.message) for p in found] == [
        ("arms[1]", "inputs", "differs from arm A in targets, model"),
        ("arms[1]", "argv", "differs from arm A's command line beyond its attempt directory"),
    ]
    swapped = arm_problems(manifest(arm(Arm.B, INPUTS), arm(Arm.A, INPUTS)), "m")
    assert [p.message for p in swapped] == ["the arms are not in the schedule's order A/B"]
    off = arm_problems(manifest(arm(Arm.A, INPUTS), arm(Arm.B, INPUTS, model="gpt-4")), "m")
    assert [(p.record, p.field) for p in off] == [("arms[1]", "argv"), ("arms[1]", "argv")]
    unbound = msgspec.structs.replace(INPUTS, output_schema_digest="b" * 64)
    found = arm_problems(manifest(arm(Arm.A, unbound), arm(Arm.B, unbound)), "m")
    assert [p.field for p in found] == ["inputs.output_schema_digest", "inputs.output_schema_digest"]


def test_an_arm_whose_schema_is_not_its_own_attempts_is_named() -> None:
    b = arm(Arm.B, INPUTS)
    argv = tuple(value.replace("/attempts/B/", "/attempts/A/") for value in b.argv)
    found = arm_problems(manifest(arm(Arm.A, INPUTS), msgspec.structs.replace(b, argv=argv)), "m")
    assert found[0].message.endswith("is not the arm's attempts/B/answer.schema.json")


def test_the_work_tree_is_clean_only_when_git_status_is_empty() -> None:
    assert dirty_problems("/repo", b"") == []
    status = b" M greet/greet.go\0?? notes.txt\0R  new.go\0old.go\0!! build/out\0"
    (problem,) = dirty_problems("/repo", status)
    assert problem.file == "/repo"
    assert problem.message.endswith(
        "greet/greet.go (changed, M); notes.txt (untracked); new.go (changed, R); build/out (ignored)"
    )


def test_the_common_budget_is_inclusive() -> None:
    assert budget_problems("f", 4 * 100, 100, "the cue") == []
    (problem,) = budget_problems("f", 4 * 100 + 1, 100, "the cue")
    assert problem.message == (
        "the cue estimates 101 tokens (401 bytes / 4, rounded up), over the common cue budget of 100 tokens"
    )


def test_the_pair_count_and_the_authorized_executions_are_held_to_the_schedule() -> None:
    benchmark = msgspec.json.decode((EXAMPLES / "paired" / "benchmark.json").read_bytes(), type=PairBenchmark)
    assert control_problems(benchmark, "b") == []
    coverage = msgspec.structs.replace(benchmark.coverage, pairs=plan().pair_count - 1)
    found = control_problems(msgspec.structs.replace(benchmark, coverage=coverage), "b")
    assert [(p.record, p.field) for p in found] == [("coverage", "pairs")]


def test_task_cross_references_are_found_together() -> None:
    declaration = Declaration(
        schema="symgliph.eceb/pair-declaration-v0.1",
        name="x",
        sources=("greet",),
        checks=(Check(id="go-test", argv=("go", "test")),),
    )
    task = VerificationTask(
        schema="symgliph.eceb/pair-verification-v0.1",
        id="t",
        prompt="p",
        declaration="d.json",
        targets=("greet", "../up", "gone"),
        checks=("vet",),
        answer_schema="a.json",
        check="go-test",
    )
    objects = {"greet": ("1" * 40, "tree"), "gone": None}
    found = task_problems("t.json", task, declaration, objects, "c" * 40)
    assert [(p.field, p.message.split(" ", 1)[1]) for p in found] == [
        ("targets[1]", "has a '..' segment"),
        ("targets[2]", f"is not in the commit {'c' * 40}"),
        ("checks[0]", "is not a check of the declaration d.json"),
        ("check", "is not listed in the task's checks"),
    ]
    discovery = DiscoveryTask(
        schema="symgliph.eceb/pair-discovery-v0.1",
        id="d",
        prompt="p",
        declaration="d.json",
        targets=("greet",),
        answer_schema="a.json",
        selector=Selector(kind="marker", pattern="REQ-[", paths=("greet", "docs")),
    )
    found = task_problems("d.json", discovery, declaration, objects, "c" * 40)
    assert [(p.record, p.field) for p in found] == [("selector", "paths[1]"), ("selector", "pattern")]


def test_a_declaration_with_a_repeated_check_id_is_a_problem() -> None:
    data = canonical_json(
        {
            "schema": "symgliph.eceb/pair-declaration-v0.1",
            "name": "x",
            "sources": ["a", "/abs"],
            "checks": [{"id": "c", "argv": ["true"]}, {"id": "c", "argv": ["false"]}],
        }
    )
    _, found = read_declaration(data, "decl")
    assert [(p.record, p.field) for p in found] == [("", "sources[1]"), ("checks[1]", "id")]


def test_a_cue_must_be_a_task_cue_of_its_task() -> None:
    assert cue_problems(b'{"schema": "repocue/task-cue-1", "task": "t"}', "t", "cue") == []
    assert [p.field for p in cue_problems(b'{"schema": "x", "task": "u"}', "t", "cue")] == ["schema", "task"]
    assert cue_problems(b"[1]", "t", "cue")[0].message == "the cue is not a JSON object"
    assert cue_problems(b"\xff", "t", "cue")[0].message == "the cue is not UTF-8 (byte 0)"
    assert cue_problems(b"{", "t", "cue")[0].message.startswith("the cue is not a JSON document")


def test_a_pair_directory_is_named_by_position_kind_repeat_and_token() -> None:
    pairs = plan().pairs
    assert pair_directory_name(pairs[0], "0badcafe") == "task-pair-01-explanation-r1-0badcafe"
    assert pair_directory_name(pairs[8], "00000000") == "task-pair-09-verification-r3-00000000"
    with pytest.raises(ValueError, match="8 lowercase hex"):
        pair_directory_name(pairs[0], "XYZ")


def test_the_pilot_evidence_digest_binds_the_manifest_and_both_attempts_in_order() -> None:
    one, two, three = "1" * 64, "2" * 64, "3" * 64
    assert pilot_evidence_digest(one, two, three) == digest_bytes(canonical_json([one, two, three]))
    assert pilot_evidence_digest(one, two, three) != pilot_evidence_digest(one, three, two)


def _stream(thread: str, *, completed: bool = True) -> bytes:
    events: list[dict[str, object]] = [
        {"type": "thread.started", "thread_id": thread},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": '{"a": 1}'}},
    ]
    if completed:
        usage = {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2, "reasoning_output_tokens": 1}
        events.append({"type": "turn.completed", "usage": usage})
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def test_observed_support_comes_from_a_recorded_stream_never_a_synthetic_one() -> None:
    from eceb_worker.families.paired.preflight import observed_support
    from eceb_worker.families.paired.records import FileDigest

    evidence = FileDigest(path="/x/stream.jsonl", blake3="0" * 64, size=1)
    real = observed_support(_stream("0199a213-81c0-7800-8aa1-bbab2a035a53"), evidence)
    assert (real.usage, real.completion, real.output, real.evidence_synthetic) == (
        "observed",
        "observed",
        "observed",
        False,
    )
    partial = observed_support(_stream("0199a213", completed=False), evidence)
    assert (partial.usage, partial.completion, partial.output) == ("unobserved", "unobserved", "unobserved")
    synthetic = observed_support(_stream("synthetic-1"), evidence)
    assert (synthetic.usage, synthetic.completion, synthetic.output) == ("unobserved", "unobserved", "unobserved")
    assert synthetic.evidence_synthetic and synthetic.evidence == evidence


def test_a_cue_nested_past_any_limit_or_repeating_a_key_is_a_problem_not_a_crash() -> None:
    from eceb_worker.families.paired.pairs import cue_problems

    assert cue_problems(b"[" * 100_000 + b"]" * 100_000, "t", "cue")[0].message.startswith("the cue is not")
    repeated = b'{"schema": "repocue/task-cue-1", "task": "t", "task": "t"}'
    assert "more than once" in cue_problems(repeated, "t", "cue")[0].message
    assert cue_problems(b'{"schema": "repocue/task-cue-1", "task": "t"}', "t", "cue") == []


def test_an_external_evidence_location_holding_a_credential_is_a_problem() -> None:
    import msgspec as _msgspec

    from eceb_worker.families.paired.benchmark import PairBenchmark
    from eceb_worker.families.paired.preflight import control_problems
    from tests.support.paths import REPO

    document = json.loads((REPO / "examples/paired/benchmark.json").read_text())
    document["external_evidence"] = "s3://AKIAKEY:SECRETVALUE@evidence/run-1/"
    benchmark = _msgspec.convert(document, PairBenchmark)
    [problem] = control_problems(benchmark, "benchmark.json")
    assert problem.field == "external_evidence" and "s3://***@evidence/run-1/" in problem.message
    assert "SECRETVALUE" not in str(problem)
