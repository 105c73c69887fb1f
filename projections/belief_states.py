"""The ``belief_states`` read model: every state of each belief (scope, credence) with the log interval it held in.

Beside ``beliefs`` (the live rows): each belief row the ``beliefs`` projector writes at seq n opens a state here and
closes the one before it (``to_seq = n``); each row it deletes closes the live state. Beliefs as of a log position
S are the states valid at S: ``from_seq <= S AND (to_seq IS NULL OR to_seq > S)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.beliefs import belief_changes
from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.projector import Projector, Statement, run_plan

__all__ = ["NAME", "apply", "plan"]

NAME = "belief_states"

_ON_CONFLICT = " ON CONFLICT (id, from_seq) DO UPDATE SET to_seq = EXCLUDED.to_seq"
# The live states the batch replaces or deletes, as rows that collide with them on the primary key (OFFSET 0: a
# probe of the key per row, never a scan; see projections.item_states).
_CLOSED = (
    "SELECT l.id, l.from_seq, c.seq, l.scope, l.credence "
    "FROM jsonb_to_recordset(CAST(:close AS jsonb)) AS c(id text, seq bigint) "
    "CROSS JOIN LATERAL (SELECT * FROM belief_states l WHERE l.id = c.id AND l.to_seq IS NULL OFFSET 0) l"
)
_UPSERT = (
    "INSERT INTO belief_states (id, from_seq, to_seq, scope, credence) "
    "SELECT u.id, u.from_seq, u.to_seq, u.scope, u.credence FROM jsonb_to_recordset(CAST(:rows AS jsonb)) "
    "AS u(id text, from_seq bigint, to_seq bigint, scope text, credence float8) UNION ALL " + _CLOSED + _ON_CONFLICT
)

_UNSEEN: Any = object()


def plan(events: Sequence[Any]) -> list[Statement]:
    """One upsert: the batch's new states (with the to_seq of those it also replaces) and the closing of the live
    states from before the batch that it replaces or drops."""
    rows: list[dict[str, Any]] = []
    last: dict[str, Any] = {}  # the belief's latest state in this batch (None: dropped)
    close: dict[str, int] = {}
    for e in events:
        for op, value in belief_changes(e):
            i = value["id"] if op == "put" else value
            prev = last.get(i, _UNSEEN)
            if prev is _UNSEEN:
                close.setdefault(i, e.seq)
            elif prev is not None:
                prev["to_seq"] = e.seq
            if op == "put":
                last[i] = {
                    "id": i,
                    "from_seq": e.seq,
                    "to_seq": None,
                    "scope": value["scope"],
                    "credence": value["credence"],
                }
                rows.append(last[i])
            else:
                last[i] = None
    if not rows and not close:
        return []
    closing = [{"id": i, "seq": seq} for i, seq in close.items()]
    return [(_UPSERT, {"rows": dumps(rows), "close": dumps(closing)})]


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Open and close belief states as the ``beliefs`` projector writes and deletes rows."""
    run_plan(conn, plan(events))


PROJECTOR = Projector(
    name=NAME,
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("belief_states",),
    apply=apply,
    keys={"belief_states": "id, from_seq"},
    plan=plan,
)
