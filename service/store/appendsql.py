"""The append path's SQL, and running it straight on psycopg (the statements every append runs skip SQLAlchemy)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.jsonutil import dumps
from projections.registry import BIND, Statement, plans_as_ctes, projector_names
from service.domain.events import StoredEvent
from service.domain.validation import InvalidArgument
from service.store.database import has_nul

__all__ = [
    "INSERT_ROWS",
    "CLAIM_HEAD",
    "COPY_EVENTS",
    "EVENT_COLUMNS",
    "INSERT_CAS_EXPECTED",
    "INSERT_CAS_HINTED",
    "INSERT_ONE",
    "LANDED_SQL",
    "LOCK_HEAD_SQL",
    "NUL_REFUSED",
    "RACED",
    "RECORDED",
    "SET_HEAD",
    "VERSIONS_SQL",
    "copy_row",
    "driver",
    "event_row",
    "fetch_one",
    "names_array",
    "psycopg_sql",
    "with_plans",
    "with_time",
]

VERSIONS_SQL = (
    "SELECT coalesce(jsonb_object_agg(stream, version), '{}'::jsonb)::text FROM ("
    " SELECT stream, max(version) AS version FROM events"
    " WHERE stream = ANY(CAST(:streams AS text[])) GROUP BY stream) s"
)
# The chain lock, and in the same round trip the streams' versions and the head as this statement's snapshot
# saw them. If the lock had to wait for another append, the locked row is that append's newer head while the
# subqueries still read the snapshot taken before the wait: the two seqs then differ and the versions are
# re-read (VERSIONS_SQL: a new statement, a new snapshot). Equal seqs mean nothing committed in between. The
# head's time comes from the locked row itself: the next event's time is never earlier.
LOCK_HEAD_SQL = (
    "SELECT h.seq, h.event_id, h.recorded_at, (SELECT s.seq FROM log_head s WHERE s.id = 1), "
    f"({VERSIONS_SQL}) FROM log_head h WHERE h.id = 1 FOR UPDATE OF h"
)
# Every event column an append writes: the time is chosen by the appender (it is under the content address).
EVENT_COLUMNS = "seq, stream, version, type, data, principal, scope, recorded_at, event_id, prev, hash_version"
_VALUES = (
    ":seq, :stream, :version, :type, CAST(:data AS jsonb), :principal, :scope, :recorded_at, :event_id, :prev, "
    ":hash_version"
)
# One statement: the event row, the new chain head, every inline projector's checkpoint and (when they can
# plan it) every inline projector's own statements, as further data-modifying CTEs ({projections}).
INSERT_ONE = (
    f"WITH e AS (INSERT INTO events ({EVENT_COLUMNS}) VALUES ({_VALUES}) RETURNING recorded_at), "
    "h AS (UPDATE log_head SET seq = :seq, event_id = :event_id, recorded_at = :recorded_at WHERE id = 1), "
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
    "WITH h AS (UPDATE log_head SET seq = :seq, event_id = :event_id, recorded_at = :recorded_at "
    " WHERE id = 1 AND seq = :after AND event_id IS NOT DISTINCT FROM :prev{stream_check} RETURNING seq), "
    f"e AS (INSERT INTO events ({EVENT_COLUMNS}) SELECT {_VALUES.replace(':seq', 'h.seq', 1)} FROM h "
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
INSERT_CAS_EXPECTED = _INSERT_CAS.replace("{stream_check}", _STREAM_CHECK)
INSERT_CAS_HINTED = _INSERT_CAS.replace("{stream_check}", "")
# A whole batch stamped ahead of time (service.store.bulk_append) is written in one transaction: this
# compare-and-set on the head first (it takes the chain lock only if nothing was appended since the batch was
# stamped: every append moves the head; UNIQUE(stream, version) backs this up), then COPY of the events, then the
# inline projectors' statements reading the batch back from the log, checkpoints included.
CLAIM_HEAD = (
    "UPDATE log_head SET seq = %(seq)s, event_id = %(event_id)s, recorded_at = %(recorded_at)s "
    "WHERE id = 1 AND seq = %(after)s AND event_id IS NOT DISTINCT FROM %(prev)s RETURNING seq"
)
RECORDED = "SELECT array_agg(recorded_at ORDER BY seq) FROM events WHERE seq > %(after)s AND seq <= %(seq)s"
COPY_EVENTS = f"COPY events ({EVENT_COLUMNS}) FROM STDIN"
# A short multi-event batch, row by row (driver placeholders).
INSERT_ROWS = (
    f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (%(seq)s, %(stream)s, %(version)s, %(type)s, %(data)s::jsonb, "
    "%(principal)s, %(scope)s, %(recorded_at)s, %(event_id)s, %(prev)s, %(hash_version)s)"
)
RACED = "SB409"  # substrate_appended's SQLSTATE
# What a compare-and-set statement returns, read back from the log: found only if its last event landed.
LANDED_SQL = (
    "SELECT max(recorded_at), array_agg(recorded_at ORDER BY seq) FROM events "
    "WHERE seq > :after AND seq <= :seq AND EXISTS (SELECT 1 FROM events WHERE seq = :seq AND event_id = :event_id)"
)
SET_HEAD = text("UPDATE log_head SET seq = :seq, event_id = :event_id, recorded_at = :recorded_at WHERE id = 1")
NUL_REFUSED = "text values cannot contain NUL (\\x00) characters: PostgreSQL cannot store them"


@functools.cache
def names_array() -> str:
    """The inline projectors' names as one text[] literal (a str binds faster than a list)."""
    return "{" + ",".join(projector_names()) + "}"


