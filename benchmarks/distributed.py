"""Scale benchmark: re-hashing in-process and on 1 and 2 Celery workers; coordinator memory.

Usage::

    python benchmarks/distributed.py [--quick] [--only throughput|coordinator]
        [--files 10000] [--total-bytes 2147483648] [--distribution lognormal|fixed]
        [--median-bytes 65536] [--sigma 1.5] [--seed 0] [--tiny-shard-bytes 1048576]
        [--rounds 3] [--runs 3] [--tiny-runs 1] [--no-pin] [--artifacts 1000000,10000000] [--data-dir DIR]

Throughput. A synthetic corpus (``benchmarks/synthetic.py``: ``--files``
files whose sizes are lognormal around ``--median-bytes`` with shape
``--sigma``, or ``fixed``, scaled to ``--total-bytes``; contents from
``--seed``) is generated under ``--data-dir`` (default
``$TMPDIR/eceb-bench-distributed``) and registered with eceb's own
``register_corpus``; both are reused when the parameters match. The script
then starts a ``redis-server`` on a free port of 127.0.0.1 and two Celery
workers (``--concurrency 1``, through ``tests/redis_server.py``), worker
``i`` and its pool process pinned to CPU ``i`` (``--no-pin``: not pinned) so
that "1 worker" means one core: BLAKE3 would otherwise hash every file of
1 MiB or more on all cores in one worker. In each of ``--rounds`` rounds it
times ``--runs`` re-hashes of the whole corpus at the default shard size,
and ``--tiny-runs`` at ``--tiny-shard-bytes`` (many more tasks: the per-task
overhead is the extra time divided by the extra tasks), each
``verify_corpus`` with the registry already loaded, by:

* the in-process executor, as ``eceb corpus verify`` runs it (one worker per
  core: this process plus helper processes for small files, BLAKE3 on all
  cores for large files), in a fresh subprocess after an untimed warm-up;
* the in-process executor with one worker pinned to the first CPU (a
  one-core reference), likewise;
* ``CeleryExecutor`` with 1 worker and with 2, in turn (worker 2 stops and
  resumes consuming the queue by Celery's remote control), so that both see
  the same machine conditions; one untimed warm-up run after the workers start.
  As configured by default (consecutive shards sent together as tasks of up
  to ``DEFAULT_TASK_BYTES``, told how many workers consume), and with one task
  per shard (for comparison; the tiny-shard runs use only this).

The page cache is warm for every timed run (``fincore`` shows how much of
the corpus is resident). The coordinator (this process) and Redis are not
pinned. Prints, per configuration, the best time, the median and the range,
MB/s (10^6 bytes/s) and files/s of the best; the speedup of 2 workers over
1; the ratio of Celery's speed to the in-process executor's; and the
per-task overhead with where its CPU time goes (coordinator, Redis, worker
main process, worker pool process).

Coordinator memory. For each ``--artifacts`` count, ``measure`` of
``benchmarks/coordinator_memory.py`` (its synthetic registry of that many
artifacts, no files, in corpus-root order) runs, each in a fresh interpreter,
the distributed job's coordinating steps as they are now (``eceb.coordinate``,
``eceb.job_verified``, ``eceb.job_finish``: planning, shard messages, the
reduce of one answer per shard), then, for comparison, ``load_inputs``
decoding the registry whole; it prints seconds, RSS and peak RSS (``VmHWM``)
after each stage.

Targets: 2 workers >= 1.8x the speed of 1 worker; Celery within 5 % of the
in-process executor at the default shard size (speed ratio >= 0.95); the
coordinator <= 1 GB (GiB) peak RSS for 10,000,000 artifacts. Measures and
reports; exits 0 whether or not the targets are met.

``--quick``: a 256 MiB corpus of 2,000 files, one round, 100,000 artifacts
(under 30 s), for smoke testing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthetic import (
    SyntheticCorpus,
    corpus_dir,
    ensure_corpus,
    log,
)

from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES, DEFAULT_TASK_BYTES, group_shards, plan_rehash

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
MIB = 1024**2
CLK_TCK = os.sysconf("SC_CLK_TCK")
TARGET_SPEEDUP = 1.8
TARGET_CELERY_RATIO = 0.95
TARGET_COORDINATOR_MIB = 1024


# --------------------------------------------------------------------------- in-process runs (child)


def inprocess_child(params: dict[str, Any]) -> None:
    """Time ``verify_corpus`` with the in-process executor; prints JSON samples.

    Runs in a fresh interpreter so that pinning (``cpu``) holds for BLAKE3's
    thread pool too: its threads are created on first use, with the
    affinity of the thread creating them.
    """
    if params["cpu"] is not None:
        os.sched_setaffinity(0, {params["cpu"]})
    from eceb_worker.pipeline.inputs import load_registry
from eceb_worker.pipeline.jobs import verify_corpus
    from eceb_worker.executors import InProcessExecutor
    from eceb_worker.corpus.storage import StorageSpec

    registry = load_registry(Path(params["registry"]))
    spec = StorageSpec(source=params["files"])
    executor = InProcessExecutor(params["workers"])
    verify_corpus(registry, spec, executor=executor)  # warm-up: page cache, imports, BLAKE3 pool
    samples: list[dict[str, Any]] = []
    for shard_bytes in params["sequence"]:
        before = _rusage()
        started = time.perf_counter()
        report = verify_corpus(registry, spec, executor=executor, shard_bytes=shard_bytes)
        seconds = time.perf_counter() - started
        after = _rusage()
        if not report.ok or report.verified_count != len(registry.artifacts):
            raise RuntimeError(f"verification failed: {len(report.findings)} findings")
        samples.append(
            {
                "shard_bytes": shard_bytes,
                "seconds": seconds,
                "shards": len(plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes)),
                "cpu_self": after[0] - before[0],
                "cpu_helpers": after[1] - before[1],
            }
        )
    print(json.dumps(samples))


def _rusage() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


# --------------------------------------------------------------------------- measurements (parent)


@dataclass
class Sample:
    """One timed run: wall seconds, units handed out (shards in-process, tasks on Celery), CPU seconds by process."""

    seconds: float
    shards: int
    cpu: dict[str, float] = field(default_factory=dict)


@dataclass
class Config:
    """One executor set-up: its samples per shard size."""

    name: str
    label: str
    samples: dict[int, list[Sample]] = field(default_factory=dict)

    def add(self, shard_bytes: int, sample: Sample) -> None:
        self.samples.setdefault(shard_bytes, []).append(sample)

    def best(self, shard_bytes: int) -> Sample | None:
        found = self.samples.get(shard_bytes)
        return min(found, key=lambda s: s.seconds) if found else None

    def seconds_range(self, shard_bytes: int) -> tuple[float, float] | None:
        found = self.samples.get(shard_bytes)
        return (min(s.seconds for s in found), max(s.seconds for s in found)) if found else None

    def median(self, shard_bytes: int) -> float | None:
        found = self.samples.get(shard_bytes)
        return statistics.median(s.seconds for s in found) if found else None

    def mean_cpu(self, shard_bytes: int) -> dict[str, float]:
        found = self.samples.get(shard_bytes) or []
        keys = {k for s in found for k in s.cpu}
        return {k: statistics.fmean(s.cpu.get(k, 0.0) for s in found) for k in sorted(keys)}


def run_inprocess(
    corpus: SyntheticCorpus, workers: int, cpu: int | None, sequence: list[int]
) -> list[tuple[int, Sample]]:
    """``(shard_bytes, sample)`` of each timed run, from a fresh subprocess (see :func:`inprocess_child`)."""
    params = {
        "registry": str(corpus.registry),
        "files": str(corpus.files),
        "workers": workers,
        "cpu": cpu,
        "sequence": sequence,
    }
    done = subprocess.run(
        [sys.executable, __file__, "--inprocess-child", json.dumps(params)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return [
        (
            s["shard_bytes"],
            Sample(s["seconds"], s["shards"], {"in-process": s["cpu_self"], "helpers": s["cpu_helpers"]}),
        )
        for s in json.loads(done.stdout)
    ]


def _proc_times(pid: int) -> tuple[float, float]:
    """(own CPU seconds, CPU seconds of reaped children) of ``pid``; zeros when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0, 0.0
    fields = text[text.rindex(")") + 2 :].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / CLK_TCK, (cutime + cstime) / CLK_TCK


