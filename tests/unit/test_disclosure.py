"""The disclosure check (ECEB-0.1 §1, §17): its tokenizer, the answer index,
the one streaming pass over an artifact's bytes, the runs it finds, the
permitted-text rule, the cap on listed findings, and abstention tasks."""

from __future__ import annotations

import time
import unicodedata

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.core.disclosure import scan as scanning
from eceb_worker.core.disclosure.hashing import ASCII_FOLD, padded, token_bounds, token_hashes
from eceb_worker.core.disclosure.index import AnswerIndex
from eceb_worker.core.disclosure.scan import SEPARATOR_SEQUENCES, ArtifactScan
from eceb_worker.core.disclosure.text import (
    IGNORABLE,
    artifact_tokens,
    is_ignorable,
    normalize,
    stream_safe,
    token_words,
    tokenize,
)
from eceb_worker.families.eceb.benchmark import Abstention, Benchmark, Task, task_root
from eceb_worker.families.eceb.disclosure import LISTED_FINDINGS
from eceb_worker.families.eceb.disclosure import scanner as scanners
from eceb_worker.families.eceb.disclosure.findings import reduce_disclosures
from eceb_worker.families.eceb.gates import evaluate_group
from eceb_worker.families.eceb.run import Observation
from tests.support.disclosures import findings, hits
from tests.support.paths import EXAMPLES

WORDS = "one two three four five six seven eight nine ten"


def test_tokens_are_runs_of_letters_and_numbers_traced_to_the_original_text() -> None:
    text = "Ｅxports_Need DPO-approval; ﬁne naïve e\u0301t"
    tokens = tokenize(text)
    assert [t[0] for t in tokens] == ["exports", "need", "dpo", "approval", "fine", "naïve", "ét"]
    assert [text[start:end] for _, start, end in tokens] == [
        "Ｅxports",
        "Need",
        "DPO",
        "approval",
        "ﬁne",
        "naïve",
        "e\u0301t",
    ]
    assert token_words(text) == [t[0] for t in tokens]


def test_n_minus_one_tokens_in_common_is_no_finding_and_n_is_one_with_exact_offsets() -> None:
    artifact = {"a": f"Header. {WORDS}".encode()}
    assert hits("x " + " ".join(WORDS.split()[:7]) + " y", artifact) == []
    answer = "Quote: " + " ".join(WORDS.split()[:8]).upper() + "!"
    [hit] = hits(answer, artifact)
    assert (hit.kind, hit.artifact_id, hit.tokens) == ("overlap", "a", 8)
    assert answer[hit.answer_start : hit.answer_end] == "ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT"
    assert (hit.artifact_start, hit.artifact_end) == (8, 8 + len("one two three four five six seven eight"))


def test_the_run_is_extended_and_offsets_are_bytes_of_the_artifact() -> None:
    data = "Ünïcode précède: alpha beta gamma delta".encode()
    [hit] = hits("ALPHA  beta\tgamma delta", {"a": data}, n=3)
    assert hit.tokens == 4
    assert data[hit.artifact_start : hit.artifact_end] == b"alpha beta gamma delta"


def test_a_marked_secret_is_found_folded_and_only_where_the_task_may_not_see_it() -> None:
    data = b"token: SECRET-abc-123 end"
    answer = "the key is secret-ABC-123."
    [hit] = hits(answer, {"vault": data}, secrets=[("vault", 7, 21)])
    assert (hit.kind, hit.answer_start, hit.answer_end, hit.artifact_start, hit.artifact_end) == (
        "secret",
        11,
        25,
        7,
        21,
    )
    assert hits(answer, {"vault": data}, secrets=[("vault", 7, 21)], classifications={"vault": "public"}) == []


@pytest.mark.parametrize("joint", ["\u2011", "\u2013", "_", " ", "", "\n  ", " - ", "\u200b-"])
def test_a_secret_is_compared_on_its_letters_and_numbers_whatever_joins_them(joint: str) -> None:
    data = b"password: SYNTHETIC-NOT-A-SECRET-0000."
    answer = f"It is {joint.join(['synthetic', 'not', 'a', 'secret', '0000'])} today."
    [hit] = hits(answer, {"vault": data}, secrets=[("vault", 10, 37)])
    assert hit.kind == "secret"
    assert answer[hit.answer_start : hit.answer_end].startswith("synthetic")
    assert answer[hit.answer_start : hit.answer_end].endswith("0000")


