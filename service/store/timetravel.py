"""Time travel: a read-only view of the store as of any log position or timestamp, replayed from the log."""

from __future__ import annotations

import re
import uuid
import weakref
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import text

from projections.runner import build_snapshot, drop_snapshot
from service.domain.validation import InvalidArgument
from service.store.database import Database, guard_parameters
from service.store.eventstore import EventStore

__all__ = ["open_view", "parse_position", "resolve_position"]

_SEQ = re.compile(r"\d{1,18}")


def parse_position(value: str) -> int | datetime:
    """An as-of position as a person writes it: a log position (an integer) or an ISO-8601 time (UTC when it names
    no zone)."""
    raw = value.strip()
    if _SEQ.fullmatch(raw):
        return int(raw)
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidArgument(
            f"as_of must be a log position (integer) or an ISO-8601 datetime, got {value!r}"
        ) from None


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


def _cleanup(engine: sa.engine.Engine, owner: sa.engine.Engine, schema: str) -> None:
    engine.dispose()
    try:
        drop_snapshot(owner, schema)
    except Exception:  # noqa: BLE001 - best effort; the schema is disposable
        pass


def open_view(engine: sa.engine.Engine, url: str, seq: int) -> Database:
    """Replay the log prefix up to ``seq`` into a private schema and open a database handle on it."""
    schema = f"asof_{seq}_{uuid.uuid4().hex[:10]}"
    build_snapshot(engine, schema, until=seq)
    view_engine = guard_parameters(
        sa.create_engine(
            engine.url,
            connect_args={"options": f"-c search_path={schema},public"},
            pool_size=2,
            max_overflow=4,
        )
    )
    db = Database(engine=view_engine, url=url)
    db._finalizer = weakref.finalize(db, _cleanup, view_engine, engine, schema)
    return db
