"""The shared pure core: what every benchmark family and every adapter rests on.

- :mod:`~eceb_worker.core.canonical`: the canonical JSON encoder of every
  document eceb hashes or writes (RFC 8785 for its documents).
- :mod:`~eceb_worker.core.digests`: BLAKE3 digests and their wire types.
- :mod:`~eceb_worker.core.paths`: the portable corpus-relative path rule.
- :mod:`~eceb_worker.core.arithmetic`: integer money, means and ratios.
- :mod:`~eceb_worker.core.decoding`: lenient decoding and every problem of a
  record or document, located by file, record and field.
- :mod:`~eceb_worker.core.schemas`: JSON Schemas (2020-12) generated from Structs.
- :mod:`~eceb_worker.core.urls`: ``s3://`` names parsed and joined, and
  credentials removed from URLs before they are printed.

The core performs no I/O, starts no thread or process, and imports no
service client (celery, redis, boto3, botocore, click): a test checks its
imports mechanically (``tests/unit/test_layers.py``).
"""
