"""The disclosure check at enterprise scale: what it adds to ``eceb evaluate``, its memory, its floors, on a cluster.

Usage::

    python benchmarks/disclosure.py [--sizes 256m,1g,4g] [--quick] [--rounds 2] [--seed 0]
        [--floor-size SIZE] [--cluster-size 256m] [--no-cluster] [--no-pin] [--data-dir DIR]

Inputs. For each size of ``--sizes`` (default ``256m,1g,4g``; ``--quick``:
``64m`` only, one round, the cluster at that size: a smoke test) a corpus, its
registry, a benchmark and a run are generated once under ``--data-dir``
(default ``$TMPDIR/eceb-bench-disclosure``), in ``<data-dir>/<size>``, and
reused while its ``manifest.json`` shows the same parameters:

* the corpus: artifacts of 4 MiB each (``runbook/dDDD/fNNNNN.md``, kind
  ``runbook``, every one classified ``restricted``), as many as make the
  size, of word-like ASCII text: lowercase pseudo-words of 2 to 9 letters
  (consonants and vowels in turn) drawn uniformly from a fixed vocabulary of
  4,096, about 8 % of them capitalised, separated by a space and now and
  then by ``, ``, ``. ``, ``: `` or a newline (about 7 bytes a token). Word
  indices, capitals and separators are drawn with numpy (one generator per
  artifact, seeded by ``--seed`` and the artifact's number) and each
  artifact's bytes are gathered in one step from a table of every word and
  separator pair (about 20 ms a MiB);
* the registry, built by eceb's own ``build_registry`` and written by
  ``registry_lines`` (every artifact hashed with BLAKE3 as it is written);
* a benchmark of 50 tasks, each allowing ``public`` only (so every artifact
  is restricted for every task), with the ladder 512, 1,024, 2,048 tokens,
  one required repetition, a quality floor of 700 and no required artifact;
* a run of 200 observations: for each task, the ``full_permitted_context``
  baseline and ``compiled`` at each budget of the ladder (every group within
  its budget and above the floor: every task passes when the disclosure
  check is off); each answer is 100 to 300 words of the same vocabulary, in
  sentences. Exactly one answer (task ``task-017``, its
  ``full_permitted_context`` baseline, so that the finding fails the task:
  a finding at a ladder budget would only move its minimum viable budget)
  quotes a passage of 12 tokens taken verbatim from one artifact (the
  *planted quote*; its artifact and offsets are in ``planted.json``).

Both files are checked once with ``eceb validate`` when generated.

Measurements, for each size, with a warm page cache (one untimed run of the
check off first), ``--rounds`` rounds (default 2) alternating the two
configurations and keeping the best wall time of each (peak RSS: the
largest over the rounds):

1. ``eceb evaluate benchmark.json run.json --corpus corpus -o report-off.json
   -q --no-disclosure-check``, exit 0 and no ``disclosure`` assertion;
2. the same with the check on (``-o report-on.json``): it must exit 1 and
   its report must hold exactly one failed assertion of gate
   ``disclosure``, in the planted task's baseline, naming the planted
   artifact and the quote's bytes in it, and no other failing task or
   disclosure. Every round's report
   must be the same bytes as the first's.

Each command runs in a fresh interpreter that calls eceb's command line
(``eceb_cli.main.main``, as the ``eceb`` script does) and then reads
``getrusage``: ``RUSAGE_SELF`` is the peak RSS of the evaluating process
itself (what the memory target is about), ``RUSAGE_CHILDREN`` the largest
peak of the helper processes it started and reaped (the largest one, not a
sum). GNU time's ``%M`` (the larger of the two: Linux counts reaped
children in the peak a parent reports) is printed too. The interpreter is
started by ``/usr/bin/time``, not by this process: on Linux a process's
peak RSS starts at its parent's resident size when it was forked (the
peak of the memory it leaves at ``exec`` is kept), so a command started
straight from this process, which holds numpy, an index and generated
data, would report this process's size as its own. For the same reason a
helper's peak includes at least the evaluating process's size when it
started the helper. Wall time is taken around the whole command,
interpreter start-up included.

After the two commands of each round, the parallel ceiling: the check's
scan (``ArtifactScan``, as in 4. below) of the corpus's first 16 artifacts
(64 MiB) by one fresh process pinned to the first CPU, then by one per CPU
at once (each after an untimed pass; the slowest counts), best of the
rounds: ``cpus x alone / together`` is how many cores' worth of this work
the machine gives at the time (on a shared virtual machine it can be well
under its CPU count, and it changes from minute to minute), the most any
split of the scan over processes can gain. The scan rate per
core-equivalent of it is printed beside the target, and the ceiling beside
the cluster's speedup.

3. The answer index: ``AnswerIndex`` (``eceb_worker.core.disclosure.index``)
   built in this process from the run's distinct answers with N = 8, its
   ``nbytes``, the answers' tokens and bytes per answer token (target at
   most 64).

4. Floors, in this process pinned to one CPU, over every file of the corpus
   of ``--floor-size`` (default: the smallest size measured) read in 2 MiB
   chunks, best of ``--rounds``: ``chunk.count(b"\\n")`` (a plain pass over
   every byte); eceb's block tokenizer alone (``_tokenize`` of
   ``eceb_worker.core.disclosure.scan`` over blocks of 256 KiB, no lookup:
   normalisation, token bounds, token hashes); BLAKE3 on one thread; and,
   for reference, the check's own scan of an artifact (``ArtifactScan`` fed
   the same chunks against the run's index: blocks cut at separators,
   tokenized, windows hashed and looked up, candidates confirmed), which must
   find the planted quote. MB/s are 10^6 bytes per second.

5. Derived: the time the check adds (on minus off, best of each), the scan
   rate (restricted bytes / added time) and per core (divided by
   ``os.cpu_count()``; target at least 100 MB/s per core, i.e. added time at
   most bytes / (100 MB/s x cores)); the ratio on/off (a goal of at most
   1.3x, reported, not a target); linearity, the time with the check on of
   4 GiB over 1 GiB (target at most 4.5, when both sizes are measured);
   memory, the evaluating process's peak RSS with the check on at most
   300 MiB + the index's bytes, and flat over the sizes (the largest size's
   peak at most 10 % above the smallest's, when several are measured).

6. Cluster (``--cluster-size``, default ``256m``, measured when it is among
   the sizes; ``--no-cluster`` skips it). A ``redis-server`` on a free port
   of 127.0.0.1 and a moto S3 server on another
   (``tests/support/redis_server.py``, ``tests/support/s3_server.py``, with
   its fake credentials), and two Celery workers (``--concurrency 1``),
   worker ``i`` and its pool process pinned to CPU ``i`` (``--no-pin``: not
   pinned), as ``benchmarks/distributed.py`` runs them. ``eceb-dist submit``
   reads its benchmark and run from object storage and writes the report
   there, so the benchmark, registry and run are put in a bucket; the corpus
   stays the local directory (by its absolute path: the workers run on this
   machine). ``--shard-bytes`` is the default (256 MiB of work a shard, each
   byte scanned counting 16: 16 MiB of the corpus a shard). First one untimed job
   through the command line (``eceb-dist submit``, ``eceb-dist wait``, which
   must exit 1, and ``eceb-dist result -o``): its report must be byte for
   byte ``report-on.json``. Then ``--rounds`` rounds of one job on 1 worker
   and one on 2 (worker 2 stops and resumes consuming the queue by Celery's
   remote control), each submitted as ``eceb-dist submit`` does it (the same
   message, the same checks of its inputs, then queued), timed from the
   submission until the job's state in Redis reads ``done`` (polled every
   2 ms), its report fetched from the bucket and compared with
   ``report-on.json``. Target: 2 workers at least 1.8x the speed of 1.

Prints a table, one row per size (restricted bytes, off and on times, the
time added, the scan's MB/s per core, the ratio, the peaks off and on and
the helpers', index bytes per answer token), the floors, the ceilings, the
cluster's figures and each target, met or not. Exits 0 whether or not the targets are met, non-zero
on an error (a report not as expected, a command or job that fails).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthetic import log

ROOT = Path(__file__).resolve().parents[1]
KIB = 1024
MIB = 1024**2
GIB = 1024**3
MB = 1_000_000

GENERATOR_VERSION = 1
"""Bumped whenever generated content or layout changes (invalidates reuse)."""
ARTIFACT_BYTES = 4 * MIB
FILES_PER_DIR = 100
VOCABULARY = 4096
CONSONANTS = "bcdfghjklmnprstvwz"
VOWELS = "aeiou"
SEPARATORS = (b" ", b", ", b". ", b": ", b"\n")
SEPARATOR_PERCENT = (86, 5, 5, 1, 3)
"""How often each separator follows a word, in percent."""
CAPITALISED_PERCENT = 8
TASKS = 50
LADDER = (512, 1024, 2048)
OBSERVATIONS = TASKS * (1 + len(LADDER))
ANSWER_WORDS = (100, 300)
N = 8
QUOTE_TOKENS = 12
PLANTED_TASK = 17
PLANTED_STRATEGY = "full_permitted_context"

CHUNK_BYTES = 2 * MIB
"""The reads of the floors: 2 MiB at a time."""
POLL_S = 0.002
JOB_TIMEOUT_S = 3600
"""Re-hash shards the cluster's jobs are cut into (at least 8)."""

