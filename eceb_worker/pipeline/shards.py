"""Running one shard task (:data:`~eceb_worker.pipeline.messages.ShardTask`):
the map steps of every job, the same code whichever process runs them
(this one, a helper process, a Celery worker).

A :class:`Workspace` is what one process keeps between shard tasks: one S3
client per endpoint, the job inputs it decoded (per version), the
artifacts a run refers to; the process that checked a job's inputs lends
its own (:class:`Held`), so that it reads nothing twice. What only
evaluation shards need is imported by them: a helper process that
re-hashes starts without it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from eceb_worker.corpus.checked_lines import registry_range_artifacts
from eceb_worker.corpus.outcomes import hash_outcomes
from eceb_worker.corpus.verification import Registered, verify_shard
from eceb_worker.families.eceb.planning import evaluation_task_ids
from eceb_worker.io.locations import Locator
from eceb_worker.io.storage import shared_storage
from eceb_worker.pipeline.messages import (
    CheckedRegistry,
    EvaluateAnswer,
    EvaluateTask,
    HashAnswer,
    HashRangeTask,
    HashTask,
    JobInputs,
    ListTask,
    MakeTask,
    MakingOptions,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardTask,
)

if TYPE_CHECKING:
    from eceb_worker.corpus.artifacts import Artifact
    from eceb_worker.corpus.registry import Registry
    from eceb_worker.corpus.storage import ByteSink, ReadObserver
    from eceb_worker.families.eceb.benchmark import Benchmark, Task
    from eceb_worker.families.eceb.disclosure.context import ScanContext
    from eceb_worker.families.eceb.disclosure.spec import ScanSpec
    from eceb_worker.families.eceb.run_index import IndexedRun
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.detached import DetachedEvaluation, DetachedRehash
    from eceb_worker.pipeline.making.inputs import MakingInputs
    from eceb_worker.pipeline.making.shards import MakingServices, MakingWorkspace

__all__ = ["Held", "Prepared", "Workspace"]

_CACHED_JOBS: Final = 4
"""Jobs whose decoded inputs a process keeps at once (the oldest goes first)."""


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """A job's benchmark and run, decoded, with what evaluating shards needs.

    Fields:
        benchmark, run: as decoded (checked by the job's first step).
        task_ids: every task id to evaluate, sorted (evaluation shards are ranges of it).
        tasks: the benchmark's tasks by id.
    """

    benchmark: Benchmark
    run: IndexedRun
    task_ids: list[str]
    tasks: dict[str, Task]

    @classmethod
    def of(cls, benchmark: Benchmark, run: IndexedRun) -> Prepared:
        """The prepared form of a benchmark and a run."""
        return cls(
            benchmark=benchmark,
            run=run,
            task_ids=evaluation_task_ids(benchmark, run),
            tasks={t.task_id: t for t in benchmark.tasks},
        )


class Held(msgspec.Struct, frozen=True, kw_only=True):
    """What the process that checked a job's inputs holds already.

    Fields:
        registry: the registry with every artifact, in file order.
        prepared: the benchmark and run of an evaluation.
    """

    registry: Registry
    prepared: Prepared | None = None


class Serialized:
    """A read observer whose sinks end one at a time (a storage reading on
    several threads ends its reads' sinks from each); their bytes are fed
    unlocked."""

    def __init__(self, observer: ReadObserver) -> None:
        self._observer = observer
        self._lock = threading.Lock()

    def reading(self, position: int) -> ByteSink | None:
        """The observer's sink for a read of ``position``, ended under the lock."""
        sink = self._observer.reading(position)
        return None if sink is None else _LockedSink(sink, self._lock)


class _LockedSink:
    __slots__ = ("_lock", "_sink")

    def __init__(self, sink: ByteSink, lock: threading.Lock) -> None:
        self._sink = sink
        self._lock = lock

    def feed(self, data: bytes | memoryview) -> None:
        self._sink.feed(data)

    def end(self, digest: str) -> None:
        with self._lock:
            self._sink.end(digest)


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    while len(cache) >= _CACHED_JOBS:
        del cache[next(iter(cache))]
    cache[key] = value


class Workspace:
    """Runs shard tasks, keeping what the next ones can reuse.

    ``held`` lends what this process already holds of one job (every
    registry artifact, its decoded benchmark and run): its shard tasks then
    read nothing again. Without it, a task reads what it needs by reference
    (the registry's byte range, the inputs pinned to their ETags), once per
    job in this process.
    """

    def __init__(self, held: Held | None = None) -> None:
        self._held = held
        self._stores: dict[str | None, ObjectStore] = {}
        self._prepared: dict[JobInputs, Prepared] = {}
        self._referenced: dict[JobInputs, dict[str, Artifact]] = {}
        self._by_id: dict[str, Artifact] | None = None
        self._lent: dict[str, Artifact] | None = None
        self._specs: dict[tuple[JobInputs | None, int], ScanSpec | None] = {}
        self._contexts: dict[int, ScanContext] = {}
        self._lent_spec: ScanSpec | None = None
        self._making: dict[tuple[JobInputs, str], tuple[MakingInputs, str]] = {}
        self.making: MakingWorkspace | None = None
        """What makes runs in this process (a cluster worker's; ``None`` elsewhere)."""

    def locator(self, endpoint_url: str | None, etags: tuple[tuple[str, str], ...] = ()) -> Locator:
        """A locator of a job's inputs, pinned to the versions ``etags``
        names, sharing one S3 client per endpoint in this process."""
        return Locator(endpoint_url, expected=dict(etags), make_store=lambda: self._store(endpoint_url))

    def _store(self, endpoint_url: str | None) -> ObjectStore:
        store = self._stores.get(endpoint_url)
        if store is None:
            from eceb_worker.io.objects import ObjectStore

            store = self._stores[endpoint_url] = ObjectStore(endpoint_url)
        return store

    def object_store(self, endpoint_url: str | None) -> ObjectStore:
        """The S3 client of ``endpoint_url`` this process keeps."""
        return self._store(endpoint_url)

    def making_services(self) -> MakingServices:
        """The cluster's services of made runs. Raises ValueError in a
        process that makes no runs."""
        if self.making is None:
            raise ValueError("this process makes no runs: no cluster services were lent to it")
        return self.making.services

    def making_inputs(self, inputs: JobInputs, making: MakingOptions, locator: Locator) -> tuple[MakingInputs, str]:
        """A made run's inputs and its registry's location, read through
        ``locator`` once per job and version in this process
        (:func:`~eceb_worker.pipeline.making.inputs.located_inputs`)."""
        key = (inputs, making.journal_id)
        found = self._making.get(key)
        if found is None:
            from eceb_worker.pipeline.making.inputs import located_inputs

            found = located_inputs(
                inputs.benchmark,
                locator,
                profile=making.profile,
                profile_dir=making.profile_dir,
                rubric=making.rubric,
            )
            _remember(self._making, key, found)
        return found

    def remember(self, inputs: JobInputs, prepared: Prepared) -> None:
        """Keep a job's decoded benchmark and run (its first step decoded them)."""
        _remember(self._prepared, inputs, prepared)

    def prepared(self, inputs: JobInputs) -> Prepared:
        """The job's benchmark and run, decoded once per process and version.
        Raises ``InputError`` (an object changed since the job checked it) or
        ``StorageError``."""
        if self._held is not None and self._held.prepared is not None:
            return self._held.prepared
        found = self._prepared.get(inputs)
        if found is None:
            from eceb_worker.pipeline.inputs import load_benchmark, load_run

            locator = self.locator(inputs.endpoint_url, inputs.etags)
            found = Prepared.of(load_benchmark(inputs.benchmark, locator), load_run(inputs.run, locator))
            _remember(self._prepared, inputs, found)
        return found

    def artifacts(self, inputs: JobInputs, registry: CheckedRegistry) -> Mapping[str, Artifact]:
        """The registry's artifacts evaluating the job's run can look up, by
        id, with the whole registry's totals (a
        :class:`~eceb_worker.families.eceb.composition.RegistryArtifacts`):
        every one when held, else those the run and benchmark refer to,
        read once per process and version, never the whole registry."""
        if self._held is not None:
            if self._by_id is None:
                from eceb_worker.families.eceb.composition import RegistryArtifacts

                self._by_id = RegistryArtifacts.of(self._held.registry.artifacts)
            return self._by_id
        found = self._referenced.get(inputs)
        if found is None:
            from eceb_worker.pipeline.inputs import load_referenced_artifacts

            prepared = self.prepared(inputs)
            locator = self.locator(inputs.endpoint_url, inputs.etags)
            found = load_referenced_artifacts(registry.location, prepared.benchmark, prepared.run, locator)
            _remember(self._referenced, inputs, found)
        return found

    def scan_spec(self, task: RehashTask) -> ScanSpec | None:
        """What ``task``'s disclosure scan compares its artifacts with
        (ECEB-0.1 §17), derived once per job in this process from the job's
        benchmark and run (held, or read by reference; a helper's is lent
        by its holder); None when the scan is off or there is nothing to
        scan for. Raises ValueError when none can be found (a detached
        shard whose holder lent none)."""
        check = task.disclosure
        if not check.enabled or check.minimum_overlap_tokens is None:
            return None
        n = check.minimum_overlap_tokens
        key = (None if self._held is not None or task.inputs is None else task.inputs, n)
        if key in self._specs:
            return self._specs[key]
        from eceb_worker.families.eceb.disclosure.spec import scan_spec

        if self._held is not None and self._held.prepared is not None:
            prepared = self._held.prepared
        elif task.inputs is not None and task.inputs.run:
            prepared = self.prepared(task.inputs)
        else:
            raise ValueError(f"re-hash shard {task.shard.index}: nothing to compare the corpus with was lent")
        spec = scan_spec(prepared.benchmark, prepared.run, n)
        _remember(self._specs, key, spec)
        return spec

    def _scan_context(self, spec: ScanSpec) -> ScanContext:
        """The context of ``spec``, built once per spec in this process."""
        from eceb_worker.families.eceb.disclosure.context import ScanContext

        context = self._contexts.get(id(spec))
        if context is None or context.spec is not spec:
            context = ScanContext(spec)
            _remember(self._contexts, id(spec), context)
        return context

    def run(self, task: ShardTask) -> ShardAnswer:
        """Run one shard task; per-artifact failures are findings, never
        exceptions. Raises ``StorageError`` when the storage fails as a whole,
        :class:`~eceb_worker.errors.InputError` when an input changed since
        the job checked it."""
        if isinstance(task, RehashTask):
            return self._rehash(task)
        if isinstance(task, EvaluateTask):
            return self._evaluate(task)
        if isinstance(task, MakeTask):
            return self._make(task)
        if isinstance(task, ListTask):
            return self._list(task)
        if isinstance(task, HashRangeTask):
            return self._hash_range(task)
        return self._hash(task)

    def _list(self, task: ListTask) -> ShardAnswer:
        from eceb_worker.pipeline.register_job import list_shard, previous_reuse

        registration = task.registration
        locator = self.locator(task.corpus.endpoint_url, registration.previous_etags)
        reuse = previous_reuse(registration, lambda where: locator.locate(where).chunks())
        return list_shard(task, self._store(task.corpus.endpoint_url).client, reuse=reuse)

    def _hash_range(self, task: HashRangeTask) -> ShardAnswer:
        from eceb_worker.pipeline.register_job import hash_shard

        store = self._store(task.corpus.endpoint_url)
        return hash_shard(task, shared_storage(task.corpus), store.client, read_range=store.get_range)

    def _make(self, task: MakeTask) -> ShardAnswer:
        from eceb_worker.pipeline.making.shards import make_shard

        if self.making is None:
            raise ValueError(f"execution shard {task.index}: this process makes no runs (no cluster services)")
        store = self._store(task.inputs.endpoint_url)
        return make_shard(task, self.making, read=lambda url: store.get(url)[0], write=store.put_atomic)

    def _rehash(self, task: RehashTask, spec: ScanSpec | None = None) -> RehashAnswer:
        shard = task.shard
        artifacts: Sequence[Registered] = task.artifacts
        if not artifacts and shard.count:
            registry = task.registry
            pins = ((registry.location, registry.etag),) if registry.etag else ()
            data = (
                self.locator(task.endpoint_url, pins)
                .locate(registry.location)
                .read_range(shard.byte_start, shard.byte_end)
            )
            artifacts = registry_range_artifacts(data, shard, name=registry.location)
        if spec is None:
            spec = self.scan_spec(task)
        if spec is None:
            verification = verify_shard(artifacts, shared_storage(task.corpus), start=shard.start)
            return RehashAnswer(index=shard.index, verification=verification)
        from eceb_worker.families.eceb.disclosure.scanner import DisclosureScanner

        scanner = DisclosureScanner(self._scan_context(spec), artifacts)  # type: ignore[arg-type]
        observer = Serialized(scanner)
        verification = verify_shard(artifacts, shared_storage(task.corpus), start=shard.start, observer=observer)
        return RehashAnswer(index=shard.index, verification=verification, disclosure=scanner.partial())

    def _evaluate(self, task: EvaluateTask) -> EvaluateAnswer:
        from eceb_worker.families.eceb.disclosure import findings_by_task
        from eceb_worker.families.eceb.shards import evaluate_tasks_of_run

        prepared = self.prepared(task.inputs)
        findings = findings_by_task(task.evaluation.disclosure_check, task.disclosures)
        artifacts = self.artifacts(task.inputs, task.registry)
        task_ids = prepared.task_ids[task.shard.start : task.shard.end]
        outcomes = evaluate_tasks_of_run(
            task_ids, prepared.run, prepared.tasks, artifacts, findings, uncertainty=task.evaluation.uncertainty
        )
        return EvaluateAnswer(index=task.shard.index, outcomes=outcomes)

    def detach(self, task: ShardTask, *, lend: bool) -> ShardTask | DetachedEvaluation | DetachedRehash:
        """``task`` as another process can run it: an evaluation shard of
        the job this process holds becomes a
        :class:`~eceb_worker.pipeline.detached.DetachedEvaluation` (with the
        registry's artifacts when ``lend``), a re-hash shard that scans for
        disclosures a :class:`~eceb_worker.pipeline.detached.DetachedRehash`
        (with what it scans for when ``lend``); any other task is returned
        as it is."""
        held = self._held
        if held is None or held.prepared is None:
            return task
        if isinstance(task, RehashTask):
            spec = self.scan_spec(task)
            if spec is None:
                return task
            from eceb_worker.pipeline.detached import DetachedRehash

            return DetachedRehash(task=task, spec=spec if lend else None)
        if not isinstance(task, EvaluateTask):
            return task
        from eceb_worker.pipeline.detached import detach_evaluation

        prepared = held.prepared
        return detach_evaluation(
            task,
            task_ids=prepared.task_ids,
            tasks=prepared.tasks,
            run=prepared.run,
            artifacts=list(held.registry.artifacts) if lend else None,
        )

    def run_detached(self, request: DetachedEvaluation | DetachedRehash) -> ShardAnswer:
        """Run a detached shard (:meth:`detach`): an evaluation with the
        artifacts it lends or those its predecessor lent, a re-hash with the
        spec it lends or the one lent before. Raises ValueError when none
        was lent."""
        from eceb_worker.pipeline.detached import DetachedRehash, evaluate_detached

        if isinstance(request, DetachedRehash):
            if request.spec is not None:
                self._lent_spec = request.spec
            if self._lent_spec is None:
                raise ValueError(f"re-hash shard {request.task.shard.index}: detached without what it scans for")
            return self._rehash(request.task, self._lent_spec)
        if request.artifacts is not None:
            from eceb_worker.families.eceb.composition import RegistryArtifacts

            self._lent = RegistryArtifacts.of(request.artifacts)
        if self._lent is None:
            raise ValueError(f"evaluation shard {request.index}: detached without the registry's artifacts")
        return evaluate_detached(request, self._lent)

    @staticmethod
    def _hash(task: HashTask) -> HashAnswer:
        results = shared_storage(task.corpus).hash_artifacts(task.paths)
        return HashAnswer(index=task.index, outcomes=hash_outcomes(task.paths, results))
