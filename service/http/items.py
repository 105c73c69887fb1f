"""Item routes: create, read, change, remove, list (cursor pages), history and revisions."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from service.domain.events import item_digest
from service.domain.items import SubstrateItem
from service.http.auth import Caller, CallerDep
from service.http.errors import ProblemError, bad_request, not_found
from service.http.models import (
    Change,
    HistoryOut,
    ItemIn,
    ItemOut,
    ItemPage,
    ItemPatch,
    Kind,
    PathText,
    RevisionOut,
    ScopeQuery,
    Updated,
    Written,
)
from service.http.views import AS_OF_SCHEMA, read_view
from service.teams.sharing import history, revision

__all__ = ["AsOf", "item_out", "router"]


def _as_of_schema(schema: dict[str, Any]) -> None:
    description = schema.get("description")
    schema.clear()
    schema.update(AS_OF_SCHEMA, description=description)


AsOf = Annotated[
    str | None,
    Query(
        max_length=64,
        description="read the store as it was after this log position (a seq the log has reached; 404 beyond "
        "its head) or at this time (RFC 3339 / ISO 8601; UTC when it names no zone)",
        json_schema_extra=_as_of_schema,
    ),
]

router = APIRouter(tags=["items"])


def item_out(item: SubstrateItem) -> ItemOut:
    return ItemOut(**item.json_view())


# A cursor is the position after which the next page starts, as "c" and its hex digits (below 2**62): opaque to
# clients, and every string of that shape is a valid cursor, so the document states the shape exactly.
CURSOR_PATTERN = r"^c(?:[0-3][0-9a-f]{15}|[0-9a-f]{1,15})$"
_CURSOR = re.compile(CURSOR_PATTERN)


def _encode_cursor(pos: int | None) -> str | None:
    return None if pos is None else f"c{pos:x}"


def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not _CURSOR.fullmatch(cursor):
        raise bad_request("cursor is not one this API returned (pass next_cursor back unchanged)")
    return int(cursor[1:], 16)


def _require_scope_name(scope: str) -> str:
    if not scope.strip():
        raise ProblemError(422, "scope must be a non-empty string")
    return scope


@router.post("/items", status_code=201, response_model=Written, summary="Add an item")
def create_item(caller: CallerDep, body: ItemIn, response: Response) -> Written:
    """Add an item to ``scope`` (default: the caller's home scope); secrets are redacted or rejected first."""
    fields = body.model_dump(exclude={"secret_policy", "scope"})
    scope = _require_scope_name(body.scope if body.scope is not None else caller.name)
    caller.require_write_target(scope)
    item_id = caller.store.put(SubstrateItem(scope=scope, **fields), secret_policy=body.secret_policy)
    response.headers["Location"] = f"/v1/items/{item_id}"
    return Written(id=item_id, seq=caller.store.position)


@router.get("/items/{item_id}", response_model=ItemOut, summary="Read an item")
def get_item(caller: CallerDep, item_id: PathText, as_of: AsOf = None) -> ItemOut:
    """The item (as of ``as_of`` when given); 404 when missing or in a scope the caller cannot read."""
    with read_view(caller.live, as_of) as (view, _):
        item = view.get(item_id)
    if item is None or not caller.principal.can_read(item.scope):
        raise not_found(f"item {item_id!r} not found")
    return item_out(item)


def _readable(caller: Caller, item_id: str) -> None:
    """404 unless the item exists in a scope the caller reads (whether it may change it is the write door's call)."""
    item = caller.live.get(item_id)
    if item is None or not caller.principal.can_read(item.scope):
        raise not_found(f"item {item_id!r} not found")


@router.patch("/items/{item_id}", response_model=Updated, summary="Change an item")
def update_item(caller: CallerDep, item_id: PathText, body: ItemPatch) -> Updated:
    """Change the given fields (revalidated, secret-guarded); the caller must write the item's scope (and a new one)."""
    fields: dict[str, Any] = body.model_dump(exclude_unset=True, exclude={"secret_policy"})
    if not fields:
        raise ProblemError(422, "nothing to change: send at least one field")
    if "scope" in fields:
        new_scope = _require_scope_name(fields["scope"] or "")
        caller.require_write_target(new_scope)
    _readable(caller, item_id)
    item = caller.store.update(item_id, secret_policy=body.secret_policy, **fields)
    return Updated(item=item_out(item), seq=caller.store.position)


@router.delete("/items/{item_id}", response_model=Written, summary="Remove an item")
def delete_item(caller: CallerDep, item_id: PathText) -> Written:
    """Remove the item (an ItemRemoved event; its history and revisions stay in the log)."""
    _readable(caller, item_id)
    if not caller.store.remove(item_id):
        raise not_found(f"item {item_id!r} not found")
    return Written(id=item_id, seq=caller.store.position)


@router.get("/items", response_model=ItemPage, summary="List items (cursor pages)")
def list_items(
    caller: CallerDep,
    kind: Kind | None = None,
    scope: ScopeQuery = None,
    cursor: Annotated[
        str | None, Query(pattern=CURSOR_PATTERN, description="next_cursor of the previous page (400 otherwise)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    as_of: AsOf = None,
) -> ItemPage:
    """Readable items in insertion order, filtered (kind, scope) and paged in SQL."""
    after = _decode_cursor(cursor)
    if scope is not None:
        caller.require_read(scope, f"scope {scope!r}")
    scopes = [scope] if scope is not None else caller.readable
    with read_view(caller.live, as_of) as (view, seq):
        items, nxt = view.page_items(kind=kind, scopes=scopes, after=after, limit=limit)
    return ItemPage(items=[item_out(i) for i in items], next_cursor=_encode_cursor(nxt), as_of=seq)


@router.get("/history/{item_id}", response_model=HistoryOut, summary="Who changed an item, and when")
# The route this history had before it moved: kept for existing clients, left out of the OpenAPI document (a
# history that outlives its item is not a sub-resource of that item).
@router.get("/items/{item_id}/history", response_model=HistoryOut, include_in_schema=False)
def item_history(caller: CallerDep, item_id: PathText, as_of: AsOf = None) -> HistoryOut:
    """Every event on the item's stream the caller may see (who, when, digest), plus publish/merge history.

    Not under /v1/items/{id}: the history outlives the item (a removed item's history is still there)."""
    with read_view(caller.live, as_of) as (view, seq):
        events = list(caller.live.events.read(stream=item_id, until=seq))
        # The item's last known scope (also of one removed or merged away) decides whether it exists for us.
        if not events or events[-1].scope is None or not caller.principal.can_read(events[-1].scope):
            raise not_found(f"item {item_id!r} not found")
        shares = history(view, item_id)
    readable = caller.principal.readable
    changes = [
        Change(
            seq=e.seq,
            type=e.type,
            principal=e.principal,
            scope=e.scope,
            event_id=e.event_id,
            recorded_at=e.recorded_at.isoformat() if e.recorded_at else None,
            fields=e.data.get("fields"),
            digest=item_digest(e.data["item"]) if isinstance(e.data.get("item"), dict) else None,
        )
        for e in events
        if e.scope in readable
    ]
    shares = [s for s in shares if s.get("to") in readable or s.get("from") in readable]
    return HistoryOut(item_id=item_id, changes=changes, shares=shares, as_of=seq)


@router.get("/revisions/{digest}", response_model=RevisionOut, summary="A recorded item state by content digest")
def get_revision(caller: CallerDep, digest: PathText, as_of: AsOf = None) -> RevisionOut:
    """The complete item state recorded under ``digest`` (by then, with ``as_of``); 404 unless its scope is readable."""
    with read_view(caller.live, as_of) as (view, _):
        state = revision(view, digest)
    if state is None or not caller.principal.can_read(str(state.get("scope"))):
        raise not_found(f"revision {digest!r} not found")
    return RevisionOut(digest=digest, item=state)
