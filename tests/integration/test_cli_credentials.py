"""Credentials planted in every URL argument of every command: each is
refused as a usage error, by one rule (``eceb_worker.core.urls``), before
anything is read or connected to, and neither the key nor the secret shows
in standard output, standard error or any file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from eceb_cli import exit_codes
from eceb_cli.dist import main as dist_main
from eceb_cli.main import main
from tests.support.helpers import invoke, refusing_loopback_port
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
KEY = "AKIAPLANTEDKEY7"
SECRET = "planted-secret-9Zq"
PLANTED = {
    "userinfo": f"s3://{KEY}:{SECRET}@bucket/seed/input.json",
    "user only": f"s3://{KEY}@bucket/seed/input.json",
    "query": f"s3://bucket/seed/input.json?X-Amz-Credential={KEY}&X-Amz-Signature={SECRET}",
    "https": f"https://{KEY}:{SECRET}@storage.example/seed/input.json",
    # Malformed: more slashes, another case, no @, an encoded @, a secret holding "/".
    "three slashes": f"s3:///{KEY}:{SECRET}@bucket/seed/input.json",
    "four slashes": f"s3:////{SECRET}@bucket",
    "scheme case": f"S3:///{KEY}:{SECRET}@bucket",
    "slash after": f"s3:///{SECRET}@bucket/",
    "no at": f"s3://{KEY}:{SECRET}/seed/input.json",
    "encoded at": f"s3://{KEY}%40{SECRET}/seed/input.json",
    "slash in secret": f"s3://{KEY}:{SECRET[:9]}/{SECRET[9:]}@bucket/seed/input.json",
}
SECRETS = (KEY, SECRET, SECRET[:9], SECRET[9:])
REFUSALS = ("credentials", "not a local", "not a valid S3 bucket name", "URLs are not written")
BENCHMARK = str(SEED / "benchmark.json")
RUN = str(SEED / "run.json")
REGISTRY = str(SEED / "registry.jsonl")
CORPUS = str(SEED / "corpus")
RULES = str(SEED / "rules.toml")
U = "{url}"
E = "{endpoint}"


def commands(out: str) -> list[tuple[click.Command, tuple[str, ...]]]:
    """Every command with a URL argument, one planted URL (``U``) or
    endpoint (``E``) at a time."""
    s3_in = ("s3://inputs/seed/benchmark.json", "s3://inputs/seed/run.json")
    s3_corpus = ("--corpus", "s3://inputs/seed/corpus")
    return [
        (main, ("evaluate", U, RUN, "--corpus", CORPUS)),
        (main, ("evaluate", BENCHMARK, U, "--corpus", CORPUS)),
        (main, ("evaluate", BENCHMARK, RUN, "--corpus", U)),
        (main, ("evaluate", BENCHMARK, RUN, "--corpus", "s3://inputs/c", "--endpoint-url", E)),
        (main, ("evaluate", BENCHMARK, RUN, "--corpus", CORPUS, "-o", U)),
        (main, ("validate", U)),
        (main, ("validate", RUN, "--benchmark", U)),
        (main, ("corpus", "register", U, "--rules", RULES, "-o", out)),
        (main, ("corpus", "register", "s3://inputs/c", "--rules", RULES, "-o", out, "--endpoint-url", E)),
        (main, ("corpus", "register", CORPUS, "--rules", U, "-o", out)),
        (main, ("corpus", "root", U)),
        (main, ("corpus", "verify", U, "--source", CORPUS)),
        (main, ("corpus", "verify", REGISTRY, "--source", U)),
        (main, ("corpus", "verify", REGISTRY, "--source", "s3://inputs/c", "--endpoint-url", E)),
        (dist_main, ("submit", U, s3_in[1], *s3_corpus, "--out", "s3://reports/r.json")),
        (dist_main, ("submit", s3_in[0], U, *s3_corpus, "--out", "s3://reports/r.json")),
        (dist_main, ("submit", *s3_in, "--corpus", U, "--out", "s3://reports/r.json")),
        (dist_main, ("submit", *s3_in, *s3_corpus, "--out", U)),
        (dist_main, ("submit", *s3_in, *s3_corpus, "--out", "s3://reports/r.json", "--endpoint-url", E)),
        (dist_main, ("verify", U, *s3_corpus)),
        (dist_main, ("verify", "s3://inputs/seed/registry.jsonl", "--corpus", U)),
        (dist_main, ("verify", "s3://inputs/seed/registry.jsonl", *s3_corpus, "--out", U)),
        (dist_main, ("verify", "s3://inputs/seed/registry.jsonl", *s3_corpus, "--endpoint-url", E)),
        (dist_main, ("result", "0" * 32, "-o", U)),
    ]


@pytest.fixture
def quiet_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """No credentials nor services: a broker on a refusing loopback port."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "ECEB_S3_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with refusing_loopback_port() as port:
        monkeypatch.setenv("ECEB_BROKER_URL", f"redis://127.0.0.1:{port}/0")
        yield port


