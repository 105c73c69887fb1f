"""Typed errors shared across the service."""

from __future__ import annotations

__all__ = ["ConcurrencyError", "ReadOnlyError", "SubstrateError"]


class SubstrateError(Exception):
    """Base class of the service's own errors."""


class ConcurrencyError(SubstrateError):
    """A writer's expected stream version was stale: another writer appended first; nothing was written."""

    def __init__(self, stream: str, expected: int, message: str | None = None) -> None:
        self.stream = stream
        self.expected = expected
        super().__init__(message or f"stream {stream!r} moved past version {expected}; nothing was written")


class ReadOnlyError(SubstrateError):
    """A write was attempted on a read-only view (for example a time-travel view)."""
