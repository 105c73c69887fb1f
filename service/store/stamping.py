"""Numbering and addressing events before they are written: their data, their time and their content address."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from service.domain.events import HASH_VERSION, NewEvent, StoredEvent, canonical_time, event_address, normalize_json

__all__ = ["event_time", "stamp_event", "type_and_data"]


def type_and_data(e: NewEvent) -> tuple[str, dict[str, Any]]:
    """The event's type name and its normalized data."""
    type_name = e.event.type_name
    return type_name, (e.event.to_data() if e.normalized else normalize_json(e.event.to_data(), type_name))


def event_time(after: datetime | None) -> datetime:
    """The time of an event appended after one recorded at ``after``: now, but never earlier than ``after`` (a
    clock stepping back, or another host's clock ahead of ours, cannot make time run backwards along the log)."""
    now = datetime.now(UTC)
    return now if after is None or now > after else after


def stamp_event(
    e: NewEvent,
    type_name: str,
    data: dict[str, Any],
    principal: str,
    seq: int,
    version: int,
    prev: str | None,
    recorded_at: datetime,
) -> StoredEvent:
    """The event as it will be stored at ``seq``/``version`` after ``prev``, with its content address (its time
    included: hash version 2)."""
    event_id = event_address(
        stream=e.stream,
        version=version,
        type=type_name,
        data=data,
        principal=principal,
        scope=e.scope,
        prev=prev,
        recorded_at=canonical_time(recorded_at),
    )
    return StoredEvent(
        seq, e.stream, version, type_name, data, principal, e.scope, recorded_at, event_id, prev, HASH_VERSION
    )
