"""Team records (share history, revisions, grants, approvers, proposals, beliefs), live or as of a log position.

The append-only read models (``item_history``, ``revisions``, ``approvers``, ``proposals``) hold as of S the rows
written by events up to S. The mutable ones keep their states with validity intervals beside the live tables
(``grant_states``, ``belief_states``, ``item_states``: valid at S when ``from_seq <= S AND (to_seq IS NULL OR
to_seq > S)``). Every function takes a connection and ``at`` (None: live) and reads, never writes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from service.store.reads import VALID_AT

__all__ = [
    "access_rows",
    "approvers",
    "belief_bounds",
    "beliefs_among",
    "grant",
    "grants",
    "granted_readable",
    "latest_proposal",
    "pending_proposals",
    "proposal_entries",
    "revision_doc",
    "share_history",
]

# ``:at`` None reads everything (live), else the rows written at or before it.
_UPTO = "(CAST(:at AS bigint) IS NULL OR {seq} <= :at)"
_SHARE_HISTORY = (
    "SELECT entry::text, seq, recorded_at FROM item_history WHERE item_id = :id AND "
    + _UPTO.format(seq="seq")
    + " ORDER BY seq"
)
_REVISION = "SELECT doc::text FROM revisions WHERE digest = :d AND " + _UPTO.format(seq="seq")
_APPROVERS = (
    "SELECT a.who, a.scope, a.by, a.bootstrap, extract(epoch FROM e.recorded_at)::float8, a.revoked "
    "FROM approvers a JOIN public.events e ON e.seq = a.seq WHERE " + _UPTO.format(seq="a.seq") + " ORDER BY a.seq"
)
_PROPOSALS = "SELECT entry::text, seq, item_digest FROM proposals WHERE item_id = :id AND " + _UPTO.format(seq="seq")
_PENDING = (
    "SELECT i.doc::text FROM proposals p JOIN items i ON i.id = p.item_id "
    "WHERE p.status = 'pending' AND (CAST(:to AS text) IS NULL OR p.to_scope = :to) "
    "AND NOT EXISTS (SELECT 1 FROM proposals q WHERE q.item_id = p.item_id AND q.seq > p.seq) ORDER BY p.seq"
)
# As of :at: the latest entry up to :at is pending, and the item exists then (its state valid at :at).
_PENDING_AT = (
    "SELECT r.doc::text FROM proposals p JOIN item_states s ON s.item_id = p.item_id AND "
    + VALID_AT
    + " JOIN revisions r ON r.digest = s.digest "
    "WHERE p.seq <= :at AND p.status = 'pending' AND (CAST(:to AS text) IS NULL OR p.to_scope = :to) "
    "AND NOT EXISTS (SELECT 1 FROM proposals q WHERE q.item_id = p.item_id AND q.seq > p.seq AND q.seq <= :at) "
    "ORDER BY p.seq"
)
_GRANT = "SELECT can_read, can_write FROM grants WHERE principal = :p AND scope = :s"
_GRANT_AT = f"SELECT can_read, can_write FROM grant_states s WHERE principal = :p AND scope = :s AND {VALID_AT}"
_READABLE = "SELECT scope FROM grants WHERE principal = :p AND can_read AND scope = ANY(CAST(:s AS text[]))"
_READABLE_AT = (
    "SELECT scope FROM grant_states s WHERE principal = :p AND can_read AND scope = ANY(CAST(:s AS text[])) "
    f"AND {VALID_AT}"
)
_GRANTS = "SELECT principal, scope, can_read, can_write FROM grants ORDER BY principal, scope"
_GRANTS_AT = (
    f"SELECT principal, scope, can_read, can_write FROM grant_states s WHERE {VALID_AT} ORDER BY principal, scope"
)
# The grants (optionally on one scope) with every mode, live or as of :at: (principal, scope, r, w, admin, seq).
_ACCESS = (
    "SELECT principal, scope, can_read, can_write, can_admin, seq FROM grants "
    "WHERE CAST(:scope AS text) IS NULL OR scope = :scope ORDER BY scope, principal"
)
_ACCESS_AT = (
    "SELECT principal, scope, can_read, can_write, can_admin, from_seq FROM grant_states s "
    f"WHERE (CAST(:scope AS text) IS NULL OR scope = :scope) AND {VALID_AT} ORDER BY scope, principal"
)
_BELIEF_BOUNDS = (
    "SELECT count(*), max(credence) FROM {source} WHERE credence >= :floor AND NOT (id = ANY(CAST(:skip AS text[])))"
)
_BELIEFS_AMONG = "SELECT id FROM {source} WHERE id = ANY(CAST(:ids AS text[])) AND credence >= :floor"


@functools.lru_cache(maxsize=64)
def _sql(sql: str) -> Any:
    return text(sql)


def share_history(c: Connection, item_id: str, at: int | None = None) -> Sequence[Any]:
    """The item's publish/merge entries (entry json, seq, recorded_at), oldest first."""
    return c.execute(_sql(_SHARE_HISTORY), {"id": item_id, "at": at}).all()


