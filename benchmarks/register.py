"""Registering a corpus: ``eceb corpus register`` against ``eceb-dist register`` on 1 and 2 workers, incremental
registration, and the coordinator's memory at 10M listed objects.

Usage::

    python benchmarks/register.py [--objects 100000] [--prefixes 300] [--object-bytes 4096]
        [--changed-permille 10] [--local-workers 1] [--rounds 1] [--listed 10000000]
        [--only full,incremental,coordinator] [--upload backend|threads] [--coordinator-upload moto|none]
        [--data-dir DIR] [--json PATH] [--keep]

    python benchmarks/register.py                                   # about 30 minutes on 2 cores
    python benchmarks/register.py --objects 3000 --listed 200000     # a smoke run: about two minutes

Everything runs against services started here on 127.0.0.1 and stopped at
the end: moto's S3 server (server mode), ``redis-server`` and two Celery
workers (``tests/support/redis_server.py``: prefork, one pool process each,
16 object reads in flight per process, eceb's default). Nothing is pinned:
the machine has 2 cores, which moto, the workers and Redis share (and,
on a shared machine, other jobs).

The corpus. ``--objects`` objects of ``--object-bytes`` (different bytes
each, BLAKE3's extendable output of the object's number) under
``s3://eceb-register-corpus/corpus/``, spread over ``--prefixes`` key
prefixes (``corpus/pNNN/fNNNNNN.md``). Registries and the jobs' partials go
to another bucket, ``eceb-register-out`` (moto answers each listing page in
time that grows with every key of the bucket, so the outputs are kept out
of the corpus's). ``--upload backend`` (the default) seeds the objects
through moto's own backend inside the server process, before it answers:
the server is moto's ``ThreadedMotoServer`` (its documented in-process
server mode, the same WSGI application, request handler and threading as
``python -m moto.server``) and each object is created by the backend call
its PutObject handler makes (``S3Backend.put_object``: the same key, ETag,
size and LastModified a PUT would give), 100,000 objects in a few seconds
instead of minutes of HTTP PUTs. ``--upload threads`` PUTs them over HTTP
from 32 threads instead.

Full registration, timed in turn, each from the start of its command to its
registry (every one a fresh process, as a user runs it):

* ``eceb corpus register s3://... --workers 1`` (one process, its default
  concurrency of 16 reads in flight): ``--local-workers`` sets the
  processes;
* ``eceb-dist register s3://... --out s3://...`` (the command line, then the
  job's state in Redis read every 20 ms until ``done``) on 1 worker, then
  on 2 (the second worker consumes the queue only for that run: Celery's
  remote control); the job's phases (listing, hashing, writing) are timed
  from those readings.

``--rounds N`` runs the three in turn N times and keeps the best of each.
Each registry must be byte-identical to the first (checked). Reported:
seconds, objects a second, the CPU seconds moto's process and the
registering processes spent (``/proc``), and moto's share of one core
(moto is one Python interpreter: about one core at most). Two probes
first bound what any client gets from this server: one sequential
ListObjectsV2 pagination of the corpus prefix (pages of 1,000 keys: what a
listing costs here), and GETs of every 20th object through eceb's own
reader (``S3Storage.hash_artifacts``, 16 in flight: what hashing costs).

Incremental. ``--changed-permille`` of the objects (every 100th with the
default 10) are rewritten with other bytes of the same size (HTTP PUTs:
new ETags and LastModified), then ``eceb corpus register --previous`` the
first local registry (its listing snapshot beside it) and a full ``eceb
corpus register`` of the same objects are timed; the two registries must be
byte-identical, and the incremental must have hashed exactly the objects
rewritten. When ``eceb-dist register`` has ``--previous`` (read from its
``--help``), the same on 2 workers: ``eceb-dist register --previous`` the
2-worker registry of the full registrations (its listing snapshot beside
it), then a full ``eceb-dist register`` of the same objects; both must be
the bytes of ``eceb corpus register``'s, the incremental reusing exactly
the digests of the objects not rewritten.

Coordinator memory (``--listed``, default 10,000,000 listed objects, no
object stored): the coordinating steps of the cluster job, as
``eceb_worker/cluster/tasks.py`` runs them (``Job.start``, then
``Job.after`` of the listing and of the hashing, each from the job message
as it travels, JSON-encoded and decoded), in a fresh interpreter that first
imports what a worker's pool process holds (Celery, the tasks). Only
storage is simulated: the listing plan's delimiter listings are answered
by an in-process stand-in for the S3 client (``--prefixes`` key prefixes,
the plan ``eceb_worker.io.s3_listing.plan_listing`` makes of them), the
listing shards' answers are made beforehand by another process (each
listing shard's rows cut into pieces by the job's ``PieceCutter``), written
as the JSON Redis holds and read back as ``work.answers`` returns them;
the hash shards' answers likewise; and each hash shard's partial, when the
merge downloads it, is made from its rows (canonical registry lines of
artifacts of ``--object-bytes``, paths ``pNNN/fNNNNNNNN.md``). The merge
(``finish_registration``: the partials downloaded four at a time into one
local run per listing shard, merged, the corpus root hashed, the header
written last) runs as on a worker, and the registry it writes is uploaded
to moto through ``ObjectStore.put_file_atomic`` (``--coordinator-upload
none``: not uploaded). The peak resident memory is ``VmHWM`` of that
process (``/proc/self/status``), read after each step; target <= 256 MiB.
For comparison, the largest listing shard of that plan runs in another
fresh process as a worker runs it (``list_shard`` over the simulated
listing: its rows checked, classified, sorted and written; the partial's
upload dropped): a worker's pool process may run shards and coordinating
steps in turn, and its resident memory is the larger of the two.

Targets: 2 workers >= 1.8x one worker; one worker within 1.2x of ``eceb
corpus register``; incremental >= 20x a full registration; the coordinator
<= 256 MiB at 10M listed objects. Measures and reports; exits 0 whether or
not a target is met (a registry that differs, or a job that fails, is an
error: exit 1). ``--json`` writes the figures. MB = 10^6 bytes; MiB = 2^20.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests/support starts redis-server and the workers

MIB = 1024 * 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")
LOOPBACK = "127.0.0.1"
REGION = "us-east-1"
CORPUS_BUCKET = "eceb-register-corpus"
OUT_BUCKET = "eceb-register-out"
KEY_PREFIX = "corpus"
TARGET_SPEEDUP = 1.8
TARGET_ONE_WORKER = 1.2
TARGET_INCREMENTAL = 20.0
TARGET_COORDINATOR_MIB = 256
POLL_S = 0.02
JOB_TIMEOUT_S = 7200
PROBE_EVERY = 20
"""The GET probe reads every 20th object."""
RULES = """schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "p0*/**"
kind = "code"
classification = "internal"

