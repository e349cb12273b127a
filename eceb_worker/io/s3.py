"""S3-compatible object storage (AWS S3, MinIO, Ceph, ...): the client, the
one mapping of botocore's errors to eceb's, and the one way a broken read is
retried. Single objects (inputs read, reports written atomically) are in
:mod:`eceb_worker.io.objects`, a corpus under a prefix in
:mod:`eceb_worker.io.s3_corpus`.

Retries: every request is retried by botocore's ``standard`` mode
(throttling, 5xx and connection errors, with back-off, up to
``max_attempts``). A connection that breaks while an object's bytes stream
is not covered by those: the read resumes where it stopped with a ranged GET
of the same version (``If-Match`` its ETag), :data:`STREAM_ATTEMPTS` reads
in all, with back-off; bytes that fail the checksum the store sent cannot be
resumed (the digest has taken them in): the object is read again whole,
:data:`~eceb_worker.core.digests.CHECK_READS` reads in all, with the same
back-off. Both are in :mod:`eceb_worker.io.s3_reads`.

Checksums: botocore's flexible checksums (``x-amz-checksum-*`` headers,
``aws-chunked`` bodies) are sent and checked only when an operation requires
them, unless ``ECEB_S3_CHECKSUMS`` is ``when_supported``
(:mod:`eceb_worker.settings`): many S3-compatible stores answer 400
InvalidArgument to them, and eceb checks every artifact's BLAKE3 digest
itself.

Errors: :func:`s3_error` is the one table from botocore's exceptions and S3
error codes to eceb's errors, for each role a request plays (hashing an
artifact, listing a corpus, reading an input, writing an output). A bucket
that does not exist is :class:`~eceb_worker.errors.NoSuchBucketError`
(final: no retry policy runs it again). The
storage failing as a whole is told alike whatever the role: no usable
credentials, an endpoint that cannot be reached (after the retries above),
an invalid endpoint; those messages name the endpoint tried
(:func:`describe_endpoint`, redacted).

Credentials come only from boto3's default chain (environment, shared files,
instance roles); they are never printed, logged or written anywhere.
Messages name objects by their ``s3://`` URL.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from eceb_worker.core.urls import redact_url
from eceb_worker.errors import (
    ArtifactMissing,
    ArtifactUnreadable,
    EcebError,
    InputError,
    NoSuchBucketError,
    OutputError,
    Problem,
    StorageError,
)
from eceb_worker.io.observers import watch_client
from eceb_worker.settings import read_setting

__all__ = [
    "upload_file",
    "CHECKSUM_FAILED",
    "STREAM_BROKEN",
    "CHUNK_BYTES",
    "FAILURES",
    "MISSING_CODES",
    "NO_SUCH_BUCKET",
    "REQUEST_ERRORS",
    "STREAM_ATTEMPTS",
    "BrokenStream",
    "CorruptBody",
    "ObjectChanged",
    "Role",
    "check_endpoint",
    "describe_endpoint",
    "error_code",
    "make_s3_client",
    "map_reads",
    "s3_error",
]

T = TypeVar("T")

CHUNK_BYTES: Final = 1024 * 1024
"""Bytes read from an object's body at a time."""
DEFAULT_CONCURRENCY: Final = 16
REQUEST_ATTEMPTS: Final = 8
"""Attempts of one request in all, the first included (botocore's
``standard`` retry mode, its ``total_max_attempts``). Between attempts it
waits a random time, at most 50 ms x 2^i before retry i+1 (1 s x 2^i, up to
20 s, when throttled): an endpoint that refuses connections is given up
after at most 6.35 s of waiting (docs/SETTINGS.md)."""
STREAM_ATTEMPTS: Final = 4
"""Reads of one object's bytes in all: the first, then resumes where the
connection broke off."""
STREAM_BACKOFF_S: Final = 0.1
"""Wait before the first resume; doubled before each further one."""
CONNECT_TIMEOUT_S: Final = 10
READ_TIMEOUT_S: Final = 30
"""Seconds before a silent endpoint counts as unreachable (each attempt)."""

