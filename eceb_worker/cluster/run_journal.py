"""The journal of ``eceb-dist run``: one journal of paid calls shared by
every thread of every worker process of a job, kept in the result backend's
Redis.

It keeps the rules every journal of a made run keeps
(:mod:`eceb_worker.families.eceb.making.journal`), as the SQLite journal of
``eceb run`` does (:mod:`eceb_worker.io.run_journal`), with the same
refusals and messages: :meth:`RedisRunJournal.begin` decides in one Lua
script, atomic on the server, whether an attempt may be sent (spending
stopped? made before? its last attempt failed finally, of unknown outcome,
in flight? past the authorized paid calls? past the spending stop, which it
then records?) and records it. Two threads or two processes racing for the
last authorized call: exactly one begins.

Keys (``eceb:journal:<journal_id>:<suffix>``), every one expiring
:data:`~eceb_worker.cluster.state.JOB_TTL_S` after the journal's last
write (each write renews all of them, so that no part of a journal in use
expires before the rest):

* ``meta``: a hash of the binding (``plan``, ``authorized``, ``stop``), the
  first spending stop recorded (``stopped``) and the running totals that
  every decision and :meth:`~RedisRunJournal.summary` read, updated by the
  scripts: ``seq`` (the attempts started; each attempt's place), ``started``
  (distinct paid calls started), ``spend`` (known and possible,
  :func:`~eceb_worker.families.eceb.making.journal.possible_spend`),
  ``known`` (known cost), ``made``, ``failed``, ``retried``;
* ``calls``: call id -> its attempts (MessagePack: whether its record was
  kept, whether a paid attempt started, then each attempt's seq, upper
  bound, outcome, maybe billed, cost, detail, token, whether marked lost,
  paid): a few hundred bytes a call, kept for the journal's life, so that
  nothing is ever sent twice;
* ``results``: call id -> the kept record, until :meth:`~RedisRunJournal.forget`;
* ``notok``: the attempts not ``ok`` (in flight, failed, of unknown
  outcome), scored by seq;
* ``unknown``: the calls whose last attempt's outcome is unknown (all
  scored 0: in call id order);
* ``stops``: the reasons of the spending stops recorded, in order;
* ``partials``: shard index -> where its last partial is (a URL; the
  records :meth:`~RedisRunJournal.forget` dropped are there).

Through a Redis outage every command is retried by the result backend's
client (:meth:`~eceb_worker.cluster.retry.RetryPolicy.redis_retry`) and
may therefore run twice when its reply was lost; each is harmless twice. A
start carries a token (a uuid4 the journal makes before sending it): a
begin whose token is already the call's last attempt returns that attempt;
a finish already recorded with the same outcome does nothing. Past the
retry policy's bound a command raises ``StorageError``
(:meth:`~eceb_worker.cluster.retry.RetryPolicy.reaching`).

Amounts are whole micro-USD below 2**53 (Lua counts in doubles, exact up to
there). The client must return bytes (``decode_responses`` off, as the
result backend's client is).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Final

import msgspec

from eceb_worker.cluster.state import JOB_TTL_S
from eceb_worker.errors import ExecutionRefused, InputError, OutcomeUnknown, Problem, StorageError
from eceb_worker.families.eceb.making.journal import Attempt, JournalBinding, JournalSummary

__all__ = ["JOURNAL_PREFIX", "MAX_MICRO_USD", "RedisRunJournal"]

Reaching = Callable[[str], AbstractContextManager[None]]

JOURNAL_PREFIX: Final = "eceb:journal:"
"""Every key of a journal starts with this and its id."""
MAX_MICRO_USD: Final = 2**53 - 1
"""The largest amount (micro-USD) a journal counts exactly."""

_WHAT: Final = "the result backend (run journal)"
_SUFFIXES: Final = ("meta", "calls", "results", "notok", "unknown", "stops", "partials")
_BATCH: Final = 1000
"""Call ids per command of :meth:`RedisRunJournal.lost` and :meth:`~RedisRunJournal.forget`."""
_OUTCOMES: Final = frozenset({"ok", "transient", "final", "unknown"})
_JOURNAL_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_PRELUDE: Final = """
local function num(x)
    return string.format('%.0f', x)
