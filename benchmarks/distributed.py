"""Scale benchmark: a verification job on 1 and 2 Celery workers against in-process re-hashing; coordinator memory.

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
workers (``--concurrency 1``, through ``tests/support/redis_server.py``),
worker ``i`` and its pool process pinned to CPU ``i`` (``--no-pin``: not
pinned) so that "1 worker" means one core: BLAKE3 would otherwise hash every
file of 1 MiB or more on all cores in one worker. In each of ``--rounds``
rounds it times ``--runs`` verifications of the whole corpus at each
executor's default shard size, and ``--tiny-runs`` at ``--tiny-shard-bytes``
(many more tasks: the per-task overhead is the extra time divided by the
extra tasks), by:

* the in-process executor, as ``eceb corpus verify`` runs it after start-up
  (``load_registry``, then ``verify_corpus`` with ``InProcessExecutor``, one
  worker per core: this process plus helper processes for small files,
  BLAKE3 on all cores for large files; 64 MiB-equivalent shards,
  ``DEFAULT_SHARD_BYTES``), in a fresh subprocess after an untimed warm-up;
* the in-process executor with one worker pinned to the first CPU (a
  one-core reference), likewise;
* a verification job on the cluster, as ``eceb-dist verify REGISTRY --corpus
  DIR [--shard-bytes N]`` submits it (a ``JobMessage`` of kind ``VERIFY``,
  ``Cluster.submit``; 256 MiB-equivalent shards by default,
  ``DEFAULT_TASK_BYTES``, each shard one Celery task), with 1 worker and with
  2, in turn (worker 2 stops and resumes consuming the queue by Celery's
  remote control), so that both see the same machine conditions; one untimed
  warm-up job per shard size after the workers start. A job is timed from
  its submission until its state in Redis reaches ``done`` (polled every
  ``POLL_S``); it includes the coordinating steps (``eceb.coordinate``:
  scanning and checking the registry, planning; ``eceb.job_verified``: the
  reduce), and each shard task reads and decodes its own lines of the
  registry. Its verification report (the state's ``verification`` field)
  must be byte for byte the in-process one.

Every in-process run includes reading and checking the registry, as the
job does (the share it takes is printed). The page cache is warm for every
timed run (``fincore`` shows how much of the corpus is resident). This
process (the submitter) and Redis are not pinned. Prints, per
configuration, the best time, the median and the range, MB/s (10^6
bytes/s) and files/s of the best; the speedup of 2 workers over 1; the
ratio of the job's speed to the in-process executor's; where one job's
time goes (one more job on 1 worker and one on 2, their tasks read from
the workers' JSON log lines: the coordinating step, the time before the
first shard and after the last, the shards' run time alone and on two
workers at once, the gaps between shards, and the least time 2 workers
could take with that serial part); and the per-task overhead with where
its CPU time goes (the submitter, Redis, worker main process, worker pool
process).

Coordinator memory. For each ``--artifacts`` count, ``measure`` of
``benchmarks/coordinator_memory.py`` (its synthetic registry of that many
artifacts, no files, in corpus-root order) runs, each in a fresh interpreter,
the distributed job's coordinating steps (``eceb.coordinate``,
``eceb.job_verified``, ``eceb.job_finish``: checking the inputs with the
registry scanned as a stream, one ``RehashTask`` per shard, the reduce of one
answer per shard), then, for comparison, ``check_inputs`` keeping every
artifact (the registry held whole); it prints seconds, RSS and peak RSS
(``VmHWM``) after each stage.

Targets: 2 workers >= 1.9x the speed of 1 worker; the job on 2 workers
within 3 % of the in-process executor at the default shard sizes (speed
ratio >= 0.97); the coordinator <= 1 GB (GiB) peak RSS for 10,000,000
artifacts. Measures and reports; exits 0 whether or not the targets are met
(a verification that fails or a report that differs is an error).

``--quick``: a 256 MiB corpus of 2,000 files, 256 KiB tiny shards, one
round, 100,000 artifacts (under 30 s), for smoke testing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
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

from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES, DEFAULT_TASK_BYTES, plan_rehash

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
MIB = 1024**2
CLK_TCK = os.sysconf("SC_CLK_TCK")
TARGET_SPEEDUP = 1.9
TARGET_JOB_RATIO = 0.97
TARGET_COORDINATOR_MIB = 1024
POLL_S = 0.002
"""How often the submitter reads the job's phase in Redis while it waits (one HGET)."""
JOB_TIMEOUT_S = 3600
SETTLE_S = 0.02
SETTLE_MAX_S = 2.0
KINDS = ("default", "tiny")
"""A timed run's shard size: the executor's default, or ``--tiny-shard-bytes``."""


