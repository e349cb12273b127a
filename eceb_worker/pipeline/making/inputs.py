"""The inputs of ``eceb run``, read and checked together: the benchmark and
its registry, the run profile and, for an LLM judge, its rubric (bound by
digest). Every problem of every input is raised together
(:class:`~eceb_worker.errors.InputError`), before anything is started,
paid or written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.urls import http_url_problem
from eceb_worker.corpus.registry import Registry
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark, task_root
from eceb_worker.families.eceb.making.costs import upper_bound
from eceb_worker.families.eceb.making.profile import CommandJudge, LlmJudge, RunProfile
from eceb_worker.families.eceb.run import Decoding
from eceb_worker.io.files import read_input
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.inputs import check_benchmark, registry_location

__all__ = ["MakingInputs", "load_making_inputs", "load_profile", "located_inputs"]


class MakingInputs(msgspec.Struct, frozen=True, kw_only=True):
    """Everything ``eceb run`` reads before it starts.

    Fields:
        benchmark, registry: checked together (ECEB-0.1 §5, §6).
        benchmark_digest: BLAKE3 of the benchmark file's bytes.
        task_root: the benchmark's task root.
        profile: the run profile; profile_dir its directory (relative paths
            in it are relative to it).
        rubric: the LLM judge's rubric text (``""`` for a command judge).
        files: every local file read (benchmark, registry, profile,
            rubric): what no output may replace.
    """

    benchmark: Benchmark
    registry: Registry
    benchmark_digest: str
    task_root: str
    profile: RunProfile
    profile_dir: Path
    rubric: str = ""
    files: tuple[Path, ...] = ()


_COUNTABLE_MICRO_USD: Final = SAFE_INTEGER_MAX >> 16
"""The largest upper-bound cost of one call that a run counts (2^37 micro-USD,
some $137,000): sums of many such stay exact integers in the journal."""
_DEFAULT_SAMPLING: Final = 1000
"""Anthropic's default temperature and top-p (1.0), in thousandths."""


def _unsent_decoding(path: Path, record: str, api: str, decoding: Decoding, problems: list[Problem]) -> None:
    """Refuse decoding a provider's API cannot take: the run would record
    parameters that were never applied (seed on the Responses API; seed,
    temperature and top-p on the Messages API, which take their defaults)."""
    unsent: list[tuple[str, str]] = []
    if api in ("openai-responses", "anthropic-messages") and decoding.seed is not None:
        unsent.append(("seed", "give null"))
    if api == "anthropic-messages":
        if decoding.temperature_milli != _DEFAULT_SAMPLING:
            unsent.append(("temperature_milli", "give 1000, the API's default, which is what applies"))
        if decoding.top_p_milli != _DEFAULT_SAMPLING:
            unsent.append(("top_p_milli", "give 1000, the API's default, which is what applies"))
    for field, fix in unsent:
        message = f"the {api} API takes no {field.removesuffix('_milli')}: it would be recorded but not applied; {fix}"
        problems.append(Problem(file=str(path), record=record, field=field, message=message))


def _program_problem(program: str, base_dir: Path) -> str:
    """Why ``program`` (a context system's or a judge's ``command[0]``) cannot
    be started from ``base_dir`` (``""``: it can)."""
    if "/" in program:
        found = base_dir / program
        if found.is_file() and os.access(found, os.X_OK):
            return ""
        return f"{program!r} is not an executable file (relative to the profile's directory)"
    if shutil.which(program) is None:
        return f"{program!r} is not a program on PATH"
    return ""


def _parties_problems(path: Path, profile: RunProfile, problems: list[Problem]) -> None:
    """Every party's address checked before anything is created or paid:
    base URLs, the context system's URL or program, a command judge's program."""
    models = [("model", profile.model)]
    if isinstance(profile.judge, LlmJudge):
        models.append(("judge.model", profile.judge.model))
    for record, spec in models:
        if spec.base_url and (why := http_url_problem(spec.base_url)):
            problems.append(Problem(file=str(path), record=record, field="base_url", message=why))
    system = profile.context_system
    if system.url and (why := http_url_problem(system.url)):
        problems.append(Problem(file=str(path), record="context_system", field="url", message=why))
    if system.command and (why := _program_problem(system.command[0], path.parent)):
        problems.append(Problem(file=str(path), record="context_system", field="command", message=why))
    if isinstance(profile.judge, CommandJudge) and (why := _program_problem(profile.judge.command[0], path.parent)):
        problems.append(Problem(file=str(path), record="judge", field="command", message=why))


