"""Read replicas: a PostgreSQL hot standby that serves the reads, and how a handle reads its own writes there.

Reads never write, so they can run on a streaming replica of the primary (``SUBSTRATE_READ_URL``); writes go to
the primary. A handle that has written reads the replica once the replica holds the handle's last write (its log
position in ``log_head``, which the write commits with the event), waiting at most ``WAIT_SECONDS``; otherwise
it reads the primary. A read that the replica cannot serve (unreachable, a query cancelled by WAL replay, a
statement that would write) is run again on the primary.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Engine

__all__ = ["READ_URL_ENV", "WAIT_SECONDS", "Replica", "replica_failed"]

_log = logging.getLogger("substrate.replica")

READ_URL_ENV = "SUBSTRATE_READ_URL"
WAIT_SECONDS = 1.0  # measured replay lag on one machine: 2-10 ms; beyond a second the primary answers sooner
_HEAD = sa.text("SELECT seq FROM log_head WHERE id = 1")
# What makes a read worth running again on the primary: the replica refused a write (a read path that still
# writes), or cancelled the query because WAL replay needed its rows; a lost connection is an OperationalError.
_RETRY_STATES = {"25006", "40001"}
_T = TypeVar("_T")


def replica_failed(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a read on a replica, means the primary should answer the read instead."""
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated or isinstance(exc, sa.exc.OperationalError):
            return True
        exc = exc.orig if exc.orig is not None else exc
    if isinstance(exc, psycopg.OperationalError):
        return True
    return isinstance(exc, psycopg.Error) and exc.sqlstate in _RETRY_STATES


class Replica:
    """A hot standby's engine, and how far it has replayed the log (polled, remembered)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._polls = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._seen = 0  # the highest log position seen on the replica: it only grows
        self._late = 0  # the highest position waited for in vain: later reads of it do not wait again
        self._lock = threading.Lock()

    def holds(self, position: int, *, wait: float | None = None) -> bool:
        """Whether the replica has replayed log position ``position``, polling it for up to ``wait`` seconds (once
        per position: after one wait in vain, a read of the same position checks without waiting)."""
        if position <= self._seen:
            return True
        wait = WAIT_SECONDS if wait is None else wait
        deadline = time.monotonic() + (0.0 if position <= self._late else wait)
        pause = 0.001
        while True:
            try:
                with self._polls.connect() as c:
                    seq = int(c.execute(_HEAD).scalar_one())
            except sa.exc.DBAPIError as exc:
                if not replica_failed(exc):
                    raise
                _log.warning("read replica unreachable, reading the primary: %s", exc.orig)
                return False
            with self._lock:
                self._seen = max(self._seen, seq)
            left = deadline - time.monotonic()
            if seq >= position:
                return True
            if left <= 0:
                with self._lock:
                    self._late = max(self._late, position)
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.02)

    def run(self, read: Callable[[Engine], _T], primary: Engine) -> _T:
        """``read(replica)``, or ``read(primary)`` when the replica cannot serve it (see replica_failed)."""
        try:
            return read(self.engine)
        except (sa.exc.DBAPIError, psycopg.Error) as exc:
            if not replica_failed(exc):
                raise
            _log.info("read replica could not serve a read (%s); reading the primary", exc)
        return read(primary)

    def close(self) -> None:
        self.engine.dispose()
