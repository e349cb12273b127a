"""S3 figures of one worker against a loopback moto server: GETs per second, re-hash throughput.

Usage::

    python benchmarks/s3_rate.py [--small 4000] [--small-bytes 4096] [--large 6]
        [--large-bytes 33554432] [--concurrency 1,4,16,32] [--runs 3] [--no-pin]
        [--json PATH] [--data-dir DIR]

Starts ``python -m moto.server`` on a free port of 127.0.0.1 (through
``tests/support/s3_server.py``, with its fake credentials; stopped at the
end), pinned to the second CPU, while this process, the worker, is pinned to
the first (``--no-pin``: neither), so that the worker's CPU time and the
server's are measured apart. Two corpora (``benchmarks/synthetic.py``,
registered with eceb's ``register_corpus``) are uploaded under
``s3://BUCKET/small`` (``--small`` files of ``--small-bytes``, 100 a
directory under four top-level prefixes) and ``s3://BUCKET/large``
(``--large`` files of ``--large-bytes``). Then, best of ``--runs``, in turn:

* GETs: :meth:`S3Storage.hash_artifacts` over every small object, each read
  with one GET and hashed, at each ``--concurrency`` (threads and pooled
  connections of one process, ``StorageSpec.concurrency``; 16 is eceb's
  default): GETs per second, and the CPU time per GET of the worker
  (``time.process_time``, all its threads) and of the server
  (``/proc/PID/stat``);
* re-hash: ``verify_corpus`` of each registry from S3 with the in-process
  executor and one worker (what one re-hash shard task does with its
  artifacts, at the default concurrency): files/s, MB/s and the worker's CPU
  time per file and per MB; the same corpora from local disk for comparison.

The worker's CPU time per GET and per MB bound what one worker process can
ask of S3 whatever the server (its requests are built and parsed by
botocore under the GIL: about one core per process); against moto the rates
themselves are bounded by the server, itself Python on one core. ``--json``
writes the figures for ``benchmarks/scale_model.py``. MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from synthetic import SyntheticCorpus, corpus_dir, ensure_corpus, log

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
MB = 1_000_000


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


@contextlib.contextmanager
def moto_server(scratch: Path, cpu: int | None) -> Iterator[tuple[str, int]]:
    """A moto server on 127.0.0.1 (``tests/support/s3_server.py``), started
    while this thread is pinned to ``cpu`` so that it runs there: its
    endpoint and pid. The fake credentials are set in this process's
    environment meanwhile."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import pytest

    from tests.support.s3_server import _ENVIRONMENT, _start, _stop

    saved = {name: os.environ.get(name) for name in _ENVIRONMENT}
    for name, value in _ENVIRONMENT.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.environ["NO_PROXY"] = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1", "localhost"]))
    previous = os.sched_getaffinity(0)
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        try:
            process, port = _start(scratch / "moto-server.log")
        except pytest.fail.Exception as exc:  # it reports a start-up failure as a failed test
            raise RuntimeError(str(exc)) from None
    finally:
        os.sched_setaffinity(0, previous)
    try:
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        _stop(process)
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def upload(endpoint: str, bucket: str, prefix: str, root: Path) -> int:
    """Upload every file under ``root`` to ``bucket/prefix/<path>``; the count."""
    from tests.support.s3_server import REGION, S3Server

    server = S3Server(endpoint_url=endpoint, region=REGION, secrets=(), log_path=Path(os.devnull))
    return len(server.upload_tree(root, bucket, prefix))


def timed(body: Callable[[], Any], server_pid: int) -> dict[str, float]:
    """Wall seconds of ``body()``, and the CPU seconds of this process and of the server meanwhile."""
    cpu, server = time.process_time(), _process_cpu(server_pid)
    started = time.perf_counter()
    body()
    wall = time.perf_counter() - started
    return {
        "seconds": wall,
        "worker_cpu": time.process_time() - cpu,
        "server_cpu": _process_cpu(server_pid) - server,
    }


def best(samples: list[dict[str, float]]) -> dict[str, float]:
    return min(samples, key=lambda s: s["seconds"])


