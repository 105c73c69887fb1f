"""Beliefs as values: claims, evidence entries, and the credence their trail implies.

The credence math itself (log-odds from a 0.5 prior, tier strengths, the model-assertion cap) is
projections.credence's: the ``beliefs`` read model computes every credence from the trail with it, so a
credence is never a copied field, and the commands here decide with the very same function.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from projections.beliefs import BELIEF_TAG, claim_key
from projections.credence import MODEL_ASSERTION, MODEL_ASSERTION_CAP, TIER_STRENGTH, credence
from service.domain.items import DEFAULT_SCOPE, SubstrateItem
from service.domain.validation import InvalidArgument

__all__ = [
    "MODEL_ASSERTION",
    "MODEL_ASSERTION_CAP",
    "TIER_STRENGTH",
    "BeliefItem",
    "Claim",
    "EvidenceEntry",
    "credence_from_history",
]

TIERS: tuple[str, ...] = tuple(TIER_STRENGTH)
_ENTRY_KEYS = frozenset({"source_id", "tier", "direction", "weight", "time"})
DIRECTIONS = ("+", "-")


def check_tier(tier: Any, name: str = "tier") -> str:
    """Return ``tier`` if it is a known evidence tier; InvalidArgument naming the field otherwise."""
    if not isinstance(tier, str) or tier not in TIER_STRENGTH:
        raise InvalidArgument(f"{name} must be one of {list(TIERS)}, got {tier!r}")
    return tier


def check_direction(direction: Any, name: str = "direction") -> str:
    """Return ``direction`` if it is "+" (supports) or "-" (contradicts) (MXR-080-0242)."""
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise InvalidArgument(f"{name} must be '+' (supports) or '-' (contradicts), got {direction!r}")
    return direction


def check_number(value: Any, name: str, *, minimum: float | None = None) -> float:
    """Return ``value`` as a finite float (>= ``minimum`` when given); never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{name} must be a finite number, got {value!r}")
    f = float(value)
    if not math.isfinite(f) or (minimum is not None and f < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise InvalidArgument(f"{name} must be a finite number{bound}, got {value!r}")
    return f


@dataclass
class Claim:
    """One atomic proposition (or typed quantity) pulled from a model's output."""

    text: str
    produced_by: dict[str, Any] = field(default_factory=dict)
    quantity: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidArgument(f"Claim.text must be a non-empty string, got {self.text!r}")
        if not isinstance(self.produced_by, Mapping):
            raise InvalidArgument(f"Claim.produced_by must be a dict, got {type(self.produced_by).__name__}")
        self.produced_by = dict(self.produced_by)
        if self.quantity is not None:
            self.quantity = check_number(self.quantity, "Claim.quantity")

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "produced_by": dict(self.produced_by), "quantity": self.quantity}


