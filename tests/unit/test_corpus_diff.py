"""The corpus diff, pure (``eceb_worker.corpus.diff``): each change named by
field, the tasks of a benchmark whose evidence moved, its corpus root, the
document and its texts; and properties over random registries: a registry
compared with itself shows nothing, ``diff(A, B)`` inverts ``diff(B, A)``,
applying ``diff(A, B)`` to A's artifacts gives B's, and the order of a
registry's lines does not matter."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.core.digests import digest_bytes
from eceb_worker.corpus.artifacts import CLASSIFICATIONS, SOURCE_KINDS, Artifact
from eceb_worker.corpus.diff import (
    CORPUS_DIFF_SCHEMA,
    CorpusDiff,
    FieldChange,
    apply_diff,
    diff_artifacts,
    diff_registries,
    encode_corpus_diff,
    id_order,
    invert_diff,
    registry_stream,
    with_benchmark,
)
from eceb_worker.corpus.registry import KEEP_ALL, Registry, build_registry, read_registry, registry_lines, scan_registry
from eceb_worker.errors import InputError
from eceb_worker.render.corpus_diff import (
    MARKDOWN_ROWS,
    corpus_diff_lines,
    corpus_diff_markdown,
    corpus_diff_summary,
)
from tests.support.helpers import artifact

DIGESTS = tuple(f"{n:x}" * 64 for n in range(4))


@dataclass(frozen=True)
class Task:
    """What a diff reads of a benchmark's task."""

    task_id: str
    required_artifacts: tuple[str, ...] = ()
    denied_artifacts: tuple[str, ...] = ()


def registry(*artifacts: Artifact) -> Registry:
    return build_registry(artifacts)


def shuffled(reg: Registry, seed: int) -> Registry:
    """``reg`` read back from a file whose artifact lines are shuffled (not in corpus-root order)."""
    header, *lines = registry_lines(reg)
    random.Random(seed).shuffle(lines)
    return read_registry(b"".join([header, *lines]), "shuffled.jsonl")


BASE = (
    artifact("runbook/disk-full.md", content=b"free space"),
    artifact("runbook/db-failover.md", classification="confidential", content=b"promote the replica"),
    artifact("issue/ENG-4411.md", kind="issue", content=b"JPY has no minor unit"),
    artifact("infrastructure/break-glass.md", kind="infrastructure", classification="restricted", content=b"x"),
)


def planted() -> tuple[Registry, Registry]:
    """OLD, and NEW with one file edited, one removed, one added and one reclassified."""
    old = registry(*BASE)
    edited = artifact("runbook/db-failover.md", classification="confidential", content=b"promote the replica now")
    reclassified = msgspec.structs.replace(BASE[3], classification="internal")
    new = registry(BASE[0], edited, reclassified, artifact("runbook/new é+%.md", content=b"new"))
    return old, new


def test_each_change_is_named_by_field() -> None:
    old, new = planted()
    diff = diff_registries(old, new)
    assert diff.differ
    assert [a.artifact_id for a in diff.added] == ["runbook/new é+%.md"]
    assert [a.artifact_id for a in diff.removed] == ["issue/ENG-4411.md"]
    changes = {c.artifact_id: c.changes for c in diff.changed}
    assert changes["infrastructure/break-glass.md"] == (
        FieldChange(field="classification", old="restricted", new="internal"),
    )
    assert [c.field for c in changes["runbook/db-failover.md"]] == ["source_digest", "size_bytes"]
    assert changes["runbook/db-failover.md"][1] == FieldChange(field="size_bytes", old=19, new=23)
    assert diff.unchanged_count == 1
    assert (diff.old.artifact_count, diff.new.artifact_count) == (4, 4)
    assert diff.old.size_bytes == sum(a.size_bytes for a in BASE)
    assert (diff.old.corpus_root, diff.new.corpus_root) == (old.corpus_root, new.corpus_root)


def test_path_kind_and_every_field_are_compared() -> None:
    before = artifact("a", content=b"1")
    after = Artifact(
        artifact_id="a", path="b", kind="code", classification="public", source_digest=DIGESTS[1], size_bytes=9
    )
    diff = diff_registries(registry(before), registry(after))
    (change,) = diff.changed
    assert [c.field for c in change.changes] == ["path", "kind", "classification", "source_digest", "size_bytes"]


