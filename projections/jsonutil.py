"""Fast JSON in and out of jsonb (orjson), falling back to the stdlib for values orjson refuses."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "loads"]


def dumps(value: Any) -> str:
    """Serialize for a jsonb parameter."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


# orjson reads an integer beyond 64 bits as a float (2**70 -> 1.18e21), silently. Such a float is >= 1e16 in
# magnitude, which orjson writes with an exponent ("1.1805916207174113e+21"): re-serializing the parsed value
# (~0.2 us, a tenth of a regex scan of the text) and finding no "e+" proves no integer was rounded. Texts where
# it occurs (a big float, or "e+" inside a string: a cheap superset) are read by the stdlib, which keeps every
# integer exact.
_EXPONENT = b"e+"


def loads(text: str | bytes) -> Any:
    """Parse jsonb output; integers beyond 64 bits stay exact ints (they go through the stdlib)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    if _EXPONENT in orjson.dumps(value):
        return json.loads(text)
    return value