[[rule]]
glob = "**"
kind = "runbook"
classification = "confidential"
"""
SECTIONS = ("full", "incremental", "coordinator")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Corpus:
    """The objects: ``objects`` of ``object_bytes`` each, spread over ``prefixes`` key prefixes."""

    objects: int
    prefixes: int
    object_bytes: int

    def path(self, index: int) -> str:
        width = len(str(max(self.objects - 1, 0)))
        return f"p{index % self.prefixes:03d}/f{index:0{width}d}.md"

    def key(self, index: int) -> str:
        return f"{KEY_PREFIX}/{self.path(index)}"

    def body(self, index: int, generation: int) -> bytes:
        import blake3

        return blake3.blake3(b"eceb-register:%d:%d" % (generation, index)).digest(length=self.object_bytes)

    def changed(self, permille: int) -> range:
        """The objects rewritten by the incremental section: every ``1000 // permille``-th."""
        return range(0, self.objects, max(1, 1000 // permille)) if permille else range(0)


# --------------------------------------------------------------------------- moto's server (a child process)


def serve_moto(params: dict[str, Any]) -> None:
    """The server process: moto's ``ThreadedMotoServer`` on 127.0.0.1 (a free
    port), the buckets created and the corpus seeded through moto's backend;
    prints ``{"port", "seeded_s"}`` once it answers, and serves until its
    standard input closes."""
    from moto.backends import get_backend
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    backend = get_backend("s3")[DEFAULT_ACCOUNT_ID]["aws"]
    for name in (CORPUS_BUCKET, OUT_BUCKET):
        backend.create_bucket(name, REGION)
    corpus = Corpus(**params["corpus"])
    started = time.perf_counter()
    if params["seed"]:
        for index in range(corpus.objects):
            backend.put_object(CORPUS_BUCKET, corpus.key(index), corpus.body(index, 0))
    seeded_s = time.perf_counter() - started
    # What one listing page costs moto's backend alone (no HTTP, no XML): it
    # scans and sorts every key of the bucket for every page it answers.
    bucket = backend.get_bucket(CORPUS_BUCKET)
    clock = time.perf_counter()
    for _ in range(3):
        backend.list_objects_v2(bucket, f"{KEY_PREFIX}/", None, None, None, 1000)
    page_s = (time.perf_counter() - clock) / 3
    print(json.dumps({"port": port, "seeded_s": seeded_s, "backend_page_s": page_s}), flush=True)
    sys.stdin.read()
    server.stop()


@dataclass(frozen=True)
class Moto:
    endpoint: str
    pid: int
    seeded_s: float
    backend_page_s: float
    """What moto's backend alone spends on one listing page of the corpus prefix."""


@contextlib.contextmanager
def moto_server(log_path: Path, corpus: Corpus, *, seed: bool) -> Iterator[Moto]:
    """Run :func:`serve_moto` in a child process until the block ends."""
    params = {"corpus": corpus.__dict__, "seed": seed}
    with log_path.open("ab") as server_log:
        process = subprocess.Popen(
            [sys.executable, __file__, "--serve-moto", json.dumps(params)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=server_log,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"moto's server did not start; see {log_path}")
        ready = json.loads(line)
        yield Moto(f"http://{LOOPBACK}:{ready['port']}", process.pid, ready["seeded_s"], ready["backend_page_s"])
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def fake_credentials() -> None:
    """The loopback server's fake credentials in this process's environment
    (inherited by every command and worker started here), and no proxy for it."""
    from tests.support.s3_server import _ENVIRONMENT

    for name, value in _ENVIRONMENT.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.environ["NO_PROXY"] = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), LOOPBACK, "localhost"]))


def s3_client(endpoint: str, connections: int = 32) -> Any:
    import boto3
    import botocore.config

    config = botocore.config.Config(s3={"addressing_style": "path"}, max_pool_connections=connections)
    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name=REGION, config=config)


def put_objects(endpoint: str, corpus: Corpus, indices: Sequence[int], generation: int, threads: int = 32) -> float:
    """PUT the objects ``indices`` (bytes of ``generation``) over HTTP from
    ``threads`` threads; the seconds it took."""
    client = s3_client(endpoint, threads)

    def put(index: int) -> None:
        client.put_object(Bucket=CORPUS_BUCKET, Key=corpus.key(index), Body=corpus.body(index, generation))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put, indices))
    return time.perf_counter() - started


# --------------------------------------------------------------------------- CPU meters


def process_cpu(pid: int) -> tuple[float, float]:
    """(own CPU seconds, CPU seconds of its reaped children) of ``pid``; zeros when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0, 0.0
    fields = text[text.rindex(")") + 2 :].split()
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime) / CLK_TCK, (cutime + cstime) / CLK_TCK


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """CPU seconds so far of moto's server, the workers (main and pool
    processes, pool processes replaced counted through their parent), and
    this process's reaped children (the commands run here)."""

    def __init__(self, moto_pid: int, workers: Sequence[Any] = ()) -> None:
        self.moto_pid = moto_pid
        self.workers = list(workers)

    def read(self) -> dict[str, float]:
        worker = 0.0
        for group in self.workers:
            for pid in group.pids:
                own, reaped = process_cpu(pid)
                worker += own + reaped
            for child in group.pool_processes():
                worker += process_cpu(child)[0]
        return {"moto": process_cpu(self.moto_pid)[0], "workers": worker, "commands": children_cpu()}


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before[name], 3) for name in after}


# --------------------------------------------------------------------------- timed runs


@dataclass
class Sample:
    """One timed registration."""

    name: str
    seconds: float
    cpu: dict[str, float]
    digest: str
    phases: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)
    """The machine's load average (one minute) when it started and ended."""
    out: str = ""
    """Where a job wrote its registry."""


@dataclass
class Context:
    args: argparse.Namespace
    corpus: Corpus
    moto: Moto
    rules: Path
    scratch: Path
    meter: Meter
    broker: str = ""
    redis: Any = None
    store: Any = None
    outputs: dict[str, bytes] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return f"s3://{CORPUS_BUCKET}/{KEY_PREFIX}"


def _digest(data: bytes) -> str:
    import blake3

    return blake3.blake3(data).hexdigest()


def run_local(context: Context, name: str, *, previous: Path | None = None) -> Sample:
    """Time ``eceb corpus register`` of the corpus into a local file."""
    out = context.scratch / f"{name}.jsonl"
    command = [
        sys.executable,
        "-m",
        "eceb_cli",
        "corpus",
        "register",
        context.source,
        "--rules",
        str(context.rules),
        "-o",
        str(out),
        "--endpoint-url",
        context.moto.endpoint,
        "--workers",
        str(context.args.local_workers),
        "--json",
    ]
    if previous is not None:
        command += ["--previous", str(previous)]
    log(f"[{name}] {' '.join(command[2:5])} ... -o {out.name}" + (f" --previous {previous.name}" if previous else ""))
    before = context.meter.read()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    cpu = spent(before, context.meter.read())
    if done.returncode != 0:
        raise RuntimeError(f"eceb corpus register exited {done.returncode}:\n{done.stderr[-3000:]}")
    data = out.read_bytes()
    context.outputs[name] = data
    counts = json.loads(done.stdout)
    log(f"[{name}] {seconds:.1f} s, {counts['artifact_count']:,} artifacts")
    return Sample(name, seconds, cpu, _digest(data), counts=counts, load=(load, os.getloadavg()[0]))


