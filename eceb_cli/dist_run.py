"""``eceb-dist run``: make a run on the cluster (ECEB-0.1 §7-§9): the same
inputs as ``eceb run``, its executions sharded into Celery tasks, every paid
call through one journal in Redis (nothing paid twice, the authorized count
and the spending stop held across workers), the providers' limits shared by
every worker, and the run, transcripts and judgments written to object
storage as ``eceb run`` writes them (docs/DISTRIBUTED.md, "Making a run on
the cluster").
"""

from __future__ import annotations

import posixpath
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Final

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path
from eceb_cli.cluster_commands import cluster_endpoint, cluster_options, connect, submit_job
from eceb_cli.conventions import exits
from eceb_cli.outcomes import job_state
from eceb_cli.submission import DEFAULT_CONCURRENCY, corpus_argument, object_argument, registry_url_of
from eceb_worker.errors import InputError, Problem
from eceb_worker.pipeline.messages import JobKind, JobMessage, MakingOptions

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.cluster.state import JobRecord
    from eceb_worker.families.eceb.making.profile import RunProfile

__all__ = ["DEFAULT_SHARD_EXECUTIONS", "making_message", "run"]

DEFAULT_SHARD_EXECUTIONS = 100
"""Executions per execution shard (one task each)."""

_VARIABLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""An environment variable's portable name (POSIX): what ``api_key_env`` must be."""


def making_message(
    benchmark: str,
    profile_path: Path,
    *,
    corpus: str,
    out: str,
    endpoint_url: str | None,
    shard_executions: int = DEFAULT_SHARD_EXECUTIONS,
    rerun_unknown: bool = False,
    journal_id: str | None = None,
    job_id: str | None = None,
) -> JobMessage:
    """The message of the job making a run of ``benchmark`` (``s3://`` or an
    absolute path every worker sees) with the profile at ``profile_path``
    (read and checked here, with its rubric: every problem raised together
    as :class:`~eceb_worker.errors.InputError`), written to ``out``
    (``s3://bucket/key.json``: its transcripts and judgments go beside it,
    ``click.UsageError`` for another name). ``journal_id``: the journal of
    an earlier job to go on with (the job's own id when ``None``).

    Besides the profile's own checks, a local ``benchmark`` must be a
    benchmark file here (the workers read it at the same path), and the
    profile must carry no credential, since the message is kept by the
    cluster: every ``api_key_env`` is a variable's name (never the key),
    and no base URL or context-system URL holds user information, a
    secret-named query parameter or a fragment. Every problem is raised
    together (:class:`~eceb_worker.errors.InputError`), never quoting a
    value that may be a credential."""
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.families.eceb.making.profile import LlmJudge
    from eceb_worker.pipeline.making.inputs import load_profile
    from eceb_worker.pipeline.messages import JobInputs

    benchmark = object_argument(benchmark, "BENCHMARK", local=True)
    corpus = corpus_argument(corpus)
    out = _run_object(object_argument(out, "--out"))
    problems = _local_benchmark_problems(benchmark)
    try:
        profile = load_profile(profile_path)
    except InputError as exc:
        raise InputError([*problems, *exc.problems]) from None
    problems += _credential_problems(profile, str(profile_path))
    if problems:
        raise InputError(problems)
    directory = profile_path.resolve().parent
    rubric = ""
    if isinstance(profile.judge, LlmJudge):
        rubric = (directory / profile.judge.rubric).read_text(encoding="utf-8")
    job_id = job_id or uuid.uuid4().hex
    return JobMessage(
        job_id=job_id,
        kind=JobKind.MAKE,
        inputs=JobInputs(benchmark=benchmark, endpoint_url=endpoint_url),
        corpus=StorageSpec(source=corpus, endpoint_url=endpoint_url, concurrency=DEFAULT_CONCURRENCY),
        out=out,
        shard_bytes=1,
        making=MakingOptions(
            profile=profile,
            profile_dir=str(directory),
            rubric=rubric,
            journal_id=journal_id or job_id,
            shard_executions=shard_executions,
            rerun_unknown=rerun_unknown,
        ),
    )


