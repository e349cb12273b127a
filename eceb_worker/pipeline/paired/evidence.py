"""The evidence of task-pair directories read for ``eceb pair summary``
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs": "Summary resolves its input directory to the absolute physical
directory"): which directories the inputs name, the freeze they are
checked against, the assessment bundles, and each pair's and attempt's
files, read once each and never through a path that leaves its directory.
Reads only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.assessments import Assessment, AssessmentBundle
from eceb_worker.families.paired.bound_files import Seen, seen_bytes
from eceb_worker.families.paired.journal import JOURNAL_ORDER
from eceb_worker.families.paired.records import ArmCommand, Freeze, Manifest
from eceb_worker.families.paired.specs import (
    TASK_SCHEMAS,
    TaskSpec,
)
from eceb_worker.families.paired.summary_document import Summary
from eceb_worker.io.files import read_input
from eceb_worker.pipeline.paired.experiment import Experiment, decode_record

__all__ = [
    "writable",
    "AttemptFiles",
    "PairFiles",
    "decode_record",
    "pair_directories",
    "located_text",
    "physical_path",
    "policy_freeze",
    "problem_text",
    "read_assessments",
    "read_attempt",
    "read_optional",
    "read_task",
]

T = TypeVar("T", bound=msgspec.Struct)


MAX_FILE_BYTES: Final = 1 << 30
"""No file of a pair directory is read past this size (1 GiB): a larger one is named, not read."""


def _shown(path: str | Path) -> str:
    """``path`` as text that can be written: bytes of a name that are not
    UTF-8 shown as ``\\xNN`` escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def physical_path(given: Path) -> Path:
    """``given`` as an absolute physical path (every symbolic link resolved)."""
    return Path(os.path.realpath(given))


