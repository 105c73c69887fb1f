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


def loads(text: str | bytes) -> Any:
    """Parse jsonb output (integers beyond 64 bits go through the stdlib)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
