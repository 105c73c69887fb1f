"""The append-only, hash-chained event log on PostgreSQL: appends, with inline projection (reads: service.store.eventread)."""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from projections.bulkwork import bulk_work
from projections.jsonutil import dumps, loads
from projections.registry import BIND, Statement, apply_events, plan_apply, plan_events, plans_as_ctes, projector_names
from service.domain.errors import ConcurrencyError
from service.domain.events import NewEvent, StoredEvent, event_address, normalize_json
from service.domain.validation import InvalidArgument
from service.store.database import has_nul
from service.store.eventread import ChainReport, EventReader, row_to_event

__all__ = ["ChainReport", "EventStore", "row_to_event"]

_VERSIONS_SQL = (
    "SELECT coalesce(jsonb_object_agg(stream, version), '{}'::jsonb)::text FROM ("
    " SELECT stream, max(version) AS version FROM events"
    " WHERE stream = ANY(CAST(:streams AS text[])) GROUP BY stream) s"
)
# The chain lock, and in the same round trip the streams' versions and the head as this statement's snapshot
# saw them. If the lock had to wait for another append, the locked row is that append's newer head while the
# subqueries still read the snapshot taken before the wait: the two seqs then differ and the versions are
# re-read (_VERSIONS_SQL: a new statement, a new snapshot). Equal seqs mean nothing committed in between.
_LOCK_HEAD_SQL = (
    "SELECT h.seq, h.event_id, (SELECT s.seq FROM log_head s WHERE s.id = 1), "
    f"({_VERSIONS_SQL}) FROM log_head h WHERE h.id = 1 FOR UPDATE OF h"
)
# One statement: the event row, the new chain head, every inline projector's checkpoint and (when they can
# plan it) every inline projector's own statements, as further data-modifying CTEs ({projections}).
_INSERT_ONE = (
    "WITH e AS (INSERT INTO events (seq, stream, version, type, data, principal, scope, event_id, prev) "
    " VALUES (:seq, :stream, :version, :type, CAST(:data AS jsonb), :principal, :scope, :event_id, :prev) "
    " RETURNING recorded_at), "
    "h AS (UPDATE log_head SET seq = :seq, event_id = :event_id WHERE id = 1), "
    "c AS (INSERT INTO checkpoints (name, seq) SELECT unnest(CAST(:names AS text[])), :seq "
    " ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq){projections} "
    "SELECT recorded_at FROM e"
)
# The single-event append as one autocommit statement, a compare-and-set on the chain head: ``h`` takes the
# log_head row lock (the chain lock) only if the head is still the one the event was addressed against and the
# stream is still at the version it was numbered from. A writer that had to wait for another append finds the
# head moved (PostgreSQL re-checks the WHERE on the newer row), so ``h`` and ``e`` are empty and
# substrate_appended (migration 0007) voids the whole statement, projector CTEs included; the caller then takes
# the locked path. Holding the row lock until commit serializes appends exactly as the locked path does.
_INSERT_CAS = (
    "WITH h AS (UPDATE log_head SET seq = :seq, event_id = :event_id "
    " WHERE id = 1 AND seq = :after AND event_id IS NOT DISTINCT FROM :prev{stream_check} RETURNING seq), "
    "e AS (INSERT INTO events (seq, stream, version, type, data, principal, scope, event_id, prev) "
    " SELECT h.seq, :stream, :version, :type, CAST(:data AS jsonb), :principal, :scope, :event_id, :prev FROM h "
    " RETURNING recorded_at), "
    "c AS (INSERT INTO checkpoints (name, seq) SELECT unnest(CAST(:names AS text[])), :seq "
    " ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq){projections} "
    "SELECT substrate_appended((SELECT recorded_at FROM e))"
)
# The stream check of _INSERT_CAS, for a caller's expected version (which may be ahead of the stream). A version
# guessed from this engine's hints needs none: versions only grow, and an unchanged head event_id (a hash chain)
# means an unchanged log, so a guess can only lag, and a lagging one collides with UNIQUE(stream, version), which
# voids the statement just as the check would.
_STREAM_CHECK = " AND (SELECT coalesce(max(version), 0) FROM events WHERE stream = :stream) = :current"
_INSERT_CAS_EXPECTED = _INSERT_CAS.replace("{stream_check}", _STREAM_CHECK)
_INSERT_CAS_HINTED = _INSERT_CAS.replace("{stream_check}", "")
# A whole batch stamped ahead of time (service.store.bulk_append) is written in one transaction: this compare-and-set
# on the head first (it takes the chain lock only if nothing was appended since the batch was stamped: every
# append moves the head; UNIQUE(stream, version) backs this up), then COPY of the events, then the inline
# projectors' statements reading the batch back from the log, checkpoints included.
_CLAIM_HEAD = (
    "UPDATE log_head SET seq = %(seq)s, event_id = %(event_id)s "
    "WHERE id = 1 AND seq = %(after)s AND event_id IS NOT DISTINCT FROM %(prev)s RETURNING seq"
)
# The batch's recorded_at, one per event (the column's default, clock_timestamp(), taken under the chain lock).
_RECORDED = "SELECT array_agg(recorded_at ORDER BY seq) FROM events WHERE seq > %(after)s AND seq <= %(seq)s"
_COPY_EVENTS = "COPY events (seq, stream, version, type, data, principal, scope, event_id, prev) FROM STDIN"
_RACED = "SB409"  # substrate_appended's SQLSTATE
# What a compare-and-set statement returns, read back from the log: found only if its last event landed.
_LANDED_SQL = (
    "SELECT max(recorded_at), array_agg(recorded_at ORDER BY seq) FROM events "
    "WHERE seq > :after AND seq <= :seq AND EXISTS (SELECT 1 FROM events WHERE seq = :seq AND event_id = :event_id)"
)
_SET_HEAD = text("UPDATE log_head SET seq = :seq, event_id = :event_id WHERE id = 1")
# A batch of _COPY_THRESHOLD events or more is written with COPY and projected by set-wise statements, in chunks of
# _PROJECT_CHUNK events (_write_chunks); a shorter one is inserted row by row and applied by each projector.
_COPY_THRESHOLD = 64
_PROJECT_CHUNK = 5000
_NUL_REFUSED = "text values cannot contain NUL (\\x00) characters: PostgreSQL cannot store them"