def _cpus_allowed(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


class CpuMeter:
    """CPU seconds so far of this process (the coordinator), Redis, and the
    workers' main and pool processes (a pool process replaced meanwhile is
    counted through its parent's reaped-children times)."""

    def __init__(self, redis_client: Any, workers: Sequence[Any]) -> None:
        self.redis = redis_client
        self.workers = workers

    def read(self) -> dict[str, float]:
        info = self.redis.info("cpu")
        main = pool = 0.0
        for group in self.workers:
            for pid in group.pids:
                own, reaped = _proc_times(pid)
                main += own
                pool += reaped
            for child in group.pool_processes():
                pool += _proc_times(child)[0]
        return {
            "coordinator": time.process_time(),
            "redis": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
            "worker main": main,
            "worker pool": pool,
        }


def run_celery(executor: Any, registry: Any, spec: Any, shard_bytes: int, meter: CpuMeter) -> Sample:
    from eceb_worker.pipeline.jobs import verify_corpus

    before = meter.read()
    started = time.perf_counter()
    report = verify_corpus(registry, spec, executor=executor, shard_bytes=shard_bytes)
    seconds = time.perf_counter() - started
    time.sleep(0.2)  # let the workers' last acknowledgements land in their CPU times
    after = meter.read()
    if not report.ok or report.verified_count != len(registry.artifacts):
        raise RuntimeError(f"verification failed: {len(report.findings)} findings")
    shards = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes)
    tasks = (
        len(shards)
        if executor.task_bytes is None
        else len(group_shards(shards, task_bytes=executor.task_bytes, workers=executor.workers))
    )
    return Sample(seconds, tasks, {k: after[k] - before[k] for k in after})


