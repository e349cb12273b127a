"""An attempt's journal checked against what binds it, without I/O
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs": the summary "validates frozen inputs, digests, captured
transport, and the answer schema's pair/request/capture/invocation
identities before recalculating metrics and outcomes").

The caller reads the files (their bytes' BLAKE3, the records decoded);
these functions say what does not hold, each problem naming its file and
field:

- :func:`identity_chain`: the answer schema's four links, each on its own;
- :func:`request_problems`: ``request.json`` against the freeze, the
  manifest, the arm and the journal's cue and prompt;
- :func:`invocation_problems`: ``invocation.json`` against the arm's
  frozen command line, the frozen provider and the submitted prompt;
- :func:`start_problems`: ``attempt-start.json`` against the request, the
  invocation and the files it bound;
- :func:`record_problems`: ``attempt.json`` against the stream as
  retained, re-read (status, usage, answer, synthetic label).

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from eceb_worker.families.paired.bound_files import BoundFile, Seen, SinceBound, bound_file_problems
from eceb_worker.families.paired.journal import Attempt, AttemptStart, AttemptStatus, Invocation, Request
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME, option_value
from eceb_worker.families.paired.records import ArmCommand, Freeze, Manifest
from eceb_worker.families.paired.summary_document import IdentityLink
from eceb_worker.families.paired.transport import Transport

__all__ = ["identity_chain", "invocation_problems", "record_problems", "request_problems", "start_problems"]

RUNNER_STATUSES: Final = frozenset(
    {AttemptStatus.MUTATED, AttemptStatus.CANCELLED, AttemptStatus.TIMED_OUT, AttemptStatus.SPAWN_FAILED}
)
"""Statuses only the runner saw happen (a signal, the clock, a failed
spawn, the repository after): the stream cannot confirm or refute them."""


def identity_chain(
    manifest: Manifest,
    pair_schema: str | None,
    request: Request | None,
    capture: str | None,
    invocation: Invocation | None,
    capture_path: str,
) -> tuple[IdentityLink, ...]:
    """The answer schema's identity chain of one attempt, each link checked
    on its own (a broken link does not hide the next).

    ``pair_schema``: BLAKE3 of the pair directory's ``answer.schema.json``
    (``None`` when missing); ``request``: the attempt's request (``None``
    when missing or invalid); ``capture``: BLAKE3 of the attempt's captured
    ``answer.schema.json`` (``None`` when missing); ``invocation``: the
    attempt's invocation; ``capture_path``: the captured file's absolute
    path. Links (:class:`~eceb_worker.families.paired.summary.IdentityLink`):

    - pair: the manifest's ``output_schema_digest`` is ``pair_schema``;
    - request: the request binds the manifest's digest and its schema path;
    - capture: the captured bytes have the request's digest;
    - invocation: the invocation's ``output_schema`` is the captured file
      (path and digest) and its ``--output-schema`` argument that path.
    """
    bound = manifest.output_schema_digest
    links = []
    if pair_schema is None:
        links.append(IdentityLink(link="pair", holds=False, problem=f"{ANSWER_SCHEMA_NAME} of the pair is missing"))
    elif pair_schema != bound:
        problem = (
            f"the pair's {ANSWER_SCHEMA_NAME} has BLAKE3 {pair_schema}; manifest.json output_schema_digest {bound}"
        )
        links.append(IdentityLink(link="pair", holds=False, problem=problem))
    else:
        links.append(IdentityLink(link="pair", holds=True, problem=None))
    if request is None:
        links.append(IdentityLink(link="request", holds=False, problem="request.json is missing or invalid"))
    elif request.output_schema_digest != bound:
        problem = f"request.json output_schema_digest {request.output_schema_digest} is not the manifest's {bound}"
        links.append(IdentityLink(link="request", holds=False, problem=problem))
    elif request.pair_schema_path != manifest.answer_schema:
        problem = f"request.json pair_schema_path {request.pair_schema_path!r} is not {manifest.answer_schema!r}"
        links.append(IdentityLink(link="request", holds=False, problem=problem))
    else:
        links.append(IdentityLink(link="request", holds=True, problem=None))
    wanted = request.output_schema_digest if request is not None else bound
    if capture is None:
        problem = f"the attempt's captured {ANSWER_SCHEMA_NAME} is missing"
        links.append(IdentityLink(link="capture", holds=False, problem=problem))
    elif capture != wanted:
        problem = f"the captured {ANSWER_SCHEMA_NAME} has BLAKE3 {capture}; the request binds {wanted}"
        links.append(IdentityLink(link="capture", holds=False, problem=problem))
    else:
        links.append(IdentityLink(link="capture", holds=True, problem=None))
    links.append(_invocation_link(invocation, capture, capture_path))
    return tuple(links)


def _invocation_link(invocation: Invocation | None, capture: str | None, capture_path: str) -> IdentityLink:
    if invocation is None:
        return IdentityLink(link="invocation", holds=False, problem="invocation.json is missing or invalid")
    given = invocation.output_schema
    argument = option_value(invocation.argv, "--output-schema")
    if capture is not None and given.blake3 != capture:
        problem = f"invocation.json output_schema binds {given.blake3}; the captured file has {capture}"
    elif given.path != capture_path:
        problem = f"invocation.json output_schema is {given.path!r}, not the captured file {capture_path!r}"
    elif argument != given.path:
        problem = f"invocation.json argv gives --output-schema {argument!r}, not its output_schema {given.path!r}"
    else:
        return IdentityLink(link="invocation", holds=True, problem=None)
    return IdentityLink(link="invocation", holds=False, problem=problem)


def request_problems(
    request: Request,
    *,
    attempt_id: str,
    freeze: Freeze,
    freeze_digest: str,
    manifest: Manifest,
    manifest_digest: str,
    arm: ArmCommand,
    digests: Mapping[str, str],
) -> list[str]:
    """Every field of ``request`` that is not what the runner had to ask:
    this attempt, the freeze and the manifest by digest, the pair and arm,
    the task, the frozen settings, and the journal's ``cue`` and
    ``prompt.txt`` by digest (``digests``: journal file name -> BLAKE3).
    The schema fields are :func:`identity_chain`'s."""
    expected = {
        "attempt_id": attempt_id,
        "freeze_digest": freeze_digest,
        "manifest_digest": manifest_digest,
        "pair": manifest.pair,
        "arm": arm.arm,
        "task_id": manifest.task_id,
        "model": freeze.model,
        "reasoning_effort": freeze.reasoning_effort,
        "speed_tier": freeze.speed_tier,
        "sandbox": freeze.sandbox,
        "cue": digests.get("cue"),
        "prompt": digests.get("prompt.txt"),
    }
    problems = []
    for field, wanted in expected.items():
        shown = getattr(request, field)
        if wanted is None:
            problems.append(f"request.json {field}: binds a file the journal does not hold")
        elif shown != wanted:
            problems.append(f"request.json {field}: {_text(shown)}, not {_text(wanted)}")
    if digests.get("cue") is not None and digests.get("cue") != arm.context.blake3:
        problems.append(f"cue: not the arm's context {arm.context.path} the manifest binds")
    return problems


