"""A padded baseline is visible in the report (ECEB-0.1 §7): a copy of the
public-eng-mix run whose baseline for one task also selects 40 unrelated
permitted RFCs (their tokens and cost added, as a model would have been
sent them) still passes every gate, with far larger savings; only the
task's baseline composition shows what was done: in the report, in the
text ``eceb evaluate`` prints and on the HTML page, the same figures
whether the registry is held whole or read by a cluster's worker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.families.eceb.composition import RegistryArtifacts
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.planning import evaluation_task_ids
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.pipeline.inputs import check_inputs, load_referenced_artifacts
from tests.support.paths import EXAMPLES, SHARED

pytestmark = pytest.mark.integration

EXAMPLE = EXAMPLES / "public-eng-mix"
CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"
TASK = "kube-api-error-budget-burn"
PADDING = 40
INPUT_MICRO_USD_PER_TOKEN = 3  # the run's pricing: 3,000,000 micro-USD per million input tokens


def registry() -> list[dict[str, Any]]:
    lines = (EXAMPLE / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line) for line in lines]


def padded_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The example's run, the task's baseline padded with the first 40
    public RFCs it does not select; and those RFCs."""
    run = json.loads((EXAMPLE / "run.json").read_text(encoding="utf-8"))
    baseline = [o for o in run["observations"] if o["task_id"] == TASK and o["strategy"] == "full_permitted_context"]
    assert len(baseline) == 3
    chosen = {s["artifact_id"] for s in baseline[0]["selected_artifacts"]}
    rfcs = [a for a in registry() if a["kind"] == "rfc" and a["classification"] == "public"]
    padding = [a for a in sorted(rfcs, key=lambda a: a["artifact_id"]) if a["artifact_id"] not in chosen][:PADDING]
    assert len(padding) == PADDING
    tokens = sum(a["size_bytes"] for a in padding) // 4  # about 4 bytes a token, as the example's sizes
    for observation in baseline:
        observation["selected_artifacts"] += [
            {"artifact_id": a["artifact_id"], "observed_digest": a["source_digest"]} for a in padding
        ]
        observation["input_tokens"] += tokens
        observation["input_cost_micro_usd"] = observation["input_tokens"] * INPUT_MICRO_USD_PER_TOKEN
    return run, padding


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the public corpus is expected at {CORPUS} (../shared beside the checkout)")
    return CORPUS


