"""What the three SDK adapters share: the one call of
:meth:`SdkProvider.complete` (build the body, send it through the SDK, read
the raw answer), the connection pool and timeouts given to the SDK, and a
``repr`` that shows no credential.

``timeout_s`` bounds each phase of a call (connect, write, each read) and
the whole call too (:func:`transport`): a provider dribbling its answer a
byte at a time is abandoned once ``timeout_s`` has passed since the call
began (a transient failure, the provider may have billed it). A provider
that echoes the credential in its answer never gets it written: every
occurrence in the body received is replaced by ``[redacted]`` before the
answer is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import httpx2

from eceb_worker.core.urls import redact_url, shown_url
from eceb_worker.families.eceb.making.exchange import ModelRequest, ModelResponse
from eceb_worker.families.eceb.making.profile import ModelSpec
from eceb_worker.io.models.wire import ReadAnswer

__all__ = ["DEFAULT_CONNECTIONS", "REDACTED", "SdkProvider", "pool", "timeout", "transport"]

REDACTED: Final = b"[redacted]"
"""What a credential echoed by a provider is replaced with."""

DEFAULT_CONNECTIONS: Final = 64
"""Connections kept open to one provider: more than the executions in
flight at once (32 in the tests), so that no call waits for a connection."""


def timeout(spec: ModelSpec) -> httpx2.Timeout:
    """``spec.timeout_s`` for every phase of a call (connect, write, the
    wait for the answer, each read)."""
    return httpx2.Timeout(float(spec.timeout_s))


def pool(connections: int) -> httpx2.Limits:
    """A pool of ``connections`` connections, all kept alive between calls."""
    return httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body that ends in ``httpx2.ReadTimeout`` once ``deadline`` (monotonic) has passed."""

    def __init__(self, stream: httpx2.SyncByteStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout("the whole call outlasted its timeout")
            yield chunk

    def close(self) -> None:
        self._stream.close()


class _DeadlineTransport(httpx2.HTTPTransport):
    """An HTTP transport bounding each whole call by ``total_s`` (see the module)."""

    def __init__(self, total_s: float, limits: httpx2.Limits) -> None:
        super().__init__(limits=limits)
        self._total_s = total_s

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self._total_s
        response = super().handle_request(request)
        if time.monotonic() > deadline:
            response.close()
            raise httpx2.ReadTimeout("the whole call outlasted its timeout", request=request)
        assert isinstance(response.stream, httpx2.SyncByteStream)
        response.stream = _DeadlineStream(response.stream, deadline)
        return response


def transport(spec: ModelSpec, connections: int) -> httpx2.HTTPTransport:
    """The SDK client's transport: a pool of ``connections`` (:func:`pool`),
    each whole call bounded by ``spec.timeout_s`` (see the module)."""
    return _DeadlineTransport(float(spec.timeout_s), pool(connections))


class SdkProvider:
    """A model behind one API, called through its official SDK
    (:class:`~eceb_worker.families.eceb.making.exchange.ModelProvider`).

    A subclass gives :meth:`_send` (one SDK call with SDK retries off,
    returning the bytes sent and the bytes received, raising
    :class:`ProviderError` through its SDK's one exception mapping), the
    body builder and the body reader of its API
    (:mod:`eceb_worker.io.models.wire`). Thread-safe: one object, one SDK
    client, one connection pool, shared by every thread.
    """

    def __init__(
        self,
        spec: ModelSpec,
        build: Callable[[str, ModelRequest], dict[str, Any]],
        read: Callable[..., ReadAnswer],
        api_key: str,
        base_url: str,
    ) -> None:
        self._spec = spec
        self._party = f"{spec.provider} at {shown_url(base_url)}"
        self._build = build
        self._read = read
        self._secret = api_key.encode()

    @property
    def name(self) -> str:
        """The provider's name as the run records it (``ModelSpec.provider``)."""
        return self._spec.provider

    @property
    def spec(self) -> ModelSpec:
        """The model this object calls (no credential in it)."""
        return self._spec

    def __repr__(self) -> str:
        base = redact_url(self._spec.base_url) if self._spec.base_url else "default"
        return f"{type(self).__name__}(provider={self.name!r}, model={self._spec.name!r}, base_url={base!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One call, never retried here (the SDK's retries are off).

        Returns the answer's text, the provider's usage, the model revision
        (the response's ``model``), the JSON body sent and the JSON body
        received, both as bytes.

        Raises:
            ProviderError: the provider answered an HTTP error, did not
                answer in time, the connection failed (transient or final,
                see :mod:`eceb_worker.io.models.failures`), or answered
                outside its protocol (final). No credential, no prompt text
                in its message.
        """
        sent, received = self._send(self._build(self._spec.name, request))
        if self._secret and self._secret in received:
            received = received.replace(self._secret, REDACTED)
        text, usage, revision = self._read(received, party=self._party, api=self._spec.api)
        return ModelResponse(text=text, usage=usage, model_revision=revision, request_body=sent, response_body=received)

    def _send(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        """One SDK call of ``body``: the bytes sent, the bytes received."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the SDK client and its connections."""
        raise NotImplementedError
