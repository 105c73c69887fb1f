"""The ``item_states`` read model: every state each item has had, with the log interval in which it was live.

A row ``(item_id, from_seq, to_seq)`` says the item's state ``digest`` (its full document is in ``revisions``)
was produced by event ``from_seq`` and replaced or removed by event ``to_seq`` (NULL while live). The state valid
at a log position S is the row with ``from_seq <= S AND (to_seq IS NULL OR to_seq > S)``: a read as of S is a
query over these rows, never a replay. ``pos`` is what ``items.pos`` was for that state (the seq of the first
state after the item's last removal), so listings as of S keep the live order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.canonical import event_item_digest as item_digest
from projections.items import ITEM_EVENTS, all_first_states
from projections.jsonutil import dumps
from projections.projector import Projector, Statement, run_plan

__all__ = ["NAME", "apply", "batch_plan", "plan"]

NAME = "item_states"

_COLUMNS = "INSERT INTO item_states (item_id, from_seq, to_seq, digest, scope, kind, pos) "
# The states that close a live state from before the batch, as rows that collide with it on the primary key and
# set its to_seq: one statement (an upsert) both adds the new states and closes the old ones. Every set travels as
# a JSON document: the planner's estimate of it is the same with or without the values, so the prepared statement
# of a put keeps one generic plan instead of being planned anew each time.
_CLOSED = (
    "SELECT l.item_id, l.from_seq, c.seq, l.digest, l.scope, l.kind, l.pos "
    "FROM jsonb_to_recordset(CAST(:close AS jsonb)) AS c(item_id text, seq bigint) "
    "CROSS JOIN LATERAL (SELECT * FROM item_states l WHERE l.item_id = c.item_id AND l.to_seq IS NULL OFFSET 0) l"
)
# The pos of an item's live state. Like the LATERAL above (OFFSET 0 keeps it from being flattened into a join),
# a probe of the primary key per row: the planner cannot know the batch is small, and would scan the table.
_LIVE_POS = "(SELECT l.pos FROM item_states l WHERE l.item_id = {id} AND l.to_seq IS NULL)"
_ON_CONFLICT = " ON CONFLICT (item_id, from_seq) DO UPDATE SET to_seq = EXCLUDED.to_seq"
# A new state that continues a life begun before the batch keeps that life's pos (``inherit``).
_UPSERT = (
    _COLUMNS + "SELECT u.item_id, u.from_seq, u.to_seq, u.digest, u.scope, u.kind, "
    "CASE WHEN u.inherit THEN coalesce(" + _LIVE_POS.format(id="u.item_id") + ", u.pos) ELSE u.pos END "
    "FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS u(item_id text, from_seq bigint, to_seq bigint, "
    "digest text, scope text, kind text, pos bigint, inherit boolean) UNION ALL " + _CLOSED + _ON_CONFLICT
)
_CLOSE_ONLY = _COLUMNS + _CLOSED + _ON_CONFLICT
# The same over the CTE ``ev`` (a batch append, or a replay's stretch of the log): only seqs, digests and the
# batch's own intervals travel (comma-separated; an empty to_seq is NULL). Brand-new items (see
# ``projections.items.all_first_states``): each state is its item's first and live, its pos its seq.
_FIRST_FROM_EV = (
    _COLUMNS + "SELECT i->>'id', ev.seq, NULL, u.digest, i->>'scope', i->>'kind', ev.seq "
    "FROM unnest(string_to_array(:seqs, ',')::bigint[], string_to_array(:digests, ',')) AS u(seq, digest) "
    "JOIN ev ON ev.seq = u.seq, LATERAL (SELECT ev.data->'item' AS i) x"
)
_UPSERT_FROM_EV = (
    _COLUMNS + "SELECT x.id, u.seq, u.to_seq, u.digest, x.i->>'scope', x.i->>'kind', "
    "coalesce(" + _LIVE_POS.format(id="x.id") + ", u.pos) "
    "FROM unnest(string_to_array(:seqs, ',')::bigint[], string_to_array(:digests, ','), "
    "string_to_array(:tos, ',', '')::bigint[], string_to_array(:pos, ',')::bigint[]) AS u(seq, digest, to_seq, pos) "
    "JOIN ev ON ev.seq = u.seq CROSS JOIN LATERAL (SELECT ev.data->'item' AS i, ev.data->'item'->>'id' AS id) x "
    "UNION ALL " + _CLOSED + _ON_CONFLICT
)


def _removed(e: Any) -> str | None:
    if e.type == "ItemRemoved":
        return str(e.data["id"])
    if e.type == "ItemsMerged" and e.data.get("removed"):
        return str(e.data["removed"])
    return None


_UNSEEN: Any = object()  # an item this batch has not touched yet


def _fold(events: Sequence[Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every state the batch produces (with the to_seq of those it also replaces) and, per item whose live state
    from before the batch it may replace, the seq that does so."""
    rows: list[dict[str, Any]] = []
    last: dict[str, Any] = {}  # the item's latest state in this batch (None: removed)
    close: dict[str, int] = {}
    for e in events:
        item = e.data.get("item")
        if item is not None:
            i = item["id"]
            prev = last.get(i, _UNSEEN)
            # ``inherit``: the state continues a life begun before the batch, whose pos the statement looks up.
            if prev is _UNSEEN:
                # Even a stream's first event may carry an item that already has a state (written on another
                # stream): only the statement knows.
                inherit, pos = True, e.seq
                close.setdefault(i, e.seq)
            elif prev is None:
                inherit, pos = False, e.seq
            else:
                prev["to_seq"] = e.seq
                inherit, pos = prev["inherit"], prev["pos"]
            row = {
                "item_id": i,
                "from_seq": e.seq,
                "to_seq": None,
                "digest": item_digest(item),
                "scope": item["scope"],
                "kind": item["kind"],
                "pos": pos,
                "inherit": inherit,
            }
            rows.append(row)
            last[i] = row
        gone = _removed(e)
        if gone is not None:
            prev = last.get(gone, _UNSEEN)
            if prev is _UNSEEN:
                close.setdefault(gone, e.seq)
            elif prev is not None:
                prev["to_seq"] = e.seq
            last[gone] = None
    return rows, close