def dist_has_previous() -> bool:
    """Whether ``eceb-dist register`` takes ``--previous`` (its ``--help``)."""
    done = subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", "register", "--help"], capture_output=True, text=True, check=False
    )
    return "--previous" in done.stdout


def run_dist(context: Context, name: str, *, previous: str | None = None) -> Sample:
    """Time ``eceb-dist register`` from its command line to the job's state
    ``done``, reading the phase every :data:`POLL_S`; fetch the registry."""
    from eceb_worker.cluster.job_record import job_key

    out = f"s3://{OUT_BUCKET}/{name}-{uuid.uuid4().hex[:8]}/registry.jsonl"
    command = [sys.executable, "-m", "eceb_cli.dist", "register", context.source, "--rules", str(context.rules)]
    command += ["--out", out, *(["--previous", previous] if previous else [])]
    env = {**os.environ, "ECEB_BROKER_URL": context.broker, "ECEB_S3_ENDPOINT_URL": context.moto.endpoint}
    env.pop("ECEB_RESULT_BACKEND", None)
    log(f"[{name}] eceb-dist register ... --out {out}" + (f" --previous {previous}" if previous else ""))
    before = context.meter.read()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"eceb-dist register exited {done.returncode}:\n{done.stderr[-3000:]}")
    job_id = done.stdout.strip()
    phases = [{"phase": "submitted", "at": time.perf_counter() - started, "cpu": spent(before, context.meter.read())}]
    key = job_key(job_id)
    last = ""
    while True:
        raw = context.redis.hget(key, "phase")
        phase = raw.decode() if raw else "unknown"
        if phase != last:
            phases.append(
                {"phase": phase, "at": time.perf_counter() - started, "cpu": spent(before, context.meter.read())}
            )
            last = phase
        if phase in ("done", "failed", "cancelled", "unknown"):
            break
        if time.perf_counter() - started > JOB_TIMEOUT_S:
            raise RuntimeError(f"job {job_id} did not end within {JOB_TIMEOUT_S} s")
        time.sleep(POLL_S)
    seconds = time.perf_counter() - started
    cpu = spent(before, context.meter.read())
    state = context.store.get(job_id)
    if last != "done" or state is None:
        failures = context.store.failures(job_id)[:3]
        problems = (state.problems or [])[:5] if state is not None else []
        error = state.error if state is not None else ""
        raise RuntimeError(f"job {job_id} ended {last}: {error} {problems} {failures}")
    bucket, _, object_key = out.removeprefix("s3://").partition("/")
    data = s3_client(context.moto.endpoint).get_object(Bucket=bucket, Key=object_key)["Body"].read()
    context.outputs[name] = data
    record = context.redis.hgetall(key)
    counts = {
        field_name: int(record[field_name.encode()])
        for field_name in ("list_total", "hash_total", "artifact_count", "reused")
        if field_name.encode() in record
    }
    log(f"[{name}] {seconds:.1f} s, {counts}")
    load_range = (load, os.getloadavg()[0])
    return Sample(name, seconds, cpu, _digest(data), phases=phases, counts=counts, load=load_range, out=out)


def consuming(app: Any, worker: str, *, on: bool) -> None:
    """Make ``worker`` consume eceb's queue, or stop consuming it (Celery's remote control)."""
    from eceb_worker.cluster.app import QUEUE

    control = app.control.add_consumer if on else app.control.cancel_consumer
    if not control(QUEUE, destination=[worker], reply=True, timeout=10):
        raise RuntimeError(f"worker {worker} did not answer {'add' if on else 'cancel'}_consumer")


# --------------------------------------------------------------------------- probes


def probe_listing(context: Context) -> dict[str, Any]:
    """One sequential ListObjectsV2 pagination of the corpus prefix (pages of 1,000)."""
    client = s3_client(context.moto.endpoint)
    moto_before = process_cpu(context.moto.pid)[0]
    started = time.perf_counter()
    pages = keys = 0
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=CORPUS_BUCKET, Prefix=f"{KEY_PREFIX}/", PaginationConfig={"PageSize": 1000}
    ):
        pages += 1
        keys += len(page.get("Contents", []))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "pages": pages,
        "keys": keys,
        "moto_cpu": process_cpu(context.moto.pid)[0] - moto_before,
    }


def probe_gets(context: Context) -> dict[str, Any]:
    """GETs of every :data:`PROBE_EVERY`-th object through eceb's reader (16 in flight, this process)."""
    from eceb_worker.io.s3_corpus import S3Storage

    paths = [context.corpus.path(index) for index in range(0, context.corpus.objects, PROBE_EVERY)]
    storage = S3Storage(context.source, endpoint_url=context.moto.endpoint, concurrency=16)
    storage.hash_artifacts(paths[:64])  # connections, imports
    moto_before = process_cpu(context.moto.pid)[0]
    cpu_before = time.process_time()
    started = time.perf_counter()
    found = list(storage.hash_artifacts(paths))
    seconds = time.perf_counter() - started
    if any(not isinstance(result, tuple) for result in found):
        raise RuntimeError("a GET of the probe failed")
    return {
        "gets": len(paths),
        "seconds": seconds,
        "moto_cpu": process_cpu(context.moto.pid)[0] - moto_before,
        "client_cpu": time.process_time() - cpu_before,
    }


# --------------------------------------------------------------------------- the sections


def full_section(context: Context, workers: Sequence[Any], cluster: Any) -> dict[str, list[Sample]]:
    """``eceb corpus register``, then ``eceb-dist register`` on 1 and 2 workers,
    ``--rounds`` times in turn; every registry the same."""
    second = workers[1].names[0]
    found: dict[str, list[Sample]] = {"local": [], "one_worker": [], "two_workers": []}
    for number in range(1, context.args.rounds + 1):
        suffix = "" if number == 1 else f"-{number}"
        log(f"[round {number}/{context.args.rounds}]")
        found["local"].append(run_local(context, f"local{suffix}"))
        consuming(cluster.app, second, on=False)
        found["one_worker"].append(run_dist(context, f"one-worker{suffix}"))
        consuming(cluster.app, second, on=True)
        found["two_workers"].append(run_dist(context, f"two-workers{suffix}"))
    digests = {sample.digest for samples in found.values() for sample in samples}
    if len(digests) != 1:
        named = [(sample.name, sample.digest) for samples in found.values() for sample in samples]
        raise RuntimeError(f"the registries differ: {named}")
    return found


