"""The S3 storage path against a real S3-compatible HTTP server on loopback
(moto's server mode, see ``tests/support/s3_server.py``): the adapter, the corpus
jobs and the ``eceb corpus`` command line, in process and as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import blake3
import botocore.exceptions
import pytest
from click.testing import CliRunner, Result

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import ArtifactMissing, ArtifactReadError, ArtifactUnreadable, InputError, StorageError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.s3 import CHUNK_BYTES, STREAM_ATTEMPTS
from eceb_worker.io.s3_corpus import S3Storage
from eceb_worker.pipeline.embedded import verify_corpus
from eceb_worker.pipeline.inputs import load_registry
from eceb_worker.pipeline.register import register_corpus
from tests.support.helpers import refusing_loopback_port
from tests.support.paths import REPO
from tests.support.relays import CuttingRelay, RefusingRelay
from tests.support.s3_server import S3Server

EXAMPLE = REPO / "examples" / "public-eng-mix"
CORPUS_FILES = REPO.parent / "shared" / "corpora" / "public-eng-mix" / "files"
EXAMPLE_ROOT = "a05ba2e2f9a1c74c1657234679658f6951391619613cba7a7b14fca40a50f339"

RULES = b"""schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "**"
kind = "code"
classification = "internal"
"""

# Keys that exercise URL encoding in requests and in listings.
AWKWARD = {
    "dir with space/naïve café.md": "naïve café\n".encode(),
    "日本語/ファイル.txt": "日本語のテキスト\n".encode(),
    "reserved/a+b=c&d;e,f@g$h!.txt": b"reserved characters\n",
    "reserved/100% done (v2) [final] {x}.txt": b"percent and brackets\n",
    "plain/readme.md": b"# plain\n",
}


def digest(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def put_all(client: Any, bucket: str, objects: Mapping[str, bytes], *, prefix: str = "", threads: int = 16) -> None:
    def put(item: tuple[str, bytes]) -> None:
        key, body = item
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}" if prefix else key, Body=body)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, objects.items()))


def assert_no_secrets(server: S3Server, *texts: str) -> None:
    for text in texts:
        for secret in server.secrets:
            assert secret not in text, "a credential appeared in the output"


def run_eceb(
    server: S3Server, *args: str, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m eceb_cli ARGS`` in a subprocess (it inherits the fake
    credentials from the environment); checks no credential is printed."""
    process = subprocess.run(
        [sys.executable, "-m", "eceb_cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(os.environ if env is None else env),
        timeout=timeout,
        check=False,
        cwd=REPO,
    )
    assert_no_secrets(server, process.stdout, process.stderr)
    return process


def invoke(server: S3Server, *args: str) -> Result:
    """``eceb ARGS`` in this process through click's runner; checks no
    credential is printed."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert_no_secrets(server, result.stdout, result.stderr)
    return result


def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_bytes(RULES)
    return path


def registry_paths(path: Path) -> list[str]:
    return sorted(a.path for a in load_registry(path).artifacts)


def findings_of(report_json: str) -> dict[str, dict[str, Any]]:
    report = json.loads(report_json)
    return {f["path"]: f for f in report["findings"]}


# --- the adapter -------------------------------------------------------------


def test_adapter_hashes_and_lists_awkward_keys(s3_server: S3Server, s3_bucket: str) -> None:
    put_all(s3_server.client(), s3_bucket, AWKWARD)
    storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=s3_server.endpoint_url)

    listed = {e.path: e.size_bytes for e in storage.list_entries()}
    assert listed == {key: len(body) for key, body in AWKWARD.items()}
    for key, body in AWKWARD.items():
        assert storage.hash_artifact(key) == (len(body), digest(body))


def test_adapter_streams_objects_larger_than_a_chunk(s3_server: S3Server, s3_bucket: str) -> None:
    body = bytes(range(256)) * ((CHUNK_BYTES * 5 // 2) // 256 + 1)
    s3_server.client().put_object(Bucket=s3_bucket, Key="big.bin", Body=body)
    storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=s3_server.endpoint_url)
    assert storage.hash_artifact("big.bin") == (len(body), digest(body))


def test_adapter_reads_again_when_the_body_breaks_off(s3_server: S3Server, s3_bucket: str) -> None:
    """A broken read resumes where it stopped, STREAM_ATTEMPTS reads in all:
    each connection here breaks after CHUNK_BYTES, the body needs more."""
    body = bytes(range(256)) * ((STREAM_ATTEMPTS + 1) * CHUNK_BYTES // 256)
    s3_server.client().put_object(Bucket=s3_bucket, Key="big file.bin", Body=body)

    with CuttingRelay(s3_server.endpoint_url, cuts=STREAM_ATTEMPTS - 1, after=CHUNK_BYTES) as relay:
        storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=relay.endpoint_url, concurrency=1)
        assert storage.hash_artifact("big file.bin") == (len(body), digest(body))
        assert relay.connections == STREAM_ATTEMPTS

    with CuttingRelay(s3_server.endpoint_url, cuts=STREAM_ATTEMPTS, after=CHUNK_BYTES) as relay:
        storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=relay.endpoint_url, concurrency=1)
        with pytest.raises(
            ArtifactUnreadable, match=r"^big file\.bin: read failed: (ResponseStreamingError|IncompleteReadError)$"
        ):
            storage.hash_artifact("big file.bin")
        assert relay.connections == STREAM_ATTEMPTS


def test_a_read_resumes_on_the_same_version_or_not_at_all(s3_server: S3Server, s3_bucket: str) -> None:
    """A broken read resumes with a ranged GET pinned to the ETag first read:
    the digest is of one version's bytes, and an object replaced meanwhile is
    unreadable ("changed while it was read"), never half one version and half another."""
    client = s3_server.client()
    first = bytes(range(256)) * (3 * CHUNK_BYTES // 256)
    client.put_object(Bucket=s3_bucket, Key="moving.bin", Body=first)
    with CuttingRelay(s3_server.endpoint_url, cuts=1, after=CHUNK_BYTES) as relay:
        storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=relay.endpoint_url, concurrency=1)
        assert storage.hash_artifact("moving.bin") == (len(first), digest(first))
    from eceb_worker.io.s3 import ObjectChanged, Role, make_s3_client, s3_error
    from eceb_worker.io.s3_reads import ResumableBody

    with CuttingRelay(s3_server.endpoint_url, cuts=1, after=CHUNK_BYTES) as relay:
        body = ResumableBody(make_s3_client(relay.endpoint_url, concurrency=1), s3_bucket, "moving.bin")
        assert len(body.read(CHUNK_BYTES // 2)) == CHUNK_BYTES // 2
        client.put_object(Bucket=s3_bucket, Key="moving.bin", Body=first[::-1])  # replaced mid-read
        # Past the cut, the read resumes against the version first read: the
        # server refuses it (412), or answers another ETag.
        with pytest.raises((ObjectChanged, botocore.exceptions.ClientError)) as caught:
            list(body.chunks())
        error = s3_error(caught.value, Role.ARTIFACT, f"s3://{s3_bucket}", "moving.bin")
        assert isinstance(error, ArtifactUnreadable)
        assert str(error) == "moving.bin: changed while it was read"


@pytest.mark.parametrize("how", ["slowdown", "internal", "reset"])
def test_adapter_retries_throttling_server_errors_and_resets(s3_server: S3Server, s3_bucket: str, how: str) -> None:
    """botocore's standard retry mode, with back-off, gets through passing faults."""
    body = b"retry me" * 1000
    s3_server.client().put_object(Bucket=s3_bucket, Key="k.bin", Body=body)
    with RefusingRelay(s3_server.endpoint_url, refusals=2, how=how) as relay:
        storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=relay.endpoint_url, concurrency=1)
        assert storage.hash_artifact("k.bin") == (len(body), digest(body))
        assert relay.connections == 3


