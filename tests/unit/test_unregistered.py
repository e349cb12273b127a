"""Files a corpus holds that its registry does not list: the merge of two
sorted streams of paths (:mod:`eceb_worker.corpus.unregistered`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.corpus.unregistered import (
    UnregisteredFiles,
    path_key,
    registry_paths,
    unregistered_files,
    unregistered_keys,
)

paths = st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=6), max_size=30)


@given(paths, paths)
def test_the_merge_is_the_set_difference_in_byte_order(listed: list[str], registered: list[str]) -> None:
    keys = sorted(map(path_key, listed))
    wanted = sorted(map(path_key, registered))
    assert list(unregistered_keys(keys, wanted)) == sorted(set(keys) - set(wanted))


def test_counted_all_listed_up_to_the_limit_printable() -> None:
    listed = sorted(path_key(p) for p in ["a.md", "b.md", "c/d.md", "e\x1b.md", "f.md"])
    found = unregistered_files(listed, [path_key("b.md")], fail=True, limit=3)
    assert found == UnregisteredFiles(count=4, paths=("a.md", "c/d.md", "e\\x1b.md"), fail=True)
    assert not found.ok
    assert unregistered_files(listed, listed, fail=True) == UnregisteredFiles(count=0, paths=(), fail=True)
    assert unregistered_files(listed, [], fail=False).ok  # reported only


def test_a_file_name_that_is_not_utf8_sorts_by_its_bytes_and_is_shown_escaped() -> None:
    name = b"caf\xe9.md".decode("utf-8", "surrogateescape")
    assert path_key(name) == b"caf\xe9.md"
    assert unregistered_files([path_key(name)], [], fail=True).paths == ("caf\\udce9.md",)


def registry(*paths: str) -> bytes:
    header = json.dumps({"artifact_count": len(paths), "corpus_root": "0" * 64, "schema": "x"})
    lines = [json.dumps({"artifact_id": p, "path": p, "kind": "code", "size_bytes": 1}) for p in paths]
    return "\n".join([header, *lines]).encode() + b"\n"


@pytest.mark.parametrize("size", [1, 7, 50, 10_000])
def test_registry_paths_whatever_the_chunks(size: int) -> None:
    data = registry("a.md", "b/c.md", "日本語.txt", 'q"uote.md')
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(registry_paths(chunks, "r.jsonl")) == ["a.md", "b/c.md", "日本語.txt", 'q"uote.md']
    assert list(registry_paths([data.rstrip(b"\n")], "r.jsonl"))[-1] == 'q"uote.md'  # no final newline
    assert list(registry_paths([registry()], "r.jsonl")) == []


def test_a_registry_changed_since_its_check_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"r\.jsonl: changed while it was being verified"):
        list(registry_paths([registry("a.md") + b"{not json\n"], "r.jsonl"))
