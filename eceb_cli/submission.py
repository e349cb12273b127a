"""What ``eceb-dist`` checks of a job before it queues it: its locations
(usage errors, naming the option), and that its inputs exist and its
output can be written (as ``eceb evaluate`` would report them).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from eceb_worker.errors import InputError, Problem

if TYPE_CHECKING:
    from eceb_worker.pipeline.messages import JobMessage

__all__ = ["check_submission", "corpus_argument", "object_argument"]


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


def check_submission(message: JobMessage) -> None:
    """What can be told before queuing: the inputs in object storage exist
    (every missing one named, :class:`InputError`), each is of the kind its
    role takes (the first bytes of each are read: a benchmark given as the
    run is named so, once), and the report can be written under ``--out``
    (:class:`~eceb_worker.errors.OutputError`)."""
    from eceb_worker.core.urls import is_s3_url
    from eceb_worker.documents import HEAD_BYTES, wrong_kind
    from eceb_worker.io.objects import ObjectStore

    inputs = message.inputs
    roles = {inputs.benchmark: "benchmark", inputs.run: "run", inputs.registry: "registry"}
    urls = [url for url in (inputs.benchmark, inputs.run, inputs.registry) if is_s3_url(url)]
    if not urls and not message.out:
        return
    store = ObjectStore(inputs.endpoint_url)
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
    if message.out:
        store.check_writable(message.out)
