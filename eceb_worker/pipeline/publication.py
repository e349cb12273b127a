"""Publication bundles (ECEB-0.1 §15, §16): ``eceb publish`` assembles one
(:func:`assemble_bundle`, then :func:`write_bundle`), ``eceb publish
--check`` verifies one (:func:`check_bundle`).

A bundle is a new directory::

    manifest.json      the manifest (canonical JSON): every §16 item, every file bound
    benchmark.json     the benchmark
    <registry path>    its registry, at the path the benchmark names (registry.jsonl)
    run.json           the run: the raw per-repetition measurements
    report.json        the report
    sources.json       the corpus's sources, licences and redistribution status
    declarations.json  the declarations (controls, exclusions, timeouts), when given
    run.transcripts.jsonl  every provider call of the run, when eceb run wrote it beside the run
    run.judgments.jsonl    the judge's raw judgments, when eceb run wrote them beside the run
    rubric<.suffix>        the judge's rubric, when given (--rubric)

The transcripts and judgments are found beside the run by the names
``eceb run`` gives them (:func:`made_files`); the judgments must agree with
the run and a rubric must be the one its judge names (ECEB-0.1 §9).

The check re-hashes every bound file, names every one missing or changed
and every file not bound, derives the manifest again from the bundled
files, judges the claim class, and recomputes the report from the bundled
benchmark and run and the corpus with the one evaluation
(:func:`eceb_worker.pipeline.jobs.evaluate`), comparing bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.lenient import brief_repr
from eceb_worker.core.paths import path_problems
from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import InputError, Problem, PublicationRefused, VerificationError
from eceb_worker.families.eceb.claims import claim_evidence, claim_reasons
from eceb_worker.families.eceb.declarations import Declarations, SourcesFile
from eceb_worker.families.eceb.disclosure import DEFAULT_DISCLOSURE_CHECK, DISCLOSURE_OFF
from eceb_worker.families.eceb.options import IN_PROCESS_EVALUATION
from eceb_worker.families.eceb.publication import (
    MANIFEST_NAME,
    REQUIRED_ROLES,
    BoundFile,
    Judgment,
    PublicationManifest,
    Published,
    Transcript,
    build_manifest,
    decode_lines,
    differences,
    judging_reasons,
    judgment_consistency,
    manifest_differences,
    report_consistency,
    rubric_problems,
    transcript_refusals,
)
from eceb_worker.families.eceb.redistribution import disclosure_refusals
from eceb_worker.families.eceb.report import Report, encode_report
from eceb_worker.families.eceb.run import AuxiliaryCost, Observation, Run
from eceb_worker.families.eceb.uncertainty import NOT_ESTIMATED, UncertaintyMode
from eceb_worker.families.eceb.vocabulary import ClaimClass
from eceb_worker.io.bundles import list_tree, write_tree
from eceb_worker.io.files import read_input
from eceb_worker.pipeline.embedded import evaluate
from eceb_worker.pipeline.inputs import check_inputs
from eceb_worker.pipeline.jobs import Executor
from eceb_worker.pipeline.reports import decode_report

__all__ = [
    "assemble_bundle",
    "check_bundle",
    "made_files",
    "manifest_problems",
    "sources_problems",
    "write_bundle",
]

BUNDLE_NAMES: Final = {
    "benchmark": "benchmark.json",
    "run": "run.json",
    "report": "report.json",
    "sources": "sources.json",
    "declarations": "declarations.json",
    "transcripts": "run.transcripts.jsonl",
    "judgments": "run.judgments.jsonl",
}
"""Where each file but the registry and the rubric lies in a bundle (the
registry: where the benchmark names it; the rubric: :func:`_rubric_name`)."""

EXTRA_ROLES: Final = ("transcripts", "judgments", "rubric")
"""The optional files of a made run: read by :func:`_extras`."""

_SUFFIX: Final = re.compile(r"\.[A-Za-z0-9]{1,16}")


def _rubric_name(path: Path) -> str:
    """The rubric's name in a bundle: ``rubric`` and the given file's suffix (``.md``), when a plain one."""
    return "rubric" + (path.suffix if _SUFFIX.fullmatch(path.suffix) else "")


def made_files(run_at: Path) -> dict[str, Path]:
    """The transcripts and judgments ``eceb run`` wrote beside the run file
    ``run_at`` (``RUN_STEM.transcripts.jsonl``, ``RUN_STEM.judgments.jsonl``),
    by role, each when a file of that name is there."""
    from eceb_worker.pipeline.making.session import RunOutputs

    outputs = RunOutputs.beside(run_at)
    found = {"transcripts": outputs.transcripts, "judgments": outputs.judgments}
    return {role: path for role, path in found.items() if path.is_symlink() or path.exists()}


class Bundle(msgspec.Struct, frozen=True, kw_only=True):
    """A bundle assembled in memory: its manifest and every file's bytes."""

    manifest: PublicationManifest
    files: tuple[tuple[str, bytes], ...]

    def manifest_bytes(self) -> bytes:
        """The manifest file's bytes: canonical JSON and a newline."""
        return canonical_json(self.manifest) + b"\n"


