"""Portable corpus-relative paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.paths import PORTABLE_PATH, path_problems


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


@given(st.text(st.characters(codec="utf-8", exclude_categories=[])) | st.text(alphabet="a./\\:C\x00\x7f\u0085\udcff"))
def test_the_fast_rule_and_the_explained_rule_agree(path: str) -> None:
    """The one portable-path rule: its regular expression decides what
    path_problems explains, on any text."""
    assert (PORTABLE_PATH.fullmatch(path) is not None) == (path_problems(path) == [])
