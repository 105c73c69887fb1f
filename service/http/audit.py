"""Forensic routes: the caller's visible part of the event log, and the verification report."""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import AfterValidator

from service.http.auth import CallerDep
from service.http.errors import problem_response
from service.http.items import AsOf
from service.http.models import PROBLEM_RESPONSES, EventOut, EventPage, VerifyOut, storable
from service.http.views import check_position, parse_as_of
from service.store.audit import verify_store
from service.store.timetravel import resolve_position

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
    check_position(caller.live, at)
    until = None if at is None else resolve_position(caller.live.events, at)
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


# One verification at a time per server process: each is a chain walk and a rebuild of every read model, so
# callers asking at once would multiply that work; the ones who find one running are told to come back.
_verifying = threading.Lock()
_RETRY_AFTER = "10"


@router.get(
    "/audit/verify",
    response_model=VerifyOut,
    summary="Verify the chain and the read models",
    responses={429: {**PROBLEM_RESPONSES[409], "description": "A verification is already running; retry later"}},
)
def verify(caller: CallerDep) -> VerifyOut | JSONResponse:
    """Re-walk the hash chain and compare each read model with a replay; the verdict only, per table "match".

    Row counts, digests and the chain head describe every scope's activity, so they stay with the operator's
    ``substrate verify --json``; a team sees whether the store is intact and where it broke. While one
    verification runs, another request gets 429 with Retry-After (each is a full rebuild's worth of work).
    """
    if not _verifying.acquire(blocking=False):
        return problem_response(
            429,
            "a verification is already running on this server; retry when it has finished",
            headers={"Retry-After": _RETRY_AFTER},
        )
    try:
        full = verify_store(caller.live).as_dict()
    finally:
        _verifying.release()
    chain = {k: full["chain"][k] for k in ("ok", "first_bad_seq", "reason")}
    tables = {name: {"match": t["match"]} for name, t in full["projections"].items()}
    return VerifyOut(ok=full["ok"], chain=chain, projections=tables)
