"""Catch-up, rebuild and digests: every read model is a replay of the log, provably."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from projections.bulkwork import bulk_work
from projections.jsonutil import loads
from projections.pipeline import LogReader, PlanWriter
from projections.registry import (
    apply_events,
    deferrable_tables,
    digest_queries,
    lazy_projectors,
    plan_apply,
    projector_names,
    read_model_tables,
)
from projections.tables import clear_tables, indexes_deferred, is_empty, lock_now

__all__ = [
    "RebuildReport",
    "catch_up",
    "catch_up_engine",
    "hold_catch_up_lock",
    "live_digests",
    "rebuild",
    "shadow_digests",
    "table_digests",
]

_T = TypeVar("_T")
_UNIQUE_VIOLATION = "23505"
_COLUMNS = "seq, stream, version, type, data::text, principal, scope, recorded_at, event_id, prev"
# Advisory lock namespace: one catch-up (or rebuild) of a lazy projector at a time.
_CATCH_UP_NS = 80_0239
# The most events one ``Projector.advance`` call folds (one statement; its working set grows with the stretch).
_ADVANCE_STRETCH = 100_000
# Where the inline read models stand (every inline checkpoint advances with each append, so any one of them is
# the log position these tables describe: the head live, the prefix end in a shadow schema).
_POSITIONS = text(
    "SELECT coalesce(max(seq) FILTER (WHERE name = ANY(CAST(:inline AS text[]))), 0), "
    "coalesce(max(seq) FILTER (WHERE name = :lazy), 0) FROM checkpoints"
)
_SET_CHECKPOINT = text(
    "INSERT INTO checkpoints (name, seq) VALUES (:name, :seq) ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq"
)


class _Row(NamedTuple):
    """A stored event as projectors read it (immutable; a tuple: a third of a frozen dataclass's cost to build)."""

    seq: int
    stream: str
    version: int
    type: str
    data: dict[str, Any]
    principal: str
    scope: str | None
    recorded_at: Any
    event_id: str
    prev: str | None


@dataclass
class RebuildReport:
    """What a rebuild replayed, how long each phase took, and the digest of every read-model table afterwards."""

    events: int
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    # "inline": the write-path read models; "lazy": the lazy projectors' catch-up from zero.
    phases: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "seconds": self.seconds,
            "phases": self.phases,
            "counts": self.counts,
            "digests": self.digests,
        }


def catch_up(conn: Connection, *, batch: int = 5000, private: bool = False, limit: int | None = None) -> dict[str, int]:
    """Bring every lazy projector up to the inline read models' position in ``conn``'s transaction; events applied
    (for a projector built from nothing, ``Projector.build``: the log position its tables now describe).

    Serialized per projector by an advisory lock; the checkpoint is re-read once the lock is held, so two callers
    never apply the same event twice. Appends are never blocked (no chain lock is taken). A build from nothing
    makes its tables' indexes and keys after filling them when it can lock the tables at once (``projections.tables.lock_now``).
    ``private``: the read models are this transaction's own (a shadow schema): no lock, no live catch-up waits.
    ``limit``: move a projector that folds stretches of the log (``Projector.advance``) at most this many positions
    (a caller that commits between calls makes its progress visible as it goes).
    """
    applied: dict[str, int] = {}
    inline = projector_names()
    for p in lazy_projectors():
        target, done = conn.execute(_POSITIONS, {"inline": inline, "lazy": p.name}).one()
        if done >= target:
            continue
        if not private:
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:ns, hashtext(:name))"), {"ns": _CATCH_UP_NS, "name": p.name}
            )
            target, done = conn.execute(_POSITIONS, {"inline": inline, "lazy": p.name}).one()
            if done >= target:
                continue
        if p.advance is not None:
            if limit is not None:
                target = min(target, done + limit)
            after = done
            while after < target:
                upto = min(target, after + _ADVANCE_STRETCH)
                p.advance(conn, after, upto)
                after = upto
            conn.execute(_SET_CHECKPOINT, {"name": p.name, "seq": target})
            applied[p.name] = target - done
            continue
        if done == 0 and p.build is not None and is_empty(conn, p.tables):
            with indexes_deferred(conn, p.tables if lock_now(conn, p.tables) else [], keys=True):
                built = p.build(conn, inline)
            conn.execute(_SET_CHECKPOINT, {"name": p.name, "seq": built})
            applied[p.name] = built
            continue
        n = 0
        sql = text(
            f"SELECT {_COLUMNS} FROM public.events WHERE seq > :after AND seq <= :target "
            "AND type = ANY(CAST(:types AS text[])) ORDER BY seq LIMIT :lim"
        )
        after = done
        while True:
            rows = conn.execute(sql, {"after": after, "target": target, "types": sorted(p.handles), "lim": batch}).all()
            if rows:
                p.apply(conn, [_Row(r[0], r[1], r[2], r[3], loads(r[4]), r[5], r[6], r[7], r[8], r[9]) for r in rows])
                n += len(rows)
                after = rows[-1][0]
            if len(rows) < batch:
                break
        conn.execute(_SET_CHECKPOINT, {"name": p.name, "seq": target})
        applied[p.name] = n
    return applied


