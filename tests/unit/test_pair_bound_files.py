"""One check of the files a record binds (task-context-benchmark-reference.md,
"Paired inputs and retained outputs": the summary "validates frozen inputs,
digests"): missing, changed and unbound files found in order, each in the
words of the command that checks them."""

from __future__ import annotations

from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import Problem
from eceb_worker.families.paired.bound_files import (
    BoundFile,
    Seen,
    SinceBound,
    SinceFrozen,
    SinceFrozenExecutable,
    SincePrepared,
    bound_file_problems,
    seen_bytes,
)
from eceb_worker.families.paired.records import FileDigest

PROMPT = b"the prompt"
CUE = b"the cue"


def bound(path: str, data: bytes, *, record: str = "", location: str | None = None) -> BoundFile:
    file = FileDigest(path=path, blake3=digest_bytes(data), size=len(data))
    return BoundFile(file=file, location=location or path, record=record)


def test_files_as_bound_have_no_problem() -> None:
    files = [bound("prompt.txt", PROMPT), bound("cue", CUE)]
    seen = {"prompt.txt": seen_bytes(PROMPT), "cue": seen_bytes(CUE)}
    assert bound_file_problems(files, seen, SinceBound("attempt.json")) == []


def test_missing_and_changed_files_are_named_in_order_in_the_binders_words() -> None:
    files = [bound("prompt.txt", PROMPT), bound("cue", CUE), bound("other", CUE)]
    seen = {"prompt.txt": seen_bytes(b"another prompt"), "other": seen_bytes(CUE)}
    found = bound_file_problems(files, seen, SinceBound("manifest.json"))
    assert [str(problem) for problem in found] == [
        "prompt.txt: changed since manifest.json bound it",
        "cue: missing, though manifest.json binds it",
    ]


def test_a_size_not_known_is_not_compared_a_size_known_is() -> None:
    files = [bound("prompt.txt", PROMPT)]
    digest_only = {"prompt.txt": Seen(blake3=digest_bytes(PROMPT))}
    assert bound_file_problems(files, digest_only, SinceBound("attempt-start.json")) == []
    other_size = {"prompt.txt": Seen(blake3=digest_bytes(PROMPT), size=len(PROMPT) + 1)}
    assert [p.message for p in bound_file_problems(files, other_size, SinceBound("attempt.json"))] == [
        "changed since attempt.json bound it"
    ]


def test_required_names_are_checked_in_their_order_unbound_ones_named_missing_ones_left_to_the_caller() -> None:
    files = [bound("cue", CUE), bound("extra", CUE), bound("prompt.txt", PROMPT)]
    seen = {"prompt.txt": seen_bytes(b"changed"), "extra": seen_bytes(b"changed too")}
    wording = SinceBound("attempt.json", name_missing=False)
    found = bound_file_problems(files, seen, wording, required=["request.json", "cue", "prompt.txt"])
    assert [str(problem) for problem in found] == [
        "request.json: attempt.json does not bind it",
        "prompt.txt: changed since attempt.json bound it",
    ]


def test_run_words_a_file_not_read_as_the_manifests_record_and_a_changed_one_with_both_digests() -> None:
    manifest = "/x/task-pair-01/manifest.json"
    files = [
        bound("task.json", PROMPT, record="files[0]", location="/x/task-pair-01/task.json"),
        bound("arms/B/context", CUE, record="arms[1]", location="/x/task-pair-01/arms/B/context"),
    ]
    now = seen_bytes(b"edited")
    seen = {"/x/task-pair-01/arms/B/context": now}
    why = {"/x/task-pair-01/task.json": [Problem(file="/x/task-pair-01/task.json", message="cannot read: gone")]}
    found = bound_file_problems(files, seen, SincePrepared(manifest), why=why)
    assert found == [
        Problem(file=manifest, record="files[0]", field="path", message="cannot read: gone"),
        Problem(
            file="/x/task-pair-01/arms/B/context",
            message=f"changed since the pair was prepared: BLAKE3 {now.blake3}, {now.size} bytes, "
            f"the manifest (arms[1]) binds {digest_bytes(CUE)}, {len(CUE)} bytes",
        ),
    ]


def test_prepare_names_a_file_not_read_by_the_readings_own_problems() -> None:
    files = [bound("benchmark.json", PROMPT, location="/b/benchmark.json"), bound("rates.json", CUE)]
    reading = Problem(file="/b/benchmark.json", message="cannot read: permission denied")
    now = seen_bytes(b"edited")
    found = bound_file_problems(files, {"rates.json": now}, SinceFrozen(), why={"/b/benchmark.json": [reading]})
    assert found == [
        reading,
        Problem(
            file="rates.json",
            message=f"changed since the freeze: BLAKE3 {now.blake3} ({now.size} bytes), frozen "
            f"{digest_bytes(CUE)} ({len(CUE)} bytes); freeze again into a new directory",
        ),
    ]


def test_a_file_bound_twice_is_checked_each_time_it_is_listed() -> None:
    files = [bound("arms/A/context", CUE, record="files[3]"), bound("arms/A/context", CUE, record="arms[0]")]
    found = bound_file_problems(files, {"arms/A/context": seen_bytes(b"edited")}, SincePrepared("manifest.json"))
    assert ["the manifest (files[3])" in found[0].message, "the manifest (arms[0])" in found[1].message] == [
        True,
        True,
    ]
    assert len(found) == 2


def test_prepare_words_a_changed_executable_by_its_role_alone_and_one_not_read_by_the_readings_problems() -> None:
    provider = "/usr/local/bin/codex"
    files = [bound(provider, PROMPT), bound("/opt/bin/gone", CUE)]
    reading = Problem(file="/opt/bin/gone", message="cannot read: No such file or directory")
    wording = SinceFrozenExecutable("provider")
    found = bound_file_problems(
        files, {provider: Seen(blake3=digest_bytes(b"rebuilt"))}, wording, why={"/opt/bin/gone": [reading]}
    )
    assert found == [
        Problem(
            file=provider,
            message="the provider executable changed since the freeze; freeze again into a new directory",
        ),
        reading,
    ]
    assert bound_file_problems(files[:1], {provider: Seen(blake3=digest_bytes(PROMPT))}, wording) == []
    assert bound_file_problems(files[1:], {}, wording) == [Problem(file="/opt/bin/gone", message="missing")]
    assert [str(p) for p in bound_file_problems(files, {}, wording, required=["cue"])] == [
        "cue: the freeze does not bind it"
    ]
