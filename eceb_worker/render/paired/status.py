"""Text of ``eceb pair status`` for people (``--json`` prints the
:class:`~eceb_worker.families.paired.status.PairStatus` itself)."""

from __future__ import annotations

from eceb_worker.families.paired.status import NOT_STARTED, PairStatus
from eceb_worker.families.paired.transport import Usage

__all__ = ["status_lines", "usage_text"]


def usage_text(usage: Usage) -> str:
    """``input 1200 (cached 200), output 300 (reasoning 100) tokens``; a
    counter the usage lacks is shown ``missing``, one reported as no count
    ``no count``."""

    def shown(name: str) -> str:
        value = usage.count(name)
        if name in usage.not_counts:
            return "no count"
        return "missing" if value is None else str(value)

    reasoning = "reasoning_output_tokens"
    extra = (
        ""
        if usage.count(reasoning) is None and reasoning not in usage.not_counts
        else f" (reasoning {shown(reasoning)})"
    )
    cached = f"(cached {shown('cached_input_tokens')})"
    return f"input {shown('input_tokens')} {cached}, output {shown('output_tokens')}{extra} tokens"


def status_lines(status: PairStatus) -> list[str]:
    """The lines of ``status``: the experiment and its execution controls,
    each pair directory and its arms (status, ``incomplete journal`` or
    ``not started``, usage as recorded: a partial usage is labelled partial,
    never a total), then every inconsistency."""
    synthetic = " (synthetic rates: they verify software handling only)" if status.synthetic else ""
    lines = [f"experiment {status.experiment}{synthetic}", f"  freeze {status.freeze_digest}"]
    lines.append(f"  authorization: {status.authorization}")
    if status.authorized_executions is None:
        lines.append("  ledger: none (no execution is authorized)")
    else:
        lines.append(
            f"  executions: {len(status.executions)} started of {status.authorized_executions} authorized, "
            f"{status.remaining} remaining"
        )
    lines.append(f"  spending stops: {len(status.spending_stops)}")
    lines += [f"    - {reason}" for reason in status.spending_stops]
    lines.append(f"  continuation after the pilot: {status.continuation}")
    for pair in status.pairs:
        if pair.position is None or pair.task is None:
            lines.append(f"{pair.directory}: the manifest cannot be read")
            continue
        pilot = ", pilot" if pair.pilot else ""
        lines.append(f"{pair.directory}: pair {pair.position} ({pair.task.value} repeat {pair.repeat}{pilot})")
        for arm in pair.arms:
            tag = " (synthetic)" if arm.synthetic else ""
            if arm.state == NOT_STARTED and status.remaining == 0:
                tag += " (no authorized execution remains: it cannot start)"
            lines.append(f"  arm {arm.arm.value}: {arm.state}{tag}")
            if arm.usage is not None:
                lines.append(f"    usage: {usage_text(arm.usage)}")
            if arm.partial_usage is not None:
                lines.append(f"    partial usage (never a total): {usage_text(arm.partial_usage)}")
    if status.inconsistencies:
        lines.append(f"inconsistencies: {len(status.inconsistencies)}")
        lines += [f"  - {item}" for item in status.inconsistencies]
    else:
        lines.append("inconsistencies: none")
    return lines
