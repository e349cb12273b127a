"""A corpus verified while its registry is checked (ECEB-0.1 §5): ``eceb
corpus verify`` in this process and helper processes, holding no artifact.

The registry is read as a stream, as a cluster's coordinator reads it
(:meth:`~eceb_worker.pipeline.jobs.Job.start` with no held inputs): each
re-hash shard is a byte range of the registry file that the process running
it reads, checks against the range's digest and decodes. Shards are handed
out as the check closes them, so that helper processes hash while this
process is still checking; this process joins them once the check is done.
The check's verdict comes first: a registry with any problem raises its
:class:`~eceb_worker.errors.InputError` (every problem, nothing reported)
whatever the hashing found, and a storage failure met meanwhile is raised
only after the registry has passed. The report is the same bytes as
:func:`~eceb_worker.pipeline.jobs.verify_corpus` gives for the registry
held whole, whatever the number of workers or the shard size.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from eceb_worker.corpus.planning import RehashShard
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.executors.scheduler import TaskStream
from eceb_worker.pipeline.embedded import verify_message
from eceb_worker.pipeline.jobs import AnswerCallback, Finished, Job
from eceb_worker.pipeline.messages import CheckedRegistry, RehashTask

__all__ = ["verify_streamed"]

EARLY_HELPER_REGISTRY_BYTES: Final = 8 * 1024 * 1024
"""A registry file of this size or more (some 40,000 lines) has a helper
process started before it is read, rather than once its first block is
checked: the helper's start-up (some 50 ms) overlaps the check."""


def verify_streamed(
    registry: str,
    corpus: StorageSpec,
    *,
    workers: int,
    shard_bytes: int,
    on_answer: AnswerCallback | None = None,
) -> VerificationReport:
    """Re-hash every artifact of the registry file ``registry`` (a path)
    from ``corpus`` (ECEB-0.1 §5) on this process and up to ``workers - 1``
    helper processes, while the registry is checked (see the module).

    Memory does not grow with the registry: one block of it being checked,
    the plan, the findings. Raises :class:`~eceb_worker.errors.InputError`
    with every problem of the registry, then ``StorageError`` when the
    storage as a whole fails; ValueError for ``workers`` below 1.
    """
    job = Job(verify_message(registry, corpus, shard_bytes))
    # Tasks of shards closed while the registry is checked: where their lines
    # are and their digest is all a re-hash task needs of the registry; its
    # root and counts, not known yet, are left empty.
    reading = CheckedRegistry(location=registry, corpus_root="", artifact_count=0, rehash_shards=0)
    with TaskStream(job.workspace, workers=workers, local=not corpus.is_s3, on_answer=on_answer) as stream:
        if _file_bytes(registry) >= EARLY_HELPER_REGISTRY_BYTES:
            stream.start_helper()  # ready by the time the first block is checked

        def add(shards: Sequence[RehashShard]) -> None:
            stream.add([RehashTask(corpus=corpus, registry=reading, shard=shard) for shard in shards])

        stage = job.start(on_shards=add)
        stream.add(stage.tasks[stream.added :])
        answers = stream.finish()
    finished = job.after(stage.stage, answers)
    assert isinstance(finished, Finished) and finished.verification is not None
    return finished.verification


def _file_bytes(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the check says why