_INVALID_ENDPOINT: Final = "invalid S3 endpoint URL (expected http[s]://host[:port])"
MISSING_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})
"""The S3 error codes of an object or bucket that does not exist."""
_CHANGED: Final = frozenset({"PreconditionFailed", "412"})
NO_SUCH_BUCKET: Final = "NoSuchBucket"
# The service refuses the credentials themselves: every request would fail alike.
_CREDENTIALS_REJECTED: Final = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AuthorizationHeaderMalformed",
    }
)
# No credentials could be found or loaded on this side.
_NO_CREDENTIALS: Final = (
    botocore.exceptions.NoCredentialsError,
    botocore.exceptions.PartialCredentialsError,
    botocore.exceptions.CredentialRetrievalError,
)
_UNREACHABLE: Final = (botocore.exceptions.ConnectionError, botocore.exceptions.ReadTimeoutError)
REQUEST_ERRORS: Final = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError)
"""What a request (or reading its body) may raise; :func:`s3_error` maps each."""
STREAM_BROKEN: Final = (botocore.exceptions.BotoCoreError, OSError)
"""What a body's read raises when its connection breaks off (resumable)."""
CHECKSUM_FAILED: Final = botocore.exceptions.FlexibleChecksumError
"""What a body's read raises when its bytes fail the checksum the store sent."""


class ObjectChanged(Exception):
    """The object is no longer the version asked for (its ETag differs)."""


class BrokenStream(Exception):
    """An object's body broke off :data:`STREAM_ATTEMPTS` times; carries the
    last error's type name."""


class CorruptBody(Exception):
    """The bytes read do not match the checksum the store sent with them
    (botocore's ``FlexibleChecksumError``): corrupted on their way. Carries
    how often that happened."""


FAILURES: Final = (*REQUEST_ERRORS, ObjectChanged, BrokenStream, CorruptBody)
"""Everything :func:`s3_error` maps."""


class Role(enum.Enum):
    """What a failed request was for: it decides the error and its words."""

    ARTIFACT = "hashing an artifact"
    LISTING = "listing a corpus"
    READING = "reading an input"
    WRITING = "writing an output"


def describe_endpoint(client: Any) -> str:
    """How messages name the endpoint ``client`` sends its requests to:
    ``the endpoint URL`` for a custom one, ``the AWS default endpoint of
    region R (URL)`` otherwise; the URL redacted (:func:`~eceb_worker.core.urls.redact_url`)."""
    meta = getattr(client, "meta", None)
    url = redact_url(str(getattr(meta, "endpoint_url", "") or ""))
    if not url:
        return "the endpoint"
    host = urlsplit(url).hostname or ""
    if host == "amazonaws.com" or host.endswith(".amazonaws.com"):
        return f"the AWS default endpoint of region {getattr(meta, 'region_name', None) or 'us-east-1'} ({url})"
    return f"the endpoint {url}"


