"""The collector pause of bulk work: nested and concurrent users share it, and it always ends."""

from __future__ import annotations

import gc
import threading

import pytest

from projections.gcpause import gc_paused


def test_nested_pauses_end_with_the_outermost() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still running
    assert gc.isenabled()


def test_an_error_ends_the_pause() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("bulk work failed")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_in_threads_end_when_the_last_one_does() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    with gc_paused():
        t.start()
        inside.wait(5)
    assert not gc.isenabled()  # the thread's pause is still on
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_pauses_that_keep_overlapping_still_collect_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    import projections.gcpause as gcpause

    monkeypatch.setattr(gcpause, "COLLECT_EVERY", 0.0)
    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(1) or 0)
    with gc_paused():
        with gc_paused():  # an inner block ends while the outer one still holds the pause
            pass
        assert collected == [1] and not gc.isenabled()
    assert gc.isenabled()
