"""The ``grant_states`` read model: every state of each (principal, scope) grant with the log interval it held in.

Beside ``grants`` (the live rows, read on every authorization): a grant or revocation at seq n closes the pair's
live state (``to_seq = n``) and a grant opens the next one, with the modes (admin included) the live row then has. The access policy
as of a log position S reads the states valid at S: ``from_seq <= S AND (to_seq IS NULL OR to_seq > S)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.projector import Projector

__all__ = ["NAME", "apply"]

NAME = "grant_states"

# One statement per event: close the pair's live state and (for a grant) open the next with the modes added.
_STEP = text(
    "WITH old AS (UPDATE grant_states SET to_seq = :seq WHERE principal = :p AND scope = :s AND to_seq IS NULL "
    "RETURNING can_read, can_write, can_admin) "
    "INSERT INTO grant_states (principal, scope, from_seq, to_seq, can_read, can_write, can_admin) "
    "SELECT :p, :s, :seq, NULL, coalesce((SELECT bool_or(can_read) FROM old), false) OR :r, "
    "coalesce((SELECT bool_or(can_write) FROM old), false) OR :w, "
    "coalesce((SELECT bool_or(can_admin) FROM old), false) OR :a WHERE :grant"
)


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Each grant or revocation in log order (they are few: one statement each)."""
    for e in events:
        d = e.data
        granted = e.type == "AccessGranted"
        mode = d.get("mode") if granted else None
        conn.execute(
            _STEP,
            {
                "p": d["principal"],
                "s": d["scope"],
                "seq": e.seq,
                "r": mode in ("read", "readwrite", "admin"),
                "w": mode in ("write", "readwrite", "admin"),
                "a": mode == "admin",
                "grant": granted,
            },
        )


PROJECTOR = Projector(
    name=NAME,
    handles=frozenset({"AccessGranted", "AccessRevoked"}),
    tables=("grant_states",),
    apply=apply,
    keys={"grant_states": "principal, scope, from_seq"},
)
