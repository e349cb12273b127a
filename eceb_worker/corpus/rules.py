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

import tomllib
from collections.abc import Iterable
from typing import Annotated, Final, Literal

import msgspec
from wcmatch import glob as wcglob

from eceb_worker.core.decoding import record_problems
from eceb_worker.core.paths import printable_path
from eceb_worker.corpus.artifacts import Classification, SourceKind
from eceb_worker.errors import InputError, Problem

__all__ = ["Classified", "Rule", "RulesFile", "classify", "classify_all", "parse_rules"]

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
    """The problem of a rules file the TOML reader refused (nested too deeply for it: a RecursionError)."""
    reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return InputError([Problem(file=name, message=f"invalid TOML: {reason}")])


def parse_rules(data: bytes, name: str) -> RulesFile:
    """Decode and check a TOML rules file.

    Raises :class:`InputError` with every problem: TOML syntax, unknown or
    mistyped fields, unknown kinds or classifications, invalid globs, rules
    that set neither kind nor classification.
    """
    try:
        rules = msgspec.toml.decode(data, type=RulesFile)
    except msgspec.ValidationError as invalid:
        try:
            as_json = msgspec.json.encode(tomllib.loads(data.decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, TypeError, RecursionError) as exc:
            raise _invalid_toml(name, exc) from exc
        raise InputError(record_problems(as_json, RulesFile, file=name, record="", decode_error=str(invalid))) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _invalid_toml(name, exc) from exc
    problems: list[Problem] = []
    for index, rule in enumerate(rules.rule):
        if rule.kind is None and rule.classification is None:
            problems.append(Problem(file=name, field=f"rule[{index}]", message="sets neither kind nor classification"))
    for field, pattern in [(f"rule[{i}].glob", r.glob) for i, r in enumerate(rules.rule)] + [
        (f"exclude[{i}]", g) for i, g in enumerate(rules.exclude)
    ]:
        try:
            wcglob.compile(pattern, flags=_FLAGS)
        except (ValueError, RuntimeError) as exc:
            problems.append(Problem(file=name, field=field, message=f"invalid glob {pattern!r}: {exc}"))
    if problems:
        raise InputError(problems)
    return rules


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


def classify(rules: RulesFile, paths: Iterable[str], *, rules_name: str) -> list[Classified]:
    """:func:`classify_all`, raising :class:`InputError` with every problem."""
    classified, problems = classify_all(rules, paths, rules_name=rules_name)
    if problems:
        raise InputError(problems)
    return classified