def test_adapter_prefix_scopes_reads_and_listing(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD, prefix="corpora/v1")
    decoys = {
        "corpora/v1": b"an object named like the prefix",
        "corpora/v10/plain/readme.md": b"a sibling prefix sharing a leading substring",
        "corpora/v1-old/plain/readme.md": b"another sibling",
        "plain/readme.md": b"outside any prefix",
        "corpora/v1/empty-dir/": b"",  # a "directory marker"
    }
    put_all(client, s3_bucket, decoys)

    for url in (f"s3://{s3_bucket}/corpora/v1", f"s3://{s3_bucket}/corpora/v1/"):
        storage = S3Storage(url, endpoint_url=s3_server.endpoint_url)
        assert storage.location == f"s3://{s3_bucket}/corpora/v1"
        assert {e.path: e.size_bytes for e in storage.list_entries()} == {k: len(b) for k, b in AWKWARD.items()}
        assert storage.hash_artifact("plain/readme.md") == (
            len(AWKWARD["plain/readme.md"]),
            digest(AWKWARD["plain/readme.md"]),
        )


def test_adapter_missing_object_is_missing(s3_server: S3Server, s3_bucket: str) -> None:
    storage = S3Storage(f"s3://{s3_bucket}/some/prefix", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(ArtifactMissing) as caught:
        storage.hash_artifact("日本語/absent file.txt")
    assert caught.value.path == "日本語/absent file.txt"


def test_adapter_missing_bucket_fails_the_whole_storage(s3_server: S3Server) -> None:
    storage = S3Storage("s3://eceb-no-such-bucket-x7/prefix", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(StorageError, match="no such bucket") as caught:
        storage.hash_artifact("a.txt")
    assert not isinstance(caught.value, ArtifactReadError)
    with pytest.raises(StorageError, match="NoSuchBucket"):
        list(storage.list_entries())


def test_adapter_unreachable_endpoint_fails_the_whole_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake-key")  # credentials are found: the endpoint is tried
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    with refusing_loopback_port() as port:
        refused = f"http://127.0.0.1:{port}"
        storage = S3Storage("s3://bucket/prefix", endpoint_url=refused, max_attempts=2)
        with pytest.raises(StorageError, match=f"cannot reach the endpoint {refused} ") as caught:
            storage.hash_artifact("a.txt")
        assert not isinstance(caught.value, ArtifactReadError)
        with pytest.raises(StorageError, match=f"cannot reach the endpoint {refused} "):
            list(storage.list_entries())


def test_adapter_without_credentials_fails_the_whole_storage(
    s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="a.txt", Body=b"a")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    storage = S3Storage(f"s3://{s3_bucket}", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(StorageError, match="credentials") as caught:
        storage.hash_artifact("a.txt")
    assert not isinstance(caught.value, ArtifactReadError)


def test_adapter_does_not_echo_an_invalid_endpoint(s3_server: S3Server) -> None:
    secret = s3_server.secrets[0]
    with pytest.raises(ValueError, match="endpoint") as caught:
        S3Storage("s3://bucket", endpoint_url=f"http://user:{secret}@")
    assert secret not in str(caught.value)


def test_adapter_rejected_credentials_fail_the_whole_storage(s3_server_enforcing_auth: S3Server) -> None:
    storage = S3Storage("s3://any-bucket/prefix", endpoint_url=s3_server_enforcing_auth.endpoint_url)
    with pytest.raises(StorageError, match=r"the credentials were rejected \(InvalidAccessKeyId\)") as caught:
        storage.hash_artifact("a.txt")
    assert not isinstance(caught.value, ArtifactReadError)
    with pytest.raises(StorageError, match=r"cannot list \(InvalidAccessKeyId\)"):
        list(storage.list_entries())


# --- the corpus jobs ---------------------------------------------------------


def test_register_then_verify_detects_missing_and_stale(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD, prefix="team/corpus")
    spec = StorageSpec(source=f"s3://{s3_bucket}/team/corpus", endpoint_url=s3_server.endpoint_url, concurrency=4)
    rules = parse_rules(RULES, "rules.toml")

    registry = register_corpus(spec, rules, rules_name="rules.toml", executor=InProcessExecutor(1))
    assert {a.path: (a.size_bytes, a.source_digest) for a in registry.artifacts} == {
        k: (len(b), digest(b)) for k, b in AWKWARD.items()
    }
    assert all(a.artifact_id == a.path for a in registry.artifacts)

    report = verify_corpus(registry, spec, executor=InProcessExecutor(1))
    assert report.ok
    assert (report.verified_count, report.artifact_count) == (len(AWKWARD), len(AWKWARD))
    assert report.bytes_hashed == sum(len(b) for b in AWKWARD.values())
    assert report.source == f"s3://{s3_bucket}/team/corpus"

    same_size = "naïve CAFÉ\n".encode()
    assert len(same_size) == len(AWKWARD["dir with space/naïve café.md"])
    client.put_object(Bucket=s3_bucket, Key="team/corpus/dir with space/naïve café.md", Body=same_size)
    client.put_object(Bucket=s3_bucket, Key="team/corpus/plain/readme.md", Body=b"# changed and longer\n")
    client.delete_object(Bucket=s3_bucket, Key="team/corpus/日本語/ファイル.txt")

    report = verify_corpus(registry, spec, executor=InProcessExecutor(1), shard_bytes=1)
    assert not report.ok
    assert report.verified_count == len(AWKWARD) - 3
    by_path = {f.path: f for f in report.findings}
    assert set(by_path) == {"dir with space/naïve café.md", "plain/readme.md", "日本語/ファイル.txt"}
    stale = by_path["dir with space/naïve café.md"]
    assert (stale.status, stale.observed_digest, stale.observed_size) == ("stale", digest(same_size), len(same_size))
    assert stale.expected_digest == digest(AWKWARD["dir with space/naïve café.md"])
    longer = by_path["plain/readme.md"]
    assert (longer.status, longer.observed_digest) == ("stale", digest(b"# changed and longer\n"))
    missing = by_path["日本語/ファイル.txt"]
    assert (missing.status, missing.observed_digest, missing.observed_size) == ("missing", None, None)


def test_register_from_a_missing_bucket_is_a_storage_error(s3_server: S3Server) -> None:
    spec = StorageSpec(source="s3://eceb-no-such-bucket-x7/corpus", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(StorageError, match="NoSuchBucket"):
        register_corpus(spec, parse_rules(RULES, "rules.toml"), rules_name="rules.toml")


def test_register_refuses_non_portable_keys(s3_server: S3Server, s3_bucket: str) -> None:
    put_all(s3_server.client(), s3_bucket, {"ok.txt": b"ok", "a//b.txt": b"x", "c/../d.txt": b"y", "e\\f.txt": b"z"})
    spec = StorageSpec(source=f"s3://{s3_bucket}", endpoint_url=s3_server.endpoint_url)
    with pytest.raises(InputError) as caught:
        register_corpus(spec, parse_rules(RULES, "rules.toml"), rules_name="rules.toml")
    assert {p.record for p in caught.value.problems} == {"a//b.txt", "c/../d.txt", "e\\f.txt"}


# --- the command line --------------------------------------------------------


def test_cli_register_and_verify_with_a_prefix(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD, prefix="exports/2024")
    client.put_object(Bucket=s3_bucket, Key="exports/2024-old/stray.txt", Body=b"not in the corpus")
    source = f"s3://{s3_bucket}/exports/2024"
    registry = tmp_path / "registry.jsonl"
    common = ("--endpoint-url", s3_server.endpoint_url, "--workers", "1")

    result = invoke(
        s3_server, "corpus", "register", source, "--rules", str(rules_file(tmp_path)), "-o", str(registry), *common
    )
    assert result.exit_code == exit_codes.OK, result.stderr
    assert f"registered {len(AWKWARD)} artifacts" in result.stdout
    assert registry_paths(registry) == sorted(AWKWARD)

    result = invoke(s3_server, "corpus", "verify", str(registry), "--source", source, *common)
    assert result.exit_code == exit_codes.OK, result.stderr
    assert f"verified: {len(AWKWARD)}/{len(AWKWARD)} artifacts match" in result.stdout
    assert source in result.stdout

    client.put_object(Bucket=s3_bucket, Key="exports/2024/日本語/ファイル.txt", Body=b"rewritten")
    result = invoke(s3_server, "corpus", "verify", str(registry), "--source", source, "--json", *common)
    assert result.exit_code == exit_codes.VERIFICATION_FAILED
    report = json.loads(result.stdout)
    assert report["schema"] == "symgliph.eceb/verification-v0.1"
    assert report["source"] == source
    assert [(f["path"], f["status"], f["observed_digest"]) for f in report["findings"]] == [
        ("日本語/ファイル.txt", "stale", digest(b"rewritten"))
    ]


def test_cli_verify_names_objects_under_the_prefix_the_registry_does_not_list(
    s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD, prefix="u")
    client.put_object(Bucket=s3_bucket, Key="u-old/beside.txt", Body=b"beside the prefix: not in the corpus")
    source = f"s3://{s3_bucket}/u"
    registry = tmp_path / "registry.jsonl"
    endpoint = ("--endpoint-url", s3_server.endpoint_url, "--workers", "1")
    done = run_eceb(
        s3_server, "corpus", "register", source, "--rules", str(rules_file(tmp_path)), "-o", str(registry), *endpoint
    )
    assert done.returncode == exit_codes.OK, done.stderr
    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, "--json", *endpoint)
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["unregistered"] == {"count": 0, "excluded": 0, "fail": True, "paths": []}

    client.put_object(Bucket=s3_bucket, Key="u/policy/extra.md", Body=b"new secret doc\n")
    client.put_object(Bucket=s3_bucket, Key="u/日本語/新しい.txt", Body=b"new secret doc\n")
    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.VERIFICATION_FAILED
    assert "UNREGISTERED  policy/extra.md  not in the registry" in done.stderr
    assert "UNREGISTERED  日本語/新しい.txt  not in the registry" in done.stderr
    assert f"FAILED: {len(AWKWARD)}/{len(AWKWARD)} artifacts match" in done.stdout
    assert "2 files not in the registry" in done.stdout
    assert "secret" not in done.stdout + done.stderr
    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, "--json", *endpoint)
    assert done.returncode == exit_codes.VERIFICATION_FAILED
    report = json.loads(done.stdout)
    assert report["findings"] == []
    assert report["unregistered"] == {
        "count": 2,
        "excluded": 0,
        "fail": True,
        "paths": ["policy/extra.md", "日本語/新しい.txt"],
    }
    done = run_eceb(
        s3_server, "corpus", "verify", str(registry), "--source", source, "--unregistered", "report", *endpoint
    )
    assert done.returncode == exit_codes.OK, done.stderr


def test_cli_exit_codes_json_report_and_messages(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD, prefix="c")
    source = f"s3://{s3_bucket}/c"
    registry = tmp_path / "registry.jsonl"
    endpoint = ("--endpoint-url", s3_server.endpoint_url)

    done = run_eceb(
        s3_server, "corpus", "register", source, "--rules", str(rules_file(tmp_path)), "-o", str(registry), *endpoint
    )
    assert done.returncode == exit_codes.OK, done.stderr
    root = load_registry(registry).corpus_root
    assert f"corpus root {root}" in done.stdout

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.OK, done.stderr
    assert f"verified: {len(AWKWARD)}/{len(AWKWARD)} artifacts match" in done.stdout
    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, "--json", *endpoint)
    assert done.returncode == exit_codes.OK, done.stderr
    report = json.loads(done.stdout)
    assert (report["findings"], report["verified_count"], report["corpus_root"]) == ([], len(AWKWARD), root)

    tampered = b"tampered\n"
    client.put_object(Bucket=s3_bucket, Key="c/reserved/a+b=c&d;e,f@g$h!.txt", Body=tampered)
    client.delete_object(Bucket=s3_bucket, Key="c/dir with space/naïve café.md")
    changed = {"reserved/a+b=c&d;e,f@g$h!.txt": "stale", "dir with space/naïve café.md": "missing"}

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.VERIFICATION_FAILED
    assert f"FAILED: {len(AWKWARD) - 2}/{len(AWKWARD)} artifacts match" in done.stdout
    finding_lines = sorted(line for line in done.stderr.splitlines() if line.startswith(("STALE", "MISSING")))
    assert finding_lines[0].startswith("MISSING  dir with space/naïve café.md")
    assert finding_lines[1].startswith("STALE  reserved/a+b=c&d;e,f@g$h!.txt")
    assert f"found {digest(tampered)}" in finding_lines[1]
    assert len(finding_lines) == 2

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, "--json", *endpoint)
    assert done.returncode == exit_codes.VERIFICATION_FAILED
    findings = findings_of(done.stdout)
    assert {p: f["status"] for p, f in findings.items()} == changed
    assert findings["reserved/a+b=c&d;e,f@g$h!.txt"]["observed_digest"] == digest(tampered)
    assert json.loads(done.stdout)["verified_count"] == len(AWKWARD) - 2