end
local function touch()
    for i = 1, #KEYS do
        redis.call('EXPIRE', KEYS[i], ARGV[1])
    end
end
local function possible(outcome, billed, cost, upper)
    if outcome == '' or outcome == 'unknown' or (billed == 1 and cost == 0) then
        return cost + upper
    end
    return cost
end
"""
"""What the writing scripts share. KEYS: meta, calls, results, notok,
unknown, stops, partials; ARGV[1]: the time to live (s). An attempt is a table
{seq, upper, outcome ('' in flight), billed, cost, detail, token, lost,
paid}; a call {made, paid, {attempt 1, attempt 2, ...}}. ``possible`` is
:func:`~eceb_worker.families.eceb.making.journal.possible_spend`."""

_OPEN: Final = (
    _PRELUDE
    + """
local plan = redis.call('HGET', KEYS[1], 'plan')
if plan and plan ~= ARGV[2] then
    return 0
end
if plan then
    redis.call('HSET', KEYS[1], 'authorized', ARGV[3], 'stop', ARGV[4])
    redis.call('HDEL', KEYS[1], 'stopped')
    redis.call('DEL', KEYS[6])
else
    redis.call('HSET', KEYS[1], 'plan', ARGV[2], 'authorized', ARGV[3], 'stop', ARGV[4], 'seq', 0, 'started', 0,
        'spend', 0, 'known', 0, 'made', 0, 'failed', 0, 'retried', 0)
end
touch()
return 1
"""
)
"""ARGV: ttl, plan digest, authorized calls, stop (micro-USD). 0 when bound to another plan."""

_BEGIN: Final = (
    _PRELUDE
    + """
local call_id, upper, paid, token = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[6]
if redis.call('EXISTS', KEYS[1]) == 0 then
    return {'gone'}
