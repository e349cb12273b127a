"""A fake ``codex`` executable: the one substitute of the paired benchmark's
tests (task-context-benchmark-reference.md, "Local verification boundary":
tests substitute only external Codex).

It behaves like Codex CLI for what eceb uses:

- ``codex --version`` / ``-V`` prints ``codex-cli 0.171.0-fake``;
- ``codex exec ...`` parses the flags of the real ``codex exec`` (0.171.0),
  exits 2 with clap's message on an unknown flag or a bad value, requires
  ``--json``, reads and parses the ``--output-schema`` file (a missing or
  unparsable file exits 1 with the real CLI's message), reads the prompt
  from standard input when it is ``-`` or absent, works in the ``-C``
  directory (which must be inside a git repository unless
  ``--skip-git-repo-check``), and writes JSONL events in the real shapes on
  standard output.

Every stream it writes is labelled synthetic: its ``thread_id`` starts with
``synthetic-`` and its standard error says the usage is synthetic. Usage
figures are derived from the prompt's size, deterministically: a larger
prompt (a larger context) costs more input tokens.

The behaviour is chosen by ``FAKE_CODEX_SCENARIO``: one scenario name for
every attempt, or ``A=name,B=name`` per arm (the arm is read from the
prompt's ``Context (...)`` heading); the default is ``ok``. Scenarios:
see :data:`SCENARIOS`. ``FAKE_CODEX_SLEEP`` gives ``slow-ok``'s delay in
seconds (default 2). When ``FAKE_CODEX_LOG`` names a file, one JSON line
per invocation (argv, cwd, scenario, arm) is appended to it; argv[0] is the
path the wrapper was run as (``FAKE_CODEX_ARGV0``, which the wrapper sets).

Commands the agent runs (the verification check) run for real, without a
shell, in the directory the check names; the ``command_execution`` item
reports them the way Codex does, as ``bash -lc '<command>'``.

Only the Python standard library: the script runs under any Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

VERSION = "codex-cli 0.171.0-fake"
SCENARIOS = (
    "ok",  # a correct answer for the task kind
    "fail",  # an error event, then turn.failed; exit 1
    "exit-error",  # nothing on stdout, an error on stderr; exit 1
    "unknown-event",  # a completed turn with an event of an unknown type in it
    "truncated",  # the last line cut mid-JSON, without its newline
    "off-schema",  # a completed turn whose answer violates the schema
    "not-json",  # a completed turn whose answer is not JSON
    "hang",  # thread.started, turn.started, a reasoning item, then sleeps until killed
    "slow-ok",  # ok after sleeping FAKE_CODEX_SLEEP seconds (default 2)
    "mutate",  # writes a new file into the repository, then completes normally
    "partial",  # an agent message but no turn.completed; exit 0
    "wrong-command",  # verification: runs the check changed (e.g. without -count=1) and reports it
    "cheap-wrong",  # much lower usage and a wrong answer
    "two-turns",  # two turns, each completed
    "network-failure",  # what Codex CLI 0.171.0 emits when its connection drops (tests/fixtures/codex)
    "missing-counter",  # ok, but turn.completed's usage lacks cached_input_tokens
    "negative-counter",  # ok, but turn.completed's usage reports input_tokens as -1
    "huge-counters",  # ok, but turn.completed's usage reports input 10^20 and output 2^63 tokens
)
COUNTER_CHANGES: dict[str, dict[str, int | None]] = {
    "missing-counter": {"cached_input_tokens": None},
    "negative-counter": {"input_tokens": -1},
    "huge-counters": {"input_tokens": 10**20, "output_tokens": 2**63},
}
"""How each scenario changes the usage of its completed turn (``None``: the counter is left out)."""
ARMS = {"frozen overview": "A", "task cue (repocue/task-cue-1)": "B"}
MUTATION = "fake-codex-was-here.txt"
"""The file ``mutate`` writes into the repository."""
SYNTHETIC_NOTE = "fake codex: synthetic usage, derived from the prompt size; not a provider's figures\n"

_USAGE_LINES = """\
Usage: codex exec [OPTIONS] [PROMPT]
       codex exec [OPTIONS] <COMMAND> [ARGS]