def _run_object(out: str) -> str:
    """``--out`` names the run's object: a key without an empty segment
    whose last segment ends in ``.json`` after a name (``run.json``), so
    that its transcripts and judgments, named from its stem, lie beside it
    as ``eceb run`` names them. ``click.UsageError`` otherwise."""
    name = posixpath.basename(out)
    if "//" in out.removeprefix("s3://"):
        raise click.UsageError(
            "--out has an empty path segment (//): its transcripts and judgments would not lie beside it"
        )
    if not name.endswith(".json") or name == ".json":
        raise click.UsageError(
            f"--out must name the run's object, ending in .json (such as s3://bucket/runs/run.json): "
            f"its transcripts and judgments are written beside it as NAME.transcripts.jsonl and "
            f"NAME.judgments.jsonl; {posixpath.basename(out) or 'a key ending in /'!r} does not"
        )
    return out


def _local_benchmark_problems(benchmark: str) -> list[Problem]:
    """What is wrong with a local ``benchmark`` as seen here (the workers
    read it at the same path): missing, not a file, unreadable, or a file
    of another kind (a run given as the benchmark). An ``s3://`` benchmark
    is checked when the job is queued."""
    from eceb_worker.core.urls import is_s3_url
    from eceb_worker.documents import HEAD_BYTES, wrong_kind

    if is_s3_url(benchmark):
        return []
    try:
        with open(benchmark, "rb") as file:
            head = file.read(HEAD_BYTES)
    except FileNotFoundError:
        return [Problem(file=benchmark, message="cannot read: no such file (the workers read it at this path)")]
    except IsADirectoryError:
        return [Problem(file=benchmark, message="cannot read: is a directory, not a benchmark file")]
    except OSError as exc:
        return [Problem(file=benchmark, message=f"cannot read: {exc.strerror or type(exc).__name__}")]
    problem = wrong_kind(benchmark, head, "benchmark")
    return [] if problem is None else [problem]


def _credential_problems(profile: RunProfile, where: str) -> list[Problem]:
    """The places where ``profile`` (read from ``where``) would carry a
    credential into the job's message (kept by the cluster a week): an
    ``api_key_env`` that is no variable's name (a key pasted there), a URL
    with user information, a secret-named query parameter or a fragment.
    Problems name the field, never its value (a URL is shown redacted)."""
    from eceb_worker.core.urls import redact_url
    from eceb_worker.families.eceb.making.profile import LlmJudge

    models = [("model", profile.model)]
    if isinstance(profile.judge, LlmJudge):
        models.append(("judge.model", profile.judge.model))
    problems = [
        Problem(
            file=where,
            record=record,
            field="api_key_env",
            message="is not the name of an environment variable (letters, digits and _, not starting with a "
            "digit): name the variable holding the key on the workers, never the key itself",
        )
        for record, spec in models
        if spec.api_key_env and not _VARIABLE_NAME.fullmatch(spec.api_key_env)
    ]
    urls = [(record, "base_url", spec.base_url) for record, spec in models]
    urls.append(("context_system", "url", profile.context_system.url))
    problems += [
        Problem(
            file=where,
            record=record,
            field=field,
            message=f"{redact_url(url)!r} holds a credential (user information, a secret-named query "
            "parameter or a fragment): the job's message is kept by the cluster; the key comes from "
            "api_key_env or api_key_file on each worker",
        )
        for record, field, url in urls
        if url and redact_url(url) != url
    ]
    return problems


