"""The disclosure check of an evaluation (ECEB-0.1 §1, §17): model output is
a possible exfiltration channel, and restricted-data disclosure is a hard
failure.

Each concept in a module of its own:

* :mod:`.check`: the setting, a finding (:class:`DisclosureHit`), an
  answer's findings and how the disclosure gate reads them;
* :mod:`.spec`: what a scan compares the corpus with (the answers of the
  tasks that may not see something, and what each task may see);
* :mod:`.scanner`: the scan of one re-hash shard, on the bytes the re-hash
  reads (the text and the index are in :mod:`eceb_worker.core.disclosure`);
* :mod:`.findings`: the shards' partial results and their reduce.
"""

from eceb_worker.families.eceb.disclosure.check import (
    DEFAULT_DISCLOSURE_CHECK,
    DISCLOSURE_OFF,
    LISTED_FINDINGS,
    AnswerFindings,
    DisclosureCheck,
    DisclosureHit,
    TaskFindings,
    answer_key,
    describe_hit,
    describe_more,
    findings_by_task,
)

__all__ = [
    "DEFAULT_DISCLOSURE_CHECK",
    "DISCLOSURE_OFF",
    "LISTED_FINDINGS",
    "AnswerFindings",
    "DisclosureCheck",
    "DisclosureHit",
    "TaskFindings",
    "answer_key",
    "describe_hit",
    "describe_more",
    "findings_by_task",
]
