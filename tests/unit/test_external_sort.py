"""External merge sort: the same order as ``sorted()``, bounded memory, no temporary file left."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.io.spill import sorted_records


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=12), max_size=80),
    st.integers(min_value=1, max_value=9),
    st.integers(min_value=1, max_value=200),
)
def test_equals_sorted_for_any_input_and_run_size(records: list[bytes], run_records: int, run_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as spill:
        assert list(sorted_records(records, spill_dir=spill, run_records=run_records, run_bytes=run_bytes)) == sorted(
            records
        )
        assert os.listdir(spill) == []


def test_more_runs_than_are_merged_at_once(tmp_path: Path) -> None:
    records = [i.to_bytes(2, "big")[::-1] for i in range(300)]
    seen: set[int] = set()

    def watched() -> Iterator[bytes]:
        for record in records:
            seen.add(len(os.listdir(tmp_path)))
            yield record

    assert list(sorted_records(watched(), spill_dir=tmp_path, run_records=1)) == sorted(records)
    assert max(seen) == 299  # one run file per record was written ...
    assert os.listdir(tmp_path) == []  # ... and every one removed


def test_small_input_stays_in_memory(tmp_path: Path) -> None:
    output = sorted_records([b"b", b"a"], spill_dir=tmp_path, run_records=3)
    assert next(output) == b"a"
    assert os.listdir(tmp_path) == []
    assert list(output) == [b"b"]


def test_files_are_removed_when_the_output_is_abandoned(tmp_path: Path) -> None:
    output = sorted_records([b"c", b"b", b"a", b"d"], spill_dir=tmp_path, run_records=1)
    assert next(output) == b"a"
    assert len(os.listdir(tmp_path)) == 4
    output.close()
    assert os.listdir(tmp_path) == []


def test_files_are_removed_when_the_input_fails(tmp_path: Path) -> None:
    def failing() -> Iterator[bytes]:
        yield from (b"z", b"y", b"x")
        raise RuntimeError("input broke")

    with pytest.raises(RuntimeError, match="input broke"):
        list(sorted_records(failing(), spill_dir=tmp_path, run_records=1))
    assert os.listdir(tmp_path) == []


def test_bad_run_sizes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="run_records"):
        sorted_records([], spill_dir=tmp_path, run_records=0)
    with pytest.raises(ValueError, match="run_bytes"):
        sorted_records([], spill_dir=tmp_path, run_bytes=0)
