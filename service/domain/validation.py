"""Shared argument validators: one definition of what a count, a score or a name means."""

from __future__ import annotations

import math
import numbers
from typing import Any

from service.domain.errors import InvalidArgument

__all__ = ["InvalidArgument", "require_count", "require_finite", "require_name"]


def require_count(value: Any, name: str = "k") -> int:
    """Return ``value`` if it is an exact, non-negative int (never a bool or a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
    if value < 0:
        raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
    return value


def require_finite(value: Any, name: str, *, minimum: float | None = 0.0) -> float:
    """Return ``value`` as a float if it is a finite real number (>= ``minimum`` when given): an int, a float, or
    any other real number type (numpy's float32, a Fraction); never a bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(f"{name} must be a finite number, got {value!r}")
    f = float(value)
    if not math.isfinite(f):
        raise InvalidArgument(f"{name} must be finite, got {value!r}")
    if minimum is not None and f < minimum:
        raise InvalidArgument(f"{name} must be >= {minimum}, got {value!r}")
    return f


def require_name(value: Any, name: str) -> str:
    """Return ``value`` if it is a non-empty, non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{name} must be a non-empty string, got {value!r}")
    return value
