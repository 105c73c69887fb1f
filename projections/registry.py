"""The projector registry and the inline apply step used by appends and replays alike."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections import (
    belief_states,
    beliefs,
    embeddings,
    governance,
    grant_states,
    grants,
    history,
    item_states,
    items,
    revisions,
    search_index,
)
from projections.canonical import clear_digest_memo
from projections.projector import Projector, Statement

__all__ = [
    "BIND",
    "PROJECTORS",
    "apply_events",
    "deferrable_tables",
    "digest_queries",
    "lazy_projectors",
    "plan_apply",
    "plan_events",
    "plans_as_ctes",
    "projector_names",
    "read_model_tables",
]


# Every projector, in the order an append or a replay applies them.
PROJECTORS: tuple[Projector, ...] = (
    items.PROJECTOR,
    item_states.PROJECTOR,
    beliefs.PROJECTOR,
    belief_states.PROJECTOR,
    search_index.SEARCH,
    embeddings.VECTORS,
    governance.PROJECTOR,
    grants.PROJECTOR,
    grant_states.PROJECTOR,
    history.PROJECTOR,
    revisions.PROJECTOR,
)


def read_model_tables() -> list[tuple[str, str]]:
    """Every (table, key columns) owned by a projector, plus checkpoints."""
    out = [(t, p.keys[t]) for p in PROJECTORS for t in p.tables]
    out.append(("checkpoints", "name"))
    return out


_SET_CHECKPOINTS_SQL = (
    "INSERT INTO checkpoints (name, seq) SELECT unnest(CAST(:names AS text[])), :seq "
    "ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq"
)
_SET_CHECKPOINTS = text(_SET_CHECKPOINTS_SQL)


def digest_queries() -> dict[str, str]:
    """Per table whose layout depends on batching, the SELECT of its canonical contents (``Projector.digests``)."""
    return {t: q for p in PROJECTORS for t, q in p.digests.items()}


def deferrable_tables() -> list[str]:
    """The tables whose non-unique indexes a rebuild may build at the end (see ``Projector.defer_indexes``)."""
    return [t for p in PROJECTORS if p.defer_indexes for t in p.tables]


def projector_names() -> list[str]:
    """The names of the inline projectors (their checkpoints advance with every append)."""
    return [p.name for p in PROJECTORS if not p.lazy]


def lazy_projectors() -> list[Projector]:
    """The projectors kept off the write path (see ``Projector.lazy``)."""
    return [p for p in PROJECTORS if p.lazy]


def apply_events(conn: Connection, events: Sequence[Any], *, checkpoint: bool = True, lazy: bool = False) -> None:
    """Apply ``events`` (in seq order) to every inline projector (and the lazy ones too when ``lazy``).

    Each applied projector's checkpoint advances in the same transaction; ``checkpoint=False`` when the caller's
    own statement already advanced them (the single-event append folds it into its INSERT).
    """
    if not events:
        return
    applied = [p for p in PROJECTORS if lazy or not p.lazy]
    try:
        for p in applied:
            mine = [e for e in events if e.type in p.handles]
            if mine:
                p.apply(conn, mine)
    finally:
        clear_digest_memo()
    if checkpoint:
        conn.execute(_SET_CHECKPOINTS, {"names": [p.name for p in applied], "seq": events[-1].seq})


def plan_events(
    events: Sequence[Any], *, single: bool = False, shared: bool = False, optimistic: bool = False
) -> list[Statement] | None:
    """Every inline projector's statements for ``events``, or None when one of them cannot plan this batch (or,
    with ``single``, needs more than one statement for it: statements of one projector must run in order).
    ``shared``: prefer each projector's ``batch_plan`` (statements over the ``ev`` CTE); ``optimistic`` only for a
    caller that recovers from a unique violation (see ``projections.items.all_first_states``)."""
    out: list[Statement] = []
    try:
        for p in PROJECTORS:
            if p.lazy:
                continue
            mine = [e for e in events if e.type in p.handles]
            if not mine:
                continue
            planned = p.batch_plan(mine, optimistic=optimistic) if shared and p.batch_plan is not None else None
            if planned is None:
                planned = p.plan(mine) if p.plan is not None else None
            if planned is None or (single and len(planned) > 1):
                return None
            out.extend(planned)
    finally:
        clear_digest_memo()
    return out


# The replay's batch as the CTE ``ev`` that batch plans read (the events are in the log already: only their
# seqs, digests and positions travel, as in the batch append).
_FROM_LOG = (
    "WITH ev AS MATERIALIZED (SELECT seq, version, data FROM public.events WHERE seq BETWEEN :lo AND :hi)"
    "{projections} SELECT 1"
)


def plan_apply(events: Sequence[Any], *, optimistic: bool = False) -> list[Statement] | None:
    """``apply_events(conn, events)`` (inline projectors, checkpoints included) as statements, or None when a
    projector cannot plan this batch and must ``apply`` it. ``events`` are a stretch of the stored log (consecutive
    seqs): the projectors that can read them from it do, in one statement (``optimistic``: see ``batch_plan``)."""
    if not events:
        return []
    checkpoints = (_SET_CHECKPOINTS_SQL, {"names": projector_names(), "seq": events[-1].seq})
    shared = plan_events(events, single=True, shared=True, optimistic=optimistic)
    if shared:
        params: dict[str, Any] = {"lo": events[0].seq, "hi": events[-1].seq}
        return [(_FROM_LOG.format(projections=plans_as_ctes(shared, params)), params), checkpoints]
    planned = plan_events(events)
    if planned is None:
        return None
    return [*planned, checkpoints]


# A bind parameter in projector SQL, as SQLAlchemy's text() finds them (not the second colon of a cast).
BIND = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")


def plans_as_ctes(plans: Sequence[Statement], params: dict[str, Any]) -> str:
    """Planned statements as further data-modifying CTEs (``, p0 AS (...), p1 AS (...)``) of one statement; their
    parameters go into ``params``, prefixed (``p{i}_``) so that none can collide."""
    out = []
    for i, (sql, values) in enumerate(plans):
        out.append(_cte(i, sql))
        params.update({f"p{i}_{k}": v for k, v in values.items()})
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _cte(i: int, sql: str) -> str:
    return f", p{i} AS ({BIND.sub(lambda m: f':p{i}_{m.group(1)}', sql)})"
