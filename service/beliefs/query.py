"""Belief retrieval: relevance from the store's search, credence bounds from the ``beliefs`` read model.

Qualifying beliefs (tag and ``min_credence``) are counted and bounded in SQL over the whole domain, and
the search window grows until no unseen belief could outrank the k-th, so nothing is crowded out by a
fixed-size prefetch (MXR-080-0245).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from service.beliefs.model import BeliefItem, belief_from_item, check_number
from service.domain.validation import InvalidArgument, require_count, require_name
from service.store import records

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["rank_beliefs", "retrieve_beliefs"]


def _bounds(sub: Substrate, floor: float, scope: str | None, skip: Sequence[str]) -> tuple[int, float]:
    with sub.engine.connect() as c:
        return records.belief_bounds(c, floor, scope, skip, sub.as_of_seq)


def rank_beliefs(
    sub: Substrate,
    query: str,
    k: int,
    min_credence: float | None,
    scope: str | None,
    *,
    rollback: Mapping[str, BeliefItem | None] | None = None,
    exclude: Iterable[str] = (),
) -> list[BeliefItem]:
    """The k best beliefs by relevance * credence over the full qualifying domain (MXR-080-0245).

    ``rollback`` substitutes a belief's state (None hides it) and ``exclude`` hides ids, without writing.
    Search windows grow until no unseen candidate could beat the k-th: its relevance is at most the lowest
    seen and its credence at most the domain's maximum (an SQL bound over every qualifying belief).
    """
    rollback, exclude = dict(rollback or {}), set(exclude)
    floor = -1.0 if min_credence is None else min_credence
    subs = [b for b in rollback.values() if b is not None and b.credence >= floor and scope in (None, b.scope)]
    total, top = _bounds(sub, floor, scope, sorted(exclude | rollback.keys()))
    total, top = total + len(subs), max([top] + [b.credence for b in subs])
    if k == 0 or total == 0:
        return []
    window = max(4 * k, 32)
    while True:
        hits = sub.search(query, k=window, kind="record", scope=scope)
        with sub.engine.connect() as c:
            live = records.beliefs_among(c, [it.id for it, _ in hits], floor, sub.as_of_seq)
        ranked, lowest = [], math.inf
        for rank, (item, score) in enumerate(hits):
            relevance = max(float(score), 0.0)
            lowest = min(lowest, relevance)
            belief = _candidate(item, rollback, exclude, live, floor, scope)
            if belief is not None:
                ranked.append((relevance * belief.credence, rank, belief))
        ranked.sort(key=lambda t: (-t[0], t[1]))
        if len(hits) < window or len(ranked) >= total or (len(ranked) >= k and ranked[k - 1][0] >= lowest * top):
            return [b for _, _, b in ranked[:k]]
        window *= 4


def _candidate(
    item: Any,
    rollback: Mapping[str, BeliefItem | None],
    exclude: set[str],
    live: set[str],
    floor: float,
    scope: str | None,
) -> BeliefItem | None:
    if item.id in exclude:
        return None
    if item.id in rollback:
        b = rollback[item.id]
        return b if b is not None and b.credence >= floor and scope in (None, b.scope) else None
    if item.id not in live:
        return None
    try:
        return belief_from_item(item)
    except (ValueError, TypeError, KeyError):
        return None


def retrieve_beliefs(
    sub: Substrate, query: str, *, k: int = 8, min_credence: float | None = None, scope: str | None = None
) -> list[BeliefItem]:
    """Beliefs relevant to ``query``, thresholded on ``min_credence`` and ranked by relevance * credence.

    The belief tag and threshold are filtered over every record in scope, never a fixed prefetch (MXR-080-0245).
    """
    if not isinstance(query, str):
        raise InvalidArgument(f"query must be a string, got {type(query).__name__}")
    require_count(k, "k")
    if min_credence is not None:
        min_credence = check_number(min_credence, "min_credence", minimum=0.0)
        if min_credence > 1.0:
            raise InvalidArgument(f"min_credence must be within [0, 1], got {min_credence!r}")
    if scope is not None:
        require_name(scope, "scope")
    return rank_beliefs(sub, query, k, min_credence, scope)
