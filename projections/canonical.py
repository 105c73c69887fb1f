"""Canonical JSON and content addresses: the bytes every hash in the store is computed over."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

__all__ = ["canonical_json", "event_address", "item_digest", "reference_canonical_json"]


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8 (the bytes of ``json.dumps(sort_keys=True, ensure_ascii=False)``)."""
    if _orjson_safe(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):  # ints beyond 64 bits, non-str keys, lone surrogates
            pass
    return reference_canonical_json(value)


def reference_canonical_json(value: Any) -> bytes:
    """The definition of the canonical bytes (the stdlib encoder); ``canonical_json`` is a faster equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _orjson_safe(value: Any) -> bool:
    """Whether orjson writes ``value`` byte for byte like the stdlib: it differs only on floats that Python
    writes with an exponent (|x| < 1e-4 or >= 1e16), and on non-finite floats (which canonical JSON refuses)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t is float:
            if not (v == 0.0 or 1e-4 <= abs(v) < 1e16):
                return False
        elif not (t is str or t is int or t is bool or v is None):
            return False
    return True
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
