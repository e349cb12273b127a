"""Saved outputs: every case below is an ``eceb`` or ``eceb-dist`` command
line that needs no cluster (the ``--help`` of every command, ``validate``,
``evaluate``, ``render``, ``compare``, ``corpus``, ``publish``, the paired
``eceb pair`` commands over a prepared experiment, and the errors: bad JSON,
schema problems, missing files, usage errors). Each is run in this process
through click's runner (standard output and standard error apart, no
terminal, 80 columns, no ``ECEB_*`` setting) and its exit code, standard
output, standard error and the files it writes are compared with
``tests/fixtures/saved/CASE.json``, byte for byte once normalized. A
behaviour-preserving change of the code leaves every one of them as it is.

What is normalized, and nothing else:

- the temporary directory of the cases (``<tmp>``), the checkout
  (``<repo>``) and ``../shared`` beside it (``<shared>``), wherever a path
  is printed;
- the experiment's freeze digest (``<freeze-digest>``: ``frozen_at`` is the
  time of the freeze and the record holds temporary paths) and the random
  suffix of its task-pair directory (``<pair-suffix>``);
- the one timing figure, ``evaluated in N.NN s`` (``evaluated in <seconds> s``).

A file a case writes is saved as its lines, except an HTML page, saved as
the BLAKE3 digest of its (normalized) bytes.

After an intended change of an output, regenerate the saved outputs and
review their diff::

    ECEB_SAVE_OUTPUTS=1 .venv/bin/python -m pytest -p no:cacheprovider tests/integration/test_saved_outputs.py

With ``ECEB_SAVE_OUTPUTS=1`` every case writes its file (and saved files of
cases that no longer exist are removed) instead of comparing; without it, a
case that differs fails with a unified diff of its saved form.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import pytest
from click.testing import CliRunner

from eceb_cli.dist import main as dist_main
from eceb_cli.main import main as eceb_main
from tests.support.paired_experiment import Bench, make_bench
from tests.support.paths import EXAMPLES, REPO, SHARED

pytestmark = pytest.mark.integration

SAVED = REPO / "tests" / "fixtures" / "saved"
SAVING = os.environ.get("ECEB_SAVE_OUTPUTS") == "1"

SEED = "examples/enterprise-seed"
MIX = "examples/public-eng-mix"
MIX_CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"

_TIMING = re.compile(r"evaluated in \d+\.\d+ s")


@dataclass(frozen=True)
class Case:
    """One command line: ``prog`` (``eceb`` or ``eceb-dist``), its
    arguments (``{ws}``: the shared workspace, ``{out}``: a new directory of
    this case, ``{mix}``: the public-eng-mix corpus, ``{exp}``: the paired
    experiment) and the files it writes that are saved too."""

    name: str
    args: tuple[str, ...]
    prog: str = "eceb"
    files: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def _help_cases() -> list[Case]:
    eceb_commands = [
        (),
        ("compare",),
        ("corpus",),
        ("corpus", "diff"),
        ("corpus", "register"),
        ("corpus", "root"),
        ("corpus", "verify"),
        ("evaluate",),
        ("pair",),
        *(
            ("pair", name)
            for name in ("approve", "authorize", "freeze", "plan", "prepare", "run", "status", "stop", "summary")
        ),
        ("publish",),
        ("render",),
        ("run",),
        ("validate",),
    ]
    dist_commands = [
        (),
        *(
            (name,)
            for name in (
                "cancel",
                "jobs",
                "nightly",
                "nightly-accept",
                "probe",
                "register",
                "result",
                "run",
                "status",
                "submit",
                "verify",
                "wait",
                "worker",
            )
        ),
    ]
    cases = [Case("-".join(("help", "eceb", *words)), (*words, "--help")) for words in eceb_commands]
    cases += [
        Case("-".join(("help", "eceb-dist", *words)), (*words, "--help"), prog="eceb-dist") for words in dist_commands
    ]
    return cases


_MADE = "examples/run"
_MADE_CORPUS = str(MIX_CORPUS)
_BENCH = f"{SEED}/benchmark.json"
_RUN = f"{SEED}/run.json"
_CORPUS = f"{SEED}/corpus"
_PUBLISH = ("--sources", f"{SEED}/sources.json", "--implementation-revision", "rev-1")

CASES: list[Case] = [
    *_help_cases(),
    Case("eceb-version", ("--version",)),
    Case("eceb-dist-version", ("--version",), prog="eceb-dist"),
    Case("eceb-unknown-command", ("evalute", _BENCH)),
    Case("eceb-dist-unknown-command", ("sumbit",), prog="eceb-dist"),
    Case("eceb-dist-submit-missing-arguments", ("submit",), prog="eceb-dist"),
    Case("eceb-dist-status-missing-job", ("status",), prog="eceb-dist"),
    # validate
    Case("validate-benchmark", ("validate", _BENCH)),
    Case("validate-benchmark-json", ("validate", _BENCH, "--json")),
    Case("validate-run-against-benchmark", ("validate", _RUN, "--benchmark", _BENCH)),
    Case("validate-run-against-other-benchmark", ("validate", f"{MIX}/run.json", "--benchmark", _BENCH)),
    Case("validate-registry", ("validate", f"{SEED}/registry.jsonl")),
    Case("validate-rules", ("validate", f"{SEED}/rules.toml")),
    Case("validate-report-json", ("validate", "{ws}/seed-report.json", "--json")),
    Case("validate-sources", ("validate", f"{SEED}/sources.json")),
    Case("validate-bad-json", ("validate", "{ws}/bad/syntax.json")),
    Case("validate-bad-json-json", ("validate", "{ws}/bad/syntax.json", "--json")),
    Case("validate-schema-problems", ("validate", "{ws}/bad/run-schema.json")),
    Case("validate-unknown-schema", ("validate", "{ws}/bad/unknown-schema.json")),
    Case("validate-missing-file", ("validate", "{ws}/absent.json")),
    Case("validate-benchmark-option-on-benchmark", ("validate", _BENCH, "--benchmark", _BENCH)),
    # evaluate
    Case("evaluate-text", ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS)),
    Case("evaluate-json", ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS, "--json")),
    Case(
        "evaluate-output",
        ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS, "-o", "{out}/report.json"),
        files=("report.json",),
    ),
    Case("evaluate-quiet", ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS, "-q", "-o", "{out}/report.json")),
    Case(
        "evaluate-no-uncertainty-no-disclosure",
        ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS, "--uncertainty", "none", "--no-disclosure-check"),
    ),
    Case(
        "evaluate-public-eng-mix",
        ("evaluate", f"{MIX}/benchmark.json", f"{MIX}/run.json", "--corpus", "{mix}", "-o", "{out}/report.json"),
        files=("report.json",),
    ),
    Case("evaluate-tampered-corpus", ("evaluate", _BENCH, _RUN, "--corpus", "{ws}/tampered-corpus")),
    Case("evaluate-missing-corpus", ("evaluate", _BENCH, _RUN, "--corpus", "{ws}/absent-corpus")),
    Case("evaluate-bad-run", ("evaluate", _BENCH, "{ws}/bad/syntax.json", "--corpus", _CORPUS)),
    Case("evaluate-run-schema-problems", ("evaluate", _BENCH, "{ws}/bad/run-schema.json", "--corpus", _CORPUS)),
    Case("evaluate-without-corpus", ("evaluate", _BENCH, _RUN)),
    Case("evaluate-json-and-output", ("evaluate", _BENCH, _RUN, "--corpus", _CORPUS, "--json", "-o", "{out}/r.json")),
    # render
    Case("render-text", ("render", "{ws}/seed-report.json", "--text")),
    Case(
        "render-text-output",
        ("render", "{ws}/seed-report.json", "--text", "-o", "{out}/summary.txt"),
        files=("summary.txt",),
    ),
    Case(
        "render-html", ("render", "{ws}/seed-report.json", "--html", "-o", "{out}/report.html"), files=("report.html",)
    ),
    Case("render-comparison-text", ("render", "{ws}/seed-report.json", "{ws}/regressed-report.json", "--text")),
    Case("render-html-without-output", ("render", "{ws}/seed-report.json", "--html")),
    Case("render-not-a-report", ("render", "{ws}/bad/syntax.json", "--text")),
    Case("render-bad-json", ("render", "{ws}/bad/report-syntax.json", "--text")),
    Case("render-missing-report", ("render", "{ws}/absent.json", "--text")),
    # compare
    Case("compare-same", ("compare", "{ws}/seed-report.json", "{ws}/seed-report.json")),
    Case("compare-regression-text", ("compare", "{ws}/seed-report.json", "{ws}/regressed-report.json")),
    Case("compare-regression-json", ("compare", "{ws}/seed-report.json", "{ws}/regressed-report.json", "--json")),
    Case(
        "compare-regression-markdown", ("compare", "{ws}/seed-report.json", "{ws}/regressed-report.json", "--markdown")
    ),
    Case(
        "compare-regression-output",
        ("compare", "{ws}/seed-report.json", "{ws}/regressed-report.json", "--json", "-o", "{out}/comparison.json"),
        files=("comparison.json",),
    ),
    Case(
        "compare-allowances",
        (
            "compare",
            "{ws}/seed-report.json",
            "{ws}/regressed-report.json",
            "--max-token-savings-drop",
            "10000",
            "--max-cost-savings-drop",
            "10000",
            "--max-budget-increase",
            "100000",
        ),
    ),
    Case("compare-different-roots", ("compare", "{ws}/seed-report.json", "{ws}/mix-report.json")),
    Case("compare-not-a-report", ("compare", "{ws}/seed-report.json", "{ws}/bad/syntax.json")),
    Case("compare-bad-json", ("compare", "{ws}/bad/report-syntax.json", "{ws}/seed-report.json", "--json")),
    Case(
        "compare-negative-allowance",
        ("compare", "{ws}/seed-report.json", "{ws}/seed-report.json", "--max-budget-increase", "-1"),
    ),
    # corpus
    Case("corpus-root", ("corpus", "root", f"{SEED}/registry.jsonl")),
    Case("corpus-root-json", ("corpus", "root", f"{SEED}/registry.jsonl", "--json")),
    Case(
        "corpus-register",
        ("corpus", "register", _CORPUS, "--rules", f"{SEED}/rules.toml", "-o", "{out}/registry.jsonl"),
        files=("registry.jsonl",),
    ),
    Case(
        "corpus-register-json",
        ("corpus", "register", _CORPUS, "--rules", f"{SEED}/rules.toml", "-o", "{out}/registry.jsonl", "--json"),
    ),
    Case("corpus-register-stdout", ("corpus", "register", _CORPUS, "--rules", f"{SEED}/rules.toml", "-o", "-")),
    Case(
        "corpus-register-json-stdout",
        ("corpus", "register", _CORPUS, "--rules", f"{SEED}/rules.toml", "-o", "-", "--json"),
    ),
    Case(
        "corpus-register-bad-rules",
        ("corpus", "register", _CORPUS, "--rules", "{ws}/bad/rules.toml", "-o", "{out}/registry.jsonl"),
    ),
    Case("corpus-verify", ("corpus", "verify", f"{SEED}/registry.jsonl", "--source", _CORPUS)),
    Case("corpus-verify-json", ("corpus", "verify", f"{SEED}/registry.jsonl", "--source", _CORPUS, "--json")),
    Case("corpus-verify-tampered", ("corpus", "verify", f"{SEED}/registry.jsonl", "--source", "{ws}/tampered-corpus")),
    Case(
        "corpus-verify-tampered-json",
        ("corpus", "verify", f"{SEED}/registry.jsonl", "--source", "{ws}/tampered-corpus", "--json"),
    ),
    Case(
        "corpus-verify-missing-source", ("corpus", "verify", f"{SEED}/registry.jsonl", "--source", "{ws}/absent-corpus")
    ),
    Case("corpus-verify-bad-registry", ("corpus", "verify", "{ws}/bad/syntax.json", "--source", _CORPUS)),
    Case(
        "corpus-diff-same",
        ("corpus", "diff", f"{SEED}/registry.jsonl", f"{SEED}/registry.jsonl", "--benchmark", _BENCH),
    ),
    Case("corpus-diff-bad-registry", ("corpus", "diff", f"{SEED}/registry.jsonl", "{ws}/bad/syntax.json")),
    # publish
    Case(
        "publish",
        ("publish", _BENCH, _RUN, "{ws}/seed-report.json", *_PUBLISH, "-o", "{out}/bundle"),
        files=("bundle/manifest.json",),
    ),
    Case("publish-json", ("publish", _BENCH, _RUN, "{ws}/seed-report.json", *_PUBLISH, "-o", "{out}/bundle", "--json")),
    Case("publish-check", ("publish", "--check", "{ws}/bundle", "--corpus", _CORPUS)),
    Case("publish-check-json", ("publish", "--check", "{ws}/bundle", "--corpus", _CORPUS, "--json")),
    Case("publish-check-changed-report", ("publish", "--check", "{ws}/changed-bundle", "--corpus", _CORPUS)),
    Case(
        "publish-report-of-other-run",
        ("publish", _BENCH, "{ws}/regressed-run.json", "{ws}/seed-report.json", *_PUBLISH, "-o", "{out}/bundle"),
    ),
    Case("publish-without-sources", ("publish", _BENCH, _RUN, "{ws}/seed-report.json", "-o", "{out}/bundle")),
    # making a run
    Case(
        "run-dry-run",
        ("run", f"{_MADE}/benchmark.json", f"{_MADE}/profile.json", "--corpus", _MADE_CORPUS, "--dry-run"),
    ),
    Case("run-without-output", ("run", f"{_MADE}/benchmark.json", f"{_MADE}/profile.json", "--corpus", _MADE_CORPUS)),
    Case(
        "run-bad-profile",
        ("run", f"{_MADE}/benchmark.json", "{ws}/bad/syntax.json", "--corpus", _MADE_CORPUS, "--dry-run"),
    ),
    Case("validate-run-profile", ("validate", f"{_MADE}/profile.json")),
    # the paired benchmark
    Case("pair-plan", ("pair", "plan")),
    Case("pair-plan-json", ("pair", "plan", "--json")),
    Case("pair-plan-quiet", ("pair", "plan", "-q")),
    Case("pair-status", ("pair", "status", "{exp}")),
    Case("pair-status-json", ("pair", "status", "{exp}", "--json")),
    Case("pair-summary-nothing-run", ("pair", "summary", "{exp}")),
    Case("pair-status-missing-experiment", ("pair", "status", "{ws}/absent-experiment")),
    Case(
        "pair-freeze-bad-benchmark",
        ("pair", "freeze", "{ws}/bad/syntax.json", "--repo", "{ws}/pair/repo", "--into", "{out}/exp"),
    ),
    Case("pair-prepare-pair-zero", ("pair", "prepare", "{exp}", "--pair", "0")),
]


@dataclass(frozen=True)
class Workspace:
    """The inputs the cases share, built once: ``root`` (the temporary
    directory), the paired ``bench`` and the exact strings replaced by a
    placeholder, longest first."""

    root: Path
    bench: Bench
    replacements: tuple[tuple[str, str], ...]

    def normalize(self, text: str) -> str:
        """``text`` with every replacement made and the timing figure hidden."""
        for found, placeholder in self.replacements:
            text = text.replace(found, placeholder)
        return _TIMING.sub("evaluated in <seconds> s", text)


def _clean_env() -> dict[str, str | None]:
    """What the runner sets in the environment: 80 columns, no ``ECEB_*`` setting."""
    env: dict[str, str | None] = {name: None for name in os.environ if name.startswith("ECEB_")}
    env["COLUMNS"] = "80"
    return env


def _eceb(*args: str) -> None:
    """Build an input with the command line, in this process (exit 0 or 1)."""
    result = CliRunner().invoke(eceb_main, list(args), env=_clean_env(), prog_name="eceb", catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output


def _build_workspace(root: Path) -> Workspace:
    seed = EXAMPLES / "enterprise-seed"
    bad = root / "bad"
    bad.mkdir()
    (bad / "syntax.json").write_text('{"schema": "symgliph.eceb/run-v0.1",\n "observations": [}\n', encoding="utf-8")
    (bad / "run-schema.json").write_text(
        json.dumps({"schema": "symgliph.eceb/run-v0.1", "run_id": 7, "observations": [{"task_id": ""}]}, indent=1),
        encoding="utf-8",
    )
    (bad / "report-syntax.json").write_text(
        '{"schema": "symgliph.eceb/report-v0.1", "summary": {,}}\n', encoding="utf-8"
    )
    (bad / "unknown-schema.json").write_text('{"schema": "symgliph.eceb/nothing-v9"}\n', encoding="utf-8")
    (bad / "rules.toml").write_text('[[rule]\nglob = "*"\n', encoding="utf-8")
    tampered = root / "tampered-corpus"
    shutil.copytree(seed / "corpus", tampered)
    first = sorted(p for p in tampered.rglob("*") if p.is_file())[0]
    first.write_bytes(first.read_bytes() + b"\n")
    _eceb("evaluate", str(seed / "benchmark.json"), str(seed / "run.json"), "--corpus", str(seed / "corpus"),
          "-q", "-o", str(root / "seed-report.json"))  # fmt: skip
    regressed = json.loads((seed / "run.json").read_text(encoding="utf-8"))
    for observation in regressed["observations"]:
        if (observation["task_id"], observation["strategy"], observation.get("budget")) == (
            "db-failover-steps", "compiled", 512,
        ):  # fmt: skip
            observation["quality_milli"] = 700
    (root / "regressed-run.json").write_text(json.dumps(regressed), encoding="utf-8")
    _eceb("evaluate", str(seed / "benchmark.json"), str(root / "regressed-run.json"), "--corpus", str(seed / "corpus"),
          "-q", "-o", str(root / "regressed-report.json"))  # fmt: skip
    mix = EXAMPLES / "public-eng-mix"
    _eceb("evaluate", str(mix / "benchmark.json"), str(mix / "run.json"), "--corpus", str(MIX_CORPUS),
          "-q", "-o", str(root / "mix-report.json"))  # fmt: skip
    _eceb("publish", str(seed / "benchmark.json"), str(seed / "run.json"), str(root / "seed-report.json"),
          "--sources", str(seed / "sources.json"), "--implementation-revision", "rev-1", "-o", str(root / "bundle"),
          "-q")  # fmt: skip
    shutil.copytree(root / "bundle", root / "changed-bundle")
    report = root / "changed-bundle" / "report.json"
    report.write_bytes(report.read_bytes().replace(b'"eceb_version":"0.1.0"', b'"eceb_version":"0.1.1"', 1))
    bench = make_bench(root / "pair")
    frozen = bench.freeze()
    assert frozen.returncode == 0, frozen.stderr
    freeze_digest = re.search(r"^freeze digest: ([0-9a-f]{64})$", frozen.stdout, re.MULTILINE)
    assert freeze_digest is not None, frozen.stdout
    prepared = bench.eceb("prepare", bench.experiment)
    assert prepared.returncode == 0, prepared.stderr
    (pair_dir,) = (p.name for p in bench.experiment.iterdir() if p.name.startswith("task-pair-"))
    replacements = {
        str(root): "<tmp>",
        os.path.realpath(root): "<tmp>",
        str(REPO): "<repo>",
        str(SHARED): "<shared>",
        freeze_digest.group(1): "<freeze-digest>",
        pair_dir: f"{pair_dir.rsplit('-', 1)[0]}-<pair-suffix>",
    }
    ordered = sorted(replacements.items(), key=lambda item: -len(item[0]))
    return Workspace(root=root, bench=bench, replacements=tuple(ordered))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    if not MIX_CORPUS.is_dir():
        pytest.fail(f"the corpus is expected at {MIX_CORPUS} (../shared beside the checkout)")
    previous = Path.cwd()
    os.chdir(REPO)
    try:
        yield _build_workspace(tmp_path_factory.mktemp("saved"))
    finally:
        os.chdir(previous)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _run(case: Case, ws: Workspace) -> dict[str, Any]:
    """Run ``case`` in this process from the checkout; its saved form."""
    out = ws.root / "cases" / case.name
    out.mkdir(parents=True)
    values = {"ws": str(ws.root), "out": str(out), "mix": str(MIX_CORPUS), "exp": str(ws.bench.experiment)}
    args = [arg.format(**values) for arg in case.args]
    env = {**_clean_env(), "PATH": ws.bench.env["PATH"], **case.env}
    command = eceb_main if case.prog == "eceb" else dist_main
    result = CliRunner().invoke(command, args, env=env, prog_name=case.prog, catch_exceptions=False)
    files: dict[str, Any] = {}
    for name in case.files:
        data = (out / name).read_bytes().decode("utf-8")
        normalized = ws.normalize(data)
        if name.endswith(".html"):
            files[name] = "blake3:" + blake3.blake3(normalized.encode("utf-8")).hexdigest()
        else:
            files[name] = _lines(normalized)
    return {
        "command": ws.normalize(" ".join([case.prog, *args])),
        "exit_code": result.exit_code,
        "stdout": _lines(ws.normalize(result.stdout_bytes.decode("utf-8"))),
        "stderr": _lines(ws.normalize(result.stderr_bytes.decode("utf-8"))),
        "files": files,
    }


def _dump(saved: dict[str, Any]) -> str:
    return json.dumps(saved, indent=1, ensure_ascii=False) + "\n"


def test_case_names_are_unique() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_every_saved_output_has_its_case() -> None:
    names = {f"{case.name}.json" for case in CASES}
    stale = sorted(p.name for p in SAVED.glob("*.json") if p.name not in names) if SAVED.is_dir() else []
    if SAVING:
        for name in stale:
            (SAVED / name).unlink()
        return
    assert not stale, f"saved outputs without a case (regenerate with ECEB_SAVE_OUTPUTS=1): {stale}"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_saved_output(case: Case, workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    found = _dump(_run(case, workspace))
    path = SAVED / f"{case.name}.json"
    if SAVING:
        SAVED.mkdir(parents=True, exist_ok=True)
        path.write_text(found, encoding="utf-8")
        return
    assert path.exists(), f"no saved output {path.relative_to(REPO)}: regenerate with ECEB_SAVE_OUTPUTS=1"
    expected = path.read_text(encoding="utf-8")
    if found != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                found.splitlines(keepends=True),
                fromfile=f"saved/{case.name}.json",
                tofile="now",
            )
        )
        pytest.fail(f"{case.name}: the output changed (ECEB_SAVE_OUTPUTS=1 saves it after an intended change)\n{diff}")