end
local raw = redis.call('HGET', KEYS[2], call_id)
local entry, last = {0, 0, {}}, nil
if raw then
    entry = cmsgpack.unpack(raw)
    last = entry[3][#entry[3]]
end
if last and last[7] == token then
    return {'begun', #entry[3], cmsgpack.pack(last)}
end
local stopped = redis.call('HGET', KEYS[1], 'stopped')
if stopped then
    return {'stopped', stopped}
end
if entry[1] == 1 then
    return {'made'}
end
if last then
    if last[3] == 'final' then
        return {'final', last[6]}
    end
    if last[3] == 'unknown' and ARGV[5] ~= '1' then
        return {'unknown', #entry[3]}
    end
    if last[3] == '' then
        return {'in flight'}
    end
end
local limits = redis.call('HMGET', KEYS[1], 'authorized', 'started', 'stop', 'spend')
if not last and paid == 1 and tonumber(limits[2]) >= tonumber(limits[1]) then
    return {'authorized', limits[1]}
end
local stop = tonumber(limits[3])
if stop > 0 and tonumber(limits[4]) + upper > stop then
    local reason = 'the spend known and possible (' .. limits[4] .. " micro-USD) and this call's upper bound ("
        .. ARGV[3] .. ') would pass the stop of ' .. limits[3] .. ' micro-USD'
    redis.call('HSET', KEYS[1], 'stopped', reason)
    redis.call('RPUSH', KEYS[6], reason)
    touch()
    return {'stop', reason}
end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local attempts = entry[3]
local attempt = {seq, upper, '', 0, 0, '', token, 0, paid}
attempts[#attempts + 1] = attempt
if last and last[3] == 'unknown' then
    redis.call('ZREM', KEYS[5], call_id)
end
if #attempts > 1 then
    redis.call('HINCRBY', KEYS[1], 'retried', 1)
end
if paid == 1 and entry[2] == 0 then
    entry[2] = 1
    redis.call('HINCRBY', KEYS[1], 'started', 1)
end
redis.call('HINCRBY', KEYS[1], 'spend', ARGV[3])
redis.call('HSET', KEYS[2], call_id, cmsgpack.pack(entry))
redis.call('ZADD', KEYS[4], num(seq), #attempts .. ':' .. call_id)
touch()
return {'begun', #attempts, cmsgpack.pack(attempt)}
"""
)
"""ARGV: ttl, call id, upper bound, paid (0/1), rerun unknown (0/1), token.
Replies {'begun', attempt number, the attempt}, or the refusal's tag and
what its message needs (:data:`_REFUSALS`)."""

_FINISH: Final = (
    _PRELUDE
    + """
local call_id, number = ARGV[2], tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[2], call_id)
if not raw then
    if redis.call('EXISTS', KEYS[1]) == 0 then
        return 'gone'
    end
    return 'none'
end
local entry = cmsgpack.unpack(raw)
local attempts = entry[3]
local a = attempts[number]
if not a or a[1] ~= tonumber(ARGV[4]) or a[2] ~= tonumber(ARGV[5]) or a[7] ~= ARGV[6] then
    return 'none'
end
local outcome, billed, cost = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
if a[3] == outcome then
    return 'again'
end
if a[3] ~= '' and not (a[3] == 'unknown' and a[8] == 1) then
    return 'none'
end
local before = a[3]
local change = possible(outcome, billed, cost, a[2]) - possible(a[3], a[4], a[5], a[2])
local known = cost - a[5]
a[3], a[4], a[5], a[6] = outcome, billed, cost, ARGV[10]
if number == #attempts then
    if before == 'unknown' then
        redis.call('ZREM', KEYS[5], call_id)
    end
    if outcome == 'unknown' then
        redis.call('ZADD', KEYS[5], 0, call_id)
    elseif outcome == 'final' then
        redis.call('HINCRBY', KEYS[1], 'failed', 1)
    end
end
if outcome == 'ok' then
    redis.call('ZREM', KEYS[4], number .. ':' .. call_id)
end
if ARGV[11] == '1' and entry[1] == 0 then
    entry[1] = 1
    redis.call('HINCRBY', KEYS[1], 'made', 1)
    redis.call('HSETNX', KEYS[3], call_id, ARGV[12])
end
redis.call('HINCRBY', KEYS[1], 'spend', num(change))
redis.call('HINCRBY', KEYS[1], 'known', num(known))
redis.call('HSET', KEYS[2], call_id, cmsgpack.pack(entry))
touch()
return 'done'
"""
)
"""ARGV: ttl, call id, attempt number, seq, upper bound, token, outcome,
maybe billed (0/1), cost, detail, record given (0/1), record. Replies
``done``, ``again`` (recorded before: nothing done), ``none`` (no such
attempt in flight) or ``gone``. An attempt :meth:`RedisRunJournal.lost`
marked unknown takes its real outcome; a record is kept for a call that
has none (never replaced)."""

_LOST: Final = (
    _PRELUDE
    + """
local lost = 0
for i = 2, #ARGV do
    local raw = redis.call('HGET', KEYS[2], ARGV[i])
    if raw then
        local entry = cmsgpack.unpack(raw)
        local a = entry[3][#entry[3]]
        if a[3] == '' then
            a[3], a[4], a[8] = 'unknown', 1, 1
            redis.call('HSET', KEYS[2], ARGV[i], cmsgpack.pack(entry))
            redis.call('ZADD', KEYS[5], 0, ARGV[i])
            lost = lost + 1
        end
    end
end
if lost > 0 then
    touch()
end
return lost
"""
)
"""ARGV: ttl, call id, ... The spend is unchanged: an attempt in flight and
one of unknown outcome both count their upper bound."""

_NOT_OK: Final = """
local out, entries = {}, {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local colon = string.find(member, ':', 1, true)
    local number, call_id = tonumber(string.sub(member, 1, colon - 1)), string.sub(member, colon + 1)
    local entry = entries[call_id]
    if entry == nil then
        local raw = redis.call('HGET', KEYS[1], call_id)
        entry = raw and cmsgpack.unpack(raw) or false
        entries[call_id] = entry
    end
    if entry and entry[3][number] then
        out[#out + 1] = call_id
        out[#out + 1] = number
        out[#out + 1] = cmsgpack.pack(entry[3][number])
    end
end
return out
"""
"""KEYS: calls, notok. Replies call id, attempt number, the attempt, ... in seq order."""


class _Stored(msgspec.Struct, frozen=True, array_like=True):
    """One attempt as the scripts keep it (see :data:`_PRELUDE`)."""

    seq: int
    upper: int
    outcome: str
    billed: int
    cost: int
    detail: str
    token: str
    lost: int
    paid: int


class _Call(msgspec.Struct, frozen=True, array_like=True):
    """One call as the scripts keep it: record kept, paid attempt started, its attempts."""

    made: int
    paid: int
    attempts: list[_Stored]


_STORED: Final = msgspec.msgpack.Decoder(_Stored)
_CALL: Final = msgspec.msgpack.Decoder(_Call)


def _attempt(call_id: str, number: int, stored: _Stored) -> Attempt:
    return Attempt(
        seq=stored.seq,
        call_id=call_id,
        attempt=number,
        upper_micro_usd=stored.upper,
        outcome=stored.outcome or None,
        maybe_billed=bool(stored.billed),
        cost_micro_usd=stored.cost,
        detail=stored.detail,
        token=stored.token,
    )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _batches(call_ids: Iterable[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    for call_id in call_ids:
        batch.append(call_id)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _refusal(call_id: str, tag: str, data: list[Any]) -> ExecutionRefused:
    """The error a begin refused with ``tag`` raises (the messages of
    :class:`~eceb_worker.io.run_journal.RunJournal`)."""
    if tag in ("stopped", "stop"):
        return ExecutionRefused(f"spending stopped: {_text(data[0])}")
    if tag == "made":
        return ExecutionRefused(f"call {call_id} was made before: nothing runs twice")
    if tag == "final":
        return ExecutionRefused(f"call {call_id} failed finally ({_text(data[0])}): nothing runs twice")
    if tag == "unknown":
        return OutcomeUnknown(
            f"call {call_id}: the outcome of its attempt {int(data[0])} is unknown (the process sending it "
            "stopped; the provider may have billed it): --rerun-unknown sends it again"
        )
    if tag == "in flight":
        return ExecutionRefused(f"call {call_id} is in flight")
    return ExecutionRefused(f"all {_text(data[0])} authorized paid calls have started")


class RedisRunJournal:
    """A run journal in Redis (see the module), satisfying
    :class:`~eceb_worker.families.eceb.making.journal.Journal`. Thread-safe
    and shared by processes: it holds nothing but the client and the
    journal's name; every decision is a script on the server.

    ``client`` is a redis-py client returning bytes (the result backend's,
    ``app.backend.client``), retrying its commands through an outage;
    ``reaching`` the retry policy's
    :meth:`~eceb_worker.cluster.retry.RetryPolicy.reaching` (turns a
    connection still lost into ``StorageError``). Open with :meth:`open`
    (creates it, or records a resumed job's limits) or :meth:`attach` (a
    worker's use of a journal its job opened).
    """

    def __init__(self, client: Any, journal_id: str, *, reaching: Reaching) -> None:
        if not _JOURNAL_ID.fullmatch(journal_id):
            message = "must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
            raise InputError([Problem(file="run journal", field="journal_id", message=message)])
        self.client = client
        self.journal_id = journal_id
        self.reaching = reaching
        self._keys = [f"{JOURNAL_PREFIX}{journal_id}:{suffix}" for suffix in _SUFFIXES]
        self._open = client.register_script(_OPEN)
        self._begin = client.register_script(_BEGIN)
        self._finish = client.register_script(_FINISH)
        self._lost = client.register_script(_LOST)
        self._not_ok = client.register_script(_NOT_OK)

    @property
    def where(self) -> str:
        """``run journal <journal_id>``, as messages name it."""
        return f"run journal {self.journal_id}"

    def key(self, suffix: str) -> str:
        """The key ``eceb:journal:<journal_id>:<suffix>`` (``meta``, ``calls``, ``results``, ...)."""
        return f"{JOURNAL_PREFIX}{self.journal_id}:{suffix}"

    # -- opening ---------------------------------------------------------

    @classmethod
    def open(cls, client: Any, journal_id: str, binding: JournalBinding, *, reaching: Reaching) -> RedisRunJournal:
        """The journal ``journal_id``, created bound to ``binding`` when
        absent; when present, checked to be bound to its plan digest, and
        given its limits (a resumed job may raise or lower them; a spending
        stop recorded is cleared). Raises :class:`InputError` naming the
        journal and field ``plan_digest`` when it is bound to another plan,
        or naming a limit that is not a whole number from 0 to
        :data:`MAX_MICRO_USD`; ``StorageError`` when Redis stays unreachable."""
        journal = cls(client, journal_id, reaching=reaching)
        for field, value in (
            ("authorized_calls", binding.authorized_calls),
            ("stop_micro_usd", binding.stop_micro_usd),
        ):
            journal._check_amount("journal", field, value)
        args = [JOB_TTL_S, binding.plan_digest, binding.authorized_calls, binding.stop_micro_usd]
        with reaching(_WHAT):
            bound = journal._open(keys=journal._keys, args=args)
        if not bound:
            raise journal._other_plan()
        return journal

    @classmethod
    def attach(cls, client: Any, journal_id: str, *, plan_digest: str, reaching: Reaching) -> RedisRunJournal:
        """The journal ``journal_id`` as its job opened it, its limits left
        as they are (a worker's use). Raises :class:`InputError` (field
        ``plan_digest``) when it is bound to another plan, ``StorageError``
        when it is not in Redis (expired, or Redis lost its data)."""
        journal = cls(client, journal_id, reaching=reaching)
        if journal.binding().plan_digest != plan_digest:
            raise journal._other_plan()
        return journal

    def _other_plan(self) -> InputError:
        message = (
            "bound to another plan (another benchmark, corpus or profile) than this run's: "
            "resume with the inputs it was made with, or start a new journal"
        )
        return InputError([Problem(file=self.where, record="journal", field="plan_digest", message=message)])

    def _gone(self) -> StorageError:
        return StorageError(
            f"{self.where} is not in the result backend (it expired, or Redis lost its data): nothing is sent"
        )

    def _check_amount(self, record: str, field: str, value: int) -> None:
        if not 0 <= value <= MAX_MICRO_USD:
            message = f"{value} is not a whole number from 0 to {MAX_MICRO_USD}"
            raise InputError([Problem(file=self.where, record=record, field=field, message=message)])

    # -- reading ---------------------------------------------------------

    def binding(self) -> JournalBinding:
        """The plan digest, authorized calls and stop the journal holds;
        ``StorageError`` when it is not in Redis."""
        with self.reaching(_WHAT):
            plan, authorized, stop = self.client.hmget(self._keys[0], "plan", "authorized", "stop")
        if plan is None:
            raise self._gone()
        return JournalBinding(plan_digest=_text(plan), authorized_calls=int(authorized), stop_micro_usd=int(stop))

    def result(self, call_id: str) -> bytes | None:
        """The kept record of a made call, or ``None`` (never made, or forgotten: :meth:`forget`)."""
        with self.reaching(_WHAT):
            record = self.client.hget(self._keys[2], call_id)
        return None if record is None else bytes(record)

    def attempts(self, call_id: str | None = None) -> list[Attempt]:
        """Every attempt (of ``call_id``, or all: a scan of every call), in order of start."""
        if call_id is not None:
            with self.reaching(_WHAT):
                raw = self.client.hget(self._keys[1], call_id)
            return [] if raw is None else self._decoded(call_id, raw)
        calls: dict[str, bytes] = {}
        with self.reaching(_WHAT):
            for name, raw in self.client.hscan_iter(self._keys[1], count=_BATCH):
                calls[_text(name)] = raw
        every = [attempt for name, raw in calls.items() for attempt in self._decoded(name, raw)]
        return sorted(every, key=lambda attempt: attempt.seq)

    @staticmethod
    def _decoded(call_id: str, raw: bytes) -> list[Attempt]:
        stored = _CALL.decode(raw)
        return [_attempt(call_id, number, one) for number, one in enumerate(stored.attempts, start=1)]

    def attempts_not_ok(self) -> list[Attempt]:
        """Every attempt whose outcome is not ``ok`` (failed, retried, of
        unknown outcome, in flight), in order of start, read without the others."""
        with self.reaching(_WHAT):
            reply = self._not_ok(keys=[self._keys[1], self._keys[3]])
        return [
            _attempt(_text(reply[i]), int(reply[i + 1]), _STORED.decode(reply[i + 2])) for i in range(0, len(reply), 3)
        ]

    def in_flight(self) -> list[str]:
        """The calls whose last attempt is in flight, in order of start (what
        :meth:`lost` takes when every process that sent them stopped)."""
        return [attempt.call_id for attempt in self.attempts_not_ok() if attempt.outcome is None]

    def is_empty(self) -> bool:
        """True when no attempt was ever journaled (or the journal is not in Redis)."""
        with self.reaching(_WHAT):
            seq = self.client.hget(self._keys[0], "seq")
        return seq is None or int(seq) == 0

    def summary(self) -> JournalSummary:
        """Counts of calls and spend (see :class:`JournalSummary`), from the
        running totals: a few reads whatever the journal's size.
        ``StorageError`` when the journal is not in Redis."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hmget(self._keys[0], "made", "failed", "retried", "spend", "known")
        pipe.zcard(self._keys[4])
        with self.reaching(_WHAT):
            totals, unknown = pipe.execute()
        if totals[0] is None:
            raise self._gone()
        made, failed, retried, spend, known = (int(value) for value in totals)
        return JournalSummary(
            made=made,
            failed=failed,
            unknown=int(unknown),
            retried=retried,
            spent_micro_usd=known,
            possible_micro_usd=spend - known,
        )

    def stops(self) -> list[str]:
        """The reasons of every spending stop recorded (since the limits
        were last recorded: :meth:`open`), in order."""
        with self.reaching(_WHAT):
            return [_text(reason) for reason in self.client.lrange(self._keys[5], 0, -1)]

    def unknown_calls(self, limit: int = 16) -> tuple[list[str], int]:
        """The first ``limit`` call ids (sorted) whose last attempt's
        outcome is unknown, and how many there are (``eceb-dist status``)."""
        pipe = self.client.pipeline(transaction=True)
        if limit > 0:
            pipe.zrange(self._keys[4], 0, limit - 1)
        pipe.zcard(self._keys[4])
        with self.reaching(_WHAT):
            replies = pipe.execute()
        first = [_text(call_id) for call_id in replies[0]] if limit > 0 else []
        return first, int(replies[-1])

    # -- deciding --------------------------------------------------------

    def begin(self, call_id: str, upper_micro_usd: int, *, paid: bool = True, rerun_unknown: bool = False) -> Attempt:
        """Record the start of the next attempt of ``call_id`` (its upper-bound
        cost ``upper_micro_usd``; ``paid``: whether it counts towards the
        authorized calls), or raise :class:`ExecutionRefused` saying why it
        may not start (spending stopped, and this attempt's stop recorded;
        made before; failed finally; in flight; past the authorized calls)
        or :class:`OutcomeUnknown` (its last attempt's outcome is unknown
        and ``rerun_unknown`` is false). One script decides and records;
        sent twice (a reply lost), it returns the attempt it began.
        :class:`InputError` when ``upper_micro_usd`` is out of range;
        ``StorageError`` when the journal is not in Redis or Redis stays
        unreachable."""
        self._check_amount(f"call {call_id}", "upper_micro_usd", upper_micro_usd)
        token = uuid.uuid4().hex
        args = [JOB_TTL_S, call_id, upper_micro_usd, int(paid), int(rerun_unknown), token]
        with self.reaching(_WHAT):
            reply = self._begin(keys=self._keys, args=args)
        tag = _text(reply[0])
        if tag == "begun":
            return _attempt(call_id, int(reply[1]), _STORED.decode(reply[2]))
        if tag == "gone":
            raise self._gone()
        raise _refusal(call_id, tag, reply[1:])

    def finish(
        self,
        attempt: Attempt,
        outcome: str,
        *,
        cost_micro_usd: int = 0,
        maybe_billed: bool = False,
        detail: str = "",
        record: bytes | None = None,
    ) -> None:
        """Record the ``outcome`` of a started attempt (``ok`` with the
        call's ``record`` and cost; ``transient``, ``final`` or ``unknown``
        with a ``detail``); a record is kept unless the call has one (a
        kept record is never replaced). Recorded already with the same
        outcome (sent twice): nothing changes. An attempt :meth:`lost`
        marked unknown meanwhile takes its real outcome. Raises
        :class:`InputError` naming the journal when it holds no such
        attempt in flight (or the outcome or cost is not one it keeps);
        ``StorageError`` when the journal is not in Redis or Redis stays
        unreachable."""
        record_name = f"call {attempt.call_id}"
        if outcome not in _OUTCOMES:
            message = f"{outcome!r} is not one of {', '.join(sorted(_OUTCOMES))}"
            raise InputError([Problem(file=self.where, record=record_name, field="outcome", message=message)])
        self._check_amount(record_name, "cost_micro_usd", cost_micro_usd)
        args = [
            JOB_TTL_S,
            attempt.call_id,
            attempt.attempt,
            attempt.seq,
            attempt.upper_micro_usd,
            attempt.token,
            outcome,
            int(maybe_billed),
            cost_micro_usd,
            detail,
            int(record is not None),
            record or b"",
        ]
        with self.reaching(_WHAT):
            reply = _text(self._finish(keys=self._keys, args=args))
        if reply == "gone":
            raise self._gone()
        if reply == "none":
            message = f"holds no attempt {attempt.attempt} of call {attempt.call_id} in flight"
            raise InputError([Problem(file=self.where, record="attempts", message=message)])

    def lost(self, call_ids: Iterable[str]) -> int:
        """Mark ``unknown`` (maybe billed) the last attempt of each of these
        calls that is in flight: the process sending it died (its shard runs
        again elsewhere, where :meth:`begin` raises :class:`OutcomeUnknown`
        unless allowed to send it again). Returns how many were marked now
        (a batch whose reply was lost and was sent again counts those it
        marked the first time as marked before). One script a thousand calls."""
        marked = 0
        for batch in _batches(call_ids):
            with self.reaching(_WHAT):
                marked += int(self._lost(keys=self._keys, args=[JOB_TTL_S, *batch]))
        return marked

    def keep_partial(self, index: int, url: str) -> None:
        """Note that shard ``index``'s partial (the records of its calls) is
        at ``url``, in place of any noted before."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self._keys[6], str(index), url)
        for key in self._keys:
            pipe.expire(key, JOB_TTL_S)
        with self.reaching(_WHAT):
            pipe.execute()

    def partial(self, index: int) -> str | None:
        """Where shard ``index``'s last partial is, ``None`` before one was noted."""
        with self.reaching(_WHAT):
            url = self.client.hget(self._keys[6], str(index))
        return None if url is None else _text(url)

    def forget(self, call_ids: Iterable[str]) -> int:
        """Drop the kept records of these calls (they are kept elsewhere
        now: a shard's partial in S3); what the journal knows of their
        attempts stays, so :meth:`begin` still refuses them as made before.
        Returns how many records were dropped."""
        dropped = 0
        for batch in _batches(call_ids):
            pipe = self.client.pipeline(transaction=True)
            pipe.hdel(self._keys[2], *batch)
            for key in self._keys:
                pipe.expire(key, JOB_TTL_S)
            with self.reaching(_WHAT):
                dropped += int(pipe.execute()[0])
        return dropped
