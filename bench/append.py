"""Append throughput: put() and the bulk path against raw INSERTs of same-sized rows, side by side.

Run: python bench/append.py [--n-single 2000] [--n-bulk 50000]
"""

from __future__ import annotations

import argparse
import time

from sqlalchemy import text

from projections.runner import rebuild
from service import Substrate, SubstrateItem


def _raw_table(store: Substrate) -> None:
    with store.engine.begin() as c:
        c.execute(text("CREATE TABLE raw_rows (id bigserial PRIMARY KEY, stream text, data jsonb)"))


def _doc(n: int) -> str:
    return f"Document {n}: a short passage about topic {n % 97} with a few more words to be realistic."


def bench_single(store: Substrate, n: int) -> tuple[float, float]:
    raw = store.engine.raw_connection()
    raw.driver_connection.autocommit = True  # type: ignore[union-attr]
    cur = raw.cursor()
    payload = SubstrateItem(kind="text", text=_doc(0)).to_json()
    import json

    body = json.dumps({"item": payload})
    t0 = time.perf_counter()
    for i in range(n):
        cur.execute("INSERT INTO raw_rows (stream, data) VALUES (%s, %s::jsonb)", (f"s{i}", body))
    raw_rate = n / (time.perf_counter() - t0)
    raw.driver_connection.autocommit = False  # type: ignore[union-attr]
    raw.close()
    t0 = time.perf_counter()
    for i in range(n):
        store.put(SubstrateItem(kind="text", text=_doc(i)))
    put_rate = n / (time.perf_counter() - t0)
    return raw_rate, put_rate


def bench_bulk(store: Substrate, n: int) -> tuple[float, float]:
    import json

    raw = store.engine.raw_connection()
    cur = raw.cursor()
    rows = [(f"b{i}", json.dumps({"item": SubstrateItem(kind="text", text=_doc(i)).to_json()})) for i in range(n)]
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        cur.executemany("INSERT INTO raw_rows (stream, data) VALUES (%s, %s::jsonb)", rows[start : start + 1000])
        raw.commit()
    raw_rate = n / (time.perf_counter() - t0)
    raw.close()
    items = [SubstrateItem(kind="text", text=_doc(i)) for i in range(n)]
    t0 = time.perf_counter()
    store.put_many(items)
    bulk_rate = n / (time.perf_counter() - t0)
    return raw_rate, bulk_rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n-single", type=int, default=2000)
    ap.add_argument("--n-bulk", type=int, default=50000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    Substrate().close()  # start the embedded server outside the timings
    t1 = time.perf_counter()
    store = Substrate()
    open_s = time.perf_counter() - t1
    _raw_table(store)
    raw1, put1 = bench_single(store, args.n_single)
    rawb, bulk = bench_bulk(store, args.n_bulk)
    report = rebuild(store.engine)
    replay = report.events / report.seconds
    print(f"server start + first store: {t1 - t0:.2f}s; Substrate() open: {open_s * 1000:.0f} ms")
    print(f"single: raw autocommit INSERT {raw1:,.0f}/s  put() {put1:,.0f}/s  ratio {put1 / raw1:.2f}x")
    print(f"bulk:   raw executemany(1000) {rawb:,.0f}/s  put_many() {bulk:,.0f}/s  ratio {bulk / rawb:.2f}x")
    inline = report.phases.get("inline", report.seconds)
    print(f"replay: {report.events:,} events in {report.seconds:.2f}s = {replay:,.0f} events/s "
          f"(inline read models {inline:.2f}s = {report.events / inline:,.0f} events/s; "
          f"lazy search postings {report.phases.get('lazy', 0.0):.2f}s)")
    store.close()


if __name__ == "__main__":
    main()