# --------------------------------------------------------------------------- in-process runs (child)


def inprocess_child(params: dict[str, Any]) -> None:
    """Time ``load_registry`` + ``verify_corpus`` with the in-process executor
    (what ``eceb corpus verify`` does after start-up); prints JSON: the samples
    and the verification report.

    Runs in a fresh interpreter so that pinning (``cpu``) holds for BLAKE3's
    thread pool too: its threads are created on first use, with the
    affinity of the thread creating them.
    """
    if params["cpu"] is not None:
        os.sched_setaffinity(0, {params["cpu"]})
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.corpus.verification import encode_verification
    from eceb_worker.executors import InProcessExecutor
    from eceb_worker.pipeline.embedded import verify_corpus
    from eceb_worker.pipeline.inputs import load_registry

    path = Path(params["registry"])
    spec = StorageSpec(source=params["files"])
    executor = InProcessExecutor(params["workers"])
    registry = load_registry(path)
    report = verify_corpus(registry, spec, executor=executor)  # warm-up: page cache, imports, BLAKE3 pool
    encoded = encode_verification(report)
    samples: list[dict[str, Any]] = []
    for shard_bytes in params["sequence"]:
        before = _rusage()
        started = time.perf_counter()
        registry = load_registry(path)
        loaded = time.perf_counter()
        report = verify_corpus(registry, spec, executor=executor, shard_bytes=shard_bytes)
        seconds = time.perf_counter() - started
        after = _rusage()
        if not report.ok or report.verified_count != len(registry.artifacts):
            raise RuntimeError(f"verification failed: {len(report.findings)} findings")
        if encode_verification(report) != encoded:
            raise RuntimeError(f"the verification report at {shard_bytes:,}-byte shards differs from the first")
        samples.append(
            {
                "shard_bytes": shard_bytes,
                "seconds": seconds,
                "load_seconds": loaded - started,
                "shards": len(plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes)),
                "cpu_self": after[0] - before[0],
                "cpu_helpers": after[1] - before[1],
            }
        )
    print(json.dumps({"samples": samples, "verification": encoded.decode()}))


def _rusage() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


# --------------------------------------------------------------------------- measurements (parent)


@dataclass
class Sample:
    """One timed run: wall seconds, units handed out (shards in-process, shard
    tasks on the cluster), CPU seconds by process, and the seconds spent
    reading and checking the registry (in-process only)."""

    seconds: float
    shards: int
    cpu: dict[str, float] = field(default_factory=dict)
    load_seconds: float | None = None
    job_id: str = ""
    """On the cluster: the job's id, which its workers' log lines name."""
    submitted: float = 0.0
    """On the cluster: when the job was submitted (``time.time()``, seconds)."""


