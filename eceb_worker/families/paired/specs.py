"""The declaration and the three original task specifications of the paired
task-context benchmark (task-context-benchmark-reference.md, "Original task
specifications").

- :class:`Declaration`: a file tracked in the target git repository that
  names the sources a task may read and the frozen check commands
  (``checks``). The examples use the tracked declaration.
- :class:`ExplanationTask` (``explanation.json``): scoped explanation;
  success is accurate cited claims and a bound independent assessment.
- :class:`DiscoveryTask` (``discovery.json``): applicable references;
  success is exactly the required IDs and references a declared
  :class:`Selector` derives from the repository.
- :class:`VerificationTask` (``verification.json``): required verification;
  success is the frozen command, its complete actual output and the
  matching exit code.

Every task names its declaration path, its targets, its checks and its
answer schema. Paths inside the repository are portable relative paths
(:mod:`eceb_worker.core.paths`); ``answer_schema`` is relative to the task
file. Pure: Structs and their schema identifiers only.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

__all__ = [
    "DECLARATION_SCHEMA",
    "DISCOVERY_SCHEMA",
    "EXPLANATION_SCHEMA",
    "TASK_SCHEMAS",
    "VERIFICATION_SCHEMA",
    "Check",
    "Declaration",
    "DiscoveryTask",
    "ExplanationTask",
    "Selector",
    "TaskSpec",
    "VerificationTask",
]

DECLARATION_SCHEMA: Final = "symgliph.eceb/pair-declaration-v0.1"
EXPLANATION_SCHEMA: Final = "symgliph.eceb/pair-explanation-v0.1"
DISCOVERY_SCHEMA: Final = "symgliph.eceb/pair-discovery-v0.1"
VERIFICATION_SCHEMA: Final = "symgliph.eceb/pair-verification-v0.1"

Identifier = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z",
        description="1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit.",
    ),
]
RepoPath = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=4096,
        description="A portable relative path inside the repository ('/' separated, no '..', no leading '/').",
    ),
]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=65536)]


class Check(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A frozen check command of a declaration.

    Fields:
        id: how tasks name it.
        argv: the command as an argument vector (no shell), e.g.
            ``["go", "test", "./..."]``; ``argv[0]`` is looked up on PATH.
        cwd: the directory it runs in, relative to the repository root.
    """

    id: Identifier
    argv: Annotated[tuple[Annotated[str, msgspec.Meta(min_length=1, max_length=4096)], ...], msgspec.Meta(min_length=1)]
    cwd: RepoPath = "."


class Declaration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The tracked declaration (``schema``: :data:`DECLARATION_SCHEMA`).

    Fields:
        name: what the repository is, in a few words.
        sources: repository paths (files or directories) tasks may read;
            each is pinned by its git object id when frozen.
        checks: the frozen check commands.
    """

    schema: Literal["symgliph.eceb/pair-declaration-v0.1"]
    name: Text
    sources: Annotated[tuple[RepoPath, ...], msgspec.Meta(min_length=1)]
    checks: tuple[Check, ...] = ()


class Selector(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a discovery task's required IDs and references are derived from
    the repository at the frozen revision.

    Fields:
        kind: ``"marker"``: every match of ``pattern`` in the files of ``paths``.
        pattern: a regular expression (Python ``re`` syntax, no flags) whose
            whole match is a required ID, e.g. ``"REQ-[0-9]+"``.
        paths: repository paths (files or directories, read recursively) searched.

    The required IDs are the distinct matches; the required references are
    each match's ``path:line`` (1-based).
    """

    kind: Literal["marker"]
    pattern: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]
    paths: Annotated[tuple[RepoPath, ...], msgspec.Meta(min_length=1)]


class _Task(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The fields every task specification has.

    Fields:
        id: the task's id.
        prompt: the task as given to the agent.
        declaration: the declaration's path in the repository.
        targets: repository paths the task is about.
        checks: ids of the declaration's checks the task may use.
        answer_schema: the answer's JSON Schema file, relative to the task file;
            it must meet the provider's strict-schema rule
            (:mod:`eceb_worker.families.paired.answer_schema`).
    """

    id: Identifier
    prompt: Text
    declaration: RepoPath
    targets: Annotated[tuple[RepoPath, ...], msgspec.Meta(min_length=1)]
    checks: tuple[Identifier, ...] = ()
    answer_schema: RepoPath


class ExplanationTask(_Task, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``explanation.json`` (``schema``: :data:`EXPLANATION_SCHEMA`): a scoped
    explanation of the targets, answered with cited claims and judged by a
    bound independent assessment. ``min_claims``: the fewest claims an
    answer must make."""

    schema: Literal["symgliph.eceb/pair-explanation-v0.1"]
    min_claims: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 1


class DiscoveryTask(_Task, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``discovery.json`` (``schema``: :data:`DISCOVERY_SCHEMA`): the applicable
    references of the targets; the answer must list exactly the IDs and
    references ``selector`` derives."""

    schema: Literal["symgliph.eceb/pair-discovery-v0.1"]
    selector: Selector


class VerificationTask(_Task, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``verification.json`` (``schema``: :data:`VERIFICATION_SCHEMA`): run the
    declaration's frozen ``check`` and report the command byte for byte, its
    complete actual output and its exit code. ``check`` must also be listed
    in ``checks``."""

    schema: Literal["symgliph.eceb/pair-verification-v0.1"]
    check: Identifier


TaskSpec = ExplanationTask | DiscoveryTask | VerificationTask
"""Any of the three task specifications."""

TASK_SCHEMAS: Final[dict[str, type[ExplanationTask] | type[DiscoveryTask] | type[VerificationTask]]] = {
    "explanation": ExplanationTask,
    "discovery": DiscoveryTask,
    "verification": VerificationTask,
}
"""The task specification Struct of each task kind (the schedule's names)."""
