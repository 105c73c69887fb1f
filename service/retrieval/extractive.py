"""A built-in extractive answerer: the sentences of the evidence that best support the question."""

from __future__ import annotations

import re

__all__ = ["extractive_answerer", "split_sentences"]

_WORD = re.compile(r"[a-z0-9]+")
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset(
    "a an and are as at be by did do does for from how in is it its of on or that the this to was were what when "
    "where which who why will with".split()
)


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences (split after . ! ? and at line breaks), stripped, without empty ones."""
    return [s.strip() for s in _SPLIT.split(text) if s.strip()]


def extractive_answerer(question: str, context: str, *, max_sentences: int = 2) -> str:
    """Return up to ``max_sentences`` context sentences sharing the most question terms ("" when none do)."""
    wanted = _terms(question)
    scored: list[tuple[float, int, str]] = []
    for pos, sentence in enumerate(s.strip() for s in _SPLIT.split(context)):
        if not sentence or sentence.startswith("# Context for:"):
            continue
        sentence = re.sub(r"^\[[^\]]*\]\s*", "", sentence)  # drop the packet's [kind:id] marker
        have = _terms(sentence)
        if not have:
            continue
        overlap = len(wanted & have)
        if overlap:
            scored.append((overlap / (len(wanted) or 1) + overlap / (len(have) ** 0.5), pos, sentence))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:max_sentences]
    return " ".join(s for _, _, s in sorted(best, key=lambda t: t[1]))
