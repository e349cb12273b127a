"""The nightly's corpus steps (``eceb-dist nightly --register-rules``):
register tonight's snapshot of the corpus on the cluster, say what changed
since the last night's registry, pin the benchmark to tonight's corpus
root, and, once the night's jobs succeeded, keep tonight's registry as the
one tomorrow's registration starts from.

Under the reports prefix ``PREFIX``:

- ``PREFIX/registries/<job id>.jsonl``: the registry of each night, written
  by its registration job (``eceb-dist register``, incremental from
  ``PREFIX/registry.jsonl`` when it exists), its listing snapshot beside it;
- ``PREFIX/registries/<job id>.benchmark.json``: the benchmark pinned to
  that night's corpus root (its ``registry.path`` naming the registry
  beside it, ``registry.corpus_root`` its corpus root), written only when
  the corpus root is not the one the benchmark pins already;
- ``PREFIX/registry.jsonl`` (and its listing snapshot beside it,
  ``registry.listing.jsonl``, when the registration wrote one): a copy of
  the registry of the last night whose jobs succeeded.

ECEB-0.1 §6 pins a benchmark to one corpus root: a benchmark evaluated
against another corpus is refused. A nightly over a corpus that changes
every day therefore evaluates a copy of the benchmark pinned to tonight's
registry, its tasks unchanged (the same task root); a task whose required
or denied artifact is no longer registered fails that copy's checks
(exit 3, every problem named) before anything is made or evaluated.
"""

from __future__ import annotations

import posixpath
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import click
import msgspec

from eceb_cli.cluster_commands import submit_job
from eceb_cli.console import echo
from eceb_cli.conventions import info, is_quiet
from eceb_cli.outcomes import exit_for, registered_verdict, wait_until_ended

if TYPE_CHECKING:
    from eceb_worker.corpus.artifacts import Artifact
    from eceb_worker.corpus.diff import CorpusDiff, TaskChange
    from eceb_worker.io.locations import Locator
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.messages import JobMessage

__all__ = [
    "REGISTRIES",
    "REGISTRY",
    "Deadline",
    "Registered",
    "changes_lines",
    "keep_registry",
    "night_benchmark",
    "print_changes",
    "register_tonight",
    "registration",
    "repinned_benchmark",
    "unchanged_text",
]

REGISTRY: Final = "registry.jsonl"
"""The object under the reports prefix that holds the registry of the last
night whose jobs succeeded (the next night's registration starts from it)."""

REGISTRIES: Final = "registries"
"""The folder under the reports prefix where each night's registry (and
re-pinned benchmark) is written."""

SHOWN: Final = 10
"""Artifacts of each kind of change (added, removed, changed), and tasks,
the night's log lists at most; the rest are counted (``eceb corpus diff``
lists every one)."""

_BENCHMARK_SUFFIX: Final = ".benchmark.json"
_LISTING_SUFFIX: Final = ".listing.jsonl"


class Deadline:
    """What is left of the night's ``--timeout`` (seconds; ``None``: no
    bound), as each job is waited for."""

    def __init__(self, timeout: float | None) -> None:
        self._end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        """Seconds left (0.0 once past), ``None`` without a bound."""
        return None if self._end is None else max(self._end - time.monotonic(), 0.0)


class Registered(msgspec.Struct, frozen=True, kw_only=True):
    """Tonight's registry, as its registration job wrote it.

    Fields:
        job_id: the registration job.
        url: the registry (``PREFIX/registries/<job id>.jsonl``).
        corpus_root: its corpus root (64 hex characters).
        previous: the registry of the last night whose jobs succeeded
            (``PREFIX/registry.jsonl``), what tonight's is compared with;
            ``None`` when there is none.
    """

    job_id: str
    url: str
    corpus_root: str
    previous: str | None


def _listing_url(registry_url: str) -> str:
    """The listing snapshot beside the registry ``registry_url``
    (``NAME.jsonl`` -> ``NAME.listing.jsonl``, as ``eceb corpus register``
    names it)."""
    from eceb_worker.corpus.incremental import listing_name

    directory, name = posixpath.split(registry_url)
    return f"{directory}/{listing_name(name)}"


