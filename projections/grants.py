"""The ``grants`` read model: each principal's current persisted read/write/admin grants per scope.

Mode ``admin`` grants all three: an administrator of a scope may also read and write it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.projector import Projector

__all__ = ["apply"]

_GRANT = text(
    "INSERT INTO grants (principal, scope, can_read, can_write, can_admin, seq) VALUES (:p, :s, :r, :w, :a, :seq) "
    "ON CONFLICT (principal, scope) DO UPDATE SET can_read = grants.can_read OR EXCLUDED.can_read, "
    "can_write = grants.can_write OR EXCLUDED.can_write, can_admin = grants.can_admin OR EXCLUDED.can_admin, "
    "seq = EXCLUDED.seq"
)
_REVOKE = text("DELETE FROM grants WHERE principal = :p AND scope = :s")


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """A grant adds its mode(s) to the row; a revocation removes both (in log order)."""
    for e in events:
        d = e.data
        if e.type == "AccessGranted":
            mode = d["mode"]
            conn.execute(
                _GRANT,
                {
                    "p": d["principal"],
                    "s": d["scope"],
                    "r": mode in ("read", "readwrite", "admin"),
                    "w": mode in ("write", "readwrite", "admin"),
                    "a": mode == "admin",
                    "seq": e.seq,
                },
            )
        else:
            conn.execute(_REVOKE, {"p": d["principal"], "s": d["scope"]})


PROJECTOR = Projector(
    name="grants",
    handles=frozenset({"AccessGranted", "AccessRevoked"}),
    tables=("grants",),
    apply=apply,
    keys={"grants": "principal, scope"},
)
