"""Scanning a registry as a stream (bounded memory: chunks of any size,
sorts spilled to disk) must report exactly what reading it whole in memory
reports: the same problems in the same order, or the same header and corpus
root; and cut the same re-hash shards as ``plan_rehash`` over the file's
line order (the last ones shrinking: the header gives the count), as byte
ranges a worker can decode alone."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.core.digests import digest_bytes
from eceb_worker.corpus.checked_lines import registry_artifacts, registry_range_artifacts
from eceb_worker.corpus.planning import RehashShard, plan_rehash
from eceb_worker.corpus.registry import (
    KEEP_ALL,
    Registry,
    read_registry,
    scan_registry,
)
from eceb_worker.errors import InputError
from eceb_worker.io.spill import ExternalSorter
from tests.support.helpers import artifact, registry_bytes
from tests.support.paths import REPO
from tests.unit.test_registry import HEADER, line

EXAMPLES = REPO / "examples"


def chunks(data: bytes, size: int) -> list[bytes]:
    """``data`` as chunks of ``size`` bytes."""
    return [data[i : i + size] for i in range(0, len(data), size)]


class Opener:
    """Gives ``data`` as chunks of ``block_bytes`` each time, counting the openings."""

    def __init__(self, data: bytes, block_bytes: int = 1 << 20) -> None:
        self.data = data
        self.block_bytes = block_bytes
        self.opened = 0

    def __call__(self) -> list[bytes]:
        self.opened += 1
        return chunks(self.data, self.block_bytes)


def whole(data: bytes) -> Any:
    try:
        return read_registry(data, "reg.jsonl")
    except InputError as exc:
        return exc.problems


def scan(data: bytes, spill: Path, *, block_bytes: int = 1 << 20, run_records: int = 1_000_000, **options: Any) -> Any:
    """:func:`scan_registry` of ``data`` in chunks of ``block_bytes``, sorts
    spilled to ``spill`` in runs of ``run_records``."""
    return scan_registry(
        Opener(data, block_bytes),
        "reg.jsonl",
        new_sorter=lambda: ExternalSorter(spill, run_records=run_records),
        **options,
    )


def scanned(data: bytes, spill: Path, **options: Any) -> Any:
    try:
        return scan(data, spill, keep=KEEP_ALL, **options)
    except InputError as exc:
        return exc.problems


def file_order_sizes(data: bytes) -> list[int]:
    """``size_bytes`` of each artifact line, in file order (header and blank lines skipped)."""
    lines = [raw for raw in data.split(b"\n") if raw.strip()]
    return [json.loads(raw)["size_bytes"] for raw in lines[1:]]


def streamed(data: bytes, spill: Path, **options: Any) -> Any:
    """The scan keeping no artifact (a registry not in corpus-root order is read twice)."""
    try:
        return scan(data, spill, keep=frozenset(), **options)
    except InputError as exc:
        return exc.problems


def registered(artifact: Any) -> tuple[str, str, str, int]:
    """What re-hashing reads of an artifact (a range's lines are decoded to that alone)."""
    return artifact.artifact_id, artifact.path, artifact.source_digest, artifact.size_bytes


def assert_same(data: bytes, spill: Path, **options: Any) -> None:
    """The scan agrees with ``read_registry`` on ``data``, keeping every
    artifact or none; its shards are ``plan_rehash``'s over the file order,
    and each byte range decodes to its artifacts."""
    expected = whole(data)
    got = scanned(data, spill, **options)
    kept_none = streamed(data, spill, **options)
    assert os.listdir(spill) == []  # no temporary file is left
    if isinstance(expected, list):
        assert got == expected
        assert kept_none == expected
        return
    assert isinstance(kept_none, Registry)
    assert kept_none.artifacts == ()
    assert (kept_none.header, kept_none.shards, kept_none.in_root_order) == (got.header, got.shards, got.in_root_order)
    assert isinstance(got, Registry)
    assert got.header == expected.header
    assert got.corpus_root == expected.corpus_root
    assert got.artifact_count == len(expected.artifacts)
    assert got.artifacts == expected.artifacts
    shard_bytes = options.get("shard_bytes", 64 * 1024 * 1024)
    planned = plan_rehash(file_order_sizes(data), shard_bytes=shard_bytes, taper=True)
    assert [(s.index, s.start, s.end, s.size_bytes) for s in got.shards] == [
        (s.index, s.start, s.end, s.size_bytes) for s in planned
    ]
    in_file_order = []
    for shard in got.shards:
        assert shard.byte_start <= shard.byte_end <= len(data)
        assert shard.digest == digest_bytes(data[shard.byte_start : shard.byte_end])
        in_file_order += registry_range_artifacts(data[shard.byte_start : shard.byte_end], shard, name="reg.jsonl")
    assert [registered(a) for a in in_file_order] == [registered(a) for a in expected.artifacts]
    assert got.shards == () or (got.shards[0].start == 0 and got.shards[-1].end == got.artifact_count)


EVERY_ERROR_CLASS = HEADER + b"".join(
    [
        b"{not json\n",
        line(artifact_id=7, path="p2"),
        line(artifact_id="u", path="p3", colour="red"),
        line(artifact_id="k", path="p4", kind="wiki"),
        line(artifact_id="c", path="p5", classification="secret"),
        line(artifact_id="d", path="p6", source_digest="ABC"),
        line(artifact_id="abs", path="/etc/passwd"),
        line(artifact_id="up", path="a/../b"),
        line(artifact_id="dot", path="./a"),
        line(artifact_id="empty", path="a//b"),
        line(artifact_id="bs", path="a\\b"),
        line(artifact_id="nul", path="a\u0000b"),
        line(artifact_id="ctl", path="a\u0007b"),
        line(artifact_id="utf", path=b'"caf\xe9.md"'),
        line(artifact_id="dup", path="one"),
        line(artifact_id="dup", path="two"),
        line(artifact_id="p1", path="same"),
        line(artifact_id="p2", path="same"),
        line(artifact_id="miss", path="m").replace(b',"size_bytes":1', b""),
        line(artifact_id="dup", path="same"),  # both duplicates on one line
    ]
)

D = "a" * 64
CASES = {
    "every error class": EVERY_ERROR_CLASS,
    "header and line problems": b'{"schema":"other","artifact_count":-1}\n' + line(kind="wiki"),
    "empty": b"",
    "blank only": b"\n \n\t\n",
    "float count": b'{"schema":"symgliph.eceb/registry-v0.1","artifact_count":0.0,"corpus_root":"'
    + D.encode()
    + b'"}\n',
    "no line dropped": HEADER
    + line(artifact_id="f", path="f.md", size_bytes=b"1.0")
    + line(artifact_id=b'"s\\ud800"', path="s.md")
    + b'{"artifact_id":'
    + b"[" * 5000
    + b"]" * 5000
    + b"}\n",
    "header only": registry_bytes(),
    "header only, wrong root": b'{"artifact_count":0,"corpus_root":"'
    + D.encode()
    + b'","schema":"symgliph.eceb/registry-v0.1"}\n',
}


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("case", sorted(CASES))
def test_reports_what_read_registry_reports(case: str, block_bytes: int, tmp_path: Path) -> None:
    assert_same(CASES[case], tmp_path, block_bytes=block_bytes, run_records=2)


def test_count_and_root_mismatches(tmp_path: Path) -> None:
    good = registry_bytes(artifact("a", content=b"1"), artifact("b", content=b"2"))
    header, rest = good.split(b"\n", 1)
    truncated = header + b"\n" + rest.split(b"\n", 1)[0] + b"\n"
    assert_same(truncated, tmp_path)
    problems = scanned(truncated, tmp_path)
    assert [p.field for p in problems] == ["artifact_count", "corpus_root"]
    swapped_root = good.replace(b"corpus_root", b"corpus_root", 1)
    assert_same(swapped_root, tmp_path)


def test_blank_lines_no_final_newline_and_any_order(tmp_path: Path) -> None:
    data = registry_bytes(*(artifact(f"id{i}", content=bytes([i])) for i in range(6)))
    header, *lines, _ = data.split(b"\n")
    variants = [
        b"\n" + header + b"\n\n" + b"\n\n".join(lines) + b"\n\n",
        header + b"\n" + b"\n".join(lines),  # no final newline
        header + b"\n" + b"\n".join(reversed(lines)) + b"\n",
        header + b"\n" + b"\n".join(f" {raw.decode()}\r".encode() for raw in lines) + b"\n",
    ]
    for variant in variants:
        for block_bytes in (1, 50, 1 << 20):
            assert_same(variant, tmp_path, block_bytes=block_bytes, shard_bytes=40_000, run_records=2)


def test_a_registry_in_root_order_or_held_whole_is_read_once(tmp_path: Path) -> None:
    data = registry_bytes(*(artifact(f"id{i}", content=bytes([i])) for i in range(20)))
    opener = Opener(data, 100)
    result = scan_registry(opener, "r", new_sorter=lambda: ExternalSorter(tmp_path))
    assert result.in_root_order
    assert opener.opened == 1
    header, *lines, _ = data.split(b"\n")
    random.Random(0).shuffle(lines)
    opener = Opener(header + b"\n" + b"\n".join(lines) + b"\n", 100)
    shuffled = scan_registry(opener, "r", new_sorter=lambda: ExternalSorter(tmp_path, run_records=3))
    assert not shuffled.in_root_order
    assert opener.opened == 2
    assert shuffled.corpus_root == result.corpus_root
    assert os.listdir(tmp_path) == []
    # Keeping every artifact, the sorts run over the artifacts held: one reading.
    opener.opened = 0
    held = scan_registry(opener, "r", keep=KEEP_ALL, new_sorter=lambda: ExternalSorter(tmp_path, run_records=3))
    assert opener.opened == 1
    assert held.corpus_root == result.corpus_root
    assert held.by_id() == read_registry(data, "r").by_id()


def test_paths_unlike_ids_are_checked_for_duplicates(tmp_path: Path) -> None:
    artifacts = [artifact(f"id{i}", path=f"p/{(i * 7) % 10}", content=bytes([i])) for i in range(10)]
    assert_same(registry_bytes(*artifacts), tmp_path, run_records=2)
    duplicated = [*artifacts[:9], artifact("id9", path="p/7", content=b"\x09")]
    data = registry_bytes(*duplicated)
    assert_same(data, tmp_path, run_records=2)
    [problem] = scanned(data, tmp_path)
    assert problem.field == "path"
    assert "duplicate path 'p/7' (first on line" in problem.message


def test_ids_that_sort_differently_escaped_and_raw(tmp_path: Path) -> None:
    """Canonical order compares JSON-escaped bytes: "notes 2" comes before
    "notes", '#' before '"'. Such registries are still read once."""
    names = ["notes", "notes 2", 'a"b', "a#b", "a\\b", "caf\u00e9"]
    artifacts = [artifact(name, path=f"f{i}", content=bytes([i])) for i, name in enumerate(names)]
    data = registry_bytes(*artifacts)
    assert_same(data, tmp_path, run_records=2)
    opener = Opener(data)
    assert scan_registry(opener, "r").in_root_order
    assert opener.opened == 2  # ids ascend, paths do not: their duplicates are looked for


def test_wanted_artifacts_are_returned(tmp_path: Path) -> None:
    data = registry_bytes(*(artifact(f"id{i}", content=bytes([i])) for i in range(5)))
    result = scan(data, tmp_path, keep={"id1", "id3", "nope"})
    expected = read_registry(data, "r").by_id()
    assert result.artifacts == (expected["id1"], expected["id3"])
    assert registry_artifacts(chunks(data, 10), {"id1", "id3", "nope"}) == result.by_id()
    header, *lines, _ = data.split(b"\n")
    spaced = b"\n".join([b"", header, b"", b"  " + lines[0], *lines[1:3], b" \t", lines[3] + b" ", lines[4]])
    for block_bytes in (1, 10, 200, 1 << 20):
        assert registry_artifacts(chunks(spaced, block_bytes), {"id1", "id3", "id4", "nope"}) == {
            "id1": expected["id1"],
            "id3": expected["id3"],
            "id4": expected["id4"],
        }


def test_a_range_that_changed_is_refused(tmp_path: Path) -> None:
    data = registry_bytes(*(artifact(f"id{i}", content=bytes([i])) for i in range(4)))
    [shard] = scan(data, tmp_path).shards
    part = data[shard.byte_start : shard.byte_end]
    assert len(registry_range_artifacts(part, shard, name="r")) == 4
    short = RehashShard(index=0, start=0, end=3, size_bytes=0, first_path=shard.first_path)
    with pytest.raises(InputError, match="not those the job checked"):
        registry_range_artifacts(part, short, name="r")
    elsewhere = RehashShard(index=0, start=0, end=4, size_bytes=0, first_path="id1")
    with pytest.raises(InputError, match="not those the job checked"):
        registry_range_artifacts(part, elsewhere, name="r")
    with pytest.raises(InputError, match="not those the job checked"):
        registry_range_artifacts(part[1:], shard, name="r")
    # The same count and first path, one digest changed: the range's own digest tells.
    at = part.index(b'"source_digest":"') + len(b'"source_digest":"')
    edited = part[:at] + (b"0" if part[at : at + 1] != b"0" else b"1") + part[at + 1 :]
    assert len(registry_range_artifacts(edited, msgspec.structs.replace(shard, digest=""), name="r")) == 4
    with pytest.raises(InputError, match="not those the job checked"):
        registry_range_artifacts(edited, shard, name="r")


@pytest.mark.parametrize("example", ["enterprise-seed", "public-eng-mix"])
def test_examples_scan_as_they_read(example: str, tmp_path: Path) -> None:
    data = (EXAMPLES / example / "registry.jsonl").read_bytes()
    for shard_bytes in (1, 40_000, 1 << 30):
        assert_same(data, tmp_path, shard_bytes=shard_bytes, block_bytes=4096)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=6), min_size=1, max_size=8, unique=True),
    st.data(),
)
def test_any_mutation_is_reported_as_read_registry_reports_it(contents: list[bytes], data: st.DataObject) -> None:
    """The mutations of ``test_registry``'s fast/slow agreement test, and
    shuffles, paths unlike ids, small blocks, shards and sort runs."""
    import tempfile

    distinct_paths = data.draw(st.booleans())
    artifacts = [
        artifact(f"id{i}", path=f"p{(i * 5) % 11}" if distinct_paths else None, content=c)
        for i, c in enumerate(contents)
    ]
    lines = registry_bytes(*artifacts).split(b"\n")
    index = data.draw(st.integers(0, len(lines) - 1))
    mutation = data.draw(
        st.sampled_from(["none", "drop", "duplicate", "swap", "truncate", "byte", "blank", "spaces", "shuffle"])
    )
    raw = lines[index]
    if mutation == "drop":
        del lines[index]
    elif mutation == "duplicate":
        lines.insert(index, raw)
    elif mutation == "swap" and index + 1 < len(lines):
        lines[index], lines[index + 1] = lines[index + 1], raw
    elif mutation == "truncate":
        lines[index] = raw[: data.draw(st.integers(0, max(0, len(raw) - 1)))]
    elif mutation == "byte" and raw:
        at = data.draw(st.integers(0, len(raw) - 1))
        lines[index] = raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1 :]
    elif mutation == "blank":
        lines.insert(index, b"")
    elif mutation == "spaces":
        lines[index] = b" " + raw + b" "
    elif mutation == "shuffle":
        body = lines[1:-1]
        random.Random(data.draw(st.integers(0, 1000))).shuffle(body)
        lines[1:-1] = body
    mutated = b"\n".join(lines)
    with tempfile.TemporaryDirectory() as spill:
        assert_same(
            mutated,
            Path(spill),
            block_bytes=data.draw(st.sampled_from([1, 13, 100, 1 << 20])),
            shard_bytes=data.draw(st.sampled_from([1, 33_000, 70_000, 1 << 30])),
            run_records=data.draw(st.integers(1, 4)),
        )
