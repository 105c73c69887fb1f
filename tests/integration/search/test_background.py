"""The background runner brings the lazy search postings and embedders up to date without any search."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from service import Substrate, SubstrateItem
from service.search import upkeep
from service.search.upkeep import BackgroundRunner, note_search


def _caught_up(store: Substrate) -> bool:
    with store.engine.connect() as c:
        head, lazy = c.execute(
            text(
                "SELECT (SELECT seq FROM log_head WHERE id = 1), "
                "coalesce((SELECT seq FROM checkpoints WHERE name = 'search'), 0)"
            )
        ).one()
    return bool(head == lazy)


def test_a_burst_of_writes_is_indexed_and_fitted_in_the_background(store: Substrate) -> None:
    store.put_many(
        SubstrateItem(kind="text", text=f"note {i} about glaciers and sea ice", scope="s") for i in range(40)
    )
    assert not _caught_up(store)
    with BackgroundRunner(store.engine, interval=0.05) as runner:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (_caught_up(store) and _fitted(store, "s")):
            time.sleep(0.05)
    assert runner.rounds >= 1
    assert _caught_up(store) and _fitted(store, "s")
    assert store.search("glaciers", k=1, scope="s")[0][0].text.startswith("note")


def _fitted(store: Substrate, domain: str) -> bool:
    with store.engine.connect() as c:
        return bool(
            c.execute(
                text(
                    "SELECT count(*) FROM embedders e JOIN search_domains d USING (domain) "
                    "WHERE e.domain = :d AND e.fitted_seq = d.changed_seq"
                ),
                {"d": domain},
            ).scalar_one()
        )


def test_a_failing_round_is_logged_and_the_thread_goes_on(store: Substrate, caplog: pytest.LogCaptureFixture) -> None:
    runner = BackgroundRunner(store.engine, interval=0.02)
    calls = []

    def boom(**_: object) -> None:
        calls.append(1)
        raise RuntimeError("database away")

    runner.run_once = boom  # type: ignore[method-assign]
    with caplog.at_level("ERROR", logger="substrate.background"), runner:
        deadline = time.monotonic() + 10
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(calls) >= 2 and "background catch-up failed" in caplog.text


def test_the_interval_must_be_positive(store: Substrate) -> None:
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="interval"):
            BackgroundRunner(store.engine, interval=bad)


def test_of_several_runners_on_one_database_exactly_one_works_and_another_takes_over(store: Substrate) -> None:
    first, second = BackgroundRunner(store.engine), BackgroundRunner(store.engine)
    try:
        assert first.leading and not second.leading
        assert first.leading and not second.leading  # held, not taken again
        first.stop()  # as when its process exits or dies: the session ends and the lock with it
        assert second.leading and not first.leading
    finally:
        first.stop()
        second.stop()


def test_the_domains_searched_lately_are_refitted_first_and_the_others_when_writes_pause(
    store: Substrate, uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "_searched", {})  # what earlier tests in this process searched (the all-scopes '')
    hot, warm, cold = f"hot-{uid}", f"warm-{uid}", f"cold-{uid}"
    for scope in (cold, warm, hot):
        store.put_many(SubstrateItem(kind="text", text=f"note {i} on {scope} glaciers", scope=scope) for i in range(5))
    note_search(warm)
    note_search(hot)
    fitted: list[str] = []
    real = upkeep.refit
    monkeypatch.setattr(upkeep, "refit", lambda engine, domain: (fitted.append(domain), real(engine, domain)))
    runner = BackgroundRunner(store.engine, elect=False)
    runner.run_once(everything=False)  # while writes go on: only the domains being searched, most recent first
    assert fitted == [hot, warm]
    assert _fitted(store, hot) and _fitted(store, warm) and not _fitted(store, cold)
    fitted.clear()
    runner.run_once()  # writes paused: the rest, the all-scopes domain (which HTTP never searches) last
    assert fitted == [cold, ""]
    assert _fitted(store, cold)
