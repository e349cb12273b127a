"""The process side of the Codex CLI adapter: spawn one provider call, wait
for it with a timeout, stop it on cancellation
(task-context-benchmark-reference.md, "Paired inputs and retained outputs"
and "Local verification boundary": cancellation; issue of the Codex adapter).

:func:`call_provider` runs the exact command line of an invocation in a
process group and session of its own (so that a terminal's Ctrl-C reaches
the runner only, and the runner stops every process of the call), with the
submitted prompt file on standard input and standard output and error
written straight into the attempt's ``provider.jsonl`` and
``provider.stderr`` (never held in memory). The runner's environment is
passed through unchanged; only the variables' names are recorded
(:func:`environment_names`).

Stopping a call (its timeout passed, or the runner received SIGINT,
SIGTERM or SIGHUP while it ran, :class:`DeferredSignals`): SIGTERM to the provider's
process group, :data:`GRACE_S` seconds for it to end, then SIGKILL to the
group. Processes of the group still alive once the provider itself exited
are killed too: nothing of a call outlives it. On Linux the provider also
gets SIGTERM from the kernel when the runner dies without stopping it
(SIGKILL): it never runs on unwatched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Final

import msgspec

from eceb_worker.errors import OutputError

__all__ = ["POLL_S", "DeferredSignals", "ProviderExit", "call_provider", "environment_names"]

GRACE_S: Final = 5.0
"""Seconds a provider is given to end after SIGTERM before its group is killed."""
POLL_S: Final = 0.02
"""Seconds between two looks at a running provider (its exit, the timeout, a signal)."""

_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG: Final = 1


def _die_with_the_runner() -> None:
    """In the provider's process, before it runs (Linux): ask the kernel to
    send it SIGTERM when the runner dies, however it dies (SIGKILL
    included), so that no provider outlives the runner unwatched."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:  # the runner died before the request took effect
        os._exit(128 + signal.SIGTERM)


class DeferredSignals:
    """While entered, SIGINT, SIGTERM and SIGHUP do not interrupt the runner: the
    first one received is kept in :attr:`received` (its number) and the
    runner completes what it is writing (an attempt's journal) before
    acting on it. The previous handlers are restored on exit. Use from the
    main thread only (Python runs signal handlers there)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def __enter__(self) -> DeferredSignals:
        for number in _STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *_exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()


class ProviderExit(msgspec.Struct, frozen=True, kw_only=True):
    """How one provider call ended.

    Fields:
        spawned: the provider was started.
        exit_code: its exit code, or ``None`` when a signal ended it or it never ran.
        signal: the number of the signal that ended it, or ``None``.
        spawn_error: why it could not be started (``None`` when it was).
        timed_out: its timeout passed and it was stopped.
        cancelled: the number of the signal (SIGINT or SIGTERM) the runner
            received while it ran and stopped it for, or ``None``.
        killed: SIGKILL was sent to the group: it outlived the grace
            period after SIGTERM.
        stragglers: processes of the group outlived the provider's own
            exit and were killed.
        duration_ms: wall-clock milliseconds from spawn to exit (an integer).
    """

    spawned: bool
    exit_code: int | None
    signal: int | None
    spawn_error: str | None = None
    timed_out: bool = False
    cancelled: int | None = None
    killed: bool = False
    stragglers: bool = False
    duration_ms: int = 0


def environment_names(environment: Mapping[str, str]) -> tuple[str, ...]:
    """The names of the variables in ``environment``, sorted (values are never recorded)."""
    return tuple(sorted(environment))


def _group_alive(group: int) -> bool:
    """True while a process of ``group`` is alive (a zombie, dead but not yet
    reaped by its parent, does not count). Reads ``/proc`` where there is
    one; elsewhere asks the kernel (``killpg(group, 0)``, zombies included)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue  # it ended while the table was read
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp
        if len(fields) >= 3 and fields[0] != b"Z" and int(fields[2]) == group:
            return True
    return False


