"""The target repository of a paired experiment, read through the real
``git`` executable (task-context-benchmark-reference.md, "Paid experiment
preflight conditions": reviewed revision, HEAD and fingerprints, source
pins; and the check that an attempt leaves the repository unchanged).

Every function runs ``git -C REPO ...`` with a fixed environment (no
pager, no prompts, no user or system configuration that could change the
output) and raises :class:`~eceb_worker.errors.InputError` naming the
repository when git is missing or the directory is not a work tree.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, Problem

__all__ = [
    "GitState",
    "export_revision",
    "files_at",
    "git_state",
    "object_at",
    "revision_tree",
    "show_file",
    "tree_fingerprint",
]

_ENV: Final = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}


_OPTIONS: Final = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "status.showUntrackedFiles=all",
)
"""Options that keep a repository's own configuration from shaping what git
reports of its work tree: no file-system monitor command (a repository's
``core.fsmonitor`` would run a program of its choosing and could hide a
change), no untracked cache."""


def _git(repository: Path, args: Sequence[str]) -> bytes:
    """``git -C repository args...``'s standard output; InputError on failure."""
    env = {**os.environ, **_ENV}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    try:
        done = subprocess.run(
            ["git", "-C", str(repository), *_OPTIONS, *args],
            capture_output=True,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise InputError([Problem(file=str(repository), message="git is not installed (Debian package git)")]) from None
    except OSError as exc:
        raise InputError([Problem(file=str(repository), message=f"cannot run git: {exc.strerror or exc}")]) from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        message = detail[-1] if detail else f"git {' '.join(args)} exited with {done.returncode}"
        raise InputError([Problem(file=str(repository), message=f"not a usable git work tree: {message}")])
    return done.stdout


class GitState:
    """The state of a work tree: ``head`` (commit id), ``tree`` (its tree
    id), ``status`` (the raw ``git status --porcelain=v1 -z
    --untracked-files=all --ignored`` bytes), ``clean`` (that status is
    empty) and ``fingerprint`` (BLAKE3 of the canonical JSON of the three)."""

    def __init__(self, head: str, tree: str, status: bytes) -> None:
        self.head = head
        self.tree = tree
        self.status = status
        self.clean = status == b""
        self.fingerprint = tree_fingerprint(head, tree, status)


def tree_fingerprint(head: str, tree: str, status: bytes) -> str:
    """BLAKE3 (64 hex) of ``{"head", "tree", "status"}`` as canonical JSON,
    ``status`` decoded as UTF-8 with invalid bytes replaced (paths are
    compared as git prints them). Pure."""
    text = status.decode("utf-8", "surrogateescape").encode("utf-8", "backslashreplace").decode()
    return digest_bytes(canonical_json({"head": head, "tree": tree, "status": text}))


def git_state(repository: Path) -> GitState:
    """The current :class:`GitState` of ``repository`` (a work tree with at
    least one commit). Untracked and ignored files count as changes: an
    attempt that writes a build product into the tree has mutated it; so do
    submodules whatever their ``ignore`` setting, and index entries git
    status is told not to look at (assume-unchanged, skip-worktree), shown
    with the code ``?H``."""
    head = _git(repository, ["rev-parse", "--verify", "HEAD^{commit}"]).decode().strip()
    tree = _git(repository, ["rev-parse", "--verify", "HEAD^{tree}"]).decode().strip()
    status = _git(
        repository,
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored", "--ignore-submodules=none"],
    )
    # Entries git status does not look at (assume-unchanged "h", skip-worktree
    # "S", both "s") could hide a change: each counts as one (code "?H").
    hidden = _git(repository, ["ls-files", "-v", "-z"])
    for entry in hidden.split(b"\0"):
        if entry[:2] in (b"h ", b"S ", b"s "):
            status += b"?H " + entry[2:] + b"\0"
    return GitState(head, tree, status)


def object_at(repository: Path, revision: str, path: str) -> tuple[str, str] | None:
    """The git object id and type (``"blob"``/``"tree"``) of ``path`` at
    ``revision``, or ``None`` when ``path`` is not in that commit."""
    if path in (".", ""):
        line = _git(repository, ["rev-parse", f"{revision}^{{tree}}"]).decode().strip()
        return line, "tree"
    out = _git(repository, ["ls-tree", "-z", "--full-tree", revision, "--", path])
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        if name.decode("utf-8", "surrogateescape") == path.rstrip("/"):
            _mode, kind, object_id = meta.decode().split(" ")
            if kind in ("blob", "tree"):
                return object_id, kind
    return None


def show_file(repository: Path, revision: str, path: str) -> bytes | None:
    """The bytes of file ``path`` at ``revision``, or ``None`` when it is not a file there."""
    found = object_at(repository, revision, path)
    if found is None or found[1] != "blob":
        return None
    return _git(repository, ["cat-file", "blob", found[0]])


def revision_tree(repository: Path, revision: str) -> str | None:
    """The tree id of commit ``revision``, or ``None`` when the repository
    holds no such commit (InputError when it is no git work tree)."""
    _git(repository, ["rev-parse", "--git-dir"])
    try:
        return _git(repository, ["rev-parse", "--verify", "--quiet", f"{revision}^{{tree}}"]).decode().strip() or None
    except InputError:
        return None


def files_at(repository: Path, revision: str) -> list[str]:
    """Every file path (blobs, recursively) of commit ``revision``, sorted."""
    out = _git(repository, ["ls-tree", "-r", "-z", "--full-tree", "--name-only", revision])
    return sorted(name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name)


def export_revision(repository: Path, revision: str, destination: Path) -> None:
    """Write the files of commit ``revision`` into the empty directory
    ``destination`` (``git archive``, extracted with the tar filter that
    refuses links out of it and special files). The repository itself is
    not touched: no work tree, no index, nothing in ``.git`` is written."""
    import io
    import tarfile

    archive = _git(repository, ["archive", "--format=tar", revision])
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")
