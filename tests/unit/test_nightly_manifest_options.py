"""Every option the nightly CronJob's manifest names (its arguments, and the
thresholds its comments tell an operator to add) is an option of
``eceb-dist nightly``: an operator following the manifest never gets a usage
error (exit 2), which the Job's podFailurePolicy fails at once."""

from __future__ import annotations

import re
from pathlib import Path

from eceb_cli.nightly import nightly

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "base" / "nightly.yaml"


def test_every_option_the_nightly_manifest_names_exists() -> None:
    known = {name for param in nightly.params for name in param.opts}
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", MANIFEST.read_text()))
    assert named, "the manifest names no option"
    assert sorted(named - known) == []
