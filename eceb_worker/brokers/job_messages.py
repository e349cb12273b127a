"""The messages of a distributed job's tasks (:mod:`eceb_worker.brokers.jobs`):
frozen msgspec Structs, sent as JSON builtins. They carry references only
(object URLs and ETags, the corpus's :class:`~eceb_worker.storage.StorageSpec`,
byte ranges of the registry, task index ranges), never corpus bytes.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from eceb_worker.engine.registry_scan import RegistryShard
from eceb_worker.storage import StorageSpec

__all__ = [
    "EvaluateMessage",
    "JobInputs",
    "JobMessage",
    "JobRehashMessage",
    "RegistryRef",
]


class JobInputs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a job's benchmark and run are (``s3://bucket/key``) and which
    versions were checked: ``etags`` holds ``(url, ETag)`` of every object
    read (the registry included), so workers decode exactly those.
    """

    benchmark: str
    run: str
    endpoint_url: str | None = None
    etags: tuple[tuple[str, str], ...] = ()


class RegistryRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The registry a job checked (ECEB-0.1 §5), as ``eceb.coordinate`` found it.

    Fields:
        location: where it is (``s3://bucket/key``, or a path every worker sees).
        etag: the version checked (``""`` for a local file).
        corpus_root: its corpus root, 64 lowercase hex characters.
        artifact_count: how many artifacts it lists.
        rehash_shards: how many re-hash shards were planned over it.
    """

    location: str
    etag: str = ""
    corpus_root: str
    artifact_count: Annotated[int, msgspec.Meta(ge=0)]
    rehash_shards: Annotated[int, msgspec.Meta(ge=0)]


class JobMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``eceb.coordinate`` (and each reduce step) is sent; ``registry``
    is set by ``eceb.coordinate`` for the steps after it."""

    job_id: str
    inputs: JobInputs
    corpus: StorageSpec
    out: str
    shard_bytes: Annotated[int, msgspec.Meta(gt=0)]
    shard_observations: Annotated[int, msgspec.Meta(gt=0)]
    registry: RegistryRef | None = None


class JobRehashMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an ``eceb.job_rehash_shard`` task is sent: a re-hash shard
    (ECEB-0.1 §5) by reference (:class:`~eceb_worker.engine.registry_scan.RegistryShard`).

    Fields:
        spec: where the corpus is.
        registry, endpoint_url, etag: the registry object (or local path) and
            the version the job checked.
        byte_start, byte_end: the shard's lines, ``[byte_start, byte_end)`` of the registry file.
        start: ordinal of the shard's first artifact (file order); ``count``: its artifacts.
        first_path: the first artifact's path (names the shard in logs;
            checked against what the range holds).
    """

    spec: StorageSpec
    registry: str
    endpoint_url: str | None = None
    etag: str = ""
    byte_start: Annotated[int, msgspec.Meta(ge=0)]
    byte_end: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    count: Annotated[int, msgspec.Meta(gt=0)]
    first_path: str

    @classmethod
    def for_shard(
        cls, spec: StorageSpec, registry: RegistryRef, shard: RegistryShard, endpoint_url: str | None = None
    ) -> JobRehashMessage:
        """The message re-hashing ``shard`` of the checked ``registry``."""
        return cls(
            spec=spec,
            registry=registry.location,
            endpoint_url=endpoint_url,
            etag=registry.etag,
            byte_start=shard.byte_start,
            byte_end=shard.byte_end,
            start=shard.start,
            count=shard.end - shard.start,
            first_path=shard.first_path,
        )


class EvaluateMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an ``eceb.evaluate_shard`` task is sent: the inputs and a range
    ``start..end`` of the sorted task ids (:func:`evaluation_task_ids`).
    """

    inputs: JobInputs
    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    job_id: str | None = None
