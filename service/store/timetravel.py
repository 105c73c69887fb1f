"""Time travel: a read-only view of the store as of any log position or timestamp, replayed from the log."""

from __future__ import annotations

import uuid
import weakref
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import text

from projections.runner import build_snapshot, drop_snapshot
from service.db import Database, guard_parameters
from service.validation import InvalidArgument

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["open_view", "resolve_position"]


def resolve_position(store: Substrate, at: int | datetime) -> int:
    """The seq a view ``as of at`` ends at: ``at`` itself (0..head), or the last event recorded at or before a time."""
    head = store.events.head()
    if isinstance(at, datetime):
        when = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        with store.engine.connect() as c:
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


def open_view(store: Substrate, at: int | datetime) -> Substrate:
    """Replay the log prefix into a private schema and open a read-only Substrate on it."""
    from service.substrate import Substrate

    seq = resolve_position(store, at)
    schema = f"asof_{seq}_{uuid.uuid4().hex[:10]}"
    build_snapshot(store.engine, schema, until=seq)
    engine = guard_parameters(
        sa.create_engine(
            store.engine.url,
            connect_args={"options": f"-c search_path={schema},public"},
            pool_size=2,
            max_overflow=4,
        )
    )
    db = Database(engine=engine, url=store.url)
    db._finalizer = weakref.finalize(db, _cleanup, engine, store.engine, schema)
    view = Substrate(_database=db, principal=store.principal, secret_policy=store.secret_policy)  # type: ignore[arg-type]
    view.read_only = True
    view.as_of_seq = seq
    view.root = store.root
    view._owns_db = True
    return view
