"""Export, import and verify of a whole store, each beside raw SQL doing the same data movement in the same run.

- export (``Substrate.save``: items.jsonl, temp file + fsync + rename) against a raw ``COPY (SELECT doc ...) TO
  STDOUT`` of the items read model written to a file and fsynced;
- import (``Substrate.load`` into an empty store: parse, validate, secret-guard, append one event per item with
  every inline read model, one transaction) against a raw ``COPY ... FROM STDIN`` of the same file into a one-column
  jsonb table, one transaction;
- verify (``verify_store``: the chain walk, then every read model rebuilt in a shadow schema and digested) against
  ``rebuild`` (``substrate replay``) of the same log.

Run: python -m bench.snapshot [--n 100000] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.results import replace_section
from projections.runner import rebuild
from service import Substrate, SubstrateItem
from service.store.audit import verify_store

BEGIN, END = "<!-- bench/snapshot.py:begin -->", "<!-- bench/snapshot.py:end -->"


def _doc(n: int) -> str:
    return f"Document {n}: a short passage about topic {n % 97} with a few more words to be realistic."


def _timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _raw_export(store: Substrate, path: Path) -> None:
    fairy = store.engine.raw_connection()
    try:
        conn: Any = fairy.driver_connection
        with open(path, "wb") as f, conn.cursor() as cur:
            with cur.copy("COPY (SELECT doc FROM items ORDER BY pos) TO STDOUT") as copy:
                for block in copy:
                    f.write(block)
            f.flush()
            os.fsync(f.fileno())
        conn.rollback()
    finally:
        fairy.close()


def _raw_import(store: Substrate, path: Path) -> None:
    fairy = store.engine.raw_connection()
    try:
        conn: Any = fairy.driver_connection
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS raw_items (doc jsonb)")
            with open(path, "rb") as f, cur.copy("COPY raw_items (doc) FROM STDIN") as copy:
                while block := f.read(1 << 20):
                    copy.write(block)
        conn.commit()
    finally:
        fairy.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="items in the store")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update bench/RESULTS.md")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    source = Substrate()
    source.put_many(SubstrateItem(kind="text", text=_doc(n), tags=[f"t{n % 7}"]) for n in range(args.n))
    t_save = _timed(source.save, work / "export")
    t_raw_out = _timed(_raw_export, source, work / "raw.copy")
    target = Substrate()
    t_load = _timed(target.load, work / "export")
    t_raw_in = _timed(_raw_import, target, work / "raw.copy")
    with target.engine.begin() as c:
        c.execute(text("DROP TABLE raw_items"))
    target.close()
    t_verify = _timed(verify_store, source)
    report = rebuild(source.engine)
    source.close()
    n = args.n
    rows = [
        (
            "export (`save`)",
            n / t_save,
            "raw `COPY (SELECT doc FROM items) TO STDOUT` to a file, fsynced",
            n / t_raw_out,
        ),
        (
            "import (`load`, one transaction)",
            n / t_load,
            "raw `COPY FROM STDIN` of that file, one transaction",
            n / t_raw_in,
        ),
        (
            "verify (`verify_store`)",
            report.events / t_verify,
            "`rebuild` (`substrate replay`)",
            report.events / report.seconds,
        ),
    ]
    lines = [
        f"{name}: {rate:,.0f}/s; {base}: {brate:,.0f}/s (ratio {rate / brate:.2f}x)" for name, rate, base, brate in rows
    ]
    print("\n".join(lines))
    if args.no_write:
        return
    table = "\n".join(
        f"| {name} | {rate:,.0f}/s | {base} | {brate:,.0f}/s | {rate / brate:.2f}x |"
        for name, rate, base, brate in rows
    )
    section = (
        f"{BEGIN}\n## Export, import, verify (`bench/snapshot.py`)\n\n"
        f"Command: `python -m bench.snapshot --n {n}` ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
        "embedded PostgreSQL). One store of short text items; each path beside raw SQL moving the same data in the "
        "same run.\n\n"
        "| path | items (events) per second | raw baseline | its rate | ratio |\n|---|---:|---|---:|---:|\n"
        f"{table}\n{END}"
    )
    replace_section(section, BEGIN, END)


if __name__ == "__main__":
    main()
