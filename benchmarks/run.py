"""The speed and memory of ``eceb run`` against the loopback model provider.

Usage::

    python benchmarks/run.py [--scenarios overhead,rate] [--executions 10000] [--in-flight 32]
        [--judge llm|command] [--runs 1] [--rate-rpm 600] [--rate-executions 300]
        [--rate-in-flight 16] [--delay-ms 200] [--keep DIR]
    python benchmarks/run.py --cluster [--cluster-executions 20000] [--cluster-concurrency 2]
        [--cluster-in-flight 16] [--cluster-shard-executions 100] [--peer-executions 3000] [--delay-ms 200]

It builds, in a scratch directory (``--keep DIR``: there, kept), a
synthetic benchmark over a small corpus (:data:`ARTIFACTS` files of about
1.2 KiB, public and internal), its registry, a run profile and a context
system, and starts the loopback model provider
(``examples/run/loopback_provider.py``, a subprocess on a free port of
127.0.0.1, speaking the OpenAI Chat Completions protocol). Every task has a
ladder of two budgets and two repetitions: ``(1 + 2 x 2) x 2 = 10``
executions a task (the full permitted-context baseline, ``compiled`` and
``naive_top_k`` at each budget), so ``--executions 10000`` is 1,000 tasks.

The judge (``--judge``): ``llm`` (the default), the loopback provider
judging through structured output, one more paid call an execution (20,000
calls for 10,000 executions); or ``command``, ``/bin/echo 900`` started once
an answer (10,000 calls and 10,000 processes). The context system is a
small standard-library program written beside the benchmark: it answers
each ``compiled`` request at once with the first permitted artifacts that
fit the budget, so that what is measured is eceb, not a retriever.

Scenario ``overhead`` (the provider answering at once):

1. the provider's own rate: ``--in-flight`` threads of this process send
   requests of the size eceb sends (a 12 KB prompt) over kept-alive
   connections (``http.client``) for a few seconds: requests a second, and
   the provider's CPU time a request (``/proc/PID/stat``), whose inverse
   is what its one interpreter can serve at most;
2. ``eceb run BENCHMARK PROFILE --corpus DIR -o RUN`` as a process
   (``python -m eceb_cli``): wall time from start to exit (start-up,
   reading the inputs, every call, writing the run and its transcripts),
   executions a second, its peak RSS and CPU time (``os.wait4``: the
   process and the helpers it reaped, the context system and command
   judges), and the provider's CPU time meanwhile;
3. the floor: the same requests (read back from the run's transcripts)
   sent by a plain ``ThreadPoolExecutor`` of ``--in-flight`` threads
   through the same SDK client (``openai``, retries off, the same
   connection pool), in a process of its own, without eceb's journal,
   contexts, pacing or run. Its wall time includes its start-up too.
   eceb's overhead is the difference.

``--runs N`` alternates eceb and the floor N times (a fresh journal each
time) and keeps the best of each; every time is printed. The run is checked:
every execution made, and the provider answered every call of eceb and of
the floor.

Scenario ``rate`` (``--delay-ms`` before every answer, 200 ms): a profile
with ``model.requests_per_minute`` = ``--rate-rpm`` (answers and judgments
share the provider's limit), ``--rate-in-flight`` executions in flight
(enough to send far above the limit) and ``--rate-executions``
executions. This process polls the provider's counters (``GET /_stats``)
every 20 ms (server side): the achieved rate is the requests received in
the whole ten-second windows that follow the first one, against the
configured rate (the pacer's windows are ten seconds long and may send a
window's share at once, so the span from the first request to the last
would overstate it; it is printed too, with the busiest ten seconds).

Scenario ``cluster`` (``--cluster``, or ``--scenarios cluster``; the LLM
judge): ``eceb-dist run`` on a local cluster: a ``redis-server`` on a free
port of 127.0.0.1 (broker and result backend, ``tests/support/redis_server.py``),
moto's S3 server (``benchmarks/s3_rate.py``) for the run's output, and
:data:`CLUSTER_WORKERS` workers, each ``eceb-dist worker --concurrency N
--log-format json`` (Celery's prefork pool: ``N`` processes, each running
one execution shard at a time with the profile's ``in_flight`` executions
on threads). The provider answers ``--delay-ms`` (200 ms) after each
request; the profile allows :data:`CLUSTER_RPM` requests a minute (100 a
second; the judge calls the same provider and shares the limit) and no
tokens a minute (the token windows count in units of ⌈limit / 1000⌉
tokens, so any token limit admits at most 1,000 calls a minute). The
benchmark and the corpus are files every worker sees; the run goes to
``s3://BUCKET/runs/<id>/run.json``. It submits the job through the command
line (``eceb-dist run ... --shard-executions N``), reads the provider's
answered count and the job's phase (Redis) every :data:`POLL_S` near the
end, and prints side by side:

- the requests a second at the server over the whole ten-second windows
  after the first (from ``GET /_stats``'s ``per_second`` counts; the window
  cut short by the run's end is left out), against the limit;
- the most requests in any ten consecutive seconds, against a window's
  allowance (1,000);
- the time from the last answer at the server (the first reading at the
  final answered count) to the job's end (the first reading of phase
  ``done``: the last shard's partial, then ``eceb.run_finish`` reading the
  partials and writing the run, transcripts and judgments), with the
  reduce's own run time from its worker's log line, and the job state's
  ``ended`` and the run object's ``LastModified`` (whole seconds);
- the coordinator's memory: ``VmHWM`` (``/proc/PID/status``) of the pool
  processes that ran ``eceb.run_finish`` and ``eceb.coordinate``, read
  after the job (the peak of the process's whole life: the execution
  shards it ran before are in it too);
- the floor, the limit itself, and the peer: ``eceb run`` in one process
  (``--peer-executions``, 3,000; 0 leaves it out) with the same limit and
  as many executions in flight as the cluster, its rate counted the same
  way.

It checks the job ``done``, its observations equal to its executions, and
the provider's answers equal to the planned calls (nothing paid twice);
it prints the CPU seconds of every process during the job.

Targets (the issue): 10,000 executions, 32 in flight, in at most 60 s and
at most 300 MiB peak RSS; at least 90 % of the configured request rate.
On the cluster: at least 95 requests a second against a limit of 100, no
ten seconds above the limit by more than 5 %, 20,000 executions reduced
into one run within 10 s of the last answer, the coordinator within
256 MiB. MiB = 2^20 bytes.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import http.client
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROVIDER = ROOT / "examples" / "run" / "loopback_provider.py"
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024
API_KEY = "sk-loopback-bench-key"
KEY_ENV = "ECEB_BENCH_KEY"

ARTIFACTS = 48
"""Files of the corpus."""
LADDER = (1000, 2000)
"""Every task's budgets (tokens)."""
REPETITIONS = 2
EXECUTIONS_PER_TASK = (1 + 2 * len(LADDER)) * REPETITIONS
INPUT_WINDOW = 4000
"""The model's declared input window (tokens): the full baseline's prompt is about 12 KB."""
TARGET_EXECUTIONS = 10_000
TARGET_IN_FLIGHT = 32
TARGET_SECONDS = 60
TARGET_MIB = 300
TARGET_RATE_PERCENT = 90