def pair_directories(inputs: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The task-pair directories of ``inputs`` and their experiment
    directories, each an absolute physical path, once each, sorted. Raises
    :class:`InputError` naming every input that is neither a task-pair
    directory (a ``manifest.json``, or a ``task-pair-*`` name) nor an
    experiment directory (a ``freeze.json``), and every ``task-pair-*``
    entry of an experiment whose real path leaves it."""
    problems: list[Problem] = []
    pairs: set[Path] = set()
    experiments: set[Path] = set()
    for given in inputs:
        physical = physical_path(given)
        if not physical.is_dir():
            problems.append(Problem(file=str(given), message="not a directory"))
        elif (physical / "manifest.json").exists() or physical.name.startswith("task-pair-"):
            pairs.add(physical)
        elif (physical / "freeze.json").is_file():
            experiments.add(physical)
            for entry in Experiment(physical).pair_directories():
                real = physical_path(entry)
                if real.parent != physical:
                    message = f"its real path {real} leaves the experiment directory: refused"
                    problems.append(Problem(file=str(entry), message=message))
                else:
                    pairs.add(real)
        else:
            message = "neither a task-pair directory (manifest.json) nor an experiment directory (freeze.json)"
            problems.append(Problem(file=str(given), message=message))
    if problems:
        raise InputError(problems)
    return sorted(pairs), sorted(experiments)


def located_text(problem: Problem) -> str:
    """``problem`` as text without its file (record, field, message, the
    parts there are), for a summary's list where the file is said before it."""
    return " ".join(part for part in (problem.record, problem.field, problem.message) if part)


def problem_text(exc: InputError) -> str:
    """The first problems of ``exc`` in one line (record, field, message), for a summary's list."""
    return "; ".join(located_text(p) for p in exc.problems[:5])


class PairFiles:
    """The files of one pair directory, each read at most once, never one
    whose real path leaves the directory (named in ``problems``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[str] = []
        self._cache: dict[str, bytes | None] = {}

    def read(self, relative: str) -> bytes | None:
        """The bytes of ``relative`` (a path in the pair directory), or ``None``
        when it is missing, unreadable or refused (then named in ``problems``)."""
        if relative not in self._cache:
            self._cache[relative] = self._read(relative)
        return self._cache[relative]

    def _read(self, relative: str) -> bytes | None:
        path = self.root / relative
        if not os.path.lexists(path):
            return None
        real = physical_path(path)
        if real != self.root and self.root not in real.parents:
            self.problems.append(f"{relative}: its real path {real} leaves the pair directory: refused")
            return None
        try:
            size = real.stat().st_size
        except OSError:
            size = 0
        if size > MAX_FILE_BYTES:
            self.problems.append(f"{relative}: {size} bytes, more than any journal or pair file holds: not read")
            return None
        try:
            return read_input(real)
        except InputError as exc:
            self.problems.append(f"{relative}: {problem_text(exc)}")
            return None

    def seen(self, locations: Iterable[str]) -> dict[str, Seen]:
        """What each of ``locations`` (paths in the pair directory) is now
        (:meth:`read`: what cannot be read has no entry)."""
        found: dict[str, Seen] = {}
        for location in locations:
            data = self.read(location)
            if data is not None:
                found[location] = seen_bytes(data)
        return found

    def listing(self, relative: str = "") -> list[str]:
        """Every entry under ``relative`` (recursively, relative to the root; directories end with ``/``)."""
        found = []
        base = self.root / relative if relative else self.root
        for top, directories, files in os.walk(base, followlinks=False):
            here = Path(top).relative_to(self.root)
            for name in files:
                found.append((here / name).as_posix())
            for name in list(directories):
                if os.path.islink(Path(top) / name):
                    # a link to a directory counts as a file, never entered
                    found.append((here / name).as_posix())
                    directories.remove(name)
        return sorted(found)


def policy_freeze(pairs: Sequence[Path], experiments: Sequence[Path]) -> tuple[Freeze, str]:
    """The freeze every pair is checked against (module)."""
    bound: dict[str, list[str]] = {}
    sources: dict[str, bytes] = {}
    for experiment in experiments:
        data = read_input(experiment / "freeze.json")
        digest = digest_bytes(data)
        bound.setdefault(digest, []).append(str(experiment / "freeze.json"))
        sources[digest] = data
    if not experiments:
        for pair in pairs:
            try:
                manifest = decode_record(read_input(pair / "manifest.json"), Manifest, str(pair / "manifest.json"))
            except InputError:
                continue
            bound.setdefault(manifest.freeze_digest, []).append(str(pair / "manifest.json"))
            try:
                data = read_input(pair / "freeze.json")
            except InputError:
                continue
            sources.setdefault(digest_bytes(data), data)
    if len(bound) > 1:
        shown = "; ".join(f"{digest} ({', '.join(sorted(files))})" for digest, files in sorted(bound.items()))
        message = f"the directories hold pairs of {len(bound)} different freezes: {shown}; summarize one experiment"
        raise InputError([Problem(file=str(sorted(pairs or experiments)[0]), message=message)])
    if not bound:
        raise InputError([Problem(file=str(pairs[0]), message="no readable manifest.json binds a freeze")])
    (digest,) = bound
    if digest not in sources:
        message = f"no freeze.json with the BLAKE3 {digest} the manifests bind"
        raise InputError([Problem(file=str(pairs[0]), message=message)])
    return decode_record(sources[digest], Freeze, bound[digest][0]), digest


def read_assessments(paths: Sequence[Path]) -> tuple[dict[str, list[Assessment]], list[str], bool]:
    """Every assessment of ``paths`` by attempt id, each bundle's path and
    BLAKE3, and whether any is synthetic. InputError names every invalid bundle."""
    by_attempt: dict[str, list[Assessment]] = {}
    shown: list[str] = []
    synthetic = False
    problems: list[Problem] = []
    for path in sorted({physical_path(given) for given in paths}):
        physical = path
        try:
            data = read_input(physical)
            bundle = decode_document(data, AssessmentBundle, file=str(path))
        except InputError as exc:
            problems += exc.problems
            continue
        shown.append(f"{physical} {digest_bytes(data)}")
        synthetic = synthetic or bundle.synthetic
        for assessment in bundle.assessments:
            by_attempt.setdefault(assessment.attempt, []).append(assessment)
    if problems:
        raise InputError(problems)
    return by_attempt, shown, synthetic


@dataclass
class AttemptFiles:
    """What one attempt directory holds, read."""

    files: PairFiles
    prefix: str
    attempt_id: str
    present: dict[str, bytes] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    def seen(self) -> dict[str, Seen]:
        """What each journal file present is (its BLAKE3 and size), by name."""
        return {name: Seen(blake3=self.digests[name], size=len(data)) for name, data in self.present.items()}

    def record(self, name: str, struct: type[T]) -> T | None:
        """The journal file ``name`` decoded as ``struct`` (canonical bytes
        only), or ``None`` when missing or invalid (then named in ``evidence``)."""
        data = self.present.get(name)
        if data is None:
            return None
        try:
            return decode_record(data, struct, f"{self.prefix}/{name}")
        except InputError as exc:
            self.evidence.append(f"{name}: {problem_text(exc)}")
            return None


def read_attempt(files: PairFiles, arm: ArmCommand, attempt_id: str) -> AttemptFiles | None:
    """The journal files of ``arm``'s attempt directory, read, with every
    file no runner writes named as added; ``None`` when the directory does not exist."""
    prefix = arm.attempt.rstrip("/")
    if not os.path.lexists(files.root / prefix):
        return None
    read = AttemptFiles(files=files, prefix=prefix, attempt_id=attempt_id)
    listed = files.listing(prefix)
    for entry in listed:
        name = entry.removeprefix(f"{prefix}/")
        if name not in JOURNAL_ORDER:
            read.evidence.append(f"{name}: added to the journal (no runner writes it)")
    for name in JOURNAL_ORDER:
        data = files.read(f"{prefix}/{name}")
        if data is not None:
            read.present[name] = data
            read.digests[name] = digest_bytes(data)
    return read


def read_task(files: PairFiles, manifest: Manifest, problems: list[str]) -> TaskSpec | None:
    """The pair's ``task.json`` as the manifest's task kind, or ``None`` (why appended to ``problems``)."""
    data = files.read("task.json")
    if data is None:
        return None
    try:
        task: TaskSpec = decode_document(data, TASK_SCHEMAS[manifest.pair.task.value], file="task.json")
    except InputError as exc:
        problems.append(f"task.json: {problem_text(exc)}")
        return None
    return task


def read_optional(files: PairFiles, name: str, struct: type[T], problems: list[str]) -> T | None:
    """The pair's file ``name`` decoded as ``struct``, or ``None`` when missing
    or invalid (why appended to ``problems``)."""
    data = files.read(name)
    if data is None:
        return None
    try:
        return decode_document(data, struct, file=name)
    except InputError as exc:
        problems.append(f"{name}: {problem_text(exc)}")
        return None


def writable(document: Summary) -> Summary:
    """``document`` with every text writable as UTF-8: a name's bytes that
    are not UTF-8 (a file or directory named so) shown as ``\\xNN`` escapes."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return _shown(value)
        if isinstance(value, list | tuple):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        return value

    return msgspec.convert(clean(msgspec.to_builtins(document)), Summary)
