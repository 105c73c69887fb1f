"""Canonical JSON and content addresses: the bytes every hash in the store is computed over."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "event_address", "item_digest"]


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def event_address(
    *, stream: str, version: int, type: str, data: Any, principal: str, scope: str | None, prev: str | None
) -> str:
    """``sha256:<hex>`` of the canonical JSON of the event and its predecessor's address."""
    body = {
        "stream": stream,
        "version": version,
        "type": type,
        "data": data,
        "principal": principal,
        "scope": scope,
        "prev": prev,
    }
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()


def item_digest(item_json: dict[str, Any]) -> str:
    """The content address of one item state (its revision digest)."""
    return "sha256:" + hashlib.sha256(canonical_json(item_json)).hexdigest()