def registration(
    corpus: str, rules_path: Path, *, prefix: str, endpoint_url: str | None, objects: ObjectStore
) -> tuple[JobMessage, str | None]:
    """The message of the job registering tonight's snapshot of ``corpus``
    (``s3://bucket/prefix``) with the rules at ``rules_path`` (read and
    checked here: :class:`~eceb_worker.errors.InputError` with every
    problem; ``click.UsageError`` for a corpus that is not in object
    storage) to ``PREFIX/registries/<job id>.jsonl``, and the registry of
    the last night whose jobs succeeded, ``PREFIX/registry.jsonl``, when it
    exists (else ``None``).

    The registration is incremental from that registry when it exists
    (``eceb-dist register --previous``: only objects changed since its
    listing snapshot are read; docs/KUBERNETES.md, "Registering tonight's corpus").
    Raises ``StorageError`` when the reports prefix cannot be
    read, :class:`~eceb_worker.errors.OutputError` when the registry cannot
    be written there (under the corpus prefix)."""
    from eceb_cli.dist_register import registration_message
    from eceb_worker.core.urls import is_s3_url

    if not is_s3_url(corpus):
        raise click.UsageError(
            "--register-rules registers the corpus on the cluster, which lists object storage: "
            "--corpus must then be an s3://bucket/prefix URL"
        )
    job_id = uuid.uuid4().hex
    message = registration_message(  # the rules checked before the storage is reached
        corpus, rules_path, out=f"{prefix}/{REGISTRIES}/{job_id}.jsonl", endpoint_url=endpoint_url, job_id=job_id
    )
    kept = f"{prefix}/{REGISTRY}"
    if not objects.exists(kept) or message.registration is None:
        return message, None
    registration = msgspec.structs.replace(message.registration, previous=kept)
    return msgspec.structs.replace(message, registration=registration), kept


def register_tonight(
    message: JobMessage, previous: str | None, deadline: Deadline, *, rules: str, unchanged: Sequence[str]
) -> Registered:
    """Submit the registration ``message`` (its id printed), wait until it
    ends and print what it registered; when it failed or was cancelled, say
    that nothing was made or evaluated and exit with its code
    (:func:`~eceb_cli.outcomes.exit_for`: 3 with every problem of the rules
    or the listing, 5, 6, 8, 75 when the night's time ran out)."""
    from eceb_worker.cluster.state import Phase

    job_id = message.job_id
    cluster = submit_job(message, rules=rules)
    info(f"waiting for job {job_id} (registering tonight's corpus)")
    state = wait_until_ended(cluster, job_id, deadline.left())
    if state.phase is not Phase.DONE:
        info(f"nothing made or evaluated tonight: {unchanged_text(unchanged)} unchanged")
        exit_for(job_id, state)
    assert state.corpus_root is not None
    _say(f"tonight's corpus: {registered_verdict(state)}; registry {message.out}")
    return Registered(job_id=job_id, url=message.out, corpus_root=state.corpus_root, previous=previous)


def unchanged_text(urls: Sequence[str]) -> str:
    """``A and B``, ``A, B and C``: the objects a night that ended early left as they were."""
    return urls[0] if len(urls) == 1 else f"{', '.join(urls[:-1])} and {urls[-1]}"


def _say(line: str) -> None:
    """A line of the night's account on standard output, terminal-safe; not shown with ``-q``."""
    if not is_quiet():
        echo(line)


def _artifact_line(sign: str, artifact: Artifact) -> str:
    return (
        f"  {sign} {artifact.artifact_id} ({artifact.kind}, {artifact.classification}, {artifact.size_bytes:,} bytes)"
    )


def _bounded(lines: Sequence[str], what: str) -> Iterator[str]:
    """``lines``, at most :data:`SHOWN` of them, then how many more ``what`` there are."""
    yield from lines[:SHOWN]
    if len(lines) > SHOWN:
        yield f"  ... and {len(lines) - SHOWN:,} more {what}"


def _task_line(task: TaskChange) -> str:
    from eceb_worker.render.corpus_diff import field_change_text

    moved = []
    for entry in task.artifacts:
        text = f"{entry.role} {entry.artifact_id} {entry.change}"
        if entry.changes:
            text += " (" + "; ".join(field_change_text(change) for change in entry.changes) + ")"
        moved.append(text)
    return f"  task {task.task_id}: " + "; ".join(moved)


def changes_lines(found: CorpusDiff, old: str) -> Iterator[str]:
    """What changed since the registry ``old`` (its URL, as printed), with
    the benchmark: the summary line of ``eceb corpus diff``, then at most
    :data:`SHOWN` artifacts added (``+``), removed (``-``) and changed
    (``~``, each change named by field, old -> new), then each task whose
    required or denied artifacts moved (at most :data:`SHOWN`), the rest
    counted. Ids and paths as the registries give them (the caller prints
    them terminal-safe)."""
    from eceb_worker.render.corpus_diff import corpus_diff_summary, field_change_text

    yield f"changes since {old}: {corpus_diff_summary(found)}"
    yield from _bounded([_artifact_line("+", artifact) for artifact in found.added], "added")
    yield from _bounded([_artifact_line("-", artifact) for artifact in found.removed], "removed")
    changed = [
        f"  ~ {change.artifact_id}: " + "; ".join(field_change_text(field) for field in change.changes)
        for change in found.changed
    ]
    yield from _bounded(changed, "changed")
    if found.benchmark is not None:
        yield from _bounded([_task_line(task) for task in found.benchmark.tasks], "tasks")