def test_a_renamed_file_is_one_removed_and_one_added() -> None:
    """Artifacts are matched by id, which eceb registers as the path: a move is not guessed from the digest."""
    before, after = artifact("runbook/old.md", content=b"same"), artifact("runbook/new.md", content=b"same")
    diff = diff_registries(registry(before), registry(after))
    assert (diff.removed, diff.added, diff.changed) == ((before,), (after,), ())


def test_a_size_change_alone_leaves_the_corpus_root_and_is_still_a_change() -> None:
    before = artifact("a", content=b"1")
    after = msgspec.structs.replace(before, size_bytes=2)
    diff = diff_registries(registry(before), registry(after))
    assert diff.old.corpus_root == diff.new.corpus_root
    assert diff.differ
    assert corpus_diff_summary(diff) == "0 added, 0 removed, 1 changed, 0 unchanged; corpus root unchanged"


def test_a_benchmark_names_each_task_whose_evidence_moved() -> None:
    old, new = planted()
    tasks = [
        Task("failover", required_artifacts=("runbook/db-failover.md",)),
        Task("jpy", required_artifacts=("issue/ENG-4411.md", "runbook/disk-full.md")),
        Task(
            "breakglass",
            required_artifacts=("runbook/disk-full.md",),
            denied_artifacts=("infrastructure/break-glass.md",),
        ),
        Task("future", required_artifacts=("runbook/new é+%.md",)),
        Task("calm", required_artifacts=("runbook/disk-full.md",)),
    ]
    diff = with_benchmark(diff_registries(old, new), benchmark_id="seed", corpus_root=old.corpus_root, tasks=tasks)
    assert diff.benchmark is not None
    assert diff.benchmark.old_corpus_root_holds and not diff.benchmark.corpus_root_holds
    assert diff.benchmark.task_count == 5
    found = {
        task.task_id: [(e.role, e.artifact_id, e.change, [c.field for c in e.changes]) for e in task.artifacts]
        for task in diff.benchmark.tasks
    }
    assert list(found) == ["breakglass", "failover", "future", "jpy"]  # sorted; "calm" is not affected
    assert found["failover"] == [("required", "runbook/db-failover.md", "changed", ["source_digest", "size_bytes"])]
    assert found["jpy"] == [("required", "issue/ENG-4411.md", "removed", [])]
    assert found["breakglass"] == [("denied", "infrastructure/break-glass.md", "changed", ["classification"])]
    assert found["future"] == [("required", "runbook/new é+%.md", "added", [])]
    held = with_benchmark(diff_registries(old, new), benchmark_id="seed", corpus_root=new.corpus_root, tasks=[])
    assert held.benchmark is not None and held.benchmark.corpus_root_holds
    assert not held.benchmark.old_corpus_root_holds and held.benchmark.tasks == ()


def test_artifacts_out_of_order_or_repeated_are_refused() -> None:
    a, b = artifact("a"), artifact("b")
    with pytest.raises(ValueError, match="old artifacts are not in strictly ascending"):
        diff_artifacts([b, a], [], old_root="0" * 64, new_root="0" * 64)
    with pytest.raises(ValueError, match="new artifacts"):
        diff_artifacts([], [a, a], old_root="0" * 64, new_root="0" * 64)
    # Corpus-root order, not plain string order: "a b" comes before "a" ('"' is 0x22, ' ' 0x20).
    assert [x.artifact_id for x in id_order([artifact("a"), artifact("a b")])] == ["a b", "a"]
    diff_artifacts([artifact("a b"), artifact("a")], [], old_root="0" * 64, new_root="0" * 64)


def test_a_registry_read_without_every_artifact_is_refused() -> None:
    data = b"".join(registry_lines(registry(*BASE)))
    partial = scan_registry(lambda: (data,), "r.jsonl", keep=frozenset({"runbook/disk-full.md"}))
    with pytest.raises(ValueError, match="without all its artifacts"):
        diff_registries(partial, registry(*BASE))
    assert scan_registry(lambda: (data,), "r.jsonl", keep=KEEP_ALL).artifacts


