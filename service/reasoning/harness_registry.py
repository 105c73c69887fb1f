"""The harness registry: harness manifests stored as scoped, tagged artifacts on a substrate."""

from __future__ import annotations

from typing import Any

from service.domain.validation import require_name
from service.reasoning.action import content_tokens

__all__ = ["find_harnesses", "register_harness"]

_TAG = "harness"


def _manifest(harness: Any) -> dict[str, Any]:
    allowed = harness.allowed_kinds
    return {
        "harness": harness.name,
        "description": harness.description,
        # None means "every kind", which an empty list would silently turn into "no kind at all".
        "allowed_kinds": None if allowed is None else list(allowed),
        "min_confidence": float(harness.min_confidence),
        "actions": [{"name": a.name, "kind": a.kind, "cost": float(a.cost)} for a in harness.actions],
    }


def register_harness(substrate: Any, harness: Any, *, scope: str = "local") -> str:
    """Store ``harness``'s manifest as a ``harness``-tagged artifact in ``scope``; returns the item id."""
    scope = require_name(scope, "scope")
    return substrate.add(
        kind="artifact",
        text=f"harness {harness.name}: {harness.description}" if harness.description else f"harness {harness.name}",
        payload=_manifest(harness),
        provenance={"origin": "harness-registry"},
        scope=scope,
        tags=[_TAG],
    )


def find_harnesses(substrate: Any, query: str = "", *, scope: str | None = None) -> list[dict[str, Any]]:
    """Manifests of registered harnesses (in ``scope`` if given) sharing a content word with ``query``, best first."""
    items = substrate.all(kind="artifact", scope=scope) if scope is not None else substrate.all(kind="artifact")
    found = [i for i in items if _TAG in i.tags and isinstance(i.payload.get("harness"), str)]
    wanted = content_tokens(query or "")
    if wanted:
        overlap = {i.id: len(wanted & content_tokens(i.text)) for i in found}
        found = sorted((i for i in found if overlap[i.id]), key=lambda i: -overlap[i.id])
    return [{**i.payload, "id": i.id, "scope": i.scope, "text": i.text} for i in found]
