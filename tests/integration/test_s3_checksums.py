"""S3-compatible stores that do not support flexible checksums, and bytes
corrupted on their way from the store, against the loopback S3 server
behind relays (``tests/support/relays.py``): corpus reads, input reads and
report writes, with checksums sent only when required (the default) and
with ``ECEB_S3_CHECKSUMS=when_supported``."""

from __future__ import annotations

import random
from pathlib import Path

import blake3
import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.core.digests import CHECK_READS
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import ArtifactUnreadable, OutputError, StorageError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.objects import ObjectStore
from eceb_worker.io.s3_corpus import S3Storage
from eceb_worker.pipeline.embedded import verify_corpus
from eceb_worker.pipeline.register import register_corpus
from tests.support.dist_support import SEED, embedded_report
from tests.support.relays import ChecksumRefusingRelay, CorruptingRelay, CuttingRelay
from tests.support.s3_server import S3Server

BODY = random.Random(15).randbytes(300_000)
RULES = b"""schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "**"
kind = "code"
classification = "internal"
"""


def gets(relay: CuttingRelay, suffix: str) -> int:
    """How many GETs of a key ending with ``suffix`` the relay forwarded or refused."""
    return sum(1 for method, path in relay.requests if method == "GET" and path.split("?")[0].endswith(suffix))


def put_corpus(s3_server: S3Server, bucket: str) -> StorageSpec:
    """Three objects under ``corpus/``; the corpus read directly (no relay)."""
    client = s3_server.client()
    for name, body in (("a.bin", BODY), ("b.txt", b"b\n"), ("c.txt", b"c\n")):
        client.put_object(Bucket=bucket, Key=f"corpus/{name}", Body=body)
    return StorageSpec(source=f"s3://{bucket}/corpus", endpoint_url=s3_server.endpoint_url)


def through(spec: StorageSpec, endpoint_url: str) -> StorageSpec:
    return StorageSpec(source=spec.source, endpoint_url=endpoint_url, concurrency=1)


