"""The pure core of eceb: models, canonical JSON, corpus root, registries,
rules, shard plans, verification map/reduce. Imports no celery, redis or boto3;
reads bytes only through :class:`eceb_worker.engine.ports.CorpusStorage`.
"""
