"""The event log: one event per command, hash chain, immutability, concurrency and tamper evidence."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from projections.runner import rebuild, shadow_digests, table_digests
from service import ConcurrencyError, Substrate
from service.domain.events import ItemPut, NewEvent
from service.store.audit import verify_store


def _types(store: Substrate) -> list[str]:
    return [e.type for e in store.events.read()]


def test_commands_append_past_tense_events(store: Substrate) -> None:
    i = store.add("text", "a")
    store.update(i, text="b")
    store.remove(i)
    store.remove(i)  # nothing to remove: no event
    assert _types(store) == ["ItemPut", "ItemUpdated", "ItemRemoved"]
    versions = [e.version for e in store.events.read(stream=i)]
    assert versions == [1, 2, 3]


def test_chain_links_and_content_addresses(store: Substrate) -> None:
    for n in range(5):
        store.add("text", f"t{n}")
    events = list(store.events.read())
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert events[0].prev is None
    assert all(e.event_id.startswith("sha256:") and len(e.event_id) == 71 for e in events)
    assert all(b.prev == a.event_id for a, b in zip(events, events[1:]))
    assert store.verify_chain().ok


@pytest.mark.parametrize(
    "statement",
    ["UPDATE events SET principal = 'mallory'", "DELETE FROM events", "TRUNCATE events"],
)
def test_triggers_refuse_to_change_the_log(store: Substrate, statement: str) -> None:
    store.add("text", "x")
    with pytest.raises(DBAPIError, match="append-only"):
        with store.engine.begin() as c:
            c.execute(text(statement))
    assert store.events.head() == 1 and store.verify_chain().ok


def test_stale_writer_gets_concurrency_error_and_writes_nothing(store: Substrate) -> None:
    i = store.add("text", "a")
    stale = NewEvent(stream=i, event=ItemPut(item=store.get(i).to_json()), scope="local", expected_version=0)  # type: ignore[union-attr]
    with pytest.raises(ConcurrencyError):
        store.events.append(
            [NewEvent(stream="other", event=ItemPut(item={**store.get(i).to_json(), "id": "other"})), stale], "p"
        )  # type: ignore[union-attr]
    assert store.events.head() == 1 and store.get("other") is None


def _tamper(store: Substrate, sql: str) -> None:
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        c.execute(text(sql))
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))


@pytest.mark.parametrize(
    "sql,bad",
    [
        ("UPDATE events SET data = jsonb_set(data, '{item,text}', '\"forged\"') WHERE seq = 3", 3),
        ("UPDATE events SET type = 'ItemUpdated' WHERE seq = 2", 2),
        ("UPDATE events SET principal = 'mallory' WHERE seq = 4", 4),
        ("DELETE FROM events WHERE seq = 3", 3),
        ("DELETE FROM events WHERE seq = 5", 5),
        (  # a well-formed row appended past the head by hand: no append writes one
            "INSERT INTO events (seq, stream, version, type, data, principal, scope, event_id, prev) "
            "SELECT 6, 'forged', 1, type, data, principal, scope, 'sha256:' || repeat('0', 64), event_id "
            "FROM events WHERE seq = 5",
            6,
        ),
        ("UPDATE log_head SET seq = 4, event_id = (SELECT event_id FROM events WHERE seq = 4)", 5),
    ],
)
def test_tampering_is_caught_with_the_first_bad_seq(store: Substrate, sql: str, bad: int) -> None:
    for n in range(5):
        store.add("text", f"t{n}")
    _tamper(store, sql)
    report = verify_store(store)
    assert not report.ok and report.first_bad_seq == bad


def test_edited_read_model_is_caught_by_verify(store: Substrate) -> None:
    store.add("text", "truth")
    with store.engine.begin() as c:
        c.execute(text("UPDATE items SET text = 'lie'"))
    report = verify_store(store)
    assert not report.ok and report.first_bad_seq is None
    assert report.tables["items"]["match"] is False


def test_rebuild_reproduces_read_models_byte_for_byte(store: Substrate) -> None:
    ids = [store.add("record", f"r{n}", payload={"n": n, "f": n / 3}) for n in range(30)]
    for i in ids[:10]:
        store.update(i, tags=["u"])
    for i in ids[10:15]:
        store.remove(i)
    with store.engine.connect() as c:
        counts, live = table_digests(c)
    assert counts["items"] == 25
    _, _, shadow = shadow_digests(store.engine)
    assert shadow == live
    report = rebuild(store.engine)
    assert report.digests == live and report.events == 45
    assert verify_store(store).ok


def test_batched_replay_matches_event_by_event_for_remove_and_reput(store: Substrate) -> None:
    from service import SubstrateItem

    a = store.add("text", "a")
    b = store.add("text", "b")
    store.remove(a)
    store.put(SubstrateItem(kind="text", text="a again", id=a))
    store.update(b, text="b2")
    store.put_many([SubstrateItem(kind="text", text="dup", id="d"), SubstrateItem(kind="text", text="dup2", id="d")])
    assert [(i.id, i.text) for i in store.all()] == [(b, "b2"), (a, "a again"), ("d", "dup2")]
    with store.engine.connect() as c:
        _, live = table_digests(c)
    assert rebuild(store.engine).digests == live
    assert [(i.id, i.text) for i in store.all()] == [(b, "b2"), (a, "a again"), ("d", "dup2")]


def _checkpoint_seqs(store: Substrate) -> set[int]:
    with store.engine.connect() as c:
        return {int(r[0]) for r in c.execute(text("SELECT seq FROM checkpoints WHERE name <> 'search'"))}


def test_one_statement_append_that_lost_the_race_writes_nothing(store: Substrate) -> None:
    from service import SubstrateItem

    store.add("text", "mine")  # this engine now knows the head (seq 1)
    other = Substrate(url=store.url)  # another engine: its append moves the head behind our back
    try:
        other.add("text", "theirs")
    finally:
        other.close()
    item = SubstrateItem(kind="text", text="raced", id="raced").to_json()
    event = NewEvent(stream="raced", event=ItemPut(item=item), scope="local")
    assert store.events._append_cas(event, "p") is None  # the compare-and-set missed: statement voided
    assert store.events.head() == 2 and store.get("raced") is None and len(store) == 2
    assert _checkpoint_seqs(store) == {2}
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM revisions")).scalar_one() == 2
    store.put(SubstrateItem(kind="text", text="raced", id="raced"))  # falls back to the locked path
    assert store.events.head() == 3 and store.get("raced").text == "raced"  # type: ignore[union-attr]
    assert _checkpoint_seqs(store) == {3}
    assert verify_store(store).ok


def test_put_over_an_item_another_engine_wrote_takes_the_next_version(store: Substrate) -> None:
    from service import SubstrateItem

    store.add("text", "warm the head")
    other = Substrate(url=store.url)
    try:
        other.put(SubstrateItem(kind="text", text="v1", id="shared"))
        other.update("shared", text="v2")
    finally:
        other.close()
    store.put(SubstrateItem(kind="text", text="v3", id="shared"))  # this engine guessed version 0: retried
    store.update("shared", text="v4")
    assert [e.version for e in store.events.read(stream="shared")] == [1, 2, 3, 4]
    assert store.get("shared").text == "v4"  # type: ignore[union-attr]
    assert verify_store(store).ok


def test_put_whose_guessed_version_lags_under_a_known_head_is_voided_then_appended(store: Substrate) -> None:
    from service import SubstrateItem

    store.put(SubstrateItem(kind="text", text="v1", id="lag"))  # this engine saw "lag" at version 1
    other = Substrate(url=store.url)
    try:
        other.update("lag", text="v2")
    finally:
        other.close()
    # A locked multi-event append tells this engine the new head, but not the new version of "lag".
    store.events.append([_put_event("a1"), _put_event("a2")], "p")
    head = store.events.head()
    guess = NewEvent(stream="lag", event=ItemPut(item=_item("lag", "v3")), scope="local")
    assert store.events._append_cas(guess, "p") is None  # version 2 is taken: the statement is void
    assert store.events.head() == head and store.get("lag").text == "v2"  # type: ignore[union-attr]
    store.put(SubstrateItem(kind="text", text="v3", id="lag"))
    assert [e.version for e in store.events.read(stream="lag")] == [1, 2, 3]
    assert store.get("lag").text == "v3"  # type: ignore[union-attr]
    assert verify_store(store).ok


def _item(item_id: str, body: str) -> dict[str, object]:
    from service import SubstrateItem

    return SubstrateItem(kind="text", text=body, id=item_id).to_json()


def _put_event(item_id: str) -> NewEvent:
    return NewEvent(stream=item_id, event=ItemPut(item=_item(item_id, item_id)), scope="local")


def test_single_stale_event_gets_concurrency_error_and_writes_nothing(store: Substrate) -> None:
    i = store.add("text", "a")
    stale = NewEvent(stream=i, event=ItemPut(item=store.get(i).to_json()), scope="local", expected_version=0)  # type: ignore[union-attr]
    with pytest.raises(ConcurrencyError):
        store.events.append([stale], "p")
    assert store.events.head() == 1 and _checkpoint_seqs(store) == {1}


def test_a_long_append_in_chunks_chains_projects_and_matches_a_replay(store: Substrate) -> None:
    """One append of more events than a chunk (5,000), mixing events the projectors plan as statements (items)
    with events only their ``apply`` handles (grants): one gapless chain, every read model equal to a replay."""
    from service.domain.events import AccessGranted

    store.add("text", "before")
    items = [
        NewEvent(stream=f"i{n}", event=ItemPut(item=_item(f"i{n}", f"row {n}")), scope="local") for n in range(5_050)
    ]
    grants = [
        NewEvent(stream=f"acl-{n}", event=AccessGranted(principal=f"p{n}", scope="local", mode="read"), scope="local")
        for n in range(70)
    ]
    seen: list[int] = []
    stored = store.events.append(items[:5_020] + grants + items[5_020:], "loader", progress=seen.append)
    assert [e.seq for e in stored] == list(range(2, 2 + 5_120)) and seen[-1] == 5_120
    assert all(b.prev == a.event_id for a, b in zip(stored, stored[1:]))
    assert len({e.recorded_at for e in stored}) == 1  # one append, one moment
    assert store.events.head() == 5_121 and len(store) == 5_051
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM grants")).scalar() == 70
    assert verify_store(store).ok
    assert store.add("text", "after")  # the head moved: the next append chains on


def test_verify_is_not_fooled_by_writes_landing_while_it_runs(store: Substrate, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The live digests are one snapshot, the shadow replays up to the position that snapshot describes: an
    append between the two (a live service keeps writing) is in neither, so the store still verifies."""
    import service.store.audit as audit

    for n in range(5):
        store.add("text", f"t{n}", tags=["x"])
    shadow = audit.shadow_digests

    def after_a_write(*args, **kw):  # type: ignore[no-untyped-def]
        store.add("text", "arrived while verify ran")
        store.update(store.all()[0].id, text="edited while verify ran")
        return shadow(*args, **kw)

    monkeypatch.setattr(audit, "shadow_digests", after_a_write)
    report = audit.verify_store(store)
    assert report.ok, report.summary()
    assert report.tables["items"]["live_rows"] == report.tables["items"]["replayed_rows"] == 5
    monkeypatch.undo()
    assert audit.verify_store(store).tables["items"]["live_rows"] == 6  # the next verify covers them


