"""The files a record binds read from disk and checked
(:func:`eceb_worker.pipeline.paired.experiment.check_bound_files`): each read
once, a file that cannot be read a problem (never an error raised), the
bytes returned for the caller to use."""

from __future__ import annotations

from pathlib import Path

from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.bound_files import BoundFile, SinceBound, SinceFrozen
from eceb_worker.families.paired.records import FileDigest
from eceb_worker.pipeline.paired.experiment import check_bound_files


def bound(path: Path, data: bytes) -> BoundFile:
    return BoundFile(file=FileDigest(path=path.name, blake3=digest_bytes(data), size=len(data)), location=str(path))


def test_unchanged_files_are_returned_with_no_problem(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"alpha")
    data, problems = check_bound_files([bound(tmp_path / "a", b"alpha")], SinceBound("attempt.json"))
    assert (data, problems) == ({str(tmp_path / "a"): b"alpha"}, [])


def test_missing_and_changed_files_are_problems_in_order(tmp_path: Path) -> None:
    (tmp_path / "changed").write_bytes(b"edited")
    files = [bound(tmp_path / "gone", b"x"), bound(tmp_path / "changed", b"original")]
    _, problems = check_bound_files(files, SinceBound("attempt.json"))
    assert [str(problem) for problem in problems] == [
        f"{tmp_path / 'gone'}: missing, though attempt.json binds it",
        f"{tmp_path / 'changed'}: changed since attempt.json bound it",
    ]


def test_a_file_that_cannot_be_read_is_named_by_the_reading_when_the_wording_says_so(tmp_path: Path) -> None:
    (tmp_path / "directory").mkdir()
    _, problems = check_bound_files([bound(tmp_path / "directory", b"x")], SinceFrozen())
    assert len(problems) == 1
    assert problems[0].file == str(tmp_path / "directory")
    assert "changed since the freeze" not in problems[0].message
