"""Corpus storage in an S3-compatible bucket (AWS S3, MinIO, Ceph, ...).

Credentials come only from boto3's default chain (environment, shared files,
instance roles); they are never printed, logged or written anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from eceb_worker.engine.digests import HashedBytes, digest_chunks
from eceb_worker.engine.ports import ListedEntry
from eceb_worker.errors import ArtifactMissing, ArtifactUnreadable, StorageError

__all__ = ["S3Storage", "parse_s3_url"]

CHUNK_BYTES: Final = 1024 * 1024
DEFAULT_CONCURRENCY: Final = 16
_MISSING_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_BUCKET_GONE: Final = frozenset({"NoSuchBucket"})


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/prefix`` into ``(bucket, prefix)``; the prefix has no
    leading or trailing ``/`` and may be empty. Raises ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3://bucket/prefix URL: {url!r}")
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"an s3:// URL takes no credentials, query or fragment: s3://{parts.netloc.split('@')[-1]}/…")
    return parts.netloc, parts.path.strip("/")


class S3Storage:
    """A corpus stored under ``s3://bucket/prefix``: artifact ``path`` is the
    object ``prefix/path``. Portable paths cannot leave the prefix.

    One boto3 client is shared by all threads (clients are thread-safe); its
    connection pool is sized to ``concurrency`` and it retries with botocore's
    ``standard`` mode (throttling, 5xx and connection errors, with backoff).
    """

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_attempts: int = 8,
        client: Any = None,
    ) -> None:
        self._bucket, self._prefix = parse_s3_url(url)
        self._concurrency = max(1, concurrency)
        if client is None:
            config = botocore.config.Config(
                max_pool_connections=self._concurrency,
                retries={"mode": "standard", "max_attempts": max_attempts},
                s3={"addressing_style": "path"} if endpoint_url else None,
            )
            client = boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
        self._client = client

    @property
    def location(self) -> str:
        """``s3://bucket/prefix`` (the endpoint is not shown: it may embed credentials)."""
        return f"s3://{self._bucket}/{self._prefix}" if self._prefix else f"s3://{self._bucket}"

    @property
    def concurrency(self) -> int:
        """Concurrent object reads per process."""
        return self._concurrency

    def _key(self, path: str) -> str:
        return f"{self._prefix}/{path}" if self._prefix else path

    def hash_artifact(self, path: str) -> HashedBytes:
        """Stream the object's bytes through BLAKE3; ``(size_bytes, hex digest)``.

        Raises ``ArtifactMissing`` (no such key), ``ArtifactUnreadable``
        (access denied, read failed after retries) or ``StorageError`` (the
        bucket does not exist, the endpoint cannot be reached).
        """
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._key(path))
            body = response["Body"]
            try:
                return digest_chunks(body.iter_chunks(CHUNK_BYTES))
            finally:
                body.close()
        except botocore.exceptions.ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _MISSING_CODES:
                raise ArtifactMissing(path, "no such object") from None
            if code in _BUCKET_GONE:
                raise StorageError(f"{self.location}: no such bucket") from None
            raise ArtifactUnreadable(path, f"{code or 'error'}: {exc.response.get('Error', {}).get('Message', '')}".strip()) from None
        except botocore.exceptions.EndpointConnectionError as exc:
            raise StorageError(f"{self.location}: cannot reach the endpoint ({type(exc).__name__})") from None
        except (botocore.exceptions.BotoCoreError, OSError) as exc:
            raise ArtifactUnreadable(path, f"read failed: {type(exc).__name__}") from None

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every object under the prefix (paginated, 1,000 keys a page).

        Raises ``StorageError`` when the bucket cannot be listed.
        """
        prefix = f"{self._prefix}/" if self._prefix else ""
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    key = item["Key"]
                    if key.endswith("/"):
                        continue
                    yield ListedEntry(path=key[len(prefix) :], size_bytes=int(item["Size"]))
        except botocore.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise StorageError(f"{self.location}: cannot list ({code})") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise StorageError(f"{self.location}: cannot list ({type(exc).__name__})") from None
