"""The ``beliefs`` read model: every live belief item with its credence and evidence trail, one row each.

A belief is a ``record`` item tagged ``belief``. Its trail is what the evidence commands decided: an
``EvidenceAssimilated`` or ``EvidenceRetracted`` event carries the belief's whole trail (built on the row it read,
under a version check), and its credence is computed here from that trail (projections.credence: the
model-assertion cap included), never copied from the item. Any other event on a belief (a put, an update, a
publish) changes its claim or scope and keeps its trail and credence: a new belief starts from an empty trail at
0.5, whatever credence or trail its payload claims. The fold never re-resolves a source nor reads the clock, so a
rebuild reproduces every credence exactly.
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

__all__ = ["BELIEF_TAG", "EVIDENCE_EVENTS", "apply", "belief_row", "claim_key"]

BELIEF_TAG = "belief"
# The events that decide a belief's evidence: the only ones whose trail the read model takes.
EVIDENCE_EVENTS = frozenset({"EvidenceAssimilated", "EvidenceRetracted"})

_UPSERT_SQL = (
    "INSERT INTO beliefs (id, scope, claim_key, claim, credence, evidence, sources, version, pos, seq) "
    "VALUES (:id, :scope, :claim_key, CAST(:claim AS jsonb), :credence, CAST(:evidence AS jsonb), "
    "CAST(:sources AS text[]), :version, :seq, :seq) "
    "ON CONFLICT (id) DO UPDATE SET scope = EXCLUDED.scope, claim_key = EXCLUDED.claim_key, "
    "claim = EXCLUDED.claim, credence = EXCLUDED.credence, evidence = EXCLUDED.evidence, "
    "sources = EXCLUDED.sources, version = EXCLUDED.version, seq = EXCLUDED.seq"
)
# Any other event on a belief: its claim and scope, the trail and credence it had (a new one: empty, 0.5).
_CLAIM_SQL = (
    "INSERT INTO beliefs (id, scope, claim_key, claim, credence, evidence, sources, version, pos, seq) "
    "VALUES (:id, :scope, :claim_key, CAST(:claim AS jsonb), :credence, CAST(:evidence AS jsonb), "
    "CAST(:sources AS text[]), :version, :seq, :seq) "
    "ON CONFLICT (id) DO UPDATE SET scope = EXCLUDED.scope, claim_key = EXCLUDED.claim_key, "
    "claim = EXCLUDED.claim, version = EXCLUDED.version, seq = EXCLUDED.seq"
)
_DELETE_SQL = "DELETE FROM beliefs WHERE id = ANY(CAST(:ids AS text[]))"
_UPSERT = text(_UPSERT_SQL)
_CLAIM = text(_CLAIM_SQL)
_DELETE = text(_DELETE_SQL)
_SQL = {"upsert": _UPSERT_SQL, "claim": _CLAIM_SQL}
_STATEMENTS = {"upsert": _UPSERT, "claim": _CLAIM}


def claim_key(claim_text: str) -> str:
    """The normalized claim text a belief is keyed on within its scope (NFKC, casefolded, single-spaced)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", claim_text).casefold())
    return " ".join(folded.split())


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


_NO_EVIDENCE = {"credence": credence([]), "evidence": "[]", "sources": []}


def _ops(events: Sequence[Any]) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for e in events:
        item = e.data.get("item")
        if item is not None:
            row = belief_row(item)
            if row is None:
                if e.version > 1:
                    # An item that stopped being a belief (retagged, re-kinded, malformed) leaves the read model;
                    # a stream's first event cannot have a row to remove, which keeps bulk puts cheap.
                    ops.append(("delete", item["id"]))
            elif e.type in EVIDENCE_EVENTS:
                ops.append(("upsert", {**row, "version": e.version, "seq": e.seq}))
            else:
                ops.append(("claim", {**row, **_NO_EVIDENCE, "version": e.version, "seq": e.seq}))
        if e.type == "ItemsMerged" and e.data.get("removed"):
            ops.append(("delete", e.data["removed"]))
        if e.type == "ItemRemoved":
            ops.append(("delete", e.data["id"]))
    return ops


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
        if kind == "delete":
            conn.execute(_DELETE, {"ids": batch})
        else:
            conn.execute(_STATEMENTS[kind], batch)
        i = j


def plan(events: Sequence[Any]) -> list[Statement] | None:
    """The statements of ``apply`` for one event (None for a batch: ``apply`` groups its upserts)."""
    ops = _ops(events)
    if len(events) > 1 and ops:
        return None
    return [(_DELETE_SQL, {"ids": [params]}) if kind == "delete" else (_SQL[kind], params) for kind, params in ops]


PROJECTOR = Projector(
    name="beliefs",
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("beliefs",),
    apply=apply,
    keys={"beliefs": "id"},
    plan=plan,
)
