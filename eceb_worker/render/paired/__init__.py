"""The paired task-context benchmark's outputs as people read them
(``shared/seeds/task-context-benchmark-reference.md``; the ``--json`` forms
are the documents of :mod:`eceb_worker.families.paired` themselves). Pure:
every function returns lines, the caller prints them.

- :mod:`~eceb_worker.render.paired.plan`: ``eceb pair plan``.
- :mod:`~eceb_worker.render.paired.status`: ``eceb pair status``.
- :mod:`~eceb_worker.render.paired.summary`: ``eceb pair summary`` (text and CSV).
"""
