"""The publication manifest (``symgliph.eceb/publication-v0.1``): what a
bundle of ``eceb publish`` binds, item by item of ECEB-0.1 §16.

A bundle is a directory: the benchmark, its registry, the run, the report,
the sources file and (optionally) the declarations file, the transcripts
and judgments ``eceb run`` wrote beside the run and the judge's rubric, each
bound by its size and BLAKE3 digest (:class:`BoundFile`), and
``manifest.json``, which states every §16 item as it is derived from those
files (:func:`build_manifest`). ``eceb publish --check`` derives it again
from the bundle's files and names every field that differs
(:func:`manifest_differences`).

The judge's evidence (ECEB-0.1 §9): the judgments file must agree with the
run (:func:`judgment_consistency`), a bundled rubric must be the one the
run's judge names (:func:`rubric_problems`), an empirical model-quality
claim of a run whose judge names a rubric needs both bundled
(:func:`judging_reasons`), and transcripts, which carry the model contexts,
are never bundled with a corpus that may not be redistributed
(:func:`transcript_refusals`). Pure: the callers read and write the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal, TypeVar

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.decoding import record_problems
from eceb_worker.core.digests import Digest
from eceb_worker.core.identifiers import RecordIdentifier
from eceb_worker.core.lenient import brief_repr
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.benchmark import Benchmark, task_root
from eceb_worker.families.eceb.declarations import Declarations, Exclusion, SourcesFile, Timeout
from eceb_worker.families.eceb.disclosure import DisclosureCheck
from eceb_worker.families.eceb.report import Report, run_digest
from eceb_worker.families.eceb.run import AuxiliaryCost, Configuration, Run
from eceb_worker.families.eceb.vocabulary import ClaimClass, Strategy

__all__ = [
    "MANIFEST_NAME",
    "PUBLICATION_SCHEMA",
    "REQUIRED_ROLES",
    "BoundFile",
    "Claim",
    "Judgment",
    "Measurements",
    "PublicationManifest",
    "Published",
    "Transcript",
    "build_manifest",
    "decode_lines",
    "differences",
    "judging_reasons",
    "judgment_consistency",
    "manifest_differences",
    "report_consistency",
    "rubric_problems",
    "transcript_refusals",
]

PUBLICATION_SCHEMA: Final = "symgliph.eceb/publication-v0.1"
MANIFEST_NAME: Final = "manifest.json"
"""The manifest's file name in a bundle (the one file no manifest binds)."""

Role = Literal[
    "benchmark", "registry", "run", "report", "sources", "declarations", "transcripts", "judgments", "rubric"
]
REQUIRED_ROLES: Final[tuple[Role, ...]] = ("benchmark", "registry", "run", "report", "sources")
"""The files every bundle binds; ``declarations``, ``transcripts``,
``judgments`` and ``rubric`` are optional."""

T = TypeVar("T", bound=msgspec.Struct)
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Review = Literal["none", "sampled", "full"]
_REVIEW_ORDER: Final = ("none", "sampled", "full")


class BoundFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One file of the bundle, bound by its bytes.

    Fields:
        role: what it is (each role once).
        path: bundle-relative portable path (``/``-separated, no ``..``).
        size_bytes: its length in bytes.
        digest: BLAKE3-256 of its bytes.
    """

    role: Role
    path: NonEmpty
    size_bytes: Annotated[int, msgspec.Meta(ge=0)]
    digest: Digest


Budget = Annotated[int, msgspec.Meta(gt=0)]
Repetition = Annotated[int, msgspec.Meta(ge=1)]


class Judgment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of a judgments file (``RUN_STEM.judgments.jsonl``, written
    by ``eceb run``): the judge's raw judgment of one execution (ECEB-0.1 §9).

    Fields:
        execution_id: the execution's name in the run's plan.
        task_id, strategy, budget (null for the baseline), repetition: the
            execution, as the run's observation of it names it.
        quality_milli: the score, thousandths (the observation's must be equal).
        rationale: the judge's reason (``""`` for a command judge).
        judge_prompt: what the judge was given.
        raw_judgment: the judge's output as received.
    """

    execution_id: NonEmpty
    task_id: RecordIdentifier
    strategy: Strategy
    budget: Budget | None
    repetition: Repetition
    quality_milli: Annotated[int, msgspec.Meta(ge=0, le=1000)]
    rationale: str
    judge_prompt: str
    raw_judgment: str