"""


def clap_error(message: str, *, tip: str | None = None, usage: bool = True) -> NoReturn:
    """Exit 2 with a message shaped like clap's (the real CLI's parser)."""
    text = f"error: {message}\n"
    if tip:
        text += f"\n  tip: {tip}\n"
    if usage:
        text += "\n" + _USAGE_LINES
    sys.stderr.write(text + "\nFor more information, try '--help'.\n")
    raise SystemExit(2)


# The options of ``codex exec`` (0.171.0 ``codex exec --help``): flag names,
# clap's value name (None: a switch), and whether it repeats or its choices.
OPTIONS: tuple[tuple[tuple[str, ...], str | None, Any], ...] = (
    (("-c", "--config"), "key=value", "append"),
    (("--enable",), "FEATURE", "append"),
    (("--disable",), "FEATURE", "append"),
    (("--remote",), "ADDR", None),
    (("--remote-auth-token-env",), "ENV_VAR", None),
    (("--strict-config",), None, None),
    (("-i", "--image"), "FILE", "append"),
    (("-m", "--model"), "MODEL", None),
    (("--oss",), None, None),
    (("--local-provider",), "OSS_PROVIDER", None),
    (("-p", "--profile"), "CONFIG_PROFILE_V2", None),
    (("-s", "--sandbox"), "SANDBOX_MODE", ("read-only", "workspace-write", "danger-full-access")),
    (("--approve-for-me",), None, None),
    (("--dangerously-bypass-approvals-and-sandbox", "--yolo"), None, None),
    (("--dangerously-bypass-hook-trust",), None, None),
    (("-C", "--cd"), "DIR", None),
    (("--worktree",), None, None),
    (("--add-dir",), "DIR", "append"),
    (("--thread-source",), "SOURCE", None),
    (("--cyber-access-program",), "PROGRAM", ("standard", "daybreak_blue", "daybreak_red")),
    (("--skip-git-repo-check",), None, None),
    (("--trust",), None, None),
    (("--ephemeral",), None, None),
    (("--ignore-user-config",), None, None),
    (("--ignore-rules",), None, None),
    (("--output-schema",), "FILE", None),
    (("--color",), "COLOR", ("always", "never", "auto")),
    (("--json", "--experimental-json"), None, None),
    (("-o", "--output-last-message"), "FILE", None),
)
_CLAP_NAMES = {
    flag: f"{next(f for f in flags if f.startswith('--'))} <{value}>"
    for flags, value, _ in OPTIONS
    if value is not None
    for flag in flags
}


class ClapParser(argparse.ArgumentParser):
    """argparse with clap's error messages and exit code 2."""

    def error(self, message: str) -> NoReturn:
        match = re.match(r"argument (\S+?)(?:/\S+)?: (.*)", message)
        if match is None:
            clap_error(message)
        name = _CLAP_NAMES.get(match.group(1), match.group(1))
        if "expected one argument" in match.group(2):
            clap_error(f"a value is required for '{name}' but none was supplied", usage=False)
        choice = re.match(r"invalid choice: '(.*)' \(choose from (.*)\)", match.group(2))
        if choice:
            values = ", ".join(v.strip(" '") for v in choice.group(2).split(","))
            sys.stderr.write(
                f"error: invalid value '{choice.group(1)}' for '{name}'\n"
                f"  [possible values: {values}]\n\nFor more information, try '--help'.\n"
            )
            raise SystemExit(2)
        clap_error(message)


def exec_parser() -> ClapParser:
    """The parser of ``codex exec``'s options (:data:`OPTIONS`) and its optional ``PROMPT``."""
    parser = ClapParser(prog="codex exec", add_help=True, allow_abbrev=False)
    for flags, value, kind in OPTIONS:
        if value is None:
            parser.add_argument(*flags, action="store_true")
        elif kind == "append":
            parser.add_argument(*flags, action="append", default=[], metavar=value)
        else:
            parser.add_argument(*flags, metavar=value, choices=kind, default="auto" if flags == ("--color",) else None)
    parser.add_argument("prompt", nargs="?")
    return parser


