"""Re-hash verification from a local directory (ECEB-0.1 §5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eceb_worker.corpus.registry import Registry, build_registry
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import reduce_verification, shard_verification
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.local_corpus import LocalStorage
from eceb_worker.pipeline.embedded import verify_corpus
from tests.support.helpers import artifact


def make_corpus(root: Path, files: dict[str, bytes]) -> Registry:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return build_registry(artifact(name, content=content) for name, content in files.items())


FILES = {f"d{i % 3}/f{i}.md": f"content {i}\n".encode() * (i + 1) for i in range(12)}


def test_clean_corpus_verifies(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path, FILES)
    report = verify_corpus(registry, StorageSpec(source=str(tmp_path)))
    assert report.ok
    assert report.verified_count == report.artifact_count == 12
    assert report.bytes_hashed == sum(map(len, FILES.values()))


def test_every_failure_kind_is_reported_together(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"secret")
    files = {
        "ok.md": b"fine",
        "stale.md": b"old",
        "missing.md": b"gone",
        "dir.md": b"becomes a directory",
        "escape.md": b"secret",
        "dangling.md": b"x",
        "inside-link.md": b"fine",
    }
    registry = make_corpus(corpus, files)
    (corpus / "stale.md").write_bytes(b"new")
    (corpus / "missing.md").unlink()
    (corpus / "dir.md").unlink()
    (corpus / "dir.md").mkdir()
    (corpus / "escape.md").unlink()
    (corpus / "escape.md").symlink_to(outside)
    (corpus / "dangling.md").unlink()
    (corpus / "dangling.md").symlink_to(corpus / "nowhere")
    (corpus / "inside-link.md").unlink()
    (corpus / "inside-link.md").symlink_to(corpus / "ok.md")
    report = verify_corpus(registry, StorageSpec(source=str(corpus)))
    statuses = {f.path: f.status for f in report.findings}
    assert statuses == {
        "stale.md": "stale",
        "missing.md": "missing",
        "dir.md": "unreadable",
        "escape.md": "outside_corpus",
        "dangling.md": "missing",
    }
    stale = next(f for f in report.findings if f.status == "stale")
    assert stale.observed_size == 3
    assert stale.observed_digest == artifact("x", content=b"new").source_digest
    assert report.verified_count == 2
    assert [f.path for f in report.findings] == sorted(statuses)  # registry order


def test_escaping_parent_directory_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_bytes(b"a")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "sub").symlink_to(outside, target_is_directory=True)
    registry = build_registry([artifact("sub/a.md", content=b"a")])
    report = verify_corpus(registry, StorageSpec(source=str(corpus)))
    assert [f.status for f in report.findings] == ["outside_corpus"]


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    registry = build_registry([artifact("pipe.md", content=b"")])
    report = verify_corpus(registry, StorageSpec(source=str(tmp_path)))
    assert [f.status for f in report.findings] == ["unreadable"]


@pytest.mark.parametrize("shard_bytes", [1, 64, 10_000_000])
@pytest.mark.parametrize("workers", [1, 2])
def test_same_report_for_any_shard_size_and_worker_count(tmp_path: Path, shard_bytes: int, workers: int) -> None:
    registry = make_corpus(tmp_path, FILES)
    (tmp_path / "d1/f4.md").write_bytes(b"tampered")
    reference = verify_corpus(registry, StorageSpec(source=str(tmp_path)), shard_bytes=10**12)
    report = verify_corpus(
        registry, StorageSpec(source=str(tmp_path)), executor=InProcessExecutor(workers), shard_bytes=shard_bytes
    )
    assert report == reference
    assert [f.path for f in report.findings] == ["d1/f4.md"]


def test_reduce_refuses_lost_or_duplicated_shards(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path, FILES)
    storage = LocalStorage(tmp_path)
    arts = registry.artifacts
    first = shard_verification(arts[:5], storage.hash_artifacts([a.path for a in arts[:5]]), start=0)
    second = shard_verification(arts[5:], storage.hash_artifacts([a.path for a in arts[5:]]), start=5)
    kwargs = {"corpus_root": registry.corpus_root, "artifact_count": 12, "source": "x"}
    assert reduce_verification([second, first], **kwargs) == reduce_verification([first, second], **kwargs)
    with pytest.raises(ValueError, match="cover 5 of 12"):
        reduce_verification([first], **kwargs)
    with pytest.raises(ValueError, match="do not tile"):
        reduce_verification([first, first, second], **kwargs)


def test_large_files_are_read_in_chunks_and_verified(tmp_path: Path) -> None:
    from eceb_worker.io.local_corpus import LARGE_FILE_BYTES, READ_CHUNK_BYTES

    sizes = {"exact.bin": LARGE_FILE_BYTES, "big.bin": READ_CHUNK_BYTES * 2 + 7}
    files = {name: bytes(range(251)) * (size // 251) + b"x" * (size % 251) for name, size in sizes.items()}
    registry = make_corpus(tmp_path, files)
    assert verify_corpus(registry, StorageSpec(source=str(tmp_path))).ok
    with (tmp_path / "big.bin").open("r+b") as handle:
        handle.truncate(READ_CHUNK_BYTES + 3)
    report = verify_corpus(registry, StorageSpec(source=str(tmp_path)))
    assert [(f.path, f.status, f.observed_size) for f in report.findings] == [
        ("big.bin", "stale", READ_CHUNK_BYTES + 3)
    ]


@pytest.mark.parametrize("change", ["truncated", "grown", "replaced"])
def test_a_large_file_changed_while_it_is_read_is_stale_never_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """The large-file read runs ahead of the hashing on another thread: a
    file truncated, grown or replaced by another file after its first chunk
    was read gives a ``stale`` finding (the bytes read are not the bytes
    registered), never a pass and never SIGBUS."""
    import os

    from eceb_worker.io.local_corpus import READ_CHUNK_BYTES

    size = READ_CHUNK_BYTES * 3 + 11
    files = {"big.bin": bytes(range(256)) * (size // 256) + b"y" * (size % 256), "small.txt": b"small\n"}
    registry = make_corpus(tmp_path, files)
    target = tmp_path / "big.bin"
    real_readv = os.readv
    reads = []

    def changing_readv(fd: int, buffers: list[memoryview]) -> int:
        count = real_readv(fd, buffers)
        reads.append(count)
        if len(reads) == 1:
            if change == "truncated":
                os.truncate(target, READ_CHUNK_BYTES + 5)
            elif change == "grown":
                with target.open("ab") as handle:
                    handle.write(b"more")
            else:  # the name now holds another file; the open one is unchanged
                replacement = tmp_path / "replacement.bin"
                replacement.write_bytes(b"z" * size)
                os.replace(replacement, target)
        return count

    monkeypatch.setattr(os, "readv", changing_readv)
    report = verify_corpus(registry, StorageSpec(source=str(tmp_path)))
    assert reads, "the large file was not read in chunks"
    if change == "replaced":  # the bytes read are the registered file's own, read whole
        assert report.ok, report.findings
        return
    expected = READ_CHUNK_BYTES + 5 if change == "truncated" else size + 4
    assert [(f.path, f.status, f.observed_size) for f in report.findings] == [("big.bin", "stale", expected)]


def test_a_worker_refuses_registry_lines_changed_since_the_check(tmp_path: Path) -> None:
    """A cluster job's re-hash tasks carry their lines by reference (a byte
    range of the registry file, with its digest): a local registry edited in
    place after the check, same length, same first path, is refused."""
    from eceb_worker.corpus.registry import registry_lines
    from eceb_worker.errors import InputError
    from eceb_worker.pipeline.jobs import Job
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage, RehashAnswer, RehashTask
    from eceb_worker.pipeline.shards import Workspace

    registry = make_corpus(tmp_path / "corpus", FILES)
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(registry)))
    message = JobMessage(
        job_id="j",
        kind=JobKind.VERIFY,
        inputs=JobInputs(registry=str(registry_file)),
        corpus=StorageSpec(source=str(tmp_path / "corpus")),
        shard_bytes=1,
    )
    stage = Job(message).start()  # as the coordinator plans it: no artifact held
    tasks = [task for task in stage.tasks if isinstance(task, RehashTask)]
    assert len(tasks) == len(FILES) and all(not task.artifacts and task.shard.digest for task in tasks)
    answer = Workspace().run(tasks[-1])
    assert isinstance(answer, RehashAnswer)
    assert answer.verification.checked == 1
    data = registry_file.read_bytes()
    at = data.rindex(b'"source_digest":"') + len(b'"source_digest":"')
    registry_file.write_bytes(data[:at] + (b"0" if data[at : at + 1] != b"0" else b"1") + data[at + 1 :])
    with pytest.raises(InputError, match="not those the job checked"):
        Workspace().run(tasks[-1])


def test_inputs_that_are_not_regular_files_are_refused(tmp_path: Path) -> None:
    """A FIFO would block and a device never end: every input must be a regular file."""
    from eceb_worker.errors import InputError
    from eceb_worker.pipeline.inputs import load_registry

    fifo = tmp_path / "registry.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(InputError, match="not a regular file"):
            load_registry(path)
    with pytest.raises(InputError, match="Is a directory"):
        load_registry(tmp_path)


def test_unregistered_files_found_through_sorted_runs_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two paths a run: both sides spill sorted runs to temporary files and
    are merged; every entry counts (a FIFO, a symbolic link to a directory),
    the registered paths never, and no temporary file is left."""
    from eceb_worker.corpus.registry import registry_lines
    from eceb_worker.io import spill as spilling
    from eceb_worker.io.unregistered import find_unregistered

    root = tmp_path / "corpus"
    registry = make_corpus(root, FILES)
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(registry)))
    extra = ["d0/new.md", "d1/f1.md.bak", "z/only.md", "a.md"]
    for name in extra:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"secret")
    os.mkfifo(root / "d2/pipe")
    (root / "linked").symlink_to(root / "d0", target_is_directory=True)
    spill = tmp_path / "spill"
    spill.mkdir()
    runs: list[Path] = []
    write_run = spilling._write_run

    def counted_run(*args: object) -> Path:
        runs.append(write_run(*args))  # type: ignore[arg-type]
        return runs[-1]

    monkeypatch.setattr(spilling, "_write_run", counted_run)
    counted: list[int] = []
    found = find_unregistered(
        str(registry_file),
        StorageSpec(source=str(root)),
        fail=True,
        on_listed=counted.append,
        run_records=2,
        spill_dir=str(spill),
    )
    assert len(runs) > 10  # both sides spilled sorted runs
    assert found.paths == tuple(sorted([*extra, "d2/pipe", "linked"]))
    assert found.count == 6
    assert sum(counted) == len(FILES) + 6
    assert list(spill.iterdir()) == []
    capped = find_unregistered(str(registry_file), StorageSpec(source=str(root)), fail=False, limit=2, run_records=3)
    assert (capped.count, capped.paths, capped.ok) == (6, ("a.md", "d0/new.md"), True)
    skipped = find_unregistered(
        str(registry_file), StorageSpec(source=str(root)), fail=True, skip=lambda path: path.endswith(".md")
    )
    assert skipped.paths == ("d1/f1.md.bak", "d2/pipe", "linked")
