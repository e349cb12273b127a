"""A model of one verification of a 10,000,000-artifact, 1 TB corpus in S3 on 32 workers, from measured figures.

Usage::

    python benchmarks/scale_model.py [--inputs s3_rate.json] [--artifacts 10000000]
        [--total-bytes 1000000000000] [--workers 32] [--prefixes 16] [--skew 1.0]
        [--latency-ms 20,50,100] [--concurrency 16,32,64,128] [--nic-mb-s 1250]

Measured inputs (the defaults are the figures recorded in docs/PERFORMANCE.md,
"Internet scale"; ``--inputs`` reads them from ``benchmarks/s3_rate.py
--json``): the worker's CPU time per GET and per MB read from S3 (one
process: botocore builds and parses requests under the GIL, so about one
core per worker process whatever its threads), per small and per large
file from local disk, the per-task overhead of a Celery task
(``benchmarks/distributed.py``) and the coordinator's registry scan per
artifact (``benchmarks/coordinator_memory.py``).

Assumed inputs, which no loopback measurement can give (change them on
the command line): the first-byte latency of a GET (``--latency-ms``), the
throughput of one connection (``--connection-mb-s``, AWS's guidance: about
85-90 MB/s), the worker's network (``--nic-mb-s``, 10 Gbit/s), and the
request rate S3 serves per partitioned prefix (5,500 GET/s; a bucket that
S3 has not partitioned yet serves that for all its keys).

For each latency and concurrency (reads in flight per worker,
``StorageSpec.concurrency``), a worker's time for its share is the largest of
its CPU time, its latency-bound time (GETs x (latency + size / connection
throughput) / concurrency) and its network time; the job is bounded below by
that, by the GETs per second the partitioned prefixes serve, and adds the
coordinator's scan and the per-task overhead. It then plans the shards as a
job does (``plan_rehash`` at 256 MiB-equivalent, the last ones shrinking) over
``--prefixes`` top-level prefixes holding artifacts in a Zipf-like
proportion (``--skew``; 0: equal), spreads them (``spread_shards``) and says
what each prefix is asked for.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, DEFAULT_TASK_BYTES
from eceb_worker.corpus.prefixes import S3_PREFIX_GET_RATE, spread_shards

MB = 1_000_000


@dataclass(frozen=True)
class Measured:
    """Per-worker figures measured on this machine (seconds of CPU unless said)."""

    get_cpu_s: float = 0.001355
    """Worker CPU per GET of a small object, hash included (s3_rate.py, concurrency 16)."""
    s3_mb_cpu_s: float = 0.00048
    """Worker CPU per MB of large objects read from S3 and hashed (s3_rate.py)."""
    local_file_cpu_s: float = 0.0000077
    """Worker CPU per small file re-hashed from local disk, one worker (s3_rate.py)."""
    local_mb_cpu_s: float = 0.00031
    """Worker CPU per MB of large files re-hashed from local disk (s3_rate.py)."""
    task_cpu_s: float = 0.0037
    """Per Celery task, worker main and pool processes (distributed.py, 1 MiB shards)."""
    task_wall_s: float = 0.0046
    """Per Celery task, wall, on one worker (distributed.py)."""
    redis_task_cpu_s: float = 0.00041
    """Per Celery task, Redis (distributed.py)."""
    scan_s_per_artifact: float = 24.7 / 10_000_000
    """Coordinator: scanning and checking the registry (coordinator_memory.py, 10,000,000 artifacts)."""
    moto_gets_per_s: float = 524.0
    """GETs per second the loopback moto server answered (for the record: bounded by moto)."""


def measured_from(path: Path | None) -> Measured:
    """The figures of ``benchmarks/s3_rate.py --json`` (concurrency 16, or the
    highest measured), the defaults for what it does not measure."""
    if path is None:
        return Measured()
    found = json.loads(path.read_text())
    gets = sorted(found["gets"], key=lambda r: (r["concurrency"] != 16, -r["concurrency"]))[0]
    rows = {(r["corpus"], r["source"]): r for r in found["rehash"]}
    return Measured(
        get_cpu_s=gets["worker_cpu"] / gets["gets"],
        s3_mb_cpu_s=rows["large", "s3"]["worker_cpu"] / (rows["large", "s3"]["bytes"] / MB),
        local_file_cpu_s=rows["small", "local"]["worker_cpu"] / rows["small", "local"]["files"],
        local_mb_cpu_s=rows["large", "local"]["worker_cpu"] / (rows["large", "local"]["bytes"] / MB),
        moto_gets_per_s=gets["gets"] / gets["seconds"],
    )


@dataclass(frozen=True)
class Case:
    """One latency and concurrency: seconds a worker needs for its share by
    each bound, the GET rates that follow, and the job's time."""

    latency_s: float
    concurrency: int
    cpu_s: float
    latency_bound_s: float
    network_s: float
    worker_s: float
    worker_gets_per_s: float
    aggregate_gets_per_s: float
    prefix_bound_s: float
    job_s: float
    bottleneck: str