def _check_outputs(message: JobMessage) -> None:
    """Refuse (:class:`~eceb_worker.errors.OutputError`, before anything is
    queued) a run, transcripts or judgments object that is the benchmark or
    its registry, or that lies under an ``s3://`` corpus prefix (a corpus
    holds exactly its registered artifacts: a run written there would
    replace one, or make the corpus fail its verification). A benchmark
    that cannot be read here is left to the checks that follow."""
    from eceb_worker.core.urls import is_s3_url, parse_s3_url
    from eceb_worker.errors import OutputError, StorageError
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.making.shards import outputs_of

    inputs = [message.inputs.benchmark]
    if is_s3_url(message.inputs.benchmark):
        try:
            registry = registry_url_of(ObjectStore(message.inputs.endpoint_url), message.inputs.benchmark)
        except (InputError, StorageError):
            registry = ""  # the benchmark's own problems are reported by the checks that follow
        inputs += [registry] if registry else []
    corpus = parse_s3_url(message.corpus.source) if message.corpus.is_s3 else None
    for out in outputs_of(message.out):
        bucket, key = parse_s3_url(out)
        for read in inputs:
            if is_s3_url(read) and parse_s3_url(read) == (bucket, key):
                raise OutputError(
                    f"{out}: is an input of this job (its benchmark or registry); the run would overwrite it"
                )
        if (
            corpus is not None
            and bucket == corpus[0]
            and (not corpus[1] or key.startswith(corpus[1].rstrip("/") + "/"))
        ):
            raise OutputError(
                f"{out}: lies under the corpus {message.corpus.source}, which holds exactly its registered "
                "artifacts: write the run elsewhere"
            )


class _Earlier(msgspec.Struct, frozen=True):
    """The journal a resumed job goes on with, and the making options of the
    job named (``None`` when its first step's record is gone)."""

    journal: str
    making: MakingOptions | None


def _earlier(cluster: Cluster, job_id: str) -> _Earlier:
    """What ``--resume JOB`` goes on with. Exit 7 when there is no such
    job; :class:`~eceb_worker.errors.InputError` (exit 3) when it made no
    run, when it is done (its run made, its partials deleted), or when a
    job using its journal has not ended (two jobs on one journal would take
    each other's calls in flight for calls of unknown outcome)."""
    from eceb_worker.cluster.state import Phase
    from eceb_worker.cluster.steps import COORDINATE
    from eceb_worker.pipeline.messages import job_message

    state = job_state(cluster, job_id)
    if state.kind is not JobKind.MAKE:
        message = (
            f"job {job_id} made no run (it is a {state.kind.value} job): --resume goes on with a made run's journal"
        )
        raise InputError([Problem(file="--resume", message=message)])
    if state.phase is Phase.DONE:
        message = (
            f"job {job_id} made its run already ({state.out}): nothing is left to make "
            "(its shards' partials are gone); make a new run without --resume"
        )
        raise InputError([Problem(file="--resume", message=message)])
    journal = state.journal or job_id
    running = _running_on(cluster, journal)
    if running is not None:
        message = (
            f"job {running.job_id} is still making a run with the journal {journal} ({running.phase.value}): "
            f"wait for it (`eceb-dist wait {running.job_id}`) or cancel it before going on"
        )
        raise InputError([Problem(file="--resume", message=message)])
    step = cluster.work.step(job_id, COORDINATE)
    making = None
    if step is not None and step.args:
        try:
            making = job_message(step.args[0]).making
        except msgspec.ValidationError:
            making = None
    return _Earlier(journal=journal, making=making)


def _running_on(cluster: Cluster, journal: str) -> JobRecord | None:
    """A made run's job in flight whose journal is ``journal``, ``None`` when none is."""
    from eceb_worker.errors import StorageError

    for job_id in cluster.store.active():
        try:
            state = cluster.store.get(job_id)
        except StorageError:  # a malformed record of another job: not this journal's to judge
            continue
        running = state is not None and state.kind is JobKind.MAKE and not state.phase.ended
        if running and state is not None and (state.journal or job_id) == journal:
            return state
    return None