def print_changes(tonight: Registered, benchmark: str, locator: Locator) -> None:
    """Print what changed from the last night's registry (or, on a night
    with none, from the benchmark's own registry) to tonight's, and which
    of the benchmark's tasks it moves (:func:`changes_lines`). Raises
    :class:`~eceb_worker.errors.InputError` naming a registry or the
    benchmark that cannot be read as one, ``StorageError``."""
    from eceb_worker.pipeline.corpus_diff import read_corpus_diff
    from eceb_worker.pipeline.inputs import load_benchmark, registry_location

    old = tonight.previous
    if old is None:
        old = registry_location(locator.locate(benchmark), load_benchmark(benchmark, locator).registry.path).name
        _say(f"no registry of a previous night: tonight's compared with the benchmark's, {old}")
    found = read_corpus_diff(old, tonight.url, benchmark, locator)
    for line in changes_lines(found, old):
        _say(line)


def repinned_benchmark(data: bytes, name: str, *, registry_path: str, corpus_root: str) -> bytes:
    """The benchmark file ``data`` (named ``name`` in problems) pinned to
    another registry: its ``registry.path`` replaced by ``registry_path``
    (relative to where the new benchmark is written) and its
    ``registry.corpus_root`` by ``corpus_root``; everything else (id,
    description, tasks, secret spans) as it was, so the task root is the
    same. Canonical JSON and a newline. Raises
    :class:`~eceb_worker.errors.InputError` when ``data`` is not a
    benchmark."""
    from eceb_worker.core.canonical import canonical_json
    from eceb_worker.core.decoding import decode_document
    from eceb_worker.families.eceb.benchmark import Benchmark, RegistryReference

    benchmark = decode_document(data, Benchmark, file=name)
    pinned = RegistryReference(path=registry_path, corpus_root=corpus_root)
    return canonical_json(msgspec.structs.replace(benchmark, registry=pinned)) + b"\n"


def night_benchmark(tonight: Registered, benchmark: str, objects: ObjectStore) -> str:
    """The benchmark the night makes and evaluates with: ``benchmark``
    itself when the corpus root it pins is tonight's (the corpus did not
    change since it was pinned), else a copy pinned to tonight's registry,
    written (atomically) beside it as ``<job id>.benchmark.json``. Says
    which. Raises :class:`~eceb_worker.errors.InputError` when
    ``benchmark`` is not one, ``StorageError``,
    :class:`~eceb_worker.errors.OutputError`."""
    data, _ = objects.get(benchmark)
    pinned = _pinned_root(data, benchmark)
    if pinned == tonight.corpus_root:
        _say(f"tonight's corpus root is the one {benchmark} pins: the benchmark is used as it is")
        return benchmark
    directory, name = posixpath.split(tonight.url)
    url = f"{directory}/{name.removesuffix('.jsonl')}{_BENCHMARK_SUFFIX}"
    objects.put_atomic(url, repinned_benchmark(data, benchmark, registry_path=name, corpus_root=tonight.corpus_root))
    _say(f"tonight's benchmark: {url} ({benchmark} pinned to corpus root {tonight.corpus_root})")
    return url


def _pinned_root(data: bytes, name: str) -> str:
    """The corpus root the benchmark file ``data`` pins (``registry.corpus_root``).
    Raises :class:`~eceb_worker.errors.InputError` when it is not a benchmark."""
    from eceb_worker.core.decoding import decode_document
    from eceb_worker.families.eceb.benchmark import Benchmark

    return decode_document(data, Benchmark, file=name).registry.corpus_root


def keep_registry(objects: ObjectStore, tonight: Registered, prefix: str) -> None:
    """Once the night's jobs succeeded: copy tonight's registry to
    ``PREFIX/registry.jsonl``, then its listing snapshot (when the
    registration wrote one) to ``PREFIX/registry.listing.jsonl``, each in
    one server-side copy (a reader sees the old object or the new one,
    never a part); without a snapshot tonight, the last one is deleted (it
    is bound to another registry and would only be refused). Says so.
    Raises :class:`~eceb_worker.errors.OutputError`, ``StorageError``."""
    kept = f"{prefix}/{REGISTRY}"
    _copy(objects, tonight.url, kept)
    listing, kept_listing = _listing_url(tonight.url), _listing_url(kept)
    if objects.exists(listing):
        _copy(objects, listing, kept_listing)
    elif objects.exists(kept_listing):
        objects.delete(kept_listing)
    _say(f"{kept} now holds tonight's registry (job {tonight.job_id})")


def _copy(objects: ObjectStore, source: str, target: str) -> None:
    """Copy the object ``source`` to ``target`` in the store (server-side:
    one request, or parts copied then completed at once for a large one).
    Raises :class:`~eceb_worker.errors.OutputError` when it cannot be written."""
    from eceb_worker.core.urls import split_object_url
    from eceb_worker.errors import OutputError
    from eceb_worker.io.s3 import REQUEST_ERRORS, Role, s3_error

    source_bucket, source_key = split_object_url(source)
    bucket, key = split_object_url(target)
    try:
        objects.client.copy({"Bucket": source_bucket, "Key": source_key}, bucket, key)
    except REQUEST_ERRORS as exc:
        error = s3_error(exc, Role.WRITING, target, endpoint=objects.endpoint)
        raise (error if isinstance(error, OutputError) else OutputError(str(error))) from None
