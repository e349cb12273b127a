"""Rebuild the publication bundles of the examples (``eceb publish``).

For each example: evaluate its run (``eceb evaluate``), then publish the
benchmark, run and report with its sources file, claiming
``conformance_seed`` (both runs are synthetic), into ``<example>/bundle/``
(the old bundle is replaced only once the new one is complete). The
implementation revision of a synthetic run is the BLAKE3 of the script that
synthesized it. ``examples/public-eng-mix/sources.json`` is first derived
from the real corpus's ``SOURCES.md`` (sources, commits, licences) and
``MANIFEST.tsv`` (every file's licence).

From the repository root::

    python examples/make_bundles.py                  # both examples, into examples/*/bundle
    python examples/make_bundles.py --out-dir /tmp/b # elsewhere: /tmp/b/enterprise-seed, /tmp/b/public-eng-mix
    python examples/make_bundles.py --only enterprise-seed

and check them with ``eceb publish --check``, as the README of each example says.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import blake3

EXAMPLES = Path(__file__).resolve().parent
REPO = EXAMPLES.parent
PUBLIC_CORPUS = REPO.parent / "shared" / "corpora" / "public-eng-mix"

REDISTRIBUTABLE = frozenset({"Apache-2.0", "MIT", "MIT OR Apache-2.0", "CC0-1.0", "CC-BY-4.0"})
"""SPDX expressions whose terms allow the corpus's copy to be redistributed
(with attribution, which SOURCES.md and MANIFEST.tsv give); any other
licence is declared not redistributable."""

_ROW = re.compile(r"^\| \[([^\]]+)\]\(([^)]+)\) \| `([0-9a-f]{40})` \| ([^|]+?) \| ([^|]+?) \| (.+) \|$")


def public_eng_mix_sources(sources_md: Path, manifest_tsv: Path) -> dict[str, object]:
    """The sources file of the real corpus: one source a row of SOURCES.md's
    table, its licence the table's, joined by every other licence
    MANIFEST.tsv gives files of that source (``AND``)."""
    by_repo: dict[str, set[str]] = defaultdict(set)
    with manifest_tsv.open(encoding="utf-8", newline="") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            by_repo[row["source_repo"]].add(row["license_spdx"])
    sources = []
    for line in sources_md.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        repo, url, commit, licence, kinds, taken = match.groups()
        others = sorted(by_repo.pop(repo, set()) - {licence})
        expression = " AND ".join([licence if " OR " not in licence or not others else f"({licence})", *others])
        note = f"{kinds}: {taken}"
        if others:
            note += f" (some files under {', '.join(others)}, as MANIFEST.tsv lists)"
        sources.append(
            {
                "name": repo,
                "url": url,
                "revision": commit,
                "license_spdx": expression,
                "redistributable": all(part in REDISTRIBUTABLE for part in [licence, *others]),
                "note": note,
            }
        )
    if by_repo:
        raise SystemExit(f"MANIFEST.tsv names sources SOURCES.md does not list: {sorted(by_repo)}")
    return {
        "schema": "symgliph.eceb/sources-v0.1",
        "corpus": "public-eng-mix",
        "description": "Derived by examples/make_bundles.py from the corpus's SOURCES.md (sources, commits, "
        "licences) and MANIFEST.tsv (each file's source, path and licence), which give the attribution "
        "CC-BY-4.0 asks for.",
        "sources": sorted(sources, key=lambda s: str(s["name"])),
    }


def _eceb(*arguments: str | Path) -> int:
    """Run ``eceb`` with ``arguments``; its exit code."""
    return subprocess.run([sys.executable, "-m", "eceb_cli", *map(str, arguments)], check=False).returncode


def build(example: str, corpus: Path, generator: str, target: Path) -> None:
    """Evaluate and publish ``example`` into the new directory ``target``
    (replacing what is there once the new bundle is complete)."""
    directory = EXAMPLES / example
    revision = (
        f"examples/{example}/{generator} blake3:{blake3.blake3((directory / generator).read_bytes()).hexdigest()}"
    )
    with tempfile.TemporaryDirectory(prefix="eceb-bundle-") as scratch:
        report = Path(scratch) / "report.json"
        code = _eceb(
            "evaluate", directory / "benchmark.json", directory / "run.json", "--corpus", corpus, "-o", report, "-q"
        )
        if code not in (0, 1):
            raise SystemExit(f"{example}: eceb evaluate exited {code}")
        staged = Path(scratch) / "bundle"
        code = _eceb(
            "publish",
            directory / "benchmark.json",
            directory / "run.json",
            report,
            "--sources",
            directory / "sources.json",
            "--implementation-revision",
            revision,
            "--claim",
            "conformance_seed",
            "-o",
            staged,
        )
        if code != 0:
            raise SystemExit(f"{example}: eceb publish exited {code}")
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(staged, target)


def main(argv: Sequence[str] | None = None) -> None:
    """Rebuild the bundles (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out-dir", type=Path, help="Write DIR/<example> instead of examples/<example>/bundle.")
    parser.add_argument("--only", choices=("enterprise-seed", "public-eng-mix"), help="One example only.")
    args = parser.parse_args(argv)
    examples = {
        "enterprise-seed": (EXAMPLES / "enterprise-seed" / "corpus", "make_seed.py"),
        "public-eng-mix": (PUBLIC_CORPUS / "files", "make_run.py"),
    }
    for example, (corpus, generator) in examples.items():
        if args.only not in (None, example):
            continue
        if example == "public-eng-mix":
            sources = public_eng_mix_sources(PUBLIC_CORPUS / "SOURCES.md", PUBLIC_CORPUS / "MANIFEST.tsv")
            text = json.dumps(sources, indent=2, ensure_ascii=False) + "\n"
            (EXAMPLES / example / "sources.json").write_text(text, encoding="utf-8")
        target = args.out_dir / example if args.out_dir else EXAMPLES / example / "bundle"
        build(example, corpus, generator, target)
        print(f"{example}: bundle written to {target}")


if __name__ == "__main__":
    main()
