"""The HTTP edge's request and response models and their field types (Pydantic lives here, in the route families'
service.http.adminmodels, sharemodels and searchmodels, and nowhere else in the service)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

__all__ = [
    "MAX_K",
    "Count",
    "In",
    "JSON_VALUE_SCHEMA",
    "NO_NUL",
    "Change",
    "EventOut",
    "EventPage",
    "Health",
    "HistoryOut",
    "IngestOut",
    "ItemIn",
    "ItemOut",
    "ItemPage",
    "ItemPatch",
    "Kind",
    "Name",
    "PROBLEM_RESPONSES",
    "PathText",
    "Problem",
    "RevisionOut",
    "ScopeQuery",
    "Text",
    "Updated",
    "VerifyOut",
    "Weight",
    "Written",
    "storable",
]

MAX_K = 1000
Kind = Literal["text", "record", "image", "signal", "graph", "field", "event_stream", "artifact", "trace", "context"]
SecretPolicy = Literal["redact", "reject"]


def storable(value: str | None) -> str | None:
    """Strings that reach SQL must be storable text: no NUL, no lone surrogate (422 otherwise)."""
    if value is None:
        return None
    if "\x00" in value:
        raise ValueError("NUL characters cannot be stored or searched")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid UTF-8 (a lone surrogate)") from None
    return value


# What the document says of strings, as the service checks them (storable): no NUL. (Lone surrogates cannot be
# said in a pattern portably; JSON producers do not make them.)
NO_NUL = r"^[^\x00]*$"
Text = Annotated[str, StringConstraints(pattern=NO_NUL), AfterValidator(storable)]
# A name the service requires to hold something besides whitespace (scopes, queries, questions, claims): the
# document states it, so a client and a fuzzer know "" and "  " are refused before sending them.
_NAME = r"^[^\x00]*[^\s\x00][^\x00]*$"
Name = Annotated[str, StringConstraints(min_length=1, pattern=_NAME), AfterValidator(storable)]
# An id a field refers to (links, derived_from): any non-empty string.
Ref = Annotated[str, StringConstraints(min_length=1, pattern=NO_NUL), AfterValidator(storable)]
# Path and query strings go through the same check.
PathText = Annotated[str, Path(max_length=1024, pattern=NO_NUL), AfterValidator(storable)]
ScopeQuery = Annotated[str | None, Query(max_length=512, pattern=_NAME), AfterValidator(storable)]
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


def _whole_number(value: Any) -> Any:
    """A count may be written 5 or 5.0 (JSON does not tell them apart); never true, "5" or 5.5."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Count = Annotated[int, BeforeValidator(_whole_number)]
# Any JSON value whose strings (keys too) hold no NUL: what payload and provenance may hold. Its schema is the
# JsonValue component of the document (see JSON_VALUE_SCHEMA, added by create_app).
JSON_VALUE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        },
    ]
}
JsonObject = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        }
    ),
]


class In(BaseModel):
    """A request body: unknown fields are refused (422), never ignored."""

    # strict: a JSON true is not the number 1, 2.0 is not the count 2, a number is not a string.
    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")


_In = In


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "description": description, "content": {"application/problem+json": {}}}


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _problem("Malformed request (bad JSON, bad cursor)"),
    401: _problem("Missing, unknown or revoked bearer token"),
    403: _problem("The scope is readable but not writable by this principal"),
    404: _problem("No such item (or not in a scope this principal may read)"),
    409: _problem("A concurrent writer won, nothing is pending, or the stored state does not allow it"),
    413: _problem("The request body is larger than the server's limit (serve --max-body)"),
    422: _problem("Invalid input (the detail names the field and the reason)"),
    503: _problem("The database is unreachable; retry after the Retry-After header's seconds"),
}


# ----------------------------------------------------------------- items
class ItemOut(BaseModel):
    """A stored item (secrets already redacted by the store)."""

    id: str
    kind: str
    text: str
    payload: dict[str, Any]
    provenance: dict[str, Any]
    scope: str
    tags: list[str]
    links: list[str]
    derived_from: list[str]
    created_at: float | str  # a number, or "NaN" / "Infinity" / "-Infinity" for a non-finite stored time