def revision_doc(c: Connection, digest: str, at: int | None = None) -> str | None:
    """The item state recorded under ``digest`` (json), if an event up to ``at`` recorded it."""
    doc = c.execute(_sql(_REVISION), {"d": digest, "at": at}).scalar()
    return None if doc is None else str(doc)


def approvers(c: Connection, at: int | None = None) -> Sequence[Any]:
    """Every approver grant and revocation (who, scope, by, bootstrap, granted_at epoch, revoked) in log order."""
    return c.execute(_sql(_APPROVERS), {"at": at}).all()


def proposal_entries(c: Connection, item_id: str, at: int | None = None) -> Sequence[Any]:
    """The item's proposal entries (entry json, seq, item digest), oldest first."""
    return c.execute(_sql(_PROPOSALS + " ORDER BY seq"), {"id": item_id, "at": at}).all()


def latest_proposal(c: Connection, item_id: str, at: int | None = None) -> Any:
    """The item's latest proposal entry (entry json, seq, item digest), or None."""
    return c.execute(_sql(_PROPOSALS + " ORDER BY seq DESC LIMIT 1"), {"id": item_id, "at": at}).first()


def pending_proposals(c: Connection, to: str | None, at: int | None = None) -> list[str]:
    """The documents of the items awaiting approval (to ``to`` when given), in proposal order."""
    if at is None:
        return [r[0] for r in c.execute(_sql(_PENDING), {"to": to})]
    return [r[0] for r in c.execute(_sql(_PENDING_AT), {"to": to, "at": at})]


def grant(c: Connection, principal: str, scope: str, at: int | None = None) -> tuple[bool, bool]:
    """The persisted (can_read, can_write) of ``principal`` on ``scope``."""
    if at is None:
        row = c.execute(_sql(_GRANT), {"p": principal, "s": scope}).first()
    else:
        row = c.execute(_sql(_GRANT_AT), {"p": principal, "s": scope, "at": at}).first()
    return (False, False) if row is None else (bool(row[0]), bool(row[1]))


def granted_readable(c: Connection, principal: str, scopes: Sequence[str], at: int | None = None) -> list[str]:
    """Those of ``scopes`` a persisted grant lets ``principal`` read."""
    params: dict[str, Any] = {"p": principal, "s": list(scopes)}
    if at is None:
        return [r[0] for r in c.execute(_sql(_READABLE), params)]
    return [r[0] for r in c.execute(_sql(_READABLE_AT), {**params, "at": at})]


def grants(c: Connection, at: int | None = None) -> Sequence[Any]:
    """Every persisted grant (principal, scope, can_read, can_write), ordered."""
    if at is None:
        return c.execute(_sql(_GRANTS)).all()
    return c.execute(_sql(_GRANTS_AT), {"at": at}).all()


def access_rows(c: Connection, scope: str | None, at: int | None = None) -> Sequence[Any]:
    """The grants (on ``scope``, or every one) as of ``at`` (None: live): principal, scope, read, write, admin and
    the seq of the grant that made the state."""
    if at is None:
        return c.execute(_sql(_ACCESS), {"scope": scope}).all()
    return c.execute(_sql(_ACCESS_AT), {"scope": scope, "at": at}).all()


def belief_bounds(
    c: Connection, floor: float, scope: str | None, skip: Sequence[str], at: int | None = None
) -> tuple[int, float]:
    """How many beliefs (in ``scope``, not in ``skip``) have credence >= ``floor``, and the highest credence."""
    source = "beliefs" if at is None else "belief_states"
    sql = _BELIEF_BOUNDS.format(source=source)
    params: dict[str, Any] = {"floor": floor, "skip": list(skip)}
    if scope is not None:
        sql += " AND scope = :scope"
        params["scope"] = scope
    if at is not None:
        sql += " AND from_seq <= :at AND (to_seq IS NULL OR to_seq > :at)"
        params["at"] = at
    n, top = c.execute(_sql(sql), params).one()
    return int(n), float(top or 0.0)


def beliefs_among(c: Connection, ids: Sequence[str], floor: float, at: int | None = None) -> set[str]:
    """Those of ``ids`` that are beliefs with credence >= ``floor``."""
    sql = _BELIEFS_AMONG.format(source="beliefs" if at is None else "belief_states")
    params: dict[str, Any] = {"ids": list(ids), "floor": floor}
    if at is not None:
        sql += " AND from_seq <= :at AND (to_seq IS NULL OR to_seq > :at)"
        params["at"] = at
    return {r[0] for r in c.execute(_sql(sql), params)}
