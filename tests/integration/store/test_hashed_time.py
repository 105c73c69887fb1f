"""Event times are under the content address (hash version 2); a log written before keeps version 1 and verifies."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from sqlalchemy import text

from service import Substrate
from service.domain.events import HASH_VERSION, stored_address
from service.store.audit import verify_store


def _as_written_before_times_were_hashed(store: Substrate) -> None:
    """Re-address the whole log as version 1 (no time in the hash), as a store written before migration 0008 is."""
    prev = None
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        for e in list(store.events.read()):
            old = dataclasses.replace(e, prev=prev, hash_version=1)
            event_id = stored_address(old)
            c.execute(
                text("UPDATE events SET event_id = :id, prev = :prev, hash_version = 1 WHERE seq = :seq"),
                {"id": event_id, "prev": prev, "seq": e.seq},
            )
            prev = event_id
        c.execute(text("UPDATE log_head SET event_id = :id WHERE id = 1"), {"id": prev})
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))


def test_new_events_put_their_time_under_their_address(store: Substrate) -> None:
    store.add("text", "one")
    (e,) = store.events.read()
    assert e.hash_version == HASH_VERSION == 2 and stored_address(e) == e.event_id
    assert e.recorded_at is not None
    later = dataclasses.replace(e, recorded_at=e.recorded_at + timedelta(microseconds=1))
    assert stored_address(later) != e.event_id


def test_a_store_written_before_times_were_hashed_still_verifies_and_keeps_writing(store: Substrate) -> None:
    first = store.add("text", "written before")
    store.update(first, text="changed before")
    _as_written_before_times_were_hashed(store)
    assert [e.hash_version for e in store.events.read()] == [1, 1]
    assert store.events.verify_chain().ok
    store.add("text", "written after")
    store.put_many([store.get(first).copy()])  # type: ignore[union-attr]
    versions = [e.hash_version for e in store.events.read()]
    assert versions == [1, 1, 2, 2]
    report = verify_store(store)
    assert report.ok, report.summary()


def test_an_old_event_backdated_past_its_neighbour_is_still_caught(store: Substrate) -> None:
    store.add("text", "a")
    store.add("text", "b")
    _as_written_before_times_were_hashed(store)
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        c.execute(text("UPDATE events SET recorded_at = recorded_at - interval '1 hour' WHERE seq = 2"))
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))
    report = store.events.verify_chain()
    assert not report.ok and report.first_bad_seq == 2 and "re-dated" in report.reason


def test_an_event_passed_off_as_version_one_among_newer_ones_is_caught(store: Substrate) -> None:
    for t in ("a", "b", "c"):
        store.add("text", t)
    e = list(store.events.read())[1]
    downgraded = dataclasses.replace(e, hash_version=1)
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        # Re-addressed without its time: the version going back names it, before its successor's link breaks.
        c.execute(
            text("UPDATE events SET hash_version = 1, event_id = :id WHERE seq = 2"), {"id": stored_address(downgraded)}
        )
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))
    report = store.events.verify_chain()
    assert not report.ok and report.first_bad_seq == 2