def s3_error(  # noqa: PLR0911, C901, PLR0912 - a table of the failures S3 gives
    exc: BaseException, role: Role, where: str, path: str = "", *, endpoint: str = "the endpoint"
) -> EcebError:
    """The eceb error for a failed request (one of :data:`FAILURES`).

    ``where`` names the object or corpus (an ``s3://`` URL); ``path`` is the
    artifact's corpus-relative path (role ``ARTIFACT``); ``endpoint`` is how
    the endpoint is named (:func:`describe_endpoint`). The storage failing
    as a whole (no usable credentials, endpoint unreachable after the
    retries or invalid, no bucket, credentials refused) is a
    ``StorageError``, told alike for every role; one artifact's failure an
    ``ArtifactReadError``; an input missing or changed an
    :class:`InputError`; an output that cannot be written an
    :class:`OutputError`. A request botocore refuses to send
    (ParamValidationError) is the caller's input, never the storage:
    an :class:`InputError` (an input, a corpus), an :class:`OutputError`, or
    for an artifact ``ArtifactUnreadable``.
    """
    kind = type(exc).__name__
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        return _client_error(code, str(error.get("Message", "")), role, where, path)
    if isinstance(exc, botocore.exceptions.ParamValidationError):
        return _invalid_request(role, where, path)
    if isinstance(exc, _NO_CREDENTIALS):
        return StorageError(
            f"{where}: no usable AWS credentials ({kind}) for {endpoint}; boto3 looks for them in the AWS_* "
            "environment variables, ~/.aws/ and instance roles"
        )
    if isinstance(exc, _UNREACHABLE):
        # Connection refused, connect or read timeout, proxy or TLS failure, after the retries.
        return StorageError(f"{where}: cannot reach {endpoint} ({kind}, after every retry)")
    if isinstance(exc, botocore.exceptions.EndpointResolutionError):
        return StorageError(f"{where}: invalid endpoint ({kind})")
    if isinstance(exc, ObjectChanged):
        if role is Role.ARTIFACT:
            return ArtifactUnreadable(path, "changed while it was read")
        return InputError([Problem(file=where, message="changed while the job ran (its ETag differs)")])
    if isinstance(exc, CorruptBody):
        if role is Role.ARTIFACT:
            return ArtifactUnreadable(path, f"corrupted in transit ({exc})")
        return StorageError(f"{where}: corrupted in transit ({exc})")
    if isinstance(exc, BrokenStream):
        kind = str(exc)
    if role is Role.LISTING:
        return StorageError(f"{where}: cannot list ({kind})")
    if role is Role.READING:
        return StorageError(f"{where}: cannot read ({kind})")
    if role is Role.WRITING:
        return StorageError(f"{where}: cannot write ({kind})")
    return ArtifactUnreadable(path, f"read failed: {kind}")


def _invalid_request(role: Role, where: str, path: str) -> EcebError:
    """:func:`s3_error` for a request botocore refused to send
    (ParamValidationError): what the caller gave is wrong, the storage is
    not at fault. Its text is not repeated (it quotes the bucket name)."""
    detail = "not a valid S3 request (ParamValidationError)"
    if role is Role.ARTIFACT:
        return ArtifactUnreadable(path, detail)
    detail += ": check the bucket name and key"
    if role is Role.WRITING:
        return OutputError(f"{where}: {detail}")
    return InputError([Problem(file=where, message=detail)])


def _client_error(code: str, message: str, role: Role, where: str, path: str) -> EcebError:  # noqa: PLR0911 - a table
    """:func:`s3_error` for an error the service answered with (``code``)."""
    shown = code or "error"
    if role is Role.WRITING:
        return OutputError(f"{where}: no such bucket" if code == NO_SUCH_BUCKET else f"{where}: cannot write ({shown})")
    if code == NO_SUCH_BUCKET:
        listing = role is Role.LISTING
        return NoSuchBucketError(f"{where}: cannot list ({shown})" if listing else f"{where}: no such bucket")
    if role is Role.LISTING:
        return StorageError(f"{where}: cannot list ({shown})")
    if role is Role.READING:
        if code in MISSING_CODES:
            return InputError([Problem(file=where, message="cannot read: no such object")])
        if code in _CHANGED:
            return InputError([Problem(file=where, message="changed while the job ran (its ETag differs)")])
        return StorageError(f"{where}: cannot read ({shown})")
    if code in MISSING_CODES:
        return ArtifactMissing(path, "no such object")
    if code in _CREDENTIALS_REJECTED:
        return StorageError(f"{where}: the credentials were rejected ({code})")
    if code in _CHANGED:
        return ArtifactUnreadable(path, "changed while it was read")
    return ArtifactUnreadable(path, f"{shown}: {message}".strip())


def error_code(exc: BaseException) -> str:
    """The S3 error code the service answered with (``""`` when none, or
    when ``exc`` is not the service's answer)."""
    if not isinstance(exc, botocore.exceptions.ClientError):
        return ""
    return str(exc.response.get("Error", {}).get("Code", ""))


