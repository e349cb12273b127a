"""``eceb-dist nightly``: tonight's evaluation on the cluster, compared with
the last accepted report (the command of the nightly CronJob,
deploy/k8s/base/nightly.yaml; docs/KUBERNETES.md), of a run given (RUN) or
of tonight's run, made first (``--profile``); ``eceb-dist
nightly-accept``: accept a night's report as the baseline.

Under the reports prefix ``PREFIX`` (``s3://bucket/prefix``) each night's
report is ``PREFIX/reports/<job id>.json`` (the job's ``--out``), and a run
made tonight ``PREFIX/runs/<job id>.json`` (with its transcripts and
judgments beside it, ``<job id>.transcripts.jsonl`` and
``<job id>.judgments.jsonl``); ``PREFIX/baseline.json`` holds a copy of the
last accepted report, the one every night is compared with, and
``PREFIX/latest.json`` a copy of the last night's whose job succeeded,
regressed or not. A report is accepted by a night without regression (and
by the first night), or explicitly by ``nightly-accept``: a regressed night
leaves the baseline as it was, so the regression is reported every night
until it is fixed or accepted. One night:

1. reach the broker, read ``PREFIX/baseline.json`` (absent: ``latest.json``,
   a prefix kept before the baseline existed; both absent: the first night);
2. with ``--register-rules``, register tonight's snapshot of the corpus
   (:mod:`eceb_cli.nightly_corpus`: as ``eceb-dist register``, to
   ``PREFIX/registries/<job id>.jsonl``; its id printed), print what changed
   since the last night's registry ``PREFIX/registry.jsonl`` and which
   tasks it moves, and, when tonight's corpus root is not the one the
   benchmark pins, make and evaluate with the benchmark pinned to tonight's
   registry (``PREFIX/registries/<job id>.benchmark.json``); a registration
   that failed or was cancelled ends the night with its own exit code;
3. with ``--profile``, make tonight's run (as ``eceb-dist run``, the
   profile's spending stop replaced by ``--spend-stop-usd`` when given; its
   id printed) to ``PREFIX/runs/<job id>.json`` and wait until it ends: a
   job that failed or was cancelled ends the night with its own exit code
   (9 for a spending stop or a call of unknown outcome, 12 for a provider
   that failed), nothing evaluated, nothing under PREFIX changed but the
   files the night's jobs wrote; once it is made, print the night's spend (known,
   and possible: the upper bounds of calls of unknown outcome);
4. submit the evaluation of RUN, or of tonight's run (as ``eceb-dist
   submit``; its id printed) and wait until it ends: a job that failed or
   was cancelled ends the night with its own exit code (as ``eceb-dist
   wait``), nothing under PREFIX changed; ``--timeout`` bounds the whole
   night, every job together;
5. compare the baseline with tonight's report
   (:func:`~eceb_worker.families.eceb.comparison.compare_reports`, the
   thresholds of ``eceb compare``; across corpus roots when the night
   registered its corpus) and print the comparison;
6. write tonight's report bytes to ``PREFIX/latest.json``, and, without a
   regression, to ``PREFIX/baseline.json``, then tonight's registry to
   ``PREFIX/registry.jsonl`` (each atomically: a reader sees the old
   object or the new one, never a part);
7. exit 10 when tonight regressed (every regression named), else 0.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path, seconds
from eceb_cli.cluster_commands import cluster_endpoint, cluster_options, submit_job
from eceb_cli.compare import threshold_options
from eceb_cli.console import endpoint
from eceb_cli.conventions import exits, info, is_quiet, say
from eceb_cli.nightly_corpus import (
    REGISTRY,
    Deadline,
    Registered,
    keep_registry,
    night_benchmark,
    print_changes,
    register_tonight,
    registration,
    unchanged_text,
)
from eceb_cli.outcomes import exit_for, result_bytes, wait_until_ended
from eceb_cli.outputs import Output, output_option
from eceb_cli.submission import evaluation_message
from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.figures import MICRO_USD, usd

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.cluster.state import JobRecord
    from eceb_worker.families.eceb.comparison import Thresholds
    from eceb_worker.families.eceb.report import Report
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.messages import JobMessage

__all__ = ["accept_night", "nightly", "usd_to_micro"]

LATEST: Final = "latest.json"
"""The object under the reports prefix that holds the last night's report."""

