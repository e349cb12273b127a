"""The composition of a task's full permitted-context baseline (ECEB-0.1
§7): what its first repetition selected against every artifact the task
permits, the required artifacts among them and those not permitted; the
same figures whether the evaluation holds the whole registry or only the
artifacts it looks up with the registry's totals; shown in every
rendering of the report."""

from __future__ import annotations

import json

import msgspec
import pytest

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.composition import (
    RegistryArtifacts,
    RegistryTally,
    RegistryTotals,
    baseline_composition,
    registry_totals,
)
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.report import Report, ReportInputs, encode_report, reduce_report, report_problems
from eceb_worker.families.eceb.run import Observation
from eceb_worker.families.eceb.tasks import TaskEvidence, evaluate_task
from eceb_worker.families.eceb.verdicts import BaselineComposition, TaskResult
from eceb_worker.pipeline.reports import decode_report
from eceb_worker.render.html import report_html
from eceb_worker.render.text import composition_text, report_lines
from tests.support.evaluation_builders import ARTIFACTS, baseline, configuration, obs, reps, task
from tests.support.helpers import artifact

ROOT = "f" * 64

# The builders' registry: "req" (internal, 8 bytes), "extra" (public, 5),
# "secret" (restricted, 6), "denied" (internal, 6). The task allows public
# and internal and denies "denied": it permits "req" and "extra", 13 bytes.
PADDING = {
    a.artifact_id: a
    for a in (artifact(f"rfc-{i:02d}", classification="public", content=b"x" * (100 + i)) for i in range(40))
}
PADDED_REGISTRY = {**ARTIFACTS, **PADDING}
PADDING_BYTES = sum(a.size_bytes for a in PADDING.values())


def composition(
    observations: list[Observation], artifacts: dict[str, Artifact] | None = None, **task_fields: object
) -> BaselineComposition:
    registry = ARTIFACTS if artifacts is None else artifacts
    return baseline_composition(task(**task_fields), observations, registry, registry_totals(registry))


def evaluated(observations: list[Observation], artifacts: dict[str, Artifact]) -> TaskResult:
    return evaluate_task(
        task(),
        TaskEvidence(observations=tuple(observations)),
        artifacts=artifacts,
        configurations={"c": configuration()},
    )


def test_a_baseline_of_everything_permitted() -> None:
    assert composition(baseline()) == BaselineComposition(
        permitted_artifacts=2,
        permitted_bytes=13,
        required_artifacts=1,
        required_bytes=8,
        repetition=1,
        repetitions_differ=False,
        selected_artifacts=2,
        selected_bytes=13,
        selected_required=1,
        selected_required_bytes=8,
        selected_not_permitted=0,
        permitted_bytes_selected_bps=10_000,
        required_bytes_share_bps=6_153,  # floor(10,000 x 8 / 13)
    )


def test_a_padded_baseline_holds_few_required_bytes() -> None:
    """The issue's baseline: 40 unrelated permitted artifacts added. All of
    them are permitted (no policy violation), so only the composition shows it."""
    padded = composition(baseline(selected=("req", "extra", *PADDING)), PADDED_REGISTRY)
    assert padded.permitted_artifacts == 42 and padded.permitted_bytes == 13 + PADDING_BYTES
    assert padded.selected_artifacts == 42 and padded.selected_required == 1
    assert padded.selected_bytes == 13 + PADDING_BYTES and padded.selected_not_permitted == 0
    assert padded.required_bytes_share_bps == 10_000 * 8 // (13 + PADDING_BYTES) == 16
    assert padded.permitted_bytes_selected_bps == 10_000


def test_a_thin_baseline_selects_few_of_the_permitted() -> None:
    thin = composition(baseline(selected=("req",)), PADDED_REGISTRY)
    assert (thin.selected_artifacts, thin.permitted_artifacts) == (1, 42)
    assert thin.permitted_bytes_selected_bps == 10_000 * 8 // (13 + PADDING_BYTES) == 16
    assert thin.required_bytes_share_bps == 10_000


