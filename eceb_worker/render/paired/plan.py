"""Text of the paired task-context benchmark's outputs for people (the
``--json`` forms are the documents themselves)."""

from __future__ import annotations

from eceb_worker.families.paired.schedule import Plan

__all__ = ["execution_lines", "plan_lines"]


def execution_lines(plan: Plan, indent: str = "") -> list[str]:
    """The execution order of ``plan``, a line a pair in schedule order
    (``pair 1: explanation repeat 1, A then B (pilot): executions 1-2, 2 in
    all``): what ``eceb pair plan -q`` prints."""
    lines = []
    for pair in plan.pairs:
        arms = " then ".join(arm.value for arm in pair.order)
        first, second = pair.executions_before + 1, pair.cumulative_executions
        pilot = " (pilot)" if pair.pilot else ""
        lines.append(
            f"{indent}pair {pair.position}: {pair.task.value} repeat {pair.repeat}, {arms}{pilot}: "
            f"executions {first}-{second}, {pair.cumulative_executions} in all"
        )
    return lines


def plan_lines(plan: Plan) -> list[str]:
    """The lines ``eceb pair plan`` prints for ``plan``: the schedule table
    (a row a task kind, a column a repeat), the execution order with
    cumulative execution counts, the order imbalance and the notes."""
    tasks = list(dict.fromkeys(pair.task for pair in plan.pairs))
    width = max(len(task.value) for task in tasks)
    lines = ["fixed paid comparison schedule (A: frozen overview, B: task cue)", ""]
    lines.append(f"  {'task':<{width}}  " + "  ".join(f"repeat {r:<6}" for r in range(1, plan.repeats + 1)).rstrip())
    for task in tasks:
        cells = []
        for pair in sorted((p for p in plan.pairs if p.task is task), key=lambda p: p.repeat):
            cell = "/".join(arm.value for arm in pair.order) + (" pilot" if pair.pilot else "")
            cells.append(f"{cell:<13}")
        lines.append(f"  {task.value:<{width}}  " + "  ".join(cells).rstrip())
    lines += ["", "execution order:", *execution_lines(plan, "  ")]
    lines += [
        "",
        f"{plan.pair_count} pairs, {plan.execution_count} executions "
        f"(the {plan.pilot_executions}-execution pilot included)",
        "order imbalance (A first : B first):",
    ]
    for imbalance in plan.imbalance:
        name = imbalance.task.value if imbalance.task is not None else "overall"
        lines.append(f"  {name:<{width}}  {imbalance.a_first}:{imbalance.b_first}  (imbalance {imbalance.ratio})")
    lines += ["", *plan.notes]
    return lines
