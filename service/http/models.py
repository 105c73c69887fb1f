"""The HTTP edge's request and response models (Pydantic lives here and nowhere else in the service)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "AnswerOut",
    "ApproveIn",
    "AskIn",
    "AssimilateIn",
    "BeliefOut",
    "Change",
    "ContextIn",
    "ContextOut",
    "DecisionOut",
    "EventOut",
    "EventPage",
    "EvidenceIn",
    "Health",
    "HistoryOut",
    "Hit",
    "IngestOut",
    "ItemIn",
    "ItemOut",
    "ItemPage",
    "ItemPatch",
    "Kind",
    "MergeIn",
    "PROBLEM_RESPONSES",
    "PathText",
    "Problem",
    "ProposeIn",
    "ProposeOut",
    "PublishIn",
    "PublishOut",
    "RejectIn",
    "RetrieveIn",
    "RetrieveOut",
    "RevisionOut",
    "ScopeQuery",
    "SearchIn",
    "SearchOut",
    "Text",
    "Updated",
    "VerifyOut",
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


Text = Annotated[str, AfterValidator(storable)]
# Path and query strings go through the same check.
PathText = Annotated[str, Path(max_length=1024), AfterValidator(storable)]
ScopeQuery = Annotated[str | None, Query(max_length=512), AfterValidator(storable)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    409: _problem("A concurrent writer won, or nothing is pending"),
    422: _problem("Invalid input (the detail names the field and the reason)"),
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
    payload: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, Any] = Field(default_factory=dict)
    scope: Text | None = None
    tags: list[Text] = Field(default_factory=list)
    links: list[Text] = Field(default_factory=list)
    derived_from: list[Text] = Field(default_factory=list)
    secret_policy: SecretPolicy | None = None


class ItemPatch(_In):
    """Fields to change (omitted fields are kept); moving ``scope`` needs write access to both scopes."""

    kind: Kind | None = None
    text: Text | None = None
    payload: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    scope: Text | None = None
    tags: list[Text] | None = None
    links: list[Text] | None = None
    derived_from: list[Text] | None = None
    secret_policy: SecretPolicy | None = None


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


# ----------------------------------------------------------------- search family
class SearchIn(_In):
    query: Text
    k: int = Field(5, ge=0, le=MAX_K)
    kind: Kind | None = None
    scope: Text | None = None


class Hit(BaseModel):
    item: ItemOut
    score: float


class SearchOut(BaseModel):
    hits: list[Hit]
    as_of: int | None = None


class RetrieveIn(_In):
    query: Text
    k: int = Field(8, ge=0, le=MAX_K)
    kinds: list[Kind] | None = None
    weights: dict[str, float] | None = None
    diversify: bool = True
    scope: Text | None = None


class RetrieveOut(BaseModel):
    query: str
    hits: list[Hit]
    kinds: list[str]
    as_of: int | None = None


class ContextIn(_In):
    task: Text
    max_chars: int = Field(2000, ge=1, le=1_000_000)
    max_items: int = Field(20, ge=1, le=MAX_K)
    shape: Literal["passages", "brief", "features"] = "passages"
    kind: Kind | None = None
    scope: Text | None = None
    compress: bool = False


class ContextOut(BaseModel):
    """The rendered context (guaranteed to fit max_chars), its receipt, and the items it cites."""

    text: str
    packet: dict[str, Any]
    items: list[ItemOut]
    as_of: int | None = None


class AskIn(_In):
    question: Text
    k: int = Field(5, ge=1, le=100)
    max_chars: int = Field(2000, ge=1, le=1_000_000)
    hops: int = Field(1, ge=1, le=5)
    min_confidence: float = Field(0.1, ge=0.0, le=1.0, allow_inf_nan=False)
    scope: Text | None = None


class AnswerOut(BaseModel):
    """An extractive answer with citations, or an abstention (``answer`` null)."""

    question: str
    answer: str | None
    abstained: bool
    confidence: float
    note: str
    n_evidence: int
    citations: list[dict[str, Any]]
    as_of: int | None = None


# ----------------------------------------------------------------- sharing, governance, beliefs
class PublishIn(_In):
    ids: list[Text] = Field(min_length=1, max_length=10_000)
    to: Text = "public"
    from_scope: Text | None = None


class PublishOut(BaseModel):
    published: list[str]
    seq: int


class MergeIn(_In):
    keep: Text
    other: Text
    prefer: Literal["latest", "keep"] = "latest"
    confirm: bool = False


class ProposeIn(_In):
    ids: list[Text] = Field(min_length=1, max_length=10_000)
    to: Text


class ProposeOut(BaseModel):
    proposed: list[str]
    seq: int


class ApproveIn(_In):
    to: Text | None = None


class RejectIn(_In):
    reason: Text = ""


class DecisionOut(BaseModel):
    id: str
    status: Literal["approved", "rejected"]
    seq: int


class EvidenceIn(_In):
    source_id: Text | None = None
    tier: Text
    direction: Literal["+", "-"] = "+"
    weight: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    time: float | None = Field(None, allow_inf_nan=False)


class AssimilateIn(_In):
    claim: Text
    evidence: list[EvidenceIn] = Field(default_factory=list, max_length=1000)  # none: the belief at the prior
    scope: Text | None = None


class BeliefOut(BaseModel):
    id: str
    scope: str
    claim: dict[str, Any]
    credence: float
    evidence_history: list[dict[str, Any]]
    seq: int


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
    status: str
    seq: int