def hold_catch_up_lock(conn: Connection, name: str) -> None:
    """Take (for ``conn``'s transaction) the lock a catch-up of lazy projector ``name`` holds while it writes."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:ns, hashtext(:name))"), {"ns": _CATCH_UP_NS, "name": name})


def catch_up_engine(engine: Engine) -> dict[str, int]:
    """``catch_up`` in a transaction of its own (committed before returning)."""
    with engine.begin() as conn:
        return catch_up(conn)


def table_digests(conn: Connection) -> tuple[dict[str, int], dict[str, str]]:
    """Row count and sha256 of every read-model table's rows in key order (schema from search_path; "" when empty).

    The rows are streamed (the table's COPY text, hashed as it arrives), so no table is ever held whole in memory:
    an aggregate over a table's text stops at PostgreSQL's 1 GB string limit. Lazy projectors are caught up
    first, in ``conn``'s transaction, so the digests describe complete read models.
    """
    catch_up(conn)
    raw = conn.connection.driver_connection
    assert raw is not None
    counts: dict[str, int] = {}
    digests: dict[str, str] = {}
    canonical = digest_queries()
    for table, key in read_model_tables():
        digest = hashlib.sha256()
        with raw.cursor() as cur:
            query = canonical.get(table) or f"SELECT * FROM {table} ORDER BY {key}"
            with cur.copy(f"COPY ({query}) TO STDOUT") as copy:
                for block in copy:
                    digest.update(block)
            n = cur.rowcount  # the rows COPY sent (its command tag)
        counts[table] = n
        digests[table] = digest.hexdigest() if n else ""
    return counts, digests


# The log position the inline read models describe, and the least position of the lazy ones (checkpoints).
_LIVE_POSITION = text(
    "SELECT coalesce(max(seq) FILTER (WHERE name = ANY(CAST(:inline AS text[]))), 0), "
    "coalesce(min(seq) FILTER (WHERE name = ANY(CAST(:lazy AS text[]))), 0) FROM checkpoints"
)


def live_digests(
    engine: Engine, *, attempts: int = 5, on_phase: Callable[[str], None] | None = None
) -> tuple[int, dict[str, int], dict[str, str]]:
    """The live read models' row counts and digests, all read in one snapshot, and the log position they describe:
    what a rebuild up to that position must reproduce, however many events are appended meanwhile.

    The lazy projectors catch up first (``on_phase("lazy")``); should events land before the snapshot is taken,
    they catch up again (up to ``attempts`` times; then inside the snapshot's own transaction).
    """
    lazy = [p.name for p in lazy_projectors()]
    for attempt in range(attempts):
        if on_phase is not None:
            on_phase("lazy")
        catch_up_engine(engine)
        with engine.connect() as conn:
            conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                position, lazy_at = conn.execute(_LIVE_POSITION, {"inline": projector_names(), "lazy": lazy}).one()
                if lazy and lazy_at < position and attempt < attempts - 1:
                    continue
                if on_phase is not None:
                    on_phase("digests")
                counts, digests = table_digests(conn)
                return int(position), counts, digests
    raise AssertionError("unreachable: the last attempt always digests")


def _decode(r: Any) -> _Row:
    return _Row(r[0], r[1], r[2], r[3], loads(r[4]), r[5], r[6], r[7], r[8], r[9])


def _replay(
    conn: Connection,
    until: int | None,
    progress: Callable[[int], None] | None,
    batch: int,
    *,
    lazy: bool = False,
    optimistic: bool = False,
) -> int:
    """Apply the log (up to ``until``) to the read models in ``conn``'s transaction, pipelined (projections.pipeline):
    a reader thread streams and decodes the log, this thread plans, a writer thread runs the plans on ``conn``.
    ``optimistic``: the read models started empty, so batches that only create items insert them plainly (see
    ``projections.items.all_first_states``; a row that exists anyway fails the replay, see ``_optimistically``)."""
    # The log as this transaction sees it: everything up to its head is committed, so the reader's own
    # connection sees exactly these events.
    bound = int(conn.execute(text("SELECT seq FROM public.log_head WHERE id = 1")).scalar_one())
    if until is not None:
        bound = min(bound, int(until))
    sql = f"SELECT {_COLUMNS} FROM public.events WHERE seq <= %(bound)s ORDER BY seq"
    with bulk_work():
        return _pipelined(conn, sql, bound, progress, batch, lazy, optimistic)


def _pipelined(
    conn: Connection,
    sql: str,
    bound: int,
    progress: Callable[[int], None] | None,
    batch: int,
    lazy: bool,
    optimistic: bool,
) -> int:
    total = 0
    reader = LogReader(conn.engine, sql, {"bound": bound}, batch, _decode)
    writer = PlanWriter(conn)
    try:
        for events in reader:
            statements = None if lazy else plan_apply(events, optimistic=optimistic)
            if statements is None:
                writer.drain()
                apply_events(conn, events, lazy=lazy)
            else:
                writer.submit(statements)
            total += len(events)
            if progress is not None:
                progress(total)
        writer.drain()
    finally:
        writer.close()
        reader.close()
    return total


def _optimistically(run: Callable[[bool], _T]) -> _T:
    """``run(True)``: a replay into empty read models that inserts plainly what it believes new; should a row
    exist after all (a unique violation: the whole transaction rolled back), ``run(False)``, with upserts."""
    try:
        return run(True)
    except IntegrityError as exc:
        if getattr(exc.orig, "sqlstate", None) != _UNIQUE_VIOLATION:
            raise
        return run(False)


def rebuild(
    engine: Engine,
    *,
    until: int | None = None,
    progress: Callable[[int], None] | None = None,
    batch: int = 2000,
    on_phase: Callable[[str], None] | None = None,
) -> RebuildReport:
    """Truncate every read model and replay the log (up to ``until``) in one transaction.

    The inline read models are replayed first (``progress`` gets the events replayed so far); the lazy projectors
    then catch up from zero (timed apart in ``phases``), so the report's digests cover every read model.
    ``on_phase`` is told when each later phase starts ("lazy", "digests"): they report no progress of their own.
    """
    return _optimistically(lambda optimistic: _rebuild(engine, until, progress, batch, optimistic, on_phase))


def _rebuild(
    engine: Engine,
    until: int | None,
    progress: Callable[[int], None] | None,
    batch: int,
    optimistic: bool,
    on_phase: Callable[[str], None] | None,
) -> RebuildReport:
    t0 = time.perf_counter()
    phases: dict[str, float] = {}
    with engine.begin() as conn:
        # Appenders take this lock first too, so no event can land between truncate and replay's end.
        conn.execute(text("SELECT 1 FROM log_head WHERE id = 1 FOR UPDATE"))
        for p in lazy_projectors():  # no catch-up may run on the tables being truncated
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:ns, hashtext(:name))"), {"ns": _CATCH_UP_NS, "name": p.name}
            )
        clear_tables(conn, [t for t, _ in read_model_tables()])
        with indexes_deferred(conn, deferrable_tables()):  # (see Projector.defer_indexes)
            n = _replay(conn, until, progress, batch, optimistic=optimistic)
        phases["inline"] = time.perf_counter() - t0
        if on_phase is not None:
            on_phase("lazy")
        t1 = time.perf_counter()
        catch_up(conn, batch=max(batch, 20_000))
        phases["lazy"] = time.perf_counter() - t1
        if on_phase is not None:
            on_phase("digests")
        counts, digests = table_digests(conn)
    with engine.connect() as c:  # every read model was rewritten: its statistics describe the old tables
        c.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            "ANALYZE " + ", ".join(t for t, _ in read_model_tables())
        )
    return RebuildReport(n, time.perf_counter() - t0, counts, digests, phases)


def _copy_table(conn: Connection, schema: str, table: str) -> None:
    """An empty copy of ``public.table`` in ``schema``, partitioned the same way when the original is."""
    partkey = conn.execute(
        text(
            "SELECT pg_get_partkeydef(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relname = :t AND c.relkind = 'p'"
        ),
        {"t": table},
    ).scalar()
    suffix = f" PARTITION BY {partkey}" if partkey else ""
    conn.execute(text(f"CREATE TABLE {schema}.{table} (LIKE public.{table} INCLUDING ALL){suffix}"))


def shadow_digests(
    engine: Engine,
    *,
    until: int | None = None,
    progress: Callable[[int], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> tuple[int, dict[str, int], dict[str, str]]:
    """Rebuild every read model into a throw-away schema as ``rebuild`` does the live ones (the log replayed into
    the inline read models, then the lazy ones caught up from nothing) and return its digests.

    The live tables are untouched; the schema is dropped in the same transaction (a failure rolls it back).
    ``progress`` gets the events replayed so far; ``on_phase`` is told of the later phases ("lazy", "digests").
    """
    schema = "shadow_" + uuid.uuid4().hex[:12]

    def run(optimistic: bool) -> tuple[int, dict[str, int], dict[str, str]]:
        with engine.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
            for table, _ in read_model_tables():
                _copy_table(conn, schema, table)
            conn.execute(text(f"SET LOCAL search_path TO {schema}, public"))
            with indexes_deferred(conn, deferrable_tables()):
                n = _replay(conn, until, progress, 2000, optimistic=optimistic)
            if on_phase is not None:
                on_phase("lazy")
            catch_up(conn, batch=20_000, private=True)
            if on_phase is not None:
                on_phase("digests")
            counts, digests = table_digests(conn)
            conn.execute(text("SET LOCAL search_path TO public"))
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        return n, counts, digests

    return _optimistically(run)