def _shard_size(job_id: str, given: int, explicit: bool, earlier: _Earlier) -> int:
    """The shard size of a job resuming ``job_id``: the earlier job's (a
    shard finds what its earlier holder made by its place in the plan), a
    different one given explicitly being a usage error."""
    if earlier.making is None:
        return given
    kept = earlier.making.shard_executions
    if explicit and given != kept:
        raise click.UsageError(
            f"--shard-executions {given}: job {job_id} cut its plan into shards of {kept} executions, and a "
            f"resumed job keeps them (each shard goes on with what the earlier one of its place made); "
            f"leave --shard-executions out"
        )
    return kept


def _check_same_plan(message: JobMessage, earlier: _Earlier, job_id: str, profile_path: Path) -> None:
    """Refuse (:class:`~eceb_worker.errors.InputError`) a profile that makes
    another plan than the earlier job's (its spending limits aside, which a
    resumed job may change): the journal is bound to the plan."""
    from eceb_worker.families.eceb.making.plan import plan_digest

    making = message.making
    if earlier.making is None or making is None:
        return
    if plan_digest(benchmark_digest="", corpus_root="", profile=making.profile) == plan_digest(
        benchmark_digest="", corpus_root="", profile=earlier.making.profile
    ):
        return
    text = (
        f"makes another plan than job {job_id}, whose journal {earlier.journal} is bound to its plan (the "
        "profile differs beyond its spending limits): resume with the profile it was made with, or make a "
        "new run without --resume"
    )
    raise InputError([Problem(file=str(profile_path), message=text)])


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT, exit_codes.NO_SUCH_JOB)
@click.command("run")
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("profile_path", metavar="PROFILE", callback=local_path)
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option(
    "--out",
    "out",
    required=True,
    help="Where the run is written (atomically): s3://bucket/key.json; its transcripts and judgments go beside it.",
)
@click.option(
    "--shard-executions",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_EXECUTIONS,
    show_default=True,
    help="Executions per shard (one task each).",
)
@click.option(
    "--resume",
    "resume",
    metavar="JOB",
    default=None,
    help="Go on with the journal of earlier job JOB (ended): make only what it does not hold; its shard size is kept.",
)
@click.option(
    "--rerun-unknown",
    is_flag=True,
    help="Send again the calls whose outcome is unknown (the worker sending them died); "
    "their possible cost stays counted.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for scripts).")
@cluster_options
def run(
    benchmark: str,
    profile_path: Path,
    corpus: str,
    out: str,
    shard_executions: int,
    resume: str | None,
    rerun_unknown: bool,
    as_json: bool,
) -> None:
    """Make a run of BENCHMARK with the run profile PROFILE on the cluster and print the job id.

    BENCHMARK is s3://bucket/key (or an absolute path every worker sees);
    PROFILE is read here and travels with the job (relative paths in it are
    taken from its directory, which workers must see at the same path);
    credentials are read by each worker from its own environment. Returns at
    once; follow the job with `status`, `wait` and `result` (which prints
    the run).
    """
    ctx = click.get_current_context()
    explicit = ctx.get_parameter_source("shard_executions") is not click.core.ParameterSource.DEFAULT
    earlier = None
    if resume is not None:
        if not resume.strip():
            raise click.UsageError("--resume takes the id of the job whose journal to go on with")
        earlier = _earlier(connect(), resume)
        shard_executions = _shard_size(resume, shard_executions, explicit, earlier)
    message = making_message(
        benchmark,
        profile_path,
        corpus=corpus,
        out=out,
        endpoint_url=cluster_endpoint(),
        shard_executions=shard_executions,
        rerun_unknown=rerun_unknown,
        journal_id=earlier.journal if earlier is not None else None,
    )
    assert message.making is not None
    if earlier is not None and resume is not None:
        _check_same_plan(message, earlier, resume, profile_path)
    _check_outputs(message)
    submit_job(message, as_json=as_json, benchmark=benchmark, journal=message.making.journal_id)