def test_cli_missing_bucket_is_exit_5(s3_server: S3Server, tmp_path: Path) -> None:
    source = "s3://eceb-no-such-bucket-x7/corpus"
    endpoint = ("--endpoint-url", s3_server.endpoint_url)
    registry = EXAMPLE / "registry.jsonl"

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert "error: storage: s3://eceb-no-such-bucket-x7/corpus: no such bucket" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""

    output = tmp_path / "registry.jsonl"
    done = run_eceb(
        s3_server, "corpus", "register", source, "--rules", str(rules_file(tmp_path)), "-o", str(output), *endpoint
    )
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert "error: storage: s3://eceb-no-such-bucket-x7/corpus: cannot list (NoSuchBucket)" in done.stderr
    assert "Traceback" not in done.stderr
    assert not output.exists()


def test_cli_never_prints_credentials(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """Every outcome that reaches the storage, with the fake credentials in
    the environment: none of them is printed (``run_eceb`` checks each run)."""
    client = s3_server.client()
    put_all(client, s3_bucket, AWKWARD)
    source = f"s3://{s3_bucket}"
    registry = tmp_path / "registry.jsonl"
    rules = str(rules_file(tmp_path))
    done = run_eceb(
        s3_server,
        "corpus",
        "register",
        source,
        "--rules",
        rules,
        "-o",
        str(registry),
        "--endpoint-url",
        s3_server.endpoint_url,
    )
    assert done.returncode == exit_codes.OK, done.stderr
    client.put_object(Bucket=s3_bucket, Key="plain/readme.md", Body=b"changed")

    secret = s3_server.secrets[0]
    runs: list[tuple[tuple[str, ...], int, str]] = [
        (
            ("--source", source, "--endpoint-url", s3_server.endpoint_url),
            exit_codes.VERIFICATION_FAILED,
            "STALE  plain/readme.md",
        ),
        (
            ("--source", "s3://eceb-no-such-bucket-x7", "--endpoint-url", s3_server.endpoint_url),
            exit_codes.STORAGE,
            "no such bucket",
        ),
        (
            ("--source", source, "--endpoint-url", f"http://user:{secret}@"),
            exit_codes.USAGE,
            "takes no credentials",
        ),
    ]
    for args, expected, message in runs:
        done = run_eceb(s3_server, "corpus", "verify", str(registry), *args)
        assert (done.returncode, message in done.stderr) == (expected, True), (args, done.stderr)
        assert "Traceback" not in done.stderr

    no_credentials = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    }
    endpoint = ("--endpoint-url", s3_server.endpoint_url)
    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint, env=no_credentials)
    assert done.returncode == exit_codes.STORAGE, done.stderr
    no_usable_credentials = (
        f"error: storage: {source}: no usable AWS credentials (NoCredentialsError) for the endpoint "
        f"{s3_server.endpoint_url}; boto3 looks for them in the AWS_* environment variables, ~/.aws/ and "
        "instance roles\n"
    )
    assert done.stderr == no_usable_credentials, "one message, not one per artifact"
    done = run_eceb(
        s3_server,
        "corpus",
        "register",
        source,
        "--rules",
        rules,
        "-o",
        str(tmp_path / "r.jsonl"),
        *endpoint,
        env=no_credentials,
    )
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert done.stderr == no_usable_credentials, "listing says it as hashing does"