class CheckedBundle(msgspec.Struct, frozen=True, kw_only=True):
    """A bundle that verified: its manifest and the manifest's digest."""

    manifest: PublicationManifest
    manifest_digest: str


class _Extras(msgspec.Struct, frozen=True, kw_only=True):
    """The optional files of a made run, read: each role's bundle name and
    bytes, the judgments decoded, the rubric's digest."""

    read: dict[str, tuple[str, bytes]]
    judgments: tuple[tuple[int, Judgment], ...] | None = None
    rubric_digest: str | None = None


def _extras(extras: Mapping[str, Path], problems: list[Problem]) -> _Extras:
    """Read the transcripts, judgments and rubric of ``extras`` (by role),
    each JSON Lines file decoded line by line; every problem is added to
    ``problems``."""
    read: dict[str, tuple[str, bytes]] = {}
    judgments = None
    for role in EXTRA_ROLES:
        path = extras.get(role)
        if path is None:
            continue
        try:
            data = read_input(path)
        except InputError as error:
            problems.extend(error.problems)
            continue
        read[role] = (_rubric_name(path) if role == "rubric" else BUNDLE_NAMES[role], data)
        if role == "judgments":
            lines, found = decode_lines(data, Judgment, str(path))
            judgments = tuple(lines)
            problems.extend(found)
        elif role == "transcripts":
            problems.extend(decode_lines(data, Transcript, str(path))[1])
    rubric = read.get("rubric")
    return _Extras(read=read, judgments=judgments, rubric_digest=digest_bytes(rubric[1]) if rubric else None)


def _published(
    benchmark_at: Path,
    run_at: Path,
    report_at: Path,
    sources_at: Path,
    declarations_at: Path | None,
    extras: Mapping[str, Path] | None = None,
) -> tuple[Published, dict[str, tuple[str, bytes]]]:
    """Read and check the inputs together (``extras``: the transcripts,
    judgments and rubric by role, when bundled); every problem of every file
    is raised at once (:class:`InputError`). Returns the documents and each
    role's file name and bytes (the registry under the benchmark's path)."""
    problems: list[Problem] = []
    inputs = None
    try:
        inputs = check_inputs(benchmark_at, run_at)
    except InputError as error:
        problems.extend(error.problems)
    read: dict[str, tuple[str, bytes]] = {}
    decoded: dict[str, object] = {}
    wanted: dict[str, tuple[Path, type[msgspec.Struct] | None]] = {
        "run": (run_at, Run),
        "report": (report_at, None),
        "sources": (sources_at, SourcesFile),
    }
    if declarations_at is not None:
        wanted["declarations"] = (declarations_at, Declarations)
    for role, (path, struct) in wanted.items():
        try:
            data = read_input(path)
            read[role] = (BUNDLE_NAMES[role], data)
            if struct is None:
                decoded[role] = decode_report(data, str(path))
            elif struct is Run:
                items: dict[str, type[msgspec.Struct]] = {
                    "observations": Observation,
                    "auxiliary_costs": AuxiliaryCost,
                }
                if inputs is not None:  # otherwise its problems are listed already
                    decoded[role] = decode_document(data, Run, file=str(path), item_fields=items)
            else:
                decoded[role] = decode_document(data, struct, file=str(path))
        except InputError as error:
            problems.extend(error.problems)
    made = _extras(extras or {}, problems)
    if problems or inputs is None:
        raise InputError(problems)
    read.update(made.read)
    read["benchmark"] = (BUNDLE_NAMES["benchmark"], read_input(benchmark_at))
    registry_path = inputs.benchmark.registry.path
    read["registry"] = (registry_path, read_input(Path(inputs.registry_location)))
    taken = {name for role, name in BUNDLE_NAMES.items() if role != "registry"} | {MANIFEST_NAME}
    taken |= {name for role, (name, _) in made.read.items() if role == "rubric"}
    if registry_path in taken or any(registry_path.startswith(name + "/") for name in taken):
        message = f"{registry_path!r} is a name a bundle keeps for another file: bundle it under another name"
        raise InputError([Problem(file=str(benchmark_at), field="registry.path", message=message)])
    published = Published(
        benchmark=inputs.benchmark,
        run=decoded["run"],  # type: ignore[arg-type]
        report=decoded["report"],  # type: ignore[arg-type]
        sources=decoded["sources"],  # type: ignore[arg-type]
        declarations=decoded.get("declarations"),  # type: ignore[arg-type]
        corpus_root=inputs.registry.corpus_root,
        artifact_count=inputs.registry.artifact_count,
        judgments=made.judgments,
        rubric_digest=made.rubric_digest,
        transcripts="transcripts" in made.read,
    )
    return published, read


