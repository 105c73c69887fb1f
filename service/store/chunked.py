"""A long batch (a load) written in one transaction, in chunks: COPY and set-wise projection of chunk k on a
writer thread while the caller's thread addresses and plans chunk k+1."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy.engine import Connection

from projections.bulkwork import bulk_work
from projections.registry import apply_events, plan_apply
from service.domain.events import NewEvent, StoredEvent
from service.domain.validation import InvalidArgument
from service.store.appendsql import COPY_EVENTS, NUL_REFUSED, copy_row, driver, psycopg_sql
from service.store.database import has_nul
from service.store.stamping import stamp_event

__all__ = ["PROJECT_CHUNK", "Numbered", "write_chunks"]

# The events of a long batch are projected by set-wise statements this many at a time.
PROJECT_CHUNK = 5000
# An event numbered under the head lock, not yet addressed: (event, type name, data, seq, version).
Numbered = tuple[NewEvent, str, dict[str, Any], int, int]


def write_chunks(
    conn: Connection,
    numbered: Sequence[Numbered],
    principal: str,
    prev: str | None,
    recorded: datetime,
    progress: Callable[[int], None] | None,
) -> list[StoredEvent]:
    """A long batch in ``conn``'s transaction, under the head lock, in chunks: this thread addresses,
    serializes and plans chunk k+1 while a writer thread COPYs chunk k and runs its projector statements (read
    back from the log, as a replay does). One time, ``recorded``, for the whole batch. A chunk no plan covers is
    applied event by event here, once the writer is idle."""
    raw = driver(conn)
    stored: list[StoredEvent] = []
    pending: Future[None] | None = None
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="substrate-load-writer")
    try:
        with bulk_work():
            for start in range(0, len(numbered), PROJECT_CHUNK):
                chunk: list[StoredEvent] = []
                for e, type_name, data, seq, version in numbered[start : start + PROJECT_CHUNK]:
                    chunk.append(stamp_event(e, type_name, data, principal, seq, version, prev, recorded))
                    prev = chunk[-1].event_id
                rows = [copy_row(s) for s in chunk]
                statements = plan_apply(chunk)
                if has_nul(rows) or (statements is not None and any(has_nul(v) for _, v in statements)):
                    raise InvalidArgument(NUL_REFUSED)
                if pending is not None:
                    pending.result()
                    if progress is not None:
                        progress(len(stored))
                    pending = None
                if statements is None:
                    copy_rows(raw, rows, [])
                    apply_events(conn, chunk)
                else:
                    planned = [(psycopg_sql(sql), values) for sql, values in statements]
                    pending = pool.submit(copy_rows, raw, rows, planned)
                stored.extend(chunk)
            if pending is not None:
                pending.result()
    finally:
        pool.shutdown(wait=True)
    return stored


def copy_rows(raw: psycopg.Connection[Any], rows: list[tuple[Any, ...]], statements: list[tuple[str, Any]]) -> None:
    """COPY event rows (``copy_row`` tuples), then run ``statements`` (psycopg placeholders)."""
    with raw.cursor() as cur:
        with cur.copy(COPY_EVENTS) as copy:
            for r in rows:
                copy.write_row(r)
        for sql, values in statements:
            cur.execute(sql, values)
