"""The projector type: a named, pure fold of events into the read-model tables it owns."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["Projector", "Statement", "run_plan"]


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
    # A lazy projector that folds a stretch of the log set-wise, reading it itself: ``advance(conn, after, target)``
    # applies the events in ``(after, target]``; a catch-up (from nothing too) calls it instead of ``apply``.
    advance: Callable[[Connection, int, int], None] | None = None
    # Per table, a SELECT of its canonical contents, digested instead of its rows in key order when how the rows
    # are laid out depends on how the log was cut into batches (the contents do not).
    digests: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=256)
def _text(sql: str) -> Any:
    return text(sql)


def run_plan(conn: Connection, statements: Sequence[Statement]) -> None:
    """Execute planned statements in order (what a projector's ``apply`` does with its own plan)."""
    for sql, params in statements:
        conn.execute(_text(sql), params)