def _text(value: object) -> str:
    shown = getattr(value, "value", None)
    if isinstance(shown, str):
        return shown
    position = getattr(value, "position", None)
    if position is not None:
        return f"pair {position}"
    return repr(value)


def invocation_problems(
    invocation: Invocation, *, arm: ArmCommand, freeze: Freeze, digests: Mapping[str, str]
) -> list[str]:
    """Every way ``invocation`` is not what the arm was frozen to run: its
    ``argv`` the manifest's command line, ``cwd`` the frozen repository,
    ``executable`` the frozen provider, ``stdin`` the journal's
    ``submitted-prompt.txt`` and that prompt the rendered ``prompt.txt``."""
    problems = []
    if invocation.argv != arm.argv:
        problems.append("invocation.json argv: not the arm's command line in manifest.json")
    if invocation.cwd != freeze.repository.path:
        problems.append(f"invocation.json cwd: {invocation.cwd!r}, not the frozen repository")
    if invocation.executable != freeze.provider:
        problems.append("invocation.json executable: not the frozen provider (path, BLAKE3, size or version)")
    submitted = digests.get("submitted-prompt.txt")
    if invocation.stdin.blake3 != submitted:
        problems.append("invocation.json stdin: not the BLAKE3 of submitted-prompt.txt")
    if submitted is not None and submitted != digests.get("prompt.txt"):
        problems.append("submitted-prompt.txt: not the prompt the request binds (prompt.txt)")
    return problems


