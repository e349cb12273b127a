"""A request botocore refuses before sending it (ParamValidationError: an
invalid bucket name, a missing key) is the caller's input, never the
storage being unavailable (eceb_worker/io/s3.py ``s3_error``)."""

from __future__ import annotations

import botocore.exceptions
import pytest

from eceb_worker.errors import ArtifactUnreadable, InputError, OutputError, StorageError
from eceb_worker.io.s3 import Role, s3_error

WHERE = "s3://***/x.json"


def invalid_bucket() -> botocore.exceptions.ParamValidationError:
    return botocore.exceptions.ParamValidationError(report='Invalid bucket name "b%40SECRET": must match')


@pytest.mark.parametrize("role", [Role.READING, Role.LISTING])
def test_an_invalid_request_for_an_input_is_bad_input(role: Role) -> None:
    error = s3_error(invalid_bucket(), role, WHERE)
    assert isinstance(error, InputError), error
    assert [(p.file, p.message) for p in error.problems] == [
        (WHERE, "not a valid S3 request (ParamValidationError): check the bucket name and key")
    ]


def test_an_invalid_request_for_an_output_is_an_output_error() -> None:
    error = s3_error(invalid_bucket(), Role.WRITING, WHERE)
    assert type(error) is OutputError
    assert str(error) == f"{WHERE}: not a valid S3 request (ParamValidationError): check the bucket name and key"


def test_an_invalid_request_for_an_artifact_names_the_artifact() -> None:
    error = s3_error(invalid_bucket(), Role.ARTIFACT, WHERE, "a.txt")
    assert isinstance(error, ArtifactUnreadable)
    assert str(error) == "a.txt: not a valid S3 request (ParamValidationError)"


@pytest.mark.parametrize("role", list(Role))
def test_the_refused_request_is_never_repeated(role: Role) -> None:
    error = s3_error(invalid_bucket(), role, WHERE, "a.txt")
    assert "SECRET" not in str(error)
    assert type(error) is not StorageError