class _Hints:
    """What this process last saw of the log: the head and recent stream versions (guesses for the CAS append)."""

    __slots__ = ("head", "versions")
    _MAX_STREAMS = 50_000

    def __init__(self) -> None:
        self.head: tuple[int, str | None] | None = None
        self.versions: dict[str, int] = {}

    def saw(self, stored: Sequence[StoredEvent]) -> None:
        if len(self.versions) > self._MAX_STREAMS:
            self.versions.clear()
        for s in stored:
            self.versions[s.stream] = s.version
        last = stored[-1]
        if self.head is None or last.seq > self.head[0]:
            self.head = (last.seq, last.event_id)


# One set of hints per engine (per database), shared by every handle on it; stale hints only cost a retry.
_HINTS: weakref.WeakKeyDictionary[Engine, _Hints] = weakref.WeakKeyDictionary()


class _Kept:
    """Pooled connections kept checked out in autocommit for the one-statement appends (per engine).

    A pool checkout, its reset on return and the autocommit switches cost ~35 us, as much as a tenth of a put().
    At most ``_MAX`` are kept (the rest go back to the pool); the engine's dispose() closes them. A forked child
    never uses (nor closes) its parent's: their sockets are the parent's sessions.
    """

    _MAX = 2

    def __init__(self, engine: Engine) -> None:
        self._engine = weakref.ref(engine)  # _KEPT's values must not keep its keys alive
        self._pid = os.getpid()
        self.free: list[Any] = []
        event.listen(engine, "engine_disposed", self._drop)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self._pid != os.getpid():
            self._forget()
        try:
            fairy = self.free.pop()  # list.pop/append are atomic: no lock needed between threads
        except IndexError:
            engine = self._engine()
            assert engine is not None  # only an EventStore holding the engine calls this
            fairy = engine.raw_connection()
            fairy.driver_connection.autocommit = True  # type: ignore[union-attr]
        try:
            yield fairy.driver_connection  # type: ignore[misc]
        except psycopg.OperationalError:
            fairy.invalidate()  # a broken connection must not be reused
            raise
        except BaseException:
            self._give_back(fairy)
            raise
        self._give_back(fairy)

    def _give_back(self, fairy: Any) -> None:
        raw = fairy.driver_connection
        if raw is None or raw.closed or len(self.free) >= self._MAX:
            _release(fairy)
        else:
            self.free.append(fairy)

    def _drop(self, _engine: Engine) -> None:
        if self._pid != os.getpid():
            self._forget()
            return
        while self.free:
            fairy = self.free.pop()
            fairy.invalidate()  # closes the driver connection now (the pool it came from is gone)

    def _forget(self) -> None:
        """In a forked child: set the parent's connections aside, never used, closed nor collected (closing, or the
        driver's finalizer, would end the parent's sessions on the shared sockets)."""
        _INHERITED.extend(self.free)
        self.free = []
        self._pid = os.getpid()


