"""The lazy search postings under concurrent writers, searchers and upkeep: never an old text, never a double apply.

Writers keep rewriting and removing items while other threads search and the upkeep indexes what they wrote (so
searches read the index and a tail of any length in between). Afterwards the read models (search tables included)
must equal a replay of the log, and no search may ever have returned an item for text it no longer had when the
search began, nor missed its own thread's last write.
"""

from __future__ import annotations

import threading
import time

from service import Substrate, SubstrateItem
from service.search.upkeep import BackgroundRunner
from service.store.audit import verify_store

WORDS = ["glacier", "volcano", "harbor", "meadow", "canyon", "lagoon"]


def test_concurrent_writes_and_searches_never_see_old_text_and_replay_equal(store: Substrate) -> None:
    for i in range(30):
        store.put(SubstrateItem(kind="text", text=f"base note {i} about tides and weather", id=f"b{i}"))
    stop = time.monotonic() + 4.0
    errors: list[str] = []
    # Each id's latest acknowledged text (every text is unique: it carries its write counter).
    current: dict[str, str] = {}
    lock = threading.Lock()

    def writer(n: int) -> None:
        k = 0
        while time.monotonic() < stop:
            item_id = f"w{n}-{k % 4}"
            word = WORDS[(n + k) % len(WORDS)]
            if k % 7 == 6:
                store.remove(item_id)
                with lock:
                    current.pop(item_id, None)
                if item_id in {it.id for it, _ in store.search(word, k=20, scope="w")}:
                    errors.append(f"{item_id} still found after its removal")
            else:
                body = f"{word} report number {n}-{k}"
                store.put(SubstrateItem(kind="text", text=body, scope="w", id=item_id))
                with lock:
                    current[item_id] = body
                # Read your writes: only this thread writes these ids, so the new text must be found now.
                if item_id not in {it.id for it, _ in store.search(word, k=20, scope="w")}:
                    errors.append(f"{item_id} not found right after writing {body!r}")
            k += 1

    def searcher(m: int) -> None:
        j = m
        while time.monotonic() < stop:
            word = WORDS[j % len(WORDS)]
            j += 1
            with lock:
                before = dict(current)
            # Scope "w" holds fewer than MIN_FIT_DOCS text items: ranking is lexical, so a hit must contain the
            # word in some state at least as new as the search's start.
            for item, score in store.search(word, k=20, scope="w"):  # items that match nothing come at 0.0
                if score > 0 and word not in item.text and before.get(item.id) == item.text:
                    errors.append(f"{item.id} returned for {word!r} on its old text {item.text!r}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=searcher, args=(m,)) for m in range(3)]
    with BackgroundRunner(store.engine, interval=0.05, refit=False) as upkeep:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert upkeep.rounds >= 2
    assert errors == []
    report = verify_store(store)
    assert report.ok, report.summary()
    with lock:
        final = dict(current)
    for item_id, body in final.items():
        assert item_id in {it.id for it, _ in store.search(body.split()[0], k=50, scope="w")}
    assert {it.id for it in store.all(scope="w")} == set(final)