@contextlib.contextmanager
def celery_worker(broker_url: str, cpu: int | None, log_dir: Path) -> Iterator[Any]:
    """One worker process (``--concurrency 1``) from ``tests/redis_server.py``,
    started while this thread is pinned to ``cpu`` so that the worker and its
    pool process inherit the pinning."""
    import pytest

    from tests.redis_server import celery_workers

    previous = os.sched_getaffinity(0)
    with contextlib.ExitStack() as stack:
        try:
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
            running = stack.enter_context(celery_workers(broker_url, 1, log_dir))
        except pytest.fail.Exception as exc:  # it reports a start-up failure as a failed test
            raise RuntimeError(str(exc)) from None
        finally:
            os.sched_setaffinity(0, previous)
        yield running


def consuming(app: Any, worker: str, *, on: bool) -> None:
    """Make ``worker`` consume eceb's queue again, or stop consuming it (Celery
    remote control; the worker stays up, idle)."""
    from eceb_worker.cluster.app import QUEUE

    control = app.control.add_consumer if on else app.control.cancel_consumer
    replies = control(QUEUE, destination=[worker], reply=True, timeout=10)
    if not replies:
        raise RuntimeError(f"worker {worker} did not answer {'add' if on else 'cancel'}_consumer")


def page_cache(corpus: SyntheticCorpus, registry: Any) -> str:
    """How much of the corpus is in the page cache (``fincore``), as text."""
    if shutil.which("fincore") is None:
        return "unknown (fincore not installed)"
    paths = [str(corpus.files / a.path) for a in registry.artifacts]
    page = os.sysconf("SC_PAGE_SIZE")
    resident = pages = 0
    for start in range(0, len(paths), 2000):
        done = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--raw", "--output", "PAGES,SIZE", *paths[start : start + 2000]],
            check=True,
            capture_output=True,
            text=True,
        )
        for line in done.stdout.splitlines():
            res, total = line.split()
            resident += int(res)
            pages += -(-int(total) // page)
    return f"{resident:,} of {pages:,} pages resident ({100 * resident / max(pages, 1):.1f} %)"


@dataclass
class Throughput:
    configs: dict[str, Config]
    shard_sizes: tuple[int, int]
    files: int
    total_bytes: int
    cache_before: str
    cache_after: str
    pinning: list[str]
    wall_seconds: float


def throughput(args: argparse.Namespace, corpus: SyntheticCorpus) -> Throughput:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # tests/redis_server.py starts redis-server and the workers
    import redis

    from eceb_worker.cluster.app import make_app
    from eceb_worker.core.redaction.celery_executor import CeleryExecutor
    from eceb_worker.pipeline.inputs import load_registry
    from eceb_worker.corpus.storage import StorageSpec
    from tests.redis_server import running_redis

    started = time.perf_counter()
    registry = load_registry(corpus.registry)
    spec = StorageSpec(source=str(corpus.files))
    total = sum(a.size_bytes for a in registry.artifacts)
    shard_sizes = (DEFAULT_SHARD_BYTES, args.tiny_shard_bytes)
    # The shard size of each timed run of a configuration in a round: default and tiny in turn.
    sequence = [
        size
        for i in range(max(args.runs, args.tiny_runs))
        for size, count in zip(shard_sizes, (args.runs, args.tiny_runs), strict=True)
        if i < count
    ]
    allowed = sorted(os.sched_getaffinity(0))
    cpus: list[int | None] = [None, None]
    if not args.no_pin:
        if len(allowed) < 2:
            log("fewer than 2 CPUs available: workers are not pinned")
        else:
            cpus = [allowed[0], allowed[1]]
    configs = {
        "ip": Config("ip", f"in-process, {len(allowed)} workers (eceb corpus verify)"),
        "ip1": Config("ip1", f"in-process, 1 worker, pinned to CPU {allowed[0]}"),
        "c1": Config("c1", "Celery, 1 worker" + (f" (CPU {cpus[0]})" if cpus[0] is not None else "")),
        "c2": Config("c2", "Celery, 2 workers" + (f" (CPUs {cpus[0]}, {cpus[1]})" if cpus[1] is not None else "")),
        "c1s": Config("c1s", "Celery, 1 worker, a task per shard"),
        "c2s": Config("c2s", "Celery, 2 workers, a task per shard"),
    }
    cache_before = ""
    pinning: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="services-", dir=args.data_dir) as scratch,
        running_redis(Path(scratch)) as server,
    ):
        url = server.url()
        client = redis.Redis.from_url(url)
        app = make_app(url, url)
        # Default: shards sent together as tasks of up to DEFAULT_TASK_BYTES, sized for the
        # workers consuming; for comparison and for the per-task overhead, one task per shard.
        grouped = {n: CeleryExecutor(app, timeout=3600, workers=n) for n in (1, 2)}
        per_shard = CeleryExecutor(app, timeout=3600, task_bytes=None)
        try:
            log(f"starting Celery workers 1 and 2 (CPUs {cpus[0]}, {cpus[1]}) ...")
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
                meter = CpuMeter(client, [first, second])
                run_celery(grouped[2], registry, spec, DEFAULT_SHARD_BYTES, meter)  # warm-up, both workers
                for round_number in range(1, args.rounds + 1):
                    log(f"[round {round_number}/{args.rounds}] in-process executor, {len(allowed)} workers ...")
                    for shard_bytes, sample in run_inprocess(corpus, len(allowed), None, sequence):
                        configs["ip"].add(shard_bytes, sample)
                    if not cache_before:
                        cache_before = page_cache(corpus, registry)
                    log(f"[round {round_number}/{args.rounds}] in-process executor, 1 worker, pinned ...")
                    for shard_bytes, sample in run_inprocess(corpus, 1, allowed[0], sequence):
                        configs["ip1"].add(shard_bytes, sample)
                    log(f"[round {round_number}/{args.rounds}] Celery, 1 and 2 workers in turn ...")
                    for shard_bytes in sequence:
                        tiny = shard_bytes != DEFAULT_SHARD_BYTES
                        for workers in (1, 2):
                            consuming(app, second.names[0], on=workers == 2)
                            name = f"c{workers}"
                            if not tiny:
                                sample = run_celery(grouped[workers], registry, spec, shard_bytes, meter)
                                configs[name].add(shard_bytes, sample)
                            sample = run_celery(per_shard, registry, spec, shard_bytes, meter)
                            configs[f"{name}s"].add(shard_bytes, sample)
                    bests = {name: config.best(DEFAULT_SHARD_BYTES) for name, config in configs.items()}
                    shown = ", ".join(f"{name} {best.seconds:.3f}" for name, best in bests.items() if best)
                    log(f"[round {round_number}/{args.rounds}]   best so far, default shards (s): {shown}")
        finally:
            client.close()
            app.close()
    return Throughput(
        configs=configs,
        shard_sizes=shard_sizes,
        files=len(registry.artifacts),
        total_bytes=total,
        cache_before=cache_before,
        cache_after=page_cache(corpus, registry),
        pinning=pinning,
        wall_seconds=time.perf_counter() - started,
    )


