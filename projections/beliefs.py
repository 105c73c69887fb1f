"""The ``beliefs`` read model: every live belief item with its credence and evidence trail, one row each.

A belief is a ``record`` item tagged ``belief``. Its credence is computed here from its evidence trail
(projections.credence: the model-assertion cap included), never copied from the item; the trail is the one the
evidence commands decided (the write door keeps it on a belief that is put or updated: ``with_trail``). The fold
never re-resolves a source nor reads the clock, so a rebuild reproduces every credence exactly.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.credence import credence
from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.projector import Projector, Statement

__all__ = ["BELIEF_TAG", "apply", "belief_changes", "belief_row", "claim_key", "is_belief", "with_trail"]

BELIEF_TAG = "belief"

_UPSERT_SQL = (
    "INSERT INTO beliefs (id, scope, claim_key, claim, credence, evidence, sources, version, pos, seq) "
    "VALUES (:id, :scope, :claim_key, CAST(:claim AS jsonb), :credence, CAST(:evidence AS jsonb), "
    "CAST(:sources AS text[]), :version, :seq, :seq) "
    "ON CONFLICT (id) DO UPDATE SET scope = EXCLUDED.scope, claim_key = EXCLUDED.claim_key, "
    "claim = EXCLUDED.claim, credence = EXCLUDED.credence, evidence = EXCLUDED.evidence, "
    "sources = EXCLUDED.sources, version = EXCLUDED.version, seq = EXCLUDED.seq"
)
_DELETE_SQL = "DELETE FROM beliefs WHERE id = ANY(CAST(:ids AS text[]))"
_UPSERT = text(_UPSERT_SQL)
_DELETE = text(_DELETE_SQL)


def claim_key(claim_text: str) -> str:
    """The normalized claim text a belief is keyed on within its scope (NFKC, casefolded, single-spaced)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", claim_text).casefold())
    return " ".join(folded.split())


def is_belief(item: dict[str, Any]) -> bool:
    """Whether an item state (its JSON form) is a belief: a ``record`` tagged ``belief``."""
    return item.get("kind") == "record" and BELIEF_TAG in (item.get("tags") or [])


def with_trail(item: dict[str, Any], trail: list[Any]) -> dict[str, Any]:
    """A belief item state carrying ``trail`` as its evidence and the credence computed from it (whatever its
    payload said of either); any other item as it is."""
    payload = item.get("payload")
    if not is_belief(item) or not isinstance(payload, dict):
        return item
    return {**item, "payload": {**payload, "evidence_history": trail, "credence": credence(trail)}}


def belief_row(item: dict[str, Any]) -> dict[str, Any] | None:
    """The row for an item state, its credence computed from its trail, or None when it is not a well-formed
    belief (what the payload says of its credence is ignored)."""
    tags = item.get("tags") or []
    payload = item.get("payload")
    if item.get("kind") != "record" or BELIEF_TAG not in tags or not isinstance(payload, dict):
        return None
    claim = payload.get("claim")
    trail = payload.get("evidence_history")
    if not isinstance(claim, dict) or not isinstance(claim.get("text"), str) or not isinstance(trail, list):
        return None
    sources: list[str] = []
    for entry in trail:
        source = entry.get("source_id") if isinstance(entry, dict) else None
        if isinstance(source, str) and source and source not in sources:
            sources.append(source)
    return {
        "id": item["id"],
        "scope": item["scope"],
        "claim_key": claim_key(claim["text"]),
        "claim": dumps(claim),
        "credence": credence(trail),
        "evidence": dumps(trail),
        "sources": sources,
    }


def belief_changes(e: Any) -> list[tuple[str, Any]]:
    """What event ``e`` does to the beliefs, in order: ("put", row) or ("drop", id). The one rule both the
    ``beliefs`` and ``belief_states`` projectors follow, so the live rows and the states agree."""
    changes: list[tuple[str, Any]] = []
    item = e.data.get("item")
    if item is not None:
        row = belief_row(item)
        if row is not None:
            changes.append(("put", row))
        elif e.version > 1:
            # An item that stopped being a belief (retagged, re-kinded, malformed) leaves the read model;
            # a stream's first event cannot have a row to remove, which keeps bulk puts cheap.
            changes.append(("drop", item["id"]))
    if e.type == "ItemsMerged" and e.data.get("removed"):
        changes.append(("drop", e.data["removed"]))
    if e.type == "ItemRemoved":
        changes.append(("drop", e.data["id"]))
    return changes


def _ops(events: Sequence[Any]) -> list[tuple[str, Any]]:
    return [
        ("upsert", {**value, "version": e.version, "seq": e.seq}) if change == "put" else ("delete", value)
        for e in events
        for change, value in belief_changes(e)
    ]


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Upsert belief states, delete rows of items that were removed or are no longer beliefs (in order)."""
    ops = _ops(events)
    i = 0
    while i < len(ops):
        kind = ops[i][0]
        j = i
        while j < len(ops) and ops[j][0] == kind:
            j += 1
        batch = [p for _, p in ops[i:j]]
        if kind == "upsert":
            conn.execute(_UPSERT, batch)
        else:
            conn.execute(_DELETE, {"ids": batch})
        i = j


def plan(events: Sequence[Any]) -> list[Statement] | None:
    """The statements of ``apply`` for one event (None for a batch: ``apply`` groups its upserts)."""
    ops = _ops(events)
    if len(events) > 1 and ops:
        return None
    return [(_UPSERT_SQL, params) if kind == "upsert" else (_DELETE_SQL, {"ids": [params]}) for kind, params in ops]


PROJECTOR = Projector(
    name="beliefs",
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("beliefs",),
    apply=apply,
    keys={"beliefs": "id"},
    plan=plan,
)