WORDS = (  # noqa: SIM905 - a list of words reads best as words
    "replica failover promote backup restore quorum leader election term vote snapshot compaction "
    "etcd raft wal archive rotate token vault secret policy license quota alert runbook deploy rollback "
    "canary ingress egress certificate renew kernel module cgroup memory pressure eviction scheduler "
    "node drain cordon taint toleration volume claim storage class replica set daemon stateful service"
).split()

CONTEXT_SYSTEM = '''\
"""A context system for the benchmark: the first permitted artifacts that fit the budget, at once."""
import json
import sys

artifacts = json.load(open(sys.argv[1], encoding="utf-8"))
for line in sys.stdin:
    request = json.loads(line)
    allowed = set(request["permissions"]["allowed_classifications"])
    denied = set(request["permissions"].get("denied_artifacts", ()))
    room = (request["budget_tokens"] - 300) * 3
    blocks, selected = [], []
    for artifact in artifacts:
        if artifact["classification"] not in allowed or artifact["artifact_id"] in denied:
            continue
        block = '<artifact id="%s">\\n%s\\n</artifact>\\n' % (artifact["artifact_id"], artifact["text"])
        if len(block.encode()) > room:
            continue
        room -= len(block.encode())
        blocks.append(block)
        selected.append({"artifact_id": artifact["artifact_id"], "observed_digest": artifact["digest"]})
    response = {
        "schema": "symgliph.eceb/context-response-v0.1",
        "request_id": request["request_id"],
        "context": "".join(blocks),
        "selected_artifacts": selected,
    }
    sys.stdout.write(json.dumps(response) + "\\n")
    sys.stdout.flush()
'''


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# --- the inputs ---------------------------------------------------------------------------------------------------


def write_corpus(root: Path) -> list[dict[str, Any]]:
    """``root/corpus`` (:data:`ARTIFACTS` files) and ``root/registry.jsonl``
    (eceb's own registry builder); returns each artifact's id, path,
    classification, digest and text."""
    import blake3

    from eceb_worker.corpus.artifacts import Artifact
    from eceb_worker.corpus.registry import build_registry, registry_lines

    rng = random.Random(0)
    described: list[dict[str, Any]] = []
    artifacts = []
    for index in range(ARTIFACTS):
        kind = ("runbook", "policy", "code", "rfc")[index % 4]
        classification = "public" if index % 3 == 0 else "internal"
        path = f"{kind}/doc{index:03d}.md"
        text = f"# {kind} {index}\n" + " ".join(rng.choice(WORDS) for _ in range(160)) + "\n"
        data = text.encode()
        (root / "corpus" / kind).mkdir(parents=True, exist_ok=True)
        (root / "corpus" / path).write_bytes(data)
        digest = blake3.blake3(data).hexdigest()
        artifacts.append(
            Artifact(
                artifact_id=path,
                path=path,
                kind=kind,  # type: ignore[arg-type]
                classification=classification,  # type: ignore[arg-type]
                source_digest=digest,
                size_bytes=len(data),
            )
        )
        described.append(
            {"artifact_id": path, "classification": classification, "digest": digest, "text": text},
        )
    registry = build_registry(artifacts)
    (root / "registry.jsonl").write_bytes(b"".join(registry_lines(registry)))
    described.sort(key=lambda a: a["artifact_id"])
    return described


def write_benchmark(root: Path, tasks: int, described: list[dict[str, Any]]) -> Path:
    """``root/benchmark.json``: ``tasks`` tasks over the corpus (see the module)."""
    rng = random.Random(1)
    header = json.loads((root / "registry.jsonl").read_text().splitlines()[0])
    internal = [a["artifact_id"] for a in described if a["classification"] == "internal"]
    public = [a["artifact_id"] for a in described if a["classification"] == "public"]
    items = []
    for index in range(tasks):
        words = rng.sample(WORDS, 4)
        items.append(
            {
                "task_id": f"task-{index:05d}",
                "query": f"How do we {words[0]} the {words[1]} after a {words[2]} {words[3]}?",
                "required_artifacts": [public[index % len(public)]],
                "allowed_classifications": ["public", "internal"],
                "denied_artifacts": [internal[(index * 7 + 1) % len(internal)]],
                "budget_ladder": list(LADDER),
                "minimum_quality_milli": 600,
                "maximum_quality_regression_milli": 100,
                "required_answer_terms": [words[0]],
                "required_repetitions": REPETITIONS,
            }
        )
    benchmark = {
        "schema": "symgliph.eceb/benchmark-v0.1",
        "benchmark_id": "bench-making",
        "registry": {"path": "registry.jsonl", "corpus_root": header["corpus_root"]},
        "tasks": items,
    }
    path = root / "benchmark.json"
    path.write_text(json.dumps(benchmark))
    return path


PRICING = {
    "source": "loopback price list",
    "date": "2026-12-01",
    "input_micro_usd_per_mtok": 2_500_000,
    "cached_input_micro_usd_per_mtok": 1_250_000,
    "output_micro_usd_per_mtok": 10_000_000,
}


