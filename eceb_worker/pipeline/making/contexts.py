"""Each execution's context and prompt (``eceb run``; ECEB-0.1 §7).

``full_permitted_context`` and ``naive_top_k`` are built by eceb
(:mod:`eceb_worker.families.eceb.making.baselines`) from the corpus's bytes;
``compiled`` is asked of the user's context system at each budget. eceb
then renders the prompt from the profile's template and digests what it
sends (:mod:`eceb_worker.families.eceb.making.prompt`).

The baselines leave room for the rest of the prompt: the budget (or the
model's input window, for the full baseline) less the estimated tokens of
the system text and the template rendered with an empty context. Contexts
are the same for every repetition of a group and are kept for the few
groups in flight; the BM25 index is built once, over the artifacts any task
permits, when the first ``naive_top_k`` execution needs it. Baselines are
built one at a time (one permitted set in memory), the permitted artifacts
read once for a task's groups built in turn; a thread whose group is kept
or being built does not wait for another group's build.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Final

import msgspec

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.storage import CorpusStorage
from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.baselines import (
    ArtifactBytes,
    Bm25Index,
    Packed,
    decode_text,
    estimate_tokens,
    full_permitted_context,
    naive_top_k,
    permitted,
)
from eceb_worker.families.eceb.making.exchange import ContextSystem
from eceb_worker.families.eceb.making.plan import Execution
from eceb_worker.families.eceb.making.profile import RunProfile
from eceb_worker.families.eceb.making.prompt import context_digest, query_digest, render_prompt
from eceb_worker.families.eceb.making.protocol import ContextRequest, Permissions
from eceb_worker.families.eceb.run import SelectedArtifact

if TYPE_CHECKING:
    from eceb_worker.pipeline.making.inputs import MakingInputs

__all__ = ["Contexts", "Prepared", "open_contexts"]

_KEPT_GROUPS: Final = 16
"""Contexts kept for groups in flight (repetitions of a group share one)."""
_GroupKey = tuple[int, str, int | None]
"""A group of executions: its task's place, its strategy and its budget."""
_SHOWN_ERROR_CHARACTERS: Final = 200


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """An execution's prompt, ready to send.

    Fields:
        system, prompt: the model input (the prompt is the rendered template).
        selected_artifacts: the context's artifacts with observed digests.
        query_digest, context_digest: the observation's digests.
        local_prompt_tokens: :func:`estimate_tokens` of system and prompt.
    """

    system: str
    prompt: str
    selected_artifacts: tuple[SelectedArtifact, ...]
    query_digest: str
    context_digest: str
    local_prompt_tokens: int