def _release(fairy: Any) -> None:
    """Return a kept connection to the pool, out of autocommit as the pool's other users expect."""
    raw = fairy.driver_connection
    if raw is not None and not raw.closed:
        raw.autocommit = False
    fairy.close()


_KEPT: weakref.WeakKeyDictionary[Engine, _Kept] = weakref.WeakKeyDictionary()
_INHERITED: list[Any] = []


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """A stamped batch ready for ``EventStore.insert_stamped``: the head it follows, its last event, the event
    rows for COPY (data serialized; recorded_at is the column's default) and the projectors' statements (psycopg
    placeholders), all built on the caller's thread."""

    after: tuple[int, str | None]
    last: tuple[int, str]
    rows: list[tuple[Any, ...]]
    statements: list[tuple[str, dict[str, Any]]]


class _Lost(Exception):
    """The head moved since the batch was stamped: nothing is written."""


class EventStore(EventReader):
    """Appends events in one transaction (chain lock, version check, insert, inline projection) and reads them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        hints = _HINTS.get(engine)
        if hints is None:
            hints = _HINTS[engine] = _Hints()
        self._hints = hints
        kept = _KEPT.get(engine)
        if kept is None:
            kept = _KEPT[engine] = _Kept(engine)
        self._kept = kept

    def append(
        self,
        events: Sequence[NewEvent],
        principal: str,
        *,
        conn: Connection | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[StoredEvent]:
        """Append ``events`` atomically; ConcurrencyError (nothing written) when an expected version is stale.
        ``progress`` gets the events written so far (a long batch reports each chunk it projects)."""
        if not events:
            return []
        if conn is not None:
            return self._append(conn, events, principal, progress)
        if len(events) == 1:
            fast = self._append_cas(events[0], principal)
            if fast is not None:
                return [fast]
        try:
            with self.engine.begin() as c:
                return self._append(c, events, principal, progress)
        except (IntegrityError, pg_errors.UniqueViolation) as exc:
            # The UNIQUE(stream, version) backstop: reached only if a writer bypassed the head lock.
            orig = exc.orig if isinstance(exc, IntegrityError) else exc
            if isinstance(orig, pg_errors.UniqueViolation):
                raise ConcurrencyError(events[0].stream, events[0].expected_version or 0) from None
            raise

    def head_hint(self) -> tuple[int, str | None]:
        """The log head (seq, event_id) as this engine last saw it; read from the database when it has seen none."""
        head = self._hints.head
        if head is None:
            with self.engine.connect() as c:
                seq, event_id = c.execute(text("SELECT seq, event_id FROM log_head WHERE id = 1")).one()
            head = self._hints.head = (int(seq), event_id)
        return head

    def stream_versions(self, streams: Sequence[str], *, new: Sequence[str] = ()) -> dict[str, int]:
        """The current version of each of ``streams`` that has events (one query); of ``new`` (streams believed
        to have none: generated ids), only the versions this engine has written itself, no query."""
        known = self._hints.versions
        out = {s: known[s] for s in new if s in known}
        if streams:
            with self.engine.connect() as c:
                out.update(loads(c.execute(text(_VERSIONS_SQL), {"streams": list(streams)}).scalar_one()))
        return out

    def stamp(
        self, events: Sequence[NewEvent], principal: str, head: tuple[int, str | None], versions: dict[str, int]
    ) -> list[StoredEvent]:
        """``events`` numbered and addressed as if appended right after ``head``; ``versions`` advances with them."""
        seq, prev = head
        stored = []
        for e in events:
            type_name, data = _type_and_data(e)
            seq += 1
            version = versions[e.stream] = versions.get(e.stream, 0) + 1
            stored.append(_stamp(e, type_name, data, principal, seq, version, prev))
            prev = stored[-1].event_id
        return stored

    def batch_statement(self, stored: Sequence[StoredEvent], after: tuple[int, str | None]) -> BatchWrite | None:
        """What writes a batch ``stamp`` made after ``after`` (see _CLAIM_HEAD), or None when the inline projectors
        cannot plan it as statements: append it normally."""
        # Optimistic: a plain INSERT of items it believes new; a row that exists fails the batch like a lost race.
        statements = plan_apply(stored, optimistic=True) if stored else None
        if not statements:
            return None
        last = stored[-1]
        rows = [
            (s.seq, s.stream, s.version, s.type, dumps(s.data), s.principal, s.scope, s.event_id, s.prev)
            for s in stored
        ]
        planned = [(_psycopg_sql(sql), values) for sql, values in statements]
        return BatchWrite(after, (last.seq, last.event_id), rows, planned)

    def insert_stamped(self, stored: Sequence[StoredEvent], write: BatchWrite) -> list[StoredEvent] | None:
        """Run a ``batch_statement``; the stored events with their times, or None (nothing written) when the head
        had moved since the batch was stamped."""
        if any(has_nul(values) for _, values in write.statements):
            raise InvalidArgument(_NUL_REFUSED)
        claim = {"seq": write.last[0], "event_id": write.last[1], "after": write.after[0], "prev": write.after[1]}
        try:
            with self._kept.connection() as raw, raw.transaction(), raw.cursor() as cur:
                if cur.execute(_CLAIM_HEAD, claim).fetchone() is None:
                    raise _Lost
                with cur.copy(_COPY_EVENTS) as copy:
                    for r in write.rows:
                        copy.write_row(r)
                for sql, values in write.statements:
                    cur.execute(sql, values)
                times = cur.execute(_RECORDED, claim).fetchone()[0]  # type: ignore[index]
        except (_Lost, pg_errors.UniqueViolation):
            return None
        except psycopg.OperationalError:
            times = self._landed(claim)  # the connection died: did the commit land? (see _compare_and_set)
            if times is None:
                return None
        out = [_with_time(s, t) for s, t in zip(stored, times, strict=True)]
        self._hints.saw(out)
        return out

    def _landed(self, params: dict[str, Any]) -> list[Any] | None:
        """The recorded times of the events an append wrote up to ``params["seq"]``, if its last event (``event_id``
        at that seq) is in the log; None if it is not (nothing of that append was committed)."""
        with self.engine.begin() as c:
            # A commit still in flight on the dead connection holds the head's row lock: wait it out, so that
            # "not in the log" means it never will be (else the caller's retry would write the batch twice).
            c.execute(text("SELECT 1 FROM log_head WHERE id = 1 FOR SHARE"))
            row = c.execute(text(_LANDED_SQL), params).one()
        return None if row[0] is None else list(row[1])

    def _append_cas(self, e: NewEvent, principal: str) -> StoredEvent | None:
        """One event in one autocommit round trip (see _INSERT_CAS), or None when the locked path must do it."""
        head = self._hints.head
        if head is None:
            return None
        type_name, data = _type_and_data(e)
        current = e.expected_version if e.expected_version is not None else self._hints.versions.get(e.stream, 0)
        s = _stamp(e, type_name, data, principal, head[0] + 1, current + 1, head[1])
        plans = plan_events([s])
        if plans is None:
            return None
        params = {**_row(s), "names": _names_array(), "after": head[0], "current": current}
        sql = _INSERT_CAS_EXPECTED if e.expected_version is not None else _INSERT_CAS_HINTED
        row = self._compare_and_set(_with_plans(sql, plans, params), params)
        if row is None:
            return None
        stored = _with_time(s, row[0])
        self._hints.saw([stored])
        return stored

    def _compare_and_set(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run a compare-and-set append in autocommit: its row, or None when it lost the race (nothing written)."""
        try:
            with self._kept.connection() as raw:
                try:
                    return _fetch_one(raw, sql, params)
                except pg_errors.DatabaseError as exc:
                    if isinstance(exc, pg_errors.UniqueViolation) or exc.sqlstate == _RACED:
                        return None
                    raise
        except psycopg.OperationalError:
            # The connection died (a server restart, an idle timeout): the statement may or may not have
            # committed. The last event's content address says which; if it did not, the caller appends anew.
            times = self._landed(params)
            return None if times is None else (times[-1],)

    def _append(
        self,
        conn: Connection,
        events: Sequence[NewEvent],
        principal: str,
        progress: Callable[[int], None] | None = None,
    ) -> list[StoredEvent]:
        prepared = [(e, *_type_and_data(e)) for e in events]
        # Appends are serialized on the single log_head row: while we hold it, nobody else can append, so
        # seq is gapless, equals commit order, and `prev` is the true predecessor. A reader tailing
        # `seq > n` therefore never skips an event that commits late.
        streams = sorted({e.stream for e in events})
        raw = _driver(conn)
        seq, prev, seen, versions_json = _fetch_one(raw, _LOCK_HEAD_SQL, {"streams": streams})
        if seen != seq:  # another append committed after this statement's snapshot: read the versions anew
            versions_json = _fetch_one(raw, _VERSIONS_SQL, {"streams": streams})[0]
        versions: dict[str, int] = loads(versions_json)
        self._hints.head = (seq, prev)
        numbered: list[_Numbered] = []
        for e, type_name, data in prepared:
            current = versions.get(e.stream, 0)
            if e.expected_version is not None and e.expected_version != current:
                self._hints.versions[e.stream] = current
                raise ConcurrencyError(e.stream, e.expected_version)
            seq += 1
            versions[e.stream] = current + 1
            numbered.append((e, type_name, data, seq, current + 1))
        if len(numbered) >= _COPY_THRESHOLD:
            stored = _write_chunks(conn, numbered, principal, prev, progress)
        else:
            stored = []
            for e, type_name, data, n, version in numbered:
                stored.append(_stamp(e, type_name, data, principal, n, version, prev))
                prev = stored[-1].event_id
            if len(stored) == 1:
                plans = plan_events(stored)
                stored = [self._insert_one(conn, stored[0], plans or [])]
                if plans is None:
                    apply_events(conn, stored, checkpoint=False)
            else:
                stored = self._insert(conn, stored)
                apply_events(conn, stored)
        if len(stored) > 1:  # (a single event's statement moves the head itself)
            conn.execute(_SET_HEAD, {"seq": stored[-1].seq, "event_id": stored[-1].event_id})
        self._hints.saw(stored)
        if progress is not None:
            progress(len(stored))
        return stored

    def _insert_one(self, conn: Connection, s: StoredEvent, plans: Sequence[Statement]) -> StoredEvent:
        params: dict[str, Any] = {**_row(s), "names": _names_array()}
        recorded = _fetch_one(_driver(conn), _with_plans(_INSERT_ONE, plans, params), params)[0]
        return _with_time(s, recorded)

    def _insert(self, conn: Connection, stored: list[StoredEvent]) -> list[StoredEvent]:
        """A short batch's event rows, one timestamp for all of them (taken under the head lock: monotone with seq)."""
        rows = [_row(s) for s in stored]
        with _driver(conn).cursor() as cur:
            recorded = cur.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
            cur.executemany(
                f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (%(seq)s, %(stream)s, %(version)s, %(type)s, "
                "%(data)s::jsonb, %(principal)s, %(scope)s, %(event_id)s, %(prev)s, %(recorded)s)",
                [{**r, "recorded": recorded} for r in rows],
            )
        return [_with_time(s, recorded) for s in stored]


# An event numbered under the head lock, not yet addressed: (event, type name, data, seq, version).
_Numbered = tuple[NewEvent, str, dict[str, Any], int, int]
_EVENT_COLUMNS = "seq, stream, version, type, data, principal, scope, event_id, prev, recorded_at"


def _write_chunks(
    conn: Connection,
    numbered: Sequence[_Numbered],
    principal: str,
    prev: str | None,
    progress: Callable[[int], None] | None,
) -> list[StoredEvent]:
    """A long batch (a load) in ``conn``'s transaction, under the head lock, in chunks: this thread addresses,
    serializes and plans chunk k+1 while a writer thread COPYs chunk k and runs its projector statements (read
    back from the log, as a replay does). One timestamp for the whole batch. A chunk no plan covers is applied
    event by event here, once the writer is idle."""
    raw = _driver(conn)
    with raw.cursor() as cur:
        recorded = cur.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
    stored: list[StoredEvent] = []
    pending: Future[None] | None = None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="substrate-load-writer")
    try:
        with bulk_work():
            for start in range(0, len(numbered), _PROJECT_CHUNK):
                chunk: list[StoredEvent] = []
                for e, type_name, data, seq, version in numbered[start : start + _PROJECT_CHUNK]:
                    chunk.append(_with_time(_stamp(e, type_name, data, principal, seq, version, prev), recorded))
                    prev = chunk[-1].event_id
                rows = [
                    (s.seq, s.stream, s.version, s.type, dumps(s.data), s.principal, s.scope, s.event_id, s.prev)
                    for s in chunk
                ]
                statements = plan_apply(chunk)
                if has_nul(rows) or (statements is not None and any(has_nul(v) for _, v in statements)):
                    raise InvalidArgument(_NUL_REFUSED)
                if pending is not None:
                    pending.result()
                    if progress is not None:
                        progress(len(stored))
                    pending = None
                if statements is None:
                    _copy_rows(raw, rows, recorded, [])
                    apply_events(conn, chunk)
                else:
                    planned = [(_psycopg_sql(sql), values) for sql, values in statements]
                    pending = pool.submit(_copy_rows, raw, rows, recorded, planned)
                stored.extend(chunk)
            if pending is not None:
                pending.result()
    finally:
        pool.shutdown(wait=True)
    return stored


