"""Answer a question from substrate evidence with citations, or abstain when the delivered evidence is too thin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.domain.items import SubstrateItem
from service.domain.telemetry import emit
from service.domain.validation import InvalidArgument, require_count, require_finite, require_name
from service.retrieval.multihop import multihop
from service.retrieval.packet import ContextBudget, ContextPacket, require_bool
from service.retrieval.retrieve import retrieve

__all__ = ["Answer", "answer_from_substrate", "gather_evidence"]


@dataclass
class Answer:
    """A cited answer, or an abstention (``answer is None``), with its evidence and a confidence in [0, 1]."""

    question: str
    answer: str | None
    abstained: bool
    confidence: float
    context: ContextPacket
    note: str = ""
    evidence: list[SubstrateItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        require_bool(self.abstained, "Answer.abstained")
        if self.abstained and self.answer is not None:
            raise InvalidArgument("an abstained Answer carries no answer")
        if not self.abstained and not isinstance(self.answer, str):
            raise InvalidArgument("a non-abstained Answer needs a str answer")
        self.confidence = require_finite(self.confidence, "Answer.confidence")
        if self.confidence > 1.0:
            raise InvalidArgument(f"Answer.confidence must be in [0, 1], got {self.confidence!r}")
        if not isinstance(self.context, ContextPacket):
            raise InvalidArgument(f"Answer.context must be a ContextPacket, got {type(self.context).__name__}")
        self.evidence = list(self.evidence)

    def citations(self) -> list[dict[str, Any]]:
        """The provenance of the evidence the answerer received (``context.provenance()``)."""
        return self.context.provenance()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable answer: question, answer, abstained, confidence, note, n_evidence, citations."""
        return {
            "question": self.question,
            "answer": self.answer,
            "abstained": self.abstained,
            "confidence": round(self.confidence, 4),
            "note": self.note,
            "n_evidence": len(self.evidence),
            "citations": self.citations(),
        }


def _confidence(relevance: list[float], packet: ContextPacket) -> float:
    """Best delivered relevance (clamped to [0, 1]), discounted when budgeting dropped most candidates."""
    base = max(0.0, min(1.0, max(relevance, default=0.0)))
    coverage = min(1.0, len(packet) / packet.n_candidates) if packet.n_candidates else 0.0
    return round(base * (0.5 + 0.5 * coverage), 4)


def gather_evidence(
    substrate: Any,
    question: str,
    *,
    budget: ContextBudget | None = None,
    hops: int = 1,
    compress: bool = True,
    scope: str | None = None,
    telemetry: Any = None,
) -> tuple[ContextPacket, list[float | None]]:
    """The packet an answerer gets for ``question`` and, aligned with its items, each item's search score for the
    question (None for an item reached by a multi-hop link: its score measures the hop, not the question)."""
    require_name(question, "question")
    budget = ContextBudget() if budget is None else budget
    if not isinstance(budget, ContextBudget):
        raise InvalidArgument(f"budget must be a ContextBudget or None, got {type(budget).__name__}")
    if require_count(hops, "hops") < 1:
        raise InvalidArgument("hops must be >= 1 (1 = single-shot retrieval)")
    require_bool(compress, "compress")
    if hops > 1:
        chain = multihop(substrate, question, max_hops=hops, scope=scope, telemetry=telemetry)
        packet = chain.to_context(question, budget=budget, compress=compress)
        seed_scores = {s.item.id: s.score for s in chain.steps if s.depth == 0}
        return packet, [seed_scores.get(i.id) for i in packet.items]
    found = retrieve(substrate, question, k=budget.max_items, scope=scope, telemetry=telemetry)
    packet = found.to_context(question, budget=budget, compress=compress)
    return packet, list(packet.scores)


def answer_from_substrate(
    substrate: Any,
    question: str,
    answerer: Callable[[str, str], str],
    *,
    budget: ContextBudget | None = None,
    hops: int = 1,
    min_evidence: int = 1,
    min_confidence: float = 0.1,
    compress: bool = True,
    scope: str | None = None,
    telemetry: Any = None,
) -> Answer:
    """Answer from the delivered packet via ``answerer``, or abstain without calling it (MXR-080-0257)."""
    require_name(question, "question")
    if not callable(answerer):
        raise InvalidArgument("answerer must be callable as (question, context_text) -> str")
    if budget is not None and not isinstance(budget, ContextBudget):
        raise InvalidArgument(f"budget must be a ContextBudget or None, got {type(budget).__name__}")
    if require_count(hops, "hops") < 1:
        raise InvalidArgument("hops must be >= 1 (1 = single-shot retrieval)")
    require_count(min_evidence, "min_evidence")
    min_confidence = require_finite(min_confidence, "min_confidence")
    if min_confidence > 1.0:
        raise InvalidArgument(f"min_confidence must be in [0, 1], got {min_confidence!r}")
    require_bool(compress, "compress")

    packet, scores = gather_evidence(
        substrate, question, budget=budget, hops=hops, compress=compress, scope=scope, telemetry=telemetry
    )
    # Only seeds were scored against the question; link/content scores measure a hop, not the question.
    relevance = [s for s in scores if s is not None]
    confidence = _confidence(relevance, packet)
    # MXR-080-0257: the gate and the reported evidence read only what the answerer would actually receive.
    delivered = list(packet.items)

    if len(delivered) < min_evidence or confidence < min_confidence:
        result = Answer(
            question,
            None,
            True,
            confidence,
            packet,
            note=(
                f"abstained: {len(delivered)} item(s) delivered (of {packet.n_candidates} retrieved) at confidence "
                f"{confidence:.2f}; needs >= {min_evidence} delivered at >= {min_confidence}"
                " - escalate rather than guess"
            ),
            evidence=delivered,
        )
    else:
        text = answerer(question, packet.render())
        if text is None:
            result = Answer(
                question, None, True, confidence, packet, note="abstained: the answerer declined", evidence=delivered
            )
        elif not isinstance(text, str):
            raise InvalidArgument(f"answerer must return a str (or None to decline), got {type(text).__name__}")
        else:
            result = Answer(
                question,
                text,
                False,
                confidence,
                packet,
                note=f"answered from {len(delivered)} cited source(s)",
                evidence=delivered,
            )

    def build() -> tuple[dict[str, Any], str, dict[str, Any]]:
        features = {"action": "answer", "hops": hops, "n_evidence": len(result.evidence)}
        outcome = {"confidence": result.confidence, "n_cited": len(result.context)}
        return features, "abstain" if result.abstained else "answer", outcome

    emit(telemetry, "reason", build)
    return result
