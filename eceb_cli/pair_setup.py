"""``eceb pair freeze``, ``authorize``, ``approve``, ``stop`` and ``prepare``:
everything before and between paid executions of the paired task-context
benchmark (task-context-benchmark-reference.md, "Paid experiment preflight
conditions" and "Paired inputs and retained outputs"). None of them runs
the provider (``freeze`` asks it ``--version`` only)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.conventions import exits
from eceb_worker.families.paired.records import Freeze, ObservedSupport
from eceb_worker.pipeline.paired.approvals import BILLING_NOTICE, approve_continuation, authorize, stop_spending
from eceb_worker.pipeline.paired.freeze import freeze_experiment
from eceb_worker.pipeline.paired.prepare import prepare_pair

__all__ = ["approve", "authorize_command", "freeze", "prepare", "stop"]

_EXPERIMENT = click.Path(file_okay=False, path_type=Path)


def _not_blank(message: str) -> Callable[[click.Context, click.Parameter, str], str]:
    """A click callback refusing an empty or blank value with ``message`` (a usage error)."""

    def check(_ctx: click.Context, param: click.Parameter, value: str) -> str:
        if not value.strip():
            raise click.BadParameter(message, param=param)
        return value

    return check


def _support_line(support: ObservedSupport) -> str:
    """What the freeze records of the provider's observed support, in one line."""
    names = ("usage", "completion", "output")
    observed = [name for name in names if getattr(support, name) == "observed"]
    unobserved = [name for name in names if name not in observed]
    if support.evidence is None:
        source = "no recorded stream given: local checks establish no actual provider support"
    elif support.evidence_synthetic:
        source = f"{support.evidence.path} is synthetic: it establishes no actual provider support"
    else:
        source = f"from {support.evidence.path} (BLAKE3 {support.evidence.blake3})"
    parts = [f"{', '.join(observed)} observed"] if observed else []
    parts += [f"{', '.join(unobserved)} unobserved"] if unobserved else []
    shown = "; ".join(parts)
    return f"observed support: {shown} ({source})"


def _freeze_lines(record: Freeze) -> list[str]:
    """What ``eceb pair freeze`` says it froze, in a few lines."""
    repository = record.repository
    support = record.observed_support
    stops = ", ".join(("manual (eceb pair stop)", *(f"on {outcome}" for outcome in record.spending_stop_on)))
    return [
        f"label: {record.label}" + (" (synthetic rates)" if record.synthetic else ""),
        f"repository: {repository.path} at {repository.head} (tree {repository.tree}, clean)",
        f"declaration: {record.declaration.path} (blob {record.declaration_object}), "
        f"{len(record.sources)} sources pinned, {len(record.checks)} check(s)",
        "tasks: " + ", ".join(f"{task.kind.value} {task.id}" for task in record.tasks),
        f"overview: {record.overview.path}, {record.overview_tokens} tokens estimated; "
        f"common cue budget {record.cue_budget_tokens} tokens",
        f"cue command: {' '.join(record.cue_argv)} ({record.cue_command.path})",
        f"provider: {record.provider.path} ({record.provider.version}); model {record.model}, "
        f"reasoning {record.reasoning_effort}, speed {record.speed_tier}, sandbox {record.sandbox}",
        _support_line(support),
        f"coverage: {record.pairs} pairs; missing semantic evidence: {record.missing_semantic_evidence}; "
        f"authorized executions {record.authorized_executions}; spending stop: {stops}; "
        f"pilot continuation: {record.pilot_continuation}",
    ]


