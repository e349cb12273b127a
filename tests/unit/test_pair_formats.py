"""The paired benchmark's formats: the example's documents decode into their
Structs, both arms get the same prompt but for the context, and the Codex
command line carries exactly the frozen settings."""

from __future__ import annotations

import msgspec
import pytest

from eceb_worker.families.paired.benchmark import LOCAL_ONLY, PairBenchmark, estimate_tokens
from eceb_worker.families.paired.prompts import codex_argv, render_prompt
from eceb_worker.families.paired.schedule import Arm, TaskKind
from eceb_worker.families.paired.specs import TASK_SCHEMAS, Check, Declaration, VerificationTask
from tests.support.paths import REPO

pytestmark = pytest.mark.unit

EXAMPLE = REPO / "examples" / "paired"


def test_the_example_is_labelled_local_preparation_only_and_its_documents_decode() -> None:
    benchmark = msgspec.json.decode((EXAMPLE / "benchmark.json").read_bytes(), type=PairBenchmark)
    assert benchmark.label == LOCAL_ONLY
    assert benchmark.synthetic
    for kind, struct in TASK_SCHEMAS.items():
        task = msgspec.json.decode((EXAMPLE / getattr(benchmark.tasks, kind)).read_bytes(), type=struct)
        assert task.declaration == ".repocue/declaration.json"
        assert (EXAMPLE / "tasks" / task.answer_schema).is_file()
    declaration = msgspec.json.decode((EXAMPLE / "repo/.repocue/declaration.json").read_bytes(), type=Declaration)
    verification = msgspec.json.decode((EXAMPLE / "tasks/verification.json").read_bytes(), type=VerificationTask)
    assert verification.check in {check.id for check in declaration.checks}
    assert LOCAL_ONLY in (EXAMPLE / "README.md").read_text(encoding="utf-8").lower()


def test_unknown_fields_are_refused() -> None:
    data = (EXAMPLE / "tasks/verification.json").read_bytes().replace(b'"check":', b'"chek": 1, "check":')
    with pytest.raises(msgspec.ValidationError, match="chek"):
        msgspec.json.decode(data, type=VerificationTask)


def test_the_estimate_is_bytes_divided_by_four_rounded_up() -> None:
    assert [estimate_tokens(n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def _prompt(arm: Arm, context: bytes) -> bytes:
    return render_prompt(
        kind=TaskKind.VERIFICATION,
        task_id="go-test",
        prompt="Run the declared check.",
        declaration=".repocue/declaration.json",
        targets=("greet",),
        checks=(Check(id="go-test", argv=("go", "test", "-count=1", "./...")),),
        arm=arm,
        context=context,
    )


def test_both_arms_get_the_same_prompt_but_for_the_context() -> None:
    a = _prompt(Arm.A, b"overview\n").decode()
    b = _prompt(Arm.B, b'{"schema": "repocue/task-cue-1"}').decode()
    assert "- go-test: go test -count=1 ./... (in .)" in a
    head_a, _, _ = a.partition("Context (")
    head_b, _, _ = b.partition("Context (")
    assert head_a == head_b
    assert "Context (frozen overview):\n<<<CONTEXT\noverview\nCONTEXT>>>\n" in a
    assert 'Context (task cue (repocue/task-cue-1)):\n<<<CONTEXT\n{"schema": "repocue/task-cue-1"}\nCONTEXT>>>\n' in b
    assert a.endswith("Answer with exactly one JSON value that matches the provided output schema.\n")


def test_the_codex_command_line_never_resumes_never_chooses_a_model_and_loads_no_user_configuration() -> None:
    argv = codex_argv(
        executable="/usr/bin/codex",
        output_schema="/x/attempts/A/answer.schema.json",
        repository="/r",
        model="gpt-5-codex",
        reasoning_effort="medium",
        speed_tier="standard",
        sandbox="read-only",
    )
    assert argv == (
        "/usr/bin/codex",
        "exec",
        "--json",
        "--color",
        "never",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "--output-schema",
        "/x/attempts/A/answer.schema.json",
        "-m",
        "gpt-5-codex",
        "-c",
        'model_reasoning_effort="medium"',
        "-s",
        "read-only",
        "-C",
        "/r",
        "-",
    )
    flex = codex_argv(
        executable="codex",
        output_schema="s",
        repository="/r",
        model="m",
        reasoning_effort="high",
        speed_tier="flex",
        sandbox="read-only",
    )
    assert flex[flex.index('model_reasoning_effort="high"') + 1 : flex.index("-s")] == ("-c", 'service_tier="flex"')
    assert "resume" not in flex and "fork" not in flex