def test_cli_rejected_credentials_are_exit_5(s3_server_enforcing_auth: S3Server, tmp_path: Path) -> None:
    server = s3_server_enforcing_auth
    endpoint = ("--endpoint-url", server.endpoint_url)
    done = run_eceb(server, "corpus", "verify", str(EXAMPLE / "registry.jsonl"), "--source", "s3://corpus/x", *endpoint)
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert done.stderr == "error: storage: s3://corpus/x: the credentials were rejected (InvalidAccessKeyId)\n"
    assert done.stdout == ""
    output = tmp_path / "registry.jsonl"
    done = run_eceb(
        server,
        "corpus",
        "register",
        "s3://corpus/x",
        "--rules",
        str(rules_file(tmp_path)),
        "-o",
        str(output),
        *endpoint,
    )
    assert done.returncode == exit_codes.STORAGE, done.stderr
    assert done.stderr == "error: storage: s3://corpus/x: cannot list (InvalidAccessKeyId)\n"
    assert not output.exists()


def test_cli_paginates_more_than_1000_keys(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    objects = {f"many/{i // 100:02d}/object {i:04d} ü 本.txt": f"object {i}\n".encode() for i in range(1100)}
    client = s3_server.client(max_pool_connections=32)
    put_all(client, s3_bucket, objects, prefix="big", threads=32)
    source = f"s3://{s3_bucket}/big"
    storage = S3Storage(source, endpoint_url=s3_server.endpoint_url)
    assert sorted(e.path for e in storage.list_entries()) == sorted(objects)

    registry = tmp_path / "registry.jsonl"
    endpoint = ("--endpoint-url", s3_server.endpoint_url, "--concurrency", "32")
    done = run_eceb(
        s3_server, "corpus", "register", source, "--rules", str(rules_file(tmp_path)), "-o", str(registry), *endpoint
    )
    assert done.returncode == exit_codes.OK, done.stderr
    assert "registered 1100 artifacts" in done.stdout
    assert registry_paths(registry) == sorted(objects)
    assert {a.path: a.source_digest for a in load_registry(registry).artifacts} == {
        k: digest(b) for k, b in objects.items()
    }

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.OK, done.stderr
    assert "verified: 1100/1100 artifacts match" in done.stdout


# --- the real corpus ---------------------------------------------------------


def verify_json(server: S3Server, registry: Path, source: str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = run_eceb(
        server,
        "corpus",
        "verify",
        str(registry),
        "--source",
        source,
        "--endpoint-url",
        server.endpoint_url,
        "--json",
        *extra,
    )
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.slow
def test_real_corpus_verifies_from_s3(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    started = time.monotonic()
    registry = EXAMPLE / "registry.jsonl"
    client = s3_server.client(max_pool_connections=16)
    uploaded = s3_server.upload_tree(CORPUS_FILES, s3_bucket, "mirror/public-eng-mix")
    assert len(uploaded) == 2419
    source = f"s3://{s3_bucket}/mirror/public-eng-mix"
    endpoint = ("--endpoint-url", s3_server.endpoint_url)

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.OK, done.stderr
    assert "verified: 2419/2419 artifacts match (23367589 bytes hashed)" in done.stdout
    assert EXAMPLE_ROOT in done.stdout

    # Registering the uploaded copy reproduces the example registry byte for byte.
    rebuilt = tmp_path / "rebuilt.jsonl"
    done = run_eceb(
        s3_server, "corpus", "register", source, "--rules", str(EXAMPLE / "rules.toml"), "-o", str(rebuilt), *endpoint
    )
    assert done.returncode == exit_codes.OK, done.stderr
    assert rebuilt.read_bytes() == registry.read_bytes()

    artifacts = load_registry(registry).artifacts
    overwritten = [artifacts[0].path, artifacts[len(artifacts) // 2].path]
    deleted = artifacts[-1].path
    for path in overwritten:
        client.put_object(
            Bucket=s3_bucket, Key=f"mirror/public-eng-mix/{path}", Body=b"overwritten after registration\n"
        )
    client.delete_object(Bucket=s3_bucket, Key=f"mirror/public-eng-mix/{deleted}")
    expected = {overwritten[0]: "stale", overwritten[1]: "stale", deleted: "missing"}

    done = run_eceb(s3_server, "corpus", "verify", str(registry), "--source", source, *endpoint)
    assert done.returncode == exit_codes.VERIFICATION_FAILED, done.stderr
    named = {
        line.split("  ")[1]: line.split("  ")[0]
        for line in done.stderr.splitlines()
        if line.startswith(("STALE", "MISSING"))
    }
    assert named == {path: status.upper() for path, status in expected.items()}
    assert "FAILED: 2416/2419 artifacts match" in done.stdout

    # The same findings from two worker processes and small shards, as JSON.
    code, report = verify_json(s3_server, registry, source, "--workers", "2", "--shard-bytes", str(4 * 1024 * 1024))
    assert code == exit_codes.VERIFICATION_FAILED
    assert {f["path"]: f["status"] for f in report["findings"]} == expected
    assert [f["path"] for f in report["findings"]] == [a.path for a in artifacts if a.path in expected]
    assert (report["verified_count"], report["artifact_count"], report["corpus_root"]) == (2416, 2419, EXAMPLE_ROOT)
    for finding in report["findings"]:
        if finding["status"] == "stale":
            assert finding["observed_digest"] == digest(b"overwritten after registration\n")
            assert finding["observed_size"] == len(b"overwritten after registration\n")
    print(f"real corpus over loopback S3: {time.monotonic() - started:.1f} s")