def _countable_problems(path: Path, profile: RunProfile, problems: list[Problem]) -> None:
    """Prices and allowances whose upper-bound cost a call could not count
    exactly (beyond 2^53 - 1 micro-USD for the largest call) are refused."""
    priced = [("pricing", profile.pricing, profile.model.input_window_tokens, profile.decoding.max_output_tokens)]
    if isinstance(profile.judge, LlmJudge):
        judge = profile.judge
        priced.append(
            ("judge.pricing", judge.pricing, judge.model.input_window_tokens, judge.decoding.max_output_tokens)
        )
    for record, pricing, window, allowance in priced:
        if upper_bound(window, allowance, pricing) > _COUNTABLE_MICRO_USD:
            message = (
                "a call of the model's whole input window and output allowance would cost more than "
                f"{_COUNTABLE_MICRO_USD} micro-USD: such prices and allowances cannot be counted exactly"
            )
            problems.append(Problem(file=str(path), record=record, message=message))


def _profile(path: Path, problems: list[Problem]) -> RunProfile | None:
    try:
        data = read_input(path)
        profile = decode_document(data, RunProfile, file=str(path))
    except InputError as exc:
        problems.extend(exc.problems)
        return None
    system = profile.context_system
    if bool(system.command) == bool(system.url):
        message = "give exactly one of command (a program speaking JSON Lines) and url (an HTTP endpoint)"
        problems.append(Problem(file=str(path), record="context_system", message=message))
    _parties_problems(path, profile, problems)
    _countable_problems(path, profile, problems)
    _unsent_decoding(path, "decoding", profile.model.api, profile.decoding, problems)
    if isinstance(profile.judge, LlmJudge):
        _unsent_decoding(path, "judge.decoding", profile.judge.model.api, profile.judge.decoding, problems)
    return profile


def _rubric(path: Path, profile: RunProfile, problems: list[Problem]) -> str:
    judge = profile.judge
    if not isinstance(judge, LlmJudge):
        return ""
    rubric_path = path.parent / judge.rubric
    try:
        data = read_input(rubric_path)
    except InputError as exc:
        problems.extend(exc.problems)
        return ""
    actual = digest_bytes(data)
    if actual != judge.rubric_digest:
        message = f"the rubric {judge.rubric} has BLAKE3 {actual}, not the digest the profile binds"
        problems.append(Problem(file=str(path), record="judge", field="rubric_digest", message=message))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(file=str(rubric_path), message=f"not UTF-8 text (byte {exc.start})"))
        return ""


def load_profile(path: Path) -> RunProfile:
    """Read and check a run profile and its rubric (``eceb validate``);
    raises :class:`InputError` with every problem."""
    problems: list[Problem] = []
    profile = _profile(path, problems)
    if profile is not None:
        _rubric(path, profile, problems)
    if problems:
        raise InputError(problems)
    assert profile is not None
    return profile


def load_making_inputs(benchmark_path: Path, profile_path: Path) -> MakingInputs:
    """Read and check the benchmark (with its registry), the profile and the
    rubric; raises :class:`InputError` with every problem of all of them."""
    problems: list[Problem] = []
    profile = _profile(profile_path, problems)
    rubric = _rubric(profile_path, profile, problems) if profile is not None else ""
    benchmark: Benchmark | None = None
    registry: Registry | None = None
    benchmark_bytes = b""
    try:
        benchmark_bytes = read_input(benchmark_path)
        benchmark, registry = check_benchmark(benchmark_path)
    except InputError as exc:
        problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    assert profile is not None and benchmark is not None and registry is not None
    return MakingInputs(
        benchmark=benchmark,
        registry=registry,
        benchmark_digest=digest_bytes(benchmark_bytes),
        task_root=task_root(benchmark.tasks),
        profile=profile,
        profile_dir=profile_path.parent,
        rubric=rubric,
        files=(
            benchmark_path,
            benchmark_path.parent / benchmark.registry.path,
            profile_path,
            *([profile_path.parent / profile.judge.rubric] if isinstance(profile.judge, LlmJudge) else []),
        ),
    )


def located_inputs(
    benchmark_at: str, locator: Locator, *, profile: RunProfile, profile_dir: str, rubric: str
) -> tuple[MakingInputs, str]:
    """A cluster job's inputs (``eceb-dist run``): the benchmark and its
    registry read through ``locator`` (``s3://`` or a path every worker
    sees; their versions pinned by it), the profile and rubric its message
    carries (the rubric checked against the profile's digest again). Returns
    the inputs and where the registry is. Raises :class:`InputError` with
    every problem, ``StorageError``."""
    judge = profile.judge
    if isinstance(judge, LlmJudge) and digest_bytes(rubric.encode("utf-8")) != judge.rubric_digest:
        message = "the rubric the job carries is not the one the profile binds by digest"
        raise InputError([Problem(file="run profile", record="judge", field="rubric_digest", message=message)])
    location = locator.locate(benchmark_at)
    data = location.read()
    benchmark, registry = check_benchmark(benchmark_at, locator)
    inputs = MakingInputs(
        benchmark=benchmark,
        registry=registry,
        benchmark_digest=digest_bytes(data),
        task_root=task_root(benchmark.tasks),
        profile=profile,
        profile_dir=Path(profile_dir),
        rubric=rubric,
    )
    return inputs, registry_location(location, benchmark.registry.path).name
