"""Assessment bundles bind task, policy, attempt, answer, fingerprint,
assessor, rubric and original references; one that does not match its
attempt is rejected by name (task-context-benchmark-reference.md)."""

from __future__ import annotations

import msgspec
import pytest

from eceb_worker.families.paired.assessments import (
    Assessment,
    AssessmentBundle,
    Binding,
    OriginalReference,
    binding_problems,
)

pytestmark = pytest.mark.unit

TARGET = OriginalReference(path="greet/greet.go", object="a" * 40)
BINDING = Binding(
    task="explain-hello",
    policy="1" * 64,
    attempt="task-pair-01-explanation-r1-0dc74477/A",
    answer="2" * 64,
    fingerprint="3" * 64,
    assessor="an engineer who did not write the tasks or the cue",
    rubric="4" * 64,
    references=(TARGET,),
)
ASSESSMENT = Assessment(
    task=BINDING.task,
    policy=BINDING.policy,
    attempt=BINDING.attempt,
    answer="2" * 64,
    fingerprint=BINDING.fingerprint,
    assessor=BINDING.assessor,
    rubric=BINDING.rubric,
    references=(TARGET,),
    accurate=True,
)


def test_an_assessment_of_its_attempt_binds_everything() -> None:
    assert binding_problems(ASSESSMENT, BINDING) == ()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("task", "another-task"),
        ("policy", "5" * 64),
        ("attempt", "task-pair-01-explanation-r1-0dc74477/B"),
        ("answer", "6" * 64),
        ("fingerprint", "7" * 64),
        ("assessor", "the cue's author"),
        ("rubric", "8" * 64),
    ],
)
def test_each_bound_field_that_differs_is_named_on_its_own(field: str, value: str) -> None:
    [problem] = binding_problems(msgspec.structs.replace(ASSESSMENT, **{field: value}), BINDING)
    assert problem.startswith(f"{field}: binds {value!r}, the attempt's is ")


def test_other_references_and_an_attempt_without_an_answer() -> None:
    other = msgspec.structs.replace(ASSESSMENT, references=(OriginalReference(path="greet/greet.go", object="b" * 40),))
    assert binding_problems(other, BINDING) == (
        "references: not the task's targets at the reviewed revision (greet/greet.go@aaaaaaaaaaaa)",
    )
    unanswered = msgspec.structs.replace(BINDING, answer=None)
    assert binding_problems(ASSESSMENT, unanswered) == ("answer: the attempt has no answer to assess",)


def test_a_bundle_round_trips_and_refuses_unknown_fields() -> None:
    bundle = AssessmentBundle(
        schema="repocue/task-evaluation-1", kind="assessments", synthetic=True, assessments=(ASSESSMENT,)
    )
    data = msgspec.json.encode(bundle)
    assert msgspec.json.decode(data, type=AssessmentBundle) == bundle
    with pytest.raises(msgspec.ValidationError, match="verdict"):
        msgspec.json.decode(data.replace(b'"accurate":true', b'"accurate":true,"verdict":1'), type=AssessmentBundle)
