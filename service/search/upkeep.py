"""The background runner: keeps the lazy read models (search postings, embedders) current between requests.

Searches catch the lazy projector up and refit stale domains themselves, so nothing depends on this thread; it
only moves that work off the first request after a burst of writes (a bulk ingest, say). ``substrate serve``
runs one.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.engine import Engine

from projections.runner import catch_up_engine
from service.search.ranking import reindex
from service.store.eventstore import EventStore

__all__ = ["BackgroundRunner"]

log = logging.getLogger("substrate.background")


class BackgroundRunner:
    """A daemon thread that, once writes pause for ``interval`` seconds, catches up the lazy projectors and refits
    stale domains (checked every ``interval``)."""

    def __init__(self, engine: Engine, *, interval: float = 2.0, refit: bool = True) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.engine = engine
        self._log = EventStore(engine)
        self.interval = interval
        self.refit = refit
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="substrate-background", daemon=True)

    def start(self) -> BackgroundRunner:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to stop and wait for the round in progress (if any) to finish."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def run_once(self) -> None:
        """One round: apply the events the lazy projectors have not seen, then refit every stale domain."""
        catch_up_engine(self.engine)
        if self.refit:
            reindex(self.engine)

    def _run(self) -> None:
        last_head: int | None = None
        while not self._stop.wait(self.interval):
            try:
                # Only once the writes have paused for an interval: under a steady write load the searches keep
                # their domains current themselves, and a second worker would only contend with them for locks.
                head = self._log.head()
                if head != last_head:
                    last_head = head
                    continue
                self.run_once()
            except Exception:  # noqa: BLE001 - a failed round is retried next time; requests do the work anyway
                log.exception("background catch-up failed; retrying in %.1f s", self.interval)
            self.rounds += 1

    def __enter__(self) -> BackgroundRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
