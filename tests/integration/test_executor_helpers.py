"""The embedded executor's helper processes give the same results as one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.executors import InProcessExecutor, inprocess
from eceb_worker.pipeline.jobs import verify_corpus
from eceb_worker.pipeline.register import register_corpus
from tests.integration.test_verify_local import FILES, make_corpus

RULES = parse_rules(
    b'schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "**"\nkind = "runbook"\nclassification = "internal"\n',
    "rules.toml",
)


@pytest.fixture
def always_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start helper processes for any amount of work."""
    monkeypatch.setattr(inprocess, "HELPER_MIN_WORK_BYTES", 1)


@pytest.mark.usefixtures("always_help")
def test_helpers_verify_like_one_process(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path, FILES)
    (tmp_path / "d1/f4.md").write_bytes(b"tampered")
    (tmp_path / "d2/f5.md").unlink()
    (tmp_path / "d0/f0.md").unlink()
    (tmp_path / "d0/f0.md").symlink_to(tmp_path.parent)
    spec = StorageSpec(source=str(tmp_path))
    alone = verify_corpus(registry, spec, executor=InProcessExecutor(1), shard_bytes=10**12)
    helped = verify_corpus(registry, spec, executor=InProcessExecutor(3), shard_bytes=1)
    assert helped == alone
    assert {f.path: f.status for f in helped.findings} == {
        "d0/f0.md": "outside_corpus",
        "d1/f4.md": "stale",
        "d2/f5.md": "missing",
    }


@pytest.mark.usefixtures("always_help")
def test_helpers_register_like_one_process(tmp_path: Path) -> None:
    make_corpus(tmp_path, FILES)
    spec = StorageSpec(source=str(tmp_path))
    alone = register_corpus(spec, RULES, rules_name="r", executor=InProcessExecutor(1), shard_bytes=10**12)
    helped = register_corpus(spec, RULES, rules_name="r", executor=InProcessExecutor(2), shard_bytes=1)
    assert helped == alone
    assert len(helped.artifacts) == len(FILES)


@pytest.mark.usefixtures("always_help")
def test_helpers_report_a_failing_storage(tmp_path: Path) -> None:
    registry = make_corpus(tmp_path / "corpus", FILES)
    spec = StorageSpec(source=str(tmp_path / "absent"))
    from eceb_worker.errors import StorageError

    with pytest.raises(StorageError, match="absent"):
        verify_corpus(registry, spec, executor=InProcessExecutor(2), shard_bytes=1)


@pytest.mark.usefixtures("always_help")
def test_helpers_run_this_eceb_whatever_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory holding another ``eceb_worker`` (a checkout, a decoy) is
    never put first on a helper's path."""
    decoy = tmp_path / "elsewhere" / "eceb_worker"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the wrong eceb_worker')\n")
    registry = make_corpus(tmp_path / "corpus", FILES)
    monkeypatch.chdir(decoy.parent)
    spec = StorageSpec(source=str(tmp_path / "corpus"))
    assert verify_corpus(registry, spec, executor=InProcessExecutor(2), shard_bytes=1).ok
