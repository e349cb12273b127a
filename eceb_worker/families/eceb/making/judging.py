"""Judging an answer (ECEB-0.1 §9): the LLM judge's prompt and structured
output, the command judge's input, and how either becomes ``quality_milli``.

The LLM judge sees the rubric, the task's query, its required answer terms
and the answer: never the context (the judge scores the answer, and the
context may hold text the judge's provider must not receive). It answers a
JSON object ``{"score": 0..1000, "rationale": "..."}`` (structured output);
the score is ``quality_milli`` as it is. A command judge reads one JSON
object ``{"task": <task>, "answer": "..."}`` on standard input and prints a
score 0..1000 on its first line. Anything else is not a judgment: the
execution records no observation (a missing observation fails its group,
ECEB-0.1 §10), and the raw text is kept in the journal.
"""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.exchange import StructuredOutput

__all__ = [
    "JUDGMENT_SCHEMA",
    "CommandJudgeInput",
    "NotAJudgment",
    "command_judge_input",
    "judge_prompt",
    "parse_command_score",
    "parse_judgment",
]

JUDGMENT_SCHEMA: Final = StructuredOutput(
    name="eceb_judgment",
    schema={
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 0, "maximum": 1000},
            "rationale": {"type": "string"},
        },
        "required": ["score", "rationale"],
        "additionalProperties": False,
    },
)
"""The structured output an LLM judge must follow."""

JUDGE_SYSTEM: Final = (
    "You are an impartial grader. Score the answer against the rubric from 0 (useless or wrong) to 1000 "
    "(complete and correct). Reply with the JSON object the schema asks for."
)


class NotAJudgment(ValueError):
    """A judge's output that is not a score 0..1000 (the message says why, without quoting the output)."""


class _Judgment(msgspec.Struct, forbid_unknown_fields=True):
    score: int
    rationale: str


class CommandJudgeInput(msgspec.Struct, frozen=True, kw_only=True):
    """What a command judge reads: the task and the answer."""

    task: Task
    answer: str


def judge_prompt(rubric: str, task: Task, answer: str) -> str:
    """The LLM judge's user message (see the module)."""
    terms = ", ".join(task.required_answer_terms) or "(none)"
    return (
        f"# Rubric\n\n{rubric.rstrip()}\n\n# Question\n\n{task.query}\n\n"
        f"# Terms a correct answer contains\n\n{terms}\n\n# Answer to grade\n\n{answer}\n"
    )


def parse_judgment(text: str) -> tuple[int, str]:
    """``(quality_milli, rationale)`` from an LLM judge's JSON text; raises
    :class:`NotAJudgment`."""
    try:
        judgment = msgspec.json.decode(text, type=_Judgment)
    except msgspec.DecodeError as exc:
        raise NotAJudgment(f"not the judgment object the schema asks for ({_first_line(str(exc))})") from None
    if not 0 <= judgment.score <= 1000:
        raise NotAJudgment(f"score {judgment.score} is outside 0..1000")
    return judgment.score, judgment.rationale


def command_judge_input(task: Task, answer: str) -> bytes:
    """The bytes a command judge reads on standard input (canonical JSON and a newline)."""
    return canonical_json(CommandJudgeInput(task=task, answer=answer)) + b"\n"


def parse_command_score(output: bytes) -> int:
    """``quality_milli`` from a command judge's standard output (its first
    line: an integer 0..1000); raises :class:`NotAJudgment`."""
    first = output.split(b"\n", 1)[0].strip()
    if not first.isdigit() or len(first) > 4:
        raise NotAJudgment("the first line of its output is not an integer 0..1000")
    score = int(first)
    if score > 1000:
        raise NotAJudgment(f"score {score} is outside 0..1000")
    return score


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]