def _copy_rows(
    raw: psycopg.Connection[Any], rows: list[tuple[Any, ...]], recorded: Any, statements: list[tuple[str, Any]]
) -> None:
    """COPY event rows (all recorded at ``recorded``), then run ``statements`` (psycopg placeholders)."""
    with raw.cursor() as cur:
        with cur.copy(f"COPY events ({_EVENT_COLUMNS}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row((*r, recorded))
        for sql, values in statements:
            cur.execute(sql, values)


@functools.cache
def _names_array() -> str:
    """The inline projectors' names as one text[] literal (a str binds faster than a list)."""
    return "{" + ",".join(projector_names()) + "}"


def _type_and_data(e: NewEvent) -> tuple[str, dict[str, Any]]:
    """The event's type name and its normalized data."""
    type_name = e.event.type_name
    return type_name, (e.event.to_data() if e.normalized else normalize_json(e.event.to_data(), type_name))


def _stamp(
    e: NewEvent, type_name: str, data: dict[str, Any], principal: str, seq: int, version: int, prev: str | None
) -> StoredEvent:
    """The event as it will be stored at ``seq``/``version`` after ``prev``, with its content address."""
    event_id = event_address(
        stream=e.stream, version=version, type=type_name, data=data, principal=principal, scope=e.scope, prev=prev
    )
    return StoredEvent(seq, e.stream, version, type_name, data, principal, e.scope, None, event_id, prev)


def _with_plans(sql: str, plans: Sequence[Statement], params: dict[str, Any]) -> str:
    """``sql`` with each planned projector statement as a further CTE; their parameters go into ``params``."""
    return sql.format(projections=plans_as_ctes(plans, params))


def _driver(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under a SQLAlchemy one (its transaction included)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw  # type: ignore[no-any-return]


def _fetch_one(raw: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
    """Run one statement of the append path on a psycopg connection (SQLAlchemy's own under a transaction); its row.

    The statements every append runs skip SQLAlchemy's per-execute work (about 50 us each); the NUL guard
    that SQLAlchemy executions get (service.store.database) is applied here too.
    """
    if any("\x00" in v if type(v) is str else has_nul(v) for v in params.values()):
        raise InvalidArgument(_NUL_REFUSED)
    with raw.cursor() as cur:
        cur.execute(_psycopg_sql(sql), params)
        row = cur.fetchone()
    assert row is not None
    return tuple(row)


@functools.lru_cache(maxsize=256)
def _psycopg_sql(sql: str) -> str:
    """SQLAlchemy-style ``:name`` parameters as psycopg's ``%(name)s`` (a handful of shapes, converted once)."""
    return BIND.sub(lambda m: f"%({m.group(1)})s", sql.replace("%", "%%"))


def _row(s: StoredEvent) -> dict[str, Any]:
    """One event's column values, data serialized for a jsonb parameter."""
    return {
        "seq": s.seq,
        "stream": s.stream,
        "version": s.version,
        "type": s.type,
        "data": dumps(s.data),
        "principal": s.principal,
        "scope": s.scope,
        "event_id": s.event_id,
        "prev": s.prev,
    }


def _with_time(s: StoredEvent, recorded: Any) -> StoredEvent:
    return StoredEvent(s.seq, s.stream, s.version, s.type, s.data, s.principal, s.scope, recorded, s.event_id, s.prev)
