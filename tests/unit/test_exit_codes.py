"""One mapping of eceb's errors to exit codes, equal to the README's table."""

from __future__ import annotations

import re

from eceb_cli import exit_codes
from eceb_worker.errors import (
    ErrorKind,
    ExecutionRefused,
    InputError,
    OutcomeUnknown,
    OutputError,
    Problem,
    ProviderError,
    StorageError,
)
from tests.support.paths import REPO


def test_every_error_kind_has_its_exit_code() -> None:
    assert {kind: exit_codes.for_kind(kind) for kind in ErrorKind} == {
        ErrorKind.INPUT: 3,
        ErrorKind.VERIFICATION: 4,
        ErrorKind.STORAGE: 5,
        ErrorKind.OUTPUT: 6,
        ErrorKind.REFUSED: 9,
        ErrorKind.PUBLICATION: 11,
        ErrorKind.PROVIDER: 12,
        ErrorKind.INTERNAL: 70,
    }
    assert exit_codes.for_error(ExecutionRefused("spending stopped")) == exit_codes.EXECUTION_REFUSED
    assert exit_codes.for_error(InputError([Problem(file="f", message="m")])) == exit_codes.BAD_INPUT
    assert exit_codes.for_error(OutputError("o")) == exit_codes.OUTPUT
    assert exit_codes.for_error(StorageError("s")) == exit_codes.STORAGE
    assert exit_codes.for_error(ProviderError("p", party="openai", transient=False)) == exit_codes.PROVIDER_FAILED
    assert exit_codes.for_error(OutcomeUnknown("u")) == exit_codes.EXECUTION_REFUSED


def test_the_readme_table_lists_every_exit_code() -> None:
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("### Exit codes") :]
    listed = {int(code) for row in re.findall(r"^\| ([0-9 /]+) \|", table, re.MULTILINE) for code in row.split("/")}
    codes = {value for name, value in vars(exit_codes).items() if name.isupper() and isinstance(value, int)}
    assert listed == codes