@dataclass
class Config:
    """One executor set-up: its shard size and samples per kind of run (``default``, ``tiny``)."""

    name: str
    label: str
    shard_bytes: dict[str, int]
    samples: dict[str, list[Sample]] = field(default_factory=dict)

    def add(self, kind: str, sample: Sample) -> None:
        self.samples.setdefault(kind, []).append(sample)

    def best(self, kind: str) -> Sample | None:
        found = self.samples.get(kind)
        return min(found, key=lambda s: s.seconds) if found else None

    def seconds_range(self, kind: str) -> tuple[float, float] | None:
        found = self.samples.get(kind)
        return (min(s.seconds for s in found), max(s.seconds for s in found)) if found else None

    def median(self, kind: str) -> float | None:
        found = self.samples.get(kind)
        return statistics.median(s.seconds for s in found) if found else None

    def median_load(self, kind: str) -> float | None:
        found = [s.load_seconds for s in self.samples.get(kind, []) if s.load_seconds is not None]
        return statistics.median(found) if found else None

    def mean_cpu(self, kind: str) -> dict[str, float]:
        found = self.samples.get(kind) or []
        keys = {k for s in found for k in s.cpu}
        return {k: statistics.fmean(s.cpu.get(k, 0.0) for s in found) for k in sorted(keys)}


def run_inprocess(
    corpus: SyntheticCorpus, workers: int, cpu: int | None, sequence: list[str], shard_bytes: dict[str, int]
) -> tuple[list[tuple[str, Sample]], str]:
    """``(kind, sample)`` of each timed run, from a fresh subprocess (see
    :func:`inprocess_child`), and the verification report it printed."""
    params = {
        "registry": str(corpus.registry),
        "files": str(corpus.files),
        "workers": workers,
        "cpu": cpu,
        "sequence": [shard_bytes[kind] for kind in sequence],
    }
    done = subprocess.run(
        [sys.executable, __file__, "--inprocess-child", json.dumps(params)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    found = json.loads(done.stdout)
    samples = [
        (
            kind,
            Sample(
                s["seconds"],
                s["shards"],
                {"in-process": s["cpu_self"], "helpers": s["cpu_helpers"]},
                s["load_seconds"],
            ),
        )
        for kind, s in zip(sequence, found["samples"], strict=True)
    ]
    return samples, found["verification"]


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
    """CPU seconds so far of this process (the submitter: submitting, polling),
    Redis, and the workers' main and pool processes (a pool process replaced
    meanwhile is counted through its parent's reaped-children times). The
    job's coordinating steps run in the pool processes."""

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
            "submitter": time.process_time(),
            "redis": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
            "worker main": main,
            "worker pool": pool,
        }

    def settled(self) -> dict[str, float]:
        """:meth:`read`, once the workers and Redis are idle: the last
        acknowledgements and result writes of a job land after its state says
        ``done``. Idle means the workers' CPU times unchanged over ``SETTLE_S``
        (at most ``SETTLE_MAX_S``; Redis's change with every reading); this
        is outside the timed interval."""
        deadline = time.perf_counter() + SETTLE_MAX_S
        last = self.read()
        while time.perf_counter() < deadline:
            time.sleep(SETTLE_S)
            now = self.read()
            if all(now[k] == last[k] for k in ("worker main", "worker pool")):
                return now
            last = now
        return last


@dataclass
class ClusterRun:
    """What a timed job needs: the cluster client, the corpus and registry, the meter."""

    cluster: Any
    registry: str
    files: str
    meter: CpuMeter
    expected: str | None = None
    """The in-process verification report, once known; every job's must equal it."""
    reports: list[str] = field(default_factory=list)


def run_job(run: ClusterRun, shard_bytes: int) -> Sample:
    """Submit one verification job (as ``eceb-dist verify`` does) and time it
    from submission until its state reaches ``done``."""
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage

    message = JobMessage(
        job_id=uuid.uuid4().hex,
        kind=JobKind.VERIFY,
        inputs=JobInputs(registry=run.registry),
        corpus=StorageSpec(source=run.files),
        shard_bytes=shard_bytes,
    )
    store = run.cluster.store
    before = run.meter.read()
    submitted = time.time()
    started = time.perf_counter()
    run.cluster.submit(message, created=int(time.time()), corpus=run.files, out="", registry=run.registry)
    deadline = started + JOB_TIMEOUT_S
    while not store.finished(message.job_id):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"job {message.job_id} did not end within {JOB_TIMEOUT_S} s")
        time.sleep(POLL_S)
    seconds = time.perf_counter() - started
    after = run.meter.settled()
    state = store.get(message.job_id) or {}
    if state.get("phase") != "done":
        failures = store.failures(message.job_id)
        raise RuntimeError(f"job {message.job_id} ended {state.get('phase')}: {state.get('error')} {failures[:3]}")
    report = state.get("verification", "")
    if state.get("verified") != "1":
        raise RuntimeError(f"the corpus did not verify on the cluster: {report[:2000]}")
    if run.expected is not None and report != run.expected:
        raise RuntimeError(f"the job's verification report differs from the in-process one:\n{report}\n{run.expected}")
    run.reports.append(report)
    cpu = {k: after[k] - before[k] for k in after}
    return Sample(seconds, int(state.get("rehash_total", "0")), cpu, job_id=message.job_id, submitted=submitted)


