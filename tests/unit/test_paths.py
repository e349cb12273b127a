"""Portable corpus-relative paths."""

from __future__ import annotations

import pytest

from eceb_worker.core.paths import path_problems


@pytest.mark.parametrize(
    "path", ["a", "a/b.md", "dir with space/naïve café.md", "日本語/ファイル.txt", "a/.hidden", "..a/b.."]
)
def test_portable(path: str) -> None:
    assert path_problems(path) == []


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "is empty"),
        ("/abs", "absolute"),
        ("C:/x", "drive letter"),
        ("a\\b", "backslash"),
        ("a\x00b", "U+0000"),
        ("a\x7fb", "U+007F"),
        ("a\u0085b", "U+0085"),
        ("a//b", "empty segment"),
        ("a/", "empty segment"),
        ("./a", "'.' segment"),
        ("a/../b", "'..' segment"),
        ("a\udcffb", "not valid UTF-8"),
    ],
)
def test_not_portable(path: str, reason: str) -> None:
    assert any(reason in r for r in path_problems(path)), path_problems(path)