def test_selected_artifacts_the_task_does_not_permit_are_counted() -> None:
    found = composition(baseline(selected=("req", "secret", "denied", "ghost", "req")))
    assert found.selected_artifacts == 4  # "req" listed twice counts once
    assert found.selected_not_permitted == 3  # a classification not allowed, denied, unknown
    assert found.selected_bytes == 8 + 6 + 6  # the unknown artifact has no bytes
    assert found.permitted_bytes_selected_bps == 10_000 * 8 // 13
    assert found.required_bytes_share_bps == 10_000 * 8 // 20


def test_a_denied_artifact_of_an_allowed_classification_is_not_permitted() -> None:
    assert composition(baseline(), denied_artifacts=()).permitted_artifacts == 3
    assert composition(baseline(), denied_artifacts=()).permitted_bytes == 19
    assert composition(baseline(), denied_artifacts=("extra", "secret")).permitted_bytes == 14  # req + denied
    assert composition(baseline(), allowed_classifications=("restricted",)).permitted_artifacts == 1


def test_the_first_repetition_is_described_and_differing_ones_said() -> None:
    records = [
        *baseline(1, selected=("req", "extra")),
        obs("full_permitted_context", None, 2, tokens=1000, selected=("req",), context="full"),
    ]
    found = composition(list(reversed(records)))  # record order never matters
    assert found.repetition == 1 and found.selected_artifacts == 2 and found.repetitions_differ
    same = composition([*baseline(3)])
    assert same.repetition == 1 and not same.repetitions_differ
    digests_aside = composition(
        [*baseline(1), *baseline(2, digests={"extra": "0" * 64})[1:]]  # the same ids, another digest
    )
    assert not digests_aside.repetitions_differ


def test_without_a_baseline_nothing_is_selected() -> None:
    found = composition([])
    assert found.repetition is None and not found.repetitions_differ
    assert (found.selected_artifacts, found.selected_bytes, found.selected_required) == (0, 0, 0)
    assert found.permitted_artifacts == 2 and found.required_bytes == 8
    assert found.permitted_bytes_selected_bps == 0 and found.required_bytes_share_bps is None


def test_nothing_permitted_has_no_share() -> None:
    found = composition(baseline(selected=("secret",)), allowed_classifications=("confidential",))
    assert found.permitted_artifacts == 0 and found.permitted_bytes_selected_bps is None
    assert found.selected_not_permitted == 1 and found.required_bytes_share_bps == 0


def test_the_registry_totals_sum_by_classification() -> None:
    tally = RegistryTally()
    tally.add(PADDED_REGISTRY.values())
    totals = tally.totals()
    assert totals == RegistryTotals(
        by_classification=(("internal", 2, 14), ("public", 41, 5 + PADDING_BYTES), ("restricted", 1, 6))
    )
    assert totals.of(("public", "internal")) == (43, 19 + PADDING_BYTES)
    assert totals.of(()) == (0, 0)
    assert registry_totals(PADDED_REGISTRY) == totals == RegistryArtifacts.of(PADDED_REGISTRY.values()).totals


def test_the_artifacts_looked_up_with_the_registry_totals_evaluate_as_the_whole_registry() -> None:
    """A cluster's worker holds only the artifacts its tasks name, with the
    whole registry's totals: the task's result is the same bytes."""
    observations = [*baseline(selected=("req", "extra", "rfc-03")), *reps(2, budget=100)]
    whole = evaluated(observations, PADDED_REGISTRY)
    named = {"req", "extra", "denied", "rfc-03"}
    looked_up = RegistryArtifacts(
        {k: v for k, v in PADDED_REGISTRY.items() if k in named}, registry_totals(PADDED_REGISTRY)
    )
    assert evaluated(observations, looked_up) == whole
    assert whole.baseline_composition is not None and whole.baseline_composition.permitted_artifacts == 42
    # Without the totals, the artifacts given are taken for the whole registry.
    partial = evaluated(observations, {k: v for k, v in PADDED_REGISTRY.items() if k in named})
    assert partial.baseline_composition is not None and partial.baseline_composition.permitted_artifacts == 3