_JSON = click.option("--json", "as_json", is_flag=True, help="Print what was written as one JSON object.")


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED)
@click.command()
@click.argument("benchmark", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--repo",
    "repository",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The target git work tree (clean, at the reviewed revision).",
)
@click.option(
    "--into",
    "into",
    required=True,
    type=_EXPERIMENT,
    help="The experiment directory (created if missing; not inside the repository).",
)
@click.option(
    "--observed-stream",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A recorded `codex exec --json` stream of the frozen provider: the usage, completion and "
    "output fields it shows are recorded as observed (a synthetic stream shows none).",
)
@_JSON
def freeze(benchmark: Path, repository: Path, into: Path, observed_stream: Path | None, as_json: bool) -> None:
    """Freeze the preflight record of BENCHMARK over the repository into
    INTO/freeze.json: every item of the seed's paid experiment preflight
    conditions, bound by digest or exact value. Every problem of every
    input is reported together and nothing is written. Runs the provider
    only as EXE --version (ECEB_PAIR_PROVIDER overrides the benchmark's
    executable). Refused once the directory holds an authorization, a
    ledger or an attempt; before that, freezing again replaces freeze.json.
    Freezing authorizes nothing."""
    frozen = freeze_experiment(benchmark, repository, into, observed_stream=observed_stream)
    if as_json:
        found = {"freeze": str(frozen.path), "freeze_digest": frozen.digest, "replaced": frozen.replaced}
        click.echo(msgspec.json.encode(found).decode())
        return
    click.echo(f"froze {frozen.path}")
    click.echo(f"freeze digest: {frozen.digest}")
    if frozen.replaced:
        click.echo("(it replaces the earlier freeze.json: nothing had been authorized or started)")
    for line in _freeze_lines(frozen.freeze):
        click.echo(line)
    click.echo("Freezing authorizes nothing: paid execution needs `eceb pair authorize` (G3), a person's decision.")


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED)
@click.command("authorize")
@click.argument("experiment", type=_EXPERIMENT)
@click.option(
    "--approver",
    required=True,
    callback=_not_blank("an authorization needs an approver (a person)"),
    help="Who authorizes paid execution (a person).",
)
@click.option(
    "--executions",
    type=click.IntRange(min=1),
    default=None,
    help="Executions authorized (default and maximum: the freeze's authorized execution count).",
)
@click.option(
    "--freeze-digest",
    default=None,
    metavar="DIGEST",
    help="The freeze digest you reviewed (eceb pair freeze printed it); another freeze is refused.",
)
def authorize_command(experiment: Path, approver: str, executions: int | None, freeze_digest: str | None) -> None:
    """Record G3: a person's authorization of paid execution, bound to the
    freeze digest (EXPERIMENT/authorization.json), and create the execution
    ledger (EXPERIMENT/ledger.sqlite). Recorded once, and never once an
    attempt may have started."""
    record, digest = authorize(experiment, approver=approver, executions=executions, freeze_digest=freeze_digest)
    count = record.authorized_executions
    click.echo(f"authorized {count} execution{'s' if count != 1 else ''} of freeze {digest}")
    click.echo(f"approver: {record.approver}")
    click.echo(f"wrote {Path(experiment).resolve() / 'authorization.json'} and ledger.sqlite")
    click.echo(BILLING_NOTICE)


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED)
@click.command()
@click.argument("experiment", type=_EXPERIMENT)
@click.option(
    "--approver",
    required=True,
    callback=_not_blank("an approval needs an approver (a person)"),
    help="Who approves continuing after the pilot (a person).",
)
def approve(experiment: Path, approver: str) -> None:
    """Record a person's approval to continue after the pilot pair
    (EXPERIMENT/continuation.json, and the ledger), bound to the freeze and
    to the pilot's evidence: its manifest and both attempt records. Only
    once both pilot attempts have complete journals (an outcome the ledger
    never recorded is recorded first from its attempt.json)."""
    record, evidence, reconciled = approve_continuation(experiment, approver=approver)
    for attempt_id, outcome in reconciled:
        click.echo(f"recorded the outcome of attempt {attempt_id} from its attempt.json: {outcome}")
    click.echo(f"approved continuation after the pilot {evidence.pair}")
    click.echo(f"pilot evidence digest: {record.pilot_evidence_digest}")
    click.echo(f"approver: {record.approver}")
    click.echo(BILLING_NOTICE)


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT)
@click.command()
@click.argument("experiment", type=_EXPERIMENT)
@click.option(
    "--reason", required=True, callback=_not_blank("a stop needs a reason"), help="Why spending stops (recorded)."
)
def stop(experiment: Path, reason: str) -> None:
    """Record a spending stop in the experiment's ledger: no execution starts after it."""
    stop_spending(experiment, reason)
    click.echo(f"spending stopped: {reason}")
    click.echo("No execution starts after this stop.")


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED)
@click.command()
@click.argument("experiment", type=_EXPERIMENT)
@click.option(
    "--pair",
    "position",
    type=click.IntRange(min=1),
    default=None,
    help="The schedule position (default: the first pair none of whose executions has started).",
)
@click.option(
    "--again",
    is_flag=True,
    help="Prepare another directory for a pair that already has one (a pair runs once, from one of them).",
)
@_JSON
def prepare(experiment: Path, position: int | None, again: bool, as_json: bool) -> None:
    """Prepare one pair in a new, unique EXPERIMENT/task-pair-* directory:
    the frozen inputs re-checked and retained, both arms' contexts (A: the
    frozen overview; B: the cue, produced now by the declared cue command),
    costs, and manifest.json with both arms' actual command lines. Runs
    nothing paid."""
    prepared = prepare_pair(experiment, position, again=again)
    pair = prepared.manifest.pair
    order = "/".join(arm.value for arm in pair.order)
    pilot = " (pilot)" if pair.pilot else ""
    if as_json:
        found = {
            "directory": str(prepared.directory),
            "manifest_digest": prepared.digest,
            "pair": pair.position,
            "task": pair.task.value,
            "repeat": pair.repeat,
            "order": [arm.value for arm in pair.order],
            "pilot": pair.pilot,
            "arms": [
                {"arm": a.arm.value, "context_tokens": a.context_tokens, "argv": list(a.argv)}
                for a in prepared.manifest.arms
            ],
        }
        click.echo(msgspec.json.encode(found).decode())
        return
    click.echo(f"prepared {prepared.directory}")
    click.echo(f"pair {pair.position}: {pair.task.value} repeat {pair.repeat}, {order}{pilot}")
    click.echo(f"manifest digest: {prepared.digest}")
    for arm in prepared.manifest.arms:
        click.echo(f"arm {arm.arm.value} ({arm.context_tokens} context tokens estimated):")
        click.echo("  " + " ".join(_shown(value) for value in arm.argv))
    authorized = (Path(prepared.directory).parent / "authorization.json").exists()
    click.echo(
        f"Nothing was run: eceb pair run {prepared.directory} runs the pair"
        + ("." if authorized else ", once it is authorized (eceb pair authorize).")
    )


def _shown(value: str) -> str:
    """``value`` quoted for a POSIX shell when it needs it."""
    return shlex.quote(value)
