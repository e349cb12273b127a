"""Executables of a paired experiment found and identified
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions": the provider executable and its version are frozen; the cue
command's identity is recorded).

An executable is named as declared: a name containing ``/`` is a path
relative to a base directory (the benchmark file's), any other name is
looked up on ``PATH``. Its identity (:class:`~eceb_worker.families.paired.records.Executable`)
is its real path, the BLAKE3 and size of its bytes and, when asked, the
stripped standard output of ``EXE --version`` (:func:`ask_version`: run
with a timeout, no shell, standard input closed). Nothing else is ever run here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from eceb_worker.core.digests import digest_chunks
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.records import Executable

__all__ = ["ask_version", "identify_executable"]

VERSION_TIMEOUT_S: Final = 20
"""Seconds ``EXE --version`` may take before the executable counts as one that cannot be run."""

_CHUNK: Final = 1 << 20


def locate_executable(name: str, base: Path) -> Path | None:
    """Where ``name`` is: ``base / name`` when ``name`` contains ``/``
    (``base`` ignored for an absolute name), else the first executable
    ``name`` on ``PATH``; ``None`` when there is no executable file there."""
    if "/" in name:
        path = base / name
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    return Path(found) if found else None


def _problem(where: Problem, message: str) -> InputError:
    return InputError([Problem(file=where.file, record=where.record, field=where.field, message=message)])


def identify_executable(
    name: str, base: Path, *, where: Problem, version: bool = False, timeout_s: int = VERSION_TIMEOUT_S
) -> Executable:
    """The identity of the executable ``name`` (:func:`locate_executable`
    from ``base``): ``name`` as given, its real path, BLAKE3 and size, and
    with ``version`` the stripped output of ``EXE --version``.

    Raises :class:`InputError` with one problem located as ``where`` (its
    message replaced) when it cannot be found or read, or, with
    ``version``, when ``--version`` cannot be run, exits non-zero, runs past
    ``timeout_s`` seconds or prints nothing.
    """
    located = locate_executable(name, base)
    if located is None:
        place = "" if name.startswith("/") else f" relative to {base}" if "/" in name else " on PATH"
        raise _problem(where, f"executable {name!r} not found{place} (or not an executable file)")
    real = Path(os.path.realpath(located))
    try:
        with real.open("rb") as stream:
            size, blake3 = digest_chunks(iter(lambda: stream.read(_CHUNK), b""))
    except OSError as exc:
        raise _problem(where, f"cannot read the executable {real}: {exc.strerror or exc}") from None
    shown: str | None = None
    if version:
        shown = _version(real, where, timeout_s)
    return Executable(name=name, path=str(real), blake3=blake3, size=size, version=shown)


def ask_version(path: Path, timeout_s: int = VERSION_TIMEOUT_S) -> tuple[str | None, str | None]:
    """Run ``path --version`` (no shell, standard input closed, at most
    ``timeout_s`` seconds): ``(version, None)`` with its stripped standard
    output, or ``(None, why)`` when it cannot be run, exits non-zero, runs
    past the timeout or prints nothing. The one way an executable's version
    is asked: by freeze (:func:`identify_executable`) and again before every
    start of an attempt (:func:`eceb_worker.pipeline.paired.checks.check_provider`;
    seed: "Paid experiment preflight conditions", the provider's version is
    frozen). Raises nothing."""
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"{path} --version did not finish within {timeout_s} s"
    except OSError as exc:
        return None, f"cannot run {path} --version: {exc.strerror or exc}"
    text = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = f": {detail[-1]}" if detail else ""
        return None, f"{path} --version exited with {done.returncode}{tail}"
    if not text:
        return None, f"{path} --version printed nothing"
    return text, None


def _version(path: Path, where: Problem, timeout_s: int) -> str:
    """The stripped standard output of ``path --version`` (:func:`ask_version`), or InputError located as ``where``."""
    text, failure = ask_version(path, timeout_s)
    if text is None:
        raise _problem(where, failure or f"{path} --version failed")
    return text
