"""Registry validation: every problem of a registry reported together, by line and field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.corpus.registry import build_registry, read_registry, registry_lines
from eceb_worker.errors import InputError, Problem
from tests.support.helpers import artifact, registry_bytes

D = "a" * 64


def problems_of(data: bytes) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        read_registry(data, "reg.jsonl")
    return caught.value.problems


def line(**fields: object) -> bytes:
    base: dict[str, object] = {
        "artifact_id": "x",
        "path": "x.md",
        "kind": "runbook",
        "classification": "internal",
        "source_digest": D,
        "size_bytes": 1,
    }
    base.update(fields)
    return (
        b"{"
        + b",".join(
            f'"{k}":'.encode() + (v if isinstance(v, bytes) else __import__("json").dumps(v).encode())
            for k, v in base.items()
        )
        + b"}\n"
    )


HEADER = b'{"schema":"symgliph.eceb/registry-v0.1","artifact_count":0,"corpus_root":"' + D.encode() + b'"}\n'


def test_round_trip() -> None:
    data = registry_bytes(artifact("b", content=b"2"), artifact("a", content=b"1"))
    registry = read_registry(data, "r")
    assert [a.artifact_id for a in registry.artifacts] == ["a", "b"]
    assert b"".join(registry_lines(registry)) == data


def test_every_error_class_in_one_run() -> None:
    data = HEADER + b"".join(
        [
            b"{not json\n",  # line 2
            line(artifact_id=7, path="p2"),  # 3 wrong type
            line(artifact_id="u", path="p3", colour="red"),  # 4 unknown field
            line(artifact_id="k", path="p4", kind="wiki"),  # 5 unknown kind
            line(artifact_id="c", path="p5", classification="secret"),  # 6 unknown classification
            line(artifact_id="d", path="p6", source_digest="ABC"),  # 7 malformed digest
            line(artifact_id="abs", path="/etc/passwd"),  # 8 absolute
            line(artifact_id="up", path="a/../b"),  # 9 '..'
            line(artifact_id="dot", path="./a"),  # 10 '.'
            line(artifact_id="empty", path="a//b"),  # 11 empty segment
            line(artifact_id="bs", path="a\\b"),  # 12 backslash
            line(artifact_id="nul", path="a\u0000b"),  # 13 NUL
            line(artifact_id="ctl", path="a\u0007b"),  # 14 control character
            line(artifact_id="utf", path=b'"caf\xe9.md"'),  # 15 not UTF-8
            line(artifact_id="dup", path="one"),  # 16
            line(artifact_id="dup", path="two"),  # 17 duplicate id
            line(artifact_id="p1", path="same"),  # 18
            line(artifact_id="p2", path="same"),  # 19 duplicate path
            line(artifact_id="miss", path="m").replace(b',"size_bytes":1', b""),  # 20 missing field
        ]
    )
    found = {(p.record, p.field): p.message for p in problems_of(data)}
    expected_fields = {
        ("line 2", ""): "invalid JSON",
        ("line 3", "artifact_id"): "not of type 'string'",
        ("line 4", "colour"): "Additional properties",
        ("line 5", "kind"): "'wiki' is not one of",
        ("line 6", "classification"): "'secret' is not one of",
        ("line 7", "source_digest"): "BLAKE3-256",
        ("line 8", "path"): "absolute",
        ("line 9", "path"): "'..' segment",
        ("line 10", "path"): "'.' segment",
        ("line 11", "path"): "empty segment",
        ("line 12", "path"): "backslash",
        ("line 13", "path"): "U+0000",
        ("line 14", "path"): "U+0007",
        ("line 15", "path"): "not valid UTF-8",
        ("line 17", "artifact_id"): "duplicate artifact_id 'dup' (first on line 16)",
        ("line 19", "path"): "duplicate path 'same' (first on line 18)",
        ("line 20", "size_bytes"): "required property",
    }
    for key, fragment in expected_fields.items():
        assert key in found, f"no problem reported for {key}; got {sorted(found)}"
        assert fragment in found[key], (key, found[key])
    assert all(p.file == "reg.jsonl" for p in problems_of(data))


def test_header_problems_are_reported_with_line_problems() -> None:
    data = b'{"schema":"other","artifact_count":-1}\n' + line(kind="wiki")
    found = {(p.record, p.field) for p in problems_of(data)}
    assert ("line 1 (header)", "schema") in found
    assert ("line 1 (header)", "artifact_count") in found
    assert ("line 1 (header)", "corpus_root") in found
    assert ("line 2", "kind") in found


def test_header_count_and_root_must_match_the_lines() -> None:
    good = registry_bytes(artifact("a", content=b"1"), artifact("b", content=b"2"))
    header, rest = good.split(b"\n", 1)
    truncated = header + b"\n" + rest.split(b"\n", 1)[0] + b"\n"
    found = {p.field: p.message for p in problems_of(truncated)}
    assert "declares 2 artifacts but the file lists 1" in found["artifact_count"]
    assert "but the listed artifacts give" in found["corpus_root"]


def test_header_problems_name_the_header_line_after_blank_lines() -> None:
    good = registry_bytes(artifact("a", content=b"1"), artifact("b", content=b"2"))
    header, rest = good.split(b"\n", 1)
    truncated = b"\n \n" + header + b"\n" + rest.split(b"\n", 1)[0] + b"\n"
    assert {(p.record, p.field) for p in problems_of(truncated)} == {
        ("line 3 (header)", "artifact_count"),
        ("line 3 (header)", "corpus_root"),
    }


def test_empty_file_and_blank_lines() -> None:
    assert "is empty" in problems_of(b"")[0].message
    data = registry_bytes(artifact("a"))
    header, rest = data.split(b"\n", 1)
    assert read_registry(header + b"\n\n" + rest + b"\n", "r").artifacts[0].artifact_id == "a"


def test_order_of_lines_does_not_matter() -> None:
    data = registry_bytes(artifact("a", content=b"1"), artifact("b", content=b"2"))
    header, first, second, _ = data.split(b"\n")
    swapped = read_registry(b"\n".join([header, second, first]) + b"\n", "r")
    canonical = build_registry(read_registry(data, "r").artifacts)
    assert swapped.header == canonical.header
    assert build_registry(swapped.artifacts) == canonical  # the same artifacts, in the file's order
    assert [a.artifact_id for a in swapped.artifacts] == ["b", "a"]
    assert not swapped.in_root_order


def outcome(data: bytes) -> object:
    try:
        return read_registry(data, "r")
    except InputError as exc:
        return exc.problems


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=6), min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_fast_and_line_by_line_reading_agree(contents: list[bytes], data: st.DataObject) -> None:
    """A registry laid out as eceb writes it is read in one call; any other goes
    line by line. Both must give the same registry, or the same problems."""
    import eceb_worker.corpus.lines as lines_module

    lines = registry_bytes(*(artifact(f"id{i}", content=c) for i, c in enumerate(contents))).split(b"\n")
    index = data.draw(st.integers(0, len(lines) - 1))
    mutation = data.draw(
        st.sampled_from(
            ["none", "drop", "duplicate", "swap", "truncate", "byte", "blank", "spaces", "upper", "escape", "reorder"]
        )
    )
    line = lines[index]
    if mutation == "drop":
        del lines[index]
    elif mutation == "duplicate":
        lines.insert(index, line)
    elif mutation == "swap" and index + 1 < len(lines):
        lines[index], lines[index + 1] = lines[index + 1], line
    elif mutation == "truncate":
        lines[index] = line[: data.draw(st.integers(0, max(0, len(line) - 1)))]
    elif mutation == "byte" and line:
        at = data.draw(st.integers(0, len(line) - 1))
        lines[index] = line[:at] + bytes([data.draw(st.integers(0, 255))]) + line[at + 1 :]
    elif mutation == "blank":
        lines.insert(index, b"")
    elif mutation == "spaces":
        lines[index] = b" " + line + b" "
    elif mutation == "upper":  # a digest in capitals: refused, whichever way the block is read
        lines[index] = line[:-3] + line[-3:-2].upper() + line[-2:] if line.endswith(b'"}') else line
    elif mutation == "escape":  # a digest ending with an escaped newline
        lines[index] = line[:-2] + b'\\n"}' if line.endswith(b'"}') else line
    elif mutation == "reorder" and line.startswith(b'{"artifact_id"'):  # valid, not canonical: counted, not compared
        key, _, rest = line[1:-1].partition(b',"classification"')
        lines[index] = b'{"classification"' + rest + b"," + key + b"}"
    mutated = b"\n".join(lines)
    fast = outcome(mutated)
    original = lines_module._decode_laid_out
    lines_module._decode_laid_out = lambda _data, _at, _count: None  # force the line-by-line path
    try:
        slow = outcome(mutated)
    finally:
        lines_module._decode_laid_out = original
    assert fast == slow


def test_no_line_is_dropped_silently() -> None:
    """Lines the lenient reader would accept but the decoder refuses still count as problems."""
    float_size = line(artifact_id="f", path="f.md", size_bytes=b"1.0")
    surrogate = line(artifact_id=b'"s\\ud800"', path="s.md")
    nested = b'{"artifact_id":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    found = {(p.record, p.message.split(":")[0]) for p in problems_of(HEADER + float_size + surrogate + nested)}
    assert {record for record, _ in found} >= {"line 2", "line 3", "line 4"}


def test_header_with_a_float_count_is_a_problem_not_a_crash() -> None:
    data = b'{"schema":"symgliph.eceb/registry-v0.1","artifact_count":0.0,"corpus_root":"' + D.encode() + b'"}\n'
    assert problems_of(data)[0].record == "line 1 (header)"