@pytest.fixture(scope="module")
def padded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A copy of the example (benchmark, registry) with the padded run."""
    directory = tmp_path_factory.mktemp("padded")
    for name in ("benchmark.json", "registry.jsonl"):
        shutil.copy(EXAMPLE / name, directory / name)
    run, padding = padded_run()
    (directory / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return directory, padding


def evaluate(directory: Path, corpus: Path, out: Path) -> tuple[dict[str, Any], str]:
    benchmark, run = directory / "benchmark.json", directory / "run.json"
    arguments = ["evaluate", str(benchmark), str(run), "--corpus", str(corpus), "-o", str(out)]
    result = CliRunner().invoke(main, arguments, catch_exceptions=False)
    assert result.exit_code == exit_codes.TASKS_FAILED, result.stderr  # 17/20 pass, as in the example
    tasks = {t["task_id"]: t for t in json.loads(out.read_bytes())["tasks"]}
    return tasks[TASK], result.stdout


def test_the_padded_baseline_passes_with_larger_savings_and_its_composition_shows_it(
    padded: tuple[Path, list[dict[str, Any]]], corpus: Path, tmp_path: Path
) -> None:
    directory, padding = padded
    before, _ = evaluate(EXAMPLE, corpus, tmp_path / "before.json")
    after, text = evaluate(directory, corpus, tmp_path / "after.json")

    # What the gates see: both pass, no policy violation; the savings rise.
    assert before["passed"] and after["passed"]
    assert before["policy_violations_all_groups"] == after["policy_violations_all_groups"] == 0
    assert before["token_savings_bps"] == 7_290
    assert after["token_savings_bps"] > 9_900 > before["token_savings_bps"]

    # What the composition shows: the same permitted and required artifacts,
    # 40 more selected, the required share of the selected bytes collapsed.
    was, padded_to = before["baseline_composition"], after["baseline_composition"]
    for same in ("permitted_artifacts", "permitted_bytes", "required_artifacts", "required_bytes"):
        assert was[same] == padded_to[same]
    assert (was["selected_artifacts"], padded_to["selected_artifacts"]) == (9, 9 + PADDING)
    added = sum(a["size_bytes"] for a in padding)
    assert padded_to["selected_bytes"] == was["selected_bytes"] + added
    assert was["selected_required"] == padded_to["selected_required"] == was["required_artifacts"] == 1
    assert was["selected_not_permitted"] == padded_to["selected_not_permitted"] == 0
    assert not was["repetitions_differ"] and not padded_to["repetitions_differ"]
    assert was["required_bytes_share_bps"] == 3_226
    assert padded_to["required_bytes_share_bps"] < was["required_bytes_share_bps"] // 10
    assert padded_to["permitted_bytes_selected_bps"] > was["permitted_bytes_selected_bps"]

    # What eceb evaluate prints for the task.
    lines = [line.strip() for line in text.splitlines()]
    shown = [line for line in lines if line.startswith("baseline composition, repetition 1: 49 artifact(s) selected")]
    assert len(shown) == 1
    assert "the task permits 1,993 artifact(s)" in shown[0]
    assert "required: 1 of 1 selected" in shown[0] and "0 selected not permitted" in shown[0]

    # What the HTML page shows.
    page = tmp_path / "after.html"
    result = CliRunner().invoke(
        main, ["render", str(tmp_path / "after.json"), "--html", "-o", str(page)], catch_exceptions=False
    )
    assert result.exit_code == exit_codes.OK, result.stderr
    html = page.read_text(encoding="utf-8")
    section = html[html.index(f"<h2>{TASK.replace('-', '-<wbr>')}</h2>") :]
    section = section[: section.index("</table>", section.index("<h3>Baseline composition</h3>"))]
    assert (
        f'<tr><th>selected by the baseline (repetition 1)</th><td class="num">49</td>'
        f'<td class="num">{padded_to["selected_bytes"]:,}</td>'
    ) in section


def test_a_clusters_worker_reading_the_registry_gives_the_same_report(
    padded: tuple[Path, list[dict[str, Any]]],
) -> None:
    """A cluster's evaluation worker keeps only the artifacts the run and
    benchmark name, and sums the rest as it reads the registry: the same
    composition, the same report bytes as the registry held whole."""
    directory, _ = padded
    whole = check_inputs(directory / "benchmark.json", directory / "run.json")
    scanned = check_inputs(directory / "benchmark.json", directory / "run.json", keep=frozenset())
    referenced = load_referenced_artifacts(scanned.registry_location, scanned.benchmark, scanned.run)
    assert isinstance(referenced, RegistryArtifacts)
    everything = RegistryArtifacts.of(whole.registry.artifacts)
    assert len(referenced) < len(everything) // 10
    assert referenced.totals == everything.totals
    tasks = {t.task_id: t for t in whole.benchmark.tasks}
    task_ids = evaluation_task_ids(whole.benchmark, whole.run)
    looked_up = evaluate_tasks_of_run(task_ids, scanned.run, tasks, referenced)
    held = evaluate_tasks_of_run(task_ids, whole.run, tasks, everything)
    assert looked_up == held

    def reduced(outcomes: Any) -> bytes:
        report = reduce_evaluation(
            outcomes,
            benchmark=whole.benchmark,
            run=whole.run,
            corpus_root=whole.corpus_root,
            artifact_count=whole.registry.artifact_count,
            eceb_version="x",
            disclosure_check=DISCLOSURE_OFF,
        )
        return encode_report(report)

    assert reduced(looked_up) == reduced(held)
    (task,) = [o.result for o in looked_up if o.task_id == TASK]
    assert task is not None and task.baseline_composition is not None
    assert task.baseline_composition.selected_artifacts == 9 + PADDING
