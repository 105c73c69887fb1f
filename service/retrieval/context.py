"""Budgeted, provenanced context packets assembled from any object with the substrate's ``search`` surface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.domain.items import MODALITIES
from service.domain.validation import InvalidArgument, require_name
from service.retrieval.knowledge import (
    GENERIC_KNOWLEDGE_SCHEMA,
    PROPERTY_GRAPH_SCHEMA,
    SIGNAL_SCHEMA,
    SPATIAL_MEDIA_SCHEMA,
    TYPED_TABLE_SCHEMA,
    substrate_item_to_knowledge_dict,
)
from service.retrieval.packet import ContextBudget, ContextPacket, ReceiverProfile, require_bool, require_fits
from service.retrieval.packing import emit_context, pack_hits
from service.retrieval.text import compress_text

__all__ = [
    "GENERIC_KNOWLEDGE_SCHEMA",
    "PROPERTY_GRAPH_SCHEMA",
    "SIGNAL_SCHEMA",
    "SPATIAL_MEDIA_SCHEMA",
    "TYPED_TABLE_SCHEMA",
    "ContextBudget",
    "ContextPacket",
    "ReceiverProfile",
    "assemble_context",
    "assemble_for_receivers",
    "compress_text",
    "substrate_item_to_knowledge_dict",
]


def _check_filters(kind: str | None, scope: str | None) -> None:
    if kind is not None and kind not in MODALITIES:
        raise InvalidArgument(f"kind must be one of {MODALITIES} or None, got {kind!r}")
    if scope is not None:
        require_name(scope, "scope")


def _budget(budget: ContextBudget | None) -> ContextBudget:
    if budget is None:
        return ContextBudget()
    if not isinstance(budget, ContextBudget):
        raise InvalidArgument(f"budget must be a ContextBudget or None, got {type(budget).__name__}")
    return budget


def assemble_context(
    substrate: Any,
    task: str,
    *,
    budget: ContextBudget | None = None,
    kind: str | None = None,
    scope: str | None = None,
    compress: bool = False,
    telemetry: Any = None,
) -> ContextPacket:
    """The best-affordable packet for ``task``: search, then greedy packing whose true rendering fits (MXR-080-0239)."""
    require_name(task, "task")
    budget = _budget(budget)
    require_bool(compress, "compress")
    _check_filters(kind, scope)
    require_fits(task, budget)  # before any retrieval work: no selection could satisfy a header-less budget
    # A pool wider than the item cap, so n_candidates records how much the budget left out.
    hits = substrate.search(task, k=max(2 * budget.max_items, 8), kind=kind, scope=scope)
    packet = pack_hits(task, [(item, score) for item, score in hits], budget, compress=compress)
    emit_context(telemetry, packet)
    return packet


def assemble_for_receivers(
    substrate: Any,
    task: str,
    receivers: Sequence[ReceiverProfile],
    *,
    kind: str | None = None,
    scope: str | None = None,
    telemetry: Any = None,
) -> dict[str, ContextPacket]:
    """One packet per named receiver, keyed by name; names must be unique and non-empty (MXR-080-0241)."""
    require_name(task, "task")
    _check_filters(kind, scope)
    if isinstance(receivers, (str, bytes)) or not isinstance(receivers, Sequence):
        raise InvalidArgument("receivers must be a sequence of ReceiverProfile")
    seen: set[str] = set()
    # Everything is validated before the first retrieval, so a bad receiver can never leave behind
    # telemetry or work for receivers that were assembled before it was noticed.
    for r in receivers:
        if not isinstance(r, ReceiverProfile):
            raise InvalidArgument(f"receivers must be ReceiverProfile instances, got {type(r).__name__}")
        require_name(r.name, "ReceiverProfile.name")
        if r.name in seen:
            raise InvalidArgument(f"receiver names must be unique; {r.name!r} is duplicated")
        seen.add(r.name)
        require_fits(task, r.to_budget())
    return {
        r.name: assemble_context(
            substrate, task, budget=r.to_budget(), kind=kind, scope=scope, compress=r.compress, telemetry=telemetry
        )
        for r in receivers
    }
