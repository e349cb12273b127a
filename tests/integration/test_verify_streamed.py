"""``eceb corpus verify``'s path: the registry checked while its shards are
re-hashed (:func:`~eceb_worker.executors.streaming.verify_streamed`), and
the local storage's lean loop that compares as it reads
(:meth:`~eceb_worker.io.local_corpus.LocalStorage.check_artifacts`).

Each must give exactly what the registry held whole and the one-file path
give: the same report bytes, the same findings worded the same, the same
errors; and a registry with a problem must never yield a report."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import msgspec
import pytest

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.registry import build_registry, registry_lines
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import encode_verification
from eceb_worker.errors import InputError, StorageError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.executors.streaming import verify_streamed
from eceb_worker.io.local_corpus import LARGE_FILE_BYTES, LocalStorage
from eceb_worker.pipeline.embedded import verify_corpus
from eceb_worker.pipeline.inputs import load_registry
from tests.support.helpers import artifact

FILES = {f"d{i % 4}/f{i:03d}.md": f"content {i}\n".encode() * (i % 7 + 1) for i in range(120)}


def write_corpus(root: Path, files: dict[str, bytes]) -> bytes:
    """The files under ``root``, and the registry's bytes (as eceb writes it)."""
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    registry = build_registry(artifact(name, content=content) for name, content in files.items())
    return b"".join(registry_lines(registry))


def held_report(registry_file: Path, corpus: Path) -> bytes:
    """The report of the registry held whole (what ``eceb evaluate`` verifies)."""
    report = verify_corpus(load_registry(registry_file), StorageSpec(source=str(corpus)), shard_bytes=10**12)
    return encode_verification(report)


def tamper(corpus: Path) -> None:
    (corpus / "d1/f005.md").write_bytes(b"tampered")
    (corpus / "d2/f006.md").unlink()
    (corpus / "d3/f007.md").unlink()
    (corpus / "d3/f007.md").mkdir()


