"""Table-level work of a rebuild: emptying read models, locking them all at once, deferring their indexes."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from projections.registry import deferrable_tables, lazy_projectors

__all__ = ["clear_tables", "indexes_deferred", "is_empty", "lock_all", "lock_now"]

_LOCK_NOT_AVAILABLE = "55P03"
# The non-unique indexes of the given tables (those a constraint owns stay), each with the statement that makes it.
_SECONDARY = text(
    "SELECT x.indexrelid::regclass::text, pg_get_indexdef(x.indexrelid) FROM pg_index x "
    "WHERE x.indrelid = ANY(CAST(:tables AS regclass[])) AND NOT x.indisunique "
    "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid) ORDER BY 1"
)
# Their primary keys and unique constraints, each with its definition.
_KEYS = text(
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE conrelid = ANY(CAST(:tables AS regclass[])) AND contype IN ('p', 'u') ORDER BY 1, 2"
)


def clear_tables(conn: Connection, tables: Sequence[str]) -> None:
    """Empty ``tables``: TRUNCATE the ones a rebuild fills in bulk (it holds them exclusively, so it may drop their
    indexes without waiting on a reader) and any table of 1,000 rows or more, all locked at once (``lock_all``);
    DELETE the rest, which is ~4 ms a table cheaper than a TRUNCATE (no new files), waits for no reader, and lets
    readers see their old rows until the rebuild commits."""
    bulk = set(deferrable_tables()) | {t for p in lazy_projectors() for t in p.tables}
    others = [t for t in tables if t not in bulk]
    big = (
        conn.execute(
            text(
                "SELECT "
                + ", ".join(f"(SELECT count(*) >= 1000 FROM (SELECT 1 FROM {t} LIMIT 1000) x)" for t in others)
            )
        ).one()
        if others
        else ()
    )
    small = [t for t, is_big in zip(others, big, strict=True) if not is_big]
    truncated = [t for t in tables if t not in small]
    lock_all(conn, truncated)
    conn.execute(text("TRUNCATE " + ", ".join(truncated)))
    for t in small:
        conn.execute(text(f"DELETE FROM {t}"))


def lock_all(conn: Connection, tables: Sequence[str], *, patience: float = 30.0) -> None:
    """Take every one of ``tables`` exclusively without waiting while holding some: all at once or none
    (``lock_now``), retried while readers hold one, for up to ``patience`` seconds; then waited for in turn."""
    deadline = time.monotonic() + patience
    pause = 0.01
    while time.monotonic() < deadline:
        if lock_now(conn, tables):
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
    conn.execute(text(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE"))


def lock_now(conn: Connection, tables: Sequence[str]) -> bool:
    """Take every one of ``tables`` exclusively, now or not at all (NOWAIT): whether this transaction holds them.

    Dropping an index waits for the table's readers; a reader of two of these tables holding one while waiting
    for the other would deadlock with a build that held the other and waited for the first. Taking them all at
    once, or else building with the indexes in place, never waits while holding one.
    """
    try:
        with conn.begin_nested():
            conn.execute(text(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE NOWAIT"))
    except OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
            raise
        return False
    return True


def is_empty(conn: Connection, tables: Sequence[str]) -> bool:
    return bool(
        conn.execute(text("SELECT " + " AND ".join(f"NOT EXISTS (SELECT 1 FROM {t})" for t in tables))).scalar()
    )


@contextmanager
def indexes_deferred(conn: Connection, tables: Sequence[str], *, keys: bool = False) -> Iterator[None]:
    """Drop the non-unique indexes of ``tables`` (with ``keys``, their primary keys and unique constraints too: for
    writes that need no conflict check) for the block and make them again after it, each in one sorted pass, in
    ``conn``'s transaction (which must hold the tables exclusively): a failure rolls the drops back with the rest."""
    found = conn.execute(_SECONDARY, {"tables": list(tables)}).all() if tables else []
    constraints = conn.execute(_KEYS, {"tables": list(tables)}).all() if tables and keys else []
    for name, _ in found:
        conn.execute(text(f"DROP INDEX {name}"))
    for table, name, _ in constraints:
        conn.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
    yield
    for table, name, definition in constraints:
        conn.execute(text(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'))
    for _, ddl in found:
        conn.execute(text(ddl))
