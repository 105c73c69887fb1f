"""The background upkeep: keeps the lazy read models (search postings, embedders) current between requests.

Searches catch the lazy projector up and refit stale domains themselves, so nothing depends on this thread; it
moves that work off the requests. ``substrate serve`` runs one in every process, and the processes elect the one
that works: it holds the upkeep lease (service.store.lease), and another takes over if it exits or dies.

Order: the domains searched in this process lately come first, most recent first, and are kept current while
writes go on; the other domains (the all-scopes domain ``*`` last: HTTP searches never read it) wait until the
writes pause for an interval, so fitting them never delays a domain that is being searched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from sqlalchemy.engine import Engine

from projections.embeddings import ALL_DOMAIN
from projections.registry import PROJECTORS
from projections.runner import catch_up_engine
from service.search.embedders import refit
from service.search.ranking import stale_domains
from service.store.eventstore import EventStore
from service.store.lease import Lease
from service.store.statistics import refresh_statistics

__all__ = ["UPKEEP_LEASE", "BackgroundRunner", "note_search"]

log = logging.getLogger("substrate.background")

UPKEEP_LEASE = 80238  # the advisory lock key of the upkeep lease (80237 serializes migrations)
_DEMAND_WINDOW = 600.0  # seconds a search keeps its domain "in demand"
_LAZY_TABLES = tuple(t for p in PROJECTORS if p.lazy for t in p.tables)
_searched: dict[str, float] = {}  # domain -> when this process last searched it


def note_search(scope: str | None) -> None:
    """Remember that this process searched ``scope``'s domain (None: all scopes) just now; no database work."""
    _searched[ALL_DOMAIN if scope is None else scope] = time.monotonic()


def _in_demand(domains: Sequence[str]) -> list[str]:
    """Those of ``domains`` searched in this process within the demand window, most recently searched first."""
    since = time.monotonic() - _DEMAND_WINDOW
    hot = [(_searched.get(d, 0.0), d) for d in domains]
    return [d for when, d in sorted(hot, reverse=True) if when >= since]


class BackgroundRunner:
    """A daemon thread that, every ``interval`` seconds while it holds the upkeep lease (``elect``), catches up
    the lazy projectors and refits stale domains in the order of the module doc."""

    def __init__(self, engine: Engine, *, interval: float = 2.0, refit: bool = True, elect: bool = True) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.engine = engine
        self._log = EventStore(engine)
        self.interval = interval
        self.refit = refit
        self.rounds = 0
        self._lease = Lease(engine, UPKEEP_LEASE, holder="substrate upkeep") if elect else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="substrate-background", daemon=True)

    @property
    def leading(self) -> bool:
        """Whether this runner holds the upkeep lease (always, when it does not take part in an election)."""
        return self._lease is None or self._lease.held()

    def start(self) -> BackgroundRunner:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to stop, wait for the domain in progress (if any), and give the lease up."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._lease is not None:
            self._lease.release()

    def run_once(self, *, everything: bool = True) -> None:
        """One round: apply the events the lazy projectors have not seen, then refit the stale domains searched in
        this process lately (most recent first), then, when ``everything``, the other stale domains (``*`` last)."""
        applied = catch_up_engine(self.engine)
        refresh_statistics(self.engine, max(applied.values(), default=0), _LAZY_TABLES)
        if not self.refit:
            return
        stale = stale_domains(self.engine)
        first = _in_demand(stale)
        rest = [d for d in stale if d not in first and d != ALL_DOMAIN] + [d for d in stale if d == ALL_DOMAIN]
        for domain in first + (rest if everything else []):
            if self._stop.is_set():
                return
            refit(self.engine, domain)

    def _run(self) -> None:
        last_head: int | None = None
        done: int | None = None  # the head at the end of the last full round
        while not self._stop.wait(self.interval):
            try:
                if not self.leading:
                    continue
                head = self._log.head()
                quiet, last_head = head == last_head, head
                if head == done:
                    continue  # nothing written since everything was current
                self.run_once(everything=quiet)  # while writes go on, the domains being searched only
                if quiet:
                    done = head
            except Exception:  # noqa: BLE001 - a failed round is retried next time; requests do the work anyway
                log.exception("background catch-up failed; retrying in %.1f s", self.interval)
            self.rounds += 1

    def __enter__(self) -> BackgroundRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
