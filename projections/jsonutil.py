"""Fast JSON in and out of jsonb (orjson), falling back to the stdlib for values orjson refuses."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["dumps", "loads"]


def dumps(value: Any) -> str:
    """Serialize for a jsonb parameter."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


# orjson reads an integer beyond 64 bits as a float (2**70 -> 1.18e21), silently: a text with 19 or more digits in
# a row (anywhere, strings included: a cheap superset) is read by the stdlib, which keeps every integer exact.
_LONG_DIGITS_STR = re.compile(r"[0-9]{19}")
_LONG_DIGITS_BYTES = re.compile(rb"[0-9]{19}")


def loads(text: str | bytes) -> Any:
    """Parse jsonb output; integers beyond 64 bits stay exact ints (they go through the stdlib)."""
    long_digits = _LONG_DIGITS_BYTES if isinstance(text, (bytes, bytearray)) else _LONG_DIGITS_STR
    if long_digits.search(text) is not None:  # type: ignore[arg-type]
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
