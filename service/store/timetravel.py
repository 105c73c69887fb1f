"""Time travel: which log position a read as of a seq or a time means (the reads themselves: service.store.reads)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlalchemy import text

from service.domain.validation import InvalidArgument
from service.store.eventstore import EventStore

__all__ = ["parse_position", "resolve_position"]

_SEQ = re.compile(r"\d{1,18}")


def parse_position(value: str) -> int | datetime:
    """An as-of position as a person writes it: a log position (an integer) or an ISO-8601 time (UTC when it names
    no zone)."""
    raw = value.strip()
    if _SEQ.fullmatch(raw):
        return int(raw)
    try:
        when = datetime.fromisoformat(raw.upper())  # RFC 3339 allows a lower-case t and z
    except ValueError:
        raise InvalidArgument(
            f"as_of must be a log position (integer) or an ISO-8601 datetime, got {value!r}"
        ) from None
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00: earlier than anything recorded
        return datetime.min.replace(tzinfo=UTC)


def resolve_position(log: EventStore, at: int | datetime) -> int:
    """The seq a view ``as of at`` ends at: ``at`` itself (0..head), or the last event recorded at or before a time."""
    head = log.head()
    if isinstance(at, datetime):
        when = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        with log.engine.connect() as c:
            seq = c.execute(
                text("SELECT coalesce(max(seq), 0) FROM events WHERE recorded_at <= :t"), {"t": when}
            ).scalar_one()
        return int(seq)
    if isinstance(at, bool) or not isinstance(at, int):
        raise InvalidArgument(f"as_of takes a seq (int) or a datetime, got {at!r}")
    if at < 0 or at > head:
        raise InvalidArgument(f"as_of seq must be between 0 and the log head ({head}), got {at}")
    return at