def sources_problems(sources: SourcesFile, file: str) -> list[Problem]:
    """Every problem of a decoded sources file ``file`` beyond its schema: a source named twice."""
    seen: set[str] = set()
    problems = []
    for index, source in enumerate(sources.sources):
        if source.name in seen:
            message = f"source {source.name!r} is declared more than once"
            problems.append(Problem(file=file, record=f"sources[{index}]", field="name", message=message))
        seen.add(source.name)
    return problems


def _claim_problems(published: Published, claimed: ClaimClass, file: str) -> list[Problem]:
    """Every reason the evidence does not support ``claimed`` (ECEB-0.1 §15),
    the judge's evidence of a model-quality claim (§9) included."""
    evidence = claim_evidence(
        published.run,
        published.sources,
        published.declarations,
        disclosure_checked=published.report.disclosure_check.enabled,
    )
    reasons = [*claim_reasons(claimed, evidence), *judging_reasons(claimed, published)]
    return [Problem(file=file, field="claim.claimed", message=reason) for reason in reasons]


def _made_run_problems(published: Published, at: Mapping[str, Path]) -> list[Problem]:
    """The judgments that do not agree with the run, and a rubric that is
    not the one the run's judge names (``at``: each role's file)."""
    problems = judgment_consistency(published, run_file=str(at["run"]), judgments_file=str(at.get("judgments")))
    if "rubric" in at:
        problems.extend(rubric_problems(published, str(at["rubric"])))
    return problems


def assemble_bundle(
    benchmark_at: Path,
    run_at: Path,
    report_at: Path,
    *,
    sources_at: Path,
    declarations_at: Path | None,
    implementation_revision: str,
    claimed: ClaimClass | None,
    rubric_at: Path | None = None,
    transcripts: bool = True,
) -> Bundle:
    """Read, check and bind the inputs of a bundle (nothing is written).

    ``claimed`` None claims the run's own class. The transcripts and
    judgments ``eceb run`` wrote beside the run (:func:`made_files`) are
    bound too (the transcripts unless ``transcripts`` is false), and the
    judge's rubric ``rubric_at`` when given. Raises :class:`InputError`
    with every problem of the inputs (a report not computed from this
    benchmark, registry and run, judgments that do not agree with the run,
    a rubric that is not the one the run's judge names included);
    :class:`PublicationRefused` with every reason the evidence does not
    support the claim (ECEB-0.1 §9, §15), every task whose answers disclose
    restricted text or a marked secret when a source is not redistributable
    (the run is bundled verbatim:
    :func:`~eceb_worker.families.eceb.redistribution.disclosure_refusals`),
    and transcripts of such a corpus.
    """
    at: dict[str, Path] = {"run": run_at, **made_files(run_at)}
    if not transcripts:
        at.pop("transcripts", None)
    if rubric_at is not None:
        at["rubric"] = rubric_at
    published, read = _published(benchmark_at, run_at, report_at, sources_at, declarations_at, at)
    problems = report_consistency(published, str(report_at))
    problems.extend(sources_problems(published.sources, str(sources_at)))
    problems.extend(_made_run_problems(published, at))
    if problems:
        raise InputError(problems)
    claim = claimed or published.run.claim_class
    refused = _claim_problems(published, claim, "--claim")
    refused.extend(disclosure_refusals(published, str(report_at)))
    refused.extend(transcript_refusals(published, str(at.get("transcripts"))))
    if refused:
        raise PublicationRefused(refused)
    files = [
        BoundFile(role=role, path=name, size_bytes=len(data), digest=digest_bytes(data))  # type: ignore[arg-type]
        for role, (name, data) in read.items()
    ]
    manifest = build_manifest(published, claimed=claim, implementation_revision=implementation_revision, files=files)
    return Bundle(manifest=manifest, files=tuple(sorted(read.values())))