class ItemIn(_In):
    """A new item; ``scope`` defaults to the caller's home scope, the id is assigned by the server."""

    kind: Kind
    text: Text = ""
    payload: JsonObject = Field(default_factory=dict)
    provenance: JsonObject = Field(default_factory=dict)
    scope: Name | None = None
    tags: list[Text] = Field(default_factory=list)
    links: list[Ref] = Field(default_factory=list)
    derived_from: list[Ref] = Field(default_factory=list)
    secret_policy: SecretPolicy | None = None


# Omitted means "keep"; null is not a value of any of these fields, so the document does not offer it.
class ItemPatch(_In):
    """Fields to change (at least one; omitted fields are kept); moving ``scope`` needs write access to both
    scopes."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [name]}
                for name in ("kind", "text", "payload", "provenance", "scope", "tags", "links", "derived_from")
            ]
        }
    )

    kind: Kind = None  # type: ignore[assignment]
    text: Text = None  # type: ignore[assignment]
    payload: JsonObject = None  # type: ignore[assignment]
    provenance: JsonObject = None  # type: ignore[assignment]
    scope: Name = None  # type: ignore[assignment]
    tags: list[Text] = None  # type: ignore[assignment]
    links: list[Ref] = None  # type: ignore[assignment]
    derived_from: list[Ref] = None  # type: ignore[assignment]
    secret_policy: SecretPolicy = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _something_to_change(self) -> ItemPatch:
        if not self.model_fields_set - {"secret_policy"}:
            raise ValueError("nothing to change: send at least one field")
        return self


class Written(BaseModel):
    """The written item's id and the log position of the write."""

    id: str
    seq: int


class Updated(BaseModel):
    """The item's new state and the log position of the write."""

    item: ItemOut
    seq: int


class ItemPage(BaseModel):
    """One page of items in insertion order; pass ``next_cursor`` back as ``cursor`` for the next page."""

    items: list[ItemOut]
    next_cursor: str | None
    as_of: int | None = None


class Change(BaseModel):
    """One event on an item's stream: who did what, when, and the content digest of the resulting state."""

    seq: int
    type: str
    principal: str
    recorded_at: str | None
    scope: str | None
    fields: list[str] | None = None
    digest: str | None = None
    event_id: str


class HistoryOut(BaseModel):
    """Every visible change of an item plus its publish/merge history (with revision digests)."""

    item_id: str
    changes: list[Change]
    shares: list[dict[str, Any]]
    as_of: int | None = None


class RevisionOut(BaseModel):
    """The full item state recorded under a content digest."""

    digest: str
    item: dict[str, Any]


class IngestOut(BaseModel):
    """The ingest receipt: counts, every failed line with its reason, the source label and the last position.

    ``unchanged`` lines were already stored with the same content: nothing was appended for them."""

    ingested: int
    new: int
    revised: int
    unchanged: int
    failed: int
    failures: list[dict[str, Any]]
    position: int
    source: str


# ----------------------------------------------------------------- audit
class EventOut(BaseModel):
    seq: int
    stream: str
    version: int
    type: str
    data: dict[str, Any]
    principal: str
    scope: str | None
    recorded_at: str | None
    event_id: str
    prev: str | None
    hash_version: int = Field(description="2: recorded_at is under event_id; 1: an event written before it was")


class EventPage(BaseModel):
    """Events in seq order; pass ``next_after`` back as ``after`` for the next page (null: no more now)."""

    events: list[EventOut]
    next_after: int | None


class VerifyOut(BaseModel):
    """The verdict of ``substrate verify`` without counts or digests (they would reveal other teams' activity)."""

    ok: bool
    chain: dict[str, Any]
    projections: dict[str, Any]


class Health(BaseModel):
    """Liveness only: nothing about the store's content or activity (no token is needed to ask)."""

    status: Literal["ok"]
