"""Lineage verification: does an item's ``derived_from`` ancestry resolve end to end, and if not, exactly why?

The walk (MXR-080-0260/0261) follows ``derived_from`` only, never ``links``. It runs breadth first, one SQL
query per depth level, so every ancestor is reached at its shortest distance: a node at distance ``max_depth``
with a parent not reached any other way is named in ``truncated``. A second, depth-first pass over the explored edges finds
back edges into the current root-to-node path (genuine cycles); a shared ancestor reached twice (a diamond)
is not a cycle. With ``scope`` set, every node is resolved through the access policy, and a missing ancestor
and an unreadable one are deliberately indistinguishable (both ``unverified``), so audits are no existence
oracle for another scope's content.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import text

from projections import loads
from service.domain.validation import InvalidArgument, require_count
from service.teams.access import AccessPolicy

__all__ = ["LineageReport", "LineageState", "audit_substrate", "verify_lineage"]

_PAGE = 2000
_NODES = text("SELECT id, scope, doc->'derived_from' FROM items WHERE id = ANY(CAST(:ids AS text[]))")


class LineageState(StrEnum):
    """The three-state lineage verdict: BROKEN outranks UNVERIFIED outranks INTACT."""

    INTACT = "intact"
    BROKEN = "broken"
    UNVERIFIED = "unverified"


@dataclass
class LineageReport:
    """Whether an item's provenance chain resolves end to end, and which ancestor ids drove the verdict."""

    item_id: str
    state: LineageState
    n_links: int
    dangling: list[str] = field(default_factory=list)
    cycles: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    depth: int = 0
    visited: int = 0

    @property
    def intact(self) -> bool:
        """True iff state is INTACT (BROKEN and UNVERIFIED both read False)."""
        return self.state is LineageState.INTACT

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable lineage report."""
        return {
            "item_id": self.item_id,
            "state": self.state.value,
            "intact": self.intact,
            "n_links": self.n_links,
            "dangling": list(self.dangling),
            "cycles": list(self.cycles),
            "unverified": list(self.unverified),
            "truncated": list(self.truncated),
            "depth": self.depth,
            "visited": self.visited,
        }


_Node = tuple[str, tuple[str, ...]]  # (scope, derived_from)


class _Graph:
    """Batch lookups of (scope, derived_from) by id, cached; None marks an id with no live item."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.cache: dict[str, _Node | None] = {}

    def seed(self, item_id: str, scope: str, parents: Any) -> None:
        self.cache[item_id] = (scope, _parents(parents))

    def fetch(self, ids: Iterable[str]) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.cache]
        if not missing:
            return
        with self.engine.connect() as c:
            rows = c.execute(_NODES, {"ids": missing}).all()
        for item_id, scope, parents in rows:
            self.cache[item_id] = (scope, _parents(parents))
        for i in missing:
            self.cache.setdefault(i, None)


