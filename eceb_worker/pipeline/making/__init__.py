"""Making an ECEB-0.1 run (``eceb run``): the orchestration.

- :mod:`.retry`: the one retry policy of paid calls.
- :mod:`.pacing`: the provider's request and token limits, kept across threads.
- :mod:`.inputs`: the benchmark, registry, profile and rubric, read and checked together.
- :mod:`.contexts`: each execution's context (eceb's baselines, the user's system) and prompt.
- :mod:`.calls`: one execution's answer and judgment, journaled.
- :mod:`.session`: the plan driven through the journal, N executions in flight; the run written.
"""
