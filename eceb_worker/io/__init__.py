"""I/O at the edges: everything that touches files, object storage and
temporary space, behind small interfaces the pure layers define or take.

- :mod:`~eceb_worker.io.files`: local inputs read with located errors,
  outputs written atomically.
- :mod:`~eceb_worker.io.locations`: an input, local file or ``s3://``
  object, behind one :class:`~eceb_worker.io.locations.Location` (one dispatch).
- :mod:`~eceb_worker.io.s3`: the S3 client, the one mapping of botocore's
  errors, the one retry of broken reads, single objects.
- :mod:`~eceb_worker.io.local_corpus`, :mod:`~eceb_worker.io.s3_corpus`: the
  corpus adapters (:class:`~eceb_worker.corpus.storage.CorpusStorage`);
  :mod:`~eceb_worker.io.storage` opens one from its spec.
- :mod:`~eceb_worker.io.observers`: what S3 storage tells an observer (requests,
  retries, throttling), for a worker's metrics.
- :mod:`~eceb_worker.io.spill`: sorting more than fits in memory, in temporary files.
- :mod:`~eceb_worker.io.paired`: the paired task-context benchmark's edges
  (git, executables, the provider's process, checks, the ledger).
"""