def write_bundle(directory: Path, bundle: Bundle) -> str:
    """Write ``bundle`` as the new directory ``directory`` (atomically);
    returns the manifest's digest. Raises ``OutputError``."""
    data = bundle.manifest_bytes()
    write_tree(directory, [*bundle.files, (MANIFEST_NAME, data)])
    return digest_bytes(data)


def manifest_problems(
    manifest: PublicationManifest, file: str, tree_links: Sequence[str] = (), tree_others: Sequence[str] = ()
) -> list[Problem]:
    """What makes a decoded manifest ``file`` unusable (bad input): a bound
    path that is not portable or escapes the bundle, a path or role bound
    twice, a required role missing, a symbolic link or anything else that is
    not a regular file or a directory (a FIFO, a socket, a device) in the
    bundle (``tree_links``, ``tree_others``: none for a manifest read alone)."""
    problems: list[Problem] = []
    paths: set[str] = set()
    roles: set[str] = set()
    for index, bound in enumerate(manifest.files):
        record = f"files[{index}]"
        reasons = path_problems(bound.path)
        if reasons or bound.path == MANIFEST_NAME:
            why = "; ".join(reasons) or "is the manifest itself"
            message = f"{bound.path!r} {why}: a bound file is a regular file inside the bundle"
            problems.append(Problem(file=file, record=record, field="path", message=message))
        if bound.path in paths:
            problems.append(Problem(file=file, record=record, field="path", message=f"{bound.path!r} bound twice"))
        if bound.role in roles:
            problems.append(Problem(file=file, record=record, field="role", message=f"{bound.role!r} bound twice"))
        paths.add(bound.path)
        roles.add(bound.role)
    for role in REQUIRED_ROLES:
        if role not in roles:
            problems.append(Problem(file=file, field="files", message=f"binds no {role} file"))
    for link in tree_links:
        message = f"{link!r} is a symbolic link: a bundle holds regular files only, never a link"
        problems.append(Problem(file=file, record="files", field="path", message=message))
    for other in tree_others:
        message = f"{other!r} is not a regular file (a FIFO, a socket or a device): a bundle holds regular files only"
        problems.append(Problem(file=file, record="files", field="path", message=message))
    return problems


def _file_findings(directory: Path, manifest: PublicationManifest, files: Sequence[str]) -> list[Problem]:
    """Every bound file missing or changed, every file not bound."""
    present = set(files)
    findings = []
    for bound in manifest.files:
        name = str(directory / bound.path)
        if bound.path not in present:
            findings.append(Problem(file=name, message=f"missing: the manifest binds it as the {bound.role}"))
            continue
        data = read_input(directory / bound.path)
        size, digest = len(data), digest_bytes(data)
        if (size, digest) != (bound.size_bytes, bound.digest):
            message = (
                f"changed: the manifest binds {bound.size_bytes} bytes of BLAKE3 {bound.digest}; "
                f"the file has {size} bytes of BLAKE3 {digest}"
            )
            findings.append(Problem(file=name, message=message))
    bound_paths = {bound.path for bound in manifest.files} | {MANIFEST_NAME}
    findings.extend(
        Problem(file=str(directory / path), message="added: not bound by the manifest")
        for path in sorted(present - bound_paths)
    )
    return findings


