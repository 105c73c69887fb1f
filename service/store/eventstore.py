"""The append-only, hash-chained event log on PostgreSQL: appends, with inline projection (reads: service.store.eventread).

The SQL is in service.store.appendsql, the per-engine hints and kept connections in service.store.kept, the
chunked write of a long batch in service.store.chunked, numbering and addressing in service.store.stamping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from projections.jsonutil import loads
from projections.registry import Statement, apply_events, plan_apply, plan_events
from service.domain.errors import ConcurrencyError
from service.domain.events import NewEvent, StoredEvent
from service.domain.validation import InvalidArgument
from service.store.appendsql import (
    CLAIM_HEAD,
    COPY_EVENTS,
    INSERT_CAS_EXPECTED,
    INSERT_CAS_HINTED,
    INSERT_ONE,
    INSERT_ROWS,
    LANDED_SQL,
    LOCK_HEAD_SQL,
    NUL_REFUSED,
    RACED,
    RECORDED,
    SET_HEAD,
    VERSIONS_SQL,
    copy_row,
    driver,
    event_row,
    fetch_one,
    names_array,
    psycopg_sql,
    with_plans,
    with_time,
)
from service.store.chunked import Numbered, write_chunks
from service.store.database import has_nul
from service.store.eventread import ChainReport, EventReader, row_to_event
from service.store.kept import Head, hints_for, kept_for
from service.store.stamping import event_time, stamp_event, type_and_data

__all__ = ["BatchWrite", "ChainReport", "EventStore", "Head", "row_to_event"]

# A batch of _COPY_THRESHOLD events or more is written with COPY and projected by set-wise statements, in chunks
# (service.store.chunked); a shorter one is inserted row by row and applied by each projector.
_COPY_THRESHOLD = 64
_HEAD_SQL = text("SELECT seq, event_id, recorded_at FROM log_head WHERE id = 1")


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """A stamped batch ready for ``EventStore.insert_stamped``: the head it follows, its last event, the event
    rows for COPY (data serialized) and the projectors' statements (psycopg placeholders), all built on the
    caller's thread."""

    after: Head
    last: Head
    rows: list[tuple[Any, ...]]
    statements: list[tuple[str, dict[str, Any]]]


class _Lost(Exception):
    """The head moved since the batch was stamped: nothing is written."""


