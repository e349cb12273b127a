"""Incremental registration with real files and a real S3-compatible server
(moto on loopback): ``eceb corpus register --previous REGISTRY`` hashes only
what changed since REGISTRY's listing snapshot and writes the registry a
full registration writes, byte for byte; a snapshot that is missing, bound
to another registry or damaged is not used (a warning, every object
hashed); the snapshot is written beside every registry, validating
against its published schemas."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.corpus.incremental import SETTLE_NS
from eceb_worker.corpus.registry import registry_lines
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import OutputError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.files import atomic_write
from eceb_worker.pipeline.inputs import load_rules
from eceb_worker.pipeline.register import build_registration, listing_path, open_previous, write_listing
from tests.support.helpers import invoke
from tests.support.paths import REPO
from tests.support.profiles import examples
from tests.support.s3_server import S3Server

RULES = b"""schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "policy/**"
kind = "policy"
classification = "restricted"

[[rule]]
glob = "**"
kind = "code"
classification = "internal"
"""

OTHER_RULES = RULES.replace(b'kind = "code"', b'kind = "runbook"')

# Keys that S3 listings URL-encode, and pairs whose registry order is not
# their key order ("a" and "a b", "a!x").
AWKWARD = {
    "dir with space/naïve café.md": b"naive cafe\n",
    "日本語/ファイル.txt": "日本語のテキスト\n".encode(),
    "reserved/a+b=c&d;e,f@g$h!.txt": b"reserved characters\n",
    "reserved/100% done (v2) [final] {x}.txt": b"percent and brackets\n",
    "reserved/%2F not a slash.txt": b"an encoded slash, literally\n",
    "policy/a": b"short name\n",
    "policy/a b": b"a space after it\n",
    "policy/a!x": b"a bang after it\n",
    "plain/readme.md": b"# plain\n",
}

SEGMENTS = st.sampled_from(["a", "a b", "a!x", "b+c", "100%", "naïve", "日本", "q=1&r", "z"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join)
CHANGES = st.sampled_from(["keep", "keep", "rewrite", "same-size", "delete"])


def schema_validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((REPO / "schema" / name).read_text(encoding="utf-8")))


def check_listing(registry: Path) -> list[dict[str, Any]]:
    """The listing snapshot beside ``registry``: valid against its schemas,
    bound to the registry's bytes, one entry per artifact in its order."""
    import blake3

    header, *entries = (json.loads(line) for line in listing_path(registry).read_text("utf-8").splitlines())
    schema_validator("listing-header-v0.1.json").validate(header)
    for entry in entries:
        schema_validator("listing-entry-v0.1.json").validate(entry)
    assert header["registry_digest"] == blake3.blake3(registry.read_bytes()).hexdigest()
    paths = [json.loads(line)["path"] for line in registry.read_text("utf-8").splitlines()[1:]]
    assert [e["path"] for e in entries] == paths
    assert header["entry_count"] == len(paths)
    return entries


def register(*args: str) -> Result:
    return invoke(main, "corpus", "register", *args, "--workers", "1")


def consistent(files: Mapping[str, bytes], beside: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """``files`` that a directory tree can hold beside ``beside``: less
    those ``beside`` holds, those that are a directory of another file
    (``a`` beside ``a/b``), and those under a file of ``beside``."""
    beside = beside or {}
    names = set(files) | set(beside)
    return {
        name: content
        for name, content in files.items()
        if name not in beside
        and not any(other.startswith(name + "/") for other in names)
        and not any(name.startswith(other + "/") for other in beside)
    }


def write_tree(root: Path, files: Mapping[str, bytes]) -> None:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)


