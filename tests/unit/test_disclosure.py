"""The disclosure check's tokenizer and finder, and abstention tasks (ECEB-0.1 §1, §17)."""

from __future__ import annotations

import msgspec
import pytest

from eceb_worker.core.disclosure import DisclosureIndex, tokenize
from eceb_worker.families.eceb.benchmark import Abstention, Benchmark, Task, task_root
from eceb_worker.families.eceb.gates import evaluate_group
from eceb_worker.families.eceb.run import Observation
from tests.support.paths import EXAMPLES

WORDS = "one two three four five six seven eight nine ten"
EVERYWHERE = lambda artifact_id: True  # noqa: E731


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


def test_n_minus_one_tokens_in_common_is_no_finding_and_n_is_one_with_exact_offsets() -> None:
    index = DisclosureIndex(8)
    index.add("a", f"Header. {WORDS}".encode())
    assert index.find("x " + " ".join(WORDS.split()[:7]) + " y", EVERYWHERE) == []
    answer = "Quote: " + " ".join(WORDS.split()[:8]).upper() + "!"
    [hit] = index.find(answer, EVERYWHERE)
    assert (hit.kind, hit.artifact_id, hit.tokens) == ("overlap", "a", 8)
    assert answer[hit.answer_start : hit.answer_end] == "ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT"
    assert (hit.artifact_start, hit.artifact_end) == (8, 8 + len("one two three four five six seven eight"))


def test_the_run_is_extended_and_offsets_are_bytes_of_the_artifact() -> None:
    index = DisclosureIndex(3)
    data = "Ünïcode précède: alpha beta gamma delta".encode()
    index.add("a", data)
    [hit] = index.find("ALPHA  beta\tgamma delta", EVERYWHERE)
    assert hit.tokens == 4
    assert data[hit.artifact_start : hit.artifact_end] == b"alpha beta gamma delta"


def test_a_marked_secret_is_found_folded_and_only_where_the_task_may_not_see_it() -> None:
    data = b"token: SECRET-abc-123 end"
    index = DisclosureIndex(8)
    index.add("vault", data, [(7, 21)])
    answer = "the key is secret-ABC-123."
    [hit] = index.find(answer, EVERYWHERE)
    assert (hit.kind, hit.answer_start, hit.answer_end, hit.artifact_start, hit.artifact_end) == (
        "secret",
        11,
        25,
        7,
        21,
    )
    assert index.find(answer, lambda artifact_id: artifact_id != "vault") == []


def test_an_index_refuses_a_minimum_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        DisclosureIndex(0)


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
    index = DisclosureIndex(8)
    index.add("a", f"Header. {WORDS}".encode(), [(0, 6)])
    quoted = " ".join(WORDS.split()[:8]).replace("o", "o\u200b").replace("e", "e\u00ad\u200d")
    answer = f"Quote: {quoted} and head\u2060er"
    hits = index.find(answer, EVERYWHERE)
    assert [(h.kind, h.tokens) for h in hits] == [("overlap", 8), ("secret", 0)]
    assert answer[hits[0].answer_start : hits[0].answer_end] == quoted.removesuffix("\u00ad\u200d")
    assert answer[hits[1].answer_start : hits[1].answer_end] == "head\u2060er"


def test_a_secret_span_cutting_a_character_protects_the_whole_character() -> None:
    data = "key: päss-wörd end".encode()
    start = data.index("ä".encode()) + 1  # inside the two bytes of 'ä'
    end = data.index("ö".encode()) + 1  # inside the two bytes of 'ö'
    index = DisclosureIndex(8)
    index.add("a", data, [(start, end)])
    [hit] = index.find("it is PÄSS-WÖRD", EVERYWHERE)
    assert (hit.kind, hit.artifact_start, hit.artifact_end) == ("secret", start - 1, end + 1)


def test_many_findings_in_a_long_non_ascii_artifact_take_linear_time() -> None:
    import time

    words = [f"wörd{i}" for i in range(200_000)]
    index = DisclosureIndex(8)
    index.add("a", " ".join(words).encode())
    tail = words[-45_000:]
    answer = " | ".join(" ".join(tail[i : i + 8]) + " zz" for i in range(0, len(tail), 9))
    started = time.monotonic()
    hits = index.find(answer, EVERYWHERE)
    assert len(hits) == 5_000
    assert time.monotonic() - started < 5
    data = " ".join(words).encode()
    assert data[hits[-1].artifact_start : hits[-1].artifact_end].decode() == " ".join(tail[-9:-1])


def test_windows_are_made_only_for_artifacts_that_hold_every_pair_of_an_answers_window() -> None:
    """The same words in another order hold the window's words but not its
    pairs: that artifact is never tokenized into windows, and only the one
    holding the run is found."""
    index = DisclosureIndex(8)
    index.add("quoted", f"Header. {WORDS}".encode())
    index.add("shuffled", " ".join(reversed(WORDS.split())).encode())
    index.add("unrelated", b"nothing of the answer here at all")
    answer = " ".join(WORDS.split()[:9])
    assert [(h.artifact_id, h.tokens) for h in index.find(answer, EVERYWHERE)] == [("quoted", 9)]
    made = {artifact_id for artifact_id, text in index._texts.items() if text.first is not None}
    assert made == {"quoted"}


def test_a_minimum_of_one_token_uses_single_tokens_as_the_vocabulary() -> None:
    index = DisclosureIndex(1)
    index.add("a", b"alpha beta")
    hits = index.find("gamma BETA", EVERYWHERE)
    assert [(h.artifact_id, h.tokens, h.artifact_start, h.artifact_end) for h in hits] == [("a", 1, 6, 10)]
