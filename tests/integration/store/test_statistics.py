"""Bulk paths leave the planner statistics current: a freshly filled store plans as an old one."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from service import Substrate, SubstrateItem, ingest_documents


def _estimated_rows(store: Substrate, table: str) -> float:
    with store.engine.connect() as c:
        return float(
            c.execute(text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"), {"t": table}).scalar_one()
        )


def test_put_many_of_many_items_analyzes_the_tables_it_filled(store: Substrate) -> None:
    store.put_many(SubstrateItem(kind="text", text=f"note {i}", scope="s") for i in range(800))
    assert _estimated_rows(store, "items") == 800
    assert _estimated_rows(store, "events") == 800


def test_a_small_put_many_leaves_the_statistics_to_autovacuum(store: Substrate) -> None:
    store.put_many(SubstrateItem(kind="text", text=f"note {i}", scope="s") for i in range(20))
    assert _estimated_rows(store, "items") < 20  # -1: never analyzed (nothing the test waits for would analyze it)


def test_an_ingest_and_a_load_analyze_what_they_wrote(make_store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    ingest_documents(store, [f"passage {i} on glaciers" for i in range(700)], source="docs", scope="s")
    assert _estimated_rows(store, "items") == 700
    store.save(tmp_path)
    fresh = make_store()
    fresh.load(tmp_path)
    assert _estimated_rows(fresh, "items") == 700
    ingest_documents(store, [f"passage {i} on ice" for i in range(2000)], source="more", scope="s")
    assert _estimated_rows(store, "items") == 2700


def test_a_replay_analyzes_every_read_model_it_rewrote(store: Substrate) -> None:
    from projections.runner import rebuild

    store.put_many(SubstrateItem(kind="text", text=f"note {i}", scope="s") for i in range(30))
    assert _estimated_rows(store, "items") < 30
    rebuild(store.engine)
    assert _estimated_rows(store, "items") == 30
    assert _estimated_rows(store, "search_docs") == 30  # a lazy read model, caught up by the replay
