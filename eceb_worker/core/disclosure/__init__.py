"""Finding restricted text in answers (ECEB-0.1 §1, §17), pure and
policy-free: how text is normalised and tokenized (:mod:`.text`), hashes of
tokens and windows in bulk (:mod:`.hashing`), the index of the answers'
windows (:mod:`.index`), the one streaming pass of an artifact's bytes past
it (:mod:`.scan`) and the runs an answer shares with an artifact
(:mod:`.runs`). Which artifacts a task may not see is the family's
(:mod:`eceb_worker.families.eceb.disclosure`).
"""

from eceb_worker.core.disclosure.index import DEFAULT_MINIMUM_OVERLAP_TOKENS, AnswerIndex
from eceb_worker.core.disclosure.runs import answer_runs
from eceb_worker.core.disclosure.scan import ArtifactScan, Matches, scan_batch
from eceb_worker.core.disclosure.text import artifact_tokens, normalize, tokenize

__all__ = [
    "DEFAULT_MINIMUM_OVERLAP_TOKENS",
    "AnswerIndex",
    "ArtifactScan",
    "Matches",
    "answer_runs",
    "artifact_tokens",
    "normalize",
    "scan_batch",
    "tokenize",
]
