"""The lock files: every dependency pinned to an exact version, and used.

``deploy/requirements.lock`` is what the image installs (the runtime
dependencies), ``deploy/requirements-dev.lock`` what CI and the README's
test set-up install (with the ``dev`` extra); both pin pip and the build
backend too, and are written by ``bash deploy/lock.sh``.
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import REPO

pytestmark = pytest.mark.unit

RUNTIME_LOCK = REPO / "deploy" / "requirements.lock"
DEV_LOCK = REPO / "deploy" / "requirements-dev.lock"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
RUNTIME = [Requirement(text) for text in PYPROJECT["project"]["dependencies"]]
DEV = [Requirement(text) for text in PYPROJECT["project"]["optional-dependencies"]["dev"]]
TOOLS = [Requirement("pip"), *(Requirement(text) for text in PYPROJECT["build-system"]["requires"])]
"""Installed from the locks as well: pip itself and the build backend (``--no-build-isolation``)."""
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
EXACT_VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")


def entries(path: Path) -> list[tuple[Requirement, list[str]]]:
    """Each requirement of a lock file with its hashes (continuation lines joined, comments dropped)."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].rstrip() if raw.lstrip().startswith("#") else raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        if pending.strip():
            logical.append(pending.strip())
        pending = ""
    assert not pending.strip(), f"{path.name} ends in a continuation"
    parsed = []
    for line in logical:
        assert not line.startswith("-"), f"{path.name}: an option or editable install, not a pin: {line}"
        requirement, *options = re.split(r"\s+(?=--)", line)
        hashes = [option for option in options if HASH.fullmatch(option)]
        assert len(hashes) == len(options), f"{path.name}: unexpected options in {line}"
        parsed.append((Requirement(requirement), hashes))
    return parsed


def pins(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Name -> every (version, marker) the lock pins it at."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for requirement, _ in entries(path):
        (specifier,) = requirement.specifier
        found[canonicalize_name(requirement.name)].append((specifier.version, str(requirement.marker or "")))
    return found


@pytest.mark.parametrize("path", [RUNTIME_LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_a_lock_names_exact_versions_with_their_hashes(path: Path) -> None:
    locked = entries(path)
    assert locked
    for requirement, hashes in locked:
        assert not requirement.url, requirement
        assert not requirement.extras, f"{requirement}: a lock pins packages, extras are resolved"
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1, f"{requirement}: not one exact version"
        assert specifiers[0].operator == "==", f"{requirement}: not an exact version"
        assert EXACT_VERSION.fullmatch(specifiers[0].version), f"{requirement}: not an exact version"
        assert hashes, f"{requirement}: no hash"
    # A package is pinned once, or once per disjoint marker (a universal lock may split by Python version).
    for name, versions in pins(path).items():
        markers = [marker for _, marker in versions]
        assert len(set(markers)) == len(markers), f"{name} pinned twice under one marker"
        assert len(versions) == 1 or all(markers), f"{name} pinned unconditionally and under a marker"
    header = path.read_text(encoding="utf-8").splitlines()[:2]
    assert header[1].strip("# ") == "bash deploy/lock.sh", "the lock says how it is refreshed"


@pytest.mark.parametrize(
    ("path", "requirements"),
    [(RUNTIME_LOCK, RUNTIME + TOOLS), (DEV_LOCK, RUNTIME + DEV + TOOLS)],
    ids=["runtime", "dev"],
)
def test_every_dependency_of_pyproject_is_pinned_in_its_lock(path: Path, requirements: list[Requirement]) -> None:
    locked = pins(path)
    for requirement in requirements:
        versions = locked.get(canonicalize_name(requirement.name))
        assert versions, f"{requirement} is not in {path.name}: run bash deploy/lock.sh"
        for version, marker in versions:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"{path.name} pins {requirement.name}=={version} ({marker or 'everywhere'}), outside {requirement}:"
                " run bash deploy/lock.sh"
            )
        # At least one pin applies here (the interpreter the tests run on).
        assert any(not marker or Requirement(f"x; {marker}").marker.evaluate() for _, marker in versions), requirement


def test_the_runtime_lock_agrees_with_the_dev_lock_and_holds_no_test_tools() -> None:
    runtime, dev = pins(RUNTIME_LOCK), pins(DEV_LOCK)
    for name, versions in runtime.items():
        assert sorted(versions) == sorted(dev.get(name, [])), f"{name}: the two locks pin different versions"
    for tool in ("pytest", "mypy", "ruff", "hypothesis", "moto"):
        assert tool not in runtime, f"the image would carry {tool}"


def test_ci_the_readme_and_the_image_install_from_the_locks() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    installs = [line for line in ci.splitlines() if "pip install" in line]
    assert installs == [
        ".venv/bin/python -m pip install --quiet -r deploy/requirements-dev.lock",
        ".venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .",
    ]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = [line for line in setup.splitlines() if line.startswith("python3 -m venv .venv")]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -q -r deploy/requirements.lock"
        " && .venv/bin/pip install -q --no-deps --no-build-isolation . && .venv/bin/eceb evaluate"
        " examples/enterprise-seed/benchmark.json examples/enterprise-seed/run.json"
        " --corpus examples/enterprise-seed/corpus -o report.json",
        "python3 -m venv .venv && .venv/bin/pip install -q -r deploy/requirements-dev.lock"
        " && .venv/bin/pip install -q --no-deps --no-build-isolation -e ."
        " && .venv/bin/python -m pytest -n auto --maxprocesses 4",
    ]
    assert "bash deploy/lock.sh" in setup
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert "pip install --no-cache-dir --require-hashes -r deploy/requirements.lock" in dockerfile
    assert "pip install --no-cache-dir --no-deps --no-build-isolation ." in dockerfile
