"""A replay as three overlapping stages: read and decode the log, plan the projectors, run the plans.

A reader thread streams the log on a connection of its own (a server-side cursor) and decodes each batch; the
caller's thread plans batch k+1 (pure Python over the events) while a writer thread runs batch k's statements on
the replaying transaction's connection. A batch some projector cannot plan (it reads its own tables while it
applies) waits for the writer to finish and is applied directly, so statements always run in log order.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy.engine import Connection, Engine

from projections.projector import Statement, run_plan

__all__ = ["LogReader", "PlanWriter"]

_END = object()


class LogReader:
    """The events ``after < seq <= bound`` in seq order, in decoded batches, read ahead by a thread of its own.

    Every event up to ``bound`` is committed (appends commit in seq order), so this connection's snapshot sees
    exactly the events the replaying transaction saw.
    """

    def __init__(self, engine: Engine, sql: str, params: dict[str, Any], batch: int, decode: Any) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(engine, sql, params, batch, decode), name="substrate-replay-reader", daemon=True
        )
        self._thread.start()

    def __iter__(self) -> Iterator[list[Any]]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop reading (the thread drops what it still has) and wait for the thread."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, engine: Engine, sql: str, params: dict[str, Any], batch: int, decode: Any) -> None:
        try:
            fairy = engine.raw_connection()
            try:
                raw = fairy.driver_connection
                assert raw is not None
                with raw.transaction(), raw.cursor(name="replay_reader") as cur:
                    cur.itersize = batch
                    cur.execute(sql, params)
                    while not self._stop.is_set():
                        rows = cur.fetchmany(batch)
                        if not rows or not self._put([decode(r) for r in rows]):
                            break
            finally:
                fairy.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            self._put(exc)
            return
        self._put(_END)


class PlanWriter:
    """Runs planned statements on ``conn`` in a thread of its own, in submission order, at most two batches ahead.

    The caller must not use ``conn`` until ``drain()`` returns; the first failure is raised by the next
    ``submit`` or ``drain`` (later batches are not run).
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="substrate-replay-writer")
        self._pending: list[Future[None]] = []
        self._failed = False

    def submit(self, statements: list[Statement]) -> None:
        while len(self._pending) >= 2:
            self._pending.pop(0).result()
        self._pending.append(self._pool.submit(self._run, statements))

    def drain(self) -> None:
        while self._pending:
            self._pending.pop(0).result()

    def close(self) -> None:
        """Wait for (or skip) what is queued and stop the thread; does not raise."""
        self._failed = True  # nothing queued may start now
        self._pool.shutdown(wait=True)
        self._pending.clear()

    def _run(self, statements: list[Statement]) -> None:
        if self._failed:
            return
        try:
            run_plan(self._conn, statements)
        except BaseException:
            self._failed = True
            raise