class Contexts:
    """Builds contexts and prompts for a run's executions (see the module).

    ``artifacts``: the registry's artifacts; ``storage``: the corpus;
    ``system``: opens the user's context system on first use. Thread-safe.
    """

    def __init__(
        self,
        profile: RunProfile,
        *,
        artifacts: tuple[Artifact, ...],
        tasks: tuple[Task, ...],
        storage: CorpusStorage,
        system: Callable[[], ContextSystem],
    ) -> None:
        self._profile = profile
        self._artifacts = artifacts
        self._tasks = tasks
        self._storage = storage
        self._open_system = system
        self._system: ContextSystem | None = None
        self._index: Bm25Index | None = None
        self._lock = threading.Lock()  # the kept groups, held for no I/O
        self._build_lock = threading.Lock()  # one baseline built at a time: one permitted set in memory
        self._system_lock = threading.Lock()
        self._packed: OrderedDict[_GroupKey, Future[Packed]] = OrderedDict()
        self._offered: tuple[int, list[ArtifactBytes]] | None = None  # the last task's permitted bytes

    def close(self) -> None:
        """Stop the context system, if it was started."""
        with self._system_lock:
            if self._system is not None:
                self._system.close()
                self._system = None

    def overhead_tokens(self, task: Task) -> int:
        """Estimated tokens of the prompt without its context."""
        spec = self._profile.prompt
        return estimate_tokens(spec.system) + estimate_tokens(render_prompt(spec, query=task.query, context=""))

    def prepare(self, execution: Execution) -> Prepared:
        """The prompt of ``execution``. Raises :class:`ProviderError` when the
        context system fails or answers an error (final), ``StorageError``
        when the corpus cannot be read."""
        task = self._tasks[execution.task_index]
        if execution.strategy == "compiled":
            context, selected = self._compiled(execution, task)
        else:
            packed = self._baseline(execution, task)
            context, selected = packed.context, packed.selected_artifacts
        spec = self._profile.prompt
        prompt = render_prompt(spec, query=task.query, context=context)
        return Prepared(
            system=spec.system,
            prompt=prompt,
            selected_artifacts=selected,
            query_digest=query_digest(task.query),
            context_digest=context_digest(spec.system, prompt),
            local_prompt_tokens=estimate_tokens(spec.system) + estimate_tokens(prompt),
        )

    def _compiled(self, execution: Execution, task: Task) -> tuple[str, tuple[SelectedArtifact, ...]]:
        assert execution.budget is not None
        request = ContextRequest(
            request_id=execution.execution_id,
            task_id=task.task_id,
            query=task.query,
            strategy="compiled",
            budget_tokens=execution.budget,
            repetition=execution.repetition,
            permissions=Permissions(
                allowed_classifications=task.allowed_classifications, denied_artifacts=task.denied_artifacts
            ),
        )
        response = self._system_for().build(request)
        if response.error:
            shown = response.error[:_SHOWN_ERROR_CHARACTERS]  # escaped where it is printed
            message = (
                f"the context system built no context for task {task.task_id!r} at budget {execution.budget}: {shown}"
            )
            raise ProviderError(message, party="context system", transient=False)
        return response.context, response.selected_artifacts

    def _system_for(self) -> ContextSystem:
        with self._system_lock:
            if self._system is None:
                self._system = self._open_system()
            return self._system

    def _baseline(self, execution: Execution, task: Task) -> Packed:
        """The group's baseline: kept, being built by another thread (waited
        for), or built by this one. A group whose build failed is built
        again by the next thread that needs it, as if it had never been asked for."""
        key = (execution.task_index, execution.strategy, execution.budget)
        while True:
            with self._lock:
                kept = self._packed.get(key)
                if kept is None:
                    building: Future[Packed] = Future()
                    self._packed[key] = building
                    if len(self._packed) > _KEPT_GROUPS:
                        self._packed.popitem(last=False)
                else:
                    self._packed.move_to_end(key)
            if kept is None:
                return self._build(key, building, execution, task)
            try:
                return kept.result()
            except Exception:  # noqa: S112 - the builder raised it; this thread tries for itself
                continue

    def _build(self, key: _GroupKey, building: Future[Packed], execution: Execution, task: Task) -> Packed:
        try:
            with self._build_lock:
                offered = self._offered_by(execution.task_index, task)
                if execution.strategy == "full_permitted_context":
                    available = self._profile.model.input_window_tokens - self.overhead_tokens(task)
                    packed = full_permitted_context(offered, available, task.required_artifacts)
                else:
                    assert execution.budget is not None
                    available = execution.budget - self.overhead_tokens(task)
                    packed = naive_top_k(self._bm25(), task.query, offered, available)
        except BaseException as error:
            with self._lock:
                if self._packed.get(key) is building:
                    del self._packed[key]
            building.set_exception(error)
            raise
        building.set_result(packed)
        return packed

    def _offered_by(self, task_index: int, task: Task) -> list[ArtifactBytes]:
        """The artifacts ``task`` permits and their bytes, read once for the
        task's baseline groups built one after the other (under the build lock)."""
        if self._offered is not None and self._offered[0] == task_index:
            return self._offered[1]
        self._offered = None
        offered = self._read(permitted(task, self._artifacts))
        self._offered = (task_index, offered)
        return offered

    def _read(self, artifacts: list[Artifact]) -> list[ArtifactBytes]:
        return [(artifact, self._storage.read_artifact(artifact.path)) for artifact in artifacts]

    def _bm25(self) -> Bm25Index:
        if self._index is None:
            ids: set[str] = set()
            for task in self._tasks:
                ids.update(a.artifact_id for a in permitted(task, self._artifacts))
            chosen = [a for a in self._artifacts if a.artifact_id in ids]
            self._index = Bm25Index.build([(a.artifact_id, decode_text(data)) for a, data in self._read(chosen)])
        return self._index


def open_contexts(inputs: MakingInputs, storage: CorpusStorage) -> Contexts:
    """The contexts of a run's executions over ``storage``, its context
    system (a program or an HTTP endpoint) started on first use."""
    profile, base_dir = inputs.profile, inputs.profile_dir

    def open_system() -> ContextSystem:
        from eceb_worker.io.context_systems import open_context_system

        return open_context_system(profile.context_system, base_dir=base_dir)

    return Contexts(
        profile,
        artifacts=inputs.registry.artifacts,
        tasks=inputs.benchmark.tasks,
        storage=storage,
        system=open_system,
    )