@dataclass(frozen=True)
class EvidenceEntry:
    """One piece of evidence that moved a belief's credence, in the order it was applied.

    ``verified`` is decided once, by ``assimilate`` (MXR-080-0243/0244), and carried on the entry so the
    credence replays without touching the store; direct construction defaults it to True.
    """

    source_id: str
    tier: str
    direction: str = "+"
    weight: float = 1.0
    time: float = field(default_factory=time.time)
    verified: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.source_id, str):
            raise InvalidArgument(f"EvidenceEntry.source_id must be a string, got {self.source_id!r}")
        check_tier(self.tier, "EvidenceEntry.tier")
        check_direction(self.direction, "EvidenceEntry.direction")
        object.__setattr__(self, "weight", check_number(self.weight, "EvidenceEntry.weight", minimum=0.0))
        object.__setattr__(self, "time", check_number(self.time, "EvidenceEntry.time"))
        if not isinstance(self.verified, bool):
            raise InvalidArgument(f"EvidenceEntry.verified must be a bool, got {self.verified!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "tier": self.tier,
            "direction": self.direction,
            "weight": self.weight,
            "time": self.time,
            "verified": self.verified,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EvidenceEntry:
        """Rebuild an already-decided entry (its stored ``verified`` flag is kept as recorded)."""
        if not isinstance(d, Mapping):
            raise InvalidArgument(f"an evidence entry must be a dict, got {type(d).__name__}")
        keys = ("source_id", "tier", "direction", "weight", "time", "verified")
        return cls(**{k: d[k] for k in keys if k in d})


@dataclass
class BeliefItem:
    """A claim's current credence plus the full evidence trail that produced it."""

    id: str
    claim: Claim
    credence: float
    evidence_history: list[EvidenceEntry] = field(default_factory=list)
    scope: str = DEFAULT_SCOPE

    def as_dict(self) -> dict[str, Any]:
        """JSON-native form: id, scope, claim, credence and the evidence trail."""
        return {
            "id": self.id,
            "scope": self.scope,
            "claim": self.claim.to_json(),
            "credence": self.credence,
            "evidence_history": [e.to_json() for e in self.evidence_history],
        }


def _entry(e: EvidenceEntry | Mapping[str, Any]) -> EvidenceEntry:
    return e if isinstance(e, EvidenceEntry) else EvidenceEntry.from_json(e)


def is_grounding(e: EvidenceEntry) -> bool:
    """Independent support: a tier above model assertion that verified at assimilation and still weighs."""
    return e.tier != MODEL_ASSERTION and e.verified and e.weight > 0


def has_real_support(history: Sequence[EvidenceEntry]) -> bool:
    """Whether any entry of ``history`` is independent support (lifts the model-assertion cap)."""
    return any(is_grounding(e) for e in history)


def credence_from_history(evidence_history: Sequence[EvidenceEntry]) -> float:
    """The credence a trail implies, a pure function: replaying a stored trail reproduces its credence exactly (the
    ``beliefs`` read model computes it with the same function, projections.credence).

    An unverified entry counts at model-assertion strength and never lifts the cap (MXR-080-0243).
    """
    return credence([_entry(e).to_json() for e in evidence_history])


def raw_entries(evidence: Any) -> list[dict[str, Any]]:
    """Validate caller-supplied evidence (a dict, an entry, or a possibly empty list) into fields minus ``verified``."""
    if isinstance(evidence, (Mapping, EvidenceEntry)):
        evidence = [evidence]
    if isinstance(evidence, (str, bytes)) or not isinstance(evidence, (list, tuple)):
        raise InvalidArgument(f"evidence must be an entry dict or a list of them, got {type(evidence).__name__}")
    now = time.time()
    out = []
    for i, raw in enumerate(evidence):
        name = f"evidence[{i}]"
        if isinstance(raw, EvidenceEntry):
            raw = {k: v for k, v in raw.to_json().items() if k != "verified"}
        if not isinstance(raw, Mapping):
            raise InvalidArgument(f"{name} must be a dict, got {type(raw).__name__}")
        unknown = sorted(str(k) for k in raw if k not in _ENTRY_KEYS)
        if unknown:
            hint = " (verified is decided by assimilate)" if "verified" in unknown else ""
            raise InvalidArgument(f"{name} has unknown field(s) {unknown}; allowed {sorted(_ENTRY_KEYS)}{hint}")
        if "tier" not in raw:
            raise InvalidArgument(f"{name}.tier is required (one of {list(TIERS)})")
        source = raw.get("source_id")
        if source is not None and not isinstance(source, str):
            raise InvalidArgument(f"{name}.source_id must be a string, got {source!r}")
        out.append(
            {
                "source_id": source or "",
                "tier": check_tier(raw["tier"], f"{name}.tier"),
                "direction": check_direction(raw.get("direction", "+"), f"{name}.direction"),
                "weight": check_number(raw.get("weight", 1.0), f"{name}.weight", minimum=0.0),
                "time": check_number(raw.get("time", now), f"{name}.time"),
            }
        )
    return out


def belief_to_item(belief: BeliefItem, created_at: float | None = None) -> SubstrateItem:
    """The stored form: a ``record`` item tagged ``belief`` holding claim, key, credence and trail."""
    kw: dict[str, Any] = {} if created_at is None else {"created_at": created_at}
    return SubstrateItem(
        id=belief.id,
        kind="record",
        text=belief.claim.text,
        payload={
            "key": claim_key(belief.claim.text),
            "claim": belief.claim.to_json(),
            "credence": belief.credence,
            "evidence_history": [e.to_json() for e in belief.evidence_history],
        },
        provenance={"kind": BELIEF_TAG},
        scope=belief.scope,
        tags=[BELIEF_TAG],
        **kw,
    )


def belief_from_item(item: SubstrateItem | Mapping[str, Any], *, trail: Sequence[Any] | None = None) -> BeliefItem:
    """Read a belief back from its stored item (or item JSON); ValueError when it is not one.

    ``trail``: the evidence trail to take (the ``beliefs`` read model's, as readers pass it) instead of the one in the
    item's payload. Either way the credence is computed from the trail, never read from the payload.
    """
    d = item.to_json() if isinstance(item, SubstrateItem) else item
    payload = d.get("payload") or {}
    c = payload.get("claim")
    if d.get("kind") != "record" or BELIEF_TAG not in (d.get("tags") or []) or not isinstance(c, Mapping):
        raise InvalidArgument(f"item {d.get('id')!r} is not a belief (a record tagged {BELIEF_TAG!r})")
    raw = (payload.get("evidence_history") or []) if trail is None else trail
    evidence = [EvidenceEntry.from_json(e) for e in raw]
    return BeliefItem(
        id=d["id"],
        claim=Claim(text=c["text"], produced_by=dict(c.get("produced_by") or {}), quantity=c.get("quantity")),
        credence=credence_from_history(evidence),
        evidence_history=evidence,
        scope=d["scope"],
    )
