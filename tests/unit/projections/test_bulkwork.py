"""The settings of bulk work (collector paused, short switch interval): users share them, and they always end."""

from __future__ import annotations

import gc
import sys
import threading

import pytest

from projections.bulkwork import bulk_work


def test_nested_pauses_end_with_the_outermost() -> None:
    assert gc.isenabled()
    with bulk_work():
        assert not gc.isenabled()
        with bulk_work():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still running
    assert gc.isenabled()


def test_the_switch_interval_is_short_inside_and_restored_after() -> None:
    before = sys.getswitchinterval()
    with bulk_work():
        assert sys.getswitchinterval() <= 0.0005
        with bulk_work():
            assert sys.getswitchinterval() <= 0.0005
        assert sys.getswitchinterval() <= 0.0005
    assert sys.getswitchinterval() == before


def test_an_error_ends_the_pause() -> None:
    with pytest.raises(RuntimeError), bulk_work():
        raise RuntimeError("bulk work failed")
    assert gc.isenabled() and sys.getswitchinterval() == 0.005


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with bulk_work():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_threads_end_when_the_last_one_does() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with bulk_work():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    with bulk_work():
        t.start()
        inside.wait(5)
    assert not gc.isenabled()  # the thread's pause is still on
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_pauses_that_keep_overlapping_still_collect_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    import projections.bulkwork as bulkwork

    monkeypatch.setattr(bulkwork, "COLLECT_EVERY", 0.0)
    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(1) or 0)
    with bulk_work():
        with bulk_work():  # an inner block ends while the outer one still holds the pause
            pass
        assert collected == [1] and not gc.isenabled()
    assert gc.isenabled()