_TASK_LINE = re.compile(
    r"Task (?P<name>[\w.]+)\[(?P<id>[^\]]+)\] (?:(?P<received>received)|succeeded in (?P<run>[0-9.e+-]+)s)"
)


@dataclass
class TaskSpan:
    """One task of a job as its worker's log lines show it: the worker (its
    log file), the task's name, when it was received (seconds after the
    job's submission, milliseconds precision) and how long it ran."""

    worker: int
    name: str
    received: float
    runtime: float


def job_spans(log_paths: Sequence[Path], sample: Sample) -> list[TaskSpan]:
    """The tasks of the job ``sample`` timed, read from the workers' JSON log
    lines (``ECEB_LOG_FORMAT=json``: each names its job), in order of receipt."""
    found: dict[str, dict[str, Any]] = {}
    for worker, path in enumerate(log_paths, start=1):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            match = _TASK_LINE.search(record.get("message", ""))
            if record.get("job_id") != sample.job_id or match is None:
                continue
            entry = found.setdefault(match["id"], {"worker": worker, "name": match["name"]})
            if match["received"]:
                moment = datetime.datetime.fromisoformat(record["time"].replace("Z", "+00:00")).timestamp()
                entry["received"] = moment - sample.submitted
            else:
                entry["runtime"] = float(match["run"])
    spans = [TaskSpan(e["worker"], e["name"], e["received"], e["runtime"]) for e in found.values() if len(e) == 4]
    return sorted(spans, key=lambda span: span.received)


@dataclass
class Timeline:
    """Where a job's time went: ``alone`` is a job on one worker, ``both`` the
    same job on two, each with its wall time and its tasks' spans."""

    alone: Sample
    alone_spans: list[TaskSpan]
    both: Sample
    both_spans: list[TaskSpan]


@contextlib.contextmanager
def celery_worker(broker_url: str, cpu: int | None, log_dir: Path) -> Iterator[Any]:
    """One worker process (``--concurrency 1``) from ``tests/support/redis_server.py``,
    started while this thread is pinned to ``cpu`` so that the worker and its
    pool process inherit the pinning."""
    import pytest

    from tests.support.redis_server import celery_workers

    previous = os.sched_getaffinity(0)
    with contextlib.ExitStack() as stack:
        try:
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
            # JSON log lines name each task's job: the timeline reads them.
            running = stack.enter_context(celery_workers(broker_url, 1, log_dir, env={"ECEB_LOG_FORMAT": "json"}))
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
    files: int
    total_bytes: int
    cache_before: str
    cache_after: str
    pinning: list[str]
    reports: int
    wall_seconds: float
    timeline: Timeline | None = None


