"""The journal of ``eceb-dist run`` in a real Redis (eceb_worker/cluster/run_journal.py):
the rules of ``eceb run``'s SQLite journal, checked on both (and against each
other on random sequences of calls), and what the cluster adds: processes
racing for the last authorized call, a reply lost and the command sent again,
attempts lost with their process, records forgotten, Redis restarted."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.synchronize
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis

from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.cluster.run_journal import MAX_MICRO_USD, RedisRunJournal
from eceb_worker.cluster.state import JOB_TTL_S
from eceb_worker.errors import ExecutionRefused, InputError, OutcomeUnknown, StorageError
from eceb_worker.families.eceb.making.journal import Attempt, JournalBinding
from eceb_worker.io.run_journal import RunJournal
from tests.support.redis_server import RedisServer, running_redis

pytestmark = pytest.mark.cluster

PLAN = "a" * 64
DB = 9
POLICY = RetryPolicy(max_retries=0, outage_s=60)
REACHING = POLICY.reaching


def _client(port: int, password: str) -> Any:
    """A client retrying its commands through an outage, as the result backend's does."""
    return redis.Redis(host="127.0.0.1", port=port, password=password, db=DB, retry=POLICY.redis_retry())


def _binding(authorized: int = 10, stop: int = 0) -> JournalBinding:
    return JournalBinding(plan_digest=PLAN, authorized_calls=authorized, stop_micro_usd=stop)


def _new(client: Any, *, authorized: int = 10, stop: int = 0) -> RedisRunJournal:
    return RedisRunJournal.open(client, uuid.uuid4().hex, _binding(authorized, stop), reaching=REACHING)


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    connection = _client(redis_server.port, redis_server.password)
    yield connection
    connection.close()


# -- the rules of every journal, on both -------------------------------------


class Opened:
    """A journal of either kind, with what a run does to it beyond the
    Protocol: new limits (a resumed run), its process stopped."""

    def __init__(self, kind: str, path: Path, client: Any, authorized: int, stop: int) -> None:
        self.kind = kind
        self.path = path
        self.client = client
        self.journal: Any
        if kind == "sqlite":
            self.journal = RunJournal.create(path, _binding(authorized, stop))
        else:
            self.journal = _new(client, authorized=authorized, stop=stop)

    def limits(self, authorized: int, stop: int) -> None:
        if self.kind == "sqlite":
            self.journal.set_limits(authorized_calls=authorized, stop_micro_usd=stop)
        else:
            self.journal = RedisRunJournal.open(
                self.client, self.journal.journal_id, _binding(authorized, stop), reaching=REACHING
            )

    def process_stopped(self) -> None:
        """The process sending the calls in flight stopped: they are of unknown outcome."""
        if self.kind == "sqlite":
            self.journal.close()
            self.journal = RunJournal.open(self.path, plan_digest=PLAN)
        else:
            self.journal.lost(self.journal.in_flight())

    def close(self) -> None:
        if self.kind == "sqlite":
            self.journal.close()


@pytest.fixture(params=["sqlite", "redis"])
def opened(request: pytest.FixtureRequest, tmp_path: Path, client: Any) -> Iterator[Callable[..., Opened]]:
    """Opens a journal of each kind: ``opened(authorized=10, stop=0)``."""
    made: list[Opened] = []

    def open_one(authorized: int = 10, stop: int = 0) -> Opened:
        one = Opened(request.param, tmp_path / f"j{len(made)}", client, authorized, stop)
        made.append(one)
        return one

    yield open_one
    for one in made:
        one.close()


def test_a_made_call_is_never_sent_again(opened: Callable[..., Opened]) -> None:
    journal = opened().journal
    attempt = journal.begin("x:answer", 5)
    journal.finish(attempt, "ok", cost_micro_usd=3, record=b"{}")
    with pytest.raises(ExecutionRefused, match="call x:answer was made before: nothing runs twice"):
        journal.begin("x:answer", 5)
    assert journal.result("x:answer") == b"{}"
    assert journal.result("y:answer") is None


