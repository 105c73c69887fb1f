"""The credence of a belief, a pure function of its evidence trail (the ``beliefs`` read model computes it; the
commands that decide evidence compute the same): log-odds from a 0.5 prior, tier strengths, the model-assertion cap.

Credence moves in log-odds space, ``K`` units per unit of tier strength ("+" raises, "-" lowers, times the
entry's weight). A trail with no verified evidence above the model-assertion tier is capped at
``MODEL_ASSERTION_CAP``: a model cannot talk itself into confidence. An empty trail is 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["K", "MODEL_ASSERTION", "MODEL_ASSERTION_CAP", "TIER_STRENGTH", "credence", "grounds"]

MODEL_ASSERTION = "model_assertion"
# Evidence tiers, weakest to strongest, and the strength each carries when verified.
TIER_STRENGTH: Mapping[str, float] = {
    MODEL_ASSERTION: 0.05,
    "executable": 0.3,
    "simulation": 0.5,
    "held_out_truth": 0.8,
    "real_measurement": 1.0,
}
MODEL_ASSERTION_CAP = 0.5
K = 3.0
# One entry's log-odds contribution is clipped here: far past saturation of the logistic, and it keeps an
# enormous weight from producing inf (and inf - inf = nan) in the sum.
_MAX_TERM = 1e6


def _weight(entry: Mapping[str, Any]) -> float:
    w = entry.get("weight", 1.0)
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
        return 0.0  # a malformed entry weighs nothing
    return float(w)


def grounds(entry: Mapping[str, Any]) -> bool:
    """Independent support: a tier above model assertion that verified at assimilation and still weighs."""
    tier = entry.get("tier")
    return (
        tier != MODEL_ASSERTION and tier in TIER_STRENGTH and entry.get("verified", True) is True and _weight(entry) > 0
    )


def _logistic(x: float) -> float:
    # Split on the sign so exp never overflows, whatever the magnitude of the log-odds.
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def credence(trail: Sequence[Any]) -> float:
    """The credence a trail of evidence entries (their JSON form) implies. An unverified entry counts at
    model-assertion strength and never lifts the cap; a malformed one counts for nothing."""
    entries = [e for e in trail if isinstance(e, Mapping)]
    if not entries:
        return 0.5
    terms = []
    for e in entries:
        weight = _weight(e)
        if weight <= 0 or e.get("tier") not in TIER_STRENGTH:
            continue
        strength = TIER_STRENGTH[e["tier"]] if grounds(e) else TIER_STRENGTH[MODEL_ASSERTION]
        term = min(strength * K * weight, _MAX_TERM)
        terms.append(term if e.get("direction", "+") == "+" else -term)
    # fsum is exact, so the result does not depend on the order the entries were applied in.
    value = _logistic(math.fsum(terms))
    if not any(grounds(e) for e in entries):
        value = min(value, MODEL_ASSERTION_CAP)
    return value