class EventStore(EventReader):
    """Appends events in one transaction (chain lock, version check, insert, inline projection) and reads them.

    Only the facade (service.substrate.Substrate.append) calls the appends: it checks every event first.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._hints = hints_for(engine)
        self._kept = kept_for(engine)

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

    def head_hint(self) -> Head:
        """The log head (seq, event_id, recorded_at) as this engine last saw it; read from the database when it has
        seen none."""
        head = self._hints.head
        if head is None:
            with self.engine.connect() as c:
                seq, event_id, recorded = c.execute(_HEAD_SQL).one()
            head = self._hints.head = (int(seq), event_id, recorded)
        return head

    def stream_versions(self, streams: Sequence[str], *, new: Sequence[str] = ()) -> dict[str, int]:
        """The current version of each of ``streams`` that has events (one query); of ``new`` (streams believed
        to have none: generated ids), only the versions this engine has written itself, no query."""
        known = self._hints.versions
        out = {s: known[s] for s in new if s in known}
        if streams:
            with self.engine.connect() as c:
                out.update(loads(c.execute(text(VERSIONS_SQL), {"streams": list(streams)}).scalar_one()))
        return out

    def stamp(
        self, events: Sequence[NewEvent], principal: str, head: Head, versions: dict[str, int]
    ) -> list[StoredEvent]:
        """``events`` numbered and addressed as if appended right after ``head`` (one time for the batch);
        ``versions`` advances with them."""
        seq, prev, after = head
        recorded = event_time(after)
        stored = []
        for e in events:
            type_name, data = type_and_data(e)
            seq += 1
            version = versions[e.stream] = versions.get(e.stream, 0) + 1
            stored.append(stamp_event(e, type_name, data, principal, seq, version, prev, recorded))
            prev = stored[-1].event_id
        return stored

    def batch_statement(self, stored: Sequence[StoredEvent], after: Head) -> BatchWrite | None:
        """What writes a batch ``stamp`` made after ``after`` (see CLAIM_HEAD), or None when the inline projectors
        cannot plan it as statements: append it normally."""
        # Optimistic: a plain INSERT of items it believes new; a row that exists fails the batch like a lost race.
        statements = plan_apply(stored, optimistic=True) if stored else None
        if not statements:
            return None
        last = stored[-1]
        rows = [copy_row(s) for s in stored]
        planned = [(psycopg_sql(sql), values) for sql, values in statements]
        return BatchWrite(after, (last.seq, last.event_id, last.recorded_at), rows, planned)

    def insert_stamped(self, stored: Sequence[StoredEvent], write: BatchWrite) -> list[StoredEvent] | None:
        """Run a ``batch_statement``; the stored events, or None (nothing written) when the head had moved since
        the batch was stamped."""
        if any(has_nul(values) for _, values in write.statements):
            raise InvalidArgument(NUL_REFUSED)
        claim = {
            "seq": write.last[0],
            "event_id": write.last[1],
            "recorded_at": write.last[2],
            "after": write.after[0],
            "prev": write.after[1],
        }
        try:
            with self._kept.connection() as raw, raw.transaction(), raw.cursor() as cur:
                if cur.execute(CLAIM_HEAD, claim).fetchone() is None:
                    raise _Lost
                with cur.copy(COPY_EVENTS) as copy:
                    for r in write.rows:
                        copy.write_row(r)
                for sql, values in write.statements:
                    cur.execute(sql, values)
                times = cur.execute(RECORDED, claim).fetchone()[0]  # type: ignore[index]
        except (_Lost, pg_errors.UniqueViolation):
            return None
        except psycopg.OperationalError:
            times = self._landed(claim)  # the connection died: did the commit land? (see _compare_and_set)
            if times is None:
                return None
        out = [with_time(s, t) for s, t in zip(stored, times, strict=True)]
        self._hints.saw(out)
        return out

    def _landed(self, params: dict[str, Any]) -> list[Any] | None:
        """The recorded times of the events an append wrote up to ``params["seq"]``, if its last event (``event_id``
        at that seq) is in the log; None if it is not (nothing of that append was committed)."""
        with self.engine.begin() as c:
            # A commit still in flight on the dead connection holds the head's row lock: wait it out, so that
            # "not in the log" means it never will be (else the caller's retry would write the batch twice).
            c.execute(text("SELECT 1 FROM log_head WHERE id = 1 FOR SHARE"))
            row = c.execute(text(LANDED_SQL), params).one()
        return None if row[0] is None else list(row[1])

    def _append_cas(self, e: NewEvent, principal: str) -> StoredEvent | None:
        """One event in one autocommit round trip (see INSERT_CAS_*), or None when the locked path must do it."""
        head = self._hints.head
        if head is None:
            return None
        type_name, data = type_and_data(e)
        current = e.expected_version if e.expected_version is not None else self._hints.versions.get(e.stream, 0)
        s = stamp_event(e, type_name, data, principal, head[0] + 1, current + 1, head[1], event_time(head[2]))
        plans = plan_events([s])
        if plans is None:
            return None
        params = {**event_row(s), "names": names_array(), "after": head[0], "current": current}
        sql = INSERT_CAS_EXPECTED if e.expected_version is not None else INSERT_CAS_HINTED
        row = self._compare_and_set(with_plans(sql, plans, params), params)
        if row is None:
            return None
        stored = with_time(s, row[0])
        self._hints.saw([stored])
        return stored

    def _compare_and_set(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run a compare-and-set append in autocommit: its row, or None when it lost the race (nothing written)."""
        try:
            with self._kept.connection() as raw:
                try:
                    return fetch_one(raw, sql, params)
                except pg_errors.DatabaseError as exc:
                    if isinstance(exc, pg_errors.UniqueViolation) or exc.sqlstate == RACED:
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
        prepared = [(e, *type_and_data(e)) for e in events]
        # Appends are serialized on the single log_head row: while we hold it, nobody else can append, so
        # seq is gapless, equals commit order, and `prev` is the true predecessor. A reader tailing
        # `seq > n` therefore never skips an event that commits late.
        streams = sorted({e.stream for e in events})
        raw = driver(conn)
        seq, prev, after, seen, versions_json = fetch_one(raw, LOCK_HEAD_SQL, {"streams": streams})
        if seen != seq:  # another append committed after this statement's snapshot: read the versions anew
            versions_json = fetch_one(raw, VERSIONS_SQL, {"streams": streams})[0]
        versions: dict[str, int] = loads(versions_json)
        self._hints.head = (seq, prev, after)
        numbered: list[Numbered] = []
        for e, type_name, data in prepared:
            current = versions.get(e.stream, 0)
            if e.expected_version is not None and e.expected_version != current:
                self._hints.versions[e.stream] = current
                raise ConcurrencyError(e.stream, e.expected_version)
            seq += 1
            versions[e.stream] = current + 1
            numbered.append((e, type_name, data, seq, current + 1))
        # One time for the whole batch, taken under the head lock: never earlier than the head's.
        recorded = event_time(after)
        if len(numbered) >= _COPY_THRESHOLD:
            stored = write_chunks(conn, numbered, principal, prev, recorded, progress)
        else:
            stored = []
            for e, type_name, data, n, version in numbered:
                stored.append(stamp_event(e, type_name, data, principal, n, version, prev, recorded))
                prev = stored[-1].event_id
            if len(stored) == 1:
                plans = plan_events(stored)
                self._insert_one(conn, stored[0], plans or [])
                if plans is None:
                    apply_events(conn, stored, checkpoint=False)
            else:
                with raw.cursor() as cur:
                    cur.executemany(INSERT_ROWS, [event_row(s) for s in stored])
                apply_events(conn, stored)
        if len(stored) > 1:  # (a single event's statement moves the head itself)
            last = stored[-1]
            conn.execute(SET_HEAD, {"seq": last.seq, "event_id": last.event_id, "recorded_at": last.recorded_at})
        self._hints.saw(stored)
        if progress is not None:
            progress(len(stored))
        return stored

    def _insert_one(self, conn: Connection, s: StoredEvent, plans: Sequence[Statement]) -> None:
        params: dict[str, Any] = {**event_row(s), "names": names_array()}
        fetch_one(driver(conn), with_plans(INSERT_ONE, plans, params), params)
