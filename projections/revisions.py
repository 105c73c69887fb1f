"""The ``revisions`` read model: every state any item has had, keyed by its content digest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.canonical import event_item_digest as item_digest
from projections.items import ITEM_EVENTS, all_first_states
from projections.jsonutil import dumps
from projections.projector import Projector, Statement, run_plan

__all__ = ["apply"]

# The rows travel as one JSON document (serialized in C, unlike text arrays).
_INSERT = (
    "INSERT INTO revisions (digest, item_id, doc, seq) "
    "SELECT u.digest, u.doc->>'id', u.doc, u.seq "
    "FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS u(digest text, doc jsonb, seq bigint) "
    "ON CONFLICT (digest) DO NOTHING"
)
# The same insert for a batch whose events are in the CTE ``ev`` (only seqs and digests travel); without the
# conflict clause when every state is new (projections.items.all_first_states).
_FROM_EV = (
    "INSERT INTO revisions (digest, item_id, doc, seq) "
    "SELECT u.digest, ev.data->'item'->>'id', ev.data->'item', ev.seq "
    "FROM unnest(string_to_array(:seqs, ',')::bigint[], string_to_array(:digests, ',')) AS u(seq, digest) "
    "JOIN ev ON ev.seq = u.seq"
)
_INSERT_FROM_EV = _FROM_EV + " ON CONFLICT (digest) DO NOTHING"


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Record each carried item state once; the first event that produced a digest owns it."""
    run_plan(conn, plan(events))


def plan(events: Sequence[Any]) -> list[Statement]:
    """The statement of ``apply``: one insert of every new digest (existing digests are kept)."""
    rows: dict[str, dict[str, Any]] = {}
    for e in events:
        item = e.data.get("item")
        if item is not None:
            digest = item_digest(item)
            if digest not in rows:
                rows[digest] = {"digest": digest, "doc": item, "seq": e.seq}
    return [(_INSERT, {"rows": dumps(list(rows.values()))})] if rows else []


def batch_plan(events: Sequence[Any], *, optimistic: bool = True) -> list[Statement] | None:
    """``plan`` over the ``ev`` CTE: the seq of the first event that produced each digest (a plain INSERT when
    ``optimistic`` and every state is new)."""
    first: dict[str, int] = {}
    for e in events:
        item = e.data.get("item")
        if item is not None:
            first.setdefault(item_digest(item), e.seq)
    if not first:
        return []
    sql = _FROM_EV if optimistic and all_first_states(events) else _INSERT_FROM_EV
    return [(sql, {"seqs": ",".join(map(str, first.values())), "digests": ",".join(first)})]


PROJECTOR = Projector(
    name="revisions",
    handles=ITEM_EVENTS,
    tables=("revisions",),
    apply=apply,
    keys={"revisions": "digest"},
    plan=plan,
    batch_plan=batch_plan,
    defer_indexes=True,
)
