"""A lease on a job that one process at a time must do: a PostgreSQL session advisory lock on a connection of its own.

Several ``substrate serve`` processes (``--workers``, or several machines) share one database; each asks for the
lease now and then, and the one that holds it does the job. The lock belongs to the holder's session, so when the
holder exits, dies or loses its connection, PostgreSQL releases it and the next process to ask takes it over.
Advisory locks are per database: stores in other databases of the same server do not contend.
"""

from __future__ import annotations

import logging
import os

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

__all__ = ["Lease"]

_log = logging.getLogger("substrate.lease")


class Lease:
    """A non-blocking, session-held advisory lock ``key`` on ``engine``'s database (see module doc)."""

    def __init__(self, engine: Engine, key: int, *, holder: str = "substrate") -> None:
        # A connection of its own, never a pooled one: the pool would hand the lock's session to other work. Its
        # application_name says which process holds the lease (pg_stat_activity joined with pg_locks).
        self._engine = sa.create_engine(
            engine.url,
            poolclass=sa.pool.NullPool,
            isolation_level="AUTOCOMMIT",
            connect_args={"application_name": f"{holder} pid {os.getpid()}"[:63]},
        )
        self.key = key
        self._conn: Connection | None = None
        self._holding = False

    def held(self) -> bool:
        """Whether this process holds the lease now, taking it when it is free (never waits)."""
        try:
            if self._conn is None:
                self._conn = self._engine.connect()
            if self._holding:
                self._conn.exec_driver_sql("SELECT 1")  # the session lives: the lock is still ours
            else:
                self._holding = bool(
                    self._conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar()
                )
        except sa.exc.DBAPIError as exc:
            if self._holding:
                _log.warning("lost the lease %d with its connection: %s", self.key, exc.orig)
            else:
                _log.warning("could not ask for the lease %d: %s", self.key, exc.orig)
            self._drop()
        return self._holding

    def release(self) -> None:
        """Give the lease up (closing the session releases the lock) and forget the connection."""
        self._drop()
        self._engine.dispose()

    def _drop(self) -> None:
        conn, self._conn, self._holding = self._conn, None, False
        if conn is not None:
            try:
                conn.close()
            except sa.exc.DBAPIError:
                pass  # a broken connection: its session, and the lock, are gone already
