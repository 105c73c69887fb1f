"""Claim extraction and the default corroborator: lexical candidacy gated by a negation/polarity check.

Overlap only says evidence is plausibly *about* a claim; two texts can share every content word and
disagree ("the drug cures cancer" / "the drug cures no cancer"). So a pair is SUPPORTED only when
candidacy holds and no shared content word differs in polarity, CONTRADICTED when one does, and
UNVERIFIED otherwise. This is a negation-cue heuristic, not an entailment model.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from service.domain.validation import InvalidArgument

__all__ = ["Corroboration", "default_corroborates", "sentence_claims", "to_corroboration"]


class Corroboration(StrEnum):
    """A corroborator's verdict on one (evidence, claim) pair; UNVERIFIED is never read as support."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    UNVERIFIED = "unverified"


_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the is are was were be been being am of to in on at by for with and or but it its this that these "
    "those as from into over under near than then there their they he she we i you do does did has have had".split()
)
_NEGATORS = frozenset(
    "no not never none nobody nothing nowhere neither nor cannot without lacks lacking lack fails fail "
    "failed unable".split()
)
_NEG_SCOPE = 4  # tokens after a negator that it governs: "not [x y z w]"
_CANDIDACY = 0.5  # share of the claim's content words the evidence must contain to be about it


def sentence_claims(text: Any) -> list[str]:
    """Split on whitespace after ``.``/``!``/``?`` and on newlines; keep parts of at least two words."""
    if text is None:
        return []
    parts = (p.strip() for p in _SPLIT.split(str(text)))
    return [p for p in parts if len(p.split()) >= 2]


def _tokens(text: str) -> list[str]:
    return _WORD.findall(re.sub(r"n't\b", " not", text.lower()))


def _content(text: str) -> set[str]:
    return {t for t in _tokens(text) if t not in _STOP and t not in _NEGATORS}


def _negated(text: str) -> set[str]:
    """Content words inside a negator's forward scope; scopes end at sentence ends and at the next negator."""
    out: set[str] = set()
    for sentence in _SPLIT.split(text) or [text]:
        tokens = _tokens(sentence)
        for i, token in enumerate(tokens):
            if token not in _NEGATORS:
                continue
            for nxt in tokens[i + 1 : i + 1 + _NEG_SCOPE]:
                if nxt in _NEGATORS:
                    break
                if nxt not in _STOP:
                    out.add(nxt)
    return out


def default_corroborates(evidence: str, claim: str) -> Corroboration:
    """Classify ``evidence`` against ``claim``: polarity mismatch on shared words beats any overlap."""
    claim_words = _content(claim)
    shared = claim_words & _content(evidence)
    if not claim_words or len(shared) / len(claim_words) < _CANDIDACY:
        return Corroboration.UNVERIFIED
    neg_claim, neg_evidence = _negated(claim), _negated(evidence)
    if any((w in neg_claim) != (w in neg_evidence) for w in shared):
        return Corroboration.CONTRADICTED
    return Corroboration.SUPPORTED


def to_corroboration(value: Any) -> Corroboration:
    """Coerce a corroborator's return: a Corroboration (or its value) as is; True -> SUPPORTED, False -> UNVERIFIED."""
    if isinstance(value, Corroboration):
        return value
    if isinstance(value, bool):
        # A bare bool cannot express a contradiction, so False is "unverified", never "contradicted".
        return Corroboration.SUPPORTED if value else Corroboration.UNVERIFIED
    if isinstance(value, str):
        try:
            return Corroboration(value.lower())
        except ValueError:
            pass
    raise InvalidArgument(f"corroborates must return a Corroboration or a bool, got {value!r}")
