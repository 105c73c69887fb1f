"""Reading the event log back: events in seq order, stream versions, the head, and the re-walk of the chain."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from projections import loads
from service.domain.events import StoredEvent, stored_address

__all__ = ["PROGRESS_EVERY", "ChainReport", "EventReader", "row_to_event"]

# How often long walks and loads report progress (every this many rows, and at the end).
PROGRESS_EVERY = 5000
_HEAD_AND_LAST = "SELECT h.seq, (SELECT max(seq) FROM events) FROM log_head h WHERE h.id = 1"
_COLUMNS = "seq, stream, version, type, data::text, principal, scope, recorded_at, event_id, prev, hash_version"


def row_to_event(row: Sequence[Any]) -> StoredEvent:
    """Build a StoredEvent from a row selected as ``_COLUMNS`` (data as text)."""
    return StoredEvent(
        seq=row[0],
        stream=row[1],
        version=row[2],
        type=row[3],
        data=loads(row[4]),
        principal=row[5],
        scope=row[6],
        recorded_at=row[7],
        event_id=row[8],
        prev=row[9],
        hash_version=row[10],
    )


@dataclass(frozen=True)
class ChainReport:
    """The outcome of re-walking the chain: intact, or the first bad seq and why."""

    events: int
    ok: bool
    first_bad_seq: int | None = None
    reason: str = ""
    head: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "ok": self.ok,
            "first_bad_seq": self.first_bad_seq,
            "reason": self.reason,
            "head": self.head,
        }


def _mismatch(e: StoredEvent) -> str:
    if e.hash_version >= 2:
        return "content or time does not match its event_id (edited or re-dated)"
    return "content does not match its event_id (edited)"


class EventReader:
    """The reads of the ``events`` table (EventStore adds the appends)."""

    engine: Engine

    def stream_version(self, stream: str, conn: Connection | None = None) -> int:
        """The current version of ``stream`` (0 when it has no events)."""
        sql = text("SELECT coalesce(max(version), 0) FROM events WHERE stream = :s")
        if conn is not None:
            return int(conn.execute(sql, {"s": stream}).scalar_one())
        with self.engine.connect() as c:
            return int(c.execute(sql, {"s": stream}).scalar_one())

    def head(self) -> int:
        """The seq of the last committed event (0 for an empty log)."""
        with self.engine.connect() as c:
            return int(c.execute(text("SELECT seq FROM log_head WHERE id = 1")).scalar_one())

    def read(
        self,
        *,
        since: int = 0,
        until: int | None = None,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
        batch: int = 5000,
        scopes: Sequence[str] | None = None,
    ) -> Iterator[StoredEvent]:
        """Events with ``since < seq <= until`` (only of ``scopes`` when given) in seq order, streamed in batches."""
        where = ["seq > :after"]
        params: dict[str, Any] = {}
        if until is not None:
            where.append("seq <= :until")
            params["until"] = until
        if stream is not None:
            where.append("stream = :stream")
            params["stream"] = stream
        if types:
            where.append("type = ANY(CAST(:types AS text[]))")
            params["types"] = list(types)
        if scopes is not None:
            where.append("scope = ANY(CAST(:scopes AS text[]))")
            params["scopes"] = list(scopes)
        sql = text(f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT :lim")
        after, remaining = since, limit
        while remaining is None or remaining > 0:
            n = batch if remaining is None else min(batch, remaining)
            with self.engine.connect() as c:
                rows = c.execute(sql, {**params, "after": after, "lim": n}).all()
            for r in rows:
                yield row_to_event(r)
            if len(rows) < n:
                return
            after = rows[-1][0]
            if remaining is not None:
                remaining -= len(rows)

    def verify_chain(
        self,
        conn: Connection | None = None,
        *,
        progress: Callable[[int], None] | None = None,
        until: int | None = None,
        resume: ChainReport | None = None,
    ) -> ChainReport:
        """Re-walk every event: seq contiguity, prev links and each content address; the first break wins.
        ``progress`` gets the number of events walked, every 5,000 and at the end.

        The walk covers the log up to the head as it stood when it began (or up to ``until``): events appended
        meanwhile are not a break (a live store keeps writing), while a row beyond the head at the end is (no append
        writes one). ``resume``: an intact report of a walk to an earlier seq, continued from its last event.
        """
        start = resume.events if resume is not None else 0
        with self.engine.connect() as c:
            head_seq, head_id = c.execute(text("SELECT seq, event_id FROM log_head WHERE id = 1")).one()
            last_time, last_version = (
                c.execute(text("SELECT recorded_at, hash_version FROM events WHERE seq = :seq"), {"seq": start}).one()
                if start
                else (None, 1)
            )
        target = head_seq if until is None else until
        expected_prev = resume.head if resume is not None else None
        expected_seq = start + 1
        count = start
        for e in self.read(since=start, until=target):
            count += 1
            if e.seq != expected_seq:
                return ChainReport(count, False, expected_seq, f"seq {expected_seq} is missing (next is {e.seq})")
            if e.prev != expected_prev:
                return ChainReport(count, False, e.seq, "prev does not match the previous event's address")
            if e.hash_version < last_version:
                return ChainReport(
                    count, False, e.seq, "hash version goes back (an event re-addressed without its time)"
                )
            if stored_address(e) != e.event_id:
                return ChainReport(count, False, e.seq, _mismatch(e))
            # A version 1 event's time is outside its address, but appends stamp times in seq order, so it never
            # decreases with seq: a version 1 event backdated (or postdated) past a neighbour shows up here.
            if last_time is not None and e.recorded_at is not None and e.recorded_at < last_time:
                return ChainReport(count, False, e.seq, "recorded_at is earlier than the previous event's (re-dated)")
            last_time, last_version = e.recorded_at, e.hash_version
            expected_prev = e.event_id
            expected_seq += 1
            if progress is not None and count % PROGRESS_EVERY == 0:
                progress(count)
        if progress is not None:
            progress(count)
        if (target == head_seq and head_id != expected_prev) or expected_seq - 1 != target:
            return ChainReport(
                count,
                False,
                expected_seq,
                f"log head (seq {target}) does not match the last event (seq {expected_seq - 1}): events deleted",
            )
        with self.engine.connect() as c:
            # One snapshot: an append moves the head and adds its rows in one transaction, so they always agree.
            now_seq, last_seq = c.execute(text(_HEAD_AND_LAST)).one()
        if last_seq is not None and last_seq > now_seq:
            return ChainReport(count, False, now_seq + 1, f"event rows beyond the log head (seq {now_seq}): inserted")
        return ChainReport(count, True, head=expected_prev)
