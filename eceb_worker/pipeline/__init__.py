"""The pipeline: a job's steps (check the inputs, plan, map, reduce), the
same for every executor.

- :mod:`~eceb_worker.pipeline.inputs`: reading and checking a job's inputs.
- :mod:`~eceb_worker.pipeline.messages`: what the steps send each other
  (jobs, shard tasks, answers), references and digests only.
- :mod:`~eceb_worker.pipeline.shards`: running one shard task (the map step
  of every stage), in whichever process.
- :mod:`~eceb_worker.pipeline.jobs`: the one orchestration of a verification
  or an evaluation, and :func:`~eceb_worker.pipeline.jobs.run_job` to drive
  it in this process.
- :mod:`~eceb_worker.pipeline.register`: registering a corpus.
- :mod:`~eceb_worker.pipeline.paired`: the paired task-context benchmark's
  commands over an experiment directory.
"""
