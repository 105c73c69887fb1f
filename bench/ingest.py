"""Ingest benchmark: ingest_documents vs raw executemany/COPY, peak RSS, re-ingest identity, where the time goes.

Run: python bench/ingest.py [--n 100000] [--reingest 10000] [--no-write]
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from bench.results import replace_section  # noqa: E402
from projections import dumps  # noqa: E402
from projections.canonical import item_digest  # noqa: E402
from projections.runner import catch_up_engine  # noqa: E402
from service import Substrate, ingest_documents, ingest_file  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.ingest.batch import BATCH_SIZE, stable_id  # noqa: E402

BEGIN, END = "<!-- bench/ingest.py:begin -->", "<!-- bench/ingest.py:end -->"


def docs(n: int) -> Iterator[str]:
    for i in range(n):
        yield f"document {i} on topic {i % 97}: a short passage about item {i * 7 % 1009} and its neighbours"


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PeakRSS:
    """Samples RSS every 10 ms on a thread; .peak is the highest seen."""

    def __init__(self) -> None:
        self.start = self.peak = rss_mb()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self) -> PeakRSS:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


class Timers:
    """Wraps named callables to accumulate their wall time."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)

        def timed(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(*a, **kw)
            finally:
                self.total[name] += time.perf_counter() - t

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, original))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()


def raw_rows(n: int, scope: str) -> Iterator[tuple[Any, ...]]:
    now = time.time()
    for i, body in enumerate(docs(n)):
        item = SubstrateItem(
            kind="text",
            text=body,
            scope=scope,
            id=stable_id(scope, "raw", i),
            created_at=now,
            provenance={"source": "raw", "position": i},
        ).to_json()
        yield (item["id"], "text", scope, body, dumps(item), item_digest(item), 1, i + 1, i + 1, now)


_COLS = "id, kind, scope, text, doc, digest, version, pos, seq, created_at"


