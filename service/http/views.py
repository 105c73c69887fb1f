"""What a caller reads: the live store or a cached time-travel view, restricted to the caller's readable scopes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.http.errors import ProblemError
from service.store.timetravel import parse_position, resolve_position

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["AsOfViews", "ScopedReader", "parse_as_of", "read_view"]


def parse_as_of(value: str | None) -> int | datetime | None:
    """``?as_of=``: a log position (an integer) or an ISO-8601 datetime (UTC when it names no zone)."""
    if value is None:
        return None
    try:
        return parse_position(value)
    except InvalidArgument as exc:
        raise ProblemError(422, str(exc)) from None


class AsOfViews:
    """A small LRU of read-only time-travel views keyed by seq (each one replays the log prefix once)."""

    def __init__(self, store: Substrate, size: int = 4) -> None:
        self._store = store
        self._size = size
        self._lock = threading.Lock()
        self._build = threading.Lock()
        self._views: OrderedDict[int, list[Any]] = OrderedDict()  # seq -> [view, users]

    @contextmanager
    def open(self, at: int | datetime) -> Iterator[tuple[Substrate, int]]:
        """The view as of ``at`` and its seq, held open (never evicted) while the block runs."""
        seq = resolve_position(self._store.events, at)
        entry = self._acquire(seq)
        try:
            yield entry[0], seq
        finally:
            with self._lock:
                entry[1] -= 1
                self._evict()

    def _acquire(self, seq: int) -> list[Any]:
        with self._lock:
            entry = self._views.get(seq)
            if entry is not None:
                entry[1] += 1
                self._views.move_to_end(seq)
                return entry
        with self._build:  # one replay at a time; a second caller for the same seq reuses the first's view
            with self._lock:
                entry = self._views.get(seq)
                if entry is not None:
                    entry[1] += 1
                    return entry
            view = self._store.as_of(seq)
            with self._lock:
                entry = self._views[seq] = [view, 1]
                return entry

    def _evict(self) -> None:
        for seq in [s for s, (_, users) in self._views.items() if users == 0]:
            if len(self._views) <= self._size:
                break
            self._views.pop(seq)[0].close()

    def close(self) -> None:
        """Close every cached view (their private schemas are dropped)."""
        with self._lock:
            views, self._views = list(self._views.values()), OrderedDict()
        for view, _ in views:
            view.close()


class ScopedReader:
    """A store (or view) seen through a set of scopes: search runs per scope and merges; others are invisible."""

    def __init__(self, store: Substrate, scopes: Iterable[str]) -> None:
        self._store = store
        self._scopes = sorted(set(scopes))

    def search(
        self, query: str, k: int = 5, *, kind: str | None = None, scope: str | None = None
    ) -> list[tuple[SubstrateItem, float]]:
        # One scope-restricted search per visible scope: each ranks with its own scope's index only, so
        # nothing about an unreadable scope's content can shape these scores (MXR-080-0237).
        scopes = self._scopes if scope is None else [s for s in self._scopes if s == scope]
        hits = [h for s in scopes for h in self._store.search(query, k=k, kind=kind, scope=s)]
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def get(self, item_id: str) -> SubstrateItem | None:
        item = self._store.get(item_id)
        return item if item is not None and item.scope in self._scopes else None

    def get_many(self, ids: Sequence[str]) -> dict[str, SubstrateItem]:
        return {i: it for i, it in self._store.get_many(ids).items() if it.scope in self._scopes}

    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.get(item_id) is not None


@contextmanager
def read_view(store: Substrate, views: AsOfViews, as_of: str | None) -> Iterator[tuple[Substrate, int | None]]:
    """The live store (``as_of`` None) or the cached read-only view as of that point, with its seq."""
    at = parse_as_of(as_of)
    if at is None:
        yield store, None
        return
    with views.open(at) as (view, seq):
        yield view, seq