def test_a_registry_is_streamed_lazily_and_only_as_it_was_checked() -> None:
    reg = registry(*(artifact(f"a/{n:03d}", content=bytes([n])) for n in range(200)))
    data = b"".join(registry_lines(reg))
    pulled: list[int] = []

    def chunks(data: bytes = data) -> Iterator[bytes]:
        for start in range(0, len(data), 1000):
            pulled.append(start)
            yield data[start : start + 1000]

    checked = scan_registry(lambda: (data,), "r.jsonl", keep=frozenset())
    stream = registry_stream(chunks(), checked, "r.jsonl", digest=digest_bytes(data))
    assert next(stream) == reg.artifacts[0]
    assert len(pulled) < len(data) // 1000  # read as consumed, not whole
    assert [*reg.artifacts[:1], *stream] == list(reg.artifacts)
    # Other bytes than those checked: refused, naming the file.
    edited = data.replace(reg.artifacts[5].source_digest.encode(), DIGESTS[3].encode())
    with pytest.raises(InputError, match="changed while it was read") as caught:
        list(registry_stream((edited,), checked, "r.jsonl", digest=digest_bytes(data)))
    assert caught.value.problems[0].file == "r.jsonl"
    header, *lines = data.splitlines(keepends=True)
    swapped = b"".join([header, lines[1], lines[0], *lines[2:]])
    with pytest.raises(InputError, match="changed while it was read"):
        list(registry_stream((swapped,), checked, "r.jsonl", digest=digest_bytes(data)))
    with pytest.raises(InputError, match="changed while it was read"):
        list(registry_stream((b"".join([header, *lines[:-1]]),), checked, "r.jsonl", digest=digest_bytes(data)))
    with pytest.raises(ValueError, match="not in corpus-root order"):
        list(registry_stream((data,), shuffled(reg, 1), "r.jsonl", digest=digest_bytes(data)))


def test_apply_refuses_a_diff_of_other_artifacts() -> None:
    old, new = planted()
    diff = diff_registries(old, new)
    with pytest.raises(ValueError, match=r"removed artifact 'issue/ENG-4411\.md'"):
        apply_diff(new.artifacts, diff)
    with pytest.raises(ValueError, match="changed artifact"):
        apply_diff([a for a in old.artifacts if a.artifact_id != "runbook/db-failover.md"], diff)
    with pytest.raises(ValueError, match="is there already"):
        apply_diff([*old.artifacts, artifact("runbook/new é+%.md")], diff)


def test_the_document_is_canonical_and_round_trips() -> None:
    old, new = planted()
    diff = with_benchmark(
        diff_registries(old, new), benchmark_id="seed", corpus_root=old.corpus_root, tasks=[Task("t", ("a",))]
    )
    data = encode_corpus_diff(diff)
    assert data.endswith(b"}\n") and b"\n" not in data[:-1]
    document = json.loads(data)
    assert document["schema"] == CORPUS_DIFF_SCHEMA
    assert msgspec.json.decode(data, type=CorpusDiff) == diff
    assert json.loads(encode_corpus_diff(diff_registries(old, old)))["benchmark"] is None


def test_texts_escape_what_a_terminal_or_markdown_would_act_on() -> None:
    hostile = Artifact(
        artifact_id="runbook/[x](http://e.example) @team #12",
        path="runbook/\u202eevil\x1b.md",
        kind="runbook",
        classification="internal",
        source_digest=DIGESTS[0],
        size_bytes=1,
    )
    diff = diff_registries(registry(*BASE), registry(*BASE, hostile))
    text = "\n".join(corpus_diff_lines(diff, ("old\x1b.jsonl", "new.jsonl")))
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\u202eevil\\x1b.md" in text and "old\\x1b.jsonl" in text
    markdown = corpus_diff_markdown(diff)
    assert "\u202e" not in markdown and "\\[x\\](http\\://e.example)" in markdown
    assert "@\u200dteam" in markdown and "#\u200d12" in markdown


def test_markdown_tables_are_cut_and_the_rest_counted() -> None:
    many = [artifact(f"a/{n:04d}") for n in range(MARKDOWN_ROWS + 5)]
    diff = diff_registries(registry(), registry(*many))
    markdown = corpus_diff_markdown(diff)
    assert f"### Added ({MARKDOWN_ROWS + 5})" in markdown
    assert "a/0099" in markdown and "a/0100" not in markdown
    assert "... and 5 more artifacts" in markdown
    assert len(list(corpus_diff_lines(diff))) == 3 + 1 + MARKDOWN_ROWS + 5  # the text lists every one


