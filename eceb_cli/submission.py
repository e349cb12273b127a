"""What ``eceb-dist`` checks of a job before it queues it: its locations
(usage errors, naming the option), and that its inputs exist and its
output can be written (as ``eceb evaluate`` would report them); and the
message of an evaluation job (``submit``, ``nightly``).
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Final

import click
import msgspec

from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.options import DEFAULT_EVALUATION, EvaluationOptions

if TYPE_CHECKING:
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.messages import JobMessage

__all__ = ["DEFAULT_CONCURRENCY", "check_submission", "corpus_argument", "evaluation_message", "object_argument"]

DEFAULT_CONCURRENCY: Final = 16
"""Object reads a worker keeps in flight (``--concurrency``)."""


def corpus_argument(value: str) -> str:
    """``--corpus`` checked: an ``s3://bucket/prefix`` URL names no credential
    (it is stored in the job's state and shown by ``status``); a directory is
    an absolute path (workers resolve it, not the submitter)."""
    from eceb_worker.core.urls import check_location, is_s3_url

    try:
        check_location(value)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.UsageError(f"--corpus: {exc}") from None
    if not is_s3_url(value) and not os.path.isabs(value):
        raise click.UsageError(
            f"--corpus: {value!r} is a relative path; give the directory as an absolute path every worker sees "
            "(or an s3://bucket/prefix URL)"
        )
    return value


def object_argument(value: str, what: str, *, local: bool = False) -> str:
    """An input or output given as ``s3://bucket/key`` (or, with ``local``, an
    absolute path every worker sees), checked."""
    from eceb_worker.core.urls import check_location, is_s3_url, split_object_url

    try:
        check_location(value, s3=True)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.UsageError(f"{what}: {exc}") from None
    if local and not is_s3_url(value):
        if not os.path.isabs(value):
            raise click.UsageError(
                f"{what}: {value!r} is a relative path; give an absolute path every worker sees "
                "(or an s3://bucket/key URL)"
            )
        return value
    role = "write it to" if what == "--out" else "read it from"
    try:
        split_object_url(value)
    except ValueError:
        raise click.UsageError(f"{what} must be an s3://bucket/key URL: the workers {role} object storage") from None
    return value


def evaluation_message(
    benchmark: str,
    run: str,
    *,
    corpus: str,
    out: str,
    endpoint_url: str | None,
    shard_bytes: int = DEFAULT_TASK_BYTES,
    evaluation: EvaluationOptions = DEFAULT_EVALUATION,
    concurrency: int = DEFAULT_CONCURRENCY,
    job_id: str | None = None,
) -> JobMessage:
    """The message of the job evaluating ``run`` against ``benchmark`` (both
    ``s3://bucket/key``) on the corpus ``corpus``, its report written to
    ``out``, its objects read through ``endpoint_url``; ``shard_bytes``
    (bytes-equivalent) cuts its re-hash shards, ``evaluation`` holds the
    options of the command line (its evaluation shards, uncertainty §16,
    disclosure check §17). ``job_id`` is a new random one unless given.
    Each location is checked first (:func:`object_argument`,
    :func:`corpus_argument`: a usage error naming the argument)."""
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage

    return JobMessage(
        job_id=job_id or uuid.uuid4().hex,
        kind=JobKind.EVALUATE,
        inputs=JobInputs(
            benchmark=object_argument(benchmark, "BENCHMARK"),
            run=object_argument(run, "RUN"),
            endpoint_url=endpoint_url,
        ),
        corpus=StorageSpec(source=corpus_argument(corpus), endpoint_url=endpoint_url, concurrency=concurrency),
        out=object_argument(out, "--out"),
        shard_bytes=shard_bytes,
        evaluation=evaluation,
    )


def check_submission(message: JobMessage) -> None:
    """What can be told before queuing: the inputs in object storage exist
    (every missing one named, :class:`InputError`), each is of the kind its
    role takes (the first bytes of each are read: a benchmark given as the
    run is named so, once), an ``s3://`` corpus holds the registry's first
    artifact (:func:`check_corpus_prefix`), and the report can be written
    under ``--out`` (:class:`~eceb_worker.errors.OutputError`)."""
    from eceb_worker.core.urls import is_s3_url
    from eceb_worker.documents import HEAD_BYTES, wrong_kind
    from eceb_worker.io.objects import ObjectStore

    inputs = message.inputs
    roles = {inputs.benchmark: "benchmark", inputs.run: "run", inputs.registry: "registry"}
    urls = [url for url in (inputs.benchmark, inputs.run, inputs.registry) if is_s3_url(url)]
    if not urls and not message.out:
        return
    store = ObjectStore(inputs.endpoint_url)
    if message.registration is not None:
        _check_listed_bucket(store, message)
    missing = [
        Problem(
            file=url,
            message="cannot read: no such object" if store.bucket_exists(url) else "cannot read: no such bucket",
        )
        for url in urls
        if not store.exists(url)
    ]
    if missing:
        raise InputError(missing)
    wrong = []
    for url in urls:
        stream, _ = store.open(url, buffer_bytes=HEAD_BYTES)
        with stream:
            head = stream.read(HEAD_BYTES)
        if (problem := wrong_kind(url, head, roles[url])) is not None:
            wrong.append(problem)
    if wrong:
        raise InputError(wrong)
    registry = inputs.registry or registry_url_of(store, inputs.benchmark)
    if registry and is_s3_url(registry) and is_s3_url(message.corpus.source):
        check_corpus_prefix(store, registry, message.corpus.source)
    if message.out:
        store.check_writable(message.out)


def _check_listed_bucket(store: ObjectStore, message: JobMessage) -> None:
    """Refuse a corpus to register in a bucket that does not exist, as
    listing it would (:class:`~eceb_worker.errors.NoSuchBucketError`, exit
    5, worded as ``eceb corpus register`` words it)."""
    from eceb_worker.core.urls import parse_s3_url
    from eceb_worker.errors import NoSuchBucketError

    bucket, _ = parse_s3_url(message.corpus.source)
    if not store.bucket_exists(f"s3://{bucket}/probe"):
        raise NoSuchBucketError(f"{message.corpus.location}: cannot list (NoSuchBucket)")


REGISTRY_HEAD_BYTES: Final = 64 * 1024
"""At most this many bytes of a registry are read at submission, for its
first artifact's line (ECEB-0.1 §5: the header, then one line an artifact)."""


class _RegistryReference(msgspec.Struct):
    path: str


class _BenchmarkRegistry(msgspec.Struct):
    registry: _RegistryReference


class _FirstArtifact(msgspec.Struct):
    path: str


def registry_url_of(store: ObjectStore, benchmark: str) -> str:
    """The ``s3://`` URL of ``benchmark``'s registry (its ``registry.path``
    beside it); ``""`` when the benchmark is not an object or does not say
    (the job reports what is wrong with it, every problem together)."""
    from eceb_worker.core.urls import is_s3_url, object_sibling

    if not is_s3_url(benchmark):
        return ""
    data, _ = store.get(benchmark)
    try:
        relative = msgspec.json.decode(data, type=_BenchmarkRegistry).registry.path
        return object_sibling(benchmark, relative)
    except (msgspec.DecodeError, ValueError):
        return ""


def check_corpus_prefix(store: ObjectStore, registry: str, corpus: str) -> None:
    """Refuse a corpus prefix that holds nothing: one read of at most
    :data:`REGISTRY_HEAD_BYTES` of the registry, one HEAD of
    ``corpus/<path>`` of its first artifact and, only when that one is
    missing, one listing of one key under the prefix (a corpus that lacks
    its first artifact but holds others is a verification finding the job
    reports, not a misspelling). A misspelled prefix or bucket would
    otherwise fail the job only once every artifact was found missing.

    Raises :class:`InputError` naming ``--corpus`` and the artifact's path
    (an id, never its bytes). A registry that cannot be read, or whose first
    artifact cannot be told from its first bytes (not JSON lines, a path
    that is not portable), is left to the job, which reports every problem
    of it and of its benchmark together."""
    from eceb_worker.core.paths import path_problems
    from eceb_worker.core.urls import parse_s3_url

    try:
        stream, _ = store.open(registry, buffer_bytes=REGISTRY_HEAD_BYTES)
        with stream:
            stream.readline(REGISTRY_HEAD_BYTES)  # the header
            line = stream.readline(REGISTRY_HEAD_BYTES)
    except InputError:
        return  # no registry there: the job names it, with every other problem of the benchmark
    try:
        path = msgspec.json.decode(line, type=_FirstArtifact).path
    except msgspec.DecodeError:
        return
    if path_problems(path):
        return
    bucket, prefix = parse_s3_url(corpus)
    key = f"{prefix}/{path}" if prefix else path
    if store.exists(f"s3://{bucket}/{key}"):
        return
    if not store.bucket_exists(f"s3://{bucket}/{key}"):
        reason = f"no such bucket {bucket}"
    elif store.holds_any(corpus):
        return  # the first artifact alone is missing: a finding the job reports with every other
    else:
        reason = "no object under this prefix"
    raise InputError(
        [
            Problem(
                file=corpus,
                message=f"{reason}; the registry's first artifact, {path} (line 2 of {registry}), is not there: "
                "is the corpus prefix right? Nothing was submitted",
            )
        ]
    )