def test_live_digests_catch_up_again_when_events_land_before_the_snapshot(store: Substrate, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from projections import runner

    store.add("text", "first")
    caught_up = runner.catch_up_engine
    calls: list[int] = []

    def then_a_write(engine):  # type: ignore[no-untyped-def]
        out = caught_up(engine)
        calls.append(1)
        if len(calls) == 1:
            store.add("text", "landed between the catch-up and the snapshot")
        return out

    monkeypatch.setattr(runner, "catch_up_engine", then_a_write)
    position, counts, digests = runner.live_digests(store.engine)
    assert len(calls) == 2 and position == store.events.head() == 2
    assert counts["search_docs"] == counts["items"] == 2  # the search postings describe the same position
    monkeypatch.undo()
    assert runner.shadow_digests(store.engine, until=position)[2] == digests


def test_a_long_append_with_a_nul_is_refused_whole(store: Substrate) -> None:
    from service.domain.validation import InvalidArgument

    store.add("text", "before")
    events = [_put_event(f"n{n}") for n in range(70)]
    events.append(NewEvent(stream="bad\x00id", event=ItemPut(item=_item("ok", "ok")), scope="local"))
    with pytest.raises(InvalidArgument, match="NUL"):
        store.events.append(events, "loader")
    assert store.events.head() == 1 and len(store) == 1
    assert store.add("text", "after") and store.events.head() == 2


def test_the_chain_walk_is_not_fooled_by_appends_while_it_runs(store: Substrate, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """It walks the log up to the head it found when it began; an append that lands during the walk (or after
    it, before the last check) is neither walked nor a break."""
    for n in range(4):
        store.add("text", f"t{n}")
    read = store.events.read

    def then_an_append(*args, **kw):  # type: ignore[no-untyped-def]
        yield from read(*args, **kw)
        store.add("text", "arrived during the walk")

    monkeypatch.setattr(store.events, "read", then_an_append)
    report = store.events.verify_chain()
    assert report.ok and report.events == 4, report.reason
    monkeypatch.undo()
    assert store.events.verify_chain().events == 5


def test_verify_walks_the_events_appended_between_its_walk_and_its_snapshot(store: Substrate, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import service.store.audit as audit

    for n in range(3):
        store.add("text", f"t{n}")
    digests = audit.live_digests

    def after_two_writes(*args, **kw):  # type: ignore[no-untyped-def]
        store.add("text", "after the walk")
        store.remove(store.all()[0].id)
        return digests(*args, **kw)

    monkeypatch.setattr(audit, "live_digests", after_two_writes)
    report = audit.verify_store(store)
    assert report.ok, report.summary()
    assert report.events == 5 and report.head == list(store.events.read())[-1].event_id
    resumed = store.events.verify_chain(until=5, resume=store.events.verify_chain(until=2))
    assert resumed.ok and resumed.events == 5
    _tamper(store, "UPDATE events SET principal = 'mallory' WHERE seq = 4")
    broken = store.events.verify_chain(until=5, resume=store.events.verify_chain(until=2))
    assert not broken.ok and broken.first_bad_seq == 4