def test_evaluate_and_verify_from_a_store_that_rejects_checksum_headers(
    s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """Benchmark, run, registry and corpus read from a store answering 400
    InvalidArgument to any checksum header: the report is the one read from
    disk, and no request carried a checksum header."""
    expected = embedded_report(tmp_path)
    s3_server.upload_tree(SEED, s3_bucket, "seed")
    seed = f"s3://{s3_bucket}/seed"
    out = tmp_path / "report.json"
    with ChecksumRefusingRelay(s3_server.endpoint_url) as relay:
        endpoint = ("--endpoint-url", relay.endpoint_url)
        inputs = (f"{seed}/benchmark.json", f"{seed}/run.json", "--corpus", f"{seed}/corpus")
        evaluated = CliRunner().invoke(main, ["evaluate", *inputs, *endpoint, "--workers", "1", "-o", str(out)])
        assert evaluated.exit_code == exit_codes.TASKS_FAILED, evaluated.output
        assert out.read_bytes() == expected
        verified = CliRunner().invoke(
            main, ["corpus", "verify", str(SEED / "registry.jsonl"), "--source", f"{seed}/corpus", *endpoint]
        )
        assert verified.exit_code == exit_codes.OK, verified.output
        assert relay.refused == []
        assert gets(relay, "benchmark.json") and gets(relay, "run.json") and gets(relay, "registry.jsonl")
        assert gets(relay, ".md") > 0


def test_reports_are_written_to_a_store_that_rejects_checksum_headers(s3_server: S3Server, s3_bucket: str) -> None:
    url = f"s3://{s3_bucket}/reports/report.json"
    with ChecksumRefusingRelay(s3_server.endpoint_url) as relay:
        store = ObjectStore(relay.endpoint_url)
        store.check_writable(url)
        store.put_atomic(url, BODY)
        assert store.get(url)[0] == BODY
        assert relay.refused == []
        assert [method for method, _ in relay.requests].count("PUT") == 3  # probe, temporary, copy


def test_checksums_when_supported_are_sent_and_checked(
    s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ECEB_S3_CHECKSUMS=when_supported``: every request carries checksums
    (a store without them refuses reads and writes), and a body that fails
    the store's checksum is read again whole, CHECK_READS reads at most."""
    monkeypatch.setenv("ECEB_S3_CHECKSUMS", "when_supported")
    spec = put_corpus(s3_server, s3_bucket)
    with ChecksumRefusingRelay(s3_server.endpoint_url) as relay:
        with pytest.raises(ArtifactUnreadable, match="InvalidArgument"):
            S3Storage(spec.source, endpoint_url=relay.endpoint_url).hash_artifact("a.bin")
        with pytest.raises(OutputError, match="InvalidArgument"):
            ObjectStore(relay.endpoint_url).put_atomic(f"s3://{s3_bucket}/out.json", b"{}")
        assert [method for method, _ in relay.refused] == ["GET", "PUT"]

    true_digest = (len(BODY), blake3.blake3(BODY).hexdigest())
    with CorruptingRelay(s3_server.endpoint_url, key_suffix="a.bin", corruptions=1) as relay:
        assert S3Storage(spec.source, endpoint_url=relay.endpoint_url).hash_artifact("a.bin") == true_digest
        assert ObjectStore(relay.endpoint_url).get(f"{spec.source}/a.bin")[0] == BODY
        assert (relay.corrupted, gets(relay, "a.bin")) == (1, 3)
    with CorruptingRelay(s3_server.endpoint_url, key_suffix="a.bin") as relay:
        storage = S3Storage(spec.source, endpoint_url=relay.endpoint_url)
        with pytest.raises(ArtifactUnreadable, match=rf"^a\.bin: corrupted in transit .*{CHECK_READS} reads"):
            storage.hash_artifact("a.bin")
        assert gets(relay, "a.bin") == CHECK_READS
        with pytest.raises(StorageError, match=rf"a\.bin: corrupted in transit .*{CHECK_READS} reads"):
            ObjectStore(relay.endpoint_url).get(f"{spec.source}/a.bin")


def test_a_digest_mismatch_is_read_again_before_it_is_reported(s3_server: S3Server, s3_bucket: str) -> None:
    """Checksums off (the default): a body corrupted once verifies on the
    second read; one corrupted differently on every read is ``unreadable``
    after CHECK_READS reads; an object whose bytes did change is ``stale``
    once a second read agrees."""
    spec = put_corpus(s3_server, s3_bucket)
    registry = register_corpus(spec, parse_rules(RULES, "rules.toml"), rules_name="rules.toml")

    with CorruptingRelay(s3_server.endpoint_url, key_suffix="a.bin", corruptions=1) as relay:
        report = verify_corpus(registry, through(spec, relay.endpoint_url), executor=InProcessExecutor(1))
        assert report.ok, report.findings
        assert (relay.corrupted, gets(relay, "a.bin"), gets(relay, "b.txt")) == (1, 2, 1)
        assert report.bytes_hashed == len(BODY) + 4

    with CorruptingRelay(s3_server.endpoint_url, key_suffix="a.bin") as relay:
        report = verify_corpus(registry, through(spec, relay.endpoint_url), executor=InProcessExecutor(1))
        [finding] = report.findings
        assert (finding.path, finding.status, finding.observed_digest) == ("a.bin", "unreadable", None)
        assert finding.detail == f"its bytes differed on each of {CHECK_READS} reads (corrupted in transit?)"
        assert gets(relay, "a.bin") == CHECK_READS

    changed = BODY[::-1]
    s3_server.client().put_object(Bucket=s3_bucket, Key="corpus/a.bin", Body=changed)
    with CuttingRelay(s3_server.endpoint_url, cuts=0, after=0) as relay:
        report = verify_corpus(registry, through(spec, relay.endpoint_url), executor=InProcessExecutor(1))
        [finding] = report.findings
        assert (finding.status, finding.observed_digest) == ("stale", blake3.blake3(changed).hexdigest())
        assert gets(relay, "a.bin") == 2


def test_a_checksum_mode_that_is_neither_fails_naming_the_variable() -> None:
    """Checked before any request: no store is needed."""
    registry = str(SEED / "registry.jsonl")
    options = ("--source", "s3://any-bucket/corpus", "--endpoint-url", "http://127.0.0.1:9")
    done = CliRunner().invoke(main, ["corpus", "verify", registry, *options], env={"ECEB_S3_CHECKSUMS": "always"})
    assert done.exit_code == exit_codes.STORAGE, done.output
    assert done.stderr == "error: storage: ECEB_S3_CHECKSUMS must be one of when_required, when_supported\n"