def as_report(*tasks: TaskResult) -> Report:
    inputs = ReportInputs(
        benchmark_id="bench", task_root=ROOT, corpus_root=ROOT, artifact_count=44, run_id="run", run_digest=ROOT
    )
    return reduce_report(
        tasks,
        inputs=inputs,
        claim_class="conformance_seed",
        non_empirical=True,
        factorial_experiment=None,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
    )


def padded_result() -> TaskResult:
    return evaluated(
        [*baseline(selected=("req", "extra", *PADDING)), *reps(2, budget=100)],
        PADDED_REGISTRY,
    )


def test_every_task_of_a_report_carries_its_composition_and_an_older_report_still_reads() -> None:
    report = as_report(padded_result())
    data = encode_report(report)
    assert report_problems(report, "r.json") == []
    decoded = decode_report(data, "r.json")
    assert decoded == report and decoded.tasks[0].baseline_composition is not None
    older = json.loads(data)
    del older["tasks"][0]["baseline_composition"]
    before = decode_report(json.dumps(older).encode(), "old.json")
    assert before.tasks[0].baseline_composition is None
    assert composition_text(before.tasks[0]) == (
        "baseline composition: not in this report (written before eceb reported it)"
    )
    assert "Not in this report (written before eceb reported it)." in report_html(before).decode()


@pytest.mark.parametrize(
    ("changes", "fields"),
    [
        ({"selected_required": 2}, ("selected_required",)),
        ({"selected_not_permitted": 43}, ("selected_not_permitted",)),
        ({"selected_required_bytes": 10**9}, ("selected_required_bytes", "required_bytes_share_bps")),
        ({"required_bytes_share_bps": 5_000}, ("required_bytes_share_bps",)),
        ({"permitted_bytes_selected_bps": None}, ("permitted_bytes_selected_bps",)),
        ({"permitted_bytes_selected_bps": 10_001}, ("permitted_bytes_selected_bps",)),
        ({"repetition": None}, ("repetition",)),
    ],
)
def test_a_composition_that_contradicts_itself_is_named(changes: dict[str, object], fields: tuple[str, ...]) -> None:
    result = padded_result()
    assert result.baseline_composition is not None
    broken = msgspec.structs.replace(result.baseline_composition, **changes)
    report = as_report(msgspec.structs.replace(result, baseline_composition=broken))
    problems = report_problems(report, "r.json")
    assert [(p.record, p.field) for p in problems] == [("tasks[0]", f"baseline_composition.{f}") for f in fields]


def test_the_text_says_what_the_baseline_selected_against_what_the_task_permits() -> None:
    result = padded_result()
    line = (
        "      baseline composition, repetition 1: 42 artifact(s) selected, 4,793 bytes; the task permits "
        "42 artifact(s), 4,793 bytes (100.00 % of those bytes selected); required: 1 of 1 selected, 8 bytes "
        "(0.16 % of the bytes selected); 0 selected not permitted"
    )
    assert line in list(report_lines(as_report(result), "corpus/"))
    differ = evaluated(
        [
            *baseline(1, selected=("req", "extra")),
            obs("full_permitted_context", None, 2, tokens=1000, selected=("req",), context="full"),
        ],
        ARTIFACTS,
    )
    assert composition_text(differ).endswith(
        "; the baseline's repetitions select different artifacts (repetition 1 shown)"
    )
    none = evaluated(reps(2, budget=100), ARTIFACTS)
    assert composition_text(none) == (
        "baseline composition: no baseline observation; the task permits 2 artifact(s), 13 bytes"
    )


def test_the_page_shows_the_composition_of_each_task() -> None:
    page = report_html(as_report(padded_result())).decode()
    assert "<h3>Baseline composition</h3>" in page
    assert (
        '<tr><th>selected by the baseline (repetition 1)</th><td class="num">42</td><td class="num">4,793</td>'
        "<td>100.00 % of the permitted bytes (its permitted artifacts)</td></tr>"
    ) in page
    assert (
        '<tr><th>selected and required</th><td class="num">1</td><td class="num">8</td>'
        "<td>0.16 % of the bytes selected</td></tr>"
    ) in page
    assert "a padded one (many artifacts beyond the required ones" in page