@pytest.mark.parametrize("order", ["as written", "scrambled"])
@pytest.mark.parametrize("shard_bytes", [1, 5000, 10**9])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_same_report_bytes_as_the_registry_held_whole(
    tmp_path: Path, order: str, shard_bytes: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any worker count, shard size and line order (a registry not in
    corpus-root order is sorted in temporary files), helpers started as the
    shards come: the report is the same bytes, findings included."""
    from eceb_worker.executors import inprocess, scheduler

    monkeypatch.setattr(scheduler, "HELPER_MIN_WORK_BYTES", 1)  # a helper for any work: they run here
    monkeypatch.setattr(inprocess, "HELPER_MIN_WORK_BYTES", 1)
    corpus = tmp_path / "corpus"
    data = write_corpus(corpus, FILES)
    if order == "scrambled":
        header, *lines = data.splitlines(keepends=True)
        random.Random(7).shuffle(lines)
        data = header + b"".join(lines)
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(data)
    tamper(corpus)
    expected = held_report(registry_file, corpus)
    started = []
    real_start = scheduler.TaskStream._start_helper

    def start(stream: scheduler.TaskStream) -> None:
        started.append(stream)
        real_start(stream)

    monkeypatch.setattr(scheduler.TaskStream, "_start_helper", start)
    spec = StorageSpec(source=str(corpus))
    report = verify_streamed(str(registry_file), spec, workers=workers, shard_bytes=shard_bytes)
    assert len(started) == workers - 1  # helpers ran (started as the work came)
    assert encode_verification(report) == expected
    assert [(f.path, f.status) for f in report.findings] == [
        ("d1/f005.md", "stale"),
        ("d2/f006.md", "missing"),
        ("d3/f007.md", "unreadable"),
    ]


def bad_registries(data: bytes) -> dict[str, bytes]:
    """Registries with problems the check finds at different times: a line
    near the end (after shards were handed out), a duplicate and a wrong
    header (found only once every line is read)."""
    header, *lines = data.splitlines(keepends=True)
    broken = [*lines[:-3], b'{"artifact_id": 7}\n', *lines[-3:]]
    duplicated = [*lines, lines[40]]
    return {
        "bad line late": header + b"".join(broken),
        "duplicate": header.replace(b'"artifact_count":120', b'"artifact_count":121') + b"".join(duplicated),
        "wrong count": header.replace(b'"artifact_count":120', b'"artifact_count":119') + b"".join(lines),
    }


@pytest.mark.parametrize("case", ["bad line late", "duplicate", "wrong count"])
@pytest.mark.parametrize("source", ["corpus", "no such directory"])
def test_a_bad_registry_gives_every_problem_and_no_report(
    tmp_path: Path, case: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-hash starts before the check ends; the check still decides:
    the same InputError, every problem, as reading the registry alone gives,
    even when the corpus itself cannot be read (the registry's problems come
    first)."""
    from eceb_worker.executors import scheduler

    monkeypatch.setattr(scheduler, "HELPER_MIN_WORK_BYTES", 1)
    corpus = tmp_path / "corpus"
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(bad_registries(write_corpus(corpus, FILES))[case])
    with pytest.raises(InputError) as alone:
        load_registry(registry_file)
    spec = StorageSpec(source=str(corpus if source == "corpus" else tmp_path / "nowhere"))
    with pytest.raises(InputError) as streamed:
        verify_streamed(str(registry_file), spec, workers=2, shard_bytes=1)
    assert streamed.value.problems == alone.value.problems


def test_shards_handed_out_while_checking_are_a_prefix_of_the_plan(tmp_path: Path) -> None:
    """What a scan gives ``on_shards`` before it ends are the plan's first
    shards, digests included; none once a line has a problem."""
    corpus = tmp_path / "corpus"
    registry_file = tmp_path / "registry.jsonl"
    data = write_corpus(corpus, FILES)
    registry_file.write_bytes(data)
    given: list[object] = []
    registry = load_registry(registry_file, keep=frozenset(), shard_bytes=2000, on_shards=given.extend)
    assert 0 < len(given) <= len(registry.shards)
    assert given == list(registry.shards[: len(given)])
    header, *lines = data.splitlines(keepends=True)
    registry_file.write_bytes(header + b'{"artifact_id": 7}\n' + b"".join(lines))
    given.clear()
    with pytest.raises(InputError):
        load_registry(registry_file, keep=frozenset(), shard_bytes=2000, on_shards=given.extend)
    assert given == []


def test_a_storage_failure_is_raised_once_the_registry_passed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(write_corpus(corpus, FILES))
    with pytest.raises(StorageError, match="no such directory"):
        verify_streamed(str(registry_file), StorageSpec(source=str(tmp_path / "nowhere")), workers=2, shard_bytes=1)


def test_a_corpus_of_large_files_starts_no_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eceb_worker.executors import scheduler

    started: list[scheduler.TaskStream] = []

    def start(stream: scheduler.TaskStream) -> None:
        started.append(stream)

    monkeypatch.setattr(scheduler.TaskStream, "_start_helper", start)
    corpus = tmp_path / "corpus"
    registry_file = tmp_path / "registry.jsonl"
    files = {f"big{i}.bin": bytes([i]) * LARGE_FILE_BYTES for i in range(3)}
    registry_file.write_bytes(write_corpus(corpus, files))
    assert verify_streamed(str(registry_file), StorageSpec(source=str(corpus)), workers=4, shard_bytes=1).ok
    assert started == []


def odd_corpus(root: Path, tmp_path: Path) -> tuple[list[Artifact], list[str]]:
    """A corpus with every kind of file a registered path can meet, and the
    registered artifacts (some registered with a size that is not the
    file's): the lean loop must find for each what the one-path route finds."""
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"secret")
    files = {
        "ok.md": b"fine",
        "empty.md": b"",
        "stale.md": b"old",
        "grown.md": b"short",
        "shrunk.md": b"a longer content",
        "missing.md": b"gone",
        "dir.md": b"becomes a directory",
        "escape.md": b"secret",
        "dangling.md": b"x",
        "inside-link.md": b"fine",
        "fifo.md": b"",
        "fifo-sized.md": b"bytes",
        "sub/deep.md": b"deep",
        "large.bin": b"L" * LARGE_FILE_BYTES,
        "large-stale.bin": b"M" * LARGE_FILE_BYTES,
    }
    registered = [artifact(name, content=content) for name, content in files.items()]
    registered.append(msgspec.structs.replace(artifact("wrong-size.md", content=b"right bytes"), size_bytes=3))
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    (root / "wrong-size.md").write_bytes(b"right bytes")
    (root / "stale.md").write_bytes(b"new")
    (root / "grown.md").write_bytes(b"short and now much longer")
    (root / "shrunk.md").write_bytes(b"short")
    (root / "large-stale.bin").write_bytes(b"M" * (LARGE_FILE_BYTES - 1) + b"N")
    (root / "missing.md").unlink()
    (root / "dir.md").unlink()
    (root / "dir.md").mkdir()
    (root / "escape.md").unlink()
    (root / "escape.md").symlink_to(outside)
    (root / "dangling.md").unlink()
    (root / "dangling.md").symlink_to(root / "nowhere")
    (root / "inside-link.md").unlink()
    (root / "inside-link.md").symlink_to(root / "ok.md")
    for fifo in ("fifo.md", "fifo-sized.md"):
        (root / fifo).unlink()
        os.mkfifo(root / fifo)
    extra = []
    try:  # a character device at a registered path (needs the right to make one)
        os.mknod(root / "null.md", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.mknod(root / "zero.md", stat.S_IFCHR | 0o666, os.makedev(1, 5))
        registered += [artifact("null.md", content=b""), artifact("zero.md", content=b"\0" * 10)]
        extra = ["null.md", "zero.md"]
    except PermissionError:
        pass
    return registered, extra


def test_the_lean_loop_finds_what_the_one_path_route_finds(tmp_path: Path) -> None:
    """Missing, stale (shorter, longer, same size), a directory, FIFOs (the
    empty file's digest registered too), devices, links inside and out,
    sizes registered wrong: every result the same class and detail, and the
    FIFO never blocks."""
    root = tmp_path / "corpus"
    registered, _devices = odd_corpus(root, tmp_path)
    storage = LocalStorage(root)
    hashed, odd = storage.check_artifacts(registered)
    expected = storage.hash_artifacts([a.path for a in registered])
    matches = [type(r) is tuple and r[1] == a.source_digest for a, r in zip(registered, expected, strict=True)]
    assert [i for i, _ in odd] == [i for i, match in enumerate(matches) if not match]
    for index, result in odd:
        want = expected[index]
        assert type(result) is type(want), registered[index].path
        if isinstance(want, tuple):
            assert result == want
        else:
            assert str(result) == str(want)
    assert hashed == sum(
        r[0] for a, r in zip(registered, expected, strict=True) if type(r) is tuple and r[1] == a.source_digest
    )


def test_the_same_findings_through_the_command_paths(tmp_path: Path) -> None:
    """The streamed verification of that corpus reports what the held one reports, byte for byte."""
    root = tmp_path / "corpus"
    registered, devices = odd_corpus(root, tmp_path)
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(build_registry(registered))))
    streamed = verify_streamed(str(registry_file), StorageSpec(source=str(root)), workers=2, shard_bytes=1)
    held = verify_corpus(
        load_registry(registry_file), StorageSpec(source=str(root)), executor=InProcessExecutor(2), shard_bytes=1
    )
    assert encode_verification(streamed) == encode_verification(held)
    statuses = {f.path: (f.status, f.detail) for f in streamed.findings}
    assert statuses["fifo.md"] == ("unreadable", "not a regular file")
    assert statuses["fifo-sized.md"] == ("unreadable", "not a regular file")
    assert statuses["dir.md"] == ("unreadable", "not a regular file")
    assert statuses["grown.md"][0] == statuses["shrunk.md"][0] == statuses["large-stale.bin"][0] == "stale"
    assert "wrong-size.md" not in statuses  # the bytes are the registered ones
    for device in devices:
        assert statuses[device] == ("unreadable", "not a regular file")


@pytest.mark.parametrize("digest", ["upper", "short", "spaced"])
def test_a_registered_digest_that_is_not_lowercase_hex_never_matches(tmp_path: Path, digest: str) -> None:
    """The lean loop compares digests as bytes when every registered one is
    64 lowercase hexadecimal digits; otherwise as text, as the one-path route
    does: a digest in capitals, or one that is short or spaced so that
    another file's digest would line up with it, is never a match."""
    from eceb_worker.corpus.verification import ExpectedArtifact

    (tmp_path / "a.md").write_bytes(b"same")
    (tmp_path / "b.md").write_bytes(b"same")
    good = artifact("a.md", content=b"same").source_digest
    odd = {"upper": good.upper(), "short": good[:62], "spaced": " ".join([good[:30], good[30:62]])}[digest]
    registered = [ExpectedArtifact("a.md", "a.md", odd, 4), ExpectedArtifact("b.md", "b.md", good, 4)]
    hashed, found = LocalStorage(tmp_path).check_artifacts(registered)
    assert (hashed, [(i, r) for i, r in found]) == (4, [(0, (4, good))])
