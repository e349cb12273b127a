"""The corpus (ECEB-0.1 §5, §6), pure: artifacts and their vocabularies, the
registry reader and writer, rules files, the corpus root, re-hash plans,
and verification's map and reduce steps. Storage is reached only through
the :class:`~eceb_worker.corpus.storage.CorpusStorage` Protocol, implemented
in :mod:`eceb_worker.io`.
"""
