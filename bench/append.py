"""Append throughput: put() and the bulk path against raw INSERTs of same-sized rows, side by side.

Two raw baselines, measured in the same run on the same server: event rows (a table made ``LIKE events INCLUDING
ALL``: the log's columns, keys and indexes, filled with rows shaped like the ones ``put`` writes: random stream
ids and content addresses, the same JSON body) and bare rows (the same body in a two-column table). The paths are
timed in interleaved blocks, so drift in the machine's load hits every path alike.

Run: python -m bench.append [--n-single 2000] [--n-bulk 30000] [--blocks 8] [--bulk-blocks 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from projections.runner import rebuild
from service import Substrate, SubstrateItem

_EVENT_COLS = "seq, stream, version, type, data, principal, scope, event_id, prev"
_EVENT_INSERT = f"INSERT INTO raw_events ({_EVENT_COLS}) VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)"
_BARE_INSERT = "INSERT INTO raw_rows (stream, data) VALUES (%s, %s::jsonb)"


def _doc(n: int) -> str:
    return f"Document {n}: a short passage about topic {n % 97} with a few more words to be realistic."


class _Raw:
    """Raw psycopg inserts into the two baseline tables (one autocommit connection, one transactional)."""

    def __init__(self, store: Substrate) -> None:
        with store.engine.begin() as c:
            c.execute(text("CREATE TABLE raw_events (LIKE events INCLUDING ALL)"))
            c.execute(text("CREATE TABLE raw_rows (id bigserial PRIMARY KEY, stream text, data jsonb)"))
        self._fairy = store.engine.raw_connection()
        self.conn: Any = self._fairy.driver_connection
        self.seq = 0
        self.prev: str | None = None

    def event_rows(self, n: int) -> list[tuple[Any, ...]]:
        rows = []
        for _ in range(n):
            self.seq += 1
            stream = uuid.uuid4().hex
            body = json.dumps({"item": SubstrateItem(kind="text", text=_doc(self.seq), id=stream).to_json()})
            event_id = "sha256:" + hashlib.sha256(f"{stream}{body}".encode()).hexdigest()
            rows.append((self.seq, stream, 1, "ItemPut", body, "local", "local", event_id, self.prev))
            self.prev = event_id
        return rows

    def close(self) -> None:
        self._fairy.close()


def _timed(fn: Callable[..., object], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _each(cur: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
    for r in rows:
        cur.execute(sql, r)


def _puts(store: Substrate, items: list[SubstrateItem]) -> None:
    for item in items:
        store.put(item)


def bench_single(store: Substrate, raw: _Raw, n: int, blocks: int) -> dict[str, float]:
    """One-row autocommit INSERTs and put(), ``n`` each, in ``blocks`` interleaved blocks; rates per second."""
    raw.conn.autocommit = True
    cur = raw.conn.cursor()
    per = max(1, n // blocks)
    spent = {"event": 0.0, "bare": 0.0, "put": 0.0}
    done = 0
    for _ in range(blocks):
        rows = raw.event_rows(per)
        bare = [(r[1], r[4]) for r in rows]
        spent["event"] += _timed(_each, cur, _EVENT_INSERT, rows)
        spent["bare"] += _timed(_each, cur, _BARE_INSERT, bare)
        items = [SubstrateItem(kind="text", text=_doc(i)) for i in range(done, done + per)]  # built untimed, as rows
        spent["put"] += _timed(_puts, store, items)
        done += per
    raw.conn.autocommit = False
    return {k: per * blocks / v for k, v in spent.items()}


def bench_bulk(store: Substrate, raw: _Raw, n: int, blocks: int) -> dict[str, float]:
    """1000-row executemany batches (one transaction each) and put_many(), in interleaved blocks."""
    cur = raw.conn.cursor()
    per = max(1000, n // blocks)
    spent = {"event": 0.0, "bare": 0.0, "put_many": 0.0}

    def batches(sql: str, rows: list[tuple[Any, ...]]) -> None:
        for start in range(0, len(rows), 1000):
            cur.executemany(sql, rows[start : start + 1000])
            raw.conn.commit()

    done = 0
    for _ in range(blocks):
        rows = raw.event_rows(per)
        bare = [(r[1], r[4]) for r in rows]
        items = [SubstrateItem(kind="text", text=_doc(done + i)) for i in range(per)]
        spent["event"] += _timed(batches, _EVENT_INSERT, rows)
        spent["bare"] += _timed(batches, _BARE_INSERT, bare)
        spent["put_many"] += _timed(store.put_many, items)
        done += per
    return {k: per * blocks / v for k, v in spent.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-single", type=int, default=2000, help="single appends per path")
    ap.add_argument("--n-bulk", type=int, default=30000, help="bulk-appended items per path")
    ap.add_argument("--blocks", type=int, default=8, help="interleaved blocks of single appends")
    ap.add_argument(
        "--bulk-blocks",
        type=int,
        default=2,
        help="interleaved blocks of bulk appends (big: put_many pipelines its chunks)",
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    Substrate().close()  # start the embedded server outside the timings
    t1 = time.perf_counter()
    # Open, first write, close: back to back (each open waits for the spare database the last one started
    # cloning, service.store.database._take_clone), then half a second apart (the spare is ready).
    opens: dict[str, list[float]] = {"back to back": [], "0.5 s apart": []}
    for label, pause in (("back to back", 0.0), ("0.5 s apart", 0.5)):
        for _ in range(5):
            time.sleep(pause)
            t = time.perf_counter()
            s = Substrate()
            opened = time.perf_counter() - t
            s.add("text", "first")
            opens[label].append(opened)
            s.close()
    store = Substrate()
    raw = _Raw(store)
    single = bench_single(store, raw, args.n_single, args.blocks)
    bulk = bench_bulk(store, raw, args.n_bulk, args.bulk_blocks)
    raw.close()
    with store.engine.begin() as c:
        c.execute(text("DROP TABLE raw_events, raw_rows"))
    report = rebuild(store.engine)
    print(
        f"server start + first store: {t1 - t0:.2f}s; Substrate() open, 5 stores each: "
        + "; ".join(f"{k} median {sorted(v)[2] * 1000:.0f} ms, max {max(v) * 1000:.0f} ms" for k, v in opens.items())
    )
    print(
        f"single: put() {single['put']:,.0f}/s; autocommit 1-row INSERT of event rows {single['event']:,.0f}/s "
        f"(ratio {single['put'] / single['event']:.2f}x), of bare rows {single['bare']:,.0f}/s "
        f"(ratio {single['put'] / single['bare']:.2f}x)"
    )
    print(
        f"bulk:   put_many() {bulk['put_many']:,.0f}/s; executemany(1000) of event rows {bulk['event']:,.0f}/s "
        f"(ratio {bulk['put_many'] / bulk['event']:.2f}x), of bare rows {bulk['bare']:,.0f}/s "
        f"(ratio {bulk['put_many'] / bulk['bare']:.2f}x)"
    )
    inline = report.phases.get("inline", report.seconds)
    lazy = report.phases.get("lazy", 0.0)
    print(
        f"replay: {report.events:,} events in {report.seconds:.2f}s = {report.events / report.seconds:,.0f} events/s "
        f"(inline read models {inline:.2f}s = {report.events / inline:,.0f} events/s; "
        f"lazy search postings {lazy:.2f}s; digests {report.seconds - inline - lazy:.2f}s)"
    )
    store.close()


if __name__ == "__main__":
    main()