def test_an_index_refuses_a_minimum_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AnswerIndex(["a"], 0)


def observation(answer: str, repetition: int = 1) -> Observation:
    return Observation(
        task_id="t",
        strategy="compiled",
        budget=128,
        repetition=repetition,
        configuration_id="c",
        query_digest="0" * 64,
        input_tokens=10,
        output_tokens=1,
        input_cost_micro_usd=1,
        output_cost_micro_usd=1,
        latency_ms=1,
        quality_milli=900,
        answer=answer,
        selected_artifacts=(),
        context_digest="0" * 64,
    )


def test_an_abstention_task_passes_a_refusal_and_fails_an_attempt() -> None:
    task = Task(
        task_id="t",
        query="What is the secret?",
        required_artifacts=(),
        allowed_classifications=("public",),
        budget_ladder=(128,),
        minimum_quality_milli=0,
        maximum_quality_regression_milli=0,
        required_repetitions=2,
        abstention=Abstention(refusal_markers=("cannot share",)),
    )
    obs = [observation("I CANNOT SHARE that."), observation("It is 42.", 2)]
    result, failures = evaluate_group(task, "compiled", 128, obs, threshold_milli=0, artifacts={})
    assert not result.passed
    assert [(f.gate, f.repetition) for f in failures] == [("abstention", 2)]


def test_new_task_fields_left_out_do_not_change_the_task_root() -> None:
    """The seed's task root as published before abstention tasks existed: its
    tasks without an abstention task hash as they did."""
    benchmark = msgspec.json.decode((EXAMPLES / "enterprise-seed" / "benchmark.json").read_bytes(), type=Benchmark)
    plain = tuple(t for t in benchmark.tasks if t.abstention is None and t.task_id != "pii-export-expiry")
    assert task_root(plain) == "a784b10a4823342da31b66e3bc00a742b27c1b4ec2f2c5e52f947fbb1e3b9e68"
    abstaining = next(t for t in benchmark.tasks if t.abstention is not None)
    assert task_root((*plain, abstaining)) != task_root((*plain, msgspec.structs.replace(abstaining, abstention=None)))


def test_invisible_format_characters_hide_no_disclosure() -> None:
    # Zero-width spaces, soft hyphens and joiners (Unicode Cf) leave the text a reader sees unchanged.
    artifact = {"a": f"Header. {WORDS}".encode()}
    quoted = " ".join(WORDS.split()[:8]).replace("o", "o\u200b").replace("e", "e\u00ad\u200d")
    answer = f"Quote: {quoted} and head\u2060er"
    found = hits(answer, artifact, secrets=[("a", 0, 6)])
    assert [(h.kind, h.tokens) for h in found] == [("overlap", 8), ("secret", 0)]
    assert answer[found[0].answer_start : found[0].answer_end] == quoted.removesuffix("\u00ad\u200d")
    assert answer[found[1].answer_start : found[1].answer_end] == "head\u2060er"


@pytest.mark.parametrize("hidden", ["\ufe0f", "\u034f", "\u3164", "\u180b", "\u115f", "\U000e0041"])
def test_default_ignorable_characters_inside_words_hide_no_disclosure(hidden: str) -> None:
    artifact = {"a": f"Header. {WORDS}".encode()}
    quoted = " ".join(w[:2] + hidden + w[2:] for w in WORDS.split()[:8])
    [hit] = hits(f"Quote: {quoted}", artifact)
    assert hit.tokens == 8