def bench_raw(store: Substrate, n: int, copy: bool) -> float:
    """Rows/s of raw INSERTs (1000-row executemany per transaction) or one COPY into a table shaped like items."""
    table = "bench_raw_copy" if copy else "bench_raw"
    with store.engine.begin() as c:
        c.execute(text(f"CREATE TABLE {table} (LIKE items INCLUDING ALL)"))
    raw = store.engine.raw_connection()
    try:
        conn = raw.driver_connection
        t = time.perf_counter()
        rows = raw_rows(n, "raw")
        if copy:
            with conn.cursor() as cur, cur.copy(f"COPY {table} ({_COLS}) FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
            conn.commit()
        else:
            sql = f"INSERT INTO {table} ({_COLS}) VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s)"
            batch: list[tuple[Any, ...]] = []
            for r in rows:
                batch.append(r)
                if len(batch) == 1000:
                    with conn.cursor() as cur:
                        cur.executemany(sql, batch)
                    conn.commit()
                    batch = []
            if batch:
                with conn.cursor() as cur:
                    cur.executemany(sql, batch)
                conn.commit()
        return n / (time.perf_counter() - t)
    finally:
        raw.close()


def bench_ingest(store: Substrate, n: int, source: str = "bench-docs") -> tuple[float, PeakRSS, dict[str, float], int]:
    from service.store.bulk_append import BulkAppender
    from service.store.eventstore import EventStore

    timers = Timers()
    timers.wrap(store, "event_item", PREPARE)
    timers.wrap(BulkAppender, "_stamp", STAMP)
    timers.wrap(BulkAppender, "_settle", WAIT)
    timers.wrap(EventStore, "insert_stamped", WRITER)
    t = time.perf_counter()
    try:
        with PeakRSS() as mem:
            receipt = ingest_documents(store, docs(n), source=source, scope="bench")
        rate = n / (time.perf_counter() - t)
    finally:
        timers.restore()
    return rate, mem, dict(timers.total), len(receipt)


PREPARE = "caller: prepare each item (validate + normalize; the write door guards each batch as it is submitted)"
STAMP = "caller: stamp, plan and serialize each batch (event addresses, item digests, the COPY rows)"
WAIT = "caller: wait for the writer (the previous batch still being written)"
WRITER = "writer thread: one transaction per batch (head claim, COPY of the events, items, revisions, checkpoints), alongside the caller"


def bench_unguarded(store: Substrate, n: int) -> float:
    """Diagnostic: the same ingest with the secret guard replaced by a plain copy (shows the rest of the path)."""
    import service.substrate.door as facade

    original = facade.guard_event
    facade.guard_event = lambda event, policy: event  # type: ignore[assignment]
    try:
        return bench_ingest(store, n, source="bench-unguarded")[0]
    finally:
        facade.guard_event = original


def bench_reingest(store: Substrate, lines: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "corpus.txt"
        path.write_text("".join(f"line {i}: some text for re-ingest\n" for i in range(lines)))
        t = time.perf_counter()
        first = ingest_file(store, path, scope="reingest")
        t1 = time.perf_counter() - t
        head = store.events.head()
        t = time.perf_counter()
        second = ingest_file(store, path, scope="reingest")
        t2 = time.perf_counter() - t
        appended = store.events.head() - head
        with store.engine.connect() as c:
            live = c.execute(
                text("SELECT count(*) FROM items WHERE doc->'provenance'->>'path' = :p"), {"p": str(path.resolve())}
            ).scalar_one()
    return {
        "lines": lines,
        "first": len(first),
        "first_new": first.n_new,
        "second": len(second),
        "second_revised": len(second.revised),
        "second_unchanged": len(second.unchanged),
        "second_appended": appended,
        "live": live,
        "first_s": t1,
        "second_s": t2,
        "same_ids": list(first) == list(second),
    }


def report(args: argparse.Namespace) -> str:
    store = Substrate()
    try:
        rate, mem, timers, n_ids = bench_ingest(store, args.n)
        t = time.perf_counter()
        catch_up_engine(store.engine)  # what the upkeep (substrate serve's background runner, or reindex) does next
        postings = time.perf_counter() - t
        diag = bench_unguarded(store, args.n) if args.diagnose else None
        raw = bench_raw(store, args.n, copy=False)
        copy = bench_raw(store, args.n, copy=True)
        re_ = bench_reingest(store, args.reingest)
    finally:
        store.close()
    lines = [
        BEGIN,
        "## Ingest (`bench/ingest.py`)",
        "",
        f"Command: `python -m bench.ingest --n {args.n} --reingest {args.reingest}`",
        "",
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f} at the end), "
        f"embedded PostgreSQL; {args.n:,} short documents (~90 bytes each, streamed from a generator).",
        "",
        "| path | rows/s | vs raw executemany |",
        "|---|---:|---:|",
        f"| `ingest_documents` (facade bulk path: events + items + revisions + every projector) | {rate:,.0f} | "
        f"{rate / raw:.2f}x |",
    ]
    if diag is not None:
        lines.append(
            f"| diagnostic only: the same with the secret guard stubbed out (`guard_event` = identity) | "
            f"{diag:,.0f} | {diag / raw:.2f}x |"
        )
    lines += [
        f"| raw `executemany`, 1000-row transactions, into a table shaped like `items` | {raw:,.0f} | 1.00x |",
        f"| raw `COPY`, one transaction, same table shape | {copy:,.0f} | {copy / raw:.2f}x |",
        "",
        f"Target >= 0.5x: **{'met' if rate / raw >= 0.5 else 'NOT met'}** ({rate / raw:.2f}x); stretch >= 1x: "
        f"**{'met' if rate / raw >= 1 else 'not met'}**.",
        "",
        f"Not in the ingest rate: the search index, which the upkeep (`substrate serve`'s background thread, or "
        f"`substrate reindex`) builds afterwards, never a search: {postings:.1f} s for these {args.n:,} documents "
        f"({args.n / postings:,.0f}/s; ingest and index together {args.n / (args.n / rate + postings):,.0f}/s).",
        "",
        f"Memory: RSS {mem.start:,.0f} MB before, peak {mem.peak:,.0f} MB during the ingest "
        f"(+{mem.peak - mem.start:,.0f} MB for {n_ids:,} items; the input is streamed, the receipt's id list is "
        "the only thing that grows with n).",
        "",
        f"Where the time goes (seconds; batches of {BATCH_SIZE:,}: the caller's thread prepares and stamps batch k+1 while "
        "a writer thread writes batch k, so the writer's row overlaps the caller's rows):",
        "",
        "| step | seconds | share of wall |",
        "|---|---:|---:|",
    ]
    wall = args.n / rate
    caller = [timers.get(k, 0.0) for k in (PREPARE, STAMP, WAIT)]
    rows = [
        (PREPARE, caller[0]),
        (STAMP, caller[1]),
        (WAIT, caller[2]),
        (
            "caller: parse, build items, stable ids, existing-id lookup, the write door's checks on each batch (the rest)",
            wall - sum(caller),
        ),
        (WRITER, timers.get(WRITER, 0.0)),
    ]
    for k, v in rows:
        lines.append(f"| {k} | {v:.2f} | {v / wall:.0%} |")
    lines.append(f"| **wall** | {wall:.2f} | 100% |")
    lines += [
        "",
        f"Re-ingest: a {re_['lines']:,}-line file ingested twice -> first run {re_['first']:,} items "
        f"({re_['first_new']:,} new, {re_['first_s']:.2f}s), second run {re_['second']:,} items "
        f"({re_['second_unchanged']:,} unchanged, {re_['second_revised']:,} revised, "
        f"{re_['second_appended']:,} events appended, {re_['second_s']:.2f}s), same ids: {re_['same_ids']}; "
        f"live items from the file: **{re_['live']:,}** (expected exactly {re_['lines']:,}).",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000, help="documents to ingest (default 100000)")
    ap.add_argument("--reingest", type=int, default=10_000, help="lines of the re-ingested file (default 10000)")
    ap.add_argument("--diagnose", action="store_true", help="also time the path with the secret guard stubbed out")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update bench/RESULTS.md")
    args = ap.parse_args()
    section = report(args)
    print(section)
    if not args.no_write:
        replace_section(section, BEGIN, END)


if __name__ == "__main__":
    main()