def throughput(args: argparse.Namespace, corpus: SyntheticCorpus) -> Throughput:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # tests/support/redis_server.py starts redis-server and the workers
    import redis

    from eceb_worker.cluster.client import Cluster
    from eceb_worker.pipeline.inputs import load_registry
    from tests.support.redis_server import running_redis

    started = time.perf_counter()
    registry = load_registry(corpus.registry)
    total = sum(a.size_bytes for a in registry.artifacts)
    # The kind of each timed run of a configuration in a round: default and tiny in turn.
    sequence = [
        kind
        for i in range(max(args.runs, args.tiny_runs))
        for kind, count in zip(KINDS, (args.runs, args.tiny_runs), strict=True)
        if i < count
    ]
    allowed = sorted(os.sched_getaffinity(0))
    cpus: list[int | None] = [None, None]
    if not args.no_pin:
        if len(allowed) < 2:
            log("fewer than 2 CPUs available: workers are not pinned")
        else:
            cpus = [allowed[0], allowed[1]]
    inprocess = {"default": DEFAULT_SHARD_BYTES, "tiny": args.tiny_shard_bytes}
    job = {"default": DEFAULT_TASK_BYTES, "tiny": args.tiny_shard_bytes}
    configs = {
        "ip": Config("ip", f"in-process, {len(allowed)} workers (eceb corpus verify)", inprocess),
        "ip1": Config("ip1", f"in-process, 1 worker, pinned to CPU {allowed[0]}", inprocess),
        "c1": Config("c1", "job, 1 worker" + (f" (CPU {cpus[0]})" if cpus[0] is not None else ""), job),
        "c2": Config("c2", "job, 2 workers" + (f" (CPUs {cpus[0]}, {cpus[1]})" if cpus[1] is not None else ""), job),
    }
    cache_before = ""
    pinning: list[str] = []
    timeline = None
    with (
        tempfile.TemporaryDirectory(prefix="services-", dir=args.data_dir) as scratch,
        running_redis(Path(scratch)) as server,
    ):
        url = server.url()
        client = redis.Redis.from_url(url)
        cluster = Cluster(url, url)
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
                run = ClusterRun(cluster, str(corpus.registry), str(corpus.files), CpuMeter(client, [first, second]))
                for kind in KINDS:  # warm-up, both workers: imports, storage adapters, page cache
                    run_job(run, job[kind])
                cache_before = page_cache(corpus, registry)
                for round_number in range(1, args.rounds + 1):
                    log(f"[round {round_number}/{args.rounds}] in-process executor, {len(allowed)} workers ...")
                    samples, report = run_inprocess(corpus, len(allowed), None, sequence, inprocess)
                    for kind, sample in samples:
                        configs["ip"].add(kind, sample)
                    if run.expected is None:
                        run.expected = report
                        differing = [r for r in run.reports if r != report]
                        if differing:
                            raise RuntimeError(
                                f"a warm-up job's verification report differs from the in-process one:\n"
                                f"{differing[0]}\n{report}"
                            )
                    elif report != run.expected:
                        raise RuntimeError("the in-process verification report changed between rounds")
                    log(f"[round {round_number}/{args.rounds}] in-process executor, 1 worker, pinned ...")
                    samples, report = run_inprocess(corpus, 1, allowed[0], sequence, inprocess)
                    if report != run.expected:
                        raise RuntimeError("the pinned in-process verification report differs from the other")
                    for kind, sample in samples:
                        configs["ip1"].add(kind, sample)
                    log(f"[round {round_number}/{args.rounds}] verification jobs, 1 and 2 workers in turn ...")
                    for kind in sequence:
                        for workers in (1, 2):
                            consuming(cluster.app, second.names[0], on=workers == 2)
                            configs[f"c{workers}"].add(kind, run_job(run, job[kind]))
                    bests = {name: config.best("default") for name, config in configs.items()}
                    shown = ", ".join(f"{name} {best.seconds:.3f}" for name, best in bests.items() if best)
                    log(f"[round {round_number}/{args.rounds}]   best so far, default shards (s): {shown}")
                log("[timeline] one more job on 1 worker and on 2, read from the workers' log lines ...")
                logs = (*first.log_paths, *second.log_paths)
                consuming(cluster.app, second.names[0], on=False)
                alone = run_job(run, job["default"])
                consuming(cluster.app, second.names[0], on=True)
                both = run_job(run, job["default"])
                time.sleep(0.5)  # the last lines reach the log files
                timeline = Timeline(alone, job_spans(logs, alone), both, job_spans(logs, both))
        finally:
            client.close()
            cluster.app.close()
    return Throughput(
        configs=configs,
        files=len(registry.artifacts),
        total_bytes=total,
        cache_before=cache_before,
        cache_after=page_cache(corpus, registry),
        pinning=pinning,
        reports=len(run.reports),
        wall_seconds=time.perf_counter() - started,
        timeline=timeline,
    )