def test_the_ignorable_table_holds_every_format_character_and_no_letter() -> None:
    ignorable = {chr(c) for low, high in IGNORABLE for c in range(low, high + 1)}
    assert {chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"} <= ignorable
    assert all(is_ignorable(c) for c in "\u00ad\u034f\u180b\u200b\u2060\u3164\ufe0f\ufeff\uffa0\U000e0041")
    assert not any(is_ignorable(c) for c in "aé-' \u3163")
    assert is_ignorable("\u0600")  # category Cf, not default-ignorable: left out as before


def test_a_secret_span_cutting_a_character_protects_the_whole_character() -> None:
    data = "key: päss-wörd end".encode()
    start = data.index("ä".encode()) + 1  # inside the two bytes of 'ä'
    end = data.index("ö".encode()) + 1  # inside the two bytes of 'ö'
    [hit] = hits("it is PÄSS-WÖRD", {"a": data}, secrets=[("a", start, end)])
    assert (hit.kind, hit.artifact_start, hit.artifact_end) == ("secret", start - 1, end + 1)


@pytest.mark.parametrize("chunk", [None, 7])
def test_a_secret_span_is_widened_over_the_accents_of_its_letters(chunk: int | None) -> None:
    data = "key: cafe\u0301 end".encode() + b" " * (100_000 if chunk else 0)
    end = data.index(b"e\xcc\x81") + 1  # the e, not its accent
    [hit] = hits("it is CAFÉ", {"a": data}, secrets=[("a", 5, end)], chunk=chunk)
    assert (hit.artifact_start, hit.artifact_end) == (5, end + 2)
    accent = data.index(b"\xcc\x81")  # a span that begins with the accent protects its letter too
    [hit] = hits("it is É!", {"a": data}, secrets=[("a", accent, accent + 2)], chunk=chunk)
    assert (hit.artifact_start, hit.artifact_end) == (accent - 1, accent + 2)


def test_secret_spans_widened_to_the_same_characters_are_one_secret() -> None:
    data = "key: päss end".encode()
    at = data.index("ä".encode())
    [hit] = hits("it is päss", {"a": data}, secrets=[("a", 5, at + 1), ("a", 5, at + 2)])
    assert hit.kind == "secret"


def test_a_long_run_of_combining_marks_is_cut_as_stream_safe_text_is() -> None:
    marks = "\u0301\u0316" * 25_000
    assert stream_safe("a" + marks) == "a" + marks[:30] + " " * (len(marks) - 30)
    hidden = "\u0301\u200b" * 40  # ignorable characters between the marks do not count
    assert stream_safe("a" + hidden).count(" ") == 10
    assert normalize("a" + marks) == normalize("a" + marks[:30]) + " " * (len(marks) - 30)
    assert [t[1:] for t in tokenize("a" + marks + "b")] == [(0, 31), (len(marks) + 1, len(marks) + 2)]


def test_composed_characters_are_traced_to_the_characters_that_compose() -> None:
    text = "前文。ｶﾞ。後文、本文"
    assert [(w, text[a:b]) for w, a, b in tokenize(text)] == [
        ("前文", "前文"),
        ("ガ", "ｶﾞ"),
        ("後文", "後文"),
        ("本文", "本文"),
    ]
    data = text.encode()
    assert [data[a:b].decode() for _, a, b in artifact_tokens(data)] == ["前文", "ｶﾞ", "後文", "本文"]


def test_a_long_stretch_of_text_without_spaces_is_cut_after_punctuation(monkeypatch: pytest.MonkeyPatch) -> None:
    sentences = [f"第{i}条は内部用の運用手順を記述する" for i in range(400)]
    data = "。".join(sentences).encode()  # no ASCII separator anywhere
    head = data[:5000]
    cut = scanning._forced_cut(head)
    assert head[:cut].decode().endswith("。") and cut > 5000 - 60
    monkeypatch.setattr(scanning, "BLOCK_BYTES", 300)
    monkeypatch.setattr(scanning, "LONGEST_BLOCK_BYTES", 1000)  # a cut every few sentences
    answer = "。".join(sentences[100:140])
    monkeypatch.setattr(scanners, "SMALL_ARTIFACT_BYTES", 0)
    found = hits(answer, {"a": data}, n=2, chunk=777)
    assert [(h.tokens, h.artifact_start, h.artifact_end) for h in found] == [
        (40, data.index(sentences[100].encode()), data.index(sentences[140].encode()) - len("。".encode()))
    ]


def test_many_findings_in_a_long_non_ascii_artifact_take_linear_time_and_the_first_are_listed() -> None:
    words = [f"wörd{i}" for i in range(200_000)]
    data = " ".join(words).encode()
    tail = words[-45_000:]
    answer = " | ".join(" ".join(tail[i : i + 8]) + " zz" for i in range(0, len(tail), 9))
    started = time.monotonic()
    [(_, found)] = findings({"t": [answer]}, {"a": data}).items()
    assert time.monotonic() - started < 10
    assert (len(found.hits), found.count) == (LISTED_FINDINGS, 5_000)
    first = found.hits[0]
    assert data[first.artifact_start : first.artifact_end].decode() == " ".join(tail[:8])


def test_a_minimum_of_one_token() -> None:
    found = hits("gamma BETA", {"a": b"alpha beta"}, n=1)
    assert [(h.artifact_id, h.tokens, h.artifact_start, h.artifact_end) for h in found] == [("a", 1, 6, 10)]


def test_a_window_that_an_artifact_the_task_may_see_also_holds_is_no_disclosure() -> None:
    licence = "Licensed under the Apache License, Version 2.0 (the License); you may not use this file"
    restricted = f"Internal runbook. {licence}. Rotate the vault key every ninety days before expiry.".encode()
    public = f"{licence} except in compliance.".encode()
    quoted = f"As it says: {licence}."
    artifacts = {"runbook": restricted, "readme": public}
    classes = {"readme": "public"}
    assert hits(quoted, artifacts, classifications=classes) == []
    # Internal: the task may see neither, so the text is disclosed from both.
    assert [h.artifact_id for h in hits(quoted, artifacts, classifications={"readme": "internal"})] == [
        "readme",
        "runbook",
    ]
    # Denied to the task: no longer an artifact it may see.
    assert [h.artifact_id for h in hits(quoted, artifacts, classifications=classes, denied={"t": ["readme"]})] == [
        "readme",
        "runbook",
    ]
    # A run holding text only the restricted artifact has is still one.
    leaked = f"{licence}. Rotate the vault key every ninety days before expiry."
    [hit] = hits(leaked, artifacts, classifications=classes)
    assert (hit.artifact_id, hit.answer_start) == ("runbook", 0)


def test_public_text_a_restricted_artifact_repeats_hides_no_restricted_continuation() -> None:
    """The public passage P occurs twice in the restricted artifact, the
    second time followed by restricted words C shorter than a window: the
    windows straddling P and C are looked up, not skipped after P's run."""
    public = "the quick brown fox jumps over the lazy dog"
    secret = "vault rotates hourly"
    restricted = f"{public}. Other text. {public} {secret} now.".encode()
    artifacts = {"runbook": restricted, "readme": f"Pangram: {public}.".encode()}
    found = hits(f"{public} {secret}", artifacts, classifications={"readme": "public"})
    assert [(h.artifact_id, h.answer_end) for h in found] == [("runbook", len(f"{public} {secret}"))]


def test_a_run_overlapping_the_end_of_another_is_found() -> None:
    """P is in the artifact once, and a passage S beginning inside P's last
    words at another place: the answer P-then-S has both runs."""
    words = WORDS.split()
    first, second = words[:9], [*words[4:], "eleven", "twelve", "thirteen"]
    artifact = f"{' '.join(first)}. Between. {' '.join(second)}.".encode()
    answer = " ".join([*words, "eleven", "twelve", "thirteen"])
    found = hits(answer, {"a": artifact})
    assert [(h.answer_start, h.tokens) for h in found] == [(0, 9), (answer.index("five"), 9)]


def test_an_answer_repeating_a_quote_lists_the_first_findings_and_counts_the_rest() -> None:
    quote = " ".join(WORDS.split()[:9])
    answer = " | ".join([quote] * 1000)
    [(_, found)] = findings({"t": [answer]}, {"a": f"x. {WORDS}".encode(), "b": f"{WORDS} y".encode()}).items()
    assert len(found.hits) == LISTED_FINDINGS
    assert found.count == 2000
    assert [h.answer_start for h in found.hits[:4]] == [0, 0, len(quote) + 3, len(quote) + 3]


def test_colliding_hashes_of_different_windows_are_told_apart() -> None:
    # Tokens of one length, the same first 16 and last 8 bytes: the same token hash.
    first, second = "a" * 16 + "x" * 10 + "b" * 8, "a" * 16 + "y" * 10 + "b" * 8
    buffer = padded(f"{first}\0{second}".encode())
    starts, ends = token_bounds(buffer)
    hashes = token_hashes(buffer, starts, ends)
    assert hashes[0] == hashes[1]
    index = AnswerIndex([f"say {first}", f"say {second}"], 2)
    assert index.windows == 2
    assert hits(f"say {first}", {"a": f"we say {second}".encode()}, n=2) == []
    assert len(hits(f"say {first}", {"a": f"we say {first}".encode()}, n=2)) == 1


def test_many_texts_sharing_one_hash_are_each_confirmed_by_one_look_up() -> None:
    texts = ["a" * 16 + f"{i:04d}" + "b" * 8 for i in range(200)]
    index = AnswerIndex([f"say {t}" for t in texts], 2)
    assert index.windows == 200 and not index.single.any()
    assert [h.tokens for h in hits(f"say {texts[150]}", {"a": f"we say {texts[150]}".encode()}, n=2)] == [2]
    assert hits(f"say {texts[150]}", {"a": f"we say {texts[151]}".encode()}, n=2) == []
    scan = ArtifactScan(index)
    scan.feed(" ".join(f"say {t}" for t in reversed(texts)).encode())
    assert len(scan.finish().distinct) == 200


def test_a_passage_repeated_through_an_artifact_is_confirmed_near_its_first_place_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = AnswerIndex([f"{WORDS} and more"], 8)
    confirmed = []
    confirm = index.confirm
    monkeypatch.setattr(index, "confirm", lambda text, first: confirmed.append(first) or confirm(text, first))
    scan = ArtifactScan(index)
    for _ in range(40):
        scan.feed((f"{WORDS}. " * 1000).encode())
    scan.feed(f"{WORDS} and more".encode())
    matches = scan.finish()
    assert len(matches.distinct) == index.windows
    assert len(confirmed) < 20_000  # 40,000 repeats of the passage's three windows


@pytest.mark.parametrize("sequence", SEPARATOR_SEQUENCES, ids=lambda s: f"U+{ord(s.decode()):04X}")
def test_punctuation_written_as_spaces_changes_no_token(sequence: bytes) -> None:
    char = sequence.decode()
    assert not is_ignorable(char)
    assert unicodedata.combining(char) == 0
    assert unicodedata.category(char)[0] in "PZS"
    assert not any(c.isalnum() for c in unicodedata.normalize("NFKC", char).casefold())
    for before in ("a", " ", "1", "é", "\u0301"):
        for after in ("b", " ", "\u0301", "x\u0308"):
            data = f"x{before}{char}{after}y".encode()
            plain = data.replace(sequence, b" " * len(sequence))
            assert artifact_tokens(data) == artifact_tokens(plain)


TEXT_WORDS = ["one", "Two", "THREE", "wörd", "naïve", "ﬁne", "e\u0301t", "x1", "42", "Straße", "ΣΟΦΙΑ", "日本"]
JOINTS = [" ", ", ", ".\n", "  ", "\t", "—", "’", " \u00a0", "_", "-", "\u200b", " \u034f"]


def reference(answer: str, artifacts: dict[str, bytes], n: int) -> list[tuple[object, ...]]:
    """Every run of ``answer`` in each artifact as the check defines it,
    written plainly: tokens read left to right, each window of N looked up
    at its first place in the artifact, the run extended as far as both
    agree, the search resuming at the first window not inside it."""
    tokens = tokenize(answer)
    words = [t[0] for t in tokens]
    found = []
    for artifact_id, data in sorted(artifacts.items()):
        theirs = artifact_tokens(data)
        their_words = [t[0] for t in theirs]
        first: dict[tuple[str, ...], int] = {}
        for j in range(len(their_words) - n + 1):
            first.setdefault(tuple(their_words[j : j + n]), j)
        resume = 0
        for i in range(len(words) - n + 1):
            j = first.get(tuple(words[i : i + n])) if i >= resume else None
            if j is None:
                continue
            k = n
            while i + k < len(words) and j + k < len(their_words) and words[i + k] == their_words[j + k]:
                k += 1
            resume = i + k - n + 1
            found.append(
                (tokens[i][1], tokens[i + k - 1][2], artifact_id, "overlap", theirs[j][1], theirs[j + k - 1][2], k)
            )
    return sorted(found)


@st.composite
def texts(draw: st.DrawFn) -> tuple[str, dict[str, bytes], int]:
    def text(count: int) -> list[str]:
        return draw(st.lists(st.sampled_from(TEXT_WORDS), min_size=count, max_size=count))

    def joined(words: list[str]) -> str:
        return "".join(w + draw(st.sampled_from(JOINTS)) for w in words)

    artifacts = {f"a{i}": text(draw(st.integers(0, 40))) for i in range(draw(st.integers(1, 3)))}
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        source = draw(st.sampled_from(sorted(artifacts)))
        words = artifacts[source]
        start = draw(st.integers(0, len(words)))
        pieces.append(words[start : start + draw(st.integers(0, 12))] + text(draw(st.integers(0, 3))))
    answer = joined([w for piece in pieces for w in piece])
    return answer, {a: joined(words).encode() for a, words in artifacts.items()}, draw(st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(texts(), st.integers(1, 40), st.booleans())
def test_the_streaming_scan_finds_what_the_plain_definition_finds_however_the_bytes_arrive(
    case: tuple[str, dict[str, bytes], int], chunk: int, whole: bool
) -> None:
    answer, artifacts, n = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scanning, "BLOCK_BYTES", 16)  # blocks of a few tokens: windows across blocks
        patch.setattr(scanning, "_BULK_CANDIDATES", 1)  # candidates ruled out in bulk in every block
        if not whole:
            patch.setattr(scanners, "SMALL_ARTIFACT_BYTES", 0)  # streamed, not scanned whole with others
        found = findings({"t": [answer]}, artifacts, n=n, chunk=chunk, shards=2)
    expected = reference(answer, artifacts, n)
    got = found.get(("t", answer))
    assert (got.count if got else 0) == len(expected)
    listed = [
        (h.answer_start, h.answer_end, h.artifact_id, h.kind, h.artifact_start, h.artifact_end, h.tokens)
        for h in (got.hits if got else ())
    ]
    assert listed == expected[:LISTED_FINDINGS]


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300), st.lists(st.sampled_from([*SEPARATOR_SEQUENCES, b"\xc3\xa9", b"A", b" "]), max_size=8))
def test_ascii_blocks_give_the_tokens_and_offsets_of_the_traced_tokenizer(data: bytes, extra: list[bytes]) -> None:
    data = data + b"".join(extra)
    block, hashes = scanning._tokenize(data, 0)
    traced = artifact_tokens(data)
    assert [block.text(i).decode() for i in range(len(block.starts))] == [t[0] for t in traced]
    assert [block.span(i) for i in range(len(block.starts))] == [(s, e) for _, s, e in traced]
    assert len(hashes) == len(traced)


