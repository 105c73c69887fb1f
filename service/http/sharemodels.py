"""The request and response models of the sharing routes: publish, merge, promotion proposals, belief evidence."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from service.http.models import In, Name, Ref, Text

__all__ = [
    "ApproveIn",
    "AssimilateIn",
    "BeliefOut",
    "DecisionOut",
    "EvidenceIn",
    "MergeIn",
    "ProposeIn",
    "ProposeOut",
    "PublishIn",
    "PublishOut",
    "RejectIn",
]


class PublishIn(In):
    ids: list[Ref] = Field(min_length=1, max_length=10_000)
    to: Name = "public"
    from_scope: Name | None = None


class PublishOut(BaseModel):
    published: list[str]
    seq: int


class MergeIn(In):
    keep: Ref
    other: Ref
    prefer: Literal["latest", "keep"] = "latest"
    confirm: bool = False


class ProposeIn(In):
    ids: list[Ref] = Field(min_length=1, max_length=10_000)
    to: Name


class ProposeOut(BaseModel):
    proposed: list[str]
    seq: int


class ApproveIn(In):
    to: Name | None = None


class RejectIn(In):
    reason: Text = ""


class DecisionOut(BaseModel):
    id: str
    status: Literal["approved", "rejected"]
    seq: int


class EvidenceIn(In):
    source_id: Text | None = None
    tier: Literal["model_assertion", "executable", "simulation", "held_out_truth", "real_measurement"]
    direction: Literal["+", "-"] = "+"
    weight: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    time: float | None = Field(None, allow_inf_nan=False)


class AssimilateIn(In):
    claim: Name
    evidence: list[EvidenceIn] = Field(default_factory=list, max_length=1000)  # none: the belief at the prior
    scope: Name | None = None


class BeliefOut(BaseModel):
    id: str
    scope: str
    claim: dict[str, Any]
    credence: float
    evidence_history: list[dict[str, Any]]
    seq: int
