"""Concurrent writers never lose an update."""

from __future__ import annotations

import threading

from service import Substrate


def test_threads_updating_one_item_all_land(store: Substrate) -> None:
    i = store.add("record", payload={"n": 0})
    per_thread, threads = 10, 8
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for n in range(per_thread):
                store.update(i, tags=[f"{t}-{n}"])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors
    versions = [e.version for e in store.events.read(stream=i)]
    assert versions == list(range(1, 1 + 1 + per_thread * threads))
    assert store.verify_chain().ok


def test_concurrent_puts_of_distinct_items(store: Substrate) -> None:
    def work(t: int) -> None:
        for n in range(20):
            store.add("text", f"{t}:{n}")

    pool = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert len(store) == 160 and store.events.head() == 160 and store.verify_chain().ok


def test_writers_on_two_engines_interleave_without_breaking_the_chain(store: Substrate) -> None:
    from service.store.audit import verify_store

    other = Substrate(url=store.url)  # its own engine, so its own (soon stale) idea of the log head
    shared = store.add("record", payload={"n": 0})
    errors: list[BaseException] = []

    def work(handle: Substrate, t: int) -> None:
        try:
            for n in range(15):
                handle.add("text", f"{t}:{n}")
                handle.update(shared, tags=[f"{t}-{n}"])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    try:
        pool = [threading.Thread(target=work, args=(h, t)) for t, h in enumerate([store, other] * 3)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    finally:
        other.close()
    assert not errors
    assert len(store) == 1 + 6 * 15 and store.events.head() == 1 + 6 * 15 * 2
    assert [e.version for e in store.events.read(stream=shared)] == list(range(1, 2 + 6 * 15))
    assert verify_store(store).ok
