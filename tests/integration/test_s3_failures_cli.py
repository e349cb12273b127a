"""What the command lines say when S3 cannot be used at all, whatever they
read (a benchmark or run object, a corpus, a registry, a submission's
inputs): one message per cause, from the one error table of
``eceb_worker.io.s3``, naming the endpoint tried. Loopback only: no
credentials are found before any connection, and an unreachable endpoint
is a refusing port of 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from eceb_worker.io.s3 import REQUEST_ATTEMPTS
from tests.support.helpers import refusing_loopback_port
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
BENCHMARK = str(SEED / "benchmark.json")
RUN = str(SEED / "run.json")
REGISTRY = str(SEED / "registry.jsonl")
CORPUS = str(SEED / "corpus")
RULES = str(SEED / "rules.toml")
ECEB = (sys.executable, "-m", "eceb_cli")
ECEB_DIST = (sys.executable, "-m", "eceb_cli.dist")

# Each command that reads S3, with what it reads there: (command, s3:// URL read).
READERS: list[tuple[tuple[str, ...], str]] = [
    (
        (*ECEB, "evaluate", "s3://inputs/seed/benchmark.json", RUN, "--corpus", CORPUS),
        "s3://inputs/seed/benchmark.json",
    ),
    ((*ECEB, "evaluate", BENCHMARK, "s3://inputs/seed/run.json", "--corpus", CORPUS), "s3://inputs/seed/run.json"),
    ((*ECEB, "evaluate", BENCHMARK, RUN, "--corpus", "s3://inputs/seed/corpus"), "s3://inputs/seed/corpus"),
    ((*ECEB, "corpus", "verify", REGISTRY, "--source", "s3://inputs/seed/corpus"), "s3://inputs/seed/corpus"),
    (
        (*ECEB, "corpus", "register", "s3://inputs/seed/corpus", "--rules", RULES, "-o", "{tmp}/r.jsonl"),
        "s3://inputs/seed/corpus",
    ),
    (
        (
            *ECEB_DIST,
            "submit",
            "s3://inputs/seed/benchmark.json",
            "s3://inputs/seed/run.json",
            "--corpus",
            "s3://inputs/seed/corpus",
            "--out",
            "s3://reports/seed/report.json",
        ),
        "s3://inputs/seed/benchmark.json",
    ),
    (
        (*ECEB_DIST, "verify", "s3://inputs/seed/registry.jsonl", "--corpus", "s3://inputs/seed/corpus"),
        "s3://inputs/seed/registry.jsonl",
    ),
]
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "ECEB_S3_ENDPOINT_URL",
)


class CountingProxy:
    """A loopback listener standing in for every HTTP(S) proxy: it counts
    the connections made to it (any network use by boto3) and closes them."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()


@pytest.fixture
def bare_environment(tmp_path: Path) -> Iterator[tuple[dict[str, str], CountingProxy]]:
    """An environment with no AWS credentials, configuration, endpoint or
    instance metadata, region eu-west-3, and every proxy a counting listener."""
    proxy = CountingProxy()
    environment = {k: v for k, v in os.environ.items() if k not in AWS_VARIABLES}
    environment.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_CONFIG_FILE=os.devnull,
        AWS_DEFAULT_REGION="eu-west-3",
        AWS_REGION="eu-west-3",
        HTTPS_PROXY=proxy.url,
        HTTP_PROXY=proxy.url,
        https_proxy=proxy.url,
        http_proxy=proxy.url,
        NO_PROXY="",
        no_proxy="",
        ECEB_BROKER_URL="redis://127.0.0.1:9/0",
    )
    yield environment, proxy
    proxy.sock.close()


def started(command: tuple[str, ...], tmp_path: Path, environment: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [arg.replace("{tmp}", str(tmp_path)) for arg in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment,
        cwd=tmp_path,
    )


def test_no_credentials_is_said_alike_before_any_connection(
    tmp_path: Path, bare_environment: tuple[dict[str, str], CountingProxy]
) -> None:
    environment, proxy = bare_environment
    processes = [(started(command, tmp_path, environment), where) for command, where in READERS]
    for process, where in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == exit_codes.STORAGE, (process.args, err)
        assert err.startswith(
            f"error: storage: {where}: no usable AWS credentials (NoCredentialsError) for the AWS default "
            "endpoint of region eu-west-3 (https://s3.eu-west-3.amazonaws.com)"
        ), (process.args, err)
        assert err.count("\n") == 1, err
        assert out == ""
    assert proxy.connections == 0, "boto3 connected somewhere before finding that it has no credentials"
    assert not (tmp_path / "r.jsonl").exists()


def test_an_unreachable_endpoint_is_named_and_given_up_within_its_bound(
    tmp_path: Path, bare_environment: tuple[dict[str, str], CountingProxy]
) -> None:
    environment, _ = bare_environment
    environment.update(AWS_ACCESS_KEY_ID="fake-key", AWS_SECRET_ACCESS_KEY="fake-secret")
    environment.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    with refusing_loopback_port() as port:
        endpoint = f"http://127.0.0.1:{port}"
        environment["ECEB_S3_ENDPOINT_URL"] = endpoint
        first, *others = [READERS[0], READERS[2], READERS[4], READERS[5]]  # reading, hashing, listing, submitting
        begun = time.monotonic()
        alone = started(first[0], tmp_path, environment)
        alone.communicate(timeout=120)
        elapsed = time.monotonic() - begun
        processes = [(alone, first[1])] + [(started(c, tmp_path, environment), where) for c, where in others]
        for process, where in processes:
            _, err = process.communicate(timeout=120)
            assert process.returncode == exit_codes.STORAGE, (process.args, err)
            assert err == (
                f"error: storage: {where}: cannot reach the endpoint {endpoint} "
                "(EndpointConnectionError, after every retry)\n"
            ), err
    # docs/SETTINGS.md: REQUEST_ATTEMPTS attempts, waits of at most 50 ms x 2^i between them.
    bound = sum(0.05 * 2**i for i in range(REQUEST_ATTEMPTS - 1))
    assert elapsed < bound + 5
