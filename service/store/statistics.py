"""Planner statistics after bulk writes: ANALYZE the tables a bulk path filled, so a fresh store plans as an old one.

Autovacuum analyzes a table only after a minute or so and once 10% of it changed; until then the planner sees an
empty (or much smaller) table and picks plans for one: measured, one ``VACUUM ANALYZE`` after a bulk ingest took
the HTTP benchmark from ~100 to 150-183 ops/s. ANALYZE samples a bounded number of rows (a few hundred ms on a
large table) and takes no lock that reads or writes wait on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Engine

from projections.registry import PROJECTORS

__all__ = ["MIN_ROWS", "WRITE_PATH_TABLES", "refresh_statistics"]

_log = logging.getLogger("substrate.statistics")

# The tables an append fills: the log and the read models projected inline (not the lazy search tables).
WRITE_PATH_TABLES: tuple[str, ...] = ("events", *(t for p in PROJECTORS if not p.lazy for t in p.tables))
MIN_ROWS = 500  # below this a bulk call leaves the statistics to autovacuum
_SHARE = 0.1  # ... and when the rows written are less than this share of the table's last known size
# The tables whose statistics are missing or older than the rows just written would make them (reltuples < 0:
# never analyzed). to_regclass resolves each name through the search path, as the statements that use it do.
_STALE = text(
    "SELECT c.oid::regclass::text FROM unnest(CAST(:tables AS text[])) AS t(name) "
    "JOIN pg_class c ON c.oid = to_regclass(t.name) WHERE c.reltuples < 0 OR :rows >= :share * c.reltuples"
)


def refresh_statistics(engine: Engine, rows: int, tables: Sequence[str] = WRITE_PATH_TABLES) -> list[str]:
    """ANALYZE those of ``tables`` that ``rows`` new rows make stale (see module doc); the tables analyzed."""
    if rows < MIN_ROWS:
        return []
    with engine.connect() as c:
        c.execution_options(isolation_level="AUTOCOMMIT")
        stale = [r[0] for r in c.execute(_STALE, {"tables": list(tables), "rows": rows, "share": _SHARE})]
        if stale:
            c.exec_driver_sql("ANALYZE " + ", ".join(stale))  # names from pg_class, quoted by regclass::text
    _log.debug("analyzed %s after %d rows", stale, rows)
    return stale
