"""The text and Markdown of a corpus diff (``eceb corpus diff``;
:mod:`eceb_worker.corpus.diff`): a summary line, the two registries, the
artifacts added, removed and changed (each change named by field, old ->
new) and, with a benchmark, whether its corpus root still holds and each
task whose required or denied artifacts moved. The ``--json`` form is the
diff document itself.

Every id, path and name is printed as the inputs give it, terminal-safe
(:func:`~eceb_worker.render.terminal.printable`: no control or invisible
character is printed raw) and, in Markdown, inert
(:func:`~eceb_worker.render.markdown.markdown_text`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from eceb_worker.core.figures import grouped
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.diff import BenchmarkChange, CorpusDiff, FieldChange, RegistrySide, TaskArtifactChange
from eceb_worker.render.markdown import markdown_text
from eceb_worker.render.terminal import printable

__all__ = [
    "MARKDOWN_ROWS",
    "corpus_diff_lines",
    "corpus_diff_markdown",
    "corpus_diff_summary",
    "field_change_text",
]

MARKDOWN_ROWS: Final = 100
"""Rows a Markdown table lists at most (a CI comment has a size limit); the rest are counted."""

_SHOWN_DIGEST: Final = 16
"""Hex characters of an artifact's source digest shown in text (the JSON holds all 64)."""


def _digest(value: str) -> str:
    return value[:_SHOWN_DIGEST] + "..." if len(value) > _SHOWN_DIGEST else value


def _value(field: str, value: str | int) -> str:
    if isinstance(value, int):
        return grouped(value)
    if field == "source_digest" and isinstance(value, str):
        return _digest(value)
    return str(value)


def field_change_text(change: FieldChange) -> str:
    """One field change: ``classification internal -> restricted``,
    ``size_bytes 300 -> 1,310``, ``source_digest 0123456789abcdef... -> ...``."""
    return f"{change.field} {_value(change.field, change.old)} -> {_value(change.field, change.new)}"


def _changes_text(changes: Sequence[FieldChange]) -> str:
    return "; ".join(field_change_text(change) for change in changes)


def _holds(benchmark: BenchmarkChange) -> str:
    return "still holds" if benchmark.corpus_root_holds else "no longer holds"


def _plural(count: int, one: str, many: str) -> str:
    return f"{grouped(count)} {one if count == 1 else many}"


def corpus_diff_summary(diff: CorpusDiff) -> str:
    """The summary line: counts added, removed, changed and unchanged (or
    ``no difference``), whether the corpus root changed, and with a
    benchmark whether its pinned corpus root still holds and how many of its
    tasks' evidence moved."""
    if diff.differ:
        counts = (
            f"{grouped(len(diff.added))} added, {grouped(len(diff.removed))} removed, "
            f"{grouped(len(diff.changed))} changed, {grouped(diff.unchanged_count)} unchanged"
        )
    else:
        counts = f"no difference: {_plural(diff.unchanged_count, 'artifact', 'artifacts')} unchanged"
    root = "corpus root changed" if diff.old.corpus_root != diff.new.corpus_root else "corpus root unchanged"
    line = f"{counts}; {root}"
    if diff.benchmark is not None:
        tasks = diff.benchmark.tasks
        line += (
            f"; benchmark corpus root {_holds(diff.benchmark)}, "
            f"{grouped(len(tasks))} of {_plural(diff.benchmark.task_count, 'task', 'tasks')} affected"
        )
    return line


def _side(label: str, name: str, side: RegistrySide) -> str:
    return (
        f"{label}  {name}: {_plural(side.artifact_count, 'artifact', 'artifacts')}, "
        f"{_plural(side.size_bytes, 'byte', 'bytes')}, corpus root {side.corpus_root}"
    )


def _artifact_text(artifact: Artifact) -> str:
    path = "" if artifact.path == artifact.artifact_id else f"path {artifact.path}, "
    return (
        f"{artifact.artifact_id} ({path}{artifact.kind}, {artifact.classification}, "
        f"{_plural(artifact.size_bytes, 'byte', 'bytes')}, source digest {_digest(artifact.source_digest)})"
    )


def _task_artifact_text(entry: TaskArtifactChange) -> str:
    text = f"{entry.role} {entry.artifact_id} {entry.change}"
    return text + (f" ({_changes_text(entry.changes)})" if entry.changes else "")


def _benchmark_lines(benchmark: BenchmarkChange) -> Iterator[str]:
    old = "held" if benchmark.old_corpus_root_holds else "did not hold"
    yield (
        f"benchmark {benchmark.benchmark_id}: pins corpus root {benchmark.corpus_root}; "
        f"it {old} for OLD and {_holds(benchmark)} for NEW"
        + ("" if benchmark.corpus_root_holds else " (pin NEW's corpus root before evaluating against NEW)")
    )
    yield (
        f"  {grouped(len(benchmark.tasks))} of {_plural(benchmark.task_count, 'task', 'tasks')} "
        "with required or denied artifacts added, removed or changed"
    )
    for task in benchmark.tasks:
        yield f"  {task.task_id}: " + "; ".join(_task_artifact_text(entry) for entry in task.artifacts)


