"""An attempt's journal checked against what binds it
(task-context-benchmark-reference.md, "Paired inputs and retained outputs":
the summary validates frozen inputs, digests, captured transport and the
answer schema's pair/request/capture/invocation identities): each link and
each field on its own, a broken one never hiding the next."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
import pytest

from eceb_worker.families.paired.evidence import (
    identity_chain,
    invocation_problems,
    record_problems,
    request_problems,
    start_problems,
)
from eceb_worker.families.paired.journal import (
    ATTEMPT_SCHEMA,
    ATTEMPT_START_SCHEMA,
    INVOCATION_SCHEMA,
    REQUEST_SCHEMA,
    Attempt,
    AttemptStart,
    AttemptStatus,
    Invocation,
    Request,
)
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.records import (
    FREEZE_SCHEMA,
    MANIFEST_SCHEMA,
    ArmCommand,
    ArmInputs,
    Executable,
    FileDigest,
    Freeze,
    Manifest,
    ObservedSupport,
    PairPosition,
    Repository,
)
from eceb_worker.families.paired.schedule import Arm, TaskKind
from eceb_worker.families.paired.summary_document import IdentityLink
from eceb_worker.families.paired.transport import Transport, TransportStatus, Usage

pytestmark = pytest.mark.unit


def digest(char: str) -> str:
    return char * 64


SCHEMA = digest("5")
OTHER = digest("6")
FINGERPRINT = digest("9")
FREEZE_DIGEST = digest("f")
MANIFEST_DIGEST = digest("d")
CUE = digest("c")
PROMPT = digest("7")
REQUEST_DIGEST = digest("2")
INVOCATION_DIGEST = digest("3")
ANSWER = digest("a")
PAIR_DIRECTORY = "/exp/task-pair-01-explanation-r1-0badcafe"
ATTEMPT_ID = "task-pair-01-explanation-r1-0badcafe/A"
CAPTURE_PATH = f"{PAIR_DIRECTORY}/attempts/A/answer.schema.json"
STARTED_AT = "2026-12-01T15:04:05.123456Z"
USAGE = Usage(input_tokens=2000, cached_input_tokens=500, output_tokens=300, reasoning_output_tokens=100)


def file(path: str, blake3: str, size: int = 10) -> FileDigest:
    return FileDigest(path=path, blake3=blake3, size=size)


PROVIDER = Executable(name="codex", path="/usr/bin/codex", blake3=digest("e"), size=4096, version="codex-cli 0.171.0")
FREEZE = Freeze(
    schema=FREEZE_SCHEMA,
    label="test",
    synthetic=True,
    benchmark=file("benchmark.json", digest("b")),
    repository=Repository(
        path="/repo",
        reviewed_revision="1" * 40,
        head="1" * 40,
        tree="2" * 40,
        fingerprint=FINGERPRINT,
        clean=True,
    ),
    declaration=file(".repocue/declaration.json", digest("4")),
    declaration_object="3" * 40,
    sources=(),
    checks=(),
    tasks=(),
    overview=file("overview.md", digest("8")),
    overview_tokens=900,
    cue_command=Executable(name="./cue.py", path="/b/cue.py", blake3=digest("1"), size=1),
    cue_argv=("./cue.py",),
    cue_budget_tokens=1200,
    provider=PROVIDER,
    adapter="codex",
    model="gpt-5-codex",
    reasoning_effort="medium",
    speed_tier="standard",
    sandbox="read-only",
    timeout_s=600,
    observed_support=ObservedSupport(),
    success_criteria=file("success.json", digest("0")),
    rubric=file("rubric.md", digest("0")),
    assessor="an independent reviewer",
    assessor_independent=True,
    pairs=9,
    evidence_coverage="every pair",
    missing_semantic_evidence="unassessed",
    rates=None,
    external_evidence="/evidence",
    authorized_executions=18,
    spending_stop_on=(),
    pilot_continuation="explicit approval",
    frozen_at="2026-11-30T00:00:00Z",
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
    output_schema_digest=SCHEMA,
)


def arm_command(arm: Arm) -> ArmCommand:
    return ArmCommand(
        arm=arm,
        inputs=INPUTS,
        context=file(f"arms/{arm.value}/context", CUE if arm is Arm.A else digest("b")),
        context_tokens=900,
        cue_command=None if arm is Arm.A else FREEZE.cue_command,
        argv=codex_argv(
            executable=PROVIDER.path,
            output_schema=f"{PAIR_DIRECTORY}/attempts/{arm.value}/answer.schema.json",
            repository="/repo",
            model="gpt-5-codex",
            reasoning_effort="medium",
            speed_tier="standard",
            sandbox="read-only",
        ),
        attempt=f"attempts/{arm.value}",
    )


ARM = arm_command(Arm.A)
MANIFEST = Manifest(
    schema=MANIFEST_SCHEMA,
    label="test",
    synthetic=True,
    freeze_digest=FREEZE_DIGEST,
    pair=PairPosition(position=1, task=TaskKind.EXPLANATION, repeat=1, order=(Arm.A, Arm.B), pilot=True),
    task_id="explain-hello",
    output_schema_digest=SCHEMA,
    answer_schema="answer.schema.json",
    files=(),
    arms=(ARM, arm_command(Arm.B)),
    prepared_at="2026-11-30T00:00:01Z",
)
REQUEST = Request(
    schema=REQUEST_SCHEMA,
    attempt_id=ATTEMPT_ID,
    freeze_digest=FREEZE_DIGEST,
    manifest_digest=MANIFEST_DIGEST,
    pair=MANIFEST.pair,
    arm=Arm.A,
    task_id="explain-hello",
    model="gpt-5-codex",
    reasoning_effort="medium",
    speed_tier="standard",
    sandbox="read-only",
    output_schema_digest=SCHEMA,
    pair_schema_path="answer.schema.json",
    cue=CUE,
    prompt=PROMPT,
)
INVOCATION = Invocation(
    schema=INVOCATION_SCHEMA,
    argv=ARM.argv,
    cwd="/repo",
    executable=PROVIDER,
    stdin=file("submitted-prompt.txt", PROMPT),
    output_schema=file(CAPTURE_PATH, SCHEMA),
    environment=("HOME", "PATH"),
)
INVOCATION_OF_OTHER = msgspec.structs.replace(INVOCATION, output_schema=file(CAPTURE_PATH, OTHER))
"""An invocation giving the provider a captured schema whose bytes are OTHER."""
DIGESTS: dict[str, str] = {
    "cue": CUE,
    "prompt.txt": PROMPT,
    "request.json": REQUEST_DIGEST,
    "submitted-prompt.txt": PROMPT,
    "answer.schema.json": SCHEMA,
    "invocation.json": INVOCATION_DIGEST,
}
START = AttemptStart(
    schema=ATTEMPT_START_SCHEMA,
    attempt_id=ATTEMPT_ID,
    ledger_position=1,
    request=REQUEST_DIGEST,
    invocation=INVOCATION_DIGEST,
    files=tuple(file(name, blake3) for name, blake3 in DIGESTS.items()),
    fingerprint_before=FINGERPRINT,
    started_at=STARTED_AT,
)
TRANSPORT = Transport(
    status=TransportStatus.COMPLETED,
    problems=(),
    thread_id="synthetic-thread-1",
    turns=1,
    agent_messages=('{"claims": []}',),
    commands=(),
    usage=USAGE,
    partial_usage=None,
)
RECORD = Attempt(
    schema=ATTEMPT_SCHEMA,
    attempt_id=ATTEMPT_ID,
    synthetic=True,
    status=AttemptStatus.COMPLETED,
    transport=TransportStatus.COMPLETED,
    problems=(),
    exit_code=0,
    signal=None,
    usage=USAGE,
    partial_usage=None,
    answer=ANSWER,
    fingerprint_before=FINGERPRINT,
    fingerprint_after=FINGERPRINT,
    files=(),
    started_at=STARTED_AT,
    ended_at="2026-12-01T15:04:07Z",
)


def chain(
    *,
    pair_schema: str | None = SCHEMA,
    request: Request | None = REQUEST,
    capture: str | None = SCHEMA,
    invocation: Invocation | None = INVOCATION,
) -> tuple[IdentityLink, ...]:
    return identity_chain(MANIFEST, pair_schema, request, capture, invocation, CAPTURE_PATH)


def broken(links: tuple[IdentityLink, ...]) -> list[str]:
    """The links that do not hold, each checked to say why."""
    assert [link.link for link in links] == ["pair", "request", "capture", "invocation"]
    assert all((link.problem is None) == link.holds for link in links)
    return [link.link for link in links if not link.holds]


def problem_of(links: tuple[IdentityLink, ...], name: str) -> str:
    (found,) = [link for link in links if link.link == name]
    assert found.problem is not None
    return found.problem


def with_argv_schema(invocation: Invocation, path: str) -> Invocation:
    argv = list(invocation.argv)
    argv[argv.index("--output-schema") + 1] = path
    return msgspec.structs.replace(invocation, argv=tuple(argv))


def requested(
    request: Request = REQUEST, *, attempt_id: str = ATTEMPT_ID, digests: Mapping[str, str] = DIGESTS
) -> list[str]:
    return request_problems(
        request,
        attempt_id=attempt_id,
        freeze=FREEZE,
        freeze_digest=FREEZE_DIGEST,
        manifest=MANIFEST,
        manifest_digest=MANIFEST_DIGEST,
        arm=ARM,
        digests=digests,
    )


def invoked(invocation: Invocation = INVOCATION, *, digests: Mapping[str, str] = DIGESTS) -> list[str]:
    return invocation_problems(invocation, arm=ARM, freeze=FREEZE, digests=digests)


def started(start: AttemptStart = START, *, digests: Mapping[str, str] = DIGESTS) -> list[str]:
    return start_problems(start, attempt_id=ATTEMPT_ID, digests=digests, fingerprint=FINGERPRINT)


def recorded(
    record: Attempt = RECORD, *, transport: Transport | None = TRANSPORT, answer: str | None = ANSWER
) -> list[str]:
    return record_problems(record, attempt_id=ATTEMPT_ID, start=START, transport=transport, answer=answer)


# --- the identity chain


def test_a_consistent_chain_holds_on_all_four_links() -> None:
    assert [(link.link, link.holds, link.problem) for link in chain()] == [
        ("pair", True, None),
        ("request", True, None),
        ("capture", True, None),
        ("invocation", True, None),
    ]


def test_a_pair_schema_that_is_not_the_manifests_breaks_the_pair_link_alone() -> None:
    links = chain(pair_schema=OTHER)
    assert broken(links) == ["pair"]
    assert OTHER in problem_of(links, "pair") and SCHEMA in problem_of(links, "pair")
    missing = chain(pair_schema=None)
    assert broken(missing) == ["pair"]
    assert problem_of(missing, "pair") == "answer.schema.json of the pair is missing"


def test_a_request_binding_another_digest_breaks_the_request_link_and_the_capture_is_checked_against_it() -> None:
    request = msgspec.structs.replace(REQUEST, output_schema_digest=OTHER)
    captured_as_requested = chain(request=request, capture=OTHER, invocation=INVOCATION_OF_OTHER)
    assert broken(captured_as_requested) == ["request"]
    assert problem_of(captured_as_requested, "request") == (
        f"request.json output_schema_digest {OTHER} is not the manifest's {SCHEMA}"
    )
    captured_as_the_manifest = chain(request=request)
    assert broken(captured_as_the_manifest) == ["request", "capture"]
    assert problem_of(captured_as_the_manifest, "capture") == (
        f"the captured answer.schema.json has BLAKE3 {SCHEMA}; the request binds {OTHER}"
    )


def test_a_request_naming_another_schema_path_breaks_the_request_link_alone() -> None:
    links = chain(request=msgspec.structs.replace(REQUEST, pair_schema_path="attempts/A/answer.schema.json"))
    assert broken(links) == ["request"]
    assert "pair_schema_path" in problem_of(links, "request")


def test_a_capture_with_other_bytes_breaks_the_capture_link_alone() -> None:
    links = chain(capture=OTHER, invocation=INVOCATION_OF_OTHER)
    assert broken(links) == ["capture"]
    missing = chain(capture=None)
    assert broken(missing) == ["capture"]
    assert problem_of(missing, "capture") == "the attempt's captured answer.schema.json is missing"


def test_a_changed_capture_the_invocation_did_not_bind_breaks_both_later_links() -> None:
    assert broken(chain(capture=OTHER)) == ["capture", "invocation"]


@pytest.mark.parametrize(
    ("invocation", "words"),
    [
        (INVOCATION_OF_OTHER, "output_schema binds"),
        (
            with_argv_schema(
                msgspec.structs.replace(INVOCATION, output_schema=file("/tmp/answer.schema.json", SCHEMA)),
                "/tmp/answer.schema.json",
            ),
            "not the captured file",
        ),
        (with_argv_schema(INVOCATION, "/tmp/answer.schema.json"), "argv gives --output-schema"),
    ],
    ids=["digest", "path", "argument"],
)
def test_an_invocation_not_giving_the_captured_file_breaks_the_invocation_link_alone(
    invocation: Invocation, words: str
) -> None:
    links = chain(invocation=invocation)
    assert broken(links) == ["invocation"]
    assert words in problem_of(links, "invocation")


def test_a_missing_request_or_invocation_breaks_its_link_and_the_rest_are_still_checked() -> None:
    no_request = chain(request=None)
    assert broken(no_request) == ["request"]
    assert problem_of(no_request, "request") == "request.json is missing or invalid"
    no_invocation = chain(invocation=None)
    assert broken(no_invocation) == ["invocation"]
    assert problem_of(no_invocation, "invocation") == "invocation.json is missing or invalid"
    assert broken(chain(request=None, invocation=None)) == ["request", "invocation"]
    # without a request, the capture is held to the manifest's digest
    assert broken(chain(request=None, capture=OTHER, invocation=INVOCATION_OF_OTHER)) == ["request", "capture"]


# --- request.json


def test_a_request_as_the_runner_had_to_ask_has_no_problem() -> None:
    assert requested() == []


def test_a_request_of_another_attempt_is_named() -> None:
    other = "task-pair-01-explanation-r1-0badcafe/B"
    assert requested(attempt_id=other) == [f"request.json attempt_id: {ATTEMPT_ID!r}, not {other!r}"]


def test_a_request_with_another_model_is_named() -> None:
    assert requested(msgspec.structs.replace(REQUEST, model="gpt-5-mini")) == [
        "request.json model: 'gpt-5-mini', not 'gpt-5-codex'"
    ]


def test_a_request_for_the_other_arm_is_named() -> None:
    assert requested(msgspec.structs.replace(REQUEST, arm=Arm.B)) == ["request.json arm: B, not A"]


def test_a_request_under_another_freeze_is_named() -> None:
    assert requested(msgspec.structs.replace(REQUEST, freeze_digest=OTHER)) == [
        f"request.json freeze_digest: {OTHER!r}, not {FREEZE_DIGEST!r}"
    ]


def test_a_request_for_another_pair_is_named() -> None:
    other = msgspec.structs.replace(MANIFEST.pair, position=4, repeat=2, order=(Arm.B, Arm.A), pilot=False)
    (problem,) = requested(msgspec.structs.replace(REQUEST, pair=other))
    assert problem.startswith("request.json pair: ")


def test_a_prompt_changed_since_the_request_is_named() -> None:
    assert requested(digests={**DIGESTS, "prompt.txt": OTHER}) == [f"request.json prompt: {PROMPT!r}, not {OTHER!r}"]


def test_a_cue_that_is_not_the_arms_context_is_named() -> None:
    assert requested(msgspec.structs.replace(REQUEST, cue=OTHER), digests={**DIGESTS, "cue": OTHER}) == [
        "cue: not the arm's context arms/A/context the manifest binds"
    ]


# --- invocation.json


def test_an_invocation_as_frozen_has_no_problem() -> None:
    assert invoked() == []


def test_an_invocation_with_another_command_line_is_named() -> None:
    argv = list(INVOCATION.argv)
    argv[argv.index("-m") + 1] = "gpt-5-mini"
    assert invoked(msgspec.structs.replace(INVOCATION, argv=tuple(argv))) == [
        "invocation.json argv: not the arm's command line in manifest.json"
    ]


def test_an_invocation_in_another_directory_is_named() -> None:
    assert invoked(msgspec.structs.replace(INVOCATION, cwd="/elsewhere")) == [
        "invocation.json cwd: '/elsewhere', not the frozen repository"
    ]


def test_an_invocation_of_another_provider_version_is_named() -> None:
    provider = msgspec.structs.replace(PROVIDER, version="codex-cli 0.172.0")
    assert invoked(msgspec.structs.replace(INVOCATION, executable=provider)) == [
        "invocation.json executable: not the frozen provider (path, BLAKE3, size or version)"
    ]


def test_an_invocation_whose_stdin_is_not_the_submitted_prompt_is_named() -> None:
    assert invoked(msgspec.structs.replace(INVOCATION, stdin=file("submitted-prompt.txt", OTHER))) == [
        "invocation.json stdin: not the BLAKE3 of submitted-prompt.txt"
    ]


def test_a_submitted_prompt_that_is_not_the_rendered_prompt_is_named() -> None:
    submitted = msgspec.structs.replace(INVOCATION, stdin=file("submitted-prompt.txt", OTHER))
    assert invoked(submitted, digests={**DIGESTS, "submitted-prompt.txt": OTHER}) == [
        "submitted-prompt.txt: not the prompt the request binds (prompt.txt)"
    ]


# --- attempt-start.json


def test_a_start_binding_the_journal_as_it_is_has_no_problem() -> None:
    assert started() == []


def test_a_start_of_another_attempt_is_named() -> None:
    other = "task-pair-01-explanation-r1-0badcafe/B"
    assert started(msgspec.structs.replace(START, attempt_id=other)) == [
        f"attempt-start.json attempt_id: {other!r}, not {ATTEMPT_ID!r}"
    ]


def test_a_start_binding_another_request_is_named() -> None:
    assert started(msgspec.structs.replace(START, request=OTHER)) == [
        "attempt-start.json request: not the BLAKE3 of request.json"
    ]


def test_a_file_changed_or_missing_since_the_start_is_named() -> None:
    assert started(digests={**DIGESTS, "prompt.txt": OTHER}) == [
        "prompt.txt: changed since attempt-start.json bound it"
    ]
    without_cue = {name: blake3 for name, blake3 in DIGESTS.items() if name != "cue"}
    assert started(digests=without_cue) == ["cue: missing, though attempt-start.json binds it"]


def test_a_start_from_another_repository_state_is_named() -> None:
    assert started(msgspec.structs.replace(START, fingerprint_before=OTHER)) == [
        "attempt-start.json fingerprint_before: not the frozen repository's fingerprint"
    ]


# --- attempt.json


def test_a_record_agreeing_with_its_stream_has_no_problem() -> None:
    assert recorded() == []


def test_a_record_with_other_usage_is_named() -> None:
    more = msgspec.structs.replace(USAGE, output_tokens=301)
    assert recorded(msgspec.structs.replace(RECORD, usage=more)) == [
        "attempt.json usage: not the completed turn's usage in provider.jsonl"
    ]


def test_a_record_with_another_transport_status_is_named() -> None:
    assert recorded(msgspec.structs.replace(RECORD, transport=TransportStatus.PARTIAL)) == [
        "attempt.json transport: partial; provider.jsonl re-read shows completed"
    ]


def test_a_record_that_drops_the_synthetic_label_is_named() -> None:
    assert recorded(msgspec.structs.replace(RECORD, synthetic=False)) == [
        "attempt.json synthetic: False; provider.jsonl says True"
    ]


def test_a_record_with_another_answer_is_named() -> None:
    assert recorded(answer=OTHER) == ["attempt.json answer: not the BLAKE3 of the last agent message in provider.jsonl"]


def test_a_record_started_at_another_time_is_named() -> None:
    assert recorded(msgspec.structs.replace(RECORD, started_at="2026-12-01T15:04:05Z")) == [
        "attempt.json started_at: not attempt-start.json's"
    ]


def test_a_completed_record_with_a_nonzero_exit_or_a_changed_repository_is_named() -> None:
    assert recorded(msgspec.structs.replace(RECORD, exit_code=1)) == ["attempt.json status: completed with exit code 1"]
    assert recorded(msgspec.structs.replace(RECORD, fingerprint_after=OTHER)) == [
        "attempt.json status: completed, though the repository's fingerprint changed"
    ]


def test_a_record_without_its_stream_is_named() -> None:
    assert recorded(transport=None) == [
        "attempt.json transport: completed; provider.jsonl re-read shows no stream",
        "attempt.json usage: not the completed turn's usage in provider.jsonl",
    ]
