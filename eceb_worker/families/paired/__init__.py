"""The paired task-context benchmark (``shared/seeds/task-context-benchmark-reference.md``).

Its place: a paired A/B comparison of two context arms (a frozen overview,
a task cue) given to a coding-agent CLI on the same tasks, with a fixed
counterbalanced schedule, a pilot gate, preflight freezing, complete attempt
journals, exact credit estimates, paired differences and a verdict. Its
documents and their pure checks go in this package, behind the
:class:`~eceb_worker.families.Family` interface, and are listed in
:data:`eceb_worker.documents.DOCUMENTS`. The rest of the family is a
``paired`` package in each later layer: its edges (git, executables, the
provider's process, re-executed checks, the ledger) in
:mod:`eceb_worker.io.paired`, its commands over an experiment directory in
:mod:`eceb_worker.pipeline.paired`, its text for people in
:mod:`eceb_worker.render.paired`, and its command lines in
``eceb_cli/pair*.py``.
"""
