"""The pipelined bulk appender: batches commit in order, and a batch another writer raced falls back safely."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from service import Substrate, SubstrateItem
from service.domain.events import ItemPut, NewEvent, StoredEvent
from service.store.audit import verify_store
from service.store.bulk_append import BulkAppender
from service.store.kept import hints_for, kept_for


def _events(store: Substrate, prefix: str, n: int) -> list[NewEvent]:
    out = []
    for i in range(n):
        data = store.event_item(SubstrateItem(kind="text", text=f"{prefix} {i}", id=f"{prefix}-{i}"))
        out.append(NewEvent(stream=data["id"], event=ItemPut(item=data), scope=data["scope"], normalized=True))
    return out


def test_batches_commit_in_order_each_in_one_transaction(store: Substrate) -> None:
    written: list[tuple[Any, list[int]]] = []
    appender = BulkAppender(store.events, "p", lambda stored, ctx: written.append((ctx, [s.seq for s in stored])))
    for b in range(4):
        appender.submit(_events(store, f"b{b}", 25), b)
    appender.finish()
    assert [ctx for ctx, _ in written] == [0, 1, 2, 3]
    assert [seqs for _, seqs in written] == [list(range(1 + 25 * b, 26 + 25 * b)) for b in range(4)]
    assert len(store) == 100 and verify_store(store).ok


def test_a_batch_raced_by_another_writer_is_appended_under_the_lock_and_the_chain_stays_whole(store: Substrate) -> None:
    store.add("text", "first")
    other = Substrate(url=store.url)  # another engine: its appends move the head under the appender's feet
    original, calls = store.events.insert_stamped, []

    def raced(stored: list[StoredEvent], statement: Any) -> list[StoredEvent] | None:
        calls.append(stored[0].stream)
        if len(calls) == 2:
            other.add("text", "sneaked in")
        return original(stored, statement)

    store.events.insert_stamped = raced  # type: ignore[method-assign]
    written: list[list[StoredEvent]] = []
    try:
        appender = BulkAppender(store.events, "p", lambda stored, ctx: written.append(list(stored)))
        for b in range(4):
            appender.submit(_events(store, f"r{b}", 10))
        appender.finish()
    finally:
        other.close()
    # Batch 2 lost its compare-and-set (nothing written) and was appended under the lock, and so was the batch
    # stamped after it; the log stays one gapless chain.
    assert [len(w) for w in written] == [10, 10, 10, 10]
    assert [w[0].stream for w in written] == ["r0-0", "r1-0", "r2-0", "r3-0"]
    seqs = [s.seq for w in written for s in w]
    assert seqs == sorted(seqs) and len(set(seqs)) == 40
    assert store.events.head() == 1 + 1 + 40 and len(store) == 42
    report = verify_store(store)
    assert report.ok, report


def test_a_put_over_an_item_in_the_batch_in_flight_takes_the_next_version(store: Substrate) -> None:
    appender = BulkAppender(store.events, "p", lambda stored, ctx: None)
    appender.submit(_events(store, "same", 5))
    appender.submit(_events(store, "same", 5))  # the same ids again, stamped while the first batch is in flight
    appender.finish()
    assert [e.version for e in store.events.read(stream="same-0")] == [1, 2]
    assert len(store) == 5 and verify_store(store).ok


def test_ingest_alongside_concurrent_puts_keeps_one_chain_and_every_write(store: Substrate, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    import service.ingest.batch as ingest_mod
    from service import ingest_documents

    monkeypatch.setattr(ingest_mod, "BATCH_SIZE", 7)  # many small batches, so puts land between them
    errors: list[BaseException] = []
    receipts: list[Any] = []

    def putter(t: int) -> None:
        try:
            for n in range(30):
                store.add("text", f"put {t}:{n}")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def ingester() -> None:
        try:
            receipts.append(ingest_documents(store, (f"doc {i}" for i in range(200)), source="stress"))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    pool = [threading.Thread(target=putter, args=(t,)) for t in range(3)] + [threading.Thread(target=ingester)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors
    assert len(receipts[0]) == 200 and not receipts[0].failed
    assert len(store) == 3 * 30 + 200 and store.events.head() == 290
    report = verify_store(store)
    assert report.ok, report


def test_one_batch_with_repeated_ids_and_contents_projects_like_the_ordinary_path(store: Substrate) -> None:
    def put(item_id: str, body: str) -> NewEvent:
        data = store.event_item(SubstrateItem(kind="text", text=body, id=item_id, created_at=1.0))
        return NewEvent(stream=item_id, event=ItemPut(item=data), scope="local", normalized=True)

    store.add("text", "warm the head")
    batch = [put("x", "one"), put("y", "same"), put("x", "two"), put("z", "same"), put("x", "three")]
    written: list[list[StoredEvent]] = []
    appender = BulkAppender(store.events, "p", lambda stored, ctx: written.append(list(stored)))
    appender.submit(batch)
    appender.finish()
    assert [s.seq for s in written[0]] == [2, 3, 4, 5, 6]
    assert store.get("x").text == "three" and [e.version for e in store.events.read(stream="x")] == [1, 2, 3]  # type: ignore[union-attr]
    with store.engine.connect() as c:
        assert c.execute(text("SELECT pos, seq, version FROM items WHERE id = 'x'")).one() == (2, 6, 3)
        assert c.execute(text("SELECT count(*) FROM revisions")).scalar_one() == 1 + 3 + 2  # warm, x thrice, y, z
    report = verify_store(store)  # live read models == a replay through the ordinary per-projector plans
    assert report.ok, report


def test_a_batch_whose_reply_was_lost_after_commit_is_not_written_twice(store: Substrate, monkeypatch: Any) -> None:
    import contextlib

    import psycopg

    store.add("text", "first")
    kept, lost = kept_for(store.engine), []
    real = kept.connection

    @contextlib.contextmanager
    def commit_then_lose_the_reply() -> Any:
        with real() as raw:
            yield raw  # the batch's transaction commits when the caller's block ends
            if not lost:
                lost.append(1)
                raw.close()
                raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(kept, "connection", commit_then_lose_the_reply)
    written: list[list[int]] = []
    appender = BulkAppender(store.events, "p", lambda stored, ctx: written.append([s.seq for s in stored]))
    for b in range(3):
        appender.submit(_events(store, f"l{b}", 10))
    appender.finish()
    monkeypatch.undo()
    assert lost and written == [list(range(2 + 10 * b, 12 + 10 * b)) for b in range(3)]
    assert store.events.head() == 31 and len(store) == 31 and verify_store(store).ok


def test_a_generated_id_that_already_has_events_still_lands_as_its_next_version(store: Substrate) -> None:
    first = SubstrateItem(kind="text", text="first state")
    store.put(first)
    hints_for(store.engine).versions.clear()  # as if another process had written it: nothing hints its version
    again = SubstrateItem(kind="text", text="second state", id=first.id)  # the same generated id object
    others = [SubstrateItem(kind="text", text=f"new {i}") for i in range(20)]
    ids = store.put_many([*others[:10], again, *others[10:]])
    assert ids[10] == first.id
    assert [e.version for e in store.events.read(stream=first.id)] == [1, 2]
    assert store.get(first.id).text == "second state" and len(store) == 21
    assert verify_store(store).ok
