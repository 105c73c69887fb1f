"""What the append path keeps per engine: hints of the log's head and stream versions, and connections kept
checked out in autocommit for the one-statement appends."""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import event
from sqlalchemy.engine import Engine

from service.domain.events import StoredEvent

__all__ = ["Head", "Hints", "KeptConnections", "hints_for", "kept_for"]

# The log head: (seq, event_id, recorded_at) of the last event, (0, None, None) for an empty log.
Head = tuple[int, str | None, datetime | None]


class Hints:
    """What this process last saw of the log: the head and recent stream versions (guesses for the CAS append)."""

    __slots__ = ("head", "versions")
    _MAX_STREAMS = 50_000

    def __init__(self) -> None:
        self.head: Head | None = None
        self.versions: dict[str, int] = {}

    def saw(self, stored: Sequence[StoredEvent]) -> None:
        """Remember the versions and the head ``stored`` (just committed) left."""
        if len(self.versions) > self._MAX_STREAMS:
            self.versions.clear()
        for s in stored:
            self.versions[s.stream] = s.version
        last = stored[-1]
        if self.head is None or last.seq > self.head[0]:
            self.head = (last.seq, last.event_id, last.recorded_at)


class KeptConnections:
    """Pooled connections kept checked out in autocommit for the one-statement appends (per engine).

    A pool checkout, its reset on return and the autocommit switches cost ~35 us, as much as a tenth of a put().
    At most ``_MAX`` are kept (the rest go back to the pool); the engine's dispose() closes them. A forked child
    never uses (nor closes) its parent's: their sockets are the parent's sessions.
    """

    _MAX = 2

    def __init__(self, engine: Engine) -> None:
        self._engine = weakref.ref(engine)  # _KEPT's values must not keep its keys alive
        self._pid = os.getpid()
        self.free: list[Any] = []
        event.listen(engine, "engine_disposed", self._drop)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A kept autocommit connection for the block (a broken one is invalidated, never reused)."""
        if self._pid != os.getpid():
            self._forget()
        try:
            fairy = self.free.pop()  # list.pop/append are atomic: no lock needed between threads
        except IndexError:
            engine = self._engine()
            assert engine is not None  # only an EventStore holding the engine calls this
            fairy = engine.raw_connection()
            fairy.driver_connection.autocommit = True  # type: ignore[union-attr]
        try:
            yield fairy.driver_connection  # type: ignore[misc]
        except psycopg.OperationalError:
            fairy.invalidate()  # a broken connection must not be reused
            raise
        except BaseException:
            self._give_back(fairy)
            raise
        self._give_back(fairy)

    def _give_back(self, fairy: Any) -> None:
        raw = fairy.driver_connection
        if raw is None or raw.closed or len(self.free) >= self._MAX:
            _release(fairy)
        else:
            self.free.append(fairy)

    def _drop(self, _engine: Engine) -> None:
        if self._pid != os.getpid():
            self._forget()
            return
        while self.free:
            fairy = self.free.pop()
            fairy.invalidate()  # closes the driver connection now (the pool it came from is gone)

    def _forget(self) -> None:
        """In a forked child: set the parent's connections aside, never used, closed nor collected (closing, or the
        driver's finalizer, would end the parent's sessions on the shared sockets)."""
        _INHERITED.extend(self.free)
        self.free = []
        self._pid = os.getpid()


def _release(fairy: Any) -> None:
    """Return a kept connection to the pool, out of autocommit as the pool's other users expect."""
    raw = fairy.driver_connection
    if raw is not None and not raw.closed:
        raw.autocommit = False
    fairy.close()


# One of each per engine (per database), shared by every handle on it; stale hints only cost a retry.
_HINTS: weakref.WeakKeyDictionary[Engine, Hints] = weakref.WeakKeyDictionary()
_KEPT: weakref.WeakKeyDictionary[Engine, KeptConnections] = weakref.WeakKeyDictionary()
_INHERITED: list[Any] = []


def hints_for(engine: Engine) -> Hints:
    """The hints every handle on ``engine`` shares."""
    hints = _HINTS.get(engine)
    if hints is None:
        hints = _HINTS[engine] = Hints()
    return hints


def kept_for(engine: Engine) -> KeptConnections:
    """The kept connections every handle on ``engine`` shares."""
    kept = _KEPT.get(engine)
    if kept is None:
        kept = _KEPT[engine] = KeptConnections(engine)
    return kept
