"""The paired task-context benchmark (``shared/seeds/task-context-benchmark-reference.md``).

Its place: a paired A/B comparison of two context arms (a frozen overview,
a task cue) given to a coding-agent CLI on the same tasks, with a fixed
counterbalanced schedule, a pilot gate, preflight freezing, complete attempt
journals, exact credit estimates, paired differences and a verdict. Its
documents and their pure checks go in this package, behind the
:class:`~eceb_worker.families.Family` interface, and are listed in
:data:`eceb_worker.documents.DOCUMENTS`; the work that touches git, the
provider CLI and the journal store goes in :mod:`eceb_worker.pipeline` and
:mod:`eceb_worker.io`, as it does for ECEB-0.1.
"""