def test_a_final_failure_is_an_outcome_and_a_transient_one_is_retried(opened: Callable[..., Opened]) -> None:
    journal = opened().journal
    first = journal.begin("x:answer", 5)
    journal.finish(first, "transient", maybe_billed=True, detail="HTTP 500")
    second = journal.begin("x:answer", 5)
    assert second.attempt == 2
    journal.finish(second, "final", detail="HTTP 400")
    with pytest.raises(ExecutionRefused, match=r"call x:answer failed finally \(HTTP 400\): nothing runs twice"):
        journal.begin("x:answer", 5)
    summary = journal.summary()
    assert (summary.failed, summary.retried, summary.possible_micro_usd) == (1, 1, 5)


def test_authorized_calls_count_every_start(opened: Callable[..., Opened]) -> None:
    journal = opened(authorized=2).journal
    journal.begin("a:answer", 1)
    journal.begin("b:answer", 1)
    with pytest.raises(ExecutionRefused, match="all 2 authorized paid calls have started"):
        journal.begin("c:answer", 1)
    journal.begin("c:judge", 0, paid=False)  # an unpaid call does not count


def test_the_spending_stop_counts_what_may_have_been_billed(opened: Callable[..., Opened]) -> None:
    handle = opened(stop=100)
    journal = handle.journal
    a = journal.begin("a:answer", 60)
    journal.finish(a, "ok", cost_micro_usd=30, record=b"{}")
    b = journal.begin("b:answer", 60)  # 30 known + 60 in flight: 90
    reason = (
        "the spend known and possible (90 micro-USD) and this call's upper bound (20) would pass the stop of 100 "
        "micro-USD"
    )
    with pytest.raises(ExecutionRefused) as refused:
        journal.begin("c:answer", 20)
    assert str(refused.value) == f"spending stopped: {reason}"
    journal.finish(b, "ok", cost_micro_usd=10, record=b"{}")
    with pytest.raises(ExecutionRefused, match="spending stopped"):  # a stop stays recorded
        journal.begin("d:answer", 1)
    assert journal.stops() == [reason]
    handle.limits(10, 0)
    assert handle.journal.stops() == []
    handle.journal.begin("d:answer", 1)


def test_an_attempt_left_in_flight_is_unknown_after_its_process_stopped(opened: Callable[..., Opened]) -> None:
    handle = opened()
    handle.journal.begin("a:answer", 40)
    handle.process_stopped()
    journal = handle.journal
    with pytest.raises(OutcomeUnknown, match="--rerun-unknown"):
        journal.begin("a:answer", 40)
    assert journal.summary().unknown == 1
    again = journal.begin("a:answer", 40, rerun_unknown=True)
    assert again.attempt == 2
    assert journal.summary().unknown == 0
    assert [a.outcome for a in journal.attempts("a:answer")] == ["unknown", None]
    assert journal.attempts("a:answer")[0].maybe_billed
    assert journal.summary().possible_micro_usd == 80  # both may be billed until the second answers


def test_an_attempt_not_in_flight_cannot_be_finished(opened: Callable[..., Opened]) -> None:
    journal = opened().journal
    attempt = journal.begin("a:answer", 4)
    journal.finish(attempt, "transient", detail="HTTP 503")
    with pytest.raises(InputError, match="holds no attempt 1 of call a:answer in flight") as refused:
        journal.finish(attempt, "ok", cost_micro_usd=1, record=b"{}")
    assert refused.value.problems[0].file == journal.where
    assert journal.begin("a:answer", 4).attempt == 2
    with pytest.raises(ExecutionRefused, match="call a:answer is in flight"):
        journal.begin("a:answer", 4)