BASELINE: Final = "baseline.json"
"""The object under the reports prefix that holds the last accepted report,
the one each night is compared with."""

RUNS: Final = "runs"
"""The folder under the reports prefix where each night made with
``--profile`` writes its run (``runs/<job id>.json``, its transcripts and
judgments beside it)."""

_JOB_ID: Final = re.compile(r"[0-9a-f]{32}")
_AMOUNT: Final = re.compile(r"([0-9]+)(?:\.([0-9]+))?")
_USD_DECIMALS: Final = 6
"""Decimals of a USD amount that micro-USD hold exactly."""


def usd_to_micro(text: str) -> int:
    """A USD amount written in decimal (``25``, ``0.50``, ``12.345678``) as
    whole micro-USD, exactly (no floating point): ``"0.5"`` -> ``500000``.

    Raises:
        ValueError: ``text`` is negative, not plain decimal digits with at
            most one ``.`` (no sign, exponent, separator or currency sign),
            has more than 6 decimals (below a micro-USD), or is above
            :data:`~eceb_worker.core.arithmetic.SAFE_INTEGER_MAX` micro-USD.
            The message quotes ``text`` (an amount, never a secret).
    """
    if text.startswith("-"):
        raise ValueError(f"{text!r} is negative: give an amount of USD of 0 or more")
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not an amount of USD: decimal digits with an optional '.', e.g. 25 or 0.50")
    dollars, decimals = match.group(1), match.group(2) or ""
    if len(decimals) > _USD_DECIMALS:
        raise ValueError(f"{text!r} has more than {_USD_DECIMALS} decimals: a micro-USD is the smallest amount")
    largest = SAFE_INTEGER_MAX // MICRO_USD
    if len(dollars.lstrip("0")) > len(str(largest)):  # before int(): a string of digits may be huge
        raise ValueError(f"{text!r} is more than {usd(SAFE_INTEGER_MAX)}, the largest amount counted exactly")
    micro = int(dollars) * MICRO_USD + int(decimals.ljust(_USD_DECIMALS, "0"))
    if micro > SAFE_INTEGER_MAX:
        raise ValueError(f"{text!r} is more than {usd(SAFE_INTEGER_MAX)}, the largest amount counted exactly")
    return micro


