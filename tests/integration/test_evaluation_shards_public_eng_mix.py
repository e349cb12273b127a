"""The shard tests of ``tests/unit/test_evaluation_shards.py`` on the real
corpus ``public-eng-mix`` (its 31 MB read from ``../shared/corpora``): any
shard size gives the report's bytes, a shard delivered twice is refused, a
detached shard evaluates like the run it came from, and a broken or bare
detached shard is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from eceb_worker.pipeline.inputs import CheckedInputs, check_inputs
from tests.support.paths import EXAMPLES
from tests.unit import test_evaluation_shards as shards

PUBLIC_ENG_MIX = EXAMPLES / "public-eng-mix"


@pytest.fixture(scope="module")
def example() -> tuple[Path, CheckedInputs]:
    return PUBLIC_ENG_MIX, check_inputs(PUBLIC_ENG_MIX / "benchmark.json", PUBLIC_ENG_MIX / "run.json")


@pytest.fixture(scope="module")
def reference(example: tuple[Path, CheckedInputs]) -> bytes:
    """The report of the example evaluated with the default options (computed once)."""
    return shards.evaluated(example)


@pytest.mark.parametrize("shard_observations", [1, 3, 17, 10**9])
def test_report_bytes_do_not_depend_on_the_evaluation_shard_size(
    example: tuple[Path, CheckedInputs], reference: bytes, shard_observations: int
) -> None:
    shards.test_report_bytes_do_not_depend_on_the_evaluation_shard_size(example, reference, shard_observations)


def test_a_shard_delivered_twice_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    shards.test_a_shard_delivered_twice_is_refused(example)


@pytest.mark.parametrize("shard_observations", [1, 9, 10**9])
def test_a_detached_shard_evaluates_like_the_run_it_came_from(
    example: tuple[Path, CheckedInputs], shard_observations: int
) -> None:
    shards.test_a_detached_shard_evaluates_like_the_run_it_came_from(example, shard_observations)


def test_a_part_whose_records_do_not_match_their_positions_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    shards.test_a_part_whose_records_do_not_match_their_positions_is_refused(example)


def test_a_detached_shard_without_lent_artifacts_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    shards.test_a_detached_shard_without_lent_artifacts_is_refused(example)