def rewrite(path: Path, content: bytes) -> None:
    """Replace a file as editors and sync tools do: a new file renamed over it."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(content)
    fresh.replace(path)


# --- local files, through the pipeline ------------------------------------------


@settings(max_examples=examples(8, 60), suppress_health_check=[HealthCheck.too_slow])
@given(
    corpus=st.dictionaries(PATHS, st.binary(max_size=20), min_size=1, max_size=12),
    changes=st.lists(CHANGES, min_size=12, max_size=12),
    added=st.dictionaries(PATHS, st.binary(max_size=20), max_size=3),
    touched=st.integers(min_value=0, max_value=11),
)
def test_local_incremental_registration_equals_a_full_one(
    corpus: dict[str, bytes], changes: list[str], added: dict[str, bytes], touched: int
) -> None:
    """Random corpora in a directory, random changes (rewritten with or
    without the same size, deleted, added, one touched): the registry from
    the previous one is byte for byte a full registration's, and exactly
    the files left alone reuse their digest. (The settling margin is 0
    here: every change is a rename or a new size, so none hides in a
    timestamp tick.)"""
    corpus = consistent(corpus)
    added = consistent(added, corpus)
    rules = load_rules(RULES, "rules.toml")
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        root = base / "corpus"
        write_tree(root, corpus)
        spec = StorageSpec(source=str(root))
        first = build_registration(spec, rules, rules_name="rules.toml", executor=InProcessExecutor(1))
        registry = base / "r1.jsonl"
        atomic_write(registry, registry_lines(first.registry))
        write_listing(first, registry)
        check_listing(registry)

        left_alone = set(corpus)
        for (name, content), change in zip(sorted(corpus.items()), changes, strict=False):
            if change == "rewrite":
                rewrite(root / name, content + b"+")
            elif change == "same-size":
                rewrite(root / name, bytes(b ^ 0x20 for b in content))
            elif change == "delete":
                (root / name).unlink()
            if change != "keep":
                left_alone.discard(name)
        survivors = sorted(left_alone)
        if survivors:
            name = survivors[touched % len(survivors)]
            info = (root / name).stat()
            os.utime(root / name, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_007))
            left_alone.discard(name)
        write_tree(root, added)

        warnings: list[str] = []
        previous = open_previous(str(registry), on_warning=warnings.append)
        again = build_registration(
            spec, rules, rules_name="rules.toml", previous=previous, on_warning=warnings.append, settle_ns=0
        )
        full = build_registration(spec, rules, rules_name="rules.toml")
        assert warnings == []
        assert b"".join(registry_lines(again.registry)) == b"".join(registry_lines(full.registry))
        assert again.reused == len(left_alone)
        assert again.rehashed == len(full.registry.artifacts) - len(left_alone)


# --- local files, through the command line ---------------------------------------


@pytest.fixture
def settled_corpus(tmp_path: Path) -> Path:
    """A corpus whose files were last changed more than the settling margin
    ago (a file changed within it is hashed again, whatever its times say)."""
    root = tmp_path / "corpus"
    write_tree(root, {f"runbook/{n:02d}.md": f"runbook {n}\n".encode() for n in range(20)})
    write_tree(root, {"policy/access.md": b"restricted\n"})
    (tmp_path / "rules.toml").write_bytes(RULES)
    newest = max(p.stat().st_ctime_ns for p in root.rglob("*"))
    wait = (newest + SETTLE_NS) / 1e9 - time.time() + 0.05
    if wait > 0:
        time.sleep(wait)  # files must age past the margin: no event says so
    return root


def test_cli_hashes_only_what_changed_and_writes_the_full_registrys_bytes(tmp_path: Path, settled_corpus: Path) -> None:
    rules = str(tmp_path / "rules.toml")
    first = tmp_path / "r1.jsonl"
    done = register(str(settled_corpus), "--rules", rules, "-o", str(first))
    assert done.exit_code == exit_codes.OK, done.stderr
    assert f"wrote {first}\nwrote {listing_path(first)}\n" in done.stdout
    entries = check_listing(first)
    assert set(entries[0]) == {"path", "size_bytes", "mtime_ns", "ctime_ns", "inode"}

    (settled_corpus / "runbook/03.md").write_bytes(b"runbook 3, edited in place and longer\n")
    (settled_corpus / "runbook/07.md").unlink()
    write_tree(settled_corpus, {"runbook/new.md": b"new\n"})
    second = tmp_path / "r2.jsonl"
    done = register(str(settled_corpus), "--rules", rules, "-o", str(second), "--previous", str(first))
    assert done.exit_code == exit_codes.OK, done.stderr
    assert done.stderr == ""
    assert f"hashed 2, took the digests of 19 from {first}\n" in done.stdout
    check_listing(second)

    full = tmp_path / "full.jsonl"
    done = register(str(settled_corpus), "--rules", rules, "-o", str(full), "--json")
    assert done.exit_code == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == {
        "artifact_count": 21,
        "bytes": sum(p.stat().st_size for p in settled_corpus.rglob("*") if p.is_file()),
        "corpus_root": json.loads(full.read_text().splitlines()[0])["corpus_root"],
        "listing": str(listing_path(full)),
        "registry": str(full),
        "rehashed": 21,
        "reused": 0,
        "source": str(settled_corpus),
    }
    assert second.read_bytes() == full.read_bytes()

    # Rules change between nights: kind and classification are today's, the digests reused.
    (tmp_path / "other.toml").write_bytes(OTHER_RULES)
    third = tmp_path / "r3.jsonl"
    done = register(
        str(settled_corpus),
        "--rules",
        str(tmp_path / "other.toml"),
        "-o",
        str(third),
        "--previous",
        str(second),
        "--json",
    )
    assert done.exit_code == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["reused"] == 19  # the two files changed just before r2 have not settled
    done = register(str(settled_corpus), "--rules", str(tmp_path / "other.toml"), "-o", str(full))
    assert third.read_bytes() == full.read_bytes()
    assert b'"kind":"runbook"' in third.read_bytes()


def test_cli_without_a_usable_snapshot_hashes_everything_and_says_why(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_tree(root, {"a.md": b"a\n", "b/c.md": b"c\n"})
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    first = tmp_path / "r1.jsonl"
    assert register(str(root), "--rules", str(rules), "-o", str(first)).exit_code == exit_codes.OK
    snapshot = listing_path(first)
    good = snapshot.read_bytes()
    full = first.read_bytes()
    out = tmp_path / "r2.jsonl"

    def again() -> Result:
        done = register(str(root), "--rules", str(rules), "-o", str(out), "--previous", str(first))
        assert done.exit_code == exit_codes.OK, done.stderr
        assert "hashed 2, took the digests of 0" in done.stdout
        assert out.read_bytes() == full
        return done

    snapshot.unlink()
    assert again().stderr == (
        f"warning: {snapshot}: cannot read: No such file or directory; the listing snapshot is not used: "
        "every object is hashed\n"
    )
    header, rest = good.split(b"\n", 1)
    other = json.dumps({**json.loads(header), "registry_digest": "f" * 64}).encode()
    snapshot.write_bytes(other + b"\n" + rest)
    assert again().stderr == (
        f"warning: {snapshot}: made for another registry than {first} (its registry_digest is not the registry's "
        "BLAKE3): the listing snapshot is not used, every object is hashed\n"
    )
    lines = good.splitlines(keepends=True)
    snapshot.write_bytes(lines[0] + b'{"path":"a.md","size_bytes":"two"}\n' + lines[2])
    assert again().stderr.startswith(f"warning: {snapshot}, line 2: field 'size_bytes':")
    snapshot.write_bytes(lines[0] + lines[2] + lines[1])
    assert again().stderr == (
        f"warning: {snapshot}, line 2: field 'path': names another path than artifact 1 of the registry {first}; "
        "the listing snapshot is not used: every object is hashed\n"
    )


def test_cli_refuses_a_previous_registry_that_is_not_one(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_tree(root, {"a.md": b"a\n"})
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    first = tmp_path / "r1.jsonl"
    assert register(str(root), "--rules", str(rules), "-o", str(first)).exit_code == exit_codes.OK
    out = tmp_path / "r2.jsonl"

    done = register(str(root), "--rules", str(rules), "-o", str(out), "--previous", str(listing_path(first)))
    assert done.exit_code == exit_codes.BAD_INPUT
    assert "is a listing snapshot, not a registry: name the registry it is beside" in done.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(first.read_bytes().replace(b'"kind":"code"', b'"kind":"wiki"'))
    done = register(str(root), "--rules", str(rules), "-o", str(out), "--previous", str(broken))
    assert done.exit_code == exit_codes.BAD_INPUT
    assert "'wiki' is not one of" in done.stderr
    done = register(str(root), "--rules", str(rules), "-o", str(out), "--previous", str(tmp_path / "absent.jsonl"))
    assert done.exit_code == exit_codes.BAD_INPUT
    assert not out.exists() and not listing_path(out).exists()

    # An output never replaces an input: not the previous registry, nor its snapshot.
    for target in (first, listing_path(first)):
        done = register(str(root), "--rules", str(rules), "-o", str(target), "--previous", str(first))
        assert done.exit_code == exit_codes.OUTPUT, done.stderr
        assert "is the input" in done.stderr


def test_cli_writes_no_snapshot_beside_standard_output(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_tree(root, {"a.md": b"a\n"})
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    first = tmp_path / "r1.jsonl"
    assert register(str(root), "--rules", str(rules), "-o", str(first)).exit_code == exit_codes.OK
    done = register(str(root), "--rules", str(rules), "-o", "-", "--previous", str(first))
    assert done.exit_code == exit_codes.OK, done.stderr
    assert done.stdout.encode() == first.read_bytes()
    assert "took the digests of" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "r1.jsonl", "r1.listing.jsonl", "rules.toml"]


def test_cli_keeps_the_registry_when_its_snapshot_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry is what matters: a snapshot that cannot be written at
    the end is a warning (the next --previous registration hashes every
    file), not a failure."""
    root = tmp_path / "corpus"
    write_tree(root, {"a.md": b"a\n"})
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    out = tmp_path / "r.jsonl"

    def refuse(path: Path, chunks: Any) -> None:
        raise OutputError(f"{path}: cannot write: No space left on device")

    monkeypatch.setattr("eceb_worker.pipeline.register.atomic_write", refuse)
    done = register(str(root), "--rules", str(rules), "-o", str(out), "--json")
    assert done.exit_code == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["listing"] is None
    assert out.exists() and not listing_path(out).exists()
    assert "No space left on device: no listing snapshot" in done.stderr


