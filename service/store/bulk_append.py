"""Pipelined bulk appends: one writer thread writes batch k while the caller prepares and stamps batch k+1.

The caller's thread numbers and addresses each batch as if it followed the batch before it (``EventStore.stamp``,
from the head this engine last saw), then hands it to the writer, which writes it in one transaction that first
compare-and-sets the log head (``EventStore.insert_stamped``). The database works on one batch while Python works
on the next. When another writer got in between, the transaction writes nothing, and the batch (and the ones after
it, for a while) are appended the ordinary way instead, under the chain lock, in order.

Batches commit one by one, in submission order; ``on_written`` runs on the caller's thread for each, with the
stored events, once it is committed. An error in a batch stops the appender and is raised to the caller; batches
committed before it stay committed, none after it is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from service.domain.events import NewEvent, StoredEvent
from service.store.eventstore import BatchWrite, EventStore, Head

__all__ = ["BulkAppender"]


@dataclass
class _Batch:
    events: Sequence[NewEvent]
    context: Any
    versions: dict[str, int] | None = None
    stamped: list[StoredEvent] | None = None
    write: BatchWrite | None = None


class BulkAppender:
    """Appends batches of events in order, overlapping the database's work with the caller's (see module doc)."""

    def __init__(
        self,
        store: EventStore,
        principal: str,
        on_written: Callable[[Sequence[StoredEvent], Any], None],
        *,
        check: Callable[[Sequence[NewEvent]], list[NewEvent]] | None = None,
    ) -> None:
        self.store, self.principal, self.on_written = store, principal, on_written
        # The write door's checks (service.substrate.Substrate.bulk_appender): each batch passes them first.
        self.check = check
        self._pool: ThreadPoolExecutor | None = None
        self._inflight: tuple[_Batch, Future[list[StoredEvent] | None]] | None = None
        # Where the next batch is stamped from, and the versions the batch in flight gives its streams.
        self._head: Head | None = None
        self._pending_versions: dict[str, int] = {}
        # After a batch lost its race, the next ones go straight to the locked path (doubling, up to 64 batches):
        # under a steady stream of other writes, stamping ahead would only be done twice and thrown away.
        self._direct, self._backoff = 0, 0

    def submit(
        self, events: Sequence[NewEvent], context: Any = None, *, versions: dict[str, int] | None = None
    ) -> None:
        """Check ``events`` (the door's checks, when given), stamp them (while the previous batch is being written),
        then hand them to the writer.

        ``versions``: the committed versions of the events' streams, when the caller has just read them anyway.
        """
        if self.check is not None and events:
            events = self.check(events)
        if not events:
            return
        batch = _Batch(events, context, versions)
        fast = self._direct == 0 and all(e.expected_version is None for e in events)
        if fast:
            self._stamp(batch)  # while the batch in flight is being written
        if self._settle():
            fast = False  # that batch lost its race and went through the lock: this one does too
        if not fast or batch.write is None:
            self._direct = max(0, self._direct - 1)
            self._append_now(batch)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bulk-append")
        assert batch.stamped is not None  # stamped along with its write
        self._inflight = (batch, self._pool.submit(self.store.insert_stamped, batch.stamped, batch.write))

    def finish(self) -> None:
        """Wait until every submitted batch is committed (raising the first error) and stop the writer."""
        try:
            self._settle()
        finally:
            self._stop()

    def close(self) -> None:
        """Finish the batch in flight (the caller is unwinding from an error of its own: a second one is dropped)."""
        try:
            self._settle()
        except Exception:  # noqa: BLE001 - the caller's error is the one that propagates
            pass
        finally:
            self._stop()

    # ------------------------------------------------------------------ internals
    def _stamp(self, batch: _Batch) -> None:
        head = self._head if self._head is not None else self.store.head_hint()
        streams = list(dict.fromkeys(e.stream for e in batch.events))
        versions = dict(batch.versions) if batch.versions is not None else self.store.stream_versions(streams)
        # The batch in flight is not committed yet: its versions come from its stamps.
        versions.update({s: self._pending_versions[s] for s in streams if s in self._pending_versions})
        batch.stamped = self.store.stamp(batch.events, self.principal, head, versions)
        # Plans and serialization happen here too, so that the writer thread only waits on the database.
        batch.write = self.store.batch_statement(batch.stamped, head)
        last = batch.stamped[-1]
        self._head = (last.seq, last.event_id, last.recorded_at)
        self._pending_versions = {s.stream: s.version for s in batch.stamped}

    def _settle(self) -> bool:
        """Wait for the batch in flight; True when it had to be appended the ordinary way (its head had moved)."""
        if self._inflight is None:
            return False
        batch, future = self._inflight
        self._inflight = None
        stored = future.result()  # re-raises the writer's error here, on the caller's thread
        moved = stored is None
        if stored is None:
            self._backoff = min(64, max(1, self._backoff * 2))
            self._direct = self._backoff
            stored = self._append_now(batch)
        else:
            self._backoff = 0
            self.on_written(stored, batch.context)
        return moved

    def _append_now(self, batch: _Batch) -> list[StoredEvent]:
        stored = self.store.append(batch.events, self.principal)
        self._head = (stored[-1].seq, stored[-1].event_id, stored[-1].recorded_at)
        self._pending_versions = {}
        self.on_written(stored, batch.context)
        return stored

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