def parse_exec(args: list[str]) -> argparse.Namespace:
    """The parsed ``codex exec`` arguments; exits 2 like clap on anything unknown."""
    namespace, extra = exec_parser().parse_known_args(args)
    if extra:
        flag = extra[0]
        if flag.startswith("-"):
            clap_error(f"unexpected argument '{flag}' found", tip=f"to pass '{flag}' as a value, use '-- {flag}'")
        clap_error(f"unexpected argument '{flag}' found")
    if namespace.prompt in {"resume", "fork", "review", "help"}:
        sys.stderr.write(f"fake codex: 'codex exec {namespace.prompt}' is not implemented\n")
        raise SystemExit(2)
    return namespace


# --- the prompt eceb renders (eceb_worker.families.paired.prompts.render_prompt)


class Prompt:
    """What the fake reads of the prompt: kind, targets, checks, arm, size."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text.encode())
        self.kind = _field(text, "Task kind")
        self.task_id = _field(text, "Task id")
        self.targets = _list(text, "Targets:")
        self.checks: list[tuple[str, list[str], str]] = []
        for line in _list(text, "Checks:"):
            match = re.fullmatch(r"([^:]+): (.*) \(in (.*)\)", line)
            if match:
                self.checks.append((match.group(1), match.group(2).split(" "), match.group(3)))
        heading = re.search(r"^Context \((.*)\):$", text, re.MULTILINE)
        self.arm = ARMS.get(heading.group(1), "?") if heading else "?"


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"^{re.escape(name)}: (.*)$", text, re.MULTILINE)
    return match.group(1) if match else None


def _list(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    if heading not in lines:
        return []
    items = []
    for line in lines[lines.index(heading) + 1 :]:
        if not line.startswith("- "):
            break
        items.append(line[2:])
    return items


def scenario_for(arm: str) -> str:
    """The scenario ``FAKE_CODEX_SCENARIO`` chooses for ``arm``."""
    value = os.environ.get("FAKE_CODEX_SCENARIO", "ok").strip() or "ok"
    if "=" in value:
        chosen = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        value = chosen.get(arm, "ok")
    if value not in SCENARIOS:
        sys.stderr.write(f"fake codex: unknown FAKE_CODEX_SCENARIO {value!r}; one of {', '.join(SCENARIOS)}\n")
        raise SystemExit(2)
    return value


# --- answers


def target_files(repo: Path, targets: list[str]) -> list[str]:
    """The repository-relative files of ``targets`` (directories read recursively), sorted."""
    files: list[str] = []
    for target in targets:
        path = repo / target
        if path.is_dir():
            files += sorted(p.relative_to(repo).as_posix() for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            files.append(target)
    return files


def explanation(repo: Path, prompt: Prompt, *, wrong: bool) -> dict[str, Any]:
    """Claims, each citing one real line of the targets (``wrong``: a line past the end)."""
    claims = []
    for name in target_files(repo, prompt.targets):
        lines = (repo / name).read_text(encoding="utf-8", errors="replace").splitlines()
        chosen = [n for n, line in enumerate(lines, 1) if re.search(r"//|#|return|if ", line)][:3]
        for number in chosen:
            claims.append(
                {
                    "text": f"{name} line {number}: {lines[number - 1].strip()}",
                    "citations": [{"path": name, "line": number}],
                }
            )
        if wrong and claims:
            claims[-1]["citations"] = [{"path": name, "line": len(lines) + 10}]
    return {"claims": claims}


def discovery(repo: Path, prompt: Prompt, *, wrong: bool) -> dict[str, Any]:
    """Every ``REQ-[0-9]+`` of the target files with its path and 1-based line (``wrong``: one ID missing)."""
    references = []
    for name in target_files(repo, prompt.targets):
        text = (repo / name).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            references += [{"id": m.group(0), "path": name, "line": number} for m in re.finditer(r"REQ-[0-9]+", line)]
    ids = list(dict.fromkeys(r["id"] for r in references))
    if wrong and ids:
        missing = ids.pop()
        references = [r for r in references if r["id"] != missing]
    return {"ids": ids, "references": references}


def run_check(repo: Path, prompt: Prompt, *, change: bool) -> tuple[list[str], str, int]:
    """Run the verification check (``change``: a different command) in ``repo``:
    its argv, complete output (stdout and stderr together) and exit code."""
    if not prompt.checks:
        return [], "", 0
    named = [c for c in prompt.checks if c[0] in prompt.text.split("Task kind:")[0]]
    _, argv, cwd = named[0] if named else prompt.checks[0]
    if change:
        changed = [a for a in argv if not a.startswith("-count")]
        argv = changed if changed != argv else [*argv, "-v"]
    done = subprocess.run(argv, cwd=repo / cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return argv, done.stdout.decode("utf-8", errors="replace"), done.returncode


# --- the stream


class Stream:
    """Writes events to standard output, one JSON object a line, flushed."""

    def __init__(self) -> None:
        self.items = 0

    def emit(self, event: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def item(self, item: dict[str, Any], *, started: dict[str, Any] | None = None) -> None:
        item_id = f"item_{self.items}"
        self.items += 1
        if started is not None:
            self.emit({"type": "item.started", "item": {"id": item_id, **started}})
        self.emit({"type": "item.completed", "item": {"id": item_id, **item}})

    def command(self, argv: list[str], output: str, code: int) -> None:
        shown = f"bash -lc {shlex.quote(shlex.join(argv))}"
        started = {"type": "command_execution", "command": shown, "aggregated_output": "", "exit_code": None}
        started["status"] = "in_progress"
        done = {"type": "command_execution", "command": shown, "aggregated_output": output, "exit_code": code}
        done["status"] = "completed" if code == 0 else "failed"
        self.item(done, started=started)


def usage(prompt: Prompt, answer: str, *, calls: int, cheap: bool) -> dict[str, int]:
    """Synthetic token counts: input grows with the prompt (a fixed 2,400-token
    preamble plus a token per 4 bytes, sent once per model call), cached input
    is the preamble of every call after the first, output grows with the answer."""
    if cheap:
        return {
            "input_tokens": 300 + prompt.size // 32,
            "cached_input_tokens": 0,
            "output_tokens": 12,
            "reasoning_output_tokens": 4,
        }
    per_call = 2400 + (prompt.size + 3) // 4
    output = 40 + (len(answer.encode()) + 3) // 4
    return {
        "input_tokens": per_call * calls,
        "cached_input_tokens": 2400 * (calls - 1),
        "output_tokens": output,
        "reasoning_output_tokens": output // 2,
    }


def network_failure(stream: Stream, model: str | None) -> int:
    """The events Codex CLI 0.171.0 writes when its connection to the model
    provider drops (recorded in tests/fixtures/codex/network-failure.jsonl)."""
    stream.item(
        {
            "type": "error",
            "message": f"Model metadata for `{model}` not found. Defaulting to fallback "
            "metadata; this can degrade performance and cause issues.",
        }
    )
    stream.emit({"type": "turn.started"})
    cause = "stream disconnected before completion: error sending request"
    for attempt in (1, 2):
        stream.emit({"type": "error", "message": f"Reconnecting... {attempt}/2 ({cause})"})
    stream.emit({"type": "error", "message": cause})
    stream.emit({"type": "turn.failed", "error": {"message": cause}})
    return 1


def attempt(args: argparse.Namespace, repo: Path, prompt: Prompt, scenario: str) -> int:
    """Write the scenario's stream; the exit code."""
    if scenario == "exit-error":
        sys.stderr.write("Error: synthetic provider failure (fake codex scenario exit-error)\n")
        return 1
    if scenario == "slow-ok":
        time.sleep(float(os.environ.get("FAKE_CODEX_SLEEP", "2")))
    stream = Stream()
    stream.emit({"type": "thread.started", "thread_id": f"synthetic-{uuid.uuid4()}"})
    if scenario == "network-failure":
        return network_failure(stream, args.model)
    stream.emit({"type": "turn.started"})
    stream.item({"type": "reasoning", "text": f"**Reading the {prompt.kind or 'task'} task**"})
    if scenario == "hang":
        while True:
            time.sleep(3600)
    if scenario == "fail":
        message = "synthetic failure: the model provider returned an error (fake codex scenario fail)"
        stream.emit({"type": "error", "message": message})
        stream.emit({"type": "turn.failed", "error": {"message": message}})
        return 1
    if scenario == "unknown-event":
        stream.emit({"type": "model.rerouted", "from_model": args.model, "to_model": "synthetic-other-model"})
    if scenario == "mutate":
        (repo / MUTATION).write_text("written by the fake codex scenario mutate\n", encoding="utf-8")
        stream.item(
            {"type": "file_change", "changes": [{"path": str(repo / MUTATION), "kind": "add"}], "status": "completed"},
            started=None,
        )
    wrong = scenario == "cheap-wrong"
    calls = 1
    if prompt.kind == "explanation":
        answer: Any = explanation(repo, prompt, wrong=wrong)
    elif prompt.kind == "discovery":
        answer = discovery(repo, prompt, wrong=wrong)
    elif prompt.kind == "verification":
        argv, output, code = run_check(repo, prompt, change=scenario == "wrong-command")
        stream.command(argv, output, code)
        calls = 2
        answer = {"command": " ".join(argv), "output": output, "exit_code": (1 if code == 0 else 0) if wrong else code}
    else:
        answer = {}
    if scenario == "off-schema":
        answer = {"unexpected": "this answer does not match the output schema"}
    text = "The answer is not JSON: everything looks fine." if scenario == "not-json" else json.dumps(answer)
    stream.item({"type": "agent_message", "text": text})
    if args.output_last_message:
        Path(args.output_last_message).write_text(text, encoding="utf-8")
    if scenario == "partial":
        return 0
    counts = usage(prompt, text, calls=calls, cheap=wrong)
    if scenario == "truncated":
        line = json.dumps({"type": "turn.completed", "usage": counts}, separators=(",", ":"))
        sys.stdout.write(line[: len(line) // 2])
        sys.stdout.flush()
        return 0
    changed = {**counts, **COUNTER_CHANGES.get(scenario, {})}
    stream.emit({"type": "turn.completed", "usage": {k: v for k, v in changed.items() if v is not None}})
    if scenario == "two-turns":
        stream.emit({"type": "turn.started"})
        stream.item({"type": "agent_message", "text": text})
        stream.emit({"type": "turn.completed", "usage": {k: 2 * v for k, v in counts.items()}})
    return 0


def in_git_repository(directory: Path) -> bool:
    """Whether ``directory`` or a parent holds ``.git`` (the real CLI's trusted-directory check)."""
    return any((d / ".git").exists() for d in (directory, *directory.parents))


def run_exec(argv: list[str]) -> int:
    """``codex exec``: the exit code."""
    args = parse_exec(argv)
    if args.output_last_message:
        args.output_last_message = os.path.abspath(args.output_last_message)
    if not args.json:
        sys.stderr.write("fake codex: only --json output is implemented\n")
        return 2
    if args.output_schema is not None:
        try:
            raw = Path(args.output_schema).read_bytes()
        except OSError as error:
            sys.stderr.write(
                f"Failed to read output schema file {args.output_schema}: {error.strerror} (os error {error.errno})\n"
            )
            return 1
        try:
            json.loads(raw)
        except ValueError as error:
            sys.stderr.write(f"Output schema file {args.output_schema} is not valid JSON: {error}\n")
            return 1
    if args.cd is not None:
        try:
            os.chdir(args.cd)
        except OSError as error:
            sys.stderr.write(f"Error: {error.strerror} (os error {error.errno})\n")
            return 1
    repo = Path.cwd()
    if not args.skip_git_repo_check and not in_git_repository(repo):
        sys.stderr.write("Not inside a trusted directory and --skip-git-repo-check was not specified.\n")
        return 1
    text = sys.stdin.read() if args.prompt in {None, "-"} else args.prompt
    if not text.strip():
        sys.stderr.write("No prompt provided via stdin.\n")
        return 1
    prompt = Prompt(text)
    scenario = scenario_for(prompt.arm)
    log = os.environ.get("FAKE_CODEX_LOG")
    if log:
        invoked = [os.environ.get("FAKE_CODEX_ARGV0", sys.argv[0]), *sys.argv[1:]]
        record = {"argv": invoked, "cwd": str(repo), "scenario": scenario, "arm": prompt.arm}
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    sys.stderr.write(SYNTHETIC_NOTE)
    return attempt(args, repo, prompt, scenario)


def main(argv: list[str]) -> int:
    """``codex ARGS``: the exit code."""
    if argv[:1] in (["--version"], ["-V"]):
        sys.stdout.write(VERSION + "\n")
        return 0
    if argv[:1] in (["exec"], ["e"]):
        return run_exec(argv[1:])
    sys.stderr.write("fake codex: only 'codex exec' and 'codex --version' are implemented\n")
    return 2


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
