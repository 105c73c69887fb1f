"""The Substrate facade: commands become events in the log through its write door; reads come from the read models."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from projections.bulkwork import bulk_work
from service.domain.errors import ConcurrencyError
from service.domain.events import ItemPut, ItemRemoved, ItemUpdated, NewEvent, StoredEvent, normalize_json
from service.domain.items import SubstrateItem, is_generated_id
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_count, require_name
from service.search import ranking, upkeep
from service.search.upkeep import note_search
from service.store import reads
from service.store.database import Database, open_database, reader
from service.store.eventread import PROGRESS_EVERY
from service.store.eventstore import ChainReport, EventStore
from service.store.export import SNAPSHOT_NAME, read_snapshot, write_snapshot
from service.store.statistics import refresh_statistics
from service.store.timetravel import resolve_position
from service.substrate.door import OPERATOR_ENV, SecretPolicy, WriteDoor, check_policy

__all__ = ["OPERATOR_ENV", "SecretPolicy", "Substrate"]

_T = TypeVar("_T")
_BULK_CHUNK = 5000


class Substrate(WriteDoor):
    """A shard of the knowledge substrate on PostgreSQL: typed, provenanced, scoped items behind an event log."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        secret_policy: SecretPolicy = "redact",
        url: str | None = None,
        read_url: str | None = None,
        principal: str = "local",
        operator: str | None = None,
        _database: Database | None = None,
    ) -> None:
        self.secret_policy: str = check_policy(secret_policy)
        if not isinstance(principal, str) or not principal:
            raise InvalidArgument(f"principal must be a non-empty string, got {principal!r}")
        self.principal = principal
        # The operator administers public and every scope nobody owns (service.domain.policy); $SUBSTRATE_ADMIN.
        chosen = operator if operator is not None else os.environ.get(OPERATOR_ENV) or None
        self.operator = None if chosen is None else require_name(chosen, "operator")
        # False: the spec's trusted, unrestricted store (the caller vouches for every ``by``); True: a handle bound
        # to ``principal`` (with_principal(), every HTTP request), whose writes the door authorizes.
        self.restricted = False
        self.root = str(root) if root is not None else None
        self._owns_db = True
        self._db = _database or open_database(url=url, root=root, read_url=read_url)
        self.engine = self._db.engine
        self._reads = reader(self.engine)  # single-statement reads: autocommit (see service.store.database.reader)
        self.events = EventStore(self.engine)
        self.position = 0  # the log position of this handle's last write
        self.read_only = False
        self.as_of_seq: int | None = None
        if root is not None and _database is None:
            self._adopt_snapshot()

    def _adopt_snapshot(self) -> None:
        """A root whose store has no events yet adopts the items.jsonl saved there, as the spec's store loads it on
        open; a store with a log keeps it (the log is the truth, the file an export)."""
        if not (Path(str(self.root)) / SNAPSHOT_NAME).is_file() or self.events.head() != 0:
            return
        try:
            self.load()
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Release the connection pool (an ephemeral store's database is dropped); derived handles do nothing."""
        if self._owns_db:
            self._db.close()

    def with_principal(self, principal: str) -> Substrate:
        """Another handle on the same database, bound to ``principal``: its writes are recorded as that principal's,
        and the write door authorizes each of them by the persisted grants, as HTTP does (service.domain.policy)."""
        handle = Substrate(
            _database=self._db,
            principal=principal,
            secret_policy=self.secret_policy,  # type: ignore[arg-type]
        )
        handle.operator = self.operator
        handle.root = self.root
        handle.restricted = True
        handle._owns_db = False
        return handle

    def as_of(self, at: int | datetime) -> Substrate:
        """A read-only view of the store as it was right after event ``at`` (a seq) or at time ``at``: its reads are
        queries over the states valid there (service.store.reads), on this handle's database; it writes nothing and
        costs nothing to keep (closing it is a no-op)."""
        seq = resolve_position(self.events, at)
        view = Substrate(_database=self._db, principal=self.principal, secret_policy=self.secret_policy)  # type: ignore[arg-type]
        view.root = self.root
        view._owns_db = False
        view.operator = self.operator
        view.restricted = self.restricted
        view.read_only = True
        view.as_of_seq = seq
        view.position = seq  # a read replica serves the view once it holds the view's position
        return view

    def __enter__(self) -> Substrate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self._db.url

    def event_item(self, item: SubstrateItem, *, fresh: bool = False) -> dict[str, Any]:
        """``item`` validated and in the JSON form an event carries (a deep copy; the door secret-guards it).
        ``fresh``: built just now by this service (not revalidated); else a copy is revalidated, since the caller may
        have changed the object after constructing it."""
        if not isinstance(item, SubstrateItem):
            raise InvalidArgument(f"put expects a SubstrateItem, got {type(item).__name__}")
        try:
            return normalize_json((item if fresh else dataclasses.replace(item)).json_view(), "item")
        except RecursionError:
            raise InvalidArgument("item is nested too deeply to store") from None

    def put(self, item: SubstrateItem, *, secret_policy: SecretPolicy | None = None) -> str:
        """Add or replace an item (a defensive, secret-guarded copy); returns its id."""
        data = self.event_item(item)
        event = NewEvent(stream=data["id"], event=ItemPut(item=data), scope=data["scope"], normalized=True)
        return self.append([event], secret_policy=secret_policy)[0].stream

    def add(self, kind: str, text: str = "", **kw: Any) -> str:
        """Build a SubstrateItem and put() it."""
        secret_policy = kw.pop("secret_policy", None)
        return self.put(SubstrateItem(kind=kind, text=text, **kw), secret_policy=secret_policy)

    def put_many(self, items: Iterable[SubstrateItem], *, secret_policy: SecretPolicy | None = None) -> list[str]:
        """The bulk path: every item through the door, appended in one transaction per chunk (the database writes
        chunk k while the next one is checked; service.store.bulk_append)."""
        ids: list[str] = []
        pending: list[NewEvent] = []
        # Ids generated in this process for new items are not looked up in the log (5,000 index probes a batch):
        # a collision, however unlikely, fails the batch's compare-and-set and the batch takes the locked path.
        generated: list[str] = []
        given: list[str] = []
        appender = self.bulk_appender(self._wrote, secret_policy=secret_policy)

        def submit() -> None:
            appender.submit(pending, versions=self.events.stream_versions(given, new=generated) if pending else None)

        try:
            with bulk_work():  # no collector passes, quick hand-offs to the writer (projections.bulkwork)
                for item in items:
                    data = self.event_item(item)
                    pending.append(
                        NewEvent(stream=data["id"], event=ItemPut(item=data), scope=data["scope"], normalized=True)
                    )
                    ids.append(data["id"])
                    (generated if is_generated_id(item.id) else given).append(data["id"])
                    if len(pending) >= _BULK_CHUNK:
                        submit()
                        pending, generated, given = [], [], []
                submit()
                appender.finish()
        finally:
            appender.close()
        refresh_statistics(self.engine, len(ids))
        return ids

    def _wrote(self, stored: Sequence[StoredEvent], _context: object) -> None:
        self.position = stored[-1].seq

    def update(self, item_id: str, *, secret_policy: SecretPolicy | None = None, **fields: Any) -> SubstrateItem:
        """Change named fields (revalidated, secret-guarded); retries on a concurrent writer, never loses one."""
        new_id = fields.pop("id", item_id)
        for _ in retries():
            row = self._row(item_id)
            if row is None:
                raise KeyError(item_id)  # checked first: an absent item is a KeyError whatever the fields
            if new_id != item_id:
                raise ValueError(f"update cannot change an item's id ({item_id!r} -> {new_id!r}); put a new item")
            current, version = row
            try:
                changed = dataclasses.replace(current, **fields)
            except TypeError as exc:
                raise InvalidArgument(f"update: {exc}") from None
            data = self.event_item(changed, fresh=True)  # validated just now, by replace()
            event = ItemUpdated(item=data, fields=sorted(fields))
            change = NewEvent(item_id, event, scope=data["scope"], expected_version=version, normalized=True)
            try:
                (stored,) = self.append([change], secret_policy=secret_policy)
            except ConcurrencyError:
                continue
            return SubstrateItem(**stored.data["item"]).copy()
        raise ConcurrencyError(item_id, -1, f"update of {item_id!r} kept colliding with other writers; gave up")

    def remove(self, item_id: str) -> bool:
        """Remove an item by id; True when something was removed."""
        for _ in retries():
            row = self._row(item_id)
            if row is None:
                return False
            current, version = row
            gone = NewEvent(item_id, ItemRemoved(id=item_id), scope=current.scope, expected_version=version)
            try:
                self.append([gone])
            except ConcurrencyError:
                continue
            return True
        raise ConcurrencyError(item_id, -1, f"remove of {item_id!r} kept colliding with other writers; gave up")

    # ----------------------------------------------------------------- reads (service.store.reads; as of a
    # position on a view from as_of())
    def _row(self, item_id: str) -> tuple[SubstrateItem, int] | None:
        if not isinstance(item_id, str):
            return None  # no item has such an id: remove() answers False and update() KeyError, as get() answers None
        with self._reads.connect() as c:
            return reads.item_row(c, item_id)

    def get(self, item_id: str) -> SubstrateItem | None:
        """A defensive copy of the stored item, or None."""
        if not isinstance(item_id, str):
            return None
        return self._reading(lambda c: reads.get_item(c, item_id, self.as_of_seq))

    def get_many(self, ids: Sequence[str]) -> dict[str, SubstrateItem]:
        """The stored items among ``ids`` (one query), keyed by id."""
        if not ids:
            return {}
        return self._reading(lambda c: reads.get_items(c, ids, self.as_of_seq))

    def all(self, *, kind: str | None = None, scope: str | None = None) -> list[SubstrateItem]:
        """Defensive copies of the stored items in insertion order, optionally filtered by kind and scope."""
        return list(self.iter_items(kind=kind, scope=scope))

    def iter_items(
        self, *, kind: str | None = None, scope: str | None = None, scopes: Sequence[str] | None = None
    ) -> Iterator[SubstrateItem]:
        """Stream the stored items in insertion order (filters applied in SQL)."""
        return reads.iter_items(self._read_engine(), kind=kind, scope=scope, scopes=scopes, at=self.as_of_seq)

    def page_items(
        self, *, kind: str | None = None, scopes: Sequence[str] | None = None, after: int = 0, limit: int = 100
    ) -> tuple[list[SubstrateItem], int | None]:
        """One page of items in insertion order after position ``after`` (keyset, in SQL): (items, next or None)."""
        return self._reading(
            lambda c: reads.page_items(c, kind=kind, scopes=scopes, after=after, limit=limit, at=self.as_of_seq)
        )

    def __len__(self) -> int:
        return self._reading(lambda c: reads.count_items(c, self.as_of_seq))

    def __contains__(self, item_id: object) -> bool:
        if not isinstance(item_id, str):
            return False
        return self._reading(lambda c: reads.has_item(c, item_id, self.as_of_seq))

    def _read_engine(self) -> Engine:
        """Where this handle reads: the read replica once it holds this handle's last write (a bounded wait, see
        service.store.replica), else the primary."""
        replica = self._db.replica
        return replica.engine if replica is not None and replica.holds(self.position) else self.engine

    def _reading(self, read: Callable[[Connection], _T]) -> _T:
        """``read`` on an autocommit connection where this handle reads (the primary if the replica fails it)."""
        engine = self._read_engine()
        if engine is self.engine:
            with self._reads.connect() as c:
                return read(c)

        def on(target: Engine) -> _T:
            with reader(target).connect() as c:
                return read(c)

        assert self._db.replica is not None  # the engine is the replica's
        return self._db.replica.run(on, self.engine)

    # ----------------------------------------------------------------- search
    def reindex(self) -> None:
        """Bring the search index up to the log and (re)fit the embedding of every dirty visibility domain."""
        upkeep.reindex(self.engine)

    def search(
        self, query: Any, k: int = 5, *, kind: str | None = None, scope: str | None = None
    ) -> list[tuple[SubstrateItem, float]]:
        """The k most relevant items as (item, score), best first; k is an exact non-negative int. A non-text query
        (a number, a dict of fields) ranks by lexical overlap alone. On a view from as_of(), the search as of its
        position (lexical: see docs/search.md)."""
        require_count(k, "k")
        at = self.as_of_seq
        if at is None:
            note_search(scope)  # the background upkeep keeps the domains being searched current first

        def run(engine: Engine) -> list[tuple[SubstrateItem, float]]:
            return ranking.search(engine, query, k, kind=kind, scope=scope, at=at)

        engine = self._read_engine()
        if engine is self.engine or self._db.replica is None:
            return run(engine)
        return self._db.replica.run(run, self.engine)

    # ----------------------------------------------------------------- persistence
    def _root_for(self, root: str | os.PathLike[str] | None) -> Path:
        chosen = root if root is not None else self.root
        if chosen is None:
            raise ValueError("no root: pass root= to save()/load() or open the Substrate with a root")
        return Path(chosen)

    def save(self, root: str | os.PathLike[str] | None = None, *, progress: Callable[[int], None] | None = None) -> str:
        """Write every item to {root}/items.jsonl atomically (temp file, fsync, os.replace); return the root, which
        later save()/load() calls default to. ``progress`` gets the items written so far."""
        target = self._root_for(root)
        write_snapshot(target, self.iter_items(), progress)
        self.root = str(target)
        return self.root

    def load(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        progress: Callable[[int], None] | None = None,
        on_phase: Callable[[str], None] | None = None,
    ) -> None:
        """Replace this store's items with {root}/items.jsonl, all-or-nothing (errors name file, line, preview); the
        root becomes the default of later save()/load() calls.

        ``on_phase`` is told when each phase starts, and ``progress`` gets its count so far: "read" (lines parsed),
        "guard" (items validated and secret-guarded), "write" (events appended, in one transaction).
        """
        self._writable()
        tell = on_phase or (lambda _phase: None)
        target = self._root_for(root)
        tell("read")
        items = read_snapshot(target, progress)
        tell("guard")
        events = []
        for n, it in enumerate(items, start=1):
            data = self.event_item(it, fresh=True)  # parsed and validated just now, by read_snapshot
            events.append(NewEvent(stream=data["id"], event=ItemPut(item=data), scope=data["scope"], normalized=True))
            if progress is not None and (n % PROGRESS_EVERY == 0 or n == len(items)):
                progress(n)
        actor, puts, _ = self._admit(events, None, None, restore=True)  # the door's checks on every item
        tell("write")
        keep = {e.stream for e in puts}
        with self.engine.begin() as conn:
            conn.execute(text("SELECT 1 FROM log_head WHERE id = 1 FOR UPDATE"))
            existing = conn.execute(text("SELECT id, scope FROM items ORDER BY pos")).all()
            gone = _out_of_file_order(puts, [i for i, _ in existing]) | ({i for i, _ in existing} - keep)
            removals = [NewEvent(stream=i, event=ItemRemoved(id=i), scope=s) for i, s in existing if i in gone]
            if removals and self.restricted:
                self._authorize(removals, actor)
            stored = self.events.append(removals + puts, actor, conn=conn, progress=progress)
        if stored:
            self.position = stored[-1].seq
            refresh_statistics(self.engine, len(stored))
        self.root = str(target)

    # ----------------------------------------------------------------- audit
    def verify_chain(self) -> ChainReport:
        """Re-walk the hash chain and every content address."""
        return self.events.verify_chain()


def _out_of_file_order(rows: Sequence[NewEvent], stored: Sequence[str]) -> set[str]:
    """The stored ids a load must remove and put anew so that all() lists the items in the file's order: every
    stored one after the file's longest prefix of stored items already in stored order (a put keeps an item's
    place; a new item goes last)."""
    rank = {item_id: n for n, item_id in enumerate(stored)}
    last, moved, in_order = -1, set(), True
    for e in rows:
        n = rank.get(e.stream)
        if in_order and n is not None and n > last:
            last = n
            continue
        in_order = False
        if n is not None:
            moved.add(e.stream)
    return moved