class Transcript(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of a transcripts file (``RUN_STEM.transcripts.jsonl``,
    written by ``eceb run``): one provider call, as sent and received.

    Fields:
        execution_id, task_id, strategy, budget, repetition: the execution.
        call: ``answer`` or ``judge``.
        request, response: the provider's JSON bodies (kept as they are).
    """

    execution_id: NonEmpty
    task_id: RecordIdentifier
    strategy: Strategy
    budget: Budget | None
    repetition: Repetition
    call: Literal["answer", "judge"]
    request: msgspec.Raw
    response: msgspec.Raw


def decode_lines(data: bytes, struct: type[T], file: str) -> tuple[list[tuple[int, T]], list[Problem]]:
    """Each non-blank line of JSON Lines ``data`` (file ``file``) decoded as
    ``struct``: ``([(line number, record)], problems)``, every problem of
    every line that does not decode named by its line (``record`` ``line N``)."""
    decoder = msgspec.json.Decoder(struct)
    records: list[tuple[int, T]] = []
    problems: list[Problem] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            records.append((number, decoder.decode(raw)))
        except (msgspec.DecodeError, RecursionError) as exc:
            where = f"line {number}"
            problems.extend(record_problems(raw, struct, file=file, record=where, decode_error=str(exc), line=number))
    return records, problems


class Claim(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The claim class the bundle states (§15), and the run's own."""

    claimed: ClaimClass
    run_claim_class: ClaimClass
    non_empirical: bool


class Roots(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The immutable corpus and task roots (§5, §16), recomputed from the
    bundled registry and benchmark, equal to the report's."""

    corpus_root: Digest
    task_root: Digest
    artifact_count: int


class SourceLicence(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One source's licence and redistribution status, as the sources file declares."""

    name: str
    license_spdx: str
    redistributable: bool


class Licences(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Source licences and redistribution status (§16).

    Fields:
        corpus: the corpus's name in the sources file.
        public: every source is declared redistributable.
        sources: each source, sorted by name.
    """

    corpus: str
    public: bool
    sources: tuple[SourceLicence, ...]


class Measurements(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The raw per-repetition measurements (§16): the run's observations,
    bound with the run file (role ``run``).

    Fields:
        run_digest: the run's order-independent digest (as the report's).
        observations: observations in the run, one per repetition.
        auxiliary_costs: auxiliary cost records in the run.
    """

    run_digest: Digest
    observations: int
    auxiliary_costs: int


class Incidents(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every exclusion, timeout, retry and failed task (§16).

    Fields:
        declared: a declarations file was given; when false, no exclusion
            or timeout was declared (and the lists are empty).
        exclusions, timeouts: as the declarations file lists them.
        retries: the run's auxiliary costs of kind ``retry``.
        failed_tasks: the report's failing tasks, sorted.
    """

    declared: bool
    exclusions: tuple[Exclusion, ...]
    timeouts: tuple[Timeout, ...]
    retries: tuple[AuxiliaryCost, ...]
    failed_tasks: tuple[str, ...]


class UncertaintyStatement(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The uncertainty estimate, or the statement that none was made (§16):
    ``method`` is the report's (``not_estimated`` when it gives none)."""

    method: NonEmpty
    statement: str


class HumanReview(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Human-review status (§9, §16): the weakest of the judges' (``none`` <
    ``sampled`` < ``full``), and each configuration's."""

    status: Review
    by_configuration: tuple[tuple[str, Review], ...]


class Controls(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Sampling, authorization and reproducibility controls as declared (§15); empty: not declared."""

    sampling: str
    authorization: str
    reproducibility: str


class PublicationManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A bundle's manifest (schema ``symgliph.eceb/publication-v0.1``).

    Fields:
        schema: the schema identifier.
        benchmark_id, run_id: the names of the benchmark and the run.
        claim: the claim class stated, checked against the evidence (§15).
        files: every file bound, sorted by path (benchmark, run and report: §16).
        roots: corpus and task roots (§16).
        licences: source licences and redistribution status (§16).
        implementation_revision: the context-construction implementation's revision (§16).
        configurations: model, judge, tokenizer and pricing identities, from the run (§16).
        measurements: the raw per-repetition measurements (§16).
        incidents: exclusions, timeouts, retries and failed tasks (§16).
        uncertainty: the estimate, or that it was not estimated (§16).
        disclosure_check: whether the report checked answers for
            disclosures, and with which N (§1, §17), as the report states it.
        human_review: human-review status (§16).
        controls: declared sampling, authorization and reproducibility (§15).
    """

    schema: Literal["symgliph.eceb/publication-v0.1"]
    benchmark_id: str
    run_id: str
    claim: Claim
    files: tuple[BoundFile, ...]
    roots: Roots
    licences: Licences
    implementation_revision: NonEmpty
    configurations: tuple[Configuration, ...]
    measurements: Measurements
    incidents: Incidents
    uncertainty: UncertaintyStatement
    disclosure_check: DisclosureCheck
    human_review: HumanReview
    controls: Controls


class Published(msgspec.Struct, frozen=True, kw_only=True):
    """What a manifest is derived from, decoded (the caller read the files).

    Fields:
        benchmark, run, report, sources, declarations: the documents.
        corpus_root, artifact_count: of the bundled registry (§5).
        judgments: each line of the judgments file with its line number
            (None: none is bundled).
        rubric_digest: BLAKE3 of the bundled rubric (None: none is bundled).
        transcripts: a transcripts file is bundled.
    """

    benchmark: Benchmark
    run: Run
    report: Report
    sources: SourcesFile
    declarations: Declarations | None
    corpus_root: str
    artifact_count: int
    judgments: tuple[tuple[int, Judgment], ...] | None = None
    rubric_digest: str | None = None
    transcripts: bool = False


def uncertainty_of(report: Report) -> UncertaintyStatement:
    """What the report states of uncertainty (its ``uncertainty`` field,
    ECEB-0.1 §16): the estimate's method, resamples and coverage, or that
    it was not estimated."""
    estimate = report.uncertainty
    if estimate.method == "not_estimated":
        return UncertaintyStatement(method="not_estimated", statement="uncertainty was not estimated")
    coverage = f"{estimate.confidence_bps // 100}.{estimate.confidence_bps % 100:02d} %"
    statement = (
        f"{coverage} {estimate.method.replace('_', ' ')} intervals ({estimate.resamples:,} resamples) of each"
        " passing task's token and cost savings across its repetitions and of their means across passing"
        " tasks: the report's *_interval_bps fields"
    )
    return UncertaintyStatement(method=estimate.method, statement=statement)


def report_consistency(published: Published, report_file: str) -> list[Problem]:
    """Every way the report was not computed from the bundled benchmark,
    registry and run (its inputs' ids, roots and run digest, its claim
    class), as problems of ``report_file`` (record ``inputs`` or the top)."""
    report, run = published.report, published.run
    expected_inputs = {
        "benchmark_id": published.benchmark.benchmark_id,
        "task_root": task_root(published.benchmark.tasks),
        "corpus_root": published.corpus_root,
        "artifact_count": published.artifact_count,
        "run_id": run.run_id,
        "run_digest": run_digest(run),
    }
    problems = [
        Problem(
            file=report_file,
            record="inputs",
            field=name,
            message=f"is {getattr(report.inputs, name)!r}; the bundled files make {made!r}",
        )
        for name, made in expected_inputs.items()
        if getattr(report.inputs, name) != made
    ]
    for name in ("claim_class", "non_empirical"):
        if getattr(report, name) != getattr(run, name):
            message = f"is {getattr(report, name)!r}; the run's is {getattr(run, name)!r}"
            problems.append(Problem(file=report_file, field=name, message=message))
    return problems


ExecutionKey = tuple[str, Strategy, int | None, int]


def _execution(key: ExecutionKey) -> str:
    task_id, strategy, budget, repetition = key
    group = strategy if budget is None else f"{strategy}@{budget}"
    return f"task {brief_repr(task_id)} {group} rep {repetition}"


def judgment_consistency(published: Published, *, run_file: str, judgments_file: str) -> list[Problem]:
    """Every way the bundled judgments do not agree with the run (ECEB-0.1
    §9): a line judging an execution another line judges, a line whose
    ``quality_milli`` is not that of the run's observation of its execution
    (task, strategy, budget, repetition), a line judging an execution the
    run has no observation of (each named by its line of ``judgments_file``),
    and an observation with no judgment (named by its record of
    ``run_file``). Empty when no judgments file is bundled."""
    if published.judgments is None:
        return []
    problems: list[Problem] = []
    judged: dict[ExecutionKey, tuple[int, Judgment]] = {}
    for number, judgment in published.judgments:
        key = (judgment.task_id, judgment.strategy, judgment.budget, judgment.repetition)
        if key in judged:
            message = f"judges {_execution(key)}, which line {judged[key][0]} judges already"
            problems.append(Problem(file=judgments_file, record=f"line {number}", message=message))
            continue
        judged[key] = (number, judgment)
    observed: set[ExecutionKey] = set()
    for index, observation in enumerate(published.run.observations):
        key = (observation.task_id, observation.strategy, observation.budget, observation.repetition)
        observed.add(key)
        found = judged.get(key)
        if found is None:
            message = f"{_execution(key)} has no judgment in {judgments_file}"
            problems.append(
                Problem(file=run_file, record=f"observations[{index}]", field="quality_milli", message=message)
            )
        elif found[1].quality_milli != observation.quality_milli:
            message = (
                f"is {found[1].quality_milli}; the run's observation of {_execution(key)} "
                f"(observations[{index}]) has {observation.quality_milli}"
            )
            problems.append(
                Problem(file=judgments_file, record=f"line {found[0]}", field="quality_milli", message=message)
            )
    for key, (number, _) in judged.items():
        if key not in observed:
            message = f"judges {_execution(key)}, of which the run has no observation"
            problems.append(Problem(file=judgments_file, record=f"line {number}", message=message))
    return sorted(problems, key=lambda p: (p.file, _line_of(p.record), p.record))


def _line_of(record: str) -> int:
    """The number in ``line N`` or ``observations[N]`` (problems sorted in file order)."""
    digits = "".join(c for c in record if c.isdigit())
    return int(digits) if digits else 0


def _rubric_digests(run: Run) -> dict[str, list[str]]:
    """Each rubric digest the run's judges name, with the configurations naming it (sorted)."""
    named: dict[str, list[str]] = {}
    for configuration in sorted(run.configurations, key=lambda c: c.configuration_id):
        if configuration.judge.rubric_digest is not None:
            named.setdefault(configuration.judge.rubric_digest, []).append(configuration.configuration_id)
    return dict(sorted(named.items()))


def rubric_problems(published: Published, rubric_file: str) -> list[Problem]:
    """Why the bundled rubric (file ``rubric_file``) is not the one the
    run's judges name (their ``rubric_digest``, ECEB-0.1 §9): another
    digest, or no judge naming any. Empty when none is bundled."""
    digest = published.rubric_digest
    if digest is None:
        return []
    named = _rubric_digests(published.run)
    if not named:
        message = f"has BLAKE3 {digest}; no judge of the run names a rubric_digest, so nothing binds it to the run"
        return [Problem(file=rubric_file, message=message)]
    if digest not in named:
        judges = "; ".join(f"{d} (configuration {', '.join(ids)})" for d, ids in named.items())
        message = f"has BLAKE3 {digest}: not the rubric the run was judged by; its judges name {judges}"
        return [Problem(file=rubric_file, message=message)]
    return []


def judging_reasons(claimed: ClaimClass, published: Published) -> list[str]:
    """Why the bundle does not carry the judge's evidence a model-quality
    claim needs (ECEB-0.1 §9, §15): an empirical run (not ``non_empirical``)
    claiming more than ``conformance_seed``, whose judge names a
    ``rubric_digest``, needs the raw judgments and that rubric bundled.
    Empty otherwise (a run whose judges name no rubric is not concerned)."""
    named = _rubric_digests(published.run)
    if claimed == "conformance_seed" or published.run.non_empirical or not named:
        return []
    what = f"{claimed} is a model-quality claim of an empirical run (ECEB-0.1 §9)"
    reasons = []
    if published.judgments is None:
        reasons.append(
            f"{what}: it needs the raw judgments, and none are bundled (eceb publish takes RUN_STEM.judgments.jsonl "
            "from beside RUN, as eceb run writes it)"
        )
    for digest, ids in named.items():
        if digest != published.rubric_digest:
            have = "none is bundled" if published.rubric_digest is None else "the bundled rubric is another"
            reasons.append(
                f"{what}: it needs the rubric configuration {', '.join(ids)}'s judge names (BLAKE3 {digest}), and "
                f"{have}: give it with --rubric FILE"
            )
    return reasons


def transcript_refusals(published: Published, transcripts_file: str) -> list[Problem]:
    """Why the bundled transcripts may not be published (ECEB-0.1 §16,
    §17): they carry every prompt sent to the model, the corpus text of its
    contexts included, so a corpus with a source declared not
    redistributable refuses them. Empty when none are bundled or every
    source is redistributable."""
    closed = sorted(source.name for source in published.sources.sources if not source.redistributable)
    if not published.transcripts or not closed:
        return []
    names = ", ".join(brief_repr(name) for name in closed[:3]) + (
        f" and {len(closed) - 3} more" if len(closed) > 3 else ""
    )
    message = (
        "the transcripts carry every prompt sent to the model, the corpus text of its contexts included, and the "
        f"sources file declares {names} not redistributable: a bundle never carries text its corpus may not "
        "publish; leave them out (--no-transcripts)"
    )
    return [Problem(file=transcripts_file, message=message)]


def build_manifest(
    published: Published, *, claimed: ClaimClass, implementation_revision: str, files: Sequence[BoundFile]
) -> PublicationManifest:
    """The manifest of ``published``: every §16 item derived from the
    documents, ``files`` bound (sorted by path), the class ``claimed``."""
    run, report, declarations = published.run, published.report, published.declarations
    reviews = tuple(sorted((c.configuration_id, c.judge.human_review) for c in run.configurations))
    weakest = min((review for _, review in reviews), key=_REVIEW_ORDER.index)
    sources = tuple(
        sorted(
            (
                SourceLicence(name=s.name, license_spdx=s.license_spdx, redistributable=s.redistributable)
                for s in published.sources.sources
            ),
            key=lambda s: s.name,
        )
    )
    return PublicationManifest(
        schema=PUBLICATION_SCHEMA,
        benchmark_id=published.benchmark.benchmark_id,
        run_id=run.run_id,
        claim=Claim(claimed=claimed, run_claim_class=run.claim_class, non_empirical=run.non_empirical),
        files=tuple(sorted(files, key=lambda f: f.path)),
        roots=Roots(
            corpus_root=published.corpus_root,
            task_root=task_root(published.benchmark.tasks),
            artifact_count=published.artifact_count,
        ),
        licences=Licences(
            corpus=published.sources.corpus, public=all(s.redistributable for s in sources), sources=sources
        ),
        implementation_revision=implementation_revision,
        configurations=tuple(sorted(run.configurations, key=lambda c: c.configuration_id)),
        measurements=Measurements(
            run_digest=run_digest(run),
            observations=len(run.observations),
            auxiliary_costs=len(run.auxiliary_costs),
        ),
        incidents=Incidents(
            declared=declarations is not None,
            exclusions=declarations.exclusions if declarations is not None else (),
            timeouts=declarations.timeouts if declarations is not None else (),
            retries=tuple(sorted((a for a in run.auxiliary_costs if a.kind == "retry"), key=canonical_json)),
            failed_tasks=tuple(sorted(t.task_id for t in report.tasks if not t.passed)),
        ),
        uncertainty=uncertainty_of(report),
        disclosure_check=report.disclosure_check,
        human_review=HumanReview(status=weakest, by_configuration=reviews),
        controls=Controls(
            sampling=declarations.sampling if declarations is not None else "",
            authorization=declarations.authorization if declarations is not None else "",
            reproducibility=declarations.reproducibility if declarations is not None else "",
        ),
    )


def differences(said: Any, made: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf where two JSON-like values (``msgspec.to_builtins`` of a
    document) differ: ``(json path, said, made)``, in document order; a
    list of another length, or a value of another type, is one difference."""
    if isinstance(said, dict) and isinstance(made, dict):
        found = []
        for key in sorted(said.keys() | made.keys()):
            inner = f"{path}.{key}" if path else str(key)
            found.extend(differences(said.get(key), made.get(key), inner))
        return found
    if isinstance(said, list) and isinstance(made, list) and len(said) == len(made):
        return [
            d for index, pair in enumerate(zip(said, made, strict=True)) for d in differences(*pair, f"{path}[{index}]")
        ]
    return [] if said == made and type(said) is type(made) else [(path, said, made)]


def manifest_differences(said: PublicationManifest, made: PublicationManifest, file: str) -> list[Problem]:
    """Every field of manifest ``said`` (file ``file``) that is not what the
    bundle's files make (``made``, :func:`build_manifest` of them), bound
    files aside (checked against the bytes themselves)."""
    left, right = msgspec.to_builtins(said), msgspec.to_builtins(made)
    for value in (left, right):  # stated by the publisher, not derived (the claim is judged apart)
        value.pop("files")
        value.pop("implementation_revision")
        value["claim"].pop("claimed")
    return [
        Problem(file=file, field=where, message=f"says {brief_repr(was)}; the bundled files make {brief_repr(now)}")
        for where, was, now in differences(left, right)
    ]
