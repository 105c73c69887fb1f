"""The request and response models of the read routes over readable scopes: search, retrieve, context and ask."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from service.http.models import MAX_K, Count, In, ItemOut, Kind, Name, Weight
from service.retrieval.grounded import DEFAULT_FLOOR

__all__ = [
    "AnswerOut",
    "AskIn",
    "CitedSentenceOut",
    "ContextIn",
    "ContextOut",
    "Hit",
    "RetrieveIn",
    "RetrieveOut",
    "SearchIn",
    "SearchOut",
]


class SearchIn(In):
    query: Name
    k: Count = Field(5, ge=0, le=MAX_K)
    kind: Kind | None = None
    scope: Name | None = None


class Hit(BaseModel):
    item: ItemOut
    score: float


class SearchOut(BaseModel):
    hits: list[Hit]
    as_of: int | None = None


class RetrieveIn(In):
    query: Name
    k: Count = Field(8, ge=0, le=MAX_K)
    kinds: list[Kind] | None = None
    weights: dict[Kind, Weight] | None = None
    diversify: bool = True
    scope: Name | None = None


class RetrieveOut(BaseModel):
    query: str
    hits: list[Hit]
    kinds: list[str]
    as_of: int | None = None


class ContextIn(In):
    task: Name
    max_chars: Count = Field(2000, ge=1, le=1_000_000)
    max_items: Count = Field(20, ge=1, le=MAX_K)
    shape: Literal["passages", "brief", "features"] = "passages"
    kind: Kind | None = None
    scope: Name | None = None
    compress: bool = False


class ContextOut(BaseModel):
    """The rendered context (guaranteed to fit max_chars), its receipt, and the items it cites."""

    text: str
    packet: dict[str, Any]
    items: list[ItemOut]
    as_of: int | None = None


class AskIn(In):
    question: Name
    k: Count = Field(5, ge=1, le=100)
    max_chars: Count = Field(2000, ge=1, le=1_000_000)
    hops: Count = Field(1, ge=1, le=5)
    min_confidence: float = Field(
        DEFAULT_FLOOR,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="the floor: abstain unless a sentence's support (its item's search score times the share of "
        "the question's terms it holds) reaches this",
    )
    scope: Name | None = None


class CitedSentenceOut(BaseModel):
    """One sentence of the answer, word for word from the item ``item_id``, and its support in [0, 1]."""

    text: str
    item_id: str
    support: float


class AnswerOut(BaseModel):
    """An answer made of cited sentences, or an abstention (``answer`` null, nothing cited)."""

    question: str
    answer: str | None
    abstained: bool
    confidence: float
    note: str
    n_evidence: int
    citations: list[dict[str, Any]]
    sentences: list[CitedSentenceOut] = Field(default_factory=list)
    as_of: int | None = None
