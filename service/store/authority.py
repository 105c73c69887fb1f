"""What the write door reads to authorize a principal: its persisted standing (grants, admin grants, approver
grants), and the live scope, version and pending promotion of each item an append touches. The rules that decide
on them are service.domain.policy's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Engine

from projections.jsonutil import loads
from service.domain.policy import Pending, Standing
from service.store.database import reader

__all__ = ["Situation", "situation", "standing"]

# One round trip: the principal's grants and live approver scopes, and the touched items' scope, version and
# pending promotion (an item's latest proposal record, when it is pending).
_SITUATION = text(
    "SELECT "
    "(SELECT coalesce(jsonb_agg(jsonb_build_array(scope, can_read, can_write, can_admin)), '[]'::jsonb) "
    " FROM grants WHERE principal = :p)::text, "
    "(SELECT coalesce(jsonb_agg(scope), '[]'::jsonb) FROM (SELECT DISTINCT ON (scope) scope, revoked FROM approvers "
    " WHERE who = :p ORDER BY scope, seq DESC) a WHERE NOT revoked)::text, "
    "(SELECT coalesce(jsonb_object_agg(id, jsonb_build_array(scope, version)), '{}'::jsonb) FROM items "
    " WHERE id = ANY(CAST(:streams AS text[])))::text, "
    "(SELECT coalesce(jsonb_object_agg(item_id, jsonb_build_array(to_scope, by)), '{}'::jsonb) FROM ("
    " SELECT DISTINCT ON (item_id) item_id, status, to_scope, by FROM proposals "
    " WHERE item_id = ANY(CAST(:streams AS text[])) ORDER BY item_id, seq DESC) p WHERE status = 'pending')::text"
)


@dataclass(frozen=True)
class Situation:
    """A principal's standing, and the live state of the items an append touches."""

    standing: Standing
    live: dict[str, tuple[str, int]]  # item id -> (scope, stream version)
    pending: dict[str, Pending]  # item id -> its pending promotion


def situation(engine: Engine, principal: str, streams: Sequence[str], *, operator: str | None) -> Situation:
    """Read ``principal``'s standing and the state of ``streams`` (item ids) in one round trip."""
    with reader(engine).connect() as c:
        grants, approves, live, pending = c.execute(_SITUATION, {"p": principal, "streams": sorted(set(streams))}).one()
    rows = loads(grants)
    standing = Standing(
        principal,
        read=frozenset(s for s, r, _w, _a in rows if r),
        write=frozenset(s for s, _r, w, _a in rows if w),
        admin=frozenset(s for s, _r, _w, a in rows if a),
        approve=frozenset(loads(approves)),
        operator=operator is not None and principal == operator,
    )
    return Situation(
        standing,
        {k: (v[0], int(v[1])) for k, v in loads(live).items()},
        {k: Pending(v[0], v[1]) for k, v in loads(pending).items()},
    )


def standing(engine: Engine, principal: str, *, operator: str | None) -> Standing:
    """``principal``'s standing alone."""
    return situation(engine, principal, (), operator=operator).standing
