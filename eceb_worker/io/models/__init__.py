"""The model providers of ``eceb run``: :class:`~eceb_worker.families.eceb.making.exchange.ModelProvider`
for each ``ModelSpec.api``, through the official SDKs.

- ``openai-chat``: :class:`~eceb_worker.io.models.openai_api.OpenAIChatProvider`
  (``client.chat.completions``; any OpenAI-compatible server by its base URL);
- ``openai-responses``: :class:`~eceb_worker.io.models.openai_api.OpenAIResponsesProvider`
  (``client.responses``);
- ``anthropic-messages``: :class:`~eceb_worker.io.models.anthropic_api.AnthropicMessagesProvider`
  (``client.messages``).

:func:`open_model` reads the credential (:mod:`eceb_worker.io.models.credentials`)
and makes the provider. Each provider holds one SDK client with its retries
off (eceb retries, recording every attempt), shared by every thread.
Request bodies and readings of the answers: :mod:`eceb_worker.io.models.wire`;
failures: :mod:`eceb_worker.io.models.failures`. The SDKs are imported when
a provider is opened, not with this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eceb_worker.core.urls import http_url_problem
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.making.exchange import ModelProvider
from eceb_worker.families.eceb.making.profile import ModelSpec
from eceb_worker.io.models.base import DEFAULT_CONNECTIONS
from eceb_worker.io.models.credentials import read_api_key

__all__ = ["DEFAULT_CONNECTIONS", "open_model", "read_api_key"]


def open_model(
    spec: ModelSpec, *, base_dir: Path, environ: Mapping[str, str], connections: int = DEFAULT_CONNECTIONS
) -> ModelProvider:
    """The provider of ``spec``, its credential read from ``spec.api_key_file``
    (relative to ``base_dir``, the run profile's directory) or from
    ``environ`` (:func:`~eceb_worker.io.models.credentials.read_api_key`).

    ``connections``: the connection pool's size; at least the number of
    calls in flight at once, so that none waits for a connection.

    Raises:
        InputError: the credential cannot be read, or ``spec.base_url`` is
            not an ``http``/``https`` URL with a host (named redacted).
    """
    _check_base_url(spec)
    key = read_api_key(spec, base_dir=base_dir, environ=environ)
    if spec.api == "anthropic-messages":
        from eceb_worker.io.models.anthropic_api import AnthropicMessagesProvider

        return AnthropicMessagesProvider(spec, api_key=key, connections=connections)
    from eceb_worker.io.models.openai_api import OpenAIChatProvider, OpenAIResponsesProvider

    if spec.api == "openai-responses":
        return OpenAIResponsesProvider(spec, api_key=key, connections=connections)
    return OpenAIChatProvider(spec, api_key=key, connections=connections)


def _check_base_url(spec: ModelSpec) -> None:
    if spec.base_url and (why := http_url_problem(spec.base_url)):
        raise InputError([Problem(file="run profile", field="base_url", message=why)])
