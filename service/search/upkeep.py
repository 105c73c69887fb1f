"""The search upkeep: what keeps the search read models and embedders current, off every read path.

``upkeep_once`` is one round: index the log up to its head in bounded stretches (each committed on its own, so
searches' tails shrink as it goes), refresh the planner statistics after a large stretch, merge the index's
segments, then refit the stale domains' embedders. Searches never wait for any of it: they read the index as of
its checkpoint plus the tail (``service.search.ranking``) and use whatever embedder was fitted last.

``substrate serve`` runs a ``BackgroundRunner`` in every process, and the processes elect the one that works: it
holds the upkeep lease (service.store.lease), and another takes over if it exits or dies. Order of the refits: the
domains searched in this process lately come first, most recent first, and are kept current while writes go on;
the other domains (the all-scopes domain ``*`` last: HTTP searches never read it) wait until the writes pause for
an interval, so fitting them never delays a domain that is being searched. ``substrate reindex`` runs one full
round. The catch-up and each refit take advisory locks of their own, so two rounds never do the same work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from projections.registry import PROJECTORS
from projections.runner import catch_up
from projections.search_index import ALL_DOMAIN, NAME
from projections.search_segments import merge_segments
from service.search.embedders import VERSION, refit
from service.store.eventstore import EventStore
from service.store.lease import Lease
from service.store.statistics import refresh_statistics

__all__ = [
    "STRETCH",
    "UPKEEP_LEASE",
    "BackgroundRunner",
    "UpkeepReport",
    "note_search",
    "reindex",
    "stale_domains",
    "upkeep_once",
]

log = logging.getLogger("substrate.background")

UPKEEP_LEASE = 80238  # the advisory lock key of the upkeep lease (80237 serializes migrations)
STRETCH = 20_000  # log positions indexed per transaction (a 100k-document ingest: five commits)
_DEMAND_WINDOW = 600.0  # seconds a search keeps its domain "in demand"
_LAZY_TABLES = tuple(t for p in PROJECTORS if p.lazy for t in p.tables)
_searched: dict[str, float] = {}  # domain -> when this process last searched it
_BEHIND = text(
    "SELECT (SELECT seq FROM log_head WHERE id = 1) > coalesce((SELECT seq FROM checkpoints WHERE name = :name), 0)"
)
_STALE = text(
    "SELECT d.domain FROM search_domains d LEFT JOIN embedders e USING (domain) "
    "WHERE e.domain IS NULL OR e.fitted_seq <> d.changed_seq OR e.version <> :v ORDER BY d.domain"
)


def note_search(scope: str | None) -> None:
    """Remember that this process searched ``scope``'s domain (None: all scopes) just now; no database work."""
    _searched[ALL_DOMAIN if scope is None else scope] = time.monotonic()


def _in_demand(domains: Sequence[str]) -> list[str]:
    """Those of ``domains`` searched in this process within the demand window, most recently searched first."""
    since = time.monotonic() - _DEMAND_WINDOW
    hot = [(_searched.get(d, 0.0), d) for d in domains]
    return [d for when, d in sorted(hot, reverse=True) if when >= since]


def _behind(engine: Engine) -> bool:
    """Whether events were appended past the search index's checkpoint."""
    with engine.connect() as c:
        return bool(c.execute(_BEHIND, {"name": NAME}).scalar_one())


def stale_domains(engine: Engine) -> list[str]:
    """The domains whose embedder is missing or older than the domain's text (as of the search checkpoint)."""
    with engine.connect() as c:
        return [r[0] for r in c.execute(_STALE, {"v": VERSION})]


@dataclass
class UpkeepReport:
    """What one round did: log positions indexed, segments merged away, domains refitted, seconds per phase."""

    indexed: int = 0
    merged: int = 0
    refitted: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"indexed": self.indexed, "merged": self.merged, "refitted": self.refitted, "seconds": self.seconds}


def upkeep_once(
    engine: Engine,
    *,
    stretch: int = STRETCH,
    refits: bool = True,
    everything: bool = True,
    stop: Callable[[], bool] = lambda: False,
) -> UpkeepReport:
    """One round of search upkeep (see module doc). ``refits=False`` leaves the embedders as they are;
    ``everything=False`` refits only the domains searched lately; ``stop()`` true ends the refits early."""
    report = UpkeepReport()
    t0 = time.perf_counter()
    while True:
        with engine.begin() as conn:
            n = catch_up(conn, limit=stretch).get(NAME, 0)
        report.indexed += n
        if n < stretch or stop():
            break
    refresh_statistics(engine, report.indexed, _LAZY_TABLES)
    t1 = time.perf_counter()
    # Merging rewrites postings: while writes keep the index behind, only what MAX_SEGMENTS forces.
    behind = _behind(engine)
    while not stop():
        with engine.begin() as conn:
            merged = merge_segments(conn, forced_only=behind)
        report.merged += merged
        if not merged:
            break
    t2 = time.perf_counter()
    if refits:
        stale = stale_domains(engine)
        first = _in_demand(stale)
        rest = [d for d in stale if d not in first]
        rest.sort(key=lambda d: d == ALL_DOMAIN)  # the all-scopes domain last (stable: otherwise in name order)
        for domain in first + (rest if everything else []):
            if stop():
                break
            refit(engine, domain)
            report.refitted.append("*" if domain == ALL_DOMAIN else domain)
    phases = {"index": t1 - t0, "merge": t2 - t1, "refit": time.perf_counter() - t2}
    report.seconds = {k: round(v, 3) for k, v in phases.items()}
    return report


def reindex(engine: Engine) -> list[str]:
    """Index the whole log and refit every domain whose embedder is missing or older than its text; the domains
    refitted (the all-scopes domain as ``*``)."""
    return upkeep_once(engine).refitted


class BackgroundRunner:
    """A daemon thread that, every ``interval`` seconds while it holds the upkeep lease (``elect``), runs a round
    of upkeep: the index always, the refits in the order of the module doc."""

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
        """One round: index what the search read models have not seen, merge, then refit the stale domains searched
        in this process lately (most recent first), then, when ``everything``, the other stale domains (``*``
        last)."""
        upkeep_once(self.engine, refits=self.refit, everything=everything, stop=self._stop.is_set)

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
            except Exception:  # noqa: BLE001 - a failed round is retried next time
                log.exception("background catch-up failed; retrying in %.1f s", self.interval)
            self.rounds += 1

    def __enter__(self) -> BackgroundRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
