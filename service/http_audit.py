"""Forensic routes: the caller's visible part of the event log, and the verification report."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from service.audit import verify_store
from service.http_auth import CallerDep
from service.http_items import AsOf
from service.http_models import EventOut, EventPage, VerifyOut, storable
from service.http_views import parse_as_of
from service.timetravel import resolve_position

__all__ = ["router"]

router = APIRouter(tags=["audit"])


@router.get("/events", response_model=EventPage, summary="The caller's visible part of the event log")
def events(
    caller: CallerDep,
    after: Annotated[int, Query(ge=0, le=2**62, description="only events with seq greater than this")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    stream: Annotated[
        str | None, Query(max_length=512, description="only this stream (an item id, ...)"), AfterValidator(storable)
    ] = None,
    event_type: Annotated[
        str | None, Query(alias="type", max_length=128, description="e.g. ItemUpdated"), AfterValidator(storable)
    ] = None,
    as_of: AsOf = None,
) -> EventPage:
    """Events whose scope the caller may read, in seq order (filtered and paged in SQL); ``as_of`` ends the log there."""
    at = parse_as_of(as_of)
    until = None if at is None else resolve_position(caller.live, at)
    rows = list(
        caller.live.events.read(
            since=after,
            until=until,
            stream=stream,
            types=[event_type] if event_type else None,
            limit=limit,
            batch=limit,
            scopes=caller.readable,
        )
    )
    page = [EventOut(**e.as_dict()) for e in rows]
    return EventPage(events=page, next_after=rows[-1].seq if len(rows) == limit else None)


@router.get("/audit/verify", response_model=VerifyOut, summary="Verify the chain and the read models")
def verify(caller: CallerDep) -> VerifyOut:
    """Re-walk the hash chain and compare each read model with a replay; the verdict only, per table "match".

    Row counts, digests and the chain head describe every scope's activity, so they stay with the operator's
    ``substrate verify --json``; a team sees whether the store is intact and where it broke.
    """
    full = verify_store(caller.live).as_dict()
    chain = {k: full["chain"][k] for k in ("ok", "first_bad_seq", "reason")}
    tables = {name: {"match": t["match"]} for name, t in full["projections"].items()}
    return VerifyOut(ok=full["ok"], chain=chain, projections=tables)
