"""Canonical JSON and content addresses: the bytes every hash in the store is computed over."""

from __future__ import annotations

import hashlib
import json
from builtins import type as builtins_type
from datetime import UTC, datetime
from typing import Any

import orjson

__all__ = [
    "canonical_json",
    "canonical_time",
    "clear_digest_memo",
    "event_address",
    "event_item_digest",
    "item_digest",
    "reference_canonical_json",
]


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
    t = type(value)
    if t is dict:
        values: Any = value.values()
    elif t is list:
        values = value
    else:
        return _orjson_safe_scalar(value)
    try:
        for v in values:
            tv = type(v)
            if tv is str or tv is int or tv is bool or v is None:
                continue
            if tv is float:
                if v != 0.0 and not 1e-4 <= abs(v) < 1e16:
                    return False
            elif tv is dict or tv is list:
                if v and not _orjson_safe(v):  # an empty one needs no call (an item has five, as a rule)
                    return False
            else:
                return False
    except RecursionError:
        return False
    return True


def _orjson_safe_scalar(v: Any) -> bool:
    t = type(v)
    if t is float:
        return bool(v == 0.0 or 1e-4 <= abs(v) < 1e16)
    return t is str or t is int or t is bool or v is None


def canonical_time(when: datetime) -> str:
    """An event time as its address hashes it: UTC, microseconds, ``2026-12-04T04:29:00.000123Z``."""
    if when.tzinfo is None:
        raise ValueError("an event time must carry its zone")
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_address(
    *,
    stream: str,
    version: int,
    type: str,
    data: Any,
    principal: str,
    scope: str | None,
    prev: str | None,
    recorded_at: str | None = None,
) -> str:
    """``sha256:<hex>`` of the canonical JSON of the event and its predecessor's address.

    ``recorded_at`` (``canonical_time``) puts the event's time under the address (hash version 2); without it the
    address is the version 1 one, which events written before times were hashed keep.
    """
    # "data" sorts before every other key, so the body's canonical JSON is data's, then the rest's: an item a
    # projector digests next (an event carrying {"item": ...}) is serialized once, and its digest memoized.
    fields: dict[str, Any] = {
        "prev": prev,
        "principal": principal,
        "scope": scope,
        "stream": stream,
        "type": type,
        "version": version,
    }
    if recorded_at is not None:
        fields["recorded_at"] = recorded_at
    rest = _canonical_scalars(fields)
    item = data.get("item") if builtins_type(data) is dict and len(data) == 1 else None
    if builtins_type(item) is dict:
        item_json = canonical_json(item)
        _remember(item, "sha256:" + hashlib.sha256(item_json).hexdigest())
        data_json = b'{"item":' + item_json + b"}"
    else:
        data_json = canonical_json(data)
    return "sha256:" + hashlib.sha256(b'{"data":' + data_json + b"," + rest[1:]).hexdigest()


def _canonical_scalars(value: dict[str, Any]) -> bytes:
    """``canonical_json`` of a dict of strings, ints and None (no float: orjson writes them as the stdlib does)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # ints beyond 64 bits, lone surrogates
        return reference_canonical_json(value)


def item_digest(item_json: dict[str, Any]) -> str:
    """The content address of one item state (its revision digest)."""
    return "sha256:" + hashlib.sha256(canonical_json(item_json)).hexdigest()


_MEMO: dict[int, tuple[dict[str, Any], str]] = {}
_MEMO_MAX = 8192


def event_item_digest(item_json: dict[str, Any]) -> str:
    """``item_digest`` of an item state carried by a stored event, memoized by identity.

    Several projectors digest the same event's item in one apply; stored events are never mutated, and the memo
    holds the object itself, so an id is never reused while its entry lives.
    """
    hit = _MEMO.get(id(item_json))
    if hit is not None and hit[0] is item_json:
        return hit[1]
    digest = item_digest(item_json)
    _remember(item_json, digest)
    return digest


def _remember(item_json: dict[str, Any], digest: str) -> None:
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[id(item_json)] = (item_json, digest)


def clear_digest_memo() -> None:
    """Drop the memo (apply_events calls this after each batch, so no item outlives its batch here)."""
    _MEMO.clear()
