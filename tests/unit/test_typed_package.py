"""Both packages ship the PEP 561 marker, so a type checker of a project
that imports eceb reads eceb's own annotations."""

from __future__ import annotations

import tomllib

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("package", ["eceb_worker", "eceb_cli"])
def test_each_package_ships_py_typed(package: str) -> None:
    assert (REPO / package / "py.typed").is_file()
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"][package]
