"""The projector registry and the inline apply step used by appends and replays alike."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.canonical import clear_digest_memo

__all__ = [
    "BIND",
    "PROJECTORS",
    "Projector",
    "Statement",
    "apply_events",
    "deferrable_tables",
    "lazy_projectors",
    "plan_apply",
    "plan_events",
    "plans_as_ctes",
    "projector_names",
    "read_model_tables",
    "run_plan",
]


# One SQL statement a projector would run: its text (named :params) and the parameters.
Statement = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Projector:
    """A named fold: which event types it handles, which tables it owns, and the batch apply function."""

    name: str
    handles: frozenset[str]
    tables: tuple[str, ...]
    apply: Callable[[Connection, Sequence[Any]], None]
    # Digest ordering: the columns that identify a row of each table, for per-table digests.
    keys: dict[str, str]
    # A lazy projector stays off the write path: it catches up from its own checkpoint (runner.catch_up) before
    # a read that needs it, and in every rebuild, so its tables are still a pure replay of the log.
    lazy: bool = False
    # The statements ``apply`` would run, as (sql, params), without running them (None: this batch needs
    # ``apply``). A single-event append folds them into its INSERT: one round trip instead of one per projector.
    plan: Callable[[Sequence[Any]], list[Statement] | None] | None = None
    # The same statements reading the batch's events from a CTE named ``ev`` (the columns of ``events``, data as
    # jsonb) instead of carrying their own copy of each item: used by the one-statement batch append, which
    # already sends every event once. None (or returning None): use ``plan``.
    # Called with ``optimistic=False`` after an optimistic plan (plain INSERTs for rows it believed new) failed.
    batch_plan: Callable[..., list[Statement] | None] | None = None
    # Its apply never reads its tables through a non-unique index, so a rebuild may drop those indexes while it
    # fills the tables and build each once at the end (a sort instead of an entry per row, ~30% of the writes).
    defer_indexes: bool = False
    # A lazy projector's set-wise build from nothing: ``build(conn, inline)`` fills its empty tables with the rows
    # that applying every event up to the position of the ``inline`` projectors' checkpoints would leave, reading
    # that position in the same statement as the inline read models it reads (appends may commit meanwhile), and
    # returns it. None: catch-up from nothing folds the log with ``apply``.
    build: Callable[[Connection, list[str]], int] | None = None


PROJECTORS: list[Projector] = []
# Tables derived lazily from read models (fitted models, vectors): never replayed, but a snapshot schema
# gets its own empty copies so a time-travel view refits from its own past state, not the live one.
CACHE_TABLES: list[str] = []
_LOADED = False
_LOAD_LOCK = threading.RLock()


def register(projector: Projector) -> Projector:
    PROJECTORS.append(projector)
    return projector


def register_cache(*tables: str) -> None:
    """Declare tables that hold lazily derived state (see CACHE_TABLES)."""
    CACHE_TABLES.extend(t for t in tables if t not in CACHE_TABLES)


def cache_tables() -> list[str]:
    """Every registered cache table."""
    _load()
    return list(CACHE_TABLES)


def read_model_tables() -> list[tuple[str, str]]:
    """Every (table, key columns) owned by a projector, plus checkpoints."""
    _load()
    out = [(t, p.keys[t]) for p in PROJECTORS for t in p.tables]
    out.append(("checkpoints", "name"))
    return out


_SET_CHECKPOINTS_SQL = (
    "INSERT INTO checkpoints (name, seq) SELECT unnest(CAST(:names AS text[])), :seq "
    "ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq"
)
_SET_CHECKPOINTS = text(_SET_CHECKPOINTS_SQL)


def deferrable_tables() -> list[str]:
    """The tables whose non-unique indexes a rebuild may build at the end (see ``Projector.defer_indexes``)."""
    _load()
    return [t for p in PROJECTORS if p.defer_indexes for t in p.tables]


def projector_names() -> list[str]:
    """The names of the inline projectors (their checkpoints advance with every append)."""
    _load()
    return [p.name for p in PROJECTORS if not p.lazy]


def lazy_projectors() -> list[Projector]:
    """The projectors kept off the write path (see ``Projector.lazy``)."""
    _load()
    return [p for p in PROJECTORS if p.lazy]


def apply_events(conn: Connection, events: Sequence[Any], *, checkpoint: bool = True, lazy: bool = False) -> None:
    """Apply ``events`` (in seq order) to every inline projector (and the lazy ones too when ``lazy``).

    Each applied projector's checkpoint advances in the same transaction; ``checkpoint=False`` when the caller's
    own statement already advanced them (the single-event append folds it into its INSERT).
    """
    if not events:
        return
    _load()
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
    _load()
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


@functools.lru_cache(maxsize=256)
def _text(sql: str) -> Any:
    return text(sql)


def run_plan(conn: Connection, statements: Sequence[Statement]) -> None:
    """Execute planned statements in order (what a projector's ``apply`` does with its own plan)."""
    for sql, params in statements:
        conn.execute(_text(sql), params)


def _load() -> None:
    # Projector modules register themselves on import; import them lazily to keep import order simple.
    # Guard on a flag, not on PROJECTORS: a service module importing one projector module directly
    # (e.g. projections.items for ITEM_EVENTS) must not stop the others from loading. The flag is set only once
    # every module is in, under a lock: a second thread must wait, never see a half-filled PROJECTORS (its append
    # would skip the missing projectors).
    global _LOADED
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        import projections.beliefs  # noqa: F401
        import projections.embeddings  # noqa: F401
        import projections.governance  # noqa: F401
        import projections.grants  # noqa: F401
        import projections.history  # noqa: F401
        import projections.items  # noqa: F401
        import projections.revisions  # noqa: F401

        _LOADED = True
