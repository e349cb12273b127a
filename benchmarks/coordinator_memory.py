"""Peak memory and time of the distributed job's coordinating steps for a large registry.

Usage::

    python benchmarks/coordinator_memory.py [--artifacts 1000000,10000000]
        [--orders sorted,unsorted] [--shard-bytes 67108864] [--data-dir DIR]
        [--whole] [--worker] [--json]

For each ``--artifacts`` count, a synthetic registry of that many artifacts
(no files: paths ``dNNNNN/fNNN.txt``, kinds and classifications varied,
BLAKE3 digests and sizes up to 256 KiB derived from the artifact's number)
is written once under ``--data-dir`` (default
``$TMPDIR/eceb-coordinator-memory``; reused when present), with a one-task
benchmark naming it and a run without observations. ``sorted`` is the
registry as eceb writes it (lines in corpus-root order); ``unsorted`` lists
the same lines in a scrambled order (``i -> (a*i + b) mod n``), same header.

Then, in a fresh interpreter per case, it does what the coordinating tasks
of ``eceb-dist`` do (``eceb_worker.cluster.tasks``, the steps of
``eceb_worker.pipeline.jobs.Job``), stage by stage:

1. ``eceb.coordinate``: ``check_inputs(..., keep=frozenset())`` (check the
   benchmark, the run's header and the registry, scanned as a stream and
   sorted on disk when not in corpus-root order; plan the re-hash as byte
   ranges), then one ``RehashTask`` per shard (a reference to its byte range
   of the registry, no artifact inline) and its JSON builtins, all held at
   once as the chord's header holds them;
2. ``eceb.job_verified``: one synthetic ``RehashAnswer`` per shard (every
   artifact verified), decoded as the chord delivers them, reduced with
   ``reduce_verification``; the evaluation planned (``plan_evaluation``);
3. ``eceb.job_finish``: the tasks' outcomes (evaluated here, standing in
   for the evaluation shards' answers, and decoded as delivered) reduced
   into the report (``reduce_evaluation``) and encoded (``encode_report``).

It prints, after each stage, its wall time, the process's RSS and its peak
RSS (``VmHWM``), and at the end ``ru_maxrss`` from
``resource.getrusage(RUSAGE_SELF)`` (the parent that starts the child stays
small, so the child's figure is its own). Target: the peak <= 1 GiB at
10,000,000 artifacts. Spill files of the external sort go to ``$TMPDIR``.

``--whole``: also measure ``check_inputs`` keeping every artifact (the
registry held whole, as ``eceb evaluate`` holds it and the coordinator used
to). ``--worker``: also measure an evaluation shard's process loading the
benchmark, the run and the registry's referenced artifacts
(``load_referenced_artifacts``), and a re-hash shard reading and decoding
its byte range (``registry_range_artifacts``). ``--json``: print the figures
as JSON on stdout (logs go to stderr). Callable from another script:
``measure(artifacts, order, ...)`` returns the figures of one case.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
TARGET_MIB = 1024
FILES_PER_DIR = 1000
MAX_SIZE = 256 * 1024
KINDS = ("code", "rfc", "runbook", "pull_request", "chat", "issue", "api_spec", "infrastructure", "policy")
CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
SCRAMBLE_A = 1_000_003  # a prime that divides neither 1,000,000 nor 10,000,000: i -> a*i+b mod n is a bijection
SCRAMBLE_B = 7_919
CHUNK = 100_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data


def _path(index: int) -> str:
    return f"d{index // FILES_PER_DIR:05d}/f{index % FILES_PER_DIR:03d}.txt"


def _lines(indices: Iterator[int] | range) -> tuple[bytes, bytes]:
    """Registry lines (sorted keys, as eceb writes them) and canonical records of the artifacts."""
    import blake3

    lines: list[str] = []
    records: list[str] = []
    for index in indices:
        digest = blake3.blake3(b"eceb-coordinator-memory:%d" % index).hexdigest()
        path = _path(index)
        kind = KINDS[index % len(KINDS)]
        classification = CLASSIFICATIONS[index % len(CLASSIFICATIONS)]
        size = int(digest[:8], 16) % MAX_SIZE
        common = f'{{"artifact_id":"{path}","classification":"{classification}","kind":"{kind}","path":"{path}",'
        lines.append(f'{common}"size_bytes":{size},"source_digest":"{digest}"}}\n')
        records.append(f'{common}"source_digest":"{digest}"}}\n')
    return "".join(lines).encode(), "".join(records).encode()


def generate(directory: Path, artifacts: int) -> None:
    """Write ``sorted/`` and ``unsorted/`` (registry, benchmark, run) under ``directory``."""
    import blake3
    import msgspec

    from eceb_worker.corpus.artifacts import RegistryHeader
    from eceb_worker.corpus.corpus_root import CORPUS_ROOT_DOMAIN
    from eceb_worker.families.eceb.benchmark import Benchmark, RegistryReference, Task, task_root
    from eceb_worker.families.eceb.run import (
        BenchmarkReference,
        Configuration,
        Decoding,
        JudgeProfile,
        ModelIdentity,
        PricingSnapshot,
        Run,
        Tokenizer,
    )

    if artifacts % SCRAMBLE_A == 0:
        raise SystemExit(f"--artifacts must not be a multiple of {SCRAMBLE_A}")
    started = time.perf_counter()
    encoder = msgspec.json.Encoder(order="sorted")
    header_length = len(
        encoder.encode(
            RegistryHeader(schema="symgliph.eceb/registry-v0.1", artifact_count=artifacts, corpus_root="0" * 64)
        )
    )
    hasher = blake3.blake3(CORPUS_ROOT_DOMAIN)
    for order in ("sorted", "unsorted"):
        (directory / order).mkdir(parents=True, exist_ok=True)
    partial = {order: directory / order / "registry.jsonl.partial" for order in ("sorted", "unsorted")}
    with partial["sorted"].open("wb") as out:
        out.write(b" " * header_length + b"\n")
        for start in range(0, artifacts, CHUNK):
            lines, records = _lines(range(start, min(start + CHUNK, artifacts)))
            out.write(lines)
            hasher.update(records)
    root = hasher.hexdigest()
    header = encoder.encode(
        RegistryHeader(schema="symgliph.eceb/registry-v0.1", artifact_count=artifacts, corpus_root=root)
    )
    with partial["sorted"].open("r+b") as out:
        out.write(header)
    log(f"[data] {artifacts:,} artifacts in corpus-root order written in {time.perf_counter() - started:.0f} s")
    with partial["unsorted"].open("wb") as out:
        out.write(header + b"\n")
        for start in range(0, artifacts, CHUNK):
            scrambled = ((SCRAMBLE_A * i + SCRAMBLE_B) % artifacts for i in range(start, min(start + CHUNK, artifacts)))
            out.write(_lines(scrambled)[0])
    log(f"[data] ... and scrambled, {time.perf_counter() - started:.0f} s in all")
    task = Task(
        task_id="task-0",
        query="Where is the first artifact?",
        required_artifacts=(_path(0),),
        allowed_classifications=CLASSIFICATIONS,  # type: ignore[arg-type]
        budget_ladder=(256,),
        minimum_quality_milli=500,
        maximum_quality_regression_milli=100,
        required_repetitions=1,
    )
    benchmark = Benchmark(
        schema="symgliph.eceb/benchmark-v0.1",
        benchmark_id=f"coordinator-memory-{artifacts}",
        registry=RegistryReference(path="registry.jsonl", corpus_root=root),
        tasks=(task,),
    )
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
    run = Run(
        schema="symgliph.eceb/run-v0.1",
        run_id=f"coordinator-memory-{artifacts}",
        claim_class="conformance_seed",
        non_empirical=True,
        benchmark=BenchmarkReference(benchmark_id=benchmark.benchmark_id, task_root=task_root(benchmark.tasks)),
        corpus_root=root,
        configurations=(configuration,),
        observations=(),
    )
    for order in ("sorted", "unsorted"):
        (directory / order / "benchmark.json").write_bytes(msgspec.json.encode(benchmark))
        (directory / order / "run.json").write_bytes(msgspec.json.encode(run))
        partial[order].rename(directory / order / "registry.jsonl")


def ensure_data(base: Path, artifacts: int) -> Path:
    """The directory of the data for ``artifacts`` (generated in a child process if missing)."""
    directory = base / f"artifacts-{artifacts}"
    if all((directory / order / "registry.jsonl").is_file() for order in ("sorted", "unsorted")):
        log(f"[data] reusing {directory}")
        return directory
    log(f"[data] writing {directory} ...")
    subprocess.run([sys.executable, __file__, "--generate", str(directory), str(artifacts)], check=True)
    return directory


# --------------------------------------------------------------------------- measured child


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(params: dict[str, Any]) -> None:
    """Run one measured case; prints its stages as JSON on stdout."""
    stages: list[dict[str, Any]] = []
    clock = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages.append(
            {
                "stage": name,
                "seconds": round(now - clock, 3),
                "rss_mib": round(_status_mib("VmRSS:"), 1),
                "peak_mib": round(_status_mib("VmHWM:"), 1),
            }
        )
        clock = time.perf_counter()

    import msgspec

    from eceb_worker import __version__
    from eceb_worker.corpus.checked_lines import registry_range_artifacts
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.corpus.verification import ShardVerification, reduce_verification
    from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
    from eceb_worker.families.eceb.planning import evaluation_task_ids, plan_evaluation
    from eceb_worker.families.eceb.report import encode_report
    from eceb_worker.families.eceb.shards import evaluate_tasks_of_run, reduce_evaluation
    from eceb_worker.io.locations import Locator
    from eceb_worker.pipeline.inputs import (
        check_inputs,
        load_benchmark,
        load_referenced_artifacts,
        load_run,
        registry_location,
    )
    from eceb_worker.pipeline.messages import (
        CheckedRegistry,
        EvaluateAnswer,
        RehashAnswer,
        RehashTask,
        ShardAnswer,
    )

    directory = Path(params["directory"])
    benchmark_path, run_path = directory / "benchmark.json", directory / "run.json"
    stage("start-up and imports")
    if params["mode"] == "whole":
        inputs = check_inputs(benchmark_path, run_path, shard_bytes=params["shard_bytes"])
        stage(f"check_inputs, every artifact kept: {len(inputs.registry.artifacts):,} artifacts decoded and checked")
    elif params["mode"] == "worker":
        locator = Locator()
        benchmark = load_benchmark(benchmark_path, locator)
        run = load_run(run_path, locator)
        registry_at = registry_location(locator.locate(benchmark_path), benchmark.registry.path)
        referenced = load_referenced_artifacts(registry_at, benchmark, run, locator)
        stage(f"evaluation shard: benchmark, run and {len(referenced)} referenced artifacts")
        scanned = check_inputs(benchmark_path, run_path, keep=frozenset(), shard_bytes=params["shard_bytes"])
        shard = scanned.registry.shards[len(scanned.registry.shards) // 2]
        del scanned
        stage("(scan again, to find a shard's range)")
        data = registry_at.read_range(shard.byte_start, shard.byte_end)
        artifacts = registry_range_artifacts(data, shard, name=registry_at.name)
        stage(f"re-hash shard: read and decode its range ({len(artifacts)} artifacts, {len(data):,} bytes)")
    else:
        # eceb.coordinate (Job.start): the inputs checked, the registry scanned, no artifact kept
        scanned = check_inputs(benchmark_path, run_path, keep=frozenset(), shard_bytes=params["shard_bytes"])
        scan = scanned.registry
        stage(
            f"coordinate: check_inputs ({scan.artifact_count:,} artifacts, {len(scan.shards):,} shards, "
            f"{'one pass' if scan.in_root_order else 'two passes and an external sort'})"
        )
        spec = StorageSpec(source="s3://corpus/synthetic")
        registry = CheckedRegistry(
            location="s3://inputs/registry.jsonl",
            etag='"0"',
            corpus_root=scan.corpus_root,
            artifact_count=scan.artifact_count,
            rehash_shards=len(scan.shards),
        )
        job_id = "0" * 32
        tasks = [RehashTask(corpus=spec, registry=registry, shard=s, job_id=job_id) for s in scan.shards]
        header = [msgspec.to_builtins(task) for task in tasks]
        stage(f"coordinate: {len(tasks):,} RehashTasks and their JSON held at once (the chord's header)")
        results = [
            msgspec.to_builtins(
                RehashAnswer(
                    index=s.index,
                    verification=ShardVerification(
                        start=s.start, end=s.end, checked=s.count, bytes_hashed=s.size_bytes, findings=()
                    ),
                )
            )
            for s in scan.shards
        ]
        shards = len(scan.shards)
        benchmark, run, named = scanned.benchmark, scanned.run, scan.by_id()
        del tasks, header, scanned, scan
        stage("job_verified: the shards' answers, as the chord delivers them")
        answers: dict[int, RehashAnswer] = {}
        for answer in msgspec.convert(results, list[ShardAnswer]):
            assert isinstance(answer, RehashAnswer)
            answers.setdefault(answer.index, answer)
        assert sorted(answers) == list(range(shards))
        verification = reduce_verification(
            (answers[index].verification for index in range(shards)),
            corpus_root=registry.corpus_root,
            artifact_count=registry.artifact_count,
            source=spec.source,
        )
        assert verification.ok and verification.verified_count == registry.artifact_count
        task_ids = evaluation_task_ids(benchmark, run)
        plan = plan_evaluation([len(run.observations.get(t, ())) for t in task_ids])
        del results, answers
        stage(f"job_verified: reduce_verification, plan_evaluation ({len(plan)} evaluation shards)")
        tasks_by_id = {t.task_id: t for t in benchmark.tasks}
        delivered = [
            msgspec.to_builtins(
                EvaluateAnswer(
                    index=shard.index,
                    outcomes=evaluate_tasks_of_run(task_ids[shard.start : shard.end], run, tasks_by_id, named),
                )
            )
            for shard in plan
        ]
        outcomes = [
            outcome
            for answer in msgspec.convert(delivered, list[ShardAnswer])
            if isinstance(answer, EvaluateAnswer)
            for outcome in answer.outcomes
        ]
        report = reduce_evaluation(
            outcomes,
            benchmark=benchmark,
            run=run,
            corpus_root=registry.corpus_root,
            artifact_count=registry.artifact_count,
            eceb_version=__version__,
            disclosure_check=DISCLOSURE_OFF,
        )
        data = encode_report(report)
        stage(f"job_finish: reduce_evaluation, encode_report ({len(data):,} bytes)")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"stages": stages, "ru_maxrss_mib": round(usage.ru_maxrss / 1024, 1)}))


def measure(
    artifacts: int,
    order: str,
    *,
    mode: str = "coordinator",
    shard_bytes: int = 64 * MIB,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Figures of one case, measured in a fresh interpreter: ``{"artifacts",
    "order", "mode", "seconds", "peak_mib", "ru_maxrss_mib", "stages": [...]}``."""
    base = data_dir or Path(tempfile.gettempdir()) / "eceb-coordinator-memory"
    directory = ensure_data(base, artifacts) / order
    params = {"directory": str(directory), "mode": mode, "shard_bytes": shard_bytes}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(params)], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"the measured process failed:\n{result.stderr[-4000:]}")
    figures = json.loads(result.stdout)
    return {
        "artifacts": artifacts,
        "order": order,
        "mode": mode,
        "seconds": round(seconds, 1),
        "peak_mib": max(s["peak_mib"] for s in figures["stages"]),
        "ru_maxrss_mib": figures["ru_maxrss_mib"],
        "stages": figures["stages"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifacts", default="1000000,10000000", help="comma-separated counts")
    parser.add_argument("--orders", default="sorted,unsorted")
    parser.add_argument("--shard-bytes", type=int, default=64 * MIB)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--whole", action="store_true", help="also measure check_inputs keeping every artifact")
    parser.add_argument("--worker", action="store_true", help="also measure an evaluation and a re-hash shard")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.generate:
        generate(Path(args.generate[0]), int(args.generate[1]))
        return
    cases = []
    for artifacts in (int(count) for count in args.artifacts.split(",")):
        for order in args.orders.split(","):
            modes = ["coordinator"] + (["whole"] if args.whole else []) + (["worker"] if args.worker else [])
            for mode in modes:
                log(f"[measure] {artifacts:,} artifacts, {order}, {mode} ...")
                figures = measure(artifacts, order, mode=mode, shard_bytes=args.shard_bytes, data_dir=args.data_dir)
                cases.append(figures)
                for s in figures["stages"]:
                    figures_line = f"{s['seconds']:8.2f} s  rss {s['rss_mib']:8.1f} MiB  peak {s['peak_mib']:8.1f} MiB"
                    log(f"    {figures_line}  {s['stage']}")
                met = "met" if figures["peak_mib"] <= TARGET_MIB else "NOT met"
                log(
                    f"  => {figures['seconds']:.1f} s, peak RSS {figures['peak_mib']:.0f} MiB "
                    f"(ru_maxrss {figures['ru_maxrss_mib']:.0f} MiB); target <= {TARGET_MIB} MiB: "
                    f"{met if mode == 'coordinator' else 'n/a'}"
                )
    if args.json:
        print(json.dumps(cases, indent=2))
    else:
        print(f"{'artifacts':>12} {'order':>9} {'mode':>12} {'seconds':>8} {'peak MiB':>9}")
        for case in cases:
            print(
                f"{case['artifacts']:>12,} {case['order']:>9} {case['mode']:>12} "
                f"{case['seconds']:>8.1f} {case['peak_mib']:>9.0f}"
            )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