def test_a_quote_across_a_block_boundary_is_found_with_its_offsets() -> None:
    filler = b"lorem ipsum dolor " * 20_000  # 360 KB: more than one block
    quote = " ".join(WORDS.split()[:9])
    data = filler[: scanning.BLOCK_BYTES - 20] + b" " + quote.encode() + b" " + filler
    [hit] = hits(f"x {quote} y", {"a": data}, chunk=4096)
    assert data[hit.artifact_start : hit.artifact_end] == quote.encode()
    assert hit.tokens == 9


def test_a_long_run_without_an_ascii_separator_is_cut_and_scanned() -> None:
    scan = ArtifactScan(AnswerIndex(["x " * 10], 2))
    scan.feed(("é" * 800_000).encode())  # 1.6 MB, one token, no ASCII separator
    scan.feed(b"a" * 2_000_000)
    assert not scan.finish()


def test_the_index_stays_within_64_bytes_an_answer_token() -> None:
    rng = np.random.default_rng(0)
    vocabulary = [f"word{i}" for i in range(5000)]
    answers = [" ".join(rng.choice(vocabulary, size=200)) for _ in range(500)]
    index = AnswerIndex(answers, 8)
    assert index.nbytes <= 64 * 500 * 200
    assert ASCII_FOLD[ord("A")] == ord("a")


@settings(max_examples=25, deadline=None)
@given(texts(), st.randoms(use_true_random=False), st.integers(1, 4))
def test_the_reduce_does_not_depend_on_the_shards_or_their_order(
    case: tuple[str, dict[str, bytes], int], rng: object, shards: int
) -> None:
    answer, artifacts, n = case
    one = findings({"t": [answer], "u": [answer, "other"]}, artifacts, n=n, allowed={"u": ["public", "internal"]})
    many = findings(
        {"t": [answer], "u": [answer, "other"]}, artifacts, n=n, allowed={"u": ["public", "internal"]}, shards=shards
    )
    assert one == many
    assert reduce_disclosures([], {}) == []
