"""How an evaluation is asked to run (ECEB-0.1 §10-§17): the one set of
options chosen at the command line (``eceb evaluate``, ``eceb-dist
submit``), carried by the job's message and by each of its evaluation
shards to where they are read.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

from eceb_worker.families.eceb.disclosure import DEFAULT_DISCLOSURE_CHECK, DISCLOSURE_OFF, DisclosureCheck
from eceb_worker.families.eceb.planning import DEFAULT_SHARD_OBSERVATIONS, IN_PROCESS_SHARD_OBSERVATIONS
from eceb_worker.families.eceb.uncertainty import UncertaintyMode

__all__ = ["DEFAULT_EVALUATION", "IN_PROCESS_EVALUATION", "EvaluationOptions"]


class EvaluationOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The options of one evaluation, the same for every shard of it.

    Fields:
        disclosure_check: whether answers are checked for disclosures, and
            with which N (ECEB-0.1 §17; on when left out).
        uncertainty: ``bootstrap`` (estimate the savings intervals) or
            ``none`` (the report states they were not estimated), ECEB-0.1 §16.
        shard_observations: evaluation work per shard, in observations
            (greater than 0; the plan's, :func:`~eceb_worker.families.eceb.planning.plan_evaluation`).
    """

    disclosure_check: DisclosureCheck = DEFAULT_DISCLOSURE_CHECK
    uncertainty: UncertaintyMode = "bootstrap"
    shard_observations: Annotated[int, msgspec.Meta(gt=0)] = DEFAULT_SHARD_OBSERVATIONS

    @classmethod
    def chosen(
        cls,
        *,
        disclosure_check: bool = True,
        uncertainty: UncertaintyMode = "bootstrap",
        shard_observations: int = DEFAULT_SHARD_OBSERVATIONS,
    ) -> EvaluationOptions:
        """The options as a command line states them: ``disclosure_check``
        False is ``--no-disclosure-check`` (else the default N of §17),
        ``uncertainty`` is ``--uncertainty``, ``shard_observations``
        ``--shard-observations``."""
        check = DEFAULT_DISCLOSURE_CHECK if disclosure_check else DISCLOSURE_OFF
        return cls(disclosure_check=check, uncertainty=uncertainty, shard_observations=shard_observations)


DEFAULT_EVALUATION: Final = EvaluationOptions()
"""The default options of an evaluation on a cluster (``eceb-dist submit``)."""

IN_PROCESS_EVALUATION: Final = EvaluationOptions(shard_observations=IN_PROCESS_SHARD_OBSERVATIONS)
"""The default options of an evaluation run by the embedded executor
(``eceb evaluate``): its smaller shards (:data:`~eceb_worker.families.eceb.planning.IN_PROCESS_SHARD_OBSERVATIONS`)."""