def _parents(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = loads(value)
    if not isinstance(value, list):
        return ()
    return tuple(p for p in value if isinstance(p, str) and p)


def _walk(graph: _Graph, item_id: str, max_depth: int, scope: str | None, policy: Any) -> LineageReport:
    def readable(node: _Node | None) -> bool:
        return node is not None and (scope is None or bool(policy.can_read(scope, node[0])))

    graph.fetch([item_id])
    if not readable(graph.cache.get(item_id)):
        if scope is None:
            return LineageReport(item_id, LineageState.BROKEN, 0, dangling=[item_id])
        return LineageReport(item_id, LineageState.UNVERIFIED, 0, unverified=[item_id])
    dist = {item_id: 0}
    edges: dict[str, tuple[str, ...]] = {}
    report = LineageReport(item_id, LineageState.INTACT, 0)
    frontier = [item_id]
    depth = 0
    while frontier:
        graph.fetch(p for node in frontier for p in graph.cache[node][1])  # type: ignore[index]
        nxt: list[str] = []
        for node_id in frontier:
            parents = graph.cache[node_id][1]  # type: ignore[index]
            if depth == max_depth:
                # At the cap, edges into nodes already reached are still checked (a back edge there is a
                # cycle); any other parent is an unvisited tail, which is never certified.
                edges[node_id] = tuple(p for p in parents if p in dist)
                report.n_links += len(edges[node_id])
                if len(edges[node_id]) < len(parents):
                    report.truncated.append(node_id)
                continue
            edges[node_id] = parents
            report.n_links += len(parents)
            for p in parents:
                if p in dist:
                    continue
                dist[p] = depth + 1
                node = graph.cache.get(p)
                if readable(node):
                    nxt.append(p)
                elif scope is None:
                    report.dangling.append(p)
                else:
                    report.unverified.append(p)  # missing or private: deliberately the same answer
        report.visited += len(frontier)
        report.depth = depth
        frontier = nxt
        depth += 1
    report.cycles = _back_edges(item_id, edges)
    if report.dangling or report.cycles:
        report.state = LineageState.BROKEN
    elif report.unverified or report.truncated:
        report.state = LineageState.UNVERIFIED
    return report


def _back_edges(root: str, edges: dict[str, tuple[str, ...]]) -> list[str]:
    # Iterative DFS with colours: an edge into a node still on the stack (grey) closes a cycle.
    grey, black, found = {root}, set(), []
    stack: list[tuple[str, Iterator[str]]] = [(root, iter(edges.get(root, ())))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            grey.discard(node)
            black.add(node)
        elif nxt in grey:
            if nxt not in found:
                found.append(nxt)
        elif nxt not in black and nxt in edges:
            grey.add(nxt)
            stack.append((nxt, iter(edges[nxt])))
    return found


def _check(scope: Any, policy: Any) -> Any:
    if scope is None:
        return policy
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidArgument(f"scope must be a non-empty string or None, got {scope!r}")
    if policy is None:
        return AccessPolicy()  # fresh: the principal reads only its home scope and PUBLIC
    if not callable(getattr(policy, "can_read", None)):
        raise InvalidArgument(f"policy must have can_read(principal, scope), got {type(policy).__name__}")
    return policy


def verify_lineage(
    substrate: Any, item_id: str, *, max_depth: int = 20, scope: str | None = None, policy: Any = None
) -> LineageReport:
    """Walk item_id's derived_from ancestry (cycle-safe, depth-capped, scope-authorized); a three-state verdict."""
    require_count(max_depth, "max_depth")
    if not isinstance(item_id, str) or not item_id:
        raise InvalidArgument(f"item_id must be a non-empty string, got {item_id!r}")
    policy = _check(scope, policy)
    return _walk(_Graph(substrate.engine), item_id, max_depth, scope, policy)


def _finding(report: LineageReport) -> dict[str, Any]:
    """One audit entry: the item and the ancestor ids behind its state (BROKEN: defects; UNVERIFIED: open questions)."""
    if report.state is LineageState.BROKEN:
        return {"item_id": report.item_id, "dangling": list(report.dangling), "cycles": list(report.cycles)}
    return {"item_id": report.item_id, "unverified": list(report.unverified), "truncated": list(report.truncated)}


def audit_substrate(
    substrate: Any, *, scope: str | None = None, policy: Any = None, max_depth: int = 20
) -> dict[str, Any]:
    """Sweep every item (of ``scope``): {n_items, n_intact, n_broken, n_unverified, broken, unverified}.

    ``broken`` holds {item_id, dangling, cycles} per item, ``unverified`` holds {item_id, unverified, truncated}.
    """
    require_count(max_depth, "max_depth")
    policy = _check(scope, policy)
    out: dict[str, Any] = {
        "n_items": 0,
        "n_intact": 0,
        "n_broken": 0,
        "n_unverified": 0,
        "broken": [],
        "unverified": [],
    }
    where, params = "pos > :after", {"after": -1}
    if scope is not None:
        where += " AND scope = :scope"
        params["scope"] = scope  # type: ignore[assignment]
    sql = text(f"SELECT id, scope, doc->'derived_from', pos FROM items WHERE {where} ORDER BY pos LIMIT {_PAGE}")
    while True:
        with substrate.engine.connect() as c:
            rows = c.execute(sql, params).all()
        graph = _Graph(substrate.engine)  # one cache per page: memory stays flat on large stores
        for item_id, item_scope, parents, _ in rows:
            graph.seed(item_id, item_scope, parents)
        for item_id, *_ in rows:
            report = _walk(graph, item_id, max_depth, scope, policy)
            out["n_items"] += 1
            out[f"n_{report.state.value}"] += 1
            if report.state is not LineageState.INTACT:
                out[report.state.value].append(_finding(report))
        if len(rows) < _PAGE:
            return out
        params["after"] = rows[-1][3]