def _signal_group(group: int, number: int) -> bool:
    """Send ``number`` to process group ``group``; False when it has no process left."""
    try:
        os.killpg(group, number)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM to the group of ``process``, ``grace_s`` seconds, then SIGKILL;
    waits for ``process``. True when SIGKILL was sent."""
    group = process.pid
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if process.poll() is not None and not _group_alive(group):
            return False
        time.sleep(POLL_S)
    killed = _signal_group(group, signal.SIGKILL)
    process.wait()
    return killed


def call_provider(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: Path,
    stdout: Path,
    stderr: Path,
    environment: Mapping[str, str],
    timeout_s: float,
    signals: DeferredSignals,
    grace_s: float = GRACE_S,
) -> ProviderExit:
    """Run ``argv`` once in ``cwd`` (its own session and process group),
    ``stdin`` as its standard input, its standard output and error written
    to ``stdout`` and ``stderr`` (created, never replaced: both are created
    even when it cannot be spawned), ``environment`` as its environment.

    It is stopped (module: SIGTERM to its group, ``grace_s`` seconds, SIGKILL)
    when ``timeout_s`` seconds pass or when ``signals`` (entered by the
    caller) receives SIGINT or SIGTERM. Returns a :class:`ProviderExit`;
    a provider that cannot be started is ``spawn_error``, not an exception.
    Raises :class:`OutputError` when ``stdout`` or ``stderr`` cannot be created.
    """
    try:
        out = stdout.open("xb")
    except OSError as exc:
        raise OutputError(f"{stdout}: cannot create: {exc.strerror or exc}") from None
    with out:
        try:
            err = stderr.open("xb")
        except OSError as exc:
            raise OutputError(f"{stderr}: cannot create: {exc.strerror or exc}") from None
        with err, stdin.open("rb") as given:
            if signals.received is not None:  # the runner was asked to stop before the call
                return ProviderExit(spawned=False, exit_code=None, signal=None, cancelled=signals.received)
            started = time.monotonic_ns()
            try:
                process = subprocess.Popen(
                    list(argv),
                    stdin=given,
                    stdout=out,
                    stderr=err,
                    cwd=cwd,
                    env=dict(environment),
                    start_new_session=True,
                    close_fds=True,
                    preexec_fn=_die_with_the_runner if sys.platform.startswith("linux") else None,  # noqa: PLW1509
                )
            except OSError as exc:
                return ProviderExit(
                    spawned=False, exit_code=None, signal=None, spawn_error=f"{argv[0]}: {exc.strerror or exc}"
                )
            return _wait(process, started, timeout_s, signals, grace_s)


def _wait(
    process: subprocess.Popen[bytes], started: int, timeout_s: float, signals: DeferredSignals, grace_s: float
) -> ProviderExit:
    """Wait for ``process`` until it exits, its timeout passes or a stop signal arrives."""
    deadline = started + int(timeout_s * 1_000_000_000)
    timed_out, cancelled, killed = False, None, False
    while True:
        try:
            process.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if signals.received is not None:
            cancelled = signals.received
            killed = _stop(process, grace_s)
            break
        if time.monotonic_ns() >= deadline:
            timed_out = True
            killed = _stop(process, grace_s)
            break
    duration_ms = (time.monotonic_ns() - started) // 1_000_000
    stragglers = _group_alive(process.pid) and _signal_group(process.pid, signal.SIGKILL)
    _await_group(process.pid)
    code = process.returncode
    return ProviderExit(
        spawned=True,
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        timed_out=timed_out,
        cancelled=cancelled,
        killed=killed,
        stragglers=stragglers,
        duration_ms=duration_ms,
    )


def _await_group(group: int, limit_s: float = 1.0) -> None:
    """Wait, at most ``limit_s`` seconds, until no process of ``group`` is left
    (killed processes are reaped by their new parent, not by the runner)."""
    deadline = time.monotonic() + limit_s
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(POLL_S)