def incremental_section(
    context: Context, workers: Sequence[Any], cluster: Any, full: dict[str, list[Sample]] | None
) -> dict[str, Any]:
    """Rewrite some objects, then an incremental and a full registration of
    them (``eceb corpus register``; ``eceb-dist register`` on 2 workers too
    when it takes ``--previous``); the same bytes."""
    changed = context.corpus.changed(context.args.changed_permille)
    found: dict[str, Any] = {"dist_previous": bool(workers) and dist_has_previous()}
    if full is None:
        found["before"] = run_local(context, "local")
    previous_dist = ""
    if found["dist_previous"]:
        consuming(cluster.app, workers[1].names[0], on=True)
        previous_dist = full["two_workers"][0].out if full else run_dist(context, "dist-before").out
        if not previous_dist:
            raise RuntimeError("no registry of eceb-dist register to take as --previous")
    log(f"[incremental] rewriting {len(changed):,} objects with other bytes (HTTP PUTs) ...")
    found["rewrite_s"] = put_objects(context.moto.endpoint, context.corpus, changed, generation=1)
    found["changed"] = len(changed)
    found["incremental"] = run_local(context, "incremental", previous=context.scratch / "local.jsonl")
    found["full"] = run_local(context, "full-after-change")
    if found["incremental"].digest != found["full"].digest:
        raise RuntimeError("the incremental registry differs from the full registration of the same objects")
    if found["full"].digest == _digest(context.outputs["local"]) and changed:
        raise RuntimeError("the registry after the change equals the one before: nothing was changed")
    rehashed = found["incremental"].counts.get("rehashed")
    if rehashed != len(changed):
        raise RuntimeError(f"the incremental registration hashed {rehashed} objects, {len(changed)} were changed")
    if found["dist_previous"]:
        found["dist_incremental"] = run_dist(context, "dist-incremental", previous=previous_dist)
        found["dist_full"] = run_dist(context, "dist-full-after-change")
        for name in ("dist_incremental", "dist_full"):
            if found[name].digest != found["full"].digest:
                raise RuntimeError(f"the registry of {found[name].name} differs from eceb corpus register's")
        reused = found["dist_incremental"].counts.get("reused")
        if reused != context.corpus.objects - len(changed):
            raise RuntimeError(f"eceb-dist register --previous reused {reused} digests")
    return found


# --------------------------------------------------------------------------- coordinator memory (simulated storage)