def write_profile(root: Path, base_url: str, *, judge: str, in_flight: int, rpm: int) -> Path:
    """``root/profile.json`` (and ``root/rubric.md``, ``root/context_system.py``)."""
    import blake3

    model = {
        "api": "openai-chat",
        "provider": "loopback",
        "name": "gpt-bench",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "input_window_tokens": INPUT_WINDOW,
        "timeout_s": 60,
        "requests_per_minute": rpm,
    }
    rubric = b"Score 1000 when the answer gives the exact procedure, 0 when it is wrong.\n"
    (root / "rubric.md").write_bytes(rubric)
    (root / "context_system.py").write_text(CONTEXT_SYSTEM)
    judge_block: dict[str, Any]
    if judge == "llm":
        judge_block = {
            "kind": "llm",
            "profile": "rubric-v1",
            "rubric": "rubric.md",
            "rubric_digest": blake3.blake3(rubric).hexdigest(),
            "model": {**model, "name": "judge-bench"},
            "decoding": {"temperature_milli": 0, "max_output_tokens": 100},
            "pricing": PRICING,
        }
    else:
        judge_block = {"kind": "command", "profile": "echo-900", "command": ["/bin/echo", "900"], "revision": "echo"}
    profile = {
        "schema": "symgliph.eceb/run-profile-v0.1",
        "run_id": "bench-run",
        "claim_class": "conformance_seed",
        "non_empirical": True,
        "model": model,
        "decoding": {"temperature_milli": 0, "max_output_tokens": 200},
        "pricing": PRICING,
        "context_system": {
            "command": [sys.executable, str(root / "context_system.py"), str(root / "artifacts.json")],
            "revision": "bench",
        },
        "judge": judge_block,
        "in_flight": in_flight,
    }
    path = root / "profile.json"
    path.write_text(json.dumps(profile, indent=2))
    return path