def check_bundle(
    directory: Path,
    corpus: StorageSpec,
    *,
    executor: Executor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
) -> CheckedBundle:
    """Verify the bundle in ``directory`` (ECEB-0.1 §15, §16), recomputing
    its report from the bundled benchmark and run and ``corpus``.

    Raises :class:`InputError` (every problem) when the manifest is not one
    (not JSON, wrong types, a path escaping the bundle, a symbolic link) or
    a bundled input is invalid; :class:`PublicationRefused` naming every
    bound file missing or changed and every file not bound, or else every
    manifest field the files do not make, every claim the evidence does not
    support (ECEB-0.1 §9, §15), every line of the bundled judgments that
    does not agree with the run, a bundled rubric that is not the one the
    run's judge names, and a report that does not recompute byte for byte;
    :class:`VerificationError` when the corpus does not verify (and nothing
    else is wrong); ``StorageError`` when it cannot be read.
    """
    manifest_file = str(directory / MANIFEST_NAME)
    try:
        tree = list_tree(directory)
    except OSError as exc:
        message = f"cannot read the bundle: {exc.strerror or exc}"
        raise InputError([Problem(file=str(directory), message=message)]) from None
    data = read_input(directory / MANIFEST_NAME)
    manifest = decode_document(data, PublicationManifest, file=manifest_file)
    problems = manifest_problems(manifest, manifest_file, tree.links, tree.others)
    if problems:
        raise InputError(problems)
    findings = _file_findings(directory, manifest, tree.files)
    if findings:
        raise PublicationRefused(findings)
    role: dict[str, Path] = {bound.role: directory / bound.path for bound in manifest.files}
    published, _ = _published(
        role["benchmark"], role["run"], role["report"], role["sources"], role.get("declarations"), role
    )
    findings.extend(report_consistency(published, str(role["report"])))
    findings.extend(sources_problems(published.sources, str(role["sources"])))
    findings.extend(_made_run_problems(published, role))
    findings.extend(_claim_problems(published, manifest.claim.claimed, manifest_file))
    findings.extend(disclosure_refusals(published, str(role["report"])))
    findings.extend(transcript_refusals(published, str(role.get("transcripts"))))
    made = build_manifest(
        published,
        claimed=manifest.claim.claimed,
        implementation_revision=manifest.implementation_revision,
        files=manifest.files,
    )
    findings.extend(manifest_differences(manifest, made, manifest_file))
    findings.extend(
        _recomputed(
            role["benchmark"], role["run"], role["report"], published.report, corpus, executor, shard_bytes, findings
        )
    )
    if findings:
        raise PublicationRefused(findings)
    return CheckedBundle(manifest=manifest, manifest_digest=digest_bytes(data))


def _recomputed(
    benchmark_at: Path,
    run_at: Path,
    report_at: Path,
    stated: Report,
    corpus: StorageSpec,
    executor: Executor | None,
    shard_bytes: int,
    findings: list[Problem],
) -> list[Problem]:
    """The report recomputed (:func:`~eceb_worker.pipeline.jobs.evaluate`)
    with the options the bundled report ``stated`` says it was evaluated
    with (``eceb evaluate --no-disclosure-check``, ``--uncertainty none``;
    a setting eceb evaluate does not offer is recomputed with the default,
    so it differs) and compared byte for byte with the bundled one: each
    differing field named (the first 20), or nothing. A corpus that does
    not verify is one finding when there are others (``findings``), else
    raised."""
    inputs = check_inputs(benchmark_at, run_at, shard_bytes=shard_bytes)
    disclosure = DISCLOSURE_OFF if stated.disclosure_check == DISCLOSURE_OFF else DEFAULT_DISCLOSURE_CHECK
    uncertainty: UncertaintyMode = "none" if stated.uncertainty == NOT_ESTIMATED else "bootstrap"
    try:
        report, _ = evaluate(
            inputs,
            corpus,
            executor=executor,
            shard_bytes=shard_bytes,
            evaluation=msgspec.structs.replace(
                IN_PROCESS_EVALUATION, disclosure_check=disclosure, uncertainty=uncertainty
            ),
        )
    except VerificationError as error:
        if not findings:
            raise
        return [Problem(file=corpus.source, message=f"the report could not be recomputed: {error}")]
    bundled = read_input(report_at)
    data = encode_report(report)
    if data == bundled:
        return []
    said, made = msgspec.json.decode(bundled), msgspec.json.decode(data)  # lists both, to compare item by item
    changed = differences(said, made)
    shown = [
        Problem(
            file=str(report_at),
            field=where,
            message=f"is {brief_repr(was)}; recomputed from the corpus: {brief_repr(now)}",
        )
        for where, was, now in changed[:20]
    ]
    more = len(changed) - len(shown)
    summary = f" ({more} more fields differ)" if more > 0 else ""
    head = "does not recompute byte for byte from the bundled benchmark, run and the corpus" + summary
    return [Problem(file=str(report_at), message=head), *shown]