def zipf_shares(prefixes: int, skew: float) -> list[float]:
    """Each prefix's share of the artifacts: ``1 / rank ** skew``, normalised."""
    weights = [1.0 / (rank + 1) ** skew for rank in range(prefixes)]
    total = sum(weights)
    return [w / total for w in weights]


def model(args: argparse.Namespace, inputs: Measured) -> dict[str, Any]:
    """Every case of ``--latency-ms`` x ``--concurrency``, the plan, and its spread over the prefixes."""
    artifacts, total, workers = args.artifacts, args.total_bytes, args.workers
    mean = total / artifacts
    per_worker_gets = artifacts / workers
    per_worker_mb = total / MB / workers
    cost = total + DEFAULT_FILE_COST_BYTES * artifacts
    shards = math.ceil(cost / DEFAULT_TASK_BYTES)
    overhead_s = shards * inputs.task_wall_s / workers
    scan_s = inputs.scan_s_per_artifact * artifacts
    shares = zipf_shares(args.prefixes, args.skew)
    # S3 serves each partitioned prefix at its limit: the job cannot end before
    # the GETs of its largest prefix are served, nor before all GETs are served
    # by the partitions there are (one, for a bucket S3 has not partitioned).
    prefix_bound = max(
        artifacts / (S3_PREFIX_GET_RATE * args.partitioned),
        max(shares) * artifacts / S3_PREFIX_GET_RATE if args.partitioned >= args.prefixes else 0.0,
    )
    cpu_s = per_worker_gets * inputs.get_cpu_s + per_worker_mb * inputs.s3_mb_cpu_s
    local_s = per_worker_gets * inputs.local_file_cpu_s + per_worker_mb * inputs.local_mb_cpu_s
    cases: list[Case] = []
    for latency_ms in args.latency_ms:
        latency = latency_ms / 1000
        for concurrency in args.concurrency:
            latency_bound = per_worker_gets * (latency + mean / MB / args.connection_mb_s) / concurrency
            network = per_worker_mb / args.nic_mb_s
            worker = max(cpu_s, latency_bound, network)
            which = {cpu_s: "worker CPU", latency_bound: "GET latency", network: "network"}[worker]
            if prefix_bound > worker:
                which = "S3 rate of the largest prefix" if args.partitioned >= args.prefixes else "S3 partitions"
            rate = per_worker_gets / worker
            cases.append(
                Case(
                    latency_s=latency,
                    concurrency=concurrency,
                    cpu_s=cpu_s,
                    latency_bound_s=latency_bound,
                    network_s=network,
                    worker_s=worker,
                    worker_gets_per_s=rate,
                    aggregate_gets_per_s=rate * workers,
                    prefix_bound_s=prefix_bound,
                    job_s=scan_s + max(worker, prefix_bound) + overhead_s,
                    bottleneck=which,
                )
            )
    # The plan over the prefixes, as a job cuts and spreads it: shards per
    # prefix in proportion to its artifacts (each prefix's artifacts contiguous
    # in the registry's order, as in corpus-root order), workers at the rate of
    # the fastest case at the middle latency.
    per_prefix = [max(1, round(shards * share)) for share in shares]
    shard_prefixes = [f"p{index:03d}/" for index, count in enumerate(per_prefix) for _ in range(count)]
    middle = args.latency_ms[len(args.latency_ms) // 2] / 1000
    reference = min((c for c in cases if c.latency_s == middle), key=lambda c: (c.worker_s, c.concurrency))
    rate = max(1, math.floor(reference.worker_gets_per_s))
    spread = spread_shards(shard_prefixes, workers=workers, worker_get_rate=rate)
    return {
        "inputs": asdict(inputs),
        "mean_bytes": mean,
        "shards": shards,
        "scan_s": scan_s,
        "overhead_s": overhead_s,
        "local_s": local_s,
        "cases": [asdict(c) for c in cases],
        "spread": spread,
        "spread_rate": rate,
        "reference": reference,
        "shares": shares,
    }


def print_model(args: argparse.Namespace, found: dict[str, Any]) -> None:
    """The model as text: inputs, the cases, what they imply, the spread plan."""
    inputs = found["inputs"]
    workers, artifacts = args.workers, args.artifacts
    print("Model: one verification of the corpus below, in S3, on the workers below")
    print(f"command: {' '.join(['python', *sys.argv])}")
    print(
        f"corpus: {artifacts:,} artifacts, {args.total_bytes:,} bytes (mean {found['mean_bytes']:,.0f} B), "
        f"{workers} workers (one process each), {args.prefixes} top-level prefixes (Zipf skew {args.skew:g}: "
        f"the largest holds {max(found['shares']):.1%}), {args.partitioned} partitioned, "
        f"{S3_PREFIX_GET_RATE:,} GET/s each"
    )
    print("measured inputs (per worker process):")
    print(f"  CPU per GET (small object, hashed)       {inputs['get_cpu_s'] * 1e3:.3f} ms")
    print(f"  CPU per MB from S3 (large objects)       {inputs['s3_mb_cpu_s'] * 1e3:.3f} ms")
    print(f"  CPU per small file, local disk           {inputs['local_file_cpu_s'] * 1e6:.1f} us")
    print(f"  CPU per MB, local disk                   {inputs['local_mb_cpu_s'] * 1e3:.3f} ms")
    print(f"  per Celery task: wall {inputs['task_wall_s'] * 1e3:.2f} ms, CPU {inputs['task_cpu_s'] * 1e3:.2f} ms")
    print(f"  coordinator scan per artifact            {inputs['scan_s_per_artifact'] * 1e6:.2f} us")
    if inputs["moto_gets_per_s"]:
        print(f"  (the moto server answered {inputs['moto_gets_per_s']:,.0f} GET/s: its own bound, not S3's)")
    print(
        f"assumed: a connection {args.connection_mb_s:g} MB/s, a worker's network {args.nic_mb_s:g} MB/s; "
        f"plan: {found['shards']:,} shards of {DEFAULT_TASK_BYTES // 2**20} MiB-equivalent "
        f"({found['shards'] / workers:,.0f} a worker); serial scan {found['scan_s']:.0f} s; "
        f"task overhead {found['overhead_s']:.1f} s a worker"
    )
    print(
        f"for comparison, from local disk: {found['local_s']:.0f} s of CPU a worker "
        f"(job about {found['scan_s'] + found['local_s'] + found['overhead_s']:.0f} s)"
    )
    print()
    header = (
        f"{'latency':>8} {'in flight':>9} {'CPU s':>7} {'latency s':>9} {'net s':>6} {'GET/s/worker':>12} "
        f"{'GET/s total':>11} {'S3 s':>6} {'job s':>7}  bottleneck"
    )
    print(header)
    print("-" * len(header))
    for case in found["cases"]:
        print(
            f"{case['latency_s'] * 1e3:>6.0f} ms {case['concurrency']:>9} {case['cpu_s']:>7.0f} "
            f"{case['latency_bound_s']:>9.0f} {case['network_s']:>6.0f} {case['worker_gets_per_s']:>12,.0f} "
            f"{case['aggregate_gets_per_s']:>11,.0f} {case['prefix_bound_s']:>6.0f} {case['job_s']:>7.0f}  "
            f"{case['bottleneck']}"
        )
    ceiling = 1 / inputs["get_cpu_s"]
    print()
    print(
        f"a worker process sends at most {ceiling:,.0f} GET/s (its CPU); at latency L it needs about "
        f"L x {ceiling:,.0f} reads in flight to get there ("
        + ", ".join(f"{math.ceil(ms / 1000 * ceiling)} at {ms:g} ms" for ms in args.latency_ms)
        + ")"
    )
    print(
        f"{workers} workers at that rate ask {workers * ceiling:,.0f} GET/s: at least "
        f"{math.ceil(workers * ceiling / S3_PREFIX_GET_RATE)} partitioned prefixes evenly loaded, and no prefix "
        f"holding more than {S3_PREFIX_GET_RATE / (workers * ceiling):.0%} of the artifacts"
    )
    reference = found["reference"]
    spread = found["spread"]
    shard_s = reference.worker_s / (found["shards"] / workers)
    print(
        f"a shard lasts about {shard_s:.1f} s ({reference.latency_s * 1e3:.0f} ms, {reference.concurrency} in "
        f"flight): the per-task overhead is {inputs['task_wall_s'] / shard_s:.2%} of it"
    )
    print()
    print(
        f"spread plan (workers at {found['spread_rate']:,} GET/s, {reference.latency_s * 1e3:.0f} ms, "
        f"{reference.concurrency} in flight): at most {spread.cap} shard(s) of a prefix at once"
    )
    header = f"{'prefix':<8} {'share':>6} {'shards':>7} {'at once':>7} {'GET/s a shard':>13} {'GET/s peak':>10}"
    print(header)
    print("-" * len(header))
    rows = zip(
        spread.prefixes,
        found["shares"],
        spread.shards,
        spread.concurrent,
        spread.shard_get_rates,
        spread.peak_get_rates,
        strict=True,
    )
    for prefix, share, count, concurrent, rate, peak in rows:
        print(f"{prefix:<8} {share:>6.1%} {count:>7,} {concurrent:>7} {rate:>13,} {peak:>10,}")
    throttled = spread.throttled
    print(
        "prefixes whose shards must send fewer GETs than a worker can: "
        + (", ".join(throttled) if throttled else "none")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, default=None, help="benchmarks/s3_rate.py --json output")
    parser.add_argument("--artifacts", type=int, default=10_000_000)
    parser.add_argument("--total-bytes", type=int, default=10**12)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--prefixes", type=int, default=16, help="top-level prefixes of the corpus")
    parser.add_argument("--partitioned", type=int, default=None, help="prefixes S3 has partitioned (default: all)")
    parser.add_argument("--skew", type=float, default=1.0, help="Zipf exponent of the prefixes' shares")
    parser.add_argument("--latency-ms", default="20,50,100")
    parser.add_argument("--concurrency", default="16,32,64,128")
    parser.add_argument("--connection-mb-s", type=float, default=85.0)
    parser.add_argument("--nic-mb-s", type=float, default=1250.0)
    parser.add_argument("--json", action="store_true", help="print the model as JSON")
    args = parser.parse_args()
    args.latency_ms = [float(x) for x in args.latency_ms.split(",") if x]
    args.concurrency = [int(x) for x in args.concurrency.split(",") if x]
    args.partitioned = args.partitioned or args.prefixes
    found = model(args, measured_from(args.inputs))
    if args.json:
        print(json.dumps({k: v for k, v in found.items() if k not in ("spread", "reference")}, indent=2, default=str))
    else:
        print_model(args, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
