"""The pure parts of a registration on a cluster
(:mod:`eceb_worker.corpus.registration`): listing plans cover every key
once, rows and registry lines sorted bytewise are in corpus-root order,
hash plans cover every row once (the last shards smaller), the bounded
problems of shards reduce to what ``eceb corpus register`` lists, and the
merge of partial registries is the registry ``build_registry`` makes.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.paths import path_problems
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.corpus_root import canonical_record
from eceb_worker.corpus.registration import (
    FILE_COST_BYTES,
    LISTED_GROUPS,
    LISTED_PROBLEMS,
    ListedRow,
    ListingPlanner,
    ListingTally,
    PathProblem,
    PieceCutter,
    RootOfLines,
    TallyBuilder,
    encode_rows,
    first_problems,
    header_line,
    listing_problems,
    listing_shards,
    merge_tallies,
    merged_lines,
    plan_hashing,
    thinned,
)
from eceb_worker.corpus.registry import build_registry, registry_lines
from eceb_worker.corpus.rules import classify_all, group_unclassified, parse_rules
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.errors import Problem

SEGMENT = st.text(alphabet=st.sampled_from([*'ab !"#+%-./é日🙂', " "]), min_size=1, max_size=4).filter(
    lambda s: "/" not in s and s not in (".", "..")
)
PATHS = st.lists(st.lists(SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=40, unique=True).map(
    lambda paths: [p for p in paths if not path_problems(p)]
)


def _covering(keys: list[str], boundaries: list[str]) -> list[list[str]]:
    """The keys each listing shard cut at ``boundaries`` lists."""
    return [
        [k for k in sorted(keys) if (not s.after or k > s.after) and (not s.until or k <= s.until)]
        for s in listing_shards(boundaries)
    ]


@given(st.lists(st.text(min_size=1), max_size=30), st.lists(st.text(min_size=1), max_size=10))
def test_listing_shards_list_every_key_once_in_key_order(keys: list[str], boundaries: list[str]) -> None:
    shards = _covering(keys, boundaries)
    assert [k for shard in shards for k in shard] == sorted(keys)
    assert [s.index for s in listing_shards(boundaries)] == list(range(len(set(boundaries)) + 1))


def test_thinned_keeps_at_most_the_limit_evenly() -> None:
    cuts = [f"k{i:04d}" for i in range(1000)]
    kept = thinned(cuts, 10)
    assert len(kept) == 10
    assert kept == sorted(kept) and set(kept) <= set(cuts)
    assert thinned(cuts[:5], 10) == cuts[:5]


def test_the_planner_descends_until_it_has_enough_cut_points_or_levels() -> None:
    planner = ListingPlanner(target=4, depth=2, limit=100)
    planner.take(["p/a/", "p/b/"], [])
    assert planner.descend() == ["p/a/", "p/b/"]
    planner.take(["p/a/1/"], [])
    planner.take(["p/b/1/", "p/b/2/"], ["p/b/zz"])
    assert planner.descend() == []  # six cut points: enough
    assert [s.until for s in planner.shards()] == ["p/a/", "p/a/1/", "p/b/", "p/b/1/", "p/b/2/", "p/b/zz", ""]
    deep = ListingPlanner(target=100, depth=1)
    deep.take(["x/"], [])
    assert deep.descend() == ["x/"]
    deep.take(["x/y/"], [])
    assert deep.descend() == []  # one level below the prefix at most
    capped = ListingPlanner(limit=7)
    capped.take([f"p/{i:03d}/" for i in range(500)], [])
    assert len(capped.shards()) == 8


@given(PATHS)
def test_rows_and_registry_lines_sorted_bytewise_are_in_corpus_root_order(paths: list[str]) -> None:
    artifacts = [
        Artifact(
            artifact_id=p, path=p, kind="code", classification="internal", source_digest="0" * 64, size_bytes=len(p)
        )
        for p in paths
    ]
    in_root_order = [a.path for a in sorted(artifacts, key=canonical_record)]
    rows = [ListedRow(path=p, size_bytes=1, kind="code", classification="public", etag='"e"') for p in paths]
    lines = sorted(zip(encode_rows(rows), paths, strict=True))
    assert [p for _, p in lines] == in_root_order
    registry = [path for _, path in sorted((canonical_json(a), a.path) for a in artifacts)]
    assert registry == in_root_order
    assert [a.path for a in build_registry(artifacts).artifacts] == in_root_order


def test_a_space_sorts_before_the_end_of_a_path() -> None:
    rows = [ListedRow(path=p, size_bytes=0, kind="code", classification="public") for p in ("a", "a b", "a!", "a/b")]
    assert [line.split(b'"')[3] for line in sorted(encode_rows(rows))] == [b"a b", b"a!", b"a", b"a/b"]


def _pieces(sizes: list[int], piece_bytes: int) -> list[tuple[str, list[int]]]:
    cutter = PieceCutter(piece_bytes)
    for index, size in enumerate(sizes):
        cutter.add(f"f{index}", size, 10)
    return [("partial", cutter.finish())]  # type: ignore[list-item]


@given(
    st.lists(st.lists(st.integers(0, 10**9), max_size=40), min_size=1, max_size=5),
    st.integers(1, 2 * 10**9),
)
def test_the_hash_plan_covers_every_row_once_never_across_partials(sizes: list[list[int]], shard_bytes: int) -> None:
    listings = []
    for number, partial_sizes in enumerate(sizes):
        cutter = PieceCutter(max(1, shard_bytes // 8))
        for index, size in enumerate(partial_sizes):
            cutter.add(f"{number}/{index}", size, 7)
        listings.append((f"partial-{number}", cutter.finish()))
    plan = plan_hashing(listings, shard_bytes)
    assert [shard.index for shard in plan] == list(range(len(plan)))
    for number, partial_sizes in enumerate(sizes):
        mine = [shard for shard in plan if shard.listing == number]
        assert all(shard.partial == f"partial-{number}" for shard in mine)
        assert sum(shard.count for shard in mine) == len(partial_sizes)
        assert sum(shard.size_bytes for shard in mine) == sum(partial_sizes)
        ends = [0, *(shard.byte_end for shard in mine)]
        assert [shard.byte_start for shard in mine] == ends[:-1]
        assert ends[-1] == 7 * len(partial_sizes)


def test_the_last_hash_shards_are_smaller() -> None:
    cutter = PieceCutter(64)
    for index in range(4000):
        cutter.add(f"f{index:05d}", 512 - FILE_COST_BYTES if FILE_COST_BYTES < 512 else 0, 10)
    plan = plan_hashing([("p", cutter.finish())], 100 * FILE_COST_BYTES)
    counts = [shard.count for shard in plan]
    assert counts[0] == max(counts)
    assert counts[-1] < counts[0] // 4
    assert counts == sorted(counts, reverse=True)


RULES = parse_rules(
    b'schema = "symgliph.eceb/rules-v0.1"\n'
    b'[[rule]]\nglob = "docs/**"\nkind = "runbook"\n'
    b'[[rule]]\nglob = "**/*.md"\nclassification = "internal"\n',
    "rules.toml",
)


def _tallied(paths: list[str], shards: int, seed: int) -> ListingTally:
    """The tally of ``paths`` (in key order) listed by ``shards`` shards cut at random."""
    ordered = sorted(paths)
    cuts = sorted(random.Random(seed).sample(range(len(ordered) + 1), min(shards, len(ordered) + 1)))
    tallies = []
    for start, end in zip([0, *cuts], [*cuts, len(ordered)], strict=True):
        builder = TallyBuilder("s3://b/corpus", "rules.toml")
        entries = builder.candidates([ListedEntry(path=p, size_bytes=1) for p in ordered[start:end]])
        _, problems = classify_all(RULES, [e.path for e in entries], rules_name="rules.toml")
        builder.unclassified(problems)
        tallies.append(builder.tally())
    return merge_tallies(tallies)


def _expected(paths: list[str]) -> list[Problem]:
    """What ``eceb corpus register`` lists for ``paths``."""
    problems: list[Problem] = []
    candidates = []
    for path in sorted(paths):
        reasons = path_problems(path)
        problems += [Problem(file="s3://b/corpus", record=path, field="path", message=r) for r in reasons]
        if not reasons:
            candidates.append(path)
    _, unclassified = classify_all(RULES, candidates, rules_name="rules.toml")
    return group_unclassified([*problems, *unclassified], "rules.toml")


LISTED = st.lists(
    st.tuples(
        st.sampled_from(["", "docs/", "docs/deep/", "src/", "bad//", "./"]),
        st.lists(SEGMENT, min_size=1, max_size=2).map("/".join),
        st.sampled_from(["", ".md"]),
    ).map("".join),
    max_size=60,
    unique=True,
)
"""Listed paths: some classified, some lacking a kind, a classification or both, some not portable."""


@given(LISTED, st.integers(1, 8), st.integers(0, 1000))
def test_shards_tallies_reduce_to_what_eceb_corpus_register_lists(paths: list[str], shards: int, seed: int) -> None:
    tally = _tallied(paths, shards, seed)
    assert listing_problems(tally, rules_name="rules.toml", location="s3://b/corpus") == _expected(paths)


def test_past_the_bounds_the_rest_is_counted() -> None:
    paths = [f"d{index:04d}/x.txt" for index in range(LISTED_GROUPS + 40)] + [
        f"bad//{index}.md" for index in range(LISTED_PROBLEMS + 5)
    ]
    tally = _tallied(paths, 7, 3)
    problems = listing_problems(tally, rules_name="rules.toml", location="s3://b/corpus")
    expected = _expected(paths)
    named = LISTED_PROBLEMS + 2 * LISTED_GROUPS
    grouped = expected[LISTED_PROBLEMS + 5 :]
    assert problems[:LISTED_PROBLEMS] == expected[:LISTED_PROBLEMS]
    assert problems[LISTED_PROBLEMS].message == "and 5 more problems of paths like these"
    assert problems[LISTED_PROBLEMS + 1 : named + 1] == grouped[: 2 * LISTED_GROUPS]
    assert problems[-1].message == "and 40 more files no rule classifies, under further directories"


def test_the_first_problems_of_shards_are_the_first_of_all() -> None:
    items = [PathProblem(path=f"p{index:03d}", problem=Problem(file="f", message=str(index))) for index in range(300)]
    random.Random(1).shuffle(items)
    answered = [sorted(items[start : start + 50], key=lambda item: item.path)[:LISTED_PROBLEMS] for start in (0, 50)]
    answered += [sorted(items[100:], key=lambda item: item.path)[:LISTED_PROBLEMS]]
    assert first_problems(answered) == sorted(items, key=lambda item: item.path)[:LISTED_PROBLEMS]


@given(PATHS, st.integers(1, 6), st.integers(0, 1000))
def test_merged_partial_registries_are_the_registry(paths: list[str], runs: int, seed: int) -> None:
    artifacts = [
        Artifact(
            artifact_id=p,
            path=p,
            kind="code",
            classification="public",
            source_digest=f"{index:064x}",
            size_bytes=index,
        )
        for index, p in enumerate(paths)
    ]
    registry = build_registry(artifacts)
    lines = list(registry_lines(registry))
    rng = random.Random(seed)
    parts: list[list[bytes]] = [[] for _ in range(runs)]
    for line in lines[1:]:
        parts[rng.randrange(runs)].append(line)
    root = RootOfLines()
    body = b"".join(root.blocks(merged_lines(parts)))
    assert header_line(root.count, root.corpus_root) + body == b"".join(lines)
    assert root.size_bytes == sum(a.size_bytes for a in artifacts)
    assert len(header_line(root.count, "0" * 64)) == len(lines[0])


def test_partials_that_overlap_or_are_damaged_make_no_registry() -> None:
    line = b'{"artifact_id":"a","classification":"public","kind":"code","path":"a","size_bytes":1,"source_digest":"'
    line += b"0" * 64 + b'"}\n'
    with pytest.raises(ValueError, match="overlap"):
        list(merged_lines([[line], [line]]))
    with pytest.raises(ValueError, match="not an artifact"):
        RootOfLines().feed(b'{"path":"a"}\n')
    with pytest.raises(ValueError, match="canonical"):
        RootOfLines().feed(line.replace(b'"kind":"code"', b'"kind": "code"'))