@dataclass(frozen=True)
class Listed:
    """The simulated listing: ``objects`` of ``object_bytes`` under ``prefixes``
    key prefixes, object ``i`` at ``pNNN/fNNNNNNNN.md`` with ``NNN = i // per``,
    so that keys ascend with ``i``."""

    objects: int
    prefixes: int
    object_bytes: int

    @property
    def per(self) -> int:
        return -(-self.objects // self.prefixes)

    def path(self, index: int) -> str:
        return f"p{index // self.per:03d}/f{index:08d}.md"

    def key(self, index: int) -> str:
        return f"{KEY_PREFIX}/{self.path(index)}"

    def level(self, prefix: str) -> Iterator[tuple[str, str]]:
        """A delimiter listing's entries under ``prefix``: ``("prefix", p)`` or ``("key", k)``, in key order."""
        if prefix == f"{KEY_PREFIX}/":
            for number in range(-(-self.objects // self.per)):
                yield "prefix", f"{KEY_PREFIX}/p{number:03d}/"
            return
        number = int(prefix.rstrip("/").rsplit("/p", 1)[1])
        for index in range(number * self.per, min(self.objects, (number + 1) * self.per)):
            yield "key", self.key(index)

    def rows_of(self, after: str, until: str) -> range:
        """The objects ``i`` whose key is in ``(after, until]`` (``""``: unbounded)."""
        low = bisect.bisect_right(range(self.objects), after, key=self.key) if after else 0
        high = bisect.bisect_right(range(self.objects), until, key=self.key) if until else self.objects
        return range(low, high)


class _Paginator:
    def __init__(self, listed: Listed) -> None:
        self.listed = listed

    def paginate(self, **arguments: Any) -> Iterator[dict[str, Any]]:
        size = arguments.get("PaginationConfig", {}).get("PageSize", 1000)
        if arguments.get("Delimiter") is None:
            yield from self._range(arguments.get("StartAfter", ""), size)
            return
        entries = self.listed.level(arguments["Prefix"])
        page: list[tuple[str, str]] = []
        for entry in entries:
            page.append(entry)
            if len(page) == size:
                yield self._page(page, truncated=True)
                page = []
        yield self._page(page, truncated=False)

    def _range(self, after: str, size: int) -> Iterator[dict[str, Any]]:
        """A listing's pages from the key after ``after``, as ListObjectsV2 gives them."""
        listed = self.listed
        first = bisect.bisect_right(range(listed.objects), after, key=listed.key) if after else 0
        modified = datetime(2026, 1, 1, tzinfo=UTC)
        for start in range(first, listed.objects, size):
            end = min(start + size, listed.objects)
            contents = [
                {
                    "Key": listed.key(index),
                    "Size": listed.object_bytes,
                    "ETag": f'"{_digest_of(index)[:32]}"',
                    "LastModified": modified,
                }
                for index in range(start, end)
            ]
            yield {"Contents": contents, "IsTruncated": end < listed.objects}

    @staticmethod
    def _page(entries: list[tuple[str, str]], *, truncated: bool) -> dict[str, Any]:
        return {
            "CommonPrefixes": [{"Prefix": name} for kind, name in entries if kind == "prefix"],
            "Contents": [{"Key": name} for kind, name in entries if kind == "key"],
            "IsTruncated": truncated,
        }


class ListingClient:
    """Stands in for the S3 client of the simulated listing: answers the
    plan's delimiter listings and a listing shard's range listing of
    :class:`Listed`, and takes a partial's upload (its bytes dropped)."""

    def __init__(self, listed: Listed) -> None:
        self.listed = listed
        self.uploaded = 0

    def get_paginator(self, name: str) -> _Paginator:
        assert name == "list_objects_v2"
        return _Paginator(self.listed)

    def upload_file(self, filename: str, bucket: str, key: str) -> None:
        self.uploaded += Path(filename).stat().st_size


def _digest_of(index: int) -> str:
    return f"{(index * 0x9E3779B97F4A7C15 + 0x632BE5AB) % (1 << 256):064x}"


def listed_rows(listed: Listed, indices: range) -> bytes:
    """A listing shard's partial: its rows' lines, made a block at a time
    and joined, as a GET's body is read in chunks and joined."""
    return b"".join(listed_blocks(listed, indices))


def listed_blocks(listed: Listed, indices: range) -> Iterator[bytes]:
    """A listing shard's partial, a block of 10,000 rows' lines at a time."""
    from eceb_worker.corpus.registration import ListedRow, encode_rows

    modified = datetime(2026, 1, 1, tzinfo=UTC)
    for start in range(indices.start, indices.stop, 10_000):
        rows = [
            ListedRow(
                path=listed.path(index),
                size_bytes=listed.object_bytes,
                kind="code",
                classification="internal",
                etag=f'"{_digest_of(index)[:32]}"',
                last_modified=modified,
            )
            for index in range(start, min(start + 10_000, indices.stop))
        ]
        yield b"".join(encode_rows(rows))


def _partial_rows(url: str) -> tuple[str, range]:
    """A simulated partial's name (``STAGE-INDEX-x-FIRST-COUNT``) and the objects it holds."""
    name = url.rsplit("/", 1)[1].removesuffix(".jsonl")
    first, count = (int(part) for part in name.split("-")[3:5])
    return name, range(first, first + count)


class SimulatedStore:
    """The coordinator's object store: delimiter listings from :class:`ListingClient`;
    each hash shard's partial made when it is read; the registry uploaded to
    moto (or not)."""

    def __init__(self, listed: Listed, rules: Any, upload_endpoint: str | None) -> None:
        self.listed = listed
        self.client = ListingClient(listed)
        self.rules = rules
        self._upload_endpoint = upload_endpoint
        self.uploads: list[dict[str, Any]] = []
        """Each file handed over for upload: its name and size, the peak RSS then (MiB), the upload's seconds."""

    def get(self, url: str) -> tuple[bytes, str]:
        """A partial, made from the rows its name holds (``STAGE-INDEX-x-FIRST-COUNT.jsonl``):
        a hash shard's, the canonical lines of its artifacts; a listing shard's, its rows."""
        name, indices = _partial_rows(url)
        if name.startswith("list-"):
            return listed_rows(self.listed, indices), '"0"'
        return self._artifacts(indices), '"0"'

    def download(self, url: str, path: Path) -> None:
        """A listing shard's partial (see :meth:`get`) written to ``path`` a block at a
        time, as ``ObjectStore.download`` writes an object's stream."""
        with path.open("wb") as out:
            out.writelines(listed_blocks(self.listed, _partial_rows(url)[1]))

    def _artifacts(self, indices: range) -> bytes:
        from eceb_worker.core.canonical import canonical_lines
        from eceb_worker.corpus.artifacts import Artifact
        from eceb_worker.corpus.rules import classify_all

        paths = [self.listed.path(index) for index in indices]
        classified = classify_all(self.rules, paths, rules_name="rules.toml")[0]
        artifacts = [
            Artifact(
                artifact_id=item.path,
                path=item.path,
                kind=item.kind,
                classification=item.classification,
                source_digest=_digest_of(index),
                size_bytes=self.listed.object_bytes,
            )
            for index, item in zip(indices, classified, strict=True)
        ]
        return canonical_lines(artifacts)

    def put_file_atomic(self, url: str, path: Path) -> None:
        upload = {"name": url.rsplit("/", 1)[1], "bytes": path.stat().st_size, "peak_before_mib": _status_mib("VmHWM:")}
        started = time.perf_counter()
        if self._upload_endpoint is not None:
            from eceb_worker.io.objects import ObjectStore

            ObjectStore(self._upload_endpoint).put_file_atomic(url, path)
        upload["seconds"] = round(time.perf_counter() - started, 2)
        upload["peak_after_mib"] = _status_mib("VmHWM:")
        self.uploads.append(upload)


def _registration_message(params: dict[str, Any]) -> Any:
    """The job message ``eceb-dist register`` sends for the simulated corpus
    (the fields ``eceb_cli.dist_register.registration_message`` sets; built
    here so that the measured process imports no command line)."""
    from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.io.files import read_input
    from eceb_worker.pipeline.inputs import load_rules
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage, RegistrationOptions

    rules_path = Path(params["rules"])
    endpoint = params["endpoint"]
    return JobMessage(
        job_id="0" * 32,
        kind=JobKind.REGISTER,
        inputs=JobInputs(endpoint_url=endpoint),
        corpus=StorageSpec(source=f"s3://{CORPUS_BUCKET}/{KEY_PREFIX}", endpoint_url=endpoint, concurrency=16),
        out=params["out"],
        shard_bytes=DEFAULT_TASK_BYTES,
        registration=RegistrationOptions(
            rules=load_rules(read_input(rules_path), str(rules_path)), rules_name="rules.toml"
        ),
    )


def coordinator_answers(params: dict[str, Any]) -> None:
    """Write the listing shards' answers (one JSON a line, as Redis holds
    them) of the simulated listing to ``params["answers"]``: each shard's
    rows cut into pieces as a listing shard cuts them."""
    import msgspec

    from eceb_worker.corpus.planning import TAPER_PARTS
    from eceb_worker.corpus.registration import ListedRow, PieceCutter, encode_rows, parts_prefix
    from eceb_worker.pipeline.messages import ListAnswer
    from eceb_worker.pipeline.register_job import plan_listing

    listed = Listed(params["listed"], params["prefixes"], params["object_bytes"])
    message = _registration_message(params)
    tasks = plan_listing(message, ListingClient(listed))
    modified = datetime(2026, 1, 1, tzinfo=UTC)
    with Path(params["answers"]).open("wb") as out:
        for task in tasks:
            rows = listed.rows_of(task.shard.after, task.shard.until)
            cutter = PieceCutter(max(1, task.shard_bytes // TAPER_PARTS))
            line = 0
            for index in rows:
                path = listed.path(index)
                if not line:
                    sample = ListedRow(
                        path=path,
                        size_bytes=listed.object_bytes,
                        kind="code",
                        classification="internal",
                        etag=f'"{_digest_of(index)[:32]}"',
                        last_modified=modified,
                    )
                    line = len(encode_rows([sample])[0])  # every row's line is as long (fixed-width paths)
                cutter.add(path, listed.object_bytes, line)
            pieces = cutter.finish()
            first = rows.start
            name = f"list-{task.shard.index:06d}-x-{first:09d}-{len(rows):07d}.jsonl"
            partial = f"{parts_prefix(message.out, message.job_id)}{name}"
            answer = ListAnswer(
                index=task.shard.index,
                partial=partial if pieces else "",
                listed=len(rows),
                rows=len(rows),
                size_bytes=len(rows) * listed.object_bytes,
                pieces=tuple(pieces),
            )
            out.write(msgspec.json.encode(answer) + b"\n")


def _status_mib(name: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name):
            return int(line.split()[1]) / 1024
    return float("nan")


def coordinator_child(params: dict[str, Any]) -> None:
    """The measured process: the registration job's coordinating steps over
    the simulated listing (see the module); prints its stages as JSON."""
    stages: list[dict[str, Any]] = []
    clock = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages.append(
            {
                "stage": name,
                "seconds": round(now - clock, 2),
                "rss_mib": round(_status_mib("VmRSS:"), 1),
                "peak_mib": round(_status_mib("VmHWM:"), 1),
            }
        )
        clock = time.perf_counter()

    import msgspec

    import eceb_worker.cluster.tasks  # what a worker's pool process holds: Celery, kombu, redis, boto3
    from eceb_worker.corpus.registration import parts_prefix
    from eceb_worker.pipeline.jobs import Finished, Job, MapStage
    from eceb_worker.pipeline.messages import HashRangeAnswer, HashRangeTask, JobMessage, ShardAnswer, Stage
    from eceb_worker.pipeline.shards import Workspace

    del eceb_worker.cluster.tasks
    listed = Listed(params["listed"], params["prefixes"], params["object_bytes"])
    message = _registration_message(params)
    store = SimulatedStore(listed, message.registration.rules, params["upload"])

    class SimulatedWorkspace(Workspace):
        def object_store(self, endpoint_url: str | None) -> Any:
            return store

    decoder = msgspec.json.Decoder(ShardAnswer)
    carried = msgspec.json.Decoder(JobMessage)

    def step(current: JobMessage) -> Job:  # each step's task decodes the message it carries
        return Job(carried.decode(msgspec.json.encode(current)), SimulatedWorkspace())

    stage("start-up and imports (Celery, kombu, redis, boto3, the tasks)")
    job = step(message)
    listing = job.start()
    published = [msgspec.json.encode(task) for task in listing.tasks]
    stage(f"eceb.coordinate: plan the listing ({len(listing.tasks)} listing shards, their messages)")
    raw = Path(params["answers"]).read_bytes().splitlines()
    job = step(job.message)
    hashing = job.after(Stage.LIST, [decoder.decode(item) for item in raw])
    assert isinstance(hashing, MapStage)
    published = [msgspec.json.encode(task) for task in hashing.tasks]
    pieces = sum(len(line) for line in raw)
    stage(
        f"eceb.register_listed: {len(raw)} listing answers ({pieces / MIB:.1f} MiB of JSON) reduced, "
        f"{len(hashing.tasks):,} hash shards planned"
    )
    prefix = parts_prefix(message.out, message.job_id)
    answers = []
    for task in hashing.tasks:
        assert isinstance(task, HashRangeTask)
        shard = task.range
        first = int(shard.first_path.rsplit("/f", 1)[1].split(".")[0])
        partial = f"{prefix}hash-{shard.index:06d}-x-{first:09d}-{shard.count:07d}.jsonl"
        answer = HashRangeAnswer(
            index=shard.index,
            listing=shard.listing,
            partial=partial,
            artifacts=shard.count,
            size_bytes=shard.size_bytes,
            bytes_hashed=shard.size_bytes,
        )
        answers.append(msgspec.json.encode(answer))
    del published
    job = step(job.message)
    finished = job.after(Stage.HASH, [decoder.decode(item) for item in answers])
    assert isinstance(finished, Finished) and finished.registered is not None
    registered = finished.registered
    if registered.artifact_count != listed.objects:
        raise RuntimeError(f"the merge made {registered.artifact_count} artifacts of {listed.objects}")
    where = "uploaded to moto" if params["upload"] else "not uploaded"
    written = " and ".join(f"{item['name']} ({item['bytes'] / 1e9:.2f} GB)" for item in store.uploads)
    stage(f"eceb.register_finish: {len(answers):,} partials merged into {written}, {where}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {"stages": stages, "uploads": store.uploads, "ru_maxrss_mib": round(usage.ru_maxrss / 1024, 1)}
    print(json.dumps(figures))


def listing_shard_child(params: dict[str, Any]) -> None:
    """A measured process running the largest listing shard of the simulated
    listing (``list_shard``: list, check, classify, sort, write its
    partial), as a worker's pool process runs it; prints its stages as JSON."""
    started = time.perf_counter()
    import eceb_worker.cluster.tasks  # what a worker's pool process holds
    from eceb_worker.pipeline.register_job import list_shard, plan_listing

    del eceb_worker.cluster.tasks
    listed = Listed(params["listed"], params["prefixes"], params["object_bytes"])
    client = ListingClient(listed)
    tasks = plan_listing(_registration_message(params), client)
    task = max(tasks, key=lambda item: len(listed.rows_of(item.shard.after, item.shard.until)))
    imported = {"seconds": round(time.perf_counter() - started, 2), "peak_mib": round(_status_mib("VmHWM:"), 1)}
    started = time.perf_counter()
    answer = list_shard(task, client)
    figures = {
        "imports": imported,
        "rows": answer.rows,
        "shards": len(tasks),
        "partial_mb": round(client.uploaded / 1e6, 1),
        "seconds": round(time.perf_counter() - started, 2),
        "peak_mib": round(_status_mib("VmHWM:"), 1),
    }
    print(json.dumps(figures))


def coordinator_section(args: argparse.Namespace, scratch: Path, rules: Path, moto: Moto | None) -> dict[str, Any]:
    """Prepare the listing answers, then measure the coordinating steps in a fresh interpreter."""
    params = {
        "listed": args.listed,
        "prefixes": args.prefixes,
        "object_bytes": args.object_bytes,
        "rules": str(rules),
        "out": f"s3://{OUT_BUCKET}/coordinator/registry.jsonl",
        "endpoint": moto.endpoint if moto else None,
        "upload": moto.endpoint if moto and args.coordinator_upload == "moto" else None,
        "answers": str(scratch / "listing-answers.jsonl"),
    }
    log(f"[coordinator] the listing shards' answers for {args.listed:,} listed objects ...")
    started = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--coordinator-answers", json.dumps(params)], check=True)
    log(f"[coordinator] ... made in {time.perf_counter() - started:.0f} s; the coordinating steps ...")
    started = time.perf_counter()
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, __file__, "--coordinator-child", json.dumps(params)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the coordinating steps failed:\n{done.stderr[-4000:]}")
    figures = json.loads(done.stdout)
    log("[coordinator] ... and, for comparison, the largest listing shard in a worker's process ...")
    shard = subprocess.run(
        [sys.executable, __file__, "--listing-shard-child", json.dumps(params)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if shard.returncode != 0:
        raise RuntimeError(f"the listing shard failed:\n{shard.stderr[-4000:]}")
    figures["listing_shard"] = json.loads(shard.stdout)
    if moto is not None and params["upload"]:
        with contextlib.suppress(Exception):
            s3_client(moto.endpoint).delete_object(Bucket=OUT_BUCKET, Key="coordinator/registry.jsonl")
    return {
        "listed": args.listed,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_mib": max(item["peak_mib"] for item in figures["stages"]),
        **figures,
    }


# --------------------------------------------------------------------------- the report


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def _phases(sample: Sample) -> str:
    """The job's phases: how long each lasted, and moto's CPU in it."""
    parts = []
    for current, following in zip(sample.phases, sample.phases[1:], strict=False):
        if current["phase"] in ("submitted",):
            continue
        seconds = following["at"] - current["at"]
        moto = following["cpu"]["moto"] - current["cpu"]["moto"]
        parts.append(f"{current['phase']} {seconds:.1f} s (moto {moto / max(seconds, 1e-9):.0%})")
    return ", ".join(parts)


def report_full(found: dict[str, Any], corpus: Corpus, probes: dict[str, Any]) -> list[bool]:
    print()
    listing, gets = probes["listing"], probes["gets"]
    print(
        f"probe, one sequential listing of the prefix: {listing['keys']:,} keys in {listing['pages']} pages, "
        f"{listing['seconds']:.1f} s ({listing['seconds'] / max(listing['pages'], 1) * 1e3:.0f} ms a page; "
        f"moto's CPU {listing['moto_cpu'] / max(listing['pages'], 1) * 1e3:.0f} ms a page)"
    )
    if probes["backend_page_s"] is not None:
        print(
            f"  of moto's CPU a page, {probes['backend_page_s'] * 1e3:.0f} ms is its backend's scan and sort of every "
            "key of the bucket (measured in the server process, without HTTP)"
        )
    print(
        f"probe, GETs through eceb's reader (16 in flight, one process): {gets['gets'] / gets['seconds']:,.0f} GET/s; "
        f"moto's CPU {gets['moto_cpu'] / gets['gets'] * 1e3:.2f} ms a GET (at most "
        f"{gets['gets'] / max(gets['moto_cpu'], 1e-9):,.0f} GET/s on its one interpreter), the reader's "
        f"{gets['client_cpu'] / gets['gets'] * 1e3:.2f} ms a GET"
    )
    print()
    header = (
        f"{'registration (' + format(corpus.objects, ',') + ' objects)':<44} {'s':>8} {'objects/s':>10} "
        f"{'moto CPU s':>11} {'moto':>5} {'eceb CPU s':>11}"
    )
    print(header)
    print("-" * len(header))
    labels = {
        "local": "eceb corpus register (one process)",
        "one_worker": "eceb-dist register, 1 worker",
        "two_workers": "eceb-dist register, 2 workers",
    }
    best = {key: min(samples, key=lambda sample: sample.seconds) for key, samples in found.items()}
    for key, label in labels.items():
        sample = best[key]
        eceb_cpu = sample.cpu["commands"] + sample.cpu["workers"]
        print(
            f"{label:<44} {sample.seconds:>8.1f} {corpus.objects / sample.seconds:>10,.0f} "
            f"{sample.cpu['moto']:>11.1f} {sample.cpu['moto'] / sample.seconds:>5.0%} {eceb_cpu:>11.1f}"
        )
    for key in ("one_worker", "two_workers"):
        sample = best[key]
        shards = f"{sample.counts.get('list_total')} listing shards, {sample.counts.get('hash_total')} hash shards"
        print(f"  {labels[key]}: {shards}; {_phases(sample)}")
    for key, label in labels.items():
        times = ", ".join(f"{sample.seconds:.1f}" for sample in found[key])
        loads = ", ".join(f"{sample.load[0]:.1f}-{sample.load[1]:.1f}" for sample in found[key])
        print(f"  {label}: every run {times} s; load average (1 min) over each {loads}")
    count = sum(len(samples) for samples in found.values())
    print(f"registries: all {count} are byte-identical (BLAKE3 {best['local'].digest[:16]}...)")
    speedup = best["one_worker"].seconds / best["two_workers"].seconds
    ratio = best["one_worker"].seconds / best["local"].seconds
    verdicts = [speedup >= TARGET_SPEEDUP, ratio <= TARGET_ONE_WORKER]
    print(f"2 workers vs 1 worker:              {speedup:.2f}x  target >= {TARGET_SPEEDUP}x  {_verdict(verdicts[0])}")
    print(
        f"1 worker vs eceb corpus register:   {ratio:.2f}x the time  target <= {TARGET_ONE_WORKER}x  "
        f"{_verdict(verdicts[1])}"
    )
    return verdicts


def report_incremental(found: dict[str, Any], objects: int) -> list[bool]:
    print()
    print(f"incremental: {found['changed']:,} objects rewritten with other bytes ({found['rewrite_s']:.1f} s of PUTs)")
    header = (
        f"{'registration of the same objects':<44} {'s':>8} {'hashed':>8} {'reused':>8} {'moto CPU s':>11} "
        f"{'eceb CPU s':>11} {'load':>9}"
    )
    print(header)
    print("-" * len(header))
    rows = [
        ("eceb corpus register --previous", "incremental"),
        ("eceb corpus register (full)", "full"),
        ("eceb-dist register --previous, 2 workers", "dist_incremental"),
        ("eceb-dist register (full), 2 workers", "dist_full"),
    ]
    for label, key in rows:
        sample: Sample | None = found.get(key)
        if sample is None:
            continue
        reused = sample.counts.get("reused", 0)
        hashed = sample.counts.get("rehashed", objects - reused)
        eceb_cpu = sample.cpu["commands"] + sample.cpu["workers"]
        print(
            f"{label:<44} {sample.seconds:>8.1f} {hashed:>8,} {reused:>8,} {sample.cpu['moto']:>11.1f} "
            f"{eceb_cpu:>11.1f} {sample.load[0]:>4.1f}-{sample.load[1]:<4.1f}"
        )
    for key in ("dist_incremental", "dist_full"):
        if key in found:
            print(f"  {found[key].name}: {_phases(found[key])}")
    ratio = found["full"].seconds / found["incremental"].seconds
    verdicts = [ratio >= TARGET_INCREMENTAL]
    same = "every registry above is" if found.get("dist_previous") else "the two registries are"
    print(f"registries: {same} byte-identical")
    print(
        f"full vs incremental (eceb corpus register):       {ratio:.1f}x  target >= {TARGET_INCREMENTAL:.0f}x  "
        f"{_verdict(verdicts[0])}"
    )
    if found.get("dist_previous"):
        dist_ratio = found["dist_full"].seconds / found["dist_incremental"].seconds
        verdicts.append(dist_ratio >= TARGET_INCREMENTAL)
        print(
            f"full vs incremental (eceb-dist register):         {dist_ratio:.1f}x  target >= "
            f"{TARGET_INCREMENTAL:.0f}x  {_verdict(verdicts[-1])}"
        )
    else:
        print("eceb-dist register --previous: not timed (the command has no --previous option)")
    return verdicts


def report_coordinator(found: dict[str, Any]) -> list[bool]:
    print()
    print(f"coordinator memory, {found['listed']:,} listed objects (simulated storage; fresh process)")
    print(f"    {'stage':<118} {'s':>7} {'RSS MiB':>8} {'peak MiB':>9}")
    for item in found["stages"]:
        print(f"    {item['stage']:<118} {item['seconds']:>7.1f} {item['rss_mib']:>8.0f} {item['peak_mib']:>9.0f}")
    for upload in found.get("uploads") or []:
        print(
            f"    of eceb.register_finish: peak RSS {upload['peak_before_mib']:.0f} MiB before {upload['name']} "
            f"was uploaded, {upload['peak_after_mib']:.0f} MiB after ({upload['seconds']:.1f} s)"
        )
    shard = found.get("listing_shard")
    if shard:
        print(
            f"    for comparison, a worker's process running the largest of the {shard['shards']} listing shards "
            f"({shard['rows']:,} rows, a {shard['partial_mb']:.0f} MB partial): {shard['seconds']:.1f} s, "
            f"peak RSS {shard['peak_mib']:.0f} MiB ({shard['imports']['peak_mib']:.0f} MiB after its imports)"
        )
    met = found["peak_mib"] <= TARGET_COORDINATOR_MIB
    print(
        f"    peak RSS {found['peak_mib']:.0f} MiB (ru_maxrss {found['ru_maxrss_mib']:.0f} MiB), "
        f"{found['seconds']:.0f} s; target <= {TARGET_COORDINATOR_MIB} MiB: {_verdict(met)}"
    )
    return [met]


# --------------------------------------------------------------------------- main


def _sample_json(value: Any) -> Any:
    if isinstance(value, Sample):
        return value.__dict__
    if isinstance(value, dict):
        return {key: _sample_json(item) for key, item in value.items()}
    return value


@contextlib.contextmanager
def cluster_services(scratch: Path, context: Context) -> Iterator[tuple[list[Any], Any]]:
    """``redis-server`` and two Celery workers (one pool process each) until the block ends."""
    import pytest

    from eceb_worker.cluster.client import Cluster
    from tests.support.redis_server import celery_workers, running_redis

    scratch.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(running_redis(scratch))
        url = server.url()
        env = {"ECEB_S3_ENDPOINT_URL": context.moto.endpoint}
        try:
            first = stack.enter_context(celery_workers(url, 1, scratch / "logs", env=env))
            second = stack.enter_context(celery_workers(url, 1, scratch / "logs", env=env))
        except pytest.fail.Exception as exc:  # it reports a start-up failure as a failed test
            raise RuntimeError(str(exc)) from None
        cluster = Cluster(url, url)
        stack.callback(cluster.app.close)
        context.broker = url
        context.redis = server.client()
        stack.callback(context.redis.close)
        context.store = cluster.store
        context.meter = Meter(context.moto.pid, [first, second])
        yield [first, second], cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000, help="objects in the corpus (default 100,000)")
    parser.add_argument("--prefixes", type=int, default=300, help="key prefixes they are spread over (300)")
    parser.add_argument("--object-bytes", type=int, default=4096, help="bytes an object (4,096)")
    parser.add_argument("--changed-permille", type=int, default=10, help="objects rewritten, per mille (10: 1 %%)")
    parser.add_argument("--local-workers", type=int, default=1, help="eceb corpus register --workers (1)")
    parser.add_argument("--rounds", type=int, default=1, help="full registrations of each kind, in turn (1)")
    parser.add_argument("--listed", type=int, default=10_000_000, help="listed objects of the coordinator (10M)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections to run, comma-separated")
    parser.add_argument("--upload", choices=["backend", "threads"], default="backend")
    parser.add_argument("--coordinator-upload", choices=["moto", "none"], default="moto")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (registries, logs)")
    parser.add_argument("--serve-moto", help=argparse.SUPPRESS)
    parser.add_argument("--coordinator-answers", help=argparse.SUPPRESS)
    parser.add_argument("--coordinator-child", help=argparse.SUPPRESS)
    parser.add_argument("--listing-shard-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_moto:
        serve_moto(json.loads(args.serve_moto))
        return 0
    if args.coordinator_answers:
        coordinator_answers(json.loads(args.coordinator_answers))
        return 0
    if args.coordinator_child:
        coordinator_child(json.loads(args.coordinator_child))
        return 0
    if args.listing_shard_child:
        listing_shard_child(json.loads(args.listing_shard_child))
        return 0
    sections = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}: choose among {', '.join(SECTIONS)}")
    return run(args, sections)


def run(args: argparse.Namespace, sections: list[str]) -> int:
    from rehash import cpu_model, machine

    fake_credentials()
    corpus = Corpus(args.objects, args.prefixes, args.object_bytes)
    results: dict[str, Any] = {}
    started = time.perf_counter()
    stored = any(name in sections for name in ("full", "incremental"))
    with contextlib.ExitStack() as scope:
        scratch = Path(tempfile.mkdtemp(prefix="eceb-register-bench-", dir=args.data_dir))
        if args.keep:
            log(f"[scratch] {scratch} (kept: registries, logs of moto and the workers)")
        else:
            scope.callback(shutil.rmtree, scratch, ignore_errors=True)
        rules = scratch / "rules.toml"
        rules.write_text(RULES, encoding="utf-8")
        log(f"[moto] starting the server{' and seeding ' + format(corpus.objects, ',') + ' objects' if stored else ''}")
        seed = stored and args.upload == "backend"
        with moto_server(scratch / "moto-server.log", corpus, seed=seed) as moto:
            seeding = moto.seeded_s
            if stored and args.upload == "threads":
                seeding = put_objects(moto.endpoint, corpus, range(corpus.objects), generation=0)
            results["seeding_s"] = seeding
            results["backend_page_s"] = moto.backend_page_s
            context = Context(args, corpus, moto, rules, scratch, Meter(moto.pid))
            if stored:
                log("[probes] one sequential listing, then GETs of every 20th object ...")
                results["probes"] = {
                    "listing": probe_listing(context),
                    "gets": probe_gets(context),
                    "backend_page_s": moto.backend_page_s if seed else None,  # measured once seeded
                }
                with cluster_services(scratch / "services", context) as (workers, cluster):
                    if "full" in sections:
                        results["full"] = full_section(context, workers, cluster)
                    if "incremental" in sections:
                        full = results.get("full")
                        results["incremental"] = incremental_section(context, workers, cluster, full)
            if "coordinator" in sections:
                results["coordinator"] = coordinator_section(args, scratch, rules, moto)
    model, simd = cpu_model()
    print()
    print("Registering a corpus from the loopback S3 server: eceb corpus register vs eceb-dist register")
    print(f"CPU: {model}, {simd}; machine: {machine()} (shared with other jobs; nothing pinned)")
    print(f"command: {' '.join(['python', *sys.argv])}")
    if stored:
        how = "moto's backend, in the server process" if args.upload == "backend" else "HTTP PUTs, 32 threads"
        print(
            f"corpus: {corpus.objects:,} objects of {corpus.object_bytes:,} bytes under s3://{CORPUS_BUCKET}/"
            f"{KEY_PREFIX}/ in {corpus.prefixes} key prefixes; stored through {how} in {results['seeding_s']:.1f} s"
        )
        print(
            "services: moto's ThreadedMotoServer (one Python process), redis-server, 2 Celery workers "
            "(prefork, one pool process each, 16 reads in flight); eceb corpus register "
            f"--workers {args.local_workers} (16 reads in flight)"
        )
    verdicts: list[bool] = []
    if "full" in results:
        verdicts += report_full(results["full"], corpus, results["probes"])
    if "incremental" in results:
        verdicts += report_incremental(results["incremental"], corpus.objects)
    if "coordinator" in results:
        verdicts += report_coordinator(results["coordinator"])
    print()
    print(f"wall time of the benchmark: {time.perf_counter() - started:.0f} s")
    print("all targets met" if verdicts and all(verdicts) else "some targets NOT met")
    if args.json is not None:
        payload = {"command": " ".join(["python", *sys.argv]), **_sample_json(results)}
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
