"""Rules files: glob patterns that give each file of a corpus its source kind
and classification when a registry is built (``eceb corpus register``).

Format (TOML)::

    schema = "symgliph.eceb/rules-v0.1"
    exclude = ["**/.git/**"]          # optional: never registered

    [[rule]]
    glob = "runbook/**"
    kind = "runbook"

    [[rule]]
    glob = "**"
    classification = "internal"

For each file, its kind comes from the first rule (in file order) that
matches it and sets ``kind``; its classification from the first that
matches and sets ``classification``. A file left without either is an error:
nothing gets a silent default. Globs: ``*`` and ``?`` stay within one path
segment, ``**`` spans segments, ``{a,b}`` alternates, dot files match.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Final, Literal

import msgspec
from wcmatch import glob as wcglob
from wcmatch._wcparse import PatternLimitException  # raised by wcglob.compile, not re-exported

from eceb_worker.core.decoding import record_problems
from eceb_worker.core.paths import printable_path
from eceb_worker.corpus.artifacts import Classification, SourceKind
from eceb_worker.errors import InputError, Problem

__all__ = [
    "RulesFile",
    "classify",
    "classify_all",
    "excluded",
    "group_problems",
    "group_unclassified",
    "parse_rules",
    "unclassified_where",
]

_FLAGS: Final = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.BRACE

Glob = Annotated[str, msgspec.Meta(min_length=1, description="Glob over corpus-relative paths.")]


class Rule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One rule: files matching ``glob`` get ``kind`` and/or ``classification``."""

    glob: Glob
    kind: SourceKind | None = None
    classification: Classification | None = None


class RulesFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A rules file (schema ``symgliph.eceb/rules-v0.1``)."""

    schema: Literal["symgliph.eceb/rules-v0.1"]
    rule: tuple[Rule, ...]
    exclude: tuple[Glob, ...] = ()


class Classified(msgspec.Struct, frozen=True, kw_only=True):
    """A file's kind and classification as the rules assign them."""

    path: str
    kind: SourceKind
    classification: Classification


def _invalid_toml(name: str, exc: Exception) -> InputError:
    """The one problem of a rules file that is not TOML eceb can read."""
    if isinstance(exc, RecursionError):
        why = "nested too deeply"
    elif type(exc) is ValueError:
        # Python refuses to convert integers of more than sys.get_int_max_str_digits() digits.
        why = f"an integer of more than {sys.get_int_max_str_digits()} digits"
    else:
        why = str(exc) or type(exc).__name__
    return InputError([Problem(file=name, message=f"invalid TOML: {why}")])


