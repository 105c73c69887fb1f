"""``ask``: an extractive answer whose every sentence is cited to the item it came from, or an abstention.

A sentence's support for the question is its item's search score for the question (calibrated to [0, 1], the
same scale in every scope) times how much of the question the sentence itself holds: the share of the question's
content terms (stemmed, English stop words dropped) it contains, FULL_MATCH of them counting as all of a longer
question (a claim of nine terms is backed by a sentence stating three of them, a two-term question only by one
stating both). The answer is the best-supported sentences that reach the floor (``min_confidence``); its
confidence is the best sentence's support. Below the floor ``ask`` abstains: an off-topic question finds items
that share a word or two with it, rarely a sentence of a well-matched item holding what it asks. DEFAULT_FLOOR is
tuned on SciFact (``bench/ask.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from service.domain.validation import InvalidArgument, require_count, require_finite
from service.retrieval.answer import Answer, gather_evidence
from service.retrieval.extractive import split_sentences
from service.retrieval.packet import ContextBudget
from service.retrieval.text import item_surface, terms

__all__ = ["DEFAULT_BUDGET", "DEFAULT_FLOOR", "FULL_MATCH", "CitedSentence", "GroundedAnswer", "ask"]

DEFAULT_FLOOR = 0.38
FULL_MATCH = 3
DEFAULT_BUDGET = ContextBudget(max_chars=2000, max_items=5)  # the CLI's and HTTP's; the floor is tuned at it
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of an answer, word for word from the item ``item_id``, and its support in [0, 1]."""

    text: str
    item_id: str
    support: float

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "item_id": self.item_id, "support": round(self.support, 4)}


@dataclass
class GroundedAnswer:
    """The answer (or abstention) and the sentences it used, each cited to its item (none when abstained)."""

    answer: Answer
    sentences: list[CitedSentence] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """``Answer.as_dict()`` with ``sentences``, and ``citations`` narrowed to the items the sentences cite."""
        cited = {s.item_id for s in self.sentences}
        return {
            **self.answer.as_dict(),
            "sentences": [s.as_dict() for s in self.sentences],
            "citations": [c for c in self.answer.citations() if c["id"] in cited],
        }


def _content(text: str) -> set[str]:
    """The stemmed content terms of ``text``, without English stop words (which, what, most, first...)."""
    # Imported here: scikit-learn takes most of a second to import, which `import service` must not pay.
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return terms(" ".join(w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS))


def _candidates(question: str, packet: Any, scores: list[float | None]) -> list[CitedSentence]:
    """Every delivered sentence that is word for word in its item, with its support (0 when nothing backs it)."""
    wanted = _content(question)
    full = min(FULL_MATCH, len(wanted))
    out: list[CitedSentence] = []
    for item, text, score in zip(packet.items, packet.texts, scores, strict=True):
        surface = item_surface(item)
        for sentence in split_sentences(text):
            if sentence not in surface:  # a cut fragment ("...") is not something the item says
                continue
            cover = min(1.0, len(wanted & _content(sentence)) / full) if full else 0.0
            out.append(CitedSentence(sentence, item.id, max(0.0, min(1.0, score or 0.0)) * cover))
    return out


def ask(
    substrate: Any,
    question: str,
    *,
    budget: ContextBudget | None = None,
    scope: str | None = None,
    hops: int = 1,
    min_confidence: float = DEFAULT_FLOOR,
    max_sentences: int = 2,
    telemetry: Any = None,
) -> GroundedAnswer:
    """Answer ``question`` with up to ``max_sentences`` cited sentences at support >= ``min_confidence``, or
    abstain. An item reached only by a multi-hop link has no score for the question, so it is never cited."""
    min_confidence = require_finite(min_confidence, "min_confidence")
    if min_confidence > 1.0:
        raise InvalidArgument(f"min_confidence must be in [0, 1], got {min_confidence!r}")
    if require_count(max_sentences, "max_sentences") < 1:
        raise InvalidArgument("max_sentences must be >= 1")
    budget = DEFAULT_BUDGET if budget is None else budget
    packet, scores = gather_evidence(substrate, question, budget=budget, hops=hops, scope=scope, telemetry=telemetry)
    ranked = sorted(enumerate(_candidates(question, packet, scores)), key=lambda t: (-t[1].support, t[0]))
    confidence = round(ranked[0][1].support, 4) if ranked else 0.0
    best: list[tuple[int, CitedSentence]] = []
    for n, s in ranked:  # the same sentence in two items is said once, cited to the better-supported one
        if len(best) < max_sentences and s.support > 0 and s.support >= min_confidence:
            if all(s.text != b.text for _, b in best):
                best.append((n, s))
    if not best:
        note = (
            f"abstained: no delivered sentence supports the question at >= {min_confidence} (best {confidence:.2f})"
            " - escalate rather than guess"
        )
        return GroundedAnswer(Answer(question, None, True, confidence, packet, note=note, evidence=list(packet.items)))
    used = [s for _, s in sorted(best, key=lambda t: t[0])]  # in the order the evidence gives them
    cited = {s.item_id for s in used}
    evidence = [i for i in packet.items if i.id in cited]
    answer = Answer(
        question,
        " ".join(s.text for s in used),
        False,
        confidence,
        packet,
        note=f"answered from {len(cited)} cited source(s)",
        evidence=evidence,
    )
    return GroundedAnswer(answer, used)