def _closing(close: dict[str, int]) -> str:
    return dumps([{"item_id": i, "seq": seq} for i, seq in close.items()])


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Close the states the batch replaces and add the states it produces (same result as event by event)."""
    run_plan(conn, plan(events))


def plan(events: Sequence[Any]) -> list[Statement]:
    """The statement of ``apply``: one upsert that adds the batch's states and closes those they replace."""
    rows, close = _fold(events)
    if not rows and not close:
        return []
    params = {"close": _closing(close)}
    if not rows:
        return [(_CLOSE_ONLY, params)]
    return [(_UPSERT, {"rows": dumps(rows), **params})]


def batch_plan(events: Sequence[Any], *, optimistic: bool = True) -> list[Statement] | None:
    """``plan`` over the ``ev`` CTE, for batches that only put item states (None when one removes or merges);
    ``optimistic``: a plain INSERT when the batch only creates items (see ``projections.items.all_first_states``)."""
    if any(e.data.get("item") is None or _removed(e) is not None for e in events):
        return None
    if not events:
        return []
    if optimistic and all_first_states(events):
        return [
            (
                _FIRST_FROM_EV,
                {
                    "seqs": ",".join(str(e.seq) for e in events),
                    "digests": ",".join(item_digest(e.data["item"]) for e in events),
                },
            )
        ]
    rows, close = _fold(events)
    return [
        (
            _UPSERT_FROM_EV,
            {
                "seqs": ",".join(str(r["from_seq"]) for r in rows),
                "digests": ",".join(r["digest"] for r in rows),
                "tos": ",".join("" if r["to_seq"] is None else str(r["to_seq"]) for r in rows),
                "pos": ",".join(str(r["pos"]) for r in rows),
                "close": _closing(close),
            },
        )
    ]


PROJECTOR = Projector(
    name=NAME,
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("item_states",),
    apply=apply,
    keys={"item_states": "item_id, from_seq"},
    plan=plan,
    batch_plan=batch_plan,
    defer_indexes=True,
)
