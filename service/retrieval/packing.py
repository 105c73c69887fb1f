"""Greedy, fit-checked packing of already-ranked hits into a ContextPacket that provably fits its budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.domain.items import SubstrateItem
from service.domain.telemetry import emit
from service.domain.validation import InvalidArgument
from service.retrieval.packet import ContextBudget, ContextPacket, render_packet, require_bool, require_fits
from service.retrieval.text import compress_text, item_surface, truncate_text

__all__ = ["emit_context", "pack_hits", "packed_context"]

Hit = tuple[SubstrateItem, float]
# Below this many characters a summary is rarely a whole sentence, so compression targets fewer sources
# rather than shredding every one of them into fragments.
MIN_SHARE = 60


def pack_hits(task: str, hits: Sequence[Hit], budget: ContextBudget, *, compress: bool) -> ContextPacket:
    """Pack ``hits`` in the given order; every kept selection is checked against its true rendered length."""
    selected: list[SubstrateItem] = []
    scores: list[float] = []
    texts: list[str] = []

    def size(items: list[SubstrateItem], txts: list[str]) -> int:
        return len(render_packet(task, items, txts, budget.shape))

    def room(item: SubstrateItem) -> int:
        return budget.max_chars - size([*selected, item], [*texts, ""])

    if compress:
        body = budget.max_chars - size([], [])
        first = hits[0][0] if hits else None
        overhead = size([first], [""]) - size([], []) if first is not None else 0
        n_target = min(budget.max_items, len(hits), max(1, body // (overhead + MIN_SHARE)))
        for idx, (item, score) in enumerate(hits):
            if len(selected) >= budget.max_items:
                break
            free = room(item)
            if free < 1:
                continue
            surface = item_surface(item)
            if idx < n_target:
                # Fair share of what is left across the targeted candidates still to come, so one long document
                # cannot crowd out the rest; whatever an item leaves unused flows on to the next ones.
                later = n_target - idx - 1
                per_item = size([*selected, item, item], [*texts, "", ""]) - size([*selected, item], [*texts, ""])
                share = min(free, max(1, (free - later * per_item) // (later + 1)))
            elif len(surface) <= free or free >= MIN_SHARE:
                share = free  # room left once the targeted sources are in: fill it with the next ones
            else:
                continue
            text = surface if len(surface) <= share else compress_text(surface, task, share)
            if size([*selected, item], [*texts, text]) <= budget.max_chars:
                selected.append(item)
                scores.append(score)
                texts.append(text)
    else:
        for item, score in hits:
            if len(selected) >= budget.max_items:
                break
            text = item_surface(item)
            if size([*selected, item], [*texts, text]) > budget.max_chars:
                break
            selected.append(item)
            scores.append(score)
            texts.append(text)

    if not selected and hits:
        # A small-but-feasible budget still yields the most relevant item, shrunk until it truly fits.
        item, score = hits[0]
        free = room(item)
        if free > 0:
            surface = item_surface(item)
            source = compress_text(surface, task, free) if compress and len(surface) > free else surface
            selected, scores, texts = [item], [score], [truncate_text(source, free)]

    shortened = any(len(t) < len(item_surface(i)) for i, t in zip(selected, texts, strict=True))
    return ContextPacket(
        task=task,
        items=selected,
        scores=scores,
        budget=budget,
        n_candidates=len(hits),
        texts=texts,
        compressed=compress and shortened,
    )


def emit_context(telemetry: Any, packet: ContextPacket) -> None:
    """Record one ``context`` telemetry event for ``packet`` (choice: the selected ids, comma-joined)."""

    def build() -> tuple[dict[str, Any], str, dict[str, Any]]:
        features = {
            "budget_chars": packet.budget.max_chars,
            "max_items": packet.budget.max_items,
            "shape": packet.budget.shape,
            "n_candidates": packet.n_candidates,
        }
        outcome = {
            "n_selected": len(packet.items),
            "used_chars": packet.used_chars,
            "compressed": packet.compressed,
            "compression_ratio": packet.compression_ratio,
        }
        return features, ",".join(i.id for i in packet.items), outcome

    emit(telemetry, "context", build)


def packed_context(task: str, hits: Sequence[Hit], assemble_kw: dict[str, Any]) -> ContextPacket:
    """Budget already-decided ``hits`` (never re-searched, re-scored or re-ordered) with budget/compress/telemetry."""
    unknown = sorted(set(assemble_kw) - {"budget", "compress", "telemetry"})
    if unknown:
        raise TypeError(
            f"to_context() got unexpected keyword argument(s) {unknown}; there is no fresh search here to filter, "
            "so restrict kinds/scope on the call that produced these hits"
        )
    budget = assemble_kw.get("budget")
    budget = ContextBudget() if budget is None else budget
    if not isinstance(budget, ContextBudget):
        raise InvalidArgument(f"budget must be a ContextBudget, got {type(budget).__name__}")
    compress = require_bool(assemble_kw.get("compress", False), "compress")
    if not isinstance(task, str) or not task.strip():
        raise InvalidArgument(f"task must be a non-empty string, got {task!r}")
    require_fits(task, budget)
    packet = pack_hits(task, list(hits), budget, compress=compress)
    emit_context(assemble_kw.get("telemetry"), packet)
    return packet
