"""The OpenAI APIs through the official ``openai`` SDK: Chat Completions
(``openai-chat``, also every OpenAI-compatible server: Azure, vLLM, Ollama,
a LiteLLM proxy, reached through its base URL) and Responses
(``openai-responses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import openai

from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.profile import ModelSpec
from eceb_worker.io.models.base import DEFAULT_CONNECTIONS, SdkProvider, timeout, transport
from eceb_worker.io.models.failures import connection_failure, error_kind, status_failure, timeout_failure
from eceb_worker.io.models.wire import chat_request, read_chat, read_responses, responses_request

__all__ = ["OPENAI_BASE_URL", "OpenAIChatProvider", "OpenAIResponsesProvider", "openai_error"]

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
"""The base URL used when the profile gives none (the SDK's own default,
written here so that ``OPENAI_BASE_URL`` in the environment cannot redirect
a run)."""


def openai_error(exc: openai.OpenAIError, *, party: str, api: str, timeout_s: float) -> ProviderError:
    """The one mapping of the ``openai`` SDK's exceptions to
    :class:`ProviderError` (classification: :mod:`eceb_worker.io.models.failures`).
    The error type shown is the body's ``error.type`` and ``error.code``."""
    if isinstance(exc, openai.APIStatusError):
        body: Mapping[str, Any] = exc.body if isinstance(exc.body, Mapping) else {}
        return status_failure(
            party=party,
            api=api,
            status=exc.status_code,
            kind=error_kind(body.get("type"), body.get("code")),
            headers=exc.response.headers,
        )
    if isinstance(exc, openai.APITimeoutError):
        return timeout_failure(party=party, api=api, timeout_s=timeout_s, cause=exc.__cause__)
    if isinstance(exc, openai.APIConnectionError):
        return connection_failure(party=party, api=api, cause=exc.__cause__)
    return ProviderError(f"{party} ({api}): the SDK failed ({type(exc).__name__})", party=party, transient=False)


class _OpenAIProvider(SdkProvider):
    """One ``openai.OpenAI`` client: SDK retries off, ``timeout_s`` for
    every phase, a pool of ``connections`` kept-alive connections."""

    def __init__(self, spec: ModelSpec, *, api_key: str, connections: int, **api: Any) -> None:
        super().__init__(spec, api_key=api_key, base_url=spec.base_url or OPENAI_BASE_URL, **api)
        self._timeout = timeout(spec)
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=spec.base_url or OPENAI_BASE_URL,
            max_retries=0,
            timeout=self._timeout,
            http_client=openai.DefaultHttpxClient(transport=transport(spec, connections), timeout=self._timeout),
        )

    def _create(self, body: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _send(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        try:
            raw = self._create(body)
        except openai.OpenAIError as exc:
            raise openai_error(exc, party=self._party, api=self._spec.api, timeout_s=self._timeout.read or 0) from None
        return bytes(raw.http_request.content), bytes(raw.http_response.content)

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()


class OpenAIChatProvider(_OpenAIProvider):
    """``openai-chat``: ``client.chat.completions`` (with the raw response)."""

    def __init__(self, spec: ModelSpec, *, api_key: str, connections: int = DEFAULT_CONNECTIONS) -> None:
        super().__init__(spec, api_key=api_key, connections=connections, build=chat_request, read=read_chat)
        self._raw = self._client.chat.completions.with_raw_response

    def _create(self, body: dict[str, Any]) -> Any:
        return self._raw.create(**body)


class OpenAIResponsesProvider(_OpenAIProvider):
    """``openai-responses``: ``client.responses`` (with the raw response)."""

    def __init__(self, spec: ModelSpec, *, api_key: str, connections: int = DEFAULT_CONNECTIONS) -> None:
        super().__init__(spec, api_key=api_key, connections=connections, build=responses_request, read=read_responses)
        self._raw = self._client.responses.with_raw_response

    def _create(self, body: dict[str, Any]) -> Any:
        return self._raw.create(**body)
