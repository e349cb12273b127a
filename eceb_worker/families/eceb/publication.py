"""The publication manifest (``symgliph.eceb/publication-v0.1``): what a
bundle of ``eceb publish`` binds, item by item of ECEB-0.1 §16.

A bundle is a directory: the benchmark, its registry, the run, the report,
the sources file and (optionally) the declarations file, each bound by its
size and BLAKE3 digest (:class:`BoundFile`), and ``manifest.json``, which
states every §16 item as it is derived from those files
(:func:`build_manifest`). ``eceb publish --check`` derives it again from
the bundle's files and names every field that differs
(:func:`manifest_differences`). Pure: the callers read and write the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import Digest
from eceb_worker.core.lenient import brief_repr
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.benchmark import Benchmark, task_root
from eceb_worker.families.eceb.declarations import Declarations, Exclusion, SourcesFile, Timeout
from eceb_worker.families.eceb.disclosure import DisclosureCheck
from eceb_worker.families.eceb.report import Report, run_digest
from eceb_worker.families.eceb.run import AuxiliaryCost, Configuration, Run
from eceb_worker.families.eceb.vocabulary import ClaimClass

__all__ = [
    "MANIFEST_NAME",
    "PUBLICATION_SCHEMA",
    "REQUIRED_ROLES",
    "BoundFile",
    "Claim",
    "Measurements",
    "PublicationManifest",
    "Published",
    "build_manifest",
    "differences",
    "manifest_differences",
    "report_consistency",
]

PUBLICATION_SCHEMA: Final = "symgliph.eceb/publication-v0.1"
MANIFEST_NAME: Final = "manifest.json"
"""The manifest's file name in a bundle (the one file no manifest binds)."""

Role = Literal["benchmark", "registry", "run", "report", "sources", "declarations"]
REQUIRED_ROLES: Final[tuple[Role, ...]] = ("benchmark", "registry", "run", "report", "sources")
"""The files every bundle binds; ``declarations`` is optional."""

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
    """

    benchmark: Benchmark
    run: Run
    report: Report
    sources: SourcesFile
    declarations: Declarations | None
    corpus_root: str
    artifact_count: int


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