def written_text(directory: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in directory.rglob("*") if path.is_file())


@pytest.mark.parametrize("form", sorted(PLANTED))
def test_planted_credentials_are_refused_and_never_shown(
    form: str, tmp_path: Path, quiet_cluster: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = str(tmp_path / "out.jsonl")
    # The same form as an endpoint; without an @ it is a malformed endpoint (exit 5, never repeated).
    endpoint = re.sub("^s3", "http", PLANTED[form], flags=re.IGNORECASE).replace("bucket", "127.0.0.1")
    if "@" not in endpoint:
        endpoint = f"http://{KEY}:{SECRET}@127.0.0.1:{quiet_cluster}"
    for command, template in commands(out):
        args = [arg.replace(U, PLANTED[form]).replace(E, endpoint) for arg in template]
        result = invoke(command, *args)
        shown = result.stdout + result.stderr + written_text(tmp_path)
        assert not [secret for secret in SECRETS if secret in shown], (args, shown)
        assert result.exit_code == exit_codes.USAGE, (args, result.output)
        assert any(refusal in result.stderr for refusal in REFUSALS), (args, result.stderr)
    assert not list(tmp_path.iterdir())


def test_the_endpoint_setting_is_checked_too(quiet_cluster: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECEB_S3_ENDPOINT_URL", f"http://{KEY}:{SECRET}@127.0.0.1:{quiet_cluster}")
    result = invoke(main, "corpus", "verify", REGISTRY, "--source", "s3://inputs/c")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert KEY not in result.output and SECRET not in result.output


def test_credentials_written_inside_input_files_are_never_echoed(tmp_path: Path) -> None:
    """A URL with credentials written where an input file names a path (the
    benchmark's ``registry.path``, a registry line's ``path``) is bad input,
    and the message quotes it without them."""
    import json
    import shutil

    example = tmp_path / "seed"
    shutil.copytree(SEED, example)
    benchmark = json.loads((example / "benchmark.json").read_text(encoding="utf-8"))
    benchmark["registry"]["path"] = f"s3://{KEY}:{SECRET}@bucket/registry.jsonl"
    (example / "benchmark.json").write_text(json.dumps(benchmark), encoding="utf-8")
    lines = (SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[1])
    first["path"] = f"s3://{KEY}:{SECRET}@bucket/x.md"
    (tmp_path / "registry.jsonl").write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n")
    for command, args in (
        (main, ("validate", str(example / "benchmark.json"))),
        (main, ("corpus", "root", str(tmp_path / "registry.jsonl"))),
    ):
        result = invoke(command, *args)
        assert result.exit_code == exit_codes.BAD_INPUT, result.output
        assert "***@bucket" in result.stderr, result.stderr
        for secret in SECRETS:
            assert secret not in result.output + result.stderr
