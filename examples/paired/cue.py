#!/usr/bin/env python3
"""The example's cue command: writes a task cue (repocue/task-cue-1) for the
task in $ECEB_TASK to standard output. It runs in the repository, reads the
task's targets (files, or the files of a directory) and quotes their first
lines, numbered. Deterministic: the same repository and task give the same
bytes. Local preparation only: does not authorize paid execution."""

import json
import os
import sys
from pathlib import Path

MAX_LINES = 40


def files_of(target: Path) -> list[Path]:
    if target.is_dir():
        return sorted(p for p in target.rglob("*") if p.is_file() and not p.name.endswith("_test.go"))
    return [target]


def main() -> int:
    task = json.loads(Path(os.environ["ECEB_TASK"]).read_text(encoding="utf-8"))
    excerpts = []
    for target in task["targets"]:
        for path in files_of(Path(target)):
            lines = path.read_text(encoding="utf-8").splitlines()[:MAX_LINES]
            text = "".join(f"{number}: {line}\n" for number, line in enumerate(lines, 1))
            excerpts.append({"path": path.as_posix(), "first_line": 1, "text": text})
    cue = {
        "schema": "repocue/task-cue-1",
        "task": task["id"],
        "declaration": os.environ["ECEB_DECLARATION"],
        "targets": task["targets"],
        "checks": task.get("checks", []),
        "excerpts": excerpts,
    }
    sys.stdout.write(json.dumps(cue, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