def corpus_diff_lines(diff: CorpusDiff, names: tuple[str, str] = ("OLD", "NEW")) -> Iterator[str]:
    """The text ``eceb corpus diff`` prints: the summary line
    (:func:`corpus_diff_summary`), the two registries (``names``: how they
    were given) with their artifact counts, bytes and corpus roots, then a
    section for each of added, removed and changed that is not empty (every
    artifact, one a line: ``+``, ``-``, ``~``), then the benchmark's.
    Figures are exact; every line is terminal-safe."""
    return map(printable, _lines(diff, names))


def _lines(diff: CorpusDiff, names: tuple[str, str]) -> Iterator[str]:
    yield corpus_diff_summary(diff)
    yield _side("old", names[0], diff.old)
    yield _side("new", names[1], diff.new)
    if diff.added:
        yield f"added: {grouped(len(diff.added))}"
        yield from (f"  + {_artifact_text(artifact)}" for artifact in diff.added)
    if diff.removed:
        yield f"removed: {grouped(len(diff.removed))}"
        yield from (f"  - {_artifact_text(artifact)}" for artifact in diff.removed)
    if diff.changed:
        yield f"changed: {grouped(len(diff.changed))}"
        yield from (f"  ~ {change.artifact_id}: {_changes_text(change.changes)}" for change in diff.changed)
    if diff.benchmark is not None:
        yield from _benchmark_lines(diff.benchmark)


def _row(cells: Sequence[str]) -> str:
    return f"| {' | '.join(markdown_text(cell) for cell in cells)} |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], what: str) -> list[str]:
    """A Markdown table of at most :data:`MARKDOWN_ROWS` rows, the rest counted."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += [_row(row) for row in rows[:MARKDOWN_ROWS]]
    if len(rows) > MARKDOWN_ROWS:
        out += ["", f"... and {grouped(len(rows) - MARKDOWN_ROWS)} more {what} (the JSON, --json, lists every one)."]
    return out


def _artifact_rows(artifacts: Sequence[Artifact]) -> list[tuple[str, ...]]:
    return [
        (a.artifact_id, a.path, a.kind, a.classification, grouped(a.size_bytes), _digest(a.source_digest))
        for a in artifacts
    ]


_ARTIFACT_HEADER: Final = ("artifact", "path", "kind", "classification", "bytes", "source digest")


def _benchmark_markdown(benchmark: BenchmarkChange) -> list[str]:
    old = "held" if benchmark.old_corpus_root_holds else "did not hold"
    out = [
        f"### Benchmark {markdown_text(benchmark.benchmark_id)}",
        "",
        f"Its pinned corpus root {benchmark.corpus_root} {old} for OLD and **{_holds(benchmark)}** for NEW.",
        "",
        f"{grouped(len(benchmark.tasks))} of {_plural(benchmark.task_count, 'task', 'tasks')} with required or "
        "denied artifacts added, removed or changed.",
    ]
    rows = [
        (task.task_id, entry.role, entry.artifact_id, entry.change, _changes_text(entry.changes))
        for task in benchmark.tasks
        for entry in task.artifacts
    ]
    if rows:
        out += ["", *_table(("task", "role", "artifact", "change", "fields"), rows, "task artifacts")]
    return out


def corpus_diff_markdown(diff: CorpusDiff, names: tuple[str, str] = ("OLD", "NEW")) -> str:
    """The diff as Markdown for a CI comment: a heading with the summary
    line, the two registries side by side, a table each of the artifacts
    added, removed and changed (one row a field change) and of the
    benchmark's tasks affected, each at most :data:`MARKDOWN_ROWS` rows
    (the rest counted). Ends with a newline. Every id, path and name is
    inert (:func:`~eceb_worker.render.markdown.markdown_text`)."""
    out = [f"## eceb corpus diff: {markdown_text(corpus_diff_summary(diff))}", ""]
    out += ["| | registry | artifacts | bytes | corpus root |", "|---|---|---|---|---|"]
    for label, name, side in (("old", names[0], diff.old), ("new", names[1], diff.new)):
        out.append(_row((label, name, grouped(side.artifact_count), grouped(side.size_bytes), side.corpus_root)))
    for title, artifacts in (("Added", diff.added), ("Removed", diff.removed)):
        if artifacts:
            out += ["", f"### {title} ({grouped(len(artifacts))})", ""]
            out += _table(_ARTIFACT_HEADER, _artifact_rows(artifacts), "artifacts")
    if diff.changed:
        rows = [
            (change.artifact_id, c.field, _value(c.field, c.old), _value(c.field, c.new))
            for change in diff.changed
            for c in change.changes
        ]
        out += ["", f"### Changed ({grouped(len(diff.changed))})", ""]
        out += _table(("artifact", "field", "old", "new"), rows, "field changes")
    if diff.benchmark is not None:
        out += ["", *_benchmark_markdown(diff.benchmark)]
    out.append("")
    return "\n".join(out)
