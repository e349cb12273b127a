"""Where a model's credential is read: the run profile names a file or an
environment variable, never the key itself (:class:`ModelSpec`).

The key read is held by the provider object only, sent in a header by the
SDK, and never written: not in a message, a ``repr``, a log, a request or
response body kept in the transcript.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.making.profile import ModelSpec

__all__ = ["DEFAULT_KEY_ENV", "key_source", "read_api_key"]

DEFAULT_KEY_ENV: Final = {
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic-messages": "ANTHROPIC_API_KEY",
}
"""The environment variable read when ``api_key_env`` and ``api_key_file`` are both empty."""

MAX_KEY_FILE_BYTES: Final = 64 * 1024
"""The most of an API key file that is read: a key is short; a larger file is refused."""
_HEADER_SAFE: Final = re.compile(r"[\x21-\x7e]+")
"""Printable ASCII without spaces: what an HTTP header carries as it is."""


def key_source(spec: ModelSpec) -> str:
    """Where the key of ``spec`` is read, for messages: ``file PATH`` or
    ``environment variable NAME`` (never the key)."""
    if spec.api_key_file:
        return f"file {spec.api_key_file}"
    return f"environment variable {spec.api_key_env or DEFAULT_KEY_ENV[spec.api]}"


def read_api_key(spec: ModelSpec, *, base_dir: Path, environ: Mapping[str, str]) -> str:
    """The API key of ``spec``: the first line, stripped, of ``api_key_file``
    (relative to ``base_dir``, the run profile's directory) when it is set,
    else the value, stripped, of the environment variable ``api_key_env``
    (default :data:`DEFAULT_KEY_ENV` by API) in ``environ``.

    Raises:
        InputError: the file cannot be read, is not UTF-8 or its first line
            is empty; the variable is unset or empty; the key holds
            characters an HTTP header cannot carry (spaces, control or
            non-ASCII characters). The problem names the file or the
            variable, never what it holds.
    """
    if spec.api_key_file:
        path = base_dir / spec.api_key_file
        where = Problem(file=spec.api_key_file, message="")
        text = _first_bytes(path, where).decode("utf-8")
        lines = text.splitlines()
        key = lines[0].strip() if lines else ""
        if not key:
            raise _problem(where, "the API key file's first line is empty")
    else:
        name = spec.api_key_env or DEFAULT_KEY_ENV[spec.api]
        where = Problem(file="environment", field=name, message="")
        key = environ.get(name, "").strip()
        if not key:
            raise _problem(where, f"the environment variable {name} holding the model's API key is not set")
    if not _HEADER_SAFE.fullmatch(key):
        raise _problem(where, "the API key holds a space, a control or a non-ASCII character")
    return key


def _first_bytes(path: Path, where: Problem) -> bytes:
    """At most :data:`MAX_KEY_FILE_BYTES` of the regular file at ``path``
    (never a FIFO, a device or a directory: they could block or never end);
    raises :class:`InputError` naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _problem(where, f"cannot read the API key file: {exc.strerror or type(exc).__name__}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _problem(where, "the API key file is not a regular file")
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise _problem(where, f"cannot read the API key file: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise _problem(where, f"the API key file is larger than {MAX_KEY_FILE_BYTES} bytes: not a key")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise _problem(where, "the API key file is not UTF-8 text") from None
    return data


def _problem(where: Problem, message: str) -> InputError:
    return InputError([Problem(file=where.file, field=where.field, message=message)])