def check_endpoint(endpoint_url: str) -> None:
    """Raise ValueError (never repeating the URL: it may hold credentials)
    unless ``endpoint_url`` is ``http[s]://host[:port][/path]``."""
    try:
        parts = urlsplit(endpoint_url)
        port = parts.port
    except ValueError:
        raise ValueError(_INVALID_ENDPOINT) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(_INVALID_ENDPOINT)
    if port is not None and not 0 < port < 65536:
        raise ValueError(_INVALID_ENDPOINT)


def make_s3_client(
    endpoint_url: str | None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_attempts: int = REQUEST_ATTEMPTS,
    checksums: str | None = None,
) -> Any:
    """A boto3 S3 client (path-style addressing for a custom endpoint, botocore's
    ``standard`` retries, a pool of ``concurrency`` connections, flexible
    checksums ``checksums``: ``when_required`` or ``when_supported``, by
    default ``ECEB_S3_CHECKSUMS``), its requests, retries and throttling
    answers told to the process's storage observer
    (:mod:`eceb_worker.io.observers`). Credentials come from boto3's default
    chain. Raises ValueError for a malformed endpoint (the message never
    repeats it: it may embed credentials) or checksum mode.
    """
    if endpoint_url is not None:
        check_endpoint(endpoint_url)
    wanted = read_setting("s3_checksums") if checksums is None else checksums
    mode: Literal["when_required", "when_supported"]
    if wanted == "when_required":
        mode = "when_required"
    elif wanted == "when_supported":
        mode = "when_supported"
    else:
        raise ValueError(f"not a checksum mode: {wanted!r}")
    config = botocore.config.Config(
        request_checksum_calculation=mode,
        response_checksum_validation=mode,
        max_pool_connections=max(1, concurrency),
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        s3={"addressing_style": "path"} if endpoint_url else None,
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
    )
    try:
        client = boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
    except ValueError:
        # botocore's message repeats the endpoint verbatim.
        raise ValueError(_INVALID_ENDPOINT) from None
    watch_client(client)
    return client


def map_reads(function: Callable[[int], T], count: int, workers: int) -> list[T]:
    """``[function(0), ..., function(count - 1)]``, ``workers`` calls at a
    time, on daemon threads (reads of object storage: a call may hang until
    its read timeout, 30 s a try, minutes with the retries).

    A call's exception stops the others from starting and, once the calls
    running end, the first in position order is raised. An exception in
    the caller's thread while it waits (``KeyboardInterrupt`` for Ctrl-C, a
    signal handler's) stops the others from starting and is raised at once,
    without waiting for the calls running: a stuck read never holds up an
    interrupted command, and its daemon thread ends with the process (a
    ``ThreadPoolExecutor`` thread would be waited for at exit). Nothing a
    call reads is written anywhere.
    """
    results: list[T | None] = [None] * count
    errors: dict[int, BaseException] = {}
    positions = iter(range(count))
    lock = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            with lock:
                position = next(positions, None)
            if position is None:
                return
            try:
                results[position] = function(position)
            except BaseException as exc:  # handed to the caller's thread
                with lock:
                    errors[position] = exc
                stop.set()
                return

    threads = [threading.Thread(target=work, name="eceb-s3", daemon=True) for _ in range(min(workers, count))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        stop.set()
        raise
    if errors:
        raise errors[min(errors)]
    return results  # type: ignore[return-value]  # every position was filled


def upload_file(client: Any, path: str, bucket: str, key: str) -> None:
    """Upload the local file ``path`` to ``bucket``/``key`` through boto3's
    transfer manager (in parts when large, each read from the file as it is
    sent). A request's failure is raised as the request's own error (one of
    :data:`REQUEST_ERRORS`, which :func:`s3_error` maps), not wrapped in
    boto3's ``S3UploadFailedError``."""
    from boto3.exceptions import S3UploadFailedError

    try:
        client.upload_file(path, bucket, key)
    except S3UploadFailedError as exc:
        cause = exc.__context__
        if isinstance(cause, REQUEST_ERRORS):
            raise cause from None
        raise botocore.exceptions.BotoCoreError() from None
