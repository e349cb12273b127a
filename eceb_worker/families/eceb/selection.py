"""What an observation's selected artifacts show (ECEB-0.1 §6, §11.4,
§11.5): how many required artifacts it covers, its provenance failures and
its policy violations, judged once per distinct selection of a group by
:class:`eceb_worker.families.eceb.gates.Group`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.run import SelectedArtifact

__all__ = ["Selection", "judge_selection"]


class Selection(NamedTuple):
    """What one observation's selected artifacts show (ECEB-0.1 §6, §11.4, §11.5).

    Fields:
        covered: how many required artifacts are selected with their current digest.
        provenance: the provenance failures (messages): a required artifact
            not selected or selected with a stale digest, a selected artifact
            unknown to the registry or selected with a stale digest.
        policy: the policy violations (messages): a selected artifact of a
            classification the task does not allow, denied for the task, or
            unknown to the registry.
    """

    covered: int
    provenance: tuple[str, ...]
    policy: tuple[str, ...]


def judge_selection(
    selected: Sequence[SelectedArtifact],
    task: Task,
    required: Mapping[str, str],
    artifacts: Mapping[str, Artifact],
) -> Selection:
    """Judge one observation's selected artifacts against the task's
    required artifacts (``required``: current digest by id), its allowed
    classifications and denied artifacts, and the registry (``artifacts``).
    An artifact selected more than once (its own task-level failure) is
    judged once, by its first listed digest."""
    observed_of: dict[str, str] = {}
    for s in selected:
        observed_of.setdefault(s.artifact_id, s.observed_digest)
    provenance: list[str] = []
    policy: list[str] = []
    covered = 0
    for artifact_id, digest in required.items():
        observed = observed_of.get(artifact_id)
        if observed is None:
            provenance.append(f"required artifact {artifact_id!r} not selected")
        elif observed != digest:
            provenance.append(f"required artifact {artifact_id!r} selected with stale digest {observed}")
        else:
            covered += 1
    for artifact_id, observed in observed_of.items():
        artifact = artifacts.get(artifact_id)
        reasons = []
        if artifact is None:
            reasons.append("unknown artifact")
            provenance.append(f"selected artifact {artifact_id!r} is not in the registry")
        else:
            if artifact.classification not in task.allowed_classifications:
                reasons.append(f"classification {artifact.classification} not allowed")
            if artifact_id not in required and observed != artifact.source_digest:
                provenance.append(f"selected artifact {artifact_id!r} has stale digest {observed}")
        if artifact_id in task.denied_artifacts:
            reasons.append("denied for this task")
        if reasons:
            policy.append(f"selected {artifact_id!r}: {'; '.join(reasons)}")
    return Selection(covered, tuple(provenance), tuple(policy))