TARGET_MB_PER_CORE = 100.0
GOAL_RATIO = 1.3
TARGET_LINEARITY = 4.5
TARGET_BASE_RSS_MIB = 300
TARGET_FLAT = 1.10
TARGET_INDEX_BYTES_PER_TOKEN = 64
TARGET_SPEEDUP = 1.8

CHILD = r"""
import resource, sys
out = sys.argv[1]
sys.argv = ["eceb", *sys.argv[2:]]
from eceb_cli.main import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
helpers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(out, "w") as handle:
    handle.write(f"{code} {own} {helpers}")
sys.exit(code)
"""
"""``eceb ARGS`` in this interpreter, then its peak RSS (KiB) and its helpers' largest, written to ``argv[1]``."""


# --------------------------------------------------------------------------- inputs


def parse_size(text: str) -> int:
    """``64m``, ``1g``, ``4g``... in bytes (binary units), a whole number of artifacts."""
    match = re.fullmatch(r"(\d+)([kmg])", text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r}: give a size such as 256m or 4g")
    size = int(match[1]) * {"k": KIB, "m": MIB, "g": GIB}[match[2]]
    if size < ARTIFACT_BYTES or size % ARTIFACT_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r}: the size must be a multiple of 4 MiB")
    return size


def label(size: int) -> str:
    return f"{size // GIB}g" if size % GIB == 0 else f"{size // MIB}m"


def human(size: int) -> str:
    return f"{size // GIB} GiB" if size % GIB == 0 else f"{size // MIB} MiB"


@dataclass(frozen=True)
class Inputs:
    """The generated inputs of one size, under ``root``."""

    size: int
    seed: int
    root: Path

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def artifacts(self) -> int:
        return self.size // ARTIFACT_BYTES

    def expected_manifest(self) -> dict[str, Any]:
        return {
            "generator": GENERATOR_VERSION,
            "size": self.size,
            "seed": self.seed,
            "artifact_bytes": ARTIFACT_BYTES,
            "vocabulary": VOCABULARY,
            "tasks": TASKS,
            "observations": OBSERVATIONS,
        }

    def path_of(self, index: int) -> str:
        return f"runbook/d{index // FILES_PER_DIR:03d}/f{index:05d}.md"

    def planted(self) -> dict[str, Any]:
        planted: dict[str, Any] = json.loads((self.root / "planted.json").read_text())
        return planted


def vocabulary(seed: int) -> list[str]:
    """The fixed vocabulary: 4,096 distinct pseudo-words of 2 to 9 letters."""
    import numpy as np

    rng = np.random.default_rng([seed, 0])
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < VOCABULARY:
        length = int(rng.integers(2, 10))
        vowel_first = bool(rng.integers(0, 2))
        letters = []
        for position in range(length):
            pool = VOWELS if (position % 2 == 0) == vowel_first else CONSONANTS
            letters.append(pool[int(rng.integers(0, len(pool)))])
        word = "".join(letters)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class Table:
    """Every (word, capitalised or not, separator) as bytes, back to back:
    entry ``(2 * word + capital) * len(SEPARATORS) + separator``."""

    flat: Any
    offsets: Any
    lengths: Any

    @classmethod
    def of(cls, words: list[str]) -> Table:
        import numpy as np

        pieces = [
            (word.capitalize() if capital else word).encode() + separator
            for word in words
            for capital in (0, 1)
            for separator in SEPARATORS
        ]
        lengths = np.array([len(p) for p in pieces], dtype=np.int32)
        offsets = np.zeros(len(pieces), dtype=np.int32)
        np.cumsum(lengths[:-1], out=offsets[1:])
        return cls(np.frombuffer(b"".join(pieces), dtype=np.uint8), offsets, lengths)