# --- S3 ------------------------------------------------------------------------


def put_all(client: Any, bucket: str, prefix: str, objects: Mapping[str, bytes]) -> None:
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=body)


def test_cli_s3_hashes_only_changed_objects_with_awkward_keys(
    s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    client = s3_server.client()
    put_all(client, s3_bucket, "corpus", AWKWARD)
    source = f"s3://{s3_bucket}/corpus"
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    endpoint = ("--endpoint-url", s3_server.endpoint_url)
    first = tmp_path / "r1.jsonl"
    done = register(source, "--rules", str(rules), "-o", str(first), *endpoint)
    assert done.exit_code == exit_codes.OK, done.stderr
    entries = check_listing(first)
    assert set(entries[0]) == {"path", "size_bytes", "etag", "last_modified"}
    assert [e["path"] for e in entries if e["path"].startswith("policy/")] == ["policy/a b", "policy/a!x", "policy/a"]

    put_all(
        client,
        s3_bucket,
        "corpus",
        {
            "日本語/ファイル.txt": "日本語のテキスト\n".encode()[::-1],  # same size, other bytes
            "reserved/100% done (v2) [final] {x}.txt": b"longer than it was before\n",
            "policy/a b": b"rewritten\n",
            "new dir/ü+%.md": b"added\n",
        },
    )
    client.delete_object(Bucket=s3_bucket, Key="corpus/plain/readme.md")
    second = tmp_path / "r2.jsonl"
    done = register(source, "--rules", str(rules), "-o", str(second), "--previous", str(first), *endpoint, "--json")
    assert done.exit_code == exit_codes.OK, done.stderr
    found = json.loads(done.stdout)
    assert (found["rehashed"], found["reused"]) == (4, 5)
    full = tmp_path / "full.jsonl"
    assert register(source, "--rules", str(rules), "-o", str(full), *endpoint).exit_code == exit_codes.OK
    assert second.read_bytes() == full.read_bytes()
    check_listing(second)

    # The previous registry and its snapshot read from the bucket too.
    client.put_object(Bucket=s3_bucket, Key="registries/r2.jsonl", Body=second.read_bytes())
    client.put_object(Bucket=s3_bucket, Key="registries/r2.listing.jsonl", Body=listing_path(second).read_bytes())
    third = tmp_path / "r3.jsonl"
    previous = f"s3://{s3_bucket}/registries/r2.jsonl"
    done = register(source, "--rules", str(rules), "-o", str(third), "--previous", previous, *endpoint)
    assert done.exit_code == exit_codes.OK, done.stderr
    assert f"hashed 0, took the digests of 9 from {previous}" in done.stdout
    assert third.read_bytes() == full.read_bytes()
    client.delete_object(Bucket=s3_bucket, Key="registries/r2.listing.jsonl")
    done = register(source, "--rules", str(rules), "-o", str(third), "--previous", previous, *endpoint)
    assert done.exit_code == exit_codes.OK, done.stderr
    assert f"hashed 9, took the digests of 0 from {previous}" in done.stdout
    assert done.stderr.startswith(f"warning: s3://{s3_bucket}/registries/r2.listing.jsonl")
    assert done.stderr.endswith("the listing snapshot is not used: every object is hashed\n")
    assert third.read_bytes() == full.read_bytes()


@settings(
    max_examples=examples(5, 40),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    corpus=st.dictionaries(PATHS, st.binary(max_size=16), min_size=1, max_size=10),
    changes=st.lists(CHANGES, min_size=10, max_size=10),
    added=st.dictionaries(PATHS, st.binary(max_size=16), max_size=3),
)
def test_s3_incremental_registration_equals_a_full_one(
    s3_server: S3Server, s3_bucket: str, corpus: dict[str, bytes], changes: list[str], added: dict[str, bytes]
) -> None:
    """Random corpora under a fresh prefix of a real S3-compatible server,
    random changes: byte for byte the full registration, and exactly the
    objects left alone reuse their digest."""
    import uuid

    added = {name: content for name, content in added.items() if name not in corpus}
    client = s3_server.client()
    prefix = f"p-{uuid.uuid4().hex[:8]}"
    put_all(client, s3_bucket, prefix, corpus)
    rules = load_rules(RULES, "rules.toml")
    spec = StorageSpec(source=f"s3://{s3_bucket}/{prefix}", endpoint_url=s3_server.endpoint_url, concurrency=4)
    first = build_registration(spec, rules, rules_name="rules.toml")
    with tempfile.TemporaryDirectory() as scratch:
        registry = Path(scratch) / "r1.jsonl"
        atomic_write(registry, registry_lines(first.registry))
        write_listing(first, registry)

        left_alone = set(corpus)
        for (name, content), change in zip(sorted(corpus.items()), changes, strict=False):
            if change == "rewrite":
                put_all(client, s3_bucket, prefix, {name: content + b"+"})
            elif change == "same-size":
                put_all(client, s3_bucket, prefix, {name: bytes(b ^ 0x20 for b in content)})
            elif change == "delete":
                client.delete_object(Bucket=s3_bucket, Key=f"{prefix}/{name}")
            if change != "keep":
                left_alone.discard(name)
        put_all(client, s3_bucket, prefix, added)

        warnings: list[str] = []
        previous = open_previous(str(registry), on_warning=warnings.append)
        again = build_registration(spec, rules, rules_name="rules.toml", previous=previous, on_warning=warnings.append)
    full = build_registration(spec, rules, rules_name="rules.toml")
    assert warnings == []
    assert b"".join(registry_lines(again.registry)) == b"".join(registry_lines(full.registry))
    # An object of no bytes rewritten "same-size" is the same empty object: its ETag is kept and
    # it may be reused (rightly) when its LastModified lands in the same second.
    empty_rewritten = {n for n, c in corpus.items() if not c} - left_alone
    assert len(left_alone) <= again.reused <= len(left_alone) + len(empty_rewritten)