def _spend_stop(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A click callback: ``--spend-stop-usd`` as micro-USD, more than 0 (a
    usage error otherwise: 0 would mean no stop at all in a profile)."""
    if value is None:
        return None
    try:
        micro = usd_to_micro(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None
    if micro == 0:
        raise click.BadParameter(
            f"{value!r} would stop nothing (a profile's stop of 0 is no stop): give an amount above 0, "
            "or leave the option out to keep the profile's own stop",
            param=param,
        )
    return micro


def reports_prefix(value: str) -> str:
    """``--reports`` checked: an ``s3://bucket[/prefix][/]`` URL without
    credentials; returned without its trailing ``/``. A usage error otherwise."""
    from eceb_worker.core.urls import check_location, split_object_url

    try:
        check_location(value, s3=True)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.UsageError(f"--reports: {exc}") from None
    prefix = value.rstrip("/")
    try:
        split_object_url(f"{prefix}/{LATEST}")
    except ValueError:
        raise click.UsageError(
            "--reports must be an s3://bucket/prefix/ URL: the nightly reports live in object storage"
        ) from None
    return prefix


def _rules_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A click callback: ``--register-rules`` as a local file path; empty
    (a setting left blank) or not given: no registration (``None``)."""
    if not value:
        return None
    return local_path(ctx, param, value)


def _check_what_to_evaluate(run: str | None, profile_path: Path | None, spend_stop: int | None) -> None:
    """Exactly one of RUN and ``--profile``; ``--spend-stop-usd`` only with
    ``--profile``. A usage error otherwise."""
    if run is None and profile_path is None:
        raise click.UsageError(
            "give RUN (a run to evaluate) or --profile PROFILE (make tonight's run, then evaluate it)"
        )
    if run is not None and profile_path is not None:
        raise click.UsageError("give RUN (a run to evaluate) or --profile PROFILE (make tonight's run), not both")
    if spend_stop is not None and profile_path is None:
        raise click.UsageError("--spend-stop-usd stops the spending of a run made tonight: it needs --profile")


def _making_message(
    benchmark: str,
    profile_path: Path,
    *,
    corpus: str,
    prefix: str,
    endpoint_url: str | None,
    spend_stop: int | None,
) -> JobMessage:
    """The message of the job making tonight's run (``eceb-dist run``'s),
    written to ``PREFIX/runs/<job id>.json``; its profile's
    ``spending.stop_micro_usd`` replaced by ``spend_stop`` when given. The
    profile is read and checked here (:class:`~eceb_worker.errors.InputError`)."""
    import msgspec

    from eceb_cli.dist_run import making_message

    job_id = uuid.uuid4().hex
    message = making_message(
        benchmark,
        profile_path,
        corpus=corpus,
        out=f"{prefix}/{RUNS}/{job_id}.json",
        endpoint_url=endpoint_url,
        job_id=job_id,
    )
    making = message.making
    assert making is not None
    if spend_stop is None:
        return message
    profile = making.profile
    spending = msgspec.structs.replace(profile.spending, stop_micro_usd=spend_stop)
    profile = msgspec.structs.replace(profile, spending=spending)
    return msgspec.structs.replace(message, making=msgspec.structs.replace(making, profile=profile))


def _spend(known: int, possible: int) -> str:
    """``spend $X known, $Y possible``: as ``eceb run`` says it."""
    return f"spend {usd(known)} known, {usd(possible)} possible"


def _journal_spend(cluster: Cluster, state: JobRecord) -> str:
    """The spend recorded so far in the journal of a making job that did not
    finish (``spend ... known, ... possible``), ``""`` when it cannot be read
    (no journal yet, or gone)."""
    from eceb_worker.cluster.run_journal import RedisRunJournal
    from eceb_worker.errors import InputError, StorageError

    try:
        journal = RedisRunJournal(
            cluster.app.backend.client, state.journal or state.job_id, reaching=cluster.policy.reaching
        )
        summary = journal.summary()
    except (InputError, StorageError):
        return ""
    return _spend(summary.spent_micro_usd, summary.possible_micro_usd)


def _make_tonight(message: JobMessage, benchmark: str, timeout: float | None, *, unchanged: Sequence[str]) -> None:
    """Submit the job making tonight's run (its id printed), wait until it
    ends and print the night's spend; when it failed or was cancelled, say
    that nothing was evaluated and exit with its code (:func:`exit_for`)."""
    from eceb_worker.cluster.state import Phase

    assert message.making is not None
    job_id = message.job_id
    stop = message.making.profile.spending.stop_micro_usd
    cluster = submit_job(message, benchmark=benchmark, journal=message.making.journal_id)
    info(f"tonight's spending stop: {usd(stop)}" if stop else "tonight's spending stop: none (the profile sets none)")
    info(f"waiting for job {job_id} (making tonight's run)")
    state = wait_until_ended(cluster, job_id, timeout)
    if state.phase is not Phase.DONE:  # failed or cancelled: it ended
        if spent := _journal_spend(cluster, state):
            say(f"tonight's run was not made; {spent} before it ended")
        info(f"nothing evaluated tonight: {unchanged_text(unchanged)} unchanged")
        exit_for(job_id, state)
    spent = _spend(state.spent_micro_usd or 0, state.possible_micro_usd or 0)
    say(
        f"tonight's run: {state.observations} observations of {state.executions} executions; {spent}; run {message.out}"
    )


@exits(
    exit_codes.BAD_INPUT,
    exit_codes.STORAGE,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.NO_SUCH_JOB,
    exit_codes.OUTPUT,
    exit_codes.JOB_CANCELLED,
    exit_codes.EXECUTION_REFUSED,
    exit_codes.REGRESSION,
    exit_codes.PROVIDER_FAILED,
    exit_codes.JOB_NOT_FINISHED,
)
@click.command()
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("run", metavar="[RUN]", required=False)
@click.option(
    "--profile",
    "profile_path",
    metavar="PROFILE",
    callback=local_path,
    help="Make tonight's run first with this run profile (as `eceb-dist run`; its directory seen by every worker "
    "at the same path), then evaluate it; in place of RUN.",
)
@click.option(
    "--spend-stop-usd",
    "spend_stop",
    metavar="AMOUNT",
    callback=_spend_stop,
    help="With --profile: tonight's spending stop in USD (e.g. 25 or 12.50, at most 6 decimals), in place of the "
    "profile's spending.stop_micro_usd.",
)
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option(
    "--register-rules",
    "rules_path",
    metavar="RULES",
    callback=_rules_path,
    help="Register tonight's snapshot of the corpus (s3://) first, on the cluster, with this rules file (as "
    "`eceb-dist register`), print what changed since the last night's registry, and make and evaluate with the "
    "benchmark pinned to tonight's corpus root; empty: no registration.",
)
@click.option(
    "--reports",
    required=True,
    metavar="s3://BUCKET/PREFIX/",
    help="Where the nightly reports live: PREFIX/reports/<job id>.json each night, PREFIX/baseline.json the last "
    "accepted one, PREFIX/latest.json the last one.",
)
@output_option("Also write the comparison as Markdown here (a CI comment).", names=("--markdown", "markdown"))
@click.option(
    "--timeout", type=float, callback=seconds, help="Give up waiting for the job after this many seconds (exit 75)."
)
@threshold_options
@cluster_options
def nightly(
    benchmark: str,
    run: str | None,
    profile_path: Path | None,
    spend_stop: int | None,
    corpus: str,
    rules_path: Path | None,
    reports: str,
    markdown: Output | None,
    timeout: float | None,
    thresholds: Thresholds,
    allow_different_roots: bool,
) -> None:
    """Evaluate RUN, or tonight's run made with --profile, against BENCHMARK
    (s3://bucket/key) on the cluster and compare the report with the last
    accepted one, PREFIX/baseline.json.

    With --profile PROFILE (instead of RUN), tonight's run is made first, as
    `eceb-dist run` makes it, to PREFIX/runs/<job id>.json (its transcripts
    and judgments beside it), and the night's spend is printed (known, and
    possible: calls of unknown outcome); --spend-stop-usd replaces the
    profile's spending stop for tonight. --timeout bounds the whole night.

    With --register-rules RULES, the night first registers tonight's
    snapshot of the corpus (s3://) on the cluster with those rules, as
    `eceb-dist register` does, to PREFIX/registries/<job id>.jsonl, prints
    what changed since the last night's registry, PREFIX/registry.jsonl
    (the benchmark's own registry the first time), and which tasks' required
    or denied artifacts moved; when tonight's corpus root is not the one
    BENCHMARK pins, the night makes and evaluates with BENCHMARK pinned to
    tonight's registry, PREFIX/registries/<job id>.benchmark.json (a task
    whose artifact is no longer registered fails its checks: exit 3). Its
    report is compared across the corpus change (another task root is still
    refused). Once the night's jobs succeeded, tonight's registry is copied
    to PREFIX/registry.jsonl, from which the next night's changes are told.

    Tonight's report is written to PREFIX/reports/<job id>.json; once it is
    compared, PREFIX/latest.json is replaced by it, and so is
    PREFIX/baseline.json unless tonight regressed (each atomically): a
    regression fails every night until it is fixed, or accepted with
    `eceb-dist nightly-accept`. The first night (no baseline.json, nor a
    latest.json, which stands in for it) has nothing to compare and exits
    0. Thresholds
    and --allow-* as `eceb compare` (a regression: a passing task that
    fails, a minimum viable budget up or savings down beyond them, more
    policy violations, a newly failing gate, a removed task).

    Exit 0 when the job succeeded and nothing regressed (failing tasks
    alone are no regression), 10 on a regression (each one named); when a
    job failed, its own code as `eceb-dist wait` (3, 4, 5, 6, 70; making
    tonight's run, also 9 for a spending stop or a call of unknown outcome
    and 12 for a provider that failed), 8 when it was cancelled, 75 when
    --timeout passed first; nothing under PREFIX is then changed (but the
    files tonight's jobs wrote: its registry, benchmark and run). 3 also
    when the baseline is not a report or judges other task or corpus roots
    (unless --allow-different-roots), 2 for a usage error.
    """
    from eceb_worker.io.locations import Locator
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.reports import read_report

    _check_what_to_evaluate(run, profile_path, spend_stop)
    prefix = reports_prefix(reports)
    latest, baseline = f"{prefix}/{LATEST}", f"{prefix}/{BASELINE}"
    kept_registry = f"{prefix}/{REGISTRY}"
    for written in (latest, baseline, *((kept_registry,) if rules_path is not None else ())):
        if written in (benchmark, run):
            raise click.UsageError(f"--reports: {written} would be overwritten, and it is one of the inputs")
    if markdown is not None:
        markdown.check()
    deadline = Deadline(timeout)
    endpoint_url = cluster_endpoint()
    making = None
    if profile_path is not None:
        making = _making_message(
            benchmark, profile_path, corpus=corpus, prefix=prefix, endpoint_url=endpoint_url, spend_stop=spend_stop
        )
        run = making.out
    assert run is not None
    job_id = uuid.uuid4().hex
    tonight_url = f"{prefix}/reports/{job_id}.json"
    message = evaluation_message(
        benchmark, run, corpus=corpus, out=tonight_url, endpoint_url=endpoint_url, job_id=job_id
    )
    objects = ObjectStore(endpoint_url)
    locator = Locator(endpoint_url, make_store=lambda: objects)
    registering = None
    if rules_path is not None:
        registering = registration(corpus, rules_path, prefix=prefix, endpoint_url=endpoint_url, objects=objects)
    compared_with = baseline if objects.exists(baseline) else latest
    previous = read_report(locator.locate(compared_with)) if objects.exists(compared_with) else None

    unchanged = (baseline, latest, *((kept_registry,) if registering is not None else ()))
    registered = None
    if registering is not None:
        assert rules_path is not None
        registered = register_tonight(*registering, deadline, rules=str(rules_path), unchanged=unchanged)
        print_changes(registered, benchmark, locator)
        benchmark = night_benchmark(registered, benchmark, objects)
        message = _with_benchmark(message, benchmark)
        making = None if making is None else _with_benchmark(making, benchmark)
    if making is not None:
        _make_tonight(making, benchmark, deadline.left(), unchanged=unchanged)
    cluster = submit_job(message, benchmark=benchmark, run=run)
    info(f"waiting for job {job_id}")
    state = wait_until_ended(cluster, job_id, deadline.left())
    exit_for(job_id, state)
    data = result_bytes(job_id, state, objects)  # checked against the digest the job recorded
    _compare_and_keep(
        objects,
        data,
        state,
        previous,
        names=(compared_with, tonight_url),
        prefix=prefix,
        markdown=markdown,
        thresholds=thresholds,
        allow_different_roots=allow_different_roots,
        registered=registered,
    )


def _with_benchmark(message: JobMessage, benchmark: str) -> JobMessage:
    """``message`` making or evaluating with the benchmark ``benchmark`` instead."""
    import msgspec

    return msgspec.structs.replace(message, inputs=msgspec.structs.replace(message.inputs, benchmark=benchmark))


def _compare_and_keep(
    objects: ObjectStore,
    data: bytes,
    state: JobRecord,
    previous: Report | None,
    *,
    names: tuple[str, str],
    prefix: str,
    markdown: Output | None,
    thresholds: Thresholds,
    allow_different_roots: bool,
    registered: Registered | None = None,
) -> None:
    """Compare ``previous`` (the baseline, at ``names[0]``; ``None`` on the
    first night) with tonight's report ``data`` (at ``names[1]``, made by
    job ``state``), print the comparison, write the Markdown, keep tonight's
    report as ``latest.json`` and, unless it regressed, ``baseline.json``,
    and tonight's registry (``registered``, when the night registered its
    corpus) as ``registry.jsonl``; exit 10 on a regression.

    A night that registered its corpus compares across corpus roots (its
    benchmark is pinned to tonight's): another corpus root is then no
    refusal, another task root still is (unless ``allow_different_roots``)."""
    from eceb_worker.families.eceb.comparison import compare_reports
    from eceb_worker.pipeline.reports import decode_report
    from eceb_worker.render.comparison import comparison_lines, comparison_markdown, comparison_verdict
    from eceb_worker.render.text import tasks_pass

    compared_with, tonight_url = names
    job_id = state.job_id
    latest, baseline = f"{prefix}/{LATEST}", f"{prefix}/{BASELINE}"
    tonight = decode_report(data, tonight_url)
    say(f"tonight: {tasks_pass(state.passing_tasks, state.total_tasks)}; report {tonight_url}")

    if previous is None:
        say(f"no baseline at {baseline}: the first night, nothing to compare")
        if markdown is not None:
            markdown.write([f"## eceb nightly: first night\n\nNo baseline at `{baseline}`.\n".encode()])
        _keep(objects, data, job_id, latest, baseline, registered=registered, prefix=prefix)
        return
    say(f"compared with the last accepted report, {compared_with}:")
    if registered is not None and previous.inputs.task_root == tonight.inputs.task_root:
        if previous.inputs.corpus_root != tonight.inputs.corpus_root:
            say(
                f"the corpus changed since that report (corpus root {previous.inputs.corpus_root} -> "
                f"{tonight.inputs.corpus_root}): compared across tonight's registered corpus"
            )
        allow_different_roots = True
    comparison = compare_reports(
        previous, tonight, thresholds, allow_different_roots=allow_different_roots, names=(compared_with, tonight_url)
    )
    if is_quiet():
        click.echo(comparison_verdict(comparison))
    else:
        for line in comparison_lines(comparison):
            click.echo(line)
    if markdown is not None:
        markdown.write([comparison_markdown(comparison).encode()])
    if comparison.regressed:
        _keep(objects, data, job_id, latest, registered=registered, prefix=prefix)
        say(
            f"{baseline} unchanged: tonight regressed (accept tonight's report as the baseline with "
            f"`eceb-dist nightly-accept {job_id} --reports {prefix}/`)"
        )
        sys.exit(exit_codes.REGRESSION)
    _keep(objects, data, job_id, latest, baseline, registered=registered, prefix=prefix)


def _keep(
    objects: ObjectStore, data: bytes, job_id: str, *urls: str, registered: Registered | None, prefix: str
) -> None:
    """Write tonight's report bytes to each of ``urls`` (atomically), then
    keep tonight's registry (``registered``; :func:`keep_registry`),
    saying so."""
    for url in urls:
        objects.put_atomic(url, data)
        say(f"{url} now holds tonight's report (job {job_id})")
    if registered is not None:
        keep_registry(objects, registered, prefix)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@click.command("nightly-accept")
@click.argument("accepted", metavar="JOB|REPORT")
@click.option(
    "--reports",
    required=True,
    metavar="s3://BUCKET/PREFIX/",
    help="The nightly reports prefix (as `eceb-dist nightly --reports`).",
)
@click.option("--endpoint-url", help="S3-compatible endpoint (MinIO, Ceph, ...). Env: ECEB_S3_ENDPOINT_URL.")
def accept_night(accepted: str, reports: str, endpoint_url: str | None) -> None:
    """Make a report the nightly baseline, PREFIX/baseline.json, the one the
    next nights are compared with: the report of the night JOB (a job id,
    PREFIX/reports/JOB.json) or REPORT (an s3://bucket/key report).

    After a regression that is meant (a task retired, a cheaper model
    accepted), accept that night's report: the nights after it compare with
    it. The report is checked first (exit 3, the baseline left as it was,
    when it is missing or not a report); the baseline is replaced
    atomically. Needs no broker.
    """
    from eceb_cli.submission import object_argument
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.reports import decode_report
    from eceb_worker.render.text import tasks_pass

    prefix = reports_prefix(reports)
    baseline = f"{prefix}/{BASELINE}"
    if _JOB_ID.fullmatch(accepted):
        url = f"{prefix}/reports/{accepted}.json"
    else:
        url = object_argument(accepted, "JOB|REPORT")
    if url == baseline:
        raise click.UsageError(f"JOB|REPORT: {baseline} is the baseline already")
    objects = ObjectStore(endpoint(endpoint_url))
    data, _ = objects.get(url)
    report = decode_report(data, url)
    objects.put_atomic(baseline, data)
    summary = report.summary
    say(f"{baseline} now holds the report {url} ({tasks_pass(summary.passing_tasks, summary.total_tasks)})")