def test_attempts_are_listed_in_order_of_start_and_the_not_ok_apart(opened: Callable[..., Opened]) -> None:
    journal = opened().journal
    a1 = journal.begin("a:answer", 5)
    b1 = journal.begin("b:answer", 6)
    journal.finish(a1, "transient", maybe_billed=True, detail="timeout")
    journal.finish(b1, "ok", cost_micro_usd=2, record=b"b")
    a2 = journal.begin("a:answer", 5)
    c1 = journal.begin("c:judge", 0, paid=False)
    journal.finish(c1, "final", detail="exit 2")
    assert [(a.seq, a.call_id, a.attempt) for a in journal.attempts()] == [
        (1, "a:answer", 1),
        (2, "b:answer", 1),
        (3, "a:answer", 2),
        (4, "c:judge", 1),
    ]
    assert [(a.call_id, a.attempt, a.outcome, a.detail) for a in journal.attempts_not_ok()] == [
        ("a:answer", 1, "transient", "timeout"),
        ("a:answer", 2, None, ""),
        ("c:judge", 1, "final", "exit 2"),
    ]
    assert [a.seq for a in journal.attempts("a:answer")] == [1, 3]
    assert journal.attempts("missing") == []
    journal.finish(a2, "ok", cost_micro_usd=4, record=b"a")
    assert [a.call_id for a in journal.attempts_not_ok()] == ["a:answer", "c:judge"]


