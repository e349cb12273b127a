"""A paired experiment to test through the installed command line: a copy
of the bundled example (examples/paired, without its repo/ folder), the
fixture repository made a real git repository by examples/paired/make-repo.sh,
and the fake ``codex`` (tests/support/fake_codex.py) first on PATH
(freeze runs it as ``codex --version`` only; prepare never runs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.fake_codex import VERSION
from tests.support.provider import PAIRED, example_repository, install_fake_codex

__all__ = ["ECEB", "Bench", "make_bench"]

ECEB = (sys.executable, "-m", "eceb_cli")
FAKE_VERSION = VERSION
"""What the fake ``codex`` prints for ``--version``."""


class Bench:
    """The copied example (``benchmark``, its directory ``example``), the
    git ``repository``, a ``bin`` directory put first on PATH (holding
    the fake ``codex``), and ``experiment``, an experiment directory not yet created."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.example = root / "example"
        self.benchmark = self.example / "benchmark.json"
        self.repository = root / "repo"
        self.bin = root / "bin"
        self.experiment = root / "exp"
        self.env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.env.pop("ECEB_PAIR_PROVIDER", None)

    def eceb(self, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``eceb pair ARGS...`` through the installed command line."""
        return subprocess.run(
            [*ECEB, "pair", *map(str, args)],
            capture_output=True,
            text=True,
            env=env or self.env,
            check=False,
            cwd=self.root,
        )

    def freeze(self, into: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``eceb pair freeze`` of the bench into ``into`` (default ``experiment``)."""
        return self.eceb("freeze", self.benchmark, "--repo", self.repository, "--into", into or self.experiment)

    def edit_json(self, relative: str, change: Any) -> None:
        """Rewrite the example's JSON file ``relative`` with ``change(value)`` applied."""
        path = self.example / relative
        value = json.loads(path.read_text(encoding="utf-8"))
        change(value)
        path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")

    def git(self, *args: str) -> str:
        """``git -C repository ARGS...``'s standard output, stripped."""
        done = subprocess.run(["git", "-C", str(self.repository), *args], capture_output=True, text=True, check=True)
        return done.stdout.strip()


def make_bench(root: Path) -> Bench:
    """A :class:`Bench` under ``root``. Fails saying what to install when
    git is missing."""
    bench = Bench(root)
    shutil.copytree(PAIRED, bench.example, ignore=shutil.ignore_patterns("repo"))
    example_repository(bench.repository)
    install_fake_codex(bench.bin)
    return bench