def parse_rules(data: bytes, name: str) -> RulesFile:
    """Decode and check a TOML rules file.

    Raises :class:`InputError` with every problem: TOML syntax, unknown or
    mistyped fields, unknown kinds or classifications, invalid globs (also
    globs whose brace alternations expand to more than 1,000 patterns, and
    excludes that do together), rules that set neither kind nor
    classification.
    """
    try:
        rules = msgspec.toml.decode(data, type=RulesFile)
    except msgspec.ValidationError as invalid:
        try:
            as_json = msgspec.json.encode(tomllib.loads(data.decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, TypeError, ValueError, RecursionError) as exc:
            raise _invalid_toml(name, exc) from None
        raise InputError(record_problems(as_json, RulesFile, file=name, record="", decode_error=str(invalid))) from None
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:
        raise _invalid_toml(name, exc) from None
    problems: list[Problem] = []
    for index, rule in enumerate(rules.rule):
        if rule.kind is None and rule.classification is None:
            problems.append(Problem(file=name, field=f"rule[{index}]", message="sets neither kind nor classification"))
    patterns: list[tuple[str, str | list[str]]] = [(f"rule[{i}].glob", r.glob) for i, r in enumerate(rules.rule)]
    patterns.extend((f"exclude[{i}]", g) for i, g in enumerate(rules.exclude))
    for field, pattern in patterns:
        problem = _glob_problem(pattern)
        if problem:
            problems.append(Problem(file=name, field=field, message=f"invalid glob {pattern!r}: {problem}"))
    if len(rules.exclude) > 1 and not any(p.field.startswith("exclude[") for p in problems):
        problem = _glob_problem(list(rules.exclude))  # compiled together, as classify_all does
        if problem:
            problems.append(Problem(file=name, field="exclude", message=f"invalid globs together: {problem}"))
    if problems:
        raise InputError(problems)
    return rules


def _glob_problem(pattern: str | list[str]) -> str:
    """Why ``pattern`` (or the patterns, together) cannot be compiled; ``""`` if it can.

    Brace alternations are expanded into separate patterns, at most
    wcmatch's limit (1,000) in one compilation: beyond it, a problem rather
    than an exponential expansion."""
    try:
        wcglob.compile(pattern, flags=_FLAGS)
    except (ValueError, RuntimeError, PatternLimitException) as exc:
        return str(exc)
    return ""


def excluded(rules: RulesFile) -> Callable[[str], bool]:
    """Whether a corpus-relative path is one the rules' ``exclude`` globs
    leave out of the registry (never true when there are none)."""
    if not rules.exclude:
        return lambda _: False
    matcher = wcglob.compile(list(rules.exclude), flags=_FLAGS)
    return lambda path: bool(matcher.match(path))


def classify_all(rules: RulesFile, paths: Iterable[str], *, rules_name: str) -> tuple[list[Classified], list[Problem]]:
    """Give every path its kind and classification (first matching rule wins).

    Excluded paths are dropped. Returns the classified paths in input order,
    and a problem for every path that no rule gives a kind, or a
    classification (its record is the path, made printable).
    """
    exclude = wcglob.compile(list(rules.exclude), flags=_FLAGS) if rules.exclude else None
    matchers = [(wcglob.compile(r.glob, flags=_FLAGS), r) for r in rules.rule]
    classified: list[Classified] = []
    problems: list[Problem] = []
    for path in paths:
        if exclude is not None and exclude.match(path):
            continue
        kind = next((r.kind for m, r in matchers if r.kind is not None and m.match(path)), None)
        classification = next(
            (r.classification for m, r in matchers if r.classification is not None and m.match(path)), None
        )
        shown = printable_path(path)
        if kind is None:
            problems.append(
                Problem(file=rules_name, record=shown, field="kind", message="no rule gives this file a kind")
            )
        if classification is None:
            problems.append(
                Problem(
                    file=rules_name,
                    record=shown,
                    field="classification",
                    message="no rule gives this file a classification",
                )
            )
        if kind is not None and classification is not None:
            classified.append(Classified(path=path, kind=kind, classification=classification))
    return classified, problems


UNCLASSIFIED_EXAMPLES: Final = 3
"""Files :func:`group_unclassified` names in each group."""

_NEEDS: Final = ("kind", "classification")


def group_unclassified(problems: Iterable[Problem], rules_name: str, *, hint: str = "") -> list[Problem]:
    """``problems`` (those :func:`classify_all` gives, among others) with
    the files no rule classifies grouped: one problem for each top-level
    directory (the files at the top level together) and what its files lack
    (a kind, a classification, or both), counting its files and naming the
    first :data:`UNCLASSIFIED_EXAMPLES` (in path order); ``hint`` ends each
    group's message. A group of one file keeps that file's own problems.
    The other problems are kept as they are, before the groups."""
    others: list[Problem] = []
    lacking: dict[str, list[str]] = {}  # printable path -> the fields no rule sets, in _NEEDS order
    for problem in problems:
        if problem.file == rules_name and problem.record and problem.field in _NEEDS:
            lacking.setdefault(problem.record, []).append(problem.field)
        else:
            others.append(problem)
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for path, missing in lacking.items():
        key = (unclassified_where(path), tuple(f for f in _NEEDS if f in missing))
        groups.setdefault(key, []).append(path)
    grouped: list[Problem] = []
    for (where, needs), paths in sorted(groups.items()):
        paths.sort()
        grouped += group_problems(where, needs, paths[:UNCLASSIFIED_EXAMPLES], len(paths), rules_name, hint=hint)
    return others + grouped


def unclassified_where(path: str) -> str:
    """The group of an unclassified file's printable ``path``
    (:func:`group_unclassified`): its top-level directory with its ``/``
    (``"docs/"``), ``""`` for a file at the top level."""
    top, slash, _ = path.partition("/")
    return top + slash if slash else ""


def group_problems(
    where: str, needs: tuple[str, ...], first: Sequence[str], count: int, rules_name: str, *, hint: str = ""
) -> list[Problem]:
    """The problems :func:`group_unclassified` lists for one group: the
    ``count`` files under ``where`` (:func:`unclassified_where`) lacking
    ``needs`` (``kind``, ``classification`` or both, in that order), whose
    first printable paths in sorted order are ``first`` (at least
    :data:`UNCLASSIFIED_EXAMPLES` of them, or all). A group of one file
    keeps that file's own problems."""
    if count == 1:
        return [
            Problem(file=rules_name, record=first[0], field=f, message=f"no rule gives this file a {f}") for f in needs
        ]
    shown = ", ".join(first[:UNCLASSIFIED_EXAMPLES])
    rest = count - UNCLASSIFIED_EXAMPLES
    examples = f"{shown} and {rest:,} more" if rest > 0 else shown
    wanted = " and a ".join(needs)
    return [
        Problem(
            file=rules_name,
            record=f"{count:,} files under {where}" if where else f"{count:,} files at the top level",
            field=needs[0] if len(needs) == 1 else "",
            message=f"no rule gives them a {wanted}: {examples}{hint}",
        )
    ]


def classify(rules: RulesFile, paths: Iterable[str], *, rules_name: str) -> list[Classified]:
    """:func:`classify_all`, raising :class:`InputError` with every problem."""
    classified, problems = classify_all(rules, paths, rules_name=rules_name)
    if problems:
        raise InputError(problems)
    return classified