def build_inputs(root: Path, executions: int, base_url: str, *, judge: str, in_flight: int, rpm: int) -> int:
    """Every input of a run of about ``executions`` executions under ``root``; the plan's size."""
    tasks = max(1, executions // EXECUTIONS_PER_TASK)
    root.mkdir(parents=True, exist_ok=True)
    described = write_corpus(root)
    (root / "artifacts.json").write_text(json.dumps(described))
    write_benchmark(root, tasks, described)
    write_profile(root, base_url, judge=judge, in_flight=in_flight, rpm=rpm)
    return tasks * EXECUTIONS_PER_TASK


# --- the provider -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """A running loopback provider: its port and process id."""

    port: int
    pid: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_stats", timeout=30) as answer:
            stats: dict[str, Any] = json.loads(answer.read())
        return stats


@contextlib.contextmanager
def loopback_provider(scratch: Path, delay_ms: int) -> Iterator[Provider]:
    """The loopback provider answering every answer request with a short
    text and every judge request with a score of 900, ``delay_ms`` after
    each request; stopped (SIGTERM) at the end."""
    script = {
        "model_revision": "gpt-bench-2026-01-01",
        "rules": [],
        "default": {
            "answer": "Promote the replica with pg_ctl promote, then repoint the virtual IP to the new primary.",
            "score": 900,
            "rationale": "exact",
        },
    }
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "script.json").write_text(json.dumps(script))
    port_file = scratch / f"port-{delay_ms}"
    port_file.unlink(missing_ok=True)
    command = [sys.executable, str(PROVIDER), "--port", "0", "--port-file", str(port_file)]
    command += ["--script", str(scratch / "script.json"), "--api-key", API_KEY, "--delay-ms", str(delay_ms)]
    process = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the loopback provider did not start")
            time.sleep(0.02)
        yield Provider(port=int(port_file.read_text()), pid=process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def provider_rate(provider: Provider, threads: int, seconds: float = 4.0) -> dict[str, float]:
    """Requests a second the provider serves to ``threads`` kept-alive
    connections of this process, and its CPU seconds a request."""
    prompt = " ".join(random.Random(2).choice(WORDS) for _ in range(2000))[: INPUT_WINDOW * 3]
    body = json.dumps(
        {
            "model": "gpt-bench",
            "messages": [{"role": "user", "content": prompt}],
            "max_completion_tokens": 200,
            "temperature": 0.0,
        }
    ).encode()
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    stop = threading.Event()
    counts = [0] * threads

    def hammer(slot: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", provider.port, timeout=30)
        while not stop.is_set():
            connection.request("POST", "/v1/chat/completions", body, headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"the loopback provider answered {answer.status}")
            counts[slot] += 1
        connection.close()

    workers = [threading.Thread(target=hammer, args=(slot,)) for slot in range(threads)]
    cpu = _process_cpu(provider.pid)
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - started
    served = sum(counts)
    return {"requests": served, "rate": served / wall, "cpu_per_request": (_process_cpu(provider.pid) - cpu) / served}


# --- timed processes ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timed:
    """A finished process: wall seconds, peak RSS (bytes), CPU seconds, exit status, output."""

    seconds: float
    peak_bytes: int
    cpu: float
    status: int
    stdout: str
    stderr: str


def timed_process(command: list[str], env: dict[str, str], scratch: Path) -> Timed:
    """Run ``command``; its wall time, and its peak RSS and CPU time from
    ``os.wait4`` (the process and every descendant it reaped)."""
    out, err = scratch / "stdout.txt", scratch / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
    return Timed(
        seconds=seconds,
        peak_bytes=usage.ru_maxrss * 1024,
        cpu=usage.ru_utime + usage.ru_stime,
        status=process.returncode,
        stdout=out.read_text(errors="replace"),
        stderr=err.read_text(errors="replace"),
    )


def eceb_run(root: Path, scratch: Path) -> Timed:
    """``eceb run`` of the inputs under ``root`` (a fresh journal), timed."""
    for name in ("run.json", "run.journal", "run.journal-wal", "run.journal-shm"):
        (root / name).unlink(missing_ok=True)
    command = [sys.executable, "-m", "eceb_cli", "run", str(root / "benchmark.json"), str(root / "profile.json")]
    command += ["--corpus", str(root / "corpus"), "-o", str(root / "run.json")]
    env = {**os.environ, KEY_ENV: API_KEY}
    done = timed_process(command, env, scratch)
    if done.status != 0:
        raise RuntimeError(f"eceb run exited {done.status}: {done.stderr[-2000:]}")
    return done


def floor_run(root: Path, base_url: str, in_flight: int, scratch: Path) -> Timed:
    """The floor (see the module) as a process of its own, timed."""
    command = [sys.executable, str(Path(__file__).resolve()), "--replay", str(root / "run.transcripts.jsonl")]
    command += ["--base-url", base_url, "--in-flight", str(in_flight)]
    done = timed_process(command, {**os.environ}, scratch)
    if done.status != 0:
        raise RuntimeError(f"the floor exited {done.status}: {done.stderr[-2000:]}")
    return done


def replay(transcripts: Path, base_url: str, in_flight: int) -> int:
    """Send every request of ``transcripts`` again through the ``openai`` SDK,
    ``in_flight`` at a time, from a plain thread pool (the floor)."""
    import openai

    timeout = openai.Timeout(60.0)
    limits = openai.DefaultHttpxClient(
        limits=__import__("httpx2").Limits(max_connections=in_flight, max_keepalive_connections=in_flight),
        timeout=timeout,
    )
    client = openai.OpenAI(api_key=API_KEY, base_url=base_url, max_retries=0, timeout=timeout, http_client=limits)
    create = client.chat.completions.with_raw_response.create

    def send(request: dict[str, Any]) -> int:
        raw = create(**request)
        return len(bytes(raw.http_response.content))

    sent = 0
    running: set[Future[int]] = set()
    with ThreadPoolExecutor(max_workers=in_flight) as pool, transcripts.open("rb") as lines:
        for line in lines:
            if len(running) >= 2 * in_flight:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
            running.add(pool.submit(send, json.loads(line)["request"]))
            sent += 1
        for future in running:
            future.result()
    client.close()
    print(f"{sent} requests sent")
    return 0


# --- the scenarios ------------------------------------------------------------------------------------------------


def overhead(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Scenario ``overhead`` (see the module)."""
    with loopback_provider(root, 0) as provider:
        log(f"[run] the provider's own rate, {args.in_flight} connections ...")
        rate = provider_rate(provider, args.in_flight)
        inputs = root / "overhead"
        planned = build_inputs(
            inputs, args.executions, provider.base_url, judge=args.judge, in_flight=args.in_flight, rpm=0
        )
        calls_per_execution = 2 if args.judge == "llm" else 1
        runs: dict[str, list[Timed]] = {"eceb": [], "floor": []}
        server_cpu: list[float] = []
        for number in range(1, args.runs + 1):
            log(f"[run] eceb run, {planned:,} executions, {args.in_flight} in flight (run {number}) ...")
            before, cpu = provider.stats()["answered"], _process_cpu(provider.pid)
            runs["eceb"].append(eceb_run(inputs, root))
            server_cpu.append(_process_cpu(provider.pid) - cpu)
            answered = provider.stats()["answered"] - before
            if answered != planned * calls_per_execution:
                raise RuntimeError(f"the provider answered {answered} calls, not {planned * calls_per_execution}")
            if f"{planned}/{planned} executions made" not in runs["eceb"][-1].stdout:
                raise RuntimeError(f"eceb run did not make every execution: {runs['eceb'][-1].stdout}")
            log(f"[run] the floor: the same {answered:,} requests from a thread pool (run {number}) ...")
            runs["floor"].append(floor_run(inputs, provider.base_url, args.in_flight, root))
            if provider.stats()["answered"] - before != 2 * answered:
                raise RuntimeError("the floor did not send every request eceb sent")
    best = min(range(args.runs), key=lambda number: runs["eceb"][number].seconds)
    return {
        "planned": planned,
        "calls": planned * calls_per_execution,
        "provider": rate,
        "eceb": runs["eceb"][best],
        "floor": min(runs["floor"], key=lambda t: t.seconds),
        "server_cpu": server_cpu[best],
        "all": {name: [t.seconds for t in timed] for name, timed in runs.items()},
    }


def request_rate(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Scenario ``rate`` (see the module)."""
    with loopback_provider(root, args.delay_ms) as provider:
        inputs = root / "rate"
        planned = build_inputs(
            inputs,
            args.rate_executions,
            provider.base_url,
            judge=args.judge,
            in_flight=args.rate_in_flight,
            rpm=args.rate_rpm,
        )
        samples: list[tuple[float, int]] = []
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                samples.append((time.perf_counter(), provider.stats()["total"]))
                stop.wait(0.02)

        poller = threading.Thread(target=poll)
        poller.start()
        log(
            f"[run] eceb run, {planned:,} executions, {args.rate_rpm} requests a minute configured, "
            f"{args.delay_ms} ms a request ..."
        )
        try:
            done = eceb_run(inputs, root)
        finally:
            stop.set()
            poller.join()
        total = provider.stats()["total"]
    return {"planned": planned, "configured_rpm": args.rate_rpm, "eceb": done, **rates(samples, total)}


def rates(samples: list[tuple[float, int]], total: int) -> dict[str, float]:
    """Requests a minute from the provider's counter sampled over the run
    (``(time, requests so far)``, every 20 ms): over the whole ten-second
    windows that follow the first request (the pacer's windows are ten
    seconds long: a limiter may send a window's share at once, so the
    first-to-last span alone would overstate the rate); the busiest ten
    seconds, times six (never above the configured rate when the limit is
    kept); and from the first request to the last."""
    first = next(t for t, count in samples if count > 0)
    last = next(t for t, count in samples if count == total)
    windows = int((last - first) // 10)
    end = first + 10 * windows
    in_windows = max((count for t, count in samples if t < end), default=total)
    times = [t for t, _ in samples]
    busiest = 0
    for t, count in samples:
        after = bisect.bisect_left(times, t + 10)
        busiest = max(busiest, (samples[after][1] if after < len(samples) else total) - count)
    return {
        "requests": total,
        "span": last - first,
        "windows": windows,
        "achieved_rpm": in_windows * 60 / (10 * windows) if windows else (total - 1) * 60 / (last - first),
        "busiest_rpm": busiest * 6.0,
        "span_rpm": (total - 1) * 60 / (last - first),
    }


# --- the cluster scenario ---------------------------------------------------------------------------------------


CLUSTER_WORKERS = 2
"""``eceb-dist worker`` processes of the cluster scenario (the issue's case)."""
CLUSTER_RPM = 6000
"""``model.requests_per_minute`` (and the judge's, the same provider): 100 requests a second."""
CLUSTER_CONCURRENCY = 2
"""Pool processes a worker (``eceb-dist worker --concurrency``): each runs one execution shard at a time."""
CLUSTER_IN_FLIGHT = 16
"""The profile's ``in_flight``: executions each shard keeps in flight (threads)."""
TARGET_CLUSTER_RPS = 95
TARGET_OVERSHOOT_PERCENT = 5
TARGET_REDUCE_S = 10
TARGET_COORDINATOR_MIB = 256
POLL_S = 0.02
"""How often this process reads the job's phase while the job runs, and the provider's counters near its end."""
CLUSTER_TIMEOUT_S = 3 * 3600


@dataclass(frozen=True)
class DistWorker:
    """A running ``eceb-dist worker``: its node name, log file (JSON lines) and process."""

    name: str
    log_path: Path
    process: subprocess.Popen[bytes]

    def pool_processes(self) -> list[int]:
        """The process ids of its pool processes (the processes that run tasks), oldest first."""
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        except OSError:
            return []
        return sorted(int(child) for child in children)


def _dist_command() -> str:
    return str(Path(sys.executable).with_name("eceb-dist"))


@contextlib.contextmanager
def dist_workers(count: int, concurrency: int, env: dict[str, str], log_dir: Path) -> Iterator[list[DistWorker]]:
    """``count`` workers, each ``eceb-dist worker --concurrency N --log-format
    json`` (Celery's prefork pool), in sessions of their own; yields once each
    says it is ready, stops each with its pool at the end."""
    from tests.support.redis_server import stop_groups

    log_dir.mkdir(parents=True, exist_ok=True)
    token = random.Random().getrandbits(32)
    started: list[DistWorker] = []
    try:
        for index in range(count):
            name = f"eceb-bench-{token:08x}-{index}@127.0.0.1"
            log_path = log_dir / f"worker-{index}.log"
            command = [_dist_command(), "worker", "--concurrency", str(concurrency), "--log-format", "json"]
            command += ["--hostname", name, "--without-heartbeat"]
            with log_path.open("wb") as output:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=log_dir,
                    start_new_session=True,
                )
            started.append(DistWorker(name, log_path, process))
        deadline = time.monotonic() + 60
        waiting = list(started)
        while waiting:
            for worker in list(waiting):
                if f"{worker.name} ready." in worker.log_path.read_text(errors="replace"):
                    waiting.remove(worker)
                elif worker.process.poll() is not None or time.monotonic() > deadline:
                    tail = worker.log_path.read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"worker {worker.name} did not start; its log ends with:\n{tail}")
            time.sleep(0.05)
        yield started
    finally:
        stop_groups([worker.process for worker in started])


class CpuMeter:
    """CPU seconds so far (user + system) of the workers' pool processes and
    main processes, redis-server (``INFO cpu``) and the processes ``others``
    (name: pid)."""

    def __init__(self, workers: list[DistWorker], redis_client: Any, others: dict[str, int]) -> None:
        self.workers = workers
        self.redis = redis_client
        self.others = others

    def read(self) -> dict[str, float]:
        """The CPU seconds of each (see the class)."""
        info = self.redis.info("cpu")
        return {
            "worker pool processes": sum(_process_cpu(pid) for w in self.workers for pid in w.pool_processes()),
            "worker main processes": sum(_process_cpu(w.process.pid) for w in self.workers),
            "redis-server": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
            **{name: _process_cpu(pid) for name, pid in self.others.items()},
        }


def _status_memory(pid: int) -> dict[str, int]:
    """``VmHWM`` (peak RSS) and ``VmRSS`` of process ``pid``, bytes (``/proc/PID/status``)."""
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                found[key] = int(value.split()[0]) * 1024
    return found


_TASK_LINE = re.compile(
    r"Task (?P<name>[\w.]+)\[(?P<id>[^\]]+)\] (?:(?P<received>received)|succeeded in (?P<run>[0-9.e+-]+)s)"
)


@dataclass
class StepSpan:
    """A coordinating step of the job as its worker's log lines show it:
    the worker (index), the pool process that ran it (``ForkPoolWorker-N``),
    when it was received (Unix seconds) and how long it ran (seconds)."""

    name: str
    worker: int = -1
    process: str = ""
    received: float = 0.0
    runtime: float = -1.0


def job_steps(workers: list[DistWorker], job_id: str, names: tuple[str, ...]) -> dict[str, StepSpan]:
    """The steps ``names`` of job ``job_id`` (the last delivery of each), read from the workers' JSON log lines."""
    import datetime

    spans = {name: StepSpan(name) for name in names}
    for index, worker in enumerate(workers):
        for line in worker.log_path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            match = _TASK_LINE.search(record.get("message", ""))
            if record.get("job_id") != job_id or match is None or match["name"] not in spans:
                continue
            span = spans[match["name"]]
            if match["received"]:
                moment = datetime.datetime.fromisoformat(record["time"].replace("Z", "+00:00"))
                span.received, span.worker = moment.timestamp(), index
            else:
                span.runtime, span.process, span.worker = float(match["run"]), record.get("process", ""), index
    return spans


def second_windows(per_second: dict[str, int], limit_per_window: int) -> dict[str, Any]:
    """Requests a second from the provider's ``per_second`` counts (Unix
    second: requests received): over the whole ten-second windows that follow
    the first one (counted from the first second with a request; a window
    reaching into the last second, cut short by the run's end, is left out);
    the busiest ten consecutive seconds; and their ratio to
    ``limit_per_window``."""
    counts = {int(second): count for second, count in per_second.items()}
    first, last = min(counts), max(counts)
    windows = (last - first) // 10  # whole windows before the last second
    sums = [sum(counts.get(first + 10 * w + s, 0) for s in range(10)) for w in range(windows)]
    sustained = sum(sums[1:]) / (10 * (windows - 1)) if windows > 1 else 0.0
    busiest, busiest_at = 0, first
    for start in range(first, last - 8):
        total = sum(counts.get(start + s, 0) for s in range(10))
        if total > busiest:
            busiest, busiest_at = total, start
    return {
        "requests": sum(counts.values()),
        "first": first,
        "last": last,
        "windows": max(windows - 1, 0),
        "sustained_rps": sustained,
        "window_min": min(sums[1:], default=0),
        "window_max": max(sums[1:], default=0),
        "busiest": busiest,
        "busiest_at": busiest_at,
        "overshoot": busiest / limit_per_window - 1,
        "peak_second": max(counts.values()),
    }


@dataclass
class Followed:
    """What this process saw while a job ran: when the provider's answers
    reached their final count, and when the job's phase became terminal
    (Unix seconds, read every :data:`POLL_S`)."""

    last_answer: float
    ended: float
    phase: str


def follow(provider: Provider, store: Any, job_id: str, expected_calls: int) -> Followed:
    """Poll the provider's answered count and the job's phase until the job
    ends (see :class:`Followed`); the count every second until all but the
    last few hundred calls are answered, then every :data:`POLL_S`."""
    answered, changed = -1, time.time()
    deadline = time.monotonic() + CLUSTER_TIMEOUT_S
    reported = next_stats = time.monotonic()
    while True:
        now = time.time()
        if time.monotonic() >= next_stats:
            count = provider.stats()["answered"]
            if count != answered:
                answered, changed = count, now
            next_stats = time.monotonic() + (POLL_S if count >= expected_calls - 400 else 1.0)
        phase = store.phase(job_id)
        if phase is not None and phase.value in ("done", "failed", "cancelled"):
            return Followed(last_answer=changed, ended=time.time(), phase=phase.value)
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} did not end within {CLUSTER_TIMEOUT_S} s")
        if time.monotonic() - reported > 30:
            reported = time.monotonic()
            log(f"[cluster]   {answered:,} of {expected_calls:,} calls answered")
        time.sleep(POLL_S)


def cluster_run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Scenario ``cluster`` (see the module)."""
    import s3_rate

    from eceb_worker.cluster.client import Cluster
    from eceb_worker.io.objects import ObjectStore
    from tests.support.redis_server import running_redis

    with contextlib.ExitStack() as stack:
        provider = stack.enter_context(loopback_provider(root, args.delay_ms))
        inputs = root / "cluster"
        planned = build_inputs(
            inputs,
            args.cluster_executions,
            provider.base_url,
            judge="llm",
            in_flight=args.cluster_in_flight,
            rpm=CLUSTER_RPM,
        )
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="services-", dir=root)))
        endpoint, moto_pid = stack.enter_context(s3_rate.moto_server(scratch, None))
        server = stack.enter_context(running_redis(scratch))
        redis_client = server.client()
        stack.callback(redis_client.close)
        url = server.url()
        bucket = f"eceb-bench-run-{uuid.uuid4().hex[:12]}"
        ObjectStore(endpoint).client.create_bucket(Bucket=bucket)
        env = {**os.environ, "ECEB_BROKER_URL": url, "ECEB_S3_ENDPOINT_URL": endpoint, KEY_ENV: API_KEY}
        env.pop("ECEB_RESULT_BACKEND", None)
        log(f"[cluster] starting {CLUSTER_WORKERS} workers, --concurrency {args.cluster_concurrency} each ...")
        workers = stack.enter_context(dist_workers(CLUSTER_WORKERS, args.cluster_concurrency, env, scratch / "logs"))
        hub = Cluster(url, url)
        stack.callback(hub.app.close)
        out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
        command = [_dist_command(), "run", str(inputs / "benchmark.json"), str(inputs / "profile.json")]
        command += ["--corpus", str(inputs / "corpus"), "--out", out]
        command += ["--shard-executions", str(args.cluster_shard_executions)]
        log(
            f"[cluster] eceb-dist run, {planned:,} executions ({2 * planned:,} calls), {CLUSTER_RPM:,} requests "
            f"a minute, {args.delay_ms} ms an answer ..."
        )
        meter = CpuMeter(workers, redis_client, {"provider": provider.pid, "S3 (moto)": moto_pid})
        before = meter.read()
        submitted_at = time.time()
        submitted = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if submitted.returncode != 0:
            raise RuntimeError(f"eceb-dist run exited {submitted.returncode}:\n{submitted.stderr}")
        job_id = submitted.stdout.strip()
        followed = follow(provider, hub.store, job_id, 2 * planned)
        after = meter.read()
        record = hub.store.get(job_id)
        stats = provider.stats()
        memory = {(index, pid): _status_memory(pid) for index, w in enumerate(workers) for pid in w.pool_processes()}
        deadline = time.monotonic() + 30  # the reduce logs its end after the job is done (its partials deleted)
        while True:
            time.sleep(0.5)  # the last log lines reach the files
            steps = job_steps(workers, job_id, ("eceb.coordinate", "eceb.run_finish"))
            if steps["eceb.run_finish"].runtime >= 0 or time.monotonic() > deadline:
                break
        head = ObjectStore(endpoint).client.head_object(Bucket=bucket, Key=out.removeprefix(f"s3://{bucket}/"))
        if record is None or followed.phase != "done":
            logs = "\n".join(w.log_path.read_text(errors="replace")[-3000:] for w in workers)
            raise RuntimeError(f"job {job_id} ended {followed.phase}: {record and record.error}\n{logs}")
    return {
        "planned": planned,
        "calls": 2 * planned,
        "job_id": job_id,
        "record": record,
        "cpu": {name: after[name] - before[name] for name in after},
        "answered": stats["answered"],
        "total": stats["total"],
        "rates": second_windows(stats["per_second"], CLUSTER_RPM // 6),
        "followed": followed,
        "submitted_at": submitted_at,
        "memory": memory,
        "steps": steps,
        "last_modified": head["LastModified"].timestamp(),
    }


def peer_run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """The peer of scenario ``cluster``: ``eceb run`` in one process with the
    same limit and as many executions in flight as the cluster keeps, its
    rate counted at the provider the same way."""
    in_flight = CLUSTER_WORKERS * args.cluster_concurrency * args.cluster_in_flight
    with loopback_provider(root, args.delay_ms) as provider:
        inputs = root / "peer"
        planned = build_inputs(
            inputs, args.peer_executions, provider.base_url, judge="llm", in_flight=in_flight, rpm=CLUSTER_RPM
        )
        log(f"[cluster] the peer: eceb run, {planned:,} executions, {in_flight} in flight ...")
        done = eceb_run(inputs, root)
        stats = provider.stats()
    return {
        "planned": planned,
        "in_flight": in_flight,
        "eceb": done,
        "answered": stats["answered"],
        "rates": second_windows(stats["per_second"], CLUSTER_RPM // 6),
    }


# --- the report ---------------------------------------------------------------------------------------------------


def report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    from rehash import cpu_model, machine

    model, simd = cpu_model()
    print()
    print("eceb run against the loopback model provider")
    print(f"CPU: {model}, {simd}; machine: {machine()}")
    print(f"command: {' '.join(['python', *sys.argv])}")
    judge = "LLM judge (two calls an execution)" if args.judge == "llm" else "command judge /bin/echo (one call)"
    print(f"judge: {judge}")
    if "overhead" in results:
        o = results["overhead"]
        rate = o["provider"]
        print()
        print(
            f"provider alone ({args.in_flight} connections, 12 KB prompts): {rate['rate']:,.0f} requests/s, "
            f"{rate['cpu_per_request'] * 1e3:.3f} ms of its CPU a request "
            f"(at most {1 / rate['cpu_per_request']:,.0f}/s on its one interpreter)"
        )
        eceb, floor = o["eceb"], o["floor"]
        print()
        header = (
            f"{'':<34} {'executions':>10} {'calls':>7} {'s':>8} {'exec/s':>8} {'calls/s':>8} "
            f"{'peak MiB':>9} {'CPU s':>7} {'ratio':>6}  {'target':<20} met?"
        )
        print(header)
        print("-" * len(header))
        met = eceb.seconds <= TARGET_SECONDS and eceb.peak_bytes <= TARGET_MIB * MIB
        targeted = o["planned"] >= TARGET_EXECUTIONS and args.in_flight == TARGET_IN_FLIGHT  # the case
        target = f"{'<= 60 s, <= 300 MiB':<20} {'yes' if met else 'no'}" if targeted else "(10,000, 32 in flight)"
        print(
            f"{'eceb run, ' + str(args.in_flight) + ' in flight':<34} {o['planned']:>10,} {o['calls']:>7,} "
            f"{eceb.seconds:>8.2f} {o['planned'] / eceb.seconds:>8,.0f} {o['calls'] / eceb.seconds:>8,.0f} "
            f"{eceb.peak_bytes / MIB:>9.0f} {eceb.cpu:>7.2f} {eceb.seconds / floor.seconds:>5.2f}x  "
            f"{target}"
        )
        print(
            f"{'floor: SDK calls from a thread pool':<34} {'':>10} {o['calls']:>7,} {floor.seconds:>8.2f} "
            f"{'':>8} {o['calls'] / floor.seconds:>8,.0f} {floor.peak_bytes / MIB:>9.0f} {floor.cpu:>7.2f}"
        )
        print(
            f"{'provider during eceb run':<34} {'':>10} {'':>7} {'':>8} {'':>8} {'':>8} {'':>9} {o['server_cpu']:>7.2f}"
        )
        for name, seconds in o["all"].items():
            print(f"{name} runs, in turn: {', '.join(f'{s:.2f}' for s in seconds)} s")
        print()
        print(
            f"eceb's overhead over the floor: {eceb.seconds - floor.seconds:.2f} s, "
            f"{(eceb.seconds - floor.seconds) / o['planned'] * 1e3:.2f} ms an execution; "
            f"CPU {(eceb.cpu - floor.cpu) / o['planned'] * 1e3:.2f} ms an execution beyond the floor's"
        )
    if "rate" in results:
        r = results["rate"]
        ratio = r["achieved_rpm"] / r["configured_rpm"]
        met = "yes" if ratio * 100 >= TARGET_RATE_PERCENT else "no"
        print()
        print(
            f"requests_per_minute {r['configured_rpm']:,}, {args.delay_ms} ms an answer, "
            f"{args.rate_in_flight} in flight, {r['planned']:,} executions, {r['requests']:,} requests "
            f"(eceb run: {r['eceb'].seconds:.1f} s)"
        )
        header = f"{'requests a minute (server side)':<52} {'rate':>7} {'of configured':>14}  {'target':<8} met?"
        print(header)
        print("-" * len(header))
        print(
            f"{'over the ' + str(r['windows']) + ' ten-second windows from the first request':<52} "
            f"{r['achieved_rpm']:>7,.0f} {ratio:>14.1%}  {'>= 90 %':<8} {met}"
        )
        for label, key in (
            ("busiest ten seconds, x 6", "busiest_rpm"),
            (f"first to last request ({r['span']:.1f} s)", "span_rpm"),
        ):
            print(f"{label:<52} {r[key]:>7,.0f} {r[key] / r['configured_rpm']:>14.1%}")
    if "cluster" in results:
        report_cluster(args, results["cluster"], results.get("peer"))


def _met(ok: bool) -> str:
    return "yes" if ok else "no"


def report_cluster(args: argparse.Namespace, c: dict[str, Any], peer: dict[str, Any] | None) -> None:
    """The cluster scenario's figures, side by side (see the module)."""
    record, followed, rates = c["record"], c["followed"], c["rates"]
    limit_rps = CLUSTER_RPM / 60
    in_flight = CLUSTER_WORKERS * args.cluster_concurrency * args.cluster_in_flight
    print()
    print(
        f"eceb-dist run on {CLUSTER_WORKERS} workers (eceb-dist worker --concurrency {args.cluster_concurrency}: "
        f"{CLUSTER_WORKERS * args.cluster_concurrency} pool processes, one execution shard each at a time), "
        f"in_flight {args.cluster_in_flight} a shard ({in_flight} executions in flight at most, each one call "
        f"at a time: up to {in_flight * 1000 // max(args.delay_ms, 1):,} calls a second at {args.delay_ms} ms "
        f"each, {in_flight * 1000 / max(args.delay_ms, 1) / limit_rps:.1f} times the limit), "
        f"--shard-executions {args.cluster_shard_executions}"
    )
    print(
        f"limit: model.requests_per_minute {CLUSTER_RPM:,} (the judge: the same provider, the same pacer), "
        f"{limit_rps:.0f} requests a second, kept in moving windows of 10 s of {CLUSTER_RPM // 6:,} requests "
        "in Redis, shared by every worker; no tokens_per_minute: the token window counts in units of "
        "ceil(tpm / 1000) tokens, so any token limit caps calls at 1,000 a minute (17 a second) whatever its size"
    )
    done = record.phase.value == "done" and record.observations == record.executions == c["planned"]
    print(
        f"job {c['job_id']}: {record.phase.value}, {record.observations:,} observations of "
        f"{record.executions:,} executions; the provider answered {c['answered']:,} of {c['total']:,} "
        f"requests ({c['calls']:,} planned calls); correct: {_met(done and c['answered'] == c['calls'])}"
    )
    print()
    header = f"{'':<62} {'figure':>14} {'of limit':>9}  {'target':<14} met?"
    print(header)
    print("-" * len(header))
    rps = rates["sustained_rps"]
    print(
        f"{'requests a second at the server, ' + str(rates['windows']) + ' whole 10-s windows after the first':<62} "
        f"{rps:>14.1f} {rps / limit_rps:>9.1%}  {'>= 95 /s':<14} {_met(rps >= TARGET_CLUSTER_RPS)}"
    )
    print(
        f"{'  those windows: fewest and most requests':<62} "
        f"{str(rates['window_min']) + ' .. ' + str(rates['window_max']):>14}"
    )
    over = rates["overshoot"]
    print(
        f"{'busiest 10 consecutive seconds at the server (requests)':<62} {rates['busiest']:>14,} "
        f"{rates['busiest'] / (CLUSTER_RPM // 6):>9.1%}  {'<= 105 %':<14} "
        f"{_met(over * 100 <= TARGET_OVERSHOOT_PERCENT)}"
    )
    print(f"{'  busiest single second (requests)':<62} {rates['peak_second']:>14,}")
    reduce_s = followed.ended - followed.last_answer
    print(
        f"{'last answer at the server to the job done (s)':<62} {reduce_s:>14.2f} {'':>9}  {'<= 10 s':<14} "
        f"{_met(reduce_s <= TARGET_REDUCE_S)}"
    )
    finish, coordinate = c["steps"]["eceb.run_finish"], c["steps"]["eceb.coordinate"]
    print(f"{'  last answer to eceb.run_finish received (s)':<62} {finish.received - followed.last_answer:>14.2f}")
    print(f"{'  eceb.run_finish running (s, its log line)':<62} {finish.runtime:>14.2f}")
    print(
        f"{'  ended (job state), LastModified (the run object), Unix s':<62} "
        f"{str(record.ended) + ', ' + str(int(c['last_modified'])):>14}"
    )
    coordinator = _coordinator_memory(c, (finish, coordinate))
    peak = max((m.get("VmHWM", 0) for m in c["memory"].values()), default=0)
    print(
        f"{'coordinator peak RSS (VmHWM: run_finish and coordinate)':<62} "
        f"{coordinator / MIB:>14.0f} {'':>9}  {'<= 256 MiB':<14} {_met(coordinator <= TARGET_COORDINATOR_MIB * MIB)}"
    )
    print(f"{'  the most of any pool process (MiB)':<62} {peak / MIB:>14.0f}")
    print(f"{'floor: the limit itself (requests a second)':<62} {limit_rps:>14.1f} {1:>9.1%}")
    if peer is not None:
        p, timed = peer["rates"], peer["eceb"]
        label = f"peer: eceb run, one process, {peer['in_flight']} in flight, {p['windows']} windows"
        if p["windows"]:
            print(f"{label:<62} {p['sustained_rps']:>14.1f} {p['sustained_rps'] / limit_rps:>9.1%}")
        else:
            print(f"{label:<62} {'(too short)':>14}")
        label = "  peer: busiest 10 s (requests), run (s), peak RSS (MiB)"
        figures = f"{p['busiest']}, {timed.seconds:.1f}, {timed.peak_bytes / MIB:.0f}"
        print(f"{label:<62} {figures:>14}")
    seconds = followed.ended - c["submitted_at"]
    print(
        f"CPU seconds over the job's {seconds:.0f} s (2 cores: {2 * seconds:.0f} s available): "
        + ", ".join(f"{name} {cpu:.1f}" for name, cpu in c["cpu"].items())
    )
    print()
    print(
        "timing: this process read the provider's answered count and the job's phase (Redis) every "
        f"{POLL_S * 1000:.0f} ms; the last answer is the first reading at the final count, the job's end the "
        "first reading of phase done. Memory: VmHWM of every pool process of both workers "
        "(/proc/PID/status) after the job; the coordinating steps ran in:"
    )
    for span in (coordinate, finish):
        print(f"  {span.name}: worker {span.worker + 1}, {span.process or '?'}, {span.runtime:.2f} s")
    for (worker, pid), memory in sorted(c["memory"].items()):
        print(
            f"  worker {worker + 1} pool process {pid}: VmHWM {memory.get('VmHWM', 0) / MIB:.0f} MiB, "
            f"VmRSS {memory.get('VmRSS', 0) / MIB:.0f} MiB"
        )


def _coordinator_memory(c: dict[str, Any], spans: tuple[StepSpan, ...]) -> int:
    """The larger VmHWM of the pool processes that ran ``spans`` (the reduce
    and the first step; ``ForkPoolWorker-N`` of a worker is the ``N``-th
    pool process it forked: pids in ascending order, none replaced during
    the job); the most of any pool process when one cannot be told."""
    found = []
    for span in spans:
        pools = sorted(pid for worker, pid in c["memory"] if worker == span.worker)
        number = span.process.removeprefix("ForkPoolWorker-")
        if not (number.isdigit() and 0 < int(number) <= len(pools)):
            return max((m.get("VmHWM", 0) for m in c["memory"].values()), default=0)
        found.append(c["memory"][(span.worker, pools[int(number) - 1])].get("VmHWM", 0))
    return max(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="overhead,rate", help="overhead, rate, cluster (comma-separated)")
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--judge", choices=("llm", "command"), default="llm")
    parser.add_argument("--runs", type=int, default=1, help="eceb and the floor alternated, best kept")
    parser.add_argument("--rate-rpm", type=int, default=600)
    parser.add_argument("--rate-executions", type=int, default=300)
    parser.add_argument("--rate-in-flight", type=int, default=16)
    parser.add_argument("--delay-ms", type=int, default=200)
    parser.add_argument("--cluster", action="store_true", help="the cluster scenario alone (--scenarios cluster)")
    parser.add_argument("--cluster-executions", type=int, default=20_000)
    parser.add_argument("--cluster-concurrency", type=int, default=CLUSTER_CONCURRENCY, help="each worker's pool")
    parser.add_argument("--cluster-in-flight", type=int, default=CLUSTER_IN_FLIGHT, help="the profile's in_flight")
    parser.add_argument("--cluster-shard-executions", type=int, default=100, help="eceb-dist run --shard-executions")
    parser.add_argument("--peer-executions", type=int, default=3000, help="the peer eceb run's executions (0: none)")
    parser.add_argument("--keep", type=Path, default=None, help="build and keep everything in this directory")
    parser.add_argument("--replay", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay is not None:
        return replay(args.replay, args.base_url, args.in_flight)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    scenarios = {name.strip() for name in args.scenarios.split(",") if name.strip()}
    if args.cluster:
        scenarios = {"cluster"}
    unknown = scenarios - {"overhead", "rate", "cluster"}
    if unknown:
        sys.exit(f"unknown scenario(s) {', '.join(sorted(unknown))}: choose among overhead, rate, cluster")
    if "cluster" in scenarios and args.judge != "llm":
        sys.exit("the cluster scenario makes its runs with the LLM judge (the judge shares the model's limit)")
    results: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            root = args.keep.resolve()
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eceb-bench-run-")))
        if "overhead" in scenarios:
            results["overhead"] = overhead(args, root)
        if "rate" in scenarios:
            results["rate"] = request_rate(args, root)
        if "cluster" in scenarios:
            results["cluster"] = cluster_run(args, root)
            if args.peer_executions > 0:
                results["peer"] = peer_run(args, root)
    report(args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