def artifact_bytes(table: Table, seed: int, index: int) -> bytes:
    """Artifact ``index``: exactly ``ARTIFACT_BYTES`` of text, ending with a newline."""
    import numpy as np

    rng = np.random.default_rng([seed, 1, index])
    separator_of = np.repeat(np.arange(len(SEPARATORS), dtype=np.int32), SEPARATOR_PERCENT)
    parts: list[Any] = []
    total = 0
    while total < ARTIFACT_BYTES:  # about 7 bytes a token: one draw nearly always suffices
        count = ARTIFACT_BYTES // 6
        words = rng.integers(0, VOCABULARY, count, dtype=np.int32)
        capitals = (rng.integers(0, 100, count, dtype=np.uint8) < CAPITALISED_PERCENT).astype(np.int32)
        separators = separator_of[rng.integers(0, 100, count, dtype=np.uint8)]
        parts.append((2 * words + capitals) * len(SEPARATORS) + separators)
        total += int(table.lengths[parts[-1]].sum())
    entries = np.concatenate(parts)
    lengths = table.lengths[entries]
    ends = np.cumsum(lengths, dtype=np.int32)
    kept = int(np.searchsorted(ends, ARTIFACT_BYTES - 1)) + 1
    entries, lengths, ends = entries[:kept], lengths[:kept], ends[:kept]
    # Byte j of the text is byte j - (start of its token) of its token's table entry.
    gather = np.repeat(table.offsets[entries] - (ends - lengths), lengths)
    gather += np.arange(len(gather), dtype=np.int32)
    return table.flat[gather[: ARTIFACT_BYTES - 1]].tobytes() + b"\n"


