"""The Anthropic Messages API (``anthropic-messages``) through the official
``anthropic`` SDK."""

from __future__ import annotations

from typing import Any, Final

import anthropic

from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.profile import ModelSpec
from eceb_worker.io.models.base import DEFAULT_CONNECTIONS, SdkProvider, timeout, transport
from eceb_worker.io.models.failures import connection_failure, error_kind, status_failure, timeout_failure
from eceb_worker.io.models.wire import messages_request, read_messages

__all__ = ["ANTHROPIC_BASE_URL", "AnthropicMessagesProvider", "anthropic_error"]

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
"""The base URL used when the profile gives none (the SDK's own default,
written here so that ``ANTHROPIC_BASE_URL`` in the environment cannot
redirect a run)."""


def anthropic_error(exc: anthropic.AnthropicError, *, party: str, api: str, timeout_s: float) -> ProviderError:
    """The one mapping of the ``anthropic`` SDK's exceptions to
    :class:`ProviderError` (classification: :mod:`eceb_worker.io.models.failures`).
    The error type shown is the body's ``error.type`` and
    ``error.details.error_code``."""
    if isinstance(exc, anthropic.APIStatusError):
        return status_failure(
            party=party,
            api=api,
            status=exc.status_code,
            kind=error_kind(exc.type, exc.error_code),
            headers=exc.response.headers,
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return timeout_failure(party=party, api=api, timeout_s=timeout_s, cause=exc.__cause__)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_failure(party=party, api=api, cause=exc.__cause__)
    return ProviderError(f"{party} ({api}): the SDK failed ({type(exc).__name__})", party=party, transient=False)


class AnthropicMessagesProvider(SdkProvider):
    """``anthropic-messages``: ``client.messages`` (with the raw response),
    one ``anthropic.Anthropic`` client: SDK retries off, ``timeout_s`` for
    every phase, a pool of ``connections`` kept-alive connections, no
    OpenTelemetry spans (they could carry the prompt)."""

    def __init__(self, spec: ModelSpec, *, api_key: str, connections: int = DEFAULT_CONNECTIONS) -> None:
        super().__init__(
            spec,
            build=messages_request,
            read=read_messages,
            api_key=api_key,
            base_url=spec.base_url or ANTHROPIC_BASE_URL,
        )
        self._timeout = timeout(spec)
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=spec.base_url or ANTHROPIC_BASE_URL,
            max_retries=0,
            timeout=self._timeout,
            http_client=anthropic.DefaultHttpxClient(transport=transport(spec, connections), timeout=self._timeout),
            open_telemetry=False,
        )
        self._raw = self._client.messages.with_raw_response

    def _send(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        try:
            raw = self._raw.create(**body)
        except anthropic.AnthropicError as exc:
            raise anthropic_error(
                exc, party=self._party, api=self._spec.api, timeout_s=self._timeout.read or 0
            ) from None
        return bytes(raw.http_request.content), bytes(raw.http_response.content)

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()