def coordinator(args: argparse.Namespace, counts: list[int]) -> list[dict[str, Any]]:
    """Figures of the coordinating steps for each count (``benchmarks/coordinator_memory.py``,
    each case in a fresh interpreter): the coordinator as it runs now, and the
    registry held whole (``check_inputs`` keeping every artifact) for comparison."""
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


def _size(shard_bytes: int) -> str:
    return f"{shard_bytes // MIB} MiB" if shard_bytes % MIB == 0 else f"{shard_bytes // 1024} KiB"


def report_throughput(result: Throughput, args: argparse.Namespace) -> list[bool]:
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
        f"best kept; jobs from submission to state done, polled every {POLL_S * 1000:g} ms; "
        f"phase wall time {result.wall_seconds:.0f} s"
    )
    print(
        f"reports: the verification reports of all {result.reports} jobs (warm-up included) and of the "
        "in-process runs are identical"
    )
    print()
    header = (
        f"{'executor':<44} {'shard size':>10} {'tasks':>7} {'best s':>7} {'median':>7} {'range s':>13} "
        f"{'MB/s':>7} {'files/s':>8}"
    )
    print(header)
    print("-" * len(header))
    for config in configs.values():
        for kind in KINDS:
            best = config.best(kind)
            span = config.seconds_range(kind)
            median = config.median(kind)
            if best is None or span is None or median is None:
                continue
            print(
                f"{config.label:<44} {_size(config.shard_bytes[kind]):>10} {best.shards:>7,} {best.seconds:>7.3f} "
                f"{median:>7.3f} {span[0]:>6.3f}-{span[1]:<6.3f} {mb / best.seconds:>7,.0f} "
                f"{result.files / best.seconds:>8,.0f}"
            )
    print()
    print(
        "tasks: shards in-process; on the cluster, the job's re-hash shard tasks (plus eceb.coordinate "
        "and eceb.job_verified)"
    )
    for name in ("ip", "ip1"):
        load = configs[name].median_load("default")
        if load is not None:
            print(f"{configs[name].label}: of which reading and checking the registry, median {_ms(load)}")
    print()
    verdicts: list[bool] = []
    c1, c2, ip, ip1 = (configs[n].best("default") for n in ("c1", "c2", "ip", "ip1"))
    medians = {n: configs[n].median("default") or float("nan") for n in configs}
    if c1 and c2:
        speedup = c1.seconds / c2.seconds
        verdicts.append(speedup >= TARGET_SPEEDUP)
        print(
            f"speedup, 2 workers over 1 (default shards):       {speedup:.2f}x   target >= {TARGET_SPEEDUP}x   "
            f"{'met' if verdicts[-1] else 'NOT met'}   (medians: {medians['c1'] / medians['c2']:.2f}x)"
        )
    if c2 and ip:
        ratio = ip.seconds / c2.seconds
        verdicts.append(ratio >= TARGET_JOB_RATIO)
        print(
            f"job (2 workers) / in-process speed (default):     {ratio:.2f}x   target >= {TARGET_JOB_RATIO}x  "
            f"{'met' if verdicts[-1] else 'NOT met'}   (medians: {medians['ip'] / medians['c2']:.2f}x)"
        )
    if c1 and ip1:
        print(
            f"job 1 worker / in-process 1 pinned worker:        {ip1.seconds / c1.seconds:.2f}x"
            f"                            (medians: {medians['ip1'] / medians['c1']:.2f}x)"
        )
    if c1:
        print(
            f"one task on one worker (default):                {_ms(c1.seconds / c1.shards)} on average "
            f"({result.total_bytes / c1.shards / MIB:.1f} MiB of files a task)"
        )
    if result.timeline is not None:
        report_timeline(result.timeline)
    print()
    print("per-task overhead (tiny shards vs default shards: extra time / extra tasks)")
    for name in ("c1", "c2", "ip1", "ip"):
        config = configs[name]
        small, big = config.best("tiny"), config.best("default")
        if small is None or big is None or small.shards == big.shards:
            continue
        extra = small.shards - big.shards
        cpu_small, cpu_big = config.mean_cpu("tiny"), config.mean_cpu("default")
        parts = ", ".join(f"{k} {_ms((cpu_small[k] - cpu_big.get(k, 0.0)) / extra)}" for k in cpu_small)
        print(
            f"  {config.label:<44} wall {_ms((small.seconds - big.seconds) / extra)} per task "
            f"({extra:,} extra tasks); CPU per task: {parts}"
        )
    return verdicts


