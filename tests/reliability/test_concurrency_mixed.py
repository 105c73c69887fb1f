"""Concurrency: eight threads put, update, remove, publish and assimilate on overlapping items.

The long run is ``python bench/concurrency.py``; this is its short version. Every returned call is an
acknowledgement: the log must hold exactly the acknowledged events, nobody may hang, and ConcurrencyError
may only come from the commands documented to retry and then give up.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import text

from bench.concurrency import run_mixed
from service import Substrate, SubstrateItem
from service.domain.events import ItemUpdated, NewEvent


@pytest.fixture(scope="module")
def mixed() -> Any:
    with Substrate() as store:
        yield run_mixed(store, threads=8, seconds=3.0, items=6, seed=8)


def test_no_thread_hangs_and_work_was_done(mixed: dict[str, Any]) -> None:
    assert mixed["hung_threads"] == 0
    assert mixed["operations"] >= 50, mixed
    assert set(mixed["by_op"]) >= {"put", "update", "remove", "publish", "space_publish", "assimilate"}


def test_final_stream_versions_equal_the_acknowledged_appends(mixed: dict[str, Any]) -> None:
    assert mixed["lost_or_extra"] == {}
    assert mixed["events_appended"] == mixed["events_acknowledged"]


def test_every_acknowledged_put_and_update_is_in_the_log_and_nothing_else(mixed: dict[str, Any]) -> None:
    assert mixed["markers_acked_not_logged"] == [] and mixed["markers_logged_not_acked"] == []


def test_read_models_equal_a_rebuild_after_the_storm(mixed: dict[str, Any]) -> None:
    assert mixed["verify_ok"]


def test_concurrency_errors_come_only_from_the_retrying_commands(mixed: dict[str, Any]) -> None:
    assert mixed["errors"] == [], mixed["errors"]


def _race(store: Substrate, item_id: str, write: Any) -> Any:
    """Run ``write`` while another transaction holds the chain lock and appends to ``item_id``; return its outcome."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(write())
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test asserts on
            outcome.append(exc)

    current = store.get(item_id)
    assert current is not None
    with store.engine.connect() as holder:
        tx = holder.begin()
        store.events.append(
            [
                NewEvent(
                    item_id,
                    ItemUpdated(item={**current.to_json(), "text": "held"}, fields=["text"]),
                    scope=current.scope,
                )
            ],
            "holder",
            conn=holder,
        )
        th = threading.Thread(target=run, daemon=True)
        th.start()
        deadline = time.monotonic() + 30
        waiting = text("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        with store.engine.connect() as probe:
            while time.monotonic() < deadline:
                seen = probe.execute(waiting).first()
                probe.rollback()  # pg_stat_activity is read once per transaction: each poll needs a new one
                if seen:
                    break
                time.sleep(0.01)
            else:
                raise AssertionError("the write never waited for the chain lock")
        tx.commit()
    th.join(30)
    assert not th.is_alive()
    return outcome[0]


def test_a_put_that_waited_for_the_chain_lock_still_lands(store: Substrate) -> None:
    i = store.add("text", "v1")
    out = _race(store, i, lambda: store.put(SubstrateItem(kind="text", id=i, text="v3")))
    assert out == i
    assert [e.version for e in store.events.read(stream=i)] == [1, 2, 3]


def test_a_bulk_append_that_waited_for_the_chain_lock_still_lands(store: Substrate) -> None:
    i = store.add("text", "v1")
    out = _race(
        store,
        i,
        lambda: store.put_many([SubstrateItem(kind="text", id=i, text="v3"), SubstrateItem(kind="text", text="other")]),
    )
    assert isinstance(out, list) and out[0] == i
    assert [e.version for e in store.events.read(stream=i)] == [1, 2, 3]
