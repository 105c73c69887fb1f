"""What a caller reads: the live store or a view of it as of a log position, restricted to the caller's readable scopes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.http.errors import ProblemError
from service.store.timetravel import parse_position

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["AS_OF_SCHEMA", "ScopedReader", "check_position", "parse_as_of", "read_view"]


def parse_as_of(value: str | None) -> int | datetime | None:
    """``?as_of=``: a log position (an integer) or an RFC 3339 / ISO-8601 datetime (UTC when it names no zone)."""
    if value is None:
        return None
    try:
        return parse_position(value)
    except InvalidArgument as exc:
        raise ProblemError(422, str(exc)) from None


# What ?as_of= takes, as the OpenAPI document states it: a log position, or a date-time (RFC 3339).
AS_OF_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": r"^[0-9]{1,18}$", "description": "a log position (seq)"},
        {"type": "string", "format": "date-time", "description": "a time (RFC 3339)"},
    ]
}


def check_position(store: Substrate, at: int | datetime | None) -> None:
    """A log position the log has not reached is 404: nothing has been recorded there yet (a time is never
    "too late": it reads as of the last event recorded before it)."""
    if isinstance(at, int) and at > (head := store.events.head()):
        raise ProblemError(404, f"log position {at} has not been reached: the log head is {head}")


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
def read_view(store: Substrate, as_of: str | None) -> Iterator[tuple[Substrate, int | None]]:
    """The live store (``as_of`` None) or a read-only view of it as of that point, with its seq (a view costs one
    query to resolve its position: its reads are queries over the states valid there, see service.store.reads)."""
    at = parse_as_of(as_of)
    if at is None:
        yield store, None
        return
    check_position(store, at)
    view = store.as_of(at)
    try:
        yield view, view.as_of_seq
    finally:
        view.close()
