"""What a store holds and what it costs on disk: events, items per scope, table and index sizes, the WAL.

Read-only queries over the catalog and the read models, for ``substrate stats``: an operator sees where the
bytes are (the log, the search postings, the write-ahead log) and what would give them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

__all__ = ["Footprint", "TableSize", "footprint"]

# Every table of the public schema, largest first: heap (with its TOAST), indexes, and dead rows that a VACUUM
# would make reusable.
_TABLES = text(
    "SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid), c.reltuples::bigint, "
    "coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0), s.last_vacuum, s.last_autovacuum "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm') "
    "ORDER BY pg_total_relation_size(c.oid) DESC, c.relname"
)
_COUNTS = text(
    "SELECT (SELECT coalesce(max(seq), 0) FROM events), pg_database_size(current_database()), "
    "current_setting('max_wal_size'), current_setting('min_wal_size'), current_setting('wal_level'), "
    "current_setting('checkpoint_timeout')"
)
_SCOPES = text("SELECT scope, kind, count(*) FROM items GROUP BY scope, kind ORDER BY scope, kind")
# The WAL directory needs pg_monitor (or a superuser): the embedded server's user has it, a URL's may not.
_WAL = text("SELECT coalesce(sum(size), 0), count(*) FROM pg_ls_waldir()")
# A replication slot keeps every WAL segment its consumer has not confirmed: a forgotten one grows without bound.
_SLOTS = text(
    "SELECT slot_name, active, "
    "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint FROM pg_replication_slots"
)


@dataclass(frozen=True)
class TableSize:
    """One table: its bytes (heap and TOAST), its indexes' bytes, its rows and dead rows (the statistics'
    estimates: exact after an ANALYZE, close otherwise; counting every row of a large table is not a stat)."""

    name: str
    table_bytes: int
    index_bytes: int
    rows: int
    dead_rows: int
    vacuumed: str | None

    @property
    def total_bytes(self) -> int:
        return self.table_bytes + self.index_bytes

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "table_bytes": self.table_bytes,
            "index_bytes": self.index_bytes,
            "total_bytes": self.total_bytes,
            "rows": self.rows,
            "dead_rows": self.dead_rows,
            "last_vacuum": self.vacuumed,
        }


@dataclass(frozen=True)
class Footprint:
    """A store's counts and sizes, and the WAL settings that bound its write-ahead log."""

    events: int
    database_bytes: int
    items: dict[str, dict[str, int]]  # scope -> kind -> items
    tables: list[TableSize]
    wal_bytes: int | None  # None: this connection may not list the WAL directory
    wal_files: int | None
    settings: dict[str, str]
    slots: list[dict[str, Any]] = field(default_factory=list)

    def advice(self) -> list[str]:
        """What an operator could do about where the bytes are (empty when nothing stands out)."""
        out = []
        for t in self.tables:
            if t.dead_rows > max(10_000, t.rows // 5):
                out.append(
                    f"{t.name}: {t.dead_rows:,} dead rows ({t.dead_rows / max(t.rows + t.dead_rows, 1):.0%}); "
                    f"VACUUM {t.name} makes their space reusable, VACUUM FULL {t.name} gives it back (locks it)"
                )
        for slot in self.slots:
            if not slot["active"] and slot["retained_bytes"] > 0:
                out.append(
                    f"replication slot {slot['name']} is inactive and holds {slot['retained_bytes']:,} bytes of WAL; "
                    f"drop it with SELECT pg_drop_replication_slot('{slot['name']}') if its standby is gone"
                )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "database_bytes": self.database_bytes,
            "items": self.items,
            "tables": [t.as_dict() for t in self.tables],
            "wal": {"bytes": self.wal_bytes, "files": self.wal_files, **self.settings},
            "replication_slots": self.slots,
            "advice": self.advice(),
        }


def footprint(engine: Engine) -> Footprint:
    """Measure the store behind ``engine`` (read-only: catalog queries and one count per scope and kind)."""
    with engine.connect() as conn:
        events, db_bytes, max_wal, min_wal, wal_level, checkpoint = conn.execute(_COUNTS).one()
        items: dict[str, dict[str, int]] = {}
        for scope, kind, n in conn.execute(_SCOPES):
            items.setdefault(scope, {})[kind] = int(n)
        tables = [
            TableSize(
                name=r[0],
                table_bytes=int(r[1]),
                index_bytes=int(r[2]),
                rows=int(max(r[3], r[4])),
                dead_rows=int(r[5]),
                vacuumed=_latest(r[6], r[7]),
            )
            for r in conn.execute(_TABLES)
        ]
        wal_bytes, wal_files, slots = _wal(conn)
    return Footprint(
        events=int(events),
        database_bytes=int(db_bytes),
        items=items,
        tables=tables,
        wal_bytes=wal_bytes,
        wal_files=wal_files,
        settings={
            "max_wal_size": max_wal,
            "min_wal_size": min_wal,
            "wal_level": wal_level,
            "checkpoint_timeout": checkpoint,
        },
        slots=slots,
    )


def _wal(conn: Any) -> tuple[int | None, int | None, list[dict[str, Any]]]:
    try:
        with conn.begin_nested():
            size, files = conn.execute(_WAL).one()
            slots = [{"name": r[0], "active": bool(r[1]), "retained_bytes": int(r[2])} for r in conn.execute(_SLOTS)]
        return int(size), int(files), slots
    except DBAPIError:  # no pg_monitor: sizes of the database still stand
        return None, None, []


def _latest(*times: Any) -> str | None:
    known = [t for t in times if t is not None]
    return max(known).isoformat(timespec="seconds") if known else None