def coordinator(args: argparse.Namespace, counts: list[int]) -> list[dict[str, Any]]:
    """Figures of the coordinating steps for each count (``benchmarks/coordinator_memory.py``,
    each case in a fresh interpreter): the coordinator as it runs now, and the
    registry decoded whole (``load_inputs``) for comparison."""
    import coordinator_memory

    found: list[dict[str, Any]] = []
    for count in counts:
        for mode in ("coordinator", "whole"):
            log(f"[coordinator] {count:,} artifacts, {mode} ...")
            try:
                found.append(coordinator_memory.measure(count, "sorted", mode=mode, shard_bytes=DEFAULT_SHARD_BYTES))
            except RuntimeError as exc:
                found.append({"artifacts": count, "mode": mode, "error": str(exc)[-500:]})
    return found


# --------------------------------------------------------------------------- report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def report_throughput(result: Throughput, args: argparse.Namespace) -> list[bool]:
    default, tiny = result.shard_sizes
    configs = result.configs
    mb = result.total_bytes / 1e6
    print(
        f"corpus:  {result.files:,} files, {result.total_bytes:,} bytes ({result.total_bytes / GIB:.2f} GiB); "
        f"{args.distribution} sizes (median {args.median_bytes:,} B before scaling, sigma {args.sigma}), "
        f"seed {args.seed}"
    )
    print(f"page cache: before timing {result.cache_before}; after {result.cache_after}")
    for line in result.pinning:
        print(f"pinning: {line}")
    print(
        f"timing:  {args.rounds} round(s) x {args.runs} run(s) (tiny shards: {args.tiny_runs}) per configuration, "
        "best kept; "
        f"phase wall time {result.wall_seconds:.0f} s"
    )
    print()
    header = (
        f"{'executor':<44} {'shard size':>10} {'tasks':>7} {'best s':>7} {'median':>7} {'range s':>13} "
        f"{'MB/s':>7} {'files/s':>8}"
    )
    print(header)
    print("-" * len(header))
    for config in configs.values():
        for shard_bytes in (default, tiny):
            best = config.best(shard_bytes)
            span = config.seconds_range(shard_bytes)
            median = config.median(shard_bytes)
            if best is None or span is None or median is None:
                continue
            size = f"{shard_bytes // MIB} MiB" if shard_bytes % MIB == 0 else f"{shard_bytes // 1024} KiB"
            print(
                f"{config.label:<44} {size:>10} {best.shards:>7,} {best.seconds:>7.3f} {median:>7.3f} "
                f"{span[0]:>6.3f}-{span[1]:<6.3f} {mb / best.seconds:>7,.0f} {result.files / best.seconds:>8,.0f}"
            )
    print()
    verdicts: list[bool] = []
    c1, c2, ip, ip1 = (configs[n].best(default) for n in ("c1", "c2", "ip", "ip1"))
    medians = {n: configs[n].median(default) or float("nan") for n in configs}
    if c1 and c2:
        speedup = c1.seconds / c2.seconds
        verdicts.append(speedup >= TARGET_SPEEDUP)
        print(
            f"speedup, 2 workers over 1 (default shards):       {speedup:.2f}x   target >= {TARGET_SPEEDUP}x   "
            f"{'met' if verdicts[-1] else 'NOT met'}   (medians: {medians['c1'] / medians['c2']:.2f}x)"
        )
    if c2 and ip:
        ratio = ip.seconds / c2.seconds
        verdicts.append(ratio >= TARGET_CELERY_RATIO)
        print(
            f"Celery (2 workers) / in-process speed (default):  {ratio:.2f}x   target >= {TARGET_CELERY_RATIO}x  "
            f"{'met' if verdicts[-1] else 'NOT met'}   (medians: {medians['ip'] / medians['c2']:.2f}x)"
        )
    if c1 and ip1:
        print(
            f"Celery 1 worker / in-process 1 pinned worker:     {ip1.seconds / c1.seconds:.2f}x"
            f"                            (medians: {medians['ip1'] / medians['c1']:.2f}x)"
        )
    if c1:
        print(
            f"one task on one worker (default):                {_ms(c1.seconds / c1.shards)} on average "
            f"({result.total_bytes / c1.shards / MIB:.1f} MiB of files a task)"
        )
    print()
    for workers in (1, 2):
        grouped, per_shard = configs[f"c{workers}"].best(default), configs[f"c{workers}s"].best(default)
        if grouped and per_shard:
            print(
                f"Celery {workers} worker(s), tasks of <= {DEFAULT_TASK_BYTES // MIB} MiB over a task per shard: "
                f"{per_shard.seconds / grouped.seconds:.2f}x ({grouped.shards} vs {per_shard.shards} tasks)"
            )
    print()
    print("per-task overhead (tiny shards vs default shards, a task per shard: extra time / extra tasks)")
    for name in ("c1s", "c2s", "ip1", "ip"):
        config = configs[name]
        small, big = config.best(tiny), config.best(default)
        if small is None or big is None or small.shards == big.shards:
            continue
        extra = small.shards - big.shards
        cpu_small, cpu_big = config.mean_cpu(tiny), config.mean_cpu(default)
        parts = ", ".join(f"{k} {_ms((cpu_small[k] - cpu_big.get(k, 0.0)) / extra)}" for k in cpu_small)
        print(
            f"  {config.label:<44} wall {_ms((small.seconds - big.seconds) / extra)} per task "
            f"({extra:,} extra tasks); CPU per task: {parts}"
        )
    return verdicts