def report_timeline(timeline: Timeline) -> None:
    """Where one job's time went on 2 workers, against the same job on 1, from
    the workers' log lines (each task's receipt, to the millisecond, and its
    run time), and the least time 2 workers could take with that serial part
    and those shards. Prints nothing when a log line is missing."""
    alone = [span for span in timeline.alone_spans if span.name == "eceb.job_rehash_shard"]
    both = [span for span in timeline.both_spans if span.name == "eceb.job_rehash_shard"]
    coordinating = [span for span in timeline.both_spans if span.name == "eceb.coordinate"]
    if not alone or not both or not coordinating:
        print("timeline: the workers' log lines do not name every task of the job; no breakdown")
        return
    first_shard = min(span.received for span in both)
    last_end = max(span.received + span.runtime for span in both)
    wall = timeline.both.seconds
    gaps = []
    for worker in {span.worker for span in both}:
        own = sorted((s for s in both if s.worker == worker), key=lambda s: s.received)
        gaps += [b.received - (a.received + a.runtime) for a, b in itertools.pairwise(own)]
    work_alone = sum(span.runtime for span in alone)
    work_both = sum(span.runtime for span in both)
    serial = first_shard + (wall - last_end)
    gap = statistics.fmean(gaps) if gaps else 0.0
    per_worker = max(len(both) - len(both) // 2, 1)
    floor = serial + work_alone / 2 + gap * (per_worker - 1)
    print()
    print(f"where one job's time goes (default shards; workers' log lines, ms precision; {len(both)} shard tasks)")
    print(f"  submission until the coordinating task is received:   {_ms(coordinating[0].received)}")
    print(f"  coordinating (scan and check the registry, plan, chord): {_ms(coordinating[0].runtime)}")
    print(f"  submission until the first shard is received:          {_ms(first_shard)}")
    print(f"  the last shard's end until the job reads done:         {_ms(wall - last_end)}")
    print(
        f"  shard run time, 1 worker alone: {_ms(work_alone)} in all, {_ms(work_alone / len(alone))} a shard; "
        f"2 workers: {_ms(work_both)} in all ({work_both / work_alone - 1:+.0%})"
    )
    print(f"  between two shards of one worker (acknowledge, fetch the next): {_ms(gap)} on average")
    print(
        f"  least time on 2 workers with that serial part, the shards split evenly at their 1-worker time: "
        f"{_ms(floor)}, {timeline.alone.seconds / floor:.2f}x this run's 1-worker job ({_ms(timeline.alone.seconds)});"
        f" measured {_ms(wall)}, {timeline.alone.seconds / wall:.2f}x"
    )


def report_coordinator(found: list[dict[str, Any]]) -> list[bool]:
    verdicts: list[bool] = []
    titles = {
        "coordinator": "eceb.coordinate, eceb.job_verified, eceb.job_finish as they run now",
        "whole": "for comparison: the registry held whole (check_inputs keeping every artifact)",
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
    print("Scale benchmark: in-process re-hashing vs a verification job on Celery workers; coordinator memory")
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
