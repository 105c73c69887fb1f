"""Text primitives for context packing: query terms, coverage, exact-fit truncation, extractive compression."""

from __future__ import annotations

import json
import re
from typing import Any

from service.domain.validation import InvalidArgument, require_count

__all__ = ["compress_text", "flat", "item_surface", "query_coverage", "terms", "truncate_text"]

# ASCII on purpose: a multi-byte marker would make a char-fitting rendering overflow a byte budget.
_MARK = "..."
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_STOPWORDS = frozenset(
    "the and for with are was were this that from into onto over what which who whom whose when where why how "
    "not but has have had its our your their them they you can could would should will shall may might does did "
    "all any each than then there these those been being about".split()
)


def _stem(word: str) -> str:
    # A deliberately tiny, symmetric stemmer: 'refunds'/'refunded'/'refunding' all meet at 'refund'.
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + repl
    return word


def terms(text: str) -> set[str]:
    """The normalized content terms of ``text`` (lower-cased, stop words and words under 3 chars dropped)."""
    return {_stem(w) for w in _WORD.findall(str(text).lower()) if len(w) > 2 and w not in _STOPWORDS}


def query_coverage(used: str, task: str, *, full: str) -> float:
    """Fraction of the task terms present in ``full`` that ``used`` still contains (1.0 when ``full`` had none)."""
    present = terms(task) & terms(full)
    if not present:
        return 1.0
    return len(present & terms(used)) / len(present)


def flat(text: str) -> str:
    """``text`` with every whitespace run collapsed to one space."""
    return " ".join(str(text).split())


def item_surface(item: Any) -> str:
    """An item's retrievable text: its ``text``, else its payload as sorted-key JSON (structured items)."""
    if item.text:
        return str(item.text)
    if item.payload:
        return json.dumps(item.payload, sort_keys=True, ensure_ascii=False, default=str)
    return ""


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` (>= 0) characters, marking the cut when there is room for it."""
    if len(text) <= max_chars:
        return text
    if max_chars > len(_MARK):
        return text[: max_chars - len(_MARK)] + _MARK
    return text[:max_chars]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_BREAK.split(text.strip()) if s.strip()]


def _require_positive(value: Any, name: str) -> int:
    if require_count(value, name) < 1:
        raise InvalidArgument(f"{name} must be a positive int, got {value!r}")
    return value


def compress_text(text: str, task: str, max_chars: int) -> str:
    """Extractive summary of ``text`` keeping the sentences most relevant to ``task``; always ``len <= max_chars``."""
    _require_positive(max_chars, "max_chars")
    if not isinstance(text, str) or not isinstance(task, str):
        raise InvalidArgument("compress_text needs str text and task")
    if len(text) <= max_chars:
        return text
    sents = _sentences(text)
    q = terms(task)
    overlap = [len(q & terms(s)) for s in sents]
    relevant = [i for i, n in enumerate(overlap) if n > 0]
    if relevant:
        # Most query terms first; among equals the shorter sentence leaves room for more evidence.
        order = sorted(relevant, key=lambda i: (-overlap[i], len(sents[i]), i))
    else:
        order = list(range(len(sents)))  # nothing query-relevant: keep the lead, in order
    keep: list[int] = []
    used = 0
    for i in order:
        cost = len(sents[i]) + (1 if keep else 0)
        if used + cost <= max_chars:
            keep.append(i)
            used += cost
        elif not relevant:
            break  # the lead must stay contiguous to read coherently
    if not keep:
        return truncate_text(sents[order[0]] if sents else text, max_chars)
    return " ".join(sents[i] for i in sorted(keep))
