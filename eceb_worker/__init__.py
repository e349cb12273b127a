"""eceb: the evaluator of the Enterprise Context Efficiency Benchmark (ECEB-0.1).

The engine (:mod:`eceb_worker.engine`) is pure; storage adapters live in
:mod:`eceb_worker.storage`, executors in :mod:`eceb_worker.executors`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