def test_the_text_has_a_summary_line_then_sections() -> None:
    old, new = planted()
    diff = with_benchmark(
        diff_registries(old, new),
        benchmark_id="seed",
        corpus_root=old.corpus_root,
        tasks=[Task("failover", ("runbook/db-failover.md",))],
    )
    lines = list(corpus_diff_lines(diff, ("old.jsonl", "new.jsonl")))
    assert lines[0] == (
        "1 added, 1 removed, 2 changed, 1 unchanged; corpus root changed; "
        "benchmark corpus root no longer holds, 1 of 1 task affected"
    )
    assert lines[1].startswith("old  old.jsonl: 4 artifacts,")
    assert "added: 1" in lines and "removed: 1" in lines and "changed: 2" in lines
    assert "  ~ infrastructure/break-glass.md: classification restricted -> internal" in lines
    assert any(line.startswith("  + runbook/new é+%.md (runbook, internal, 3 bytes,") for line in lines)
    assert lines[-1].startswith("  failover: required runbook/db-failover.md changed (source_digest ")
    same = diff_registries(old, old)
    assert next(corpus_diff_lines(same)) == "no difference: 4 artifacts unchanged; corpus root unchanged"


# Properties over random registries.

IDS = st.text(alphabet='ab é+%"', min_size=1, max_size=4)


@st.composite
def artifacts(draw: st.DrawFn, artifact_id: str) -> Artifact:
    return Artifact(
        artifact_id=artifact_id,
        path=draw(st.sampled_from([artifact_id, artifact_id + "/p"])),
        kind=draw(st.sampled_from(SOURCE_KINDS[:2])),  # type: ignore[arg-type]
        classification=draw(st.sampled_from(CLASSIFICATIONS[:2])),  # type: ignore[arg-type]
        source_digest=draw(st.sampled_from(DIGESTS[:2])),
        size_bytes=draw(st.integers(0, 2)),
    )


@st.composite
def registries(draw: st.DrawFn) -> Registry:
    ids = draw(st.lists(IDS, max_size=8, unique=True))
    return registry(*(draw(artifacts(i)) for i in ids))


@st.composite
def benchmark_tasks(draw: st.DrawFn) -> list[Task]:
    names = st.lists(IDS, max_size=3)
    return [Task(f"t{n}", tuple(draw(names)), tuple(draw(names))) for n in range(draw(st.integers(0, 3)))]


@settings(max_examples=300, deadline=None)
@given(registries(), st.integers(0, 1000))
def test_a_registry_compared_with_itself_shows_nothing(a: Registry, seed: int) -> None:
    diff = diff_registries(a, shuffled(a, seed))
    assert not diff.differ
    assert diff.added == diff.removed == diff.changed == ()
    assert diff.unchanged_count == a.artifact_count
    assert diff.old == diff.new


@settings(max_examples=300, deadline=None)
@given(registries(), registries(), benchmark_tasks())
def test_a_diff_inverts_the_diff_the_other_way(a: Registry, b: Registry, tasks: list[Task]) -> None:
    assert invert_diff(diff_registries(a, b)) == diff_registries(b, a)
    forth = with_benchmark(diff_registries(a, b), benchmark_id="b", corpus_root=a.corpus_root, tasks=tasks)
    back = with_benchmark(diff_registries(b, a), benchmark_id="b", corpus_root=a.corpus_root, tasks=tasks)
    assert invert_diff(forth) == back
    assert invert_diff(invert_diff(forth)) == forth


@settings(max_examples=300, deadline=None)
@given(registries(), registries())
def test_applying_a_diff_to_the_old_artifacts_gives_the_new_ones(a: Registry, b: Registry) -> None:
    diff = diff_registries(a, b)
    assert apply_diff(a.artifacts, diff) == list(b.artifacts)
    assert apply_diff(b.artifacts, invert_diff(diff)) == list(a.artifacts)
    assert diff.differ == (a.artifacts != b.artifacts)
    assert len(diff.removed) + len(diff.changed) + diff.unchanged_count == a.artifact_count
    assert len(diff.added) + len(diff.changed) + diff.unchanged_count == b.artifact_count


@settings(max_examples=200, deadline=None)
@given(registries(), registries(), st.integers(0, 1000))
def test_the_order_of_the_lines_does_not_matter(a: Registry, b: Registry, seed: int) -> None:
    expected = encode_corpus_diff(diff_registries(a, b))
    assert encode_corpus_diff(diff_registries(shuffled(a, seed), shuffled(b, seed + 1))) == expected