def with_plans(sql: str, plans: Sequence[Statement], params: dict[str, Any]) -> str:
    """``sql`` with each planned projector statement as a further CTE; their parameters go into ``params``."""
    return sql.format(projections=plans_as_ctes(plans, params))


def driver(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under a SQLAlchemy one (its transaction included)."""
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw  # type: ignore[no-any-return]


def fetch_one(raw: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
    """Run one statement of the append path on a psycopg connection (SQLAlchemy's own under a transaction); its row.

    The statements every append runs skip SQLAlchemy's per-execute work (about 50 us each); the NUL guard
    that SQLAlchemy executions get (service.store.database) is applied here too.
    """
    if any("\x00" in v if type(v) is str else has_nul(v) for v in params.values()):
        raise InvalidArgument(NUL_REFUSED)
    with raw.cursor() as cur:
        cur.execute(psycopg_sql(sql), params)
        row = cur.fetchone()
    assert row is not None
    return tuple(row)


@functools.lru_cache(maxsize=256)
def psycopg_sql(sql: str) -> str:
    """SQLAlchemy-style ``:name`` parameters as psycopg's ``%(name)s`` (a handful of shapes, converted once)."""
    return BIND.sub(lambda m: f"%({m.group(1)})s", sql.replace("%", "%%"))


def event_row(s: StoredEvent) -> dict[str, Any]:
    """One event's column values (EVENT_COLUMNS), data serialized for a jsonb parameter."""
    return {
        "seq": s.seq,
        "stream": s.stream,
        "version": s.version,
        "type": s.type,
        "data": dumps(s.data),
        "principal": s.principal,
        "scope": s.scope,
        "recorded_at": s.recorded_at,
        "event_id": s.event_id,
        "prev": s.prev,
        "hash_version": s.hash_version,
    }


def copy_row(s: StoredEvent) -> tuple[Any, ...]:
    """One event as a COPY row, in EVENT_COLUMNS order."""
    return (
        s.seq,
        s.stream,
        s.version,
        s.type,
        dumps(s.data),
        s.principal,
        s.scope,
        s.recorded_at,
        s.event_id,
        s.prev,
        s.hash_version,
    )


def with_time(s: StoredEvent, recorded: Any) -> StoredEvent:
    """``s`` with the time the database returned for it (the same instant; the zone may differ)."""
    return StoredEvent(
        s.seq, s.stream, s.version, s.type, s.data, s.principal, s.scope, recorded, s.event_id, s.prev, s.hash_version
    )
