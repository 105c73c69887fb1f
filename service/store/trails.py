"""The evidence trails the evidence commands decided, as the ``beliefs`` read model holds them: the write door
keeps them on a belief that is put or updated (a put cannot claim evidence, nor the credence it implies)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from projections.jsonutil import loads
from service.store.database import reader

__all__ = ["decided_trails"]

# One statement, so the version and the trail are read in one snapshot.
_TRAILS = text(
    "SELECT s.id, COALESCE((SELECT max(e.version) FROM events e WHERE e.stream = s.id), 0), b.evidence::text "
    "FROM unnest(CAST(:ids AS text[])) AS s(id) LEFT JOIN beliefs b ON b.id = s.id"
)


def decided_trails(engine: Engine, ids: Sequence[str]) -> dict[str, tuple[int, list[Any]]]:
    """Each of ``ids``: its stream's version (0 when new) and, for a live belief, its trail (else empty)."""
    with reader(engine).connect() as c:
        rows = c.execute(_TRAILS, {"ids": sorted(set(ids))})
        return {i: (int(v), loads(t) if t is not None else []) for i, v, t in rows}
