"""eceb: the evaluator of the Enterprise Context Efficiency Benchmark (ECEB-0.1).

Layers, each importing only from those before it (a test checks this):

1. :mod:`eceb_worker.errors`, :mod:`eceb_worker.settings`: the exception
   hierarchy; every environment variable.
2. :mod:`eceb_worker.core`: the shared pure core.
3. :mod:`eceb_worker.corpus`: artifacts, registries, rules, corpus root,
   re-hash plans and verification (pure).
4. :mod:`eceb_worker.families`: one package per benchmark family (pure);
   :mod:`eceb_worker.documents` lists every published document.
5. :mod:`eceb_worker.render`: reports as people read them.
6. :mod:`eceb_worker.io`: files, object storage, temporary space.
7. :mod:`eceb_worker.pipeline`: a job's steps, for every executor.
8. :mod:`eceb_worker.executors`: this process and helper processes.
9. :mod:`eceb_worker.cluster`: the same steps on Celery over Redis.

The command lines are in :mod:`eceb_cli`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
