"""The cluster: a job's steps as Celery tasks over Redis, and the only
place that imports celery, kombu or redis.

- :mod:`~eceb_worker.cluster.app`: the Celery application and its settings
  (``celery -A eceb_worker.cluster.app worker``; JSON only, late acks).
- :mod:`~eceb_worker.cluster.tasks`: the tasks, thin wrappers over the
  pipeline's steps (:mod:`eceb_worker.pipeline.jobs`).
- :mod:`~eceb_worker.cluster.retry`: the one retry policy of every task.
- :mod:`~eceb_worker.cluster.deliveries`: the bound on redeliveries of a task
  whose worker process dies.
- :mod:`~eceb_worker.cluster.state`: a job's state in Redis.
- :mod:`~eceb_worker.cluster.run_journal`: a made run's journal of paid
  calls in Redis, shared by every worker (``eceb-dist run``).
- :mod:`~eceb_worker.cluster.pacing`: the providers' rate limits and a
  429's pause, shared by every worker.
- :mod:`~eceb_worker.cluster.making`: what a worker lends the execution
  shards of a made run (the journal and the pacing).
- :mod:`~eceb_worker.cluster.client`: what ``eceb-dist`` uses: connecting, submitting.
- :mod:`~eceb_worker.cluster.logs`: a worker's log lines, each about a job
  naming the job and the shard (text or JSON).
- :mod:`~eceb_worker.cluster.metrics`: a worker's Prometheus metrics.
- :mod:`~eceb_worker.cluster.views`: a job's state as ``status --json`` and
  ``jobs`` show it.
"""
