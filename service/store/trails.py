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

_TRAILS = text("SELECT id, evidence::text FROM beliefs WHERE id = ANY(CAST(:ids AS text[]))")


def decided_trails(engine: Engine, ids: Sequence[str]) -> dict[str, list[Any]]:
    """Each of ``ids`` that is a live belief, with its trail (one query)."""
    with reader(engine).connect() as c:
        return {i: loads(t) for i, t in c.execute(_TRAILS, {"ids": sorted(set(ids))})}