def test_threads_racing_for_the_last_authorized_call_start_one(opened: Callable[..., Opened]) -> None:
    journal = opened(authorized=1).journal
    started: list[str] = []
    refused: list[str] = []

    def race(name: str) -> None:
        try:
            journal.begin(f"{name}:answer", 1)
            started.append(name)
        except ExecutionRefused:
            refused.append(name)

    threads = [threading.Thread(target=race, args=(str(i),)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(started) == 1 and len(refused) == 15


def _step(rng: random.Random, handle: Opened, flying: list[Attempt], calls: list[str]) -> str:
    """One random thing a run does to its journal; what came of it."""
    journal = handle.journal
    roll = rng.random()
    if roll < 0.02:
        handle.process_stopped()
        flying.clear()  # their process stopped: nothing finishes them
        return "stopped"
    if roll < 0.04:
        handle.limits(rng.randint(10, 50), rng.choice([0, 800, 2000]))
        return "limits"
    if flying and roll < 0.5:
        attempt = flying.pop(rng.randrange(len(flying)))
        outcome = rng.choice(["ok", "ok", "ok", "transient", "transient", "final", "unknown"])
        cost = rng.randint(0, attempt.upper_micro_usd) if outcome in ("ok", "final") else 0
        record = f"record of {attempt.call_id}".encode() if outcome == "ok" and rng.random() < 0.9 else None
        billed = outcome != "ok" and rng.random() < 0.5
        journal.finish(attempt, outcome, cost_micro_usd=cost, maybe_billed=billed, detail=outcome, record=record)
        return f"finished {outcome}"
    try:
        attempt = journal.begin(
            rng.choice(calls), rng.randint(0, 120), paid=rng.random() < 0.9, rerun_unknown=rng.random() < 0.5
        )
    except ExecutionRefused as refused:
        return f"{type(refused).__name__}: {refused}"
    flying.append(attempt)
    return f"begun {attempt.seq} {attempt.call_id} {attempt.attempt}"


@pytest.mark.parametrize("seed", range(4))
def test_both_journals_decide_alike_on_random_runs(tmp_path: Path, client: Any, seed: int) -> None:
    """The same random run of begins, finishes, stops and new limits,
    against each journal: the same answers, attempts, counts and records."""
    handles = [Opened(kind, tmp_path / "j", client, 20, 1500) for kind in ("sqlite", "redis")]
    try:
        calls = [f"e{i}:{kind}" for i in range(24) for kind in ("answer", "judge")]
        flying: list[list[Attempt]] = [[], []]
        rngs = [random.Random(seed), random.Random(seed)]
        for step in range(300):
            answers = [_step(rng, handle, fly, calls) for rng, handle, fly in zip(rngs, handles, flying, strict=True)]
            assert answers[0] == answers[1], (step, answers)
        sqlite, redis_journal = (handle.journal for handle in handles)

        def tokenless(attempts: list[Attempt]) -> list[Attempt]:
            return [msgspec.structs.replace(a, token="") for a in attempts]

        assert tokenless(redis_journal.attempts()) == sqlite.attempts()
        assert tokenless(redis_journal.attempts_not_ok()) == sqlite.attempts_not_ok()
        assert redis_journal.summary() == sqlite.summary()
        assert redis_journal.stops() == sqlite.stops()
        assert [redis_journal.result(c) for c in calls] == [sqlite.result(c) for c in calls]
        assert redis_journal.is_empty() == sqlite.is_empty()
    finally:
        handles[0].close()


# -- opening ----------------------------------------------------------------


def test_a_journal_is_bound_to_its_plan_and_keeps_its_keys_a_week(client: Any) -> None:
    journal_id = uuid.uuid4().hex
    journal = RedisRunJournal.open(client, journal_id, _binding(5, 100), reaching=REACHING)
    assert journal.where == f"run journal {journal_id}"
    assert journal.binding() == _binding(5, 100)
    assert journal.is_empty()
    other = JournalBinding(plan_digest="b" * 64, authorized_calls=5, stop_micro_usd=0)
    for opening in (
        lambda: RedisRunJournal.open(client, journal_id, other, reaching=REACHING),
        lambda: RedisRunJournal.attach(client, journal_id, plan_digest="b" * 64, reaching=REACHING),
    ):
        with pytest.raises(InputError, match="bound to another plan") as refused:
            opening()
        problem = refused.value.problems[0]
        assert (problem.file, problem.field) == (f"run journal {journal_id}", "plan_digest")
    attached = RedisRunJournal.attach(client, journal_id, plan_digest=PLAN, reaching=REACHING)
    attempt = attached.begin("a:answer", 80)
    with pytest.raises(ExecutionRefused, match="spending stopped"):
        attached.begin("b:answer", 21)
    attached.finish(attempt, "ok", cost_micro_usd=1, record=b"{}")
    assert attached.partial(0) is None
    attached.keep_partial(0, "s3://b/.run.parts/0-a.jsonl")
    attached.keep_partial(0, "s3://b/.run.parts/0-b.jsonl")  # the shard ran again
    assert journal.partial(0) == "s3://b/.run.parts/0-b.jsonl"
    attached.forget(["a:answer"])
    assert not journal.is_empty()
    keys = sorted(key.decode() for key in client.keys(f"eceb:journal:{journal_id}:*"))
    assert keys == [f"eceb:journal:{journal_id}:{s}" for s in ("calls", "meta", "partials", "stops")]
    for key in keys:
        assert JOB_TTL_S - 60 < client.ttl(key) <= JOB_TTL_S, key
    # A resumed job records its limits: the stop it met is cleared.
    RedisRunJournal.open(client, journal_id, _binding(9, 0), reaching=REACHING)
    assert attached.binding() == _binding(9, 0) and attached.stops() == []
    attached.begin("b:answer", 1)


def test_a_journal_gone_from_redis_sends_nothing(client: Any) -> None:
    journal = _new(client)
    attempt = journal.begin("a:answer", 1)
    client.delete(*client.keys(f"eceb:journal:{journal.journal_id}:*"))
    for doing in (
        lambda: journal.begin("b:answer", 1),
        lambda: journal.finish(attempt, "ok", record=b"{}"),
        journal.summary,
        journal.binding,
        lambda: RedisRunJournal.attach(client, journal.journal_id, plan_digest=PLAN, reaching=REACHING),
    ):
        with pytest.raises(StorageError, match=f"run journal {journal.journal_id} is not in the result backend"):
            doing()


def test_names_and_amounts_out_of_range_are_refused(client: Any) -> None:
    with pytest.raises(InputError, match="journal_id"):
        RedisRunJournal.open(client, "no spaces", _binding(), reaching=REACHING)
    with pytest.raises(InputError, match="stop_micro_usd"):
        RedisRunJournal.open(client, uuid.uuid4().hex, _binding(stop=MAX_MICRO_USD + 1), reaching=REACHING)
    journal = _new(client)
    with pytest.raises(InputError, match="upper_micro_usd"):
        journal.begin("a:answer", -1)
    attempt = journal.begin("a:answer", MAX_MICRO_USD)
    with pytest.raises(InputError, match="outcome"):
        journal.finish(attempt, "fine")
    journal.finish(attempt, "ok", cost_micro_usd=MAX_MICRO_USD - 1, record=b"{}")
    assert journal.summary().spent_micro_usd == MAX_MICRO_USD - 1  # exact: no rounding on the way


# -- what the cluster adds ---------------------------------------------------


def _race(
    port: int,
    password: str,
    journal_id: str,
    name: str,
    ready: multiprocessing.synchronize.Barrier,
    results: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    """One worker process: four threads, each beginning ten calls of its own."""
    client = _client(port, password)
    journal = RedisRunJournal.attach(client, journal_id, plan_digest=PLAN, reaching=REACHING)
    started: list[str] = []
    refused: list[str] = []

    def calls(thread: int) -> None:
        for i in range(10):
            try:
                journal.begin(f"{name}-{thread}-{i}:answer", 1)
                started.append(name)
            except ExecutionRefused as refusal:
                refused.append(str(refusal))

    threads = [threading.Thread(target=calls, args=(t,)) for t in range(4)]
    ready.wait()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((len(started), sorted(set(refused)), len(refused)))
    client.close()


@pytest.mark.parametrize("authorized", [1, 7])
def test_two_processes_racing_for_the_last_authorized_calls_start_them_once(
    redis_server: RedisServer, client: Any, authorized: int
) -> None:
    """Two processes, released together, four threads each, eighty calls
    for ``authorized`` authorized: exactly that many begin."""
    context = multiprocessing.get_context("spawn")
    journal = _new(client, authorized=authorized)
    ready, results = context.Barrier(2), context.Queue()
    args = [(redis_server.port, redis_server.password, journal.journal_id, name, ready, results) for name in "AB"]
    runners = [context.Process(target=_race, args=arg) for arg in args]
    for runner in runners:
        runner.start()
    outcomes = [results.get(timeout=120) for _ in runners]
    for runner in runners:
        runner.join(timeout=60)
        assert runner.exitcode == 0
    assert sum(started for started, _, _ in outcomes) == authorized, outcomes
    assert sum(count for _, _, count in outcomes) == 80 - authorized
    assert {message for _, messages, _ in outcomes for message in messages} == {
        f"all {authorized} authorized paid calls have started"
    }
    assert len(journal.attempts()) == authorized


class ReplyCutter:
    """A loopback TCP relay in front of Redis which, once :meth:`arm` is
    called, passes the next script sent (``EVALSHA``) and drops its reply,
    closing the connection: the script ran, its client never heard."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._armed = threading.Event()
        self.dropped: list[bytes] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []

    def arm(self) -> None:
        self._armed.set()

    def __enter__(self) -> ReplyCutter:
        self._spawn(self._serve)
        return self

    def __exit__(self, *_: object) -> None:
        for sock in [self._listener, *self._sockets]:
            _shut(sock)
        for thread in self._threads:
            thread.join(timeout=5)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self) -> None:
        while True:
            try:
                near, _ = self._listener.accept()
            except OSError:
                return
            far = socket.create_connection(("127.0.0.1", self._upstream))
            self._sockets += [near, far]
            cutting = threading.Event()
            self._spawn(self._requests, near, far, cutting)
            self._spawn(self._replies, far, near, cutting)

    def _requests(self, near: socket.socket, far: socket.socket, cutting: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := near.recv(65536):
                if self._armed.is_set() and b"EVALSHA" in data.upper():
                    self._armed.clear()
                    cutting.set()
                far.sendall(data)
        _shut(far)

    def _replies(self, far: socket.socket, near: socket.socket, cutting: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := far.recv(65536):
                if cutting.is_set():
                    self.dropped.append(data)
                    break
                near.sendall(data)
        _shut(near)
        _shut(far)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def test_a_begin_or_finish_whose_reply_was_lost_counts_once(redis_server: RedisServer, client: Any) -> None:
    """The script ran, the connection dropped before its reply: the client
    sends it again, and the journal answers what it did the first time."""
    journal_id = _new(client, authorized=2).journal_id
    with ReplyCutter(redis_server.port) as relay:
        relayed = _client(relay.port, redis_server.password)
        journal = RedisRunJournal.attach(relayed, journal_id, plan_digest=PLAN, reaching=REACHING)
        warm = journal.begin("warm:judge", 0, paid=False)  # the scripts are loaded: the next EVALSHA runs
        journal.finish(warm, "ok", record=b"w")
        relay.arm()
        attempt = journal.begin("x:answer", 30)
        assert len(relay.dropped) == 1 and not relay.dropped[0].startswith(b"-")
        assert journal.attempts("x:answer") == [attempt]
        journal.begin("y:answer", 30)  # x counted once: the second authorized call starts
        with pytest.raises(ExecutionRefused, match="all 2 authorized paid calls have started"):
            journal.begin("z:answer", 30)
        relay.arm()
        journal.finish(attempt, "ok", cost_micro_usd=7, record=b"x")
        assert len(relay.dropped) == 2
        summary = journal.summary()
        assert (summary.made, summary.spent_micro_usd, summary.possible_micro_usd) == (2, 7, 30)
        assert journal.result("x:answer") == b"x"
        relayed.close()


def test_calls_lost_with_their_process_are_of_unknown_outcome(client: Any) -> None:
    journal = _new(client, authorized=40, stop=10_000)
    for i in range(20):
        journal.begin(f"c{i:02}:answer", 100)
    done = journal.begin("done:answer", 100)
    journal.finish(done, "ok", cost_micro_usd=50, record=b"{}")
    assert journal.summary().possible_micro_usd == 2000
    lost = [f"c{i:02}:answer" for i in range(20)]
    assert journal.lost([*lost, "done:answer", "never:answer", lost[0]]) == 20
    assert journal.lost(lost) == 0  # marked once
    assert journal.in_flight() == []
    assert journal.unknown_calls(5) == (lost[:5], 20)
    assert journal.unknown_calls(0) == ([], 20)
    summary = journal.summary()
    assert (summary.unknown, summary.spent_micro_usd, summary.possible_micro_usd) == (20, 50, 2000)
    with pytest.raises(OutcomeUnknown, match=r"call c03:answer: the outcome of its attempt 1 is unknown"):
        journal.begin("c03:answer", 100)
    again = journal.begin("c03:answer", 100, rerun_unknown=True)
    assert journal.unknown_calls(2) == ([lost[0], lost[1]], 19)
    assert journal.summary().possible_micro_usd == 2100  # the lost attempt's upper bound still counts
    assert all(a.maybe_billed and a.outcome == "unknown" for a in journal.attempts_not_ok() if a.seq <= 20)
    journal.finish(again, "ok", cost_micro_usd=60, record=b"c03")
    assert journal.summary().possible_micro_usd == 2000


def test_a_late_finish_of_a_lost_attempt_records_what_came_of_it(client: Any) -> None:
    """A worker frozen past its lease resumes: the attempt the journal
    marked lost meanwhile takes its real outcome and record; a record kept
    is never replaced."""
    journal = _new(client)
    frozen = journal.begin("a:answer", 50)
    journal.lost(["a:answer"])
    rerun = journal.begin("a:answer", 50, rerun_unknown=True)
    journal.finish(frozen, "ok", cost_micro_usd=20, record=b"first")
    journal.finish(frozen, "ok", cost_micro_usd=20, record=b"first")  # sent twice: once
    with pytest.raises(InputError, match="holds no attempt 1 of call a:answer in flight"):
        journal.finish(frozen, "final", detail="late")
    journal.finish(rerun, "ok", cost_micro_usd=25, record=b"second")
    assert journal.result("a:answer") == b"first"
    summary = journal.summary()
    assert (summary.made, summary.unknown, summary.spent_micro_usd, summary.possible_micro_usd) == (1, 0, 45, 0)
    # Lost while still the last attempt: a late transient failure makes it sendable again.
    frozen = journal.begin("b:answer", 50)
    journal.lost(["b:answer"])
    journal.finish(frozen, "transient", detail="HTTP 503")
    assert journal.unknown_calls() == ([], 0)
    assert journal.begin("b:answer", 50).attempt == 2


def test_forgotten_records_keep_their_calls_refused(client: Any) -> None:
    journal = _new(client)
    for name in ("a", "b"):
        attempt = journal.begin(f"{name}:answer", 5)
        journal.finish(attempt, "ok", cost_micro_usd=1, record=name.encode())
    before = (journal.attempts(), journal.summary())
    assert journal.forget(["a:answer", "b:answer", "c:answer"]) == 2
    assert journal.forget(["a:answer"]) == 0
    assert journal.result("a:answer") is None
    with pytest.raises(ExecutionRefused, match="call a:answer was made before: nothing runs twice"):
        journal.begin("a:answer", 5)
    assert (journal.attempts(), journal.summary()) == before


def test_a_call_keeps_a_few_hundred_bytes_once_its_record_is_forgotten(client: Any) -> None:
    journal = _new(client, authorized=1000)
    calls = [f"{uuid.uuid4().hex[:16]}:rag:2048:1:answer" for _ in range(1000)]
    for call_id in calls:
        attempt = journal.begin(call_id, 1200)
        journal.finish(attempt, "ok", cost_micro_usd=900, record=b"x" * 2000)
    assert journal.forget(calls) == 1000
    used = sum(int(client.memory_usage(journal.key(s), samples=0) or 0) for s in ("meta", "calls", "notok"))
    assert used / len(calls) < 300, used / len(calls)
    assert not client.exists(journal.key("results"))


@pytest.mark.parametrize("stopped", ["terminated", "killed"])
def test_a_redis_restart_during_a_run_counts_every_begin_once(tmp_path: Path, stopped: str) -> None:
    """Redis keeps its data in an append-only file (fsync always); it is
    stopped twice (SIGTERM, or SIGKILL: a reply may be lost after its
    command ran) and started again while a thread begins and finishes calls
    as fast as it can: each call begins once, and the paid calls started
    are counted once each."""
    directory = tmp_path / "redis"
    directory.mkdir()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(running_redis(directory, appendonly=True))
        connection = _client(server.port, server.password)
        journal = _new(connection, authorized=10**6, stop=10**12)
        done: list[int] = []
        enough = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            try:
                while not enough.is_set():
                    attempt = journal.begin(f"c{len(done)}:answer", 10)
                    journal.finish(attempt, "ok", cost_micro_usd=3, record=b"{}")
                    done.append(len(done))
            except BaseException as exc:
                errors.append(exc)

        def reached(count: int) -> None:
            while len(done) < count and runner.is_alive():
                time.sleep(0.01)
            assert runner.is_alive(), errors

        runner = threading.Thread(target=run)
        runner.start()
        try:
            for restart in range(2):
                reached(100 + 200 * restart)
                if stopped == "killed":
                    probe = _client(server.port, server.password)
                    os.kill(int(probe.info("server")["process_id"]), signal.SIGKILL)
                    probe.close()
                stack.close()  # the server stops mid-run, its append-only file written
                server = stack.enter_context(running_redis(directory, port=server.port, appendonly=True))
            reached(len(done) + 100)
        finally:
            enough.set()
            runner.join(timeout=180)
        assert not runner.is_alive() and not errors, errors
        assert server.log_path.read_text().count("Ready to accept connections") == 3
        calls = len(done)
        attempts = journal.attempts()
        assert [a.seq for a in attempts] == list(range(1, calls + 1))
        assert [a.call_id for a in attempts] == [f"c{i}:answer" for i in range(calls)]
        summary = journal.summary()
        assert (summary.made, summary.spent_micro_usd, summary.possible_micro_usd) == (calls, 3 * calls, 0)
        # Exactly `calls` paid calls counted: one more authorized call starts, and no other.
        journal = RedisRunJournal.open(connection, journal.journal_id, _binding(calls + 1, 0), reaching=REACHING)
        journal.begin("one-more:answer", 10)
        with pytest.raises(ExecutionRefused, match=f"all {calls + 1} authorized paid calls have started"):
            journal.begin("another:answer", 10)
        connection.close()