def measure(args: argparse.Namespace, corpora: dict[str, SyntheticCorpus], cpus: list[int | None]) -> dict[str, Any]:
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.executors import InProcessExecutor
    from eceb_worker.io.s3_corpus import S3Storage
    from eceb_worker.pipeline.embedded import verify_corpus
    from eceb_worker.pipeline.inputs import load_registry

    results: dict[str, Any] = {"gets": [], "rehash": []}
    with tempfile.TemporaryDirectory(prefix="s3-rate-") as scratch, moto_server(Path(scratch), cpus[1]) as served:
        endpoint, server_pid = served
        if cpus[0] is not None:
            os.sched_setaffinity(0, {cpus[0]})
        import boto3

        bucket = f"eceb-bench-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
        registries = {}
        for name, corpus in corpora.items():
            log(f"[s3] uploading the {name} corpus ({corpus.files_count:,} files) ...")
            upload(endpoint, bucket, name, corpus.files)
            registries[name] = load_registry(corpus.registry)
        paths = [a.path for a in registries["small"].artifacts]
        for concurrency in args.concurrency:
            storage = S3Storage(f"s3://{bucket}/small", endpoint_url=endpoint, concurrency=concurrency)
            storage.hash_artifacts(paths[:64])  # warm-up: connections, imports
            log(f"[s3] {len(paths):,} GETs at concurrency {concurrency} ...")
            samples = []
            for _ in range(args.runs):
                found: list[Any] = []
                samples.append(timed(lambda s=storage, f=found: f.extend(s.hash_artifacts(paths)), server_pid))
                if any(not isinstance(r, tuple) for r in found):
                    raise RuntimeError("a GET failed")
            results["gets"].append({"concurrency": concurrency, "gets": len(paths), **best(samples)})
        executor = InProcessExecutor(1)
        for name, corpus in corpora.items():
            registry = registries[name]
            total = sum(a.size_bytes for a in registry.artifacts)
            for source in ("s3", "local"):
                spec = (
                    StorageSpec(source=f"s3://{bucket}/{name}", endpoint_url=endpoint)
                    if source == "s3"
                    else StorageSpec(source=str(corpus.files))
                )
                verify_corpus(registry, spec, executor=executor)  # warm-up
                log(f"[s3] re-hash of the {name} corpus from {source} ...")
                samples = []
                for _ in range(args.runs):
                    outcome: list[Any] = []
                    samples.append(
                        timed(
                            lambda r=registry, s=spec, o=outcome: o.append(verify_corpus(r, s, executor=executor)),
                            server_pid,
                        )
                    )
                    if not outcome[0].ok:
                        raise RuntimeError(f"the {name} corpus did not verify from {source}")
                results["rehash"].append(
                    {
                        "corpus": name,
                        "source": source,
                        "files": len(registry.artifacts),
                        "bytes": total,
                        **best(samples),
                    }
                )
    return results


def report(results: dict[str, Any], args: argparse.Namespace, cpus: list[int | None]) -> None:
    from rehash import machine

    print()
    print("S3 figures of one worker process against a loopback moto server (server mode)")
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"pinning: worker (this process) CPU {cpus[0]}, moto server CPU {cpus[1]}; best of {args.runs} runs each")
    print()
    header = (
        f"{'GETs of small objects':<28} {'GET/s':>8} {'worker CPU/GET':>15} {'server CPU/GET':>15} {'worker cores':>13}"
    )
    print(header)
    print("-" * len(header))
    for row in results["gets"]:
        gets = row["gets"]
        print(
            f"{'concurrency ' + str(row['concurrency']):<28} {gets / row['seconds']:>8,.0f} "
            f"{row['worker_cpu'] / gets * 1e3:>12.3f} ms {row['server_cpu'] / gets * 1e3:>12.3f} ms "
            f"{row['worker_cpu'] / row['seconds']:>13.2f}"
        )
    print()
    header = (
        f"{'re-hash, one worker':<28} {'files':>7} {'s':>7} {'files/s':>8} {'MB/s':>7} "
        f"{'CPU/file':>10} {'CPU/MB':>9} {'server CPU/MB':>14}"
    )
    print(header)
    print("-" * len(header))
    for row in results["rehash"]:
        mb = row["bytes"] / MB
        print(
            f"{row['corpus'] + ' from ' + row['source']:<28} {row['files']:>7,} {row['seconds']:>7.3f} "
            f"{row['files'] / row['seconds']:>8,.0f} {mb / row['seconds']:>7,.0f} "
            f"{row['worker_cpu'] / row['files'] * 1e3:>7.3f} ms {row['worker_cpu'] / mb * 1e3:>6.3f} ms "
            f"{row['server_cpu'] / mb * 1e3:>11.3f} ms"
        )
    print()
    print("worker CPU/GET bounds the GETs one worker process can send whatever the store: 1 / (CPU/GET) a second")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "eceb-bench-s3")
    parser.add_argument("--small", type=int, default=4000, help="small objects (default 4,000)")
    parser.add_argument("--small-bytes", type=int, default=4096)
    parser.add_argument("--large", type=int, default=6, help="large objects (default 6)")
    parser.add_argument("--large-bytes", type=int, default=32 * 1024 * 1024)
    parser.add_argument("--concurrency", default="1,4,16,32", help="reads in flight per process, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (benchmarks/scale_model.py)")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    args.data_dir.mkdir(parents=True, exist_ok=True)
    allowed = sorted(os.sched_getaffinity(0))
    cpus: list[int | None] = [None, None] if args.no_pin or len(allowed) < 2 else [allowed[0], allowed[1]]
    corpora = {}
    for name, count, size in (("small", args.small, args.small_bytes), ("large", args.large, args.large_bytes)):
        params: dict[str, Any] = {
            "files_count": count,
            "distribution": "fixed",
            "median_bytes": size,
            "sigma": 0.0,
            "total_bytes": None,
            "seed": 0,
        }
        probe = SyntheticCorpus(**params, root=Path())
        corpora[name] = SyntheticCorpus(**params, root=corpus_dir(args.data_dir, probe.expected_manifest()))
        ensure_corpus(corpora[name])
    results = measure(args, corpora, cpus)
    report(results, args, cpus)
    if args.json is not None:
        payload = {"command": " ".join(["python", *sys.argv]), "cpus": cpus, **results}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