def start_problems(start: AttemptStart, *, attempt_id: str, digests: Mapping[str, str], fingerprint: str) -> list[str]:
    """Every way ``attempt-start.json`` does not bind this attempt's
    request and invocation (``digests``: journal file name -> BLAKE3 of its
    bytes now), the files it bound (by digest:
    :func:`~eceb_worker.families.paired.bound_files.bound_file_problems`),
    and the repository at its frozen ``fingerprint``."""
    problems = []
    if start.attempt_id != attempt_id:
        problems.append(f"attempt-start.json attempt_id: {start.attempt_id!r}, not {attempt_id!r}")
    for field, name in (("request", "request.json"), ("invocation", "invocation.json")):
        if getattr(start, field) != digests.get(name):
            problems.append(f"attempt-start.json {field}: not the BLAKE3 of {name}")
    bound = [BoundFile(file=file, location=file.path) for file in start.files]
    seen = {name: Seen(blake3=digest) for name, digest in digests.items()}
    problems += [str(problem) for problem in bound_file_problems(bound, seen, SinceBound("attempt-start.json"))]
    if start.fingerprint_before != fingerprint:
        problems.append("attempt-start.json fingerprint_before: not the frozen repository's fingerprint")
    return problems


def record_problems(
    record: Attempt, *, attempt_id: str, start: AttemptStart, transport: Transport | None, answer: str | None
) -> list[str]:
    """Every way ``attempt.json`` disagrees with the evidence it summarizes:
    its id, its start (``started_at``, ``fingerprint_before``), and the
    retained stream re-read (``transport``, ``None`` without one): the
    transport status, the usage, the partial usage, the synthetic label and
    the answer's digest (``answer``: BLAKE3 of the last agent message, or
    ``None``). A ``completed`` record needs a completed transport."""
    problems = []
    if record.attempt_id != attempt_id:
        problems.append(f"attempt.json attempt_id: {record.attempt_id!r}, not {attempt_id!r}")
    if record.started_at != start.started_at:
        problems.append("attempt.json started_at: not attempt-start.json's")
    if record.fingerprint_before != start.fingerprint_before:
        problems.append("attempt.json fingerprint_before: not attempt-start.json's")
    status = transport.status if transport is not None else None
    if record.transport != status:
        shown = status.value if status is not None else "no stream"
        said = record.transport.value if record.transport is not None else "none"
        problems.append(f"attempt.json transport: {said}; provider.jsonl re-read shows {shown}")
    usage = transport.usage if transport is not None else None
    partial = transport.partial_usage if transport is not None else None
    if record.usage != usage:
        problems.append("attempt.json usage: not the completed turn's usage in provider.jsonl")
    if record.partial_usage != partial:
        problems.append("attempt.json partial_usage: not what provider.jsonl shows")
    if transport is not None and record.synthetic != transport.synthetic:
        problems.append(f"attempt.json synthetic: {record.synthetic}; provider.jsonl says {transport.synthetic}")
    if record.answer != answer:
        problems.append("attempt.json answer: not the BLAKE3 of the last agent message in provider.jsonl")
    if record.status is AttemptStatus.COMPLETED and record.exit_code != 0:
        problems.append(f"attempt.json status: completed with exit code {record.exit_code}")
    if record.status is AttemptStatus.COMPLETED and record.fingerprint_after != record.fingerprint_before:
        problems.append("attempt.json status: completed, though the repository's fingerprint changed")
    return problems