def report_coordinator(found: list[dict[str, Any]]) -> list[bool]:
    verdicts: list[bool] = []
    titles = {
        "coordinator": "eceb.coordinate, eceb.job_verified, eceb.job_finish as they run now",
        "whole": "for comparison: the registry decoded whole (load_inputs)",
    }
    for case in found:
        print(f"coordinator memory, {case['artifacts']:,} artifacts: {titles[case['mode']]} (fresh process)")
        if "error" in case:
            print(f"    FAILED: {case['error']}")
            if case["mode"] == "coordinator":
                verdicts.append(False)
            continue
        print(f"    {'stage':<96} {'s':>7} {'RSS MiB':>8} {'peak MiB':>9}")
        for item in case["stages"]:
            cells = f"{item['seconds']:>7.2f} {item['rss_mib']:>8,.0f} {item['peak_mib']:>9,.0f}"
            print(f"    {item['stage']:<96} {cells}")
        peak = case["peak_mib"]
        met = peak <= TARGET_COORDINATOR_MIB
        verdict = ""
        if case["mode"] == "coordinator":
            verdicts.append(met)
            verdict = f"; target <= 1 GiB: {'met' if met else 'NOT met'}"
        print(f"    peak RSS {peak:,.0f} MiB ({peak / 1024:.2f} GiB), {case['seconds']:.1f} s{verdict}")
    return verdicts


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "eceb-bench-distributed")
    parser.add_argument("--quick", action="store_true", help="small sizes, one round (smoke test, under 30 s)")
    parser.add_argument("--only", choices=["throughput", "coordinator"], default=None)
    parser.add_argument("--files", type=int, default=None, help="files in the corpus (default 10,000)")
    parser.add_argument("--total-bytes", type=int, default=None, help="corpus size (default 2 GiB; 0: unscaled)")
    parser.add_argument("--distribution", choices=["lognormal", "fixed"], default="lognormal")
    parser.add_argument("--median-bytes", type=int, default=64 * 1024, help="median (fixed: the size) before scaling")
    parser.add_argument("--sigma", type=float, default=1.5, help="lognormal shape")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tiny-shard-bytes", type=int, default=None, help="the many-task shard size (default 1 MiB)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of all configurations (default 3)")
    parser.add_argument(
        "--runs", type=int, default=None, help="timed default-shard runs per configuration and round (3)"
    )
    parser.add_argument(
        "--tiny-runs", type=int, default=None, help="timed tiny-shard runs per configuration and round (1)"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin the Celery workers to one CPU each")
    parser.add_argument(
        "--artifacts", default=None, help="registry sizes for the coordinator (default 1000000,10000000)"
    )
    parser.add_argument("--inprocess-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inprocess_child:
        inprocess_child(json.loads(args.inprocess_child))
        return 0

    quick = args.quick
    args.files = args.files or (2000 if quick else 10_000)
    if args.total_bytes is None:
        args.total_bytes = 256 * MIB if quick else 2 * GIB
    args.tiny_shard_bytes = args.tiny_shard_bytes or (256 * 1024 if quick else MIB)
    args.rounds = args.rounds or (1 if quick else 3)
    args.runs = args.runs or (1 if quick else 3)
    args.tiny_runs = args.tiny_runs or 1
    counts = [int(n) for n in (args.artifacts or ("100000" if quick else "1000000,10000000")).split(",") if n]
    args.data_dir = args.data_dir.resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)

    from rehash import machine

    verdicts: list[bool] = []
    result: Throughput | None = None
    found: list[dict[str, Any]] = []
    if args.only in (None, "throughput"):
        manifest_args: dict[str, Any] = {
            "files_count": args.files,
            "distribution": args.distribution,
            "median_bytes": args.median_bytes,
            "sigma": args.sigma,
            "total_bytes": args.total_bytes or None,
            "seed": args.seed,
        }
        corpus = SyntheticCorpus(**manifest_args, root=Path())
        corpus = SyntheticCorpus(**manifest_args, root=corpus_dir(args.data_dir, corpus.expected_manifest()))
        ensure_corpus(corpus)
        result = throughput(args, corpus)
    if args.only in (None, "coordinator"):
        found = coordinator(args, counts)

    print()
    print("Scale benchmark: in-process vs Celery re-hashing; coordinator memory")
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    if result is not None:
        verdicts += report_throughput(result, args)
        print()
    if found:
        verdicts += report_coordinator(found)
        print()
    print("MB = 10^6 bytes; MiB/GiB = 2^20/2^30 bytes")
    print("all targets met" if verdicts and all(verdicts) else "some targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