def quote_of(data: bytes, seed: int) -> tuple[str, int, int]:
    """A passage of ``QUOTE_TOKENS`` whole tokens of ``data`` from about its
    middle: its tokens joined by spaces, and its bytes ``[start, end)``."""
    import numpy as np

    at = int(np.random.default_rng([seed, 3]).integers(len(data) // 4, 3 * len(data) // 4))
    found = list(re.finditer(rb"[A-Za-z]+", data[at : at + 64 * QUOTE_TOKENS]))[1 : 1 + QUOTE_TOKENS]
    if len(found) < QUOTE_TOKENS:
        raise RuntimeError("the artifact has too few tokens where the quote is taken")
    text = " ".join(m[0].decode() for m in found)
    return text, at + found[0].start(), at + found[-1].end()


def answer_text(words: list[str], rng: Any) -> str:
    """Sentences of ``words``: 8 to 20 words each, the first capitalised, a full stop after the last."""
    sentences = []
    at = 0
    while at < len(words):
        length = int(rng.integers(8, 21))
        sentence = words[at : at + length]
        sentences.append(" ".join([sentence[0].capitalize(), *sentence[1:]]) + ".")
        at += length
    return " ".join(sentences)


def generate(inputs: Inputs) -> None:
    """Write the corpus, the registry, the benchmark, the run and ``planted.json`` under ``inputs.root``."""
    import blake3
    import msgspec
    import numpy as np

    from eceb_worker.corpus.artifacts import Artifact
    from eceb_worker.corpus.registry import build_registry, registry_lines
    from eceb_worker.families.eceb.benchmark import Benchmark, RegistryReference, Task, query_digest, task_root
    from eceb_worker.families.eceb.run import (
        BenchmarkReference,
        Configuration,
        Decoding,
        JudgeProfile,
        ModelIdentity,
        Observation,
        PricingSnapshot,
        Run,
        Tokenizer,
    )

    started = time.perf_counter()
    if inputs.root.exists():
        shutil.rmtree(inputs.root)
    inputs.corpus.mkdir(parents=True)
    words = vocabulary(inputs.seed)
    table = Table.of(words)
    planted_index = int(np.random.default_rng([inputs.seed, 2]).integers(0, inputs.artifacts))
    artifacts = []
    planted_data = b""
    for index in range(inputs.artifacts):
        data = artifact_bytes(table, inputs.seed, index)
        path = inputs.path_of(index)
        target = inputs.corpus / path
        if index % FILES_PER_DIR == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        artifacts.append(
            Artifact(
                artifact_id=path,
                path=path,
                kind="runbook",
                classification="restricted",
                source_digest=blake3.blake3(data, max_threads=blake3.blake3.AUTO).hexdigest(),
                size_bytes=len(data),
            )
        )
        if index == planted_index:
            planted_data = data
        if (index + 1) % 64 == 0:
            log(f"[{label(inputs.size)}] {index + 1:,} of {inputs.artifacts:,} artifacts written")
    registry = build_registry(artifacts)
    (inputs.root / "registry.jsonl").write_bytes(b"".join(registry_lines(registry)))

    tasks = tuple(
        Task(
            task_id=f"task-{t:03d}",
            query=f"Which steps of the runbooks apply to incident {t}?",
            required_artifacts=(),
            allowed_classifications=("public",),
            budget_ladder=LADDER,
            minimum_quality_milli=700,
            maximum_quality_regression_milli=100,
            required_repetitions=1,
        )
        for t in range(TASKS)
    )
    benchmark = Benchmark(
        schema="symgliph.eceb/benchmark-v0.1",
        benchmark_id=f"disclosure-{label(inputs.size)}",
        description="Synthetic: every artifact restricted for every task; one answer quotes one artifact.",
        registry=RegistryReference(path="registry.jsonl", corpus_root=registry.corpus_root),
        tasks=tasks,
    )
    (inputs.root / "benchmark.json").write_bytes(msgspec.json.encode(benchmark))

    quote, quote_start, quote_end = quote_of(planted_data, inputs.seed)
    configuration = Configuration(
        configuration_id="c",
        model=ModelIdentity(provider="p", name="m", revision="1"),
        judge=JudgeProfile(profile="j", model=ModelIdentity(provider="p", name="judge")),
        tokenizer=Tokenizer(name="bpe"),
        decoding=Decoding(temperature_milli=0, max_output_tokens=512),
        pricing=PricingSnapshot(
            source="synthetic",
            date="2026-07-01",
            input_micro_usd_per_mtok=3_000_000,
            cached_input_micro_usd_per_mtok=300_000,
            output_micro_usd_per_mtok=15_000_000,
        ),
    )
    rng = np.random.default_rng([inputs.seed, 4])
    observations = []
    planted_answer = ""
    for t, task in enumerate(tasks):
        groups: list[tuple[str, int | None, int, int]] = [("full_permitted_context", None, 6000 + t, 900)]
        groups += [("compiled", budget, budget - 16, 880) for budget in LADDER]
        for strategy, budget, tokens, quality in groups:
            count = int(rng.integers(ANSWER_WORDS[0], ANSWER_WORDS[1] + 1))
            drawn = [words[i] for i in rng.integers(0, VOCABULARY, count).tolist()]
            answer = answer_text(drawn, rng)
            if t == PLANTED_TASK and strategy == PLANTED_STRATEGY:
                cut = answer.index(". ", len(answer) // 2) + 2
                answer = f"{answer[:cut]}As the runbook puts it: {quote}. {answer[cut:]}"
                planted_answer = answer
            output_tokens = count * 4 // 3
            observations.append(
                Observation(
                    task_id=task.task_id,
                    strategy=strategy,  # type: ignore[arg-type]
                    budget=budget,
                    repetition=1,
                    configuration_id="c",
                    query_digest=query_digest(task.query),
                    input_tokens=tokens,
                    output_tokens=output_tokens,
                    input_cost_micro_usd=tokens * 3,
                    output_cost_micro_usd=output_tokens * 15,
                    latency_ms=900 + count,
                    quality_milli=quality,
                    answer=answer,
                    selected_artifacts=(),
                    context_digest=blake3.blake3(f"{task.task_id}|{strategy}|{budget}".encode()).hexdigest(),
                )
            )
    run = Run(
        schema="symgliph.eceb/run-v0.1",
        run_id=f"disclosure-{label(inputs.size)}",
        claim_class="conformance_seed",
        non_empirical=True,
        benchmark=BenchmarkReference(benchmark_id=benchmark.benchmark_id, task_root=task_root(tasks)),
        corpus_root=registry.corpus_root,
        configurations=(configuration,),
        observations=tuple(observations),
    )
    (inputs.root / "run.json").write_bytes(msgspec.json.encode(run))
    planted = {
        "task_id": tasks[PLANTED_TASK].task_id,
        "strategy": PLANTED_STRATEGY,
        "artifact_id": inputs.path_of(planted_index),
        "artifact_start": quote_start,
        "artifact_end": quote_end,
        "answer_start": planted_answer.index(quote),
        "tokens": QUOTE_TOKENS,
    }
    (inputs.root / "planted.json").write_text(json.dumps(planted, sort_keys=True) + "\n")
    for command in (
        ["validate", "benchmark.json"],
        ["validate", "run.json", "--benchmark", "benchmark.json"],
    ):
        done = subprocess.run(eceb(*command), cwd=inputs.root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"eceb {' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    inputs.manifest.write_text(json.dumps(inputs.expected_manifest(), sort_keys=True) + "\n")
    log(f"[{label(inputs.size)}] generated and validated in {time.perf_counter() - started:.1f} s: {inputs.root}")


def is_current(inputs: Inputs) -> bool:
    try:
        if json.loads(inputs.manifest.read_text()) != inputs.expected_manifest():
            return False
    except (OSError, ValueError):
        return False
    names = ("registry.jsonl", "benchmark.json", "run.json", "planted.json")
    if not all((inputs.root / name).is_file() for name in names):
        return False
    for index in {0, inputs.artifacts - 1}:
        try:
            if (inputs.corpus / inputs.path_of(index)).stat().st_size != ARTIFACT_BYTES:
                return False
        except OSError:
            return False
    return True


def ensure_inputs(inputs: Inputs) -> None:
    if is_current(inputs):
        log(f"[{label(inputs.size)}] reusing {inputs.root}")
        return
    log(f"[{label(inputs.size)}] generating {inputs.artifacts:,} artifacts of 4 MiB in {inputs.root} ...")
    generate(inputs)


def eceb(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("eceb")), *args]


def run_answers(inputs: Inputs) -> list[str]:
    """The distinct answers of the run, sorted (as the scan's spec lists them)."""
    import msgspec

    from eceb_worker.families.eceb.run import Run

    run = msgspec.json.decode((inputs.root / "run.json").read_bytes(), type=Run)
    return sorted({o.answer for o in run.observations})


# --------------------------------------------------------------------------- eceb evaluate


@dataclass
class Command:
    """One timed ``eceb evaluate``: wall seconds, exit code, peak RSS (KiB)
    of the evaluating process, of its largest helper, and GNU time's ``%M``."""

    seconds: float
    code: int
    own_kib: int
    helpers_kib: int
    tree_kib: int


def evaluate(inputs: Inputs, *, check: bool, scratch: Path) -> Command:
    """``eceb evaluate`` with the check on or off, timed, through GNU time
    (see the module's docstring: the command's peak RSS is its own only when
    its parent is small)."""
    if shutil.which("time", path="/usr/bin") is None:
        raise RuntimeError("GNU time (/usr/bin/time) is needed: install the Debian package time")
    out = "report-on.json" if check else "report-off.json"
    args = ["evaluate", "benchmark.json", "run.json", "--corpus", "corpus", "-o", out, "-q"]
    if not check:
        args.append("--no-disclosure-check")
    figures, timed = scratch / f"rusage-{uuid.uuid4().hex}", scratch / f"time-{uuid.uuid4().hex}"
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(timed), sys.executable, "-c", CHILD, str(figures), *args],
        cwd=inputs.root,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        code, own, helpers = (int(v) for v in figures.read_text().split())
        tree = int(timed.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        raise RuntimeError(f"eceb {' '.join(args)} ended {done.returncode}:\n{done.stdout}{done.stderr}") from None
    figures.unlink()
    timed.unlink()
    expected = 1 if check else 0
    if code != expected or done.returncode != expected:
        raise RuntimeError(
            f"eceb {' '.join(args)} exited {code} (expected {expected}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return Command(seconds, code, own, helpers, tree)


def check_report(data: bytes, planted: dict[str, Any], *, check: bool) -> None:
    """A report as expected: with the check, exactly one ``disclosure``
    assertion, in the planted task, the only failing task; without, every
    task passing and no disclosure assertion. Raises RuntimeError otherwise."""
    report = json.loads(data)
    enabled = bool(report.get("disclosure_check", {}).get("enabled"))
    if enabled != check:
        raise RuntimeError(f"the report's disclosure_check is {report.get('disclosure_check')}, expected check={check}")
    found = [
        (task["task_id"], assertion)
        for task in report["tasks"]
        for assertion in task["failed_assertions"]
        if assertion["gate"] == "disclosure"
    ]
    failing = sorted(task["task_id"] for task in report["tasks"] if not task["passed"])
    if check:
        if len(found) != 1 or found[0][0] != planted["task_id"]:
            raise RuntimeError(f"expected one disclosure assertion in {planted['task_id']}, found {found}")
        if failing != [planted["task_id"]]:
            raise RuntimeError(f"expected {planted['task_id']} alone to fail, failing: {failing}")
        assertion = found[0][1]
        located = f"{planted['artifact_start']}..{planted['artifact_end']} of '{planted['artifact_id']}'"
        if assertion.get("strategy") != planted["strategy"] or located not in assertion["message"]:
            raise RuntimeError(f"the disclosure assertion is not the planted observation's: {assertion}")
        counts = {task["task_id"]: task.get("disclosures_all_groups") for task in report["tasks"]}
        if counts[planted["task_id"]] != 1 or any(n for t, n in counts.items() if t != planted["task_id"]):
            raise RuntimeError(f"expected one disclosure, in {planted['task_id']}: {counts}")
    elif found or failing:
        raise RuntimeError(f"without the check, tasks fail: {failing}; disclosure assertions {found}")


CEILING_FILES = 16
"""Artifacts (64 MiB) each process of the parallel ceiling scans."""


def scan_child(params: dict[str, Any]) -> None:
    """Scan the first ``files`` artifacts against the run's index, pinned to
    ``cpu``, after a warm-up; prints the seconds of the timed pass (imports
    and index left out)."""
    from eceb_worker.core.disclosure.index import AnswerIndex
    from eceb_worker.core.disclosure.scan import ArtifactScan

    os.sched_setaffinity(0, {params["cpu"]})
    inputs = Inputs(params["size"], params["seed"], Path(params["root"]))
    index = AnswerIndex(run_answers(inputs), N)
    paths = [inputs.corpus / inputs.path_of(i) for i in range(params["files"])]

    def scan() -> None:
        for path in paths:
            scanner = ArtifactScan(index)
            with path.open("rb", buffering=0) as handle:
                while chunk := handle.read(CHUNK_BYTES):
                    scanner.feed(chunk)
            scanner.finish()

    scan()
    started = time.perf_counter()
    scan()
    print(json.dumps({"seconds": time.perf_counter() - started}))


@dataclass
class Ceiling:
    """The scan of the same files by one process alone and by one process
    per CPU at once, the best seconds of each over the rounds."""

    cpus: list[int]
    total_bytes: int
    alone: float = float("inf")
    together: float = float("inf")

    @property
    def ratio(self) -> float:
        """What ``len(cpus)`` processes get done against one: the ceiling of any split of the work."""
        return len(self.cpus) * self.alone / self.together


def ceiling_round(inputs: Inputs) -> tuple[float, float]:
    """One measure of the parallel ceiling: the check's scan of the same
    ``CEILING_FILES`` artifacts by one process pinned to the first CPU, then
    by one process pinned to each CPU at once; the seconds of each (of the
    slowest, at once)."""
    cpus = sorted(os.sched_getaffinity(0))
    files = min(CEILING_FILES, inputs.artifacts)

    def run(on: list[int]) -> float:
        params = {"root": str(inputs.root), "size": inputs.size, "seed": inputs.seed, "files": files}
        processes = [
            subprocess.Popen(
                [sys.executable, __file__, "--scan-child", json.dumps({**params, "cpu": cpu})],
                stdout=subprocess.PIPE,
                text=True,
            )
            for cpu in on
        ]
        found = []
        for process in processes:
            stdout, _ = process.communicate()
            if process.returncode != 0:
                raise RuntimeError(f"the scan child exited {process.returncode}")
            found.append(json.loads(stdout)["seconds"])
        return max(found)

    return run(cpus[:1]), run(cpus)


@dataclass
class SizeResult:
    size: int
    off: list[Command] = field(default_factory=list)
    on: list[Command] = field(default_factory=list)
    index_bytes: int = 0
    answer_tokens: int = 0
    answers: int = 0
    disclosure_message: str = ""
    ceiling: Ceiling | None = None

    def best(self, which: str) -> float:
        return min(c.seconds for c in getattr(self, which))

    def peak_kib(self, which: str) -> int:
        return max(c.own_kib for c in getattr(self, which))

    def helpers_kib(self, which: str) -> int:
        return max(c.helpers_kib for c in getattr(self, which))

    def tree_kib(self, which: str) -> int:
        return max(c.tree_kib for c in getattr(self, which))


def measure_size(inputs: Inputs, rounds: int) -> SizeResult:
    from eceb_worker.core.disclosure.index import AnswerIndex

    cpus = sorted(os.sched_getaffinity(0))
    ceiling = Ceiling(cpus, min(CEILING_FILES, inputs.artifacts) * ARTIFACT_BYTES)
    result = SizeResult(inputs.size, ceiling=ceiling)
    planted = inputs.planted()
    first: dict[bool, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="rusage-", dir=inputs.root) as scratch:
        log(f"[{label(inputs.size)}] warm-up: eceb evaluate --no-disclosure-check ...")
        evaluate(inputs, check=False, scratch=Path(scratch))
        for number in range(1, rounds + 1):
            for check in (False, True):
                command = evaluate(inputs, check=check, scratch=Path(scratch))
                (result.on if check else result.off).append(command)
                log(
                    f"[{label(inputs.size)}] round {number}/{rounds}: check {'on ' if check else 'off'} "
                    f"{command.seconds:7.2f} s, peak RSS {command.own_kib / KIB:6.0f} MiB "
                    f"(helpers {command.helpers_kib / KIB:.0f} MiB)"
                )
                data = (inputs.root / ("report-on.json" if check else "report-off.json")).read_bytes()
                check_report(data, planted, check=check)
                if first.setdefault(check, data) != data:
                    raise RuntimeError(f"the report with the check {'on' if check else 'off'} changed between rounds")
            alone, together = ceiling_round(inputs)
            result.ceiling.alone = min(result.ceiling.alone, alone)
            result.ceiling.together = min(result.ceiling.together, together)
            log(
                f"[{label(inputs.size)}] round {number}/{rounds}: the scan of {CEILING_FILES} artifacts in one "
                f"process {alone:.2f} s, in one per CPU at once {together:.2f} s"
            )
    report = json.loads((inputs.root / "report-on.json").read_bytes())
    result.disclosure_message = next(
        a["message"] for t in report["tasks"] for a in t["failed_assertions"] if a["gate"] == "disclosure"
    )
    answers = run_answers(inputs)
    index = AnswerIndex(answers, N)
    result.index_bytes = index.nbytes
    result.answer_tokens = int(index.first_token[-1])
    result.answers = len(answers)
    return result


# --------------------------------------------------------------------------- floors


@dataclass
class Floors:
    files: int
    total_bytes: int
    seconds: dict[str, float]
    cpu: str
    matches: int


FLOOR_NAMES = {
    "bytes": 'plain pass over every byte (chunk.count(b"\\n"))',
    "tokenize": "normalisation and tokenisation alone (_tokenize, 256 KiB blocks)",
    "blake3": "BLAKE3, one thread",
    "scan": "the check's scan of an artifact (ArtifactScan: tokenize + index lookup)",
}


def floors(inputs: Inputs, rounds: int) -> Floors:
    """Each floor over every file of ``inputs`` (2 MiB reads), this process pinned to one CPU, best of ``rounds``."""
    import blake3

    from eceb_worker.core.disclosure.index import AnswerIndex
    from eceb_worker.core.disclosure.scan import BLOCK_BYTES, ArtifactScan, _tokenize

    paths = [inputs.corpus / inputs.path_of(i) for i in range(inputs.artifacts)]
    total = sum(p.stat().st_size for p in paths)
    planted = inputs.planted()
    index = AnswerIndex(run_answers(inputs), N)
    previous = os.sched_getaffinity(0)
    cpu = min(previous)
    os.sched_setaffinity(0, {cpu})
    matches = 0

    def chunks(path: Path) -> Iterator[bytes]:
        with path.open("rb", buffering=0) as handle:
            while chunk := handle.read(CHUNK_BYTES):
                yield chunk

    def plain() -> None:
        newlines = 0
        for path in paths:
            for chunk in chunks(path):
                newlines += chunk.count(b"\n")

    def tokenize() -> None:
        for path in paths:
            for chunk in chunks(path):
                for at in range(0, len(chunk), BLOCK_BYTES):
                    _tokenize(chunk[at : at + BLOCK_BYTES], 0)

    def hashed() -> None:
        for path in paths:
            hasher = blake3.blake3()
            for chunk in chunks(path):
                hasher.update(chunk)
            hasher.digest()

    def scan() -> None:
        nonlocal matches
        found = 0
        for path in paths:
            scanner = ArtifactScan(index)
            for chunk in chunks(path):
                scanner.feed(chunk)
            result = scanner.finish()
            if result and path.relative_to(inputs.corpus).as_posix() == planted["artifact_id"]:
                found += len(result.positions)
            elif result:
                raise RuntimeError(f"the scan found a window of an answer in {path}, which the quote is not from")
        matches = found

    works = {"bytes": plain, "tokenize": tokenize, "blake3": hashed, "scan": scan}
    best = dict.fromkeys(works, float("inf"))
    try:
        for number in range(1, rounds + 1):
            for name, work in works.items():
                started = time.perf_counter()
                work()
                best[name] = min(best[name], time.perf_counter() - started)
            log(
                f"[floors] round {number}/{rounds}: "
                + ", ".join(f"{k} {total / v / MB:.0f} MB/s" for k, v in best.items())
            )
    finally:
        os.sched_setaffinity(0, previous)
    if matches != QUOTE_TOKENS - N + 1:
        raise RuntimeError(f"the scan found {matches} windows of the planted quote, expected {QUOTE_TOKENS - N + 1}")
    return Floors(len(paths), total, best, str(cpu), matches)


# --------------------------------------------------------------------------- cluster


@dataclass
class ClusterResult:
    shard_bytes: int
    shards: int
    seconds: dict[int, list[float]]
    pinning: list[str]
    jobs: int


def cluster_shard_bytes(inputs: Inputs) -> tuple[int, int]:
    """The ``--shard-bytes`` of ``eceb-dist submit`` (its default), and how
    many re-hash shards it cuts the corpus into with the check on (each byte
    scanned counting ``SCAN_COST`` bytes hashed)."""
    from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES, plan_rehash
    from eceb_worker.pipeline.jobs import SCAN_COST

    sizes = [ARTIFACT_BYTES] * inputs.artifacts
    shards = len(plan_rehash(sizes, shard_bytes=DEFAULT_TASK_BYTES // SCAN_COST))
    if shards < 8:
        raise RuntimeError(f"{human(inputs.size)} is cut into fewer than 8 re-hash shards")
    return DEFAULT_TASK_BYTES, shards


def dist(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("eceb-dist")), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def cluster(inputs: Inputs, rounds: int, *, pin: bool) -> ClusterResult:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # tests/support starts redis-server, moto and the workers
    from distributed import _cpus_allowed, celery_worker, consuming
    from s3_rate import moto_server

    from eceb_cli.submission import check_submission, evaluation_message
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.io.objects import ObjectStore
    from tests.support.redis_server import running_redis

    expected = (inputs.root / "report-on.json").read_bytes()
    shard_bytes, shards = cluster_shard_bytes(inputs)
    allowed = sorted(os.sched_getaffinity(0))
    cpus: list[int | None] = [None, None]
    if pin and len(allowed) >= 2:
        cpus = [allowed[0], allowed[1]]
    elif pin:
        log("fewer than 2 CPUs available: workers are not pinned")
    seconds: dict[int, list[float]] = {1: [], 2: []}
    jobs = 0
    with (
        tempfile.TemporaryDirectory(prefix="services-", dir=inputs.root) as scratch,
        moto_server(Path(scratch), None) as served,
        running_redis(Path(scratch)) as server,
    ):
        endpoint, _ = served
        url = server.url()
        bucket = f"eceb-disclosure-{uuid.uuid4().hex[:12]}"
        objects = ObjectStore(endpoint)
        client = objects.client
        client.create_bucket(Bucket=bucket)
        prefix = f"s3://{bucket}/{label(inputs.size)}"
        for name in ("benchmark.json", "registry.jsonl", "run.json"):
            client.put_object(Bucket=bucket, Key=f"{label(inputs.size)}/{name}", Body=(inputs.root / name).read_bytes())
        benchmark_url, run_url = f"{prefix}/benchmark.json", f"{prefix}/run.json"
        corpus = str(inputs.corpus.resolve())
        env = {**os.environ, "ECEB_BROKER_URL": url, "ECEB_S3_ENDPOINT_URL": endpoint}
        env.pop("ECEB_RESULT_BACKEND", None)
        hub = Cluster(url, url)
        try:
            log(f"[cluster] starting Celery workers 1 and 2 (CPUs {cpus[0]}, {cpus[1]}) ...")
            with (
                celery_worker(url, cpus[0], Path(scratch) / "logs") as first,
                celery_worker(url, cpus[1], Path(scratch) / "logs") as second,
            ):
                pinning = [
                    f"worker {n} pid {pid}: CPUs {_cpus_allowed(pid)}; pool process(es) "
                    + ", ".join(f"{c}: CPUs {_cpus_allowed(c)}" for c in group.pool_processes())
                    for n, group in enumerate((first, second), start=1)
                    for pid in group.pids
                ]
                log(f"[cluster] warm-up through the command line: eceb-dist submit, wait, result ({shards} shards) ...")
                out = f"s3://{bucket}/reports/warm-up/report.json"
                submitted = dist(
                    "submit",
                    benchmark_url,
                    run_url,
                    "--corpus",
                    corpus,
                    "--out",
                    out,
                    "--shard-bytes",
                    str(shard_bytes),
                    env=env,
                )
                if submitted.returncode != 0:
                    raise RuntimeError(f"eceb-dist submit exited {submitted.returncode}:\n{submitted.stderr}")
                job_id = submitted.stdout.strip()
                waited = dist("wait", job_id, "--timeout", str(JOB_TIMEOUT_S), env=env)
                if waited.returncode != 1:
                    logs = (first.logs() + second.logs())[-3000:]
                    raise RuntimeError(
                        f"eceb-dist wait exited {waited.returncode} (expected 1):\n{waited.stderr}{logs}"
                    )
                local = Path(scratch) / "report-cluster.json"
                fetched = dist("result", job_id, "-o", str(local), env=env)
                if fetched.returncode != 1 or local.read_bytes() != expected:
                    raise RuntimeError(
                        f"eceb-dist result exited {fetched.returncode}; the cluster's report "
                        f"{'differs from' if local.exists() else 'is missing, unlike'} report-on.json:\n"
                        f"{fetched.stderr}"
                    )
                jobs += 1
                for number in range(1, rounds + 1):
                    for workers in (1, 2):
                        consuming(hub.app, second.names[0], on=workers == 2)
                        message = evaluation_message(
                            benchmark_url,
                            run_url,
                            corpus=corpus,
                            out=f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json",
                            endpoint_url=endpoint,
                            shard_bytes=shard_bytes,
                        )
                        started = time.perf_counter()
                        check_submission(message)
                        hub.submit(
                            message,
                            created=int(time.time()),
                            corpus=corpus,
                            out=message.out,
                            benchmark=benchmark_url,
                            run=run_url,
                        )
                        deadline = started + JOB_TIMEOUT_S
                        while not hub.store.finished(message.job_id):
                            if time.perf_counter() > deadline:
                                raise RuntimeError(f"job {message.job_id} did not end within {JOB_TIMEOUT_S} s")
                            time.sleep(POLL_S)
                        elapsed = time.perf_counter() - started
                        state = hub.store.get(message.job_id) or {}
                        if state.get("phase") != "done":
                            failures = hub.store.failures(message.job_id)
                            raise RuntimeError(
                                f"job {message.job_id} ended {state.get('phase')}: {state.get('error')} {failures[:3]}"
                            )
                        data, _ = objects.get(message.out)
                        if data != expected:
                            raise RuntimeError(f"the report of job {message.job_id} differs from report-on.json")
                        jobs += 1
                        seconds[workers].append(elapsed)
                        log(f"[cluster] round {number}/{rounds}: {workers} worker(s) {elapsed:7.2f} s")
                consuming(hub.app, second.names[0], on=True)
        finally:
            hub.app.close()
    return ClusterResult(shard_bytes, shards, seconds, pinning, jobs)


# --------------------------------------------------------------------------- report


def inprocess_shards(size: int) -> int:
    """The re-hash shards ``eceb evaluate`` plans over a corpus of ``size`` (its default shard size)."""
    from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES, plan_rehash
    from eceb_worker.pipeline.jobs import SCAN_COST

    return len(plan_rehash([ARTIFACT_BYTES] * (size // ARTIFACT_BYTES), shard_bytes=DEFAULT_SHARD_BYTES // SCAN_COST))


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def report(
    results: list[SizeResult],
    floor: Floors | None,
    floor_size: int,
    clustered: ClusterResult | None,
    cluster_size: int,
    args: argparse.Namespace,
) -> None:
    from rehash import machine

    cores = os.cpu_count() or 1
    print()
    print("The disclosure check at enterprise scale: eceb evaluate with the check off and on")
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"inputs:  artifacts of 4 MiB, all restricted for every task; {TASKS} tasks, {OBSERVATIONS} observations, "
        f"one quoting {QUOTE_TOKENS} tokens of one artifact; N = {N}; seed {args.seed}; data in {args.data_dir}"
    )
    print(
        f"timing:  best of {args.rounds} alternating round(s) after a warm-up (page cache warm); peak RSS the largest "
        "over the rounds"
    )
    print()
    header = (
        f"{'size':>7} {'restricted bytes':>16} {'off s':>7} {'on s':>7} {'added s':>8} {'MB/s/core':>9} "
        f"{'on/off':>6} {'off peak':>9} {'on peak':>9} {'helpers':>8} {'idx B/tok':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        off, on = r.best("off"), r.best("on")
        added = on - off
        per_core = r.size / added / MB / cores if added > 0 else float("inf")
        print(
            f"{human(r.size):>7} {r.size:>16,} {off:>7.2f} {on:>7.2f} {added:>8.2f} {per_core:>9.1f} "
            f"{on / off:>5.2f}x {r.peak_kib('off') / KIB:>5.0f} MiB {r.peak_kib('on') / KIB:>5.0f} MiB "
            f"{r.helpers_kib('on') / KIB:>4.0f} MiB {r.index_bytes / max(r.answer_tokens, 1):>9.1f}"
        )
    print()
    print(
        "off/on s: wall time of the whole command (start-up, inputs, re-hash, evaluation, report); added = on - off; "
        f"MB/s/core = restricted bytes / added / {cores} cores; peaks: the evaluating process's own "
        "(getrusage RUSAGE_SELF); helpers: the largest peak of its helper processes with the check on "
        "(RUSAGE_CHILDREN)"
    )
    plans = "; ".join(
        f"{human(r.size)} {inprocess_shards(r.size)}"
        f" ({'a helper process' if r.helpers_kib('on') else 'no helper process'} with the check on)"
        for r in results
    )
    print(f"re-hash shards in one process (the default: 64 MiB of work, 4 MiB scanned, each): {plans}")
    peaks = "; ".join(
        f"{human(r.size)} off {r.tree_kib('off') / KIB:.0f} MiB, on {r.tree_kib('on') / KIB:.0f} MiB" for r in results
    )
    print(f"GNU time %M (the largest of the process and its reaped helpers): {peaks}")
    first = results[0]
    print(
        f"answer index ({human(first.size)}): {first.answers} distinct answers, {first.answer_tokens:,} tokens, "
        f"{first.index_bytes:,} bytes ({first.index_bytes / first.answer_tokens:.1f} bytes per answer token)"
    )
    for r in results:
        print(f"the finding, {human(r.size)} (report-on.json): {r.disclosure_message}")
    if floor is not None:
        print()
        print(
            f"floors, one core (CPU {floor.cpu}), over the {floor.files} files ({human(floor_size)}) of the "
            f"{label(floor_size)} corpus read in 2 MiB chunks, best of {args.rounds}:"
        )
        for name, text in FLOOR_NAMES.items():
            seconds = floor.seconds[name]
            print(f"  {text:<76} {seconds:7.2f} s {floor.total_bytes / seconds / MB:8.1f} MB/s")
        print(f"  (the scan found the planted quote: {floor.matches} windows of {N} tokens, in its artifact only)")
    print()
    cpus = results[0].ceiling.cpus if results[0].ceiling else []
    print(
        f"parallel ceiling: the check's scan of the first {CEILING_FILES} artifacts (64 MiB) of each corpus by one "
        f"process pinned to CPU {cpus[0]}, then by one per CPU ({', '.join(map(str, cpus))}) at once, the slowest; "
        "measured in each round, best of the rounds"
    )
    for r in results:
        if r.ceiling is not None:
            print(
                f"  {human(r.size):>7}: {r.ceiling.alone:.2f} s alone, {r.ceiling.together:.2f} s at once: the CPUs "
                f"do {r.ceiling.ratio:.2f} times one process's work ({len(cpus)}.00 would be {len(cpus)} full cores)"
            )
    print("  (the most any split of the scan over processes can gain on this machine at the time)")
    if clustered is not None:
        print()
        best1, best2 = min(clustered.seconds[1]), min(clustered.seconds[2])
        print(
            f"cluster: {human(cluster_size)}, eceb-dist submit --shard-bytes {clustered.shard_bytes:,} "
            f"({clustered.shards} re-hash shards), the check on; jobs from submission to state done, "
            f"best of {args.rounds}; the reports of all {clustered.jobs} jobs are report-on.json byte for byte"
        )
        for line in clustered.pinning:
            print(f"  pinning: {line}")
        on = next(r for r in results if r.size == cluster_size).best("on")
        print(f"  1 worker:  {best1:7.2f} s   (all: {', '.join(f'{s:.2f}' for s in clustered.seconds[1])})")
        print(f"  2 workers: {best2:7.2f} s   (all: {', '.join(f'{s:.2f}' for s in clustered.seconds[2])})")
        print(f"  eceb evaluate in one process, every core, check on: {on:.2f} s")

    print()
    print("targets:")
    for r in results:
        off, on = r.best("off"), r.best("on")
        added = on - off
        per_core = r.size / added / MB / cores if added > 0 else float("inf")
        allowed = r.size / (TARGET_MB_PER_CORE * MB * cores)
        print(
            f"  {human(r.size):>7}: check adds {added:.2f} s <= {allowed:.2f} s (>= {TARGET_MB_PER_CORE:.0f} MB/s per "
            f"core; {per_core:.1f}): {verdict(added <= allowed)}"
            + (
                f"   (per core-equivalent of the ceiling measured, {r.size / added / MB / r.ceiling.ratio:.1f} MB/s)"
                if r.ceiling is not None and added > 0
                else ""
            )
        )
    for r in results:
        ratio = r.best("on") / r.best("off")
        print(
            f"  {human(r.size):>7}: on/off {ratio:.2f}x, goal <= {GOAL_RATIO}x (not a target): "
            f"{verdict(ratio <= GOAL_RATIO)}"
        )
    by_size = {r.size: r for r in results}
    if GIB in by_size and 4 * GIB in by_size:
        linearity = by_size[4 * GIB].best("on") / by_size[GIB].best("on")
        print(
            f"  linearity, time with the check on of 4 GiB / 1 GiB: {linearity:.2f} <= {TARGET_LINEARITY}: "
            f"{verdict(linearity <= TARGET_LINEARITY)}"
        )
    else:
        print("  linearity, 4 GiB / 1 GiB: not measured (both sizes are needed)")
    for r in results:
        bound = TARGET_BASE_RSS_MIB * MIB + r.index_bytes
        peak = r.peak_kib("on") * KIB
        print(
            f"  {human(r.size):>7}: peak RSS with the check on {peak / MIB:.0f} MiB <= 300 MiB + index "
            f"({bound / MIB:.1f} MiB): {verdict(peak <= bound)}"
        )
    if len(results) > 1:
        small, large = results[0], results[-1]
        flat = large.peak_kib("on") / small.peak_kib("on")
        peaks = ", ".join(f"{human(r.size)} {r.peak_kib('on') / KIB:.0f} MiB" for r in results)
        print(
            f"  memory flat with size ({peaks}): {human(large.size)} / {human(small.size)} = {flat:.2f} "
            f"<= {TARGET_FLAT}: {verdict(flat <= TARGET_FLAT)}"
        )
    else:
        print("  memory flat with size: not measured (one size)")
    per_token = first.index_bytes / first.answer_tokens
    print(
        f"  answer index {per_token:.1f} bytes per answer token <= {TARGET_INDEX_BYTES_PER_TOKEN}: "
        f"{verdict(per_token <= TARGET_INDEX_BYTES_PER_TOKEN)}"
    )
    if clustered is not None:
        speedup = min(clustered.seconds[1]) / min(clustered.seconds[2])
        ceiling_of = next(r.ceiling for r in results if r.size == cluster_size)
        print(
            f"  cluster, 2 workers over 1: {speedup:.2f}x >= {TARGET_SPEEDUP}x: {verdict(speedup >= TARGET_SPEEDUP)}"
            + (f"   (the ceiling measured: {ceiling_of.ratio:.2f}x)" if ceiling_of is not None else "")
        )
    elif not args.no_cluster:
        print(f"  cluster: not measured ({label(cluster_size)} is not among the sizes)")
    print()
    print("MB = 10^6 bytes; MiB/GiB = 2^20/2^30 bytes")


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="corpus sizes, comma-separated (default 256m,1g,4g)")
    parser.add_argument("--quick", action="store_true", help="64m only, one round (a smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds, best kept (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--floor-size", default=None, help="the corpus the floors read (default: the smallest)")
    parser.add_argument("--cluster-size", default=None, help="the size timed on the cluster (default 256m)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the cluster")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the Celery workers to one CPU each")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "eceb-bench-disclosure")
    parser.add_argument("--scan-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scan_child:
        scan_child(json.loads(args.scan_child))
        return 0
    try:
        sizes = sorted({parse_size(s) for s in (args.sizes or ("64m" if args.quick else "256m,1g,4g")).split(",")})
        floor_size = parse_size(args.floor_size) if args.floor_size else sizes[0]
        cluster_size = parse_size(args.cluster_size or ("64m" if args.quick else "256m"))
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if floor_size not in sizes:
        parser.error(f"--floor-size {label(floor_size)} is not among the sizes")
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.data_dir = args.data_dir.resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)

    results: list[SizeResult] = []
    floor: Floors | None = None
    clustered: ClusterResult | None = None
    try:
        for size in sizes:
            inputs = Inputs(size, args.seed, args.data_dir / label(size))
            ensure_inputs(inputs)
            results.append(measure_size(inputs, args.rounds))
            if size == floor_size:
                log(f"[floors] over the {label(size)} corpus ...")
                floor = floors(inputs, args.rounds)
            if size == cluster_size and not args.no_cluster:
                clustered = cluster(inputs, args.rounds, pin=not args.no_pin)
    except RuntimeError as exc:  # a command, a job or a report not as expected
        print(f"error: {exc}", file=sys.stderr)
        return 1
    report(results, floor, floor_size, clustered, cluster_size, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
