"""Core commands: db upgrade, verify, replay, export, import, events."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from service.cli.common import add_as_of_option, add_store_options, display_url, open_store, print_json, print_json_line
from service.store.export import SNAPSHOT_NAME
from service.store.timetravel import resolve_position

__all__ = ["register"]


def _db_upgrade(args: argparse.Namespace) -> int:
    store = open_store(args, create=True)  # opening runs the migrations
    print(f"schema is at head on {display_url(store.url)}")
    store.close()
    return 0


def _verify(args: argparse.Namespace) -> int:
    from service.store.audit import verify_store

    store = open_store(args)
    events = store.events.head()
    with _Steps(not args.json, _VERIFY_STEPS, {"chain": events, "shadow": events}) as steps:
        report = verify_store(store, progress=steps.count, on_phase=steps.phase)
    store.close()
    if args.json:
        print_json(report.as_dict())
    else:
        print(report.summary())
    return 0 if report.ok else 1


def _replay(args: argparse.Namespace) -> int:
    from projections.runner import rebuild

    store = open_store(args)
    with _Steps(not args.json, _REPLAY_STEPS, {"inline": store.events.head()}) as steps:
        steps.phase("inline")
        report = rebuild(store.engine, progress=steps.count, on_phase=steps.phase)
    store.close()
    if args.json:
        print_json(report.as_dict())
        return 0
    rate = report.events / report.seconds if report.seconds else 0.0
    print(f"replayed {report.events} events in {report.seconds:.2f}s ({rate:,.0f} events/s)")
    if report.phases:
        names = {"inline": "inline read models", "lazy": "lazy search postings"}
        print("  " + ", ".join(f"{names.get(k, k)} {v:.2f}s" for k, v in report.phases.items()))
    for table in sorted(report.counts):
        print(f"  {table:<16} {report.counts[table]:>10} rows  sha256 {report.digests[table]}")
    return 0


_REPLAY_STEPS = {
    "inline": "replaying the log into the inline read models",
    "lazy": "building the search postings",
    "digests": "digesting every read model",
}
_VERIFY_STEPS = {
    "chain": "walking the chain and every content address",
    "lazy": "catching up the live search postings",
    "digests": "digesting the live read models",
    "shadow": "replaying the log into a shadow schema",
    "shadow lazy": "building the shadow search postings",
    "shadow digests": "digesting the shadow read models",
}
_IMPORT_STEPS = {"read": "reading items.jsonl", "guard": "checking every item", "write": "writing the events"}


class _Steps:
    """A long command's progress on stderr: one line per step, with its count so far (of the total, when known)
    and rate, rewritten in place. Disabled, it prints nothing (``--json`` output stays clean)."""

    def __init__(self, enabled: bool, labels: dict[str, str], totals: dict[str, int] | None = None) -> None:
        self._enabled, self._labels, self._totals = enabled, labels, totals or {}
        self._step: str | None = None
        self._started = 0.0

    def __enter__(self) -> _Steps:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()

    def phase(self, step: str) -> None:
        """Start ``step`` (ending the line of the one before)."""
        self._end()
        self._step, self._started = step, time.perf_counter()
        self._show(f"{self._labels.get(step, step)}...")

    def count(self, n: int) -> None:
        """The current step has done ``n``."""
        if self._step is None:
            return
        total = self._totals.get(self._step)
        spent = time.perf_counter() - self._started
        rate = f" ({n / spent:,.0f}/s)" if spent > 0 and n else ""
        of = f" of {total:,}" if total else ""
        self._show(f"{self._labels.get(self._step, self._step)}: {n:,}{of}{rate}")

    def _show(self, line: str) -> None:
        if self._enabled:
            print(f"\r  {line}", end="", file=sys.stderr, flush=True)

    def _end(self) -> None:
        if self._step is not None and self._enabled:
            print(f" {time.perf_counter() - self._started:.1f}s", file=sys.stderr)
        self._step = None


def _export(args: argparse.Namespace) -> int:
    live = open_store(args)
    store = live if args.as_of is None else live.as_of(args.as_of)
    with _Steps(True, {"write": f"writing {SNAPSHOT_NAME}"}, {"write": len(store)}) as steps:
        steps.phase("write")
        root = store.save(args.dir, progress=steps.count)
    n = len(store)
    store.close()
    live.close()
    print(f"exported {n} items to {Path(root) / SNAPSHOT_NAME}")
    return 0


def _import(args: argparse.Namespace) -> int:
    store = open_store(args, create=True)
    with _Steps(True, _IMPORT_STEPS) as steps:
        store.load(args.dir, progress=steps.count, on_phase=steps.phase)
    n = len(store)
    store.close()
    print(f"imported: the store now holds {n} items")
    return 0


def _events(args: argparse.Namespace) -> int:
    store = open_store(args)
    types = [args.type] if args.type else None
    until = None if args.as_of is None else resolve_position(store.events, args.as_of)
    rows = store.events.read(since=args.since, until=until, stream=args.stream, types=types, limit=args.limit)
    for e in rows:
        if args.json:
            print_json_line(e.as_dict())
        else:
            when = e.recorded_at.isoformat(timespec="seconds") if e.recorded_at else ""
            print(f"{e.seq:>8}  {when}  {e.type:<20} {e.stream}  v{e.version}  by {e.principal}  [{e.scope}]")
    store.close()
    return 0


def register(sub: Any) -> None:
    """Add the core commands."""
    p = sub.add_parser("db", help="database administration", description="Database administration.")
    dbsub = p.add_subparsers(dest="db_command", metavar="DB_COMMAND")
    dbsub.required = True
    up = dbsub.add_parser(
        "upgrade",
        help="create or upgrade the schema (alembic migrations)",
        description="Run the alembic migrations to head. The migrations are the only place the schema is made.",
    )
    add_store_options(up)
    up.set_defaults(handler=_db_upgrade)

    p = sub.add_parser(
        "verify",
        help="re-walk the hash chain and compare the read models with a rebuild",
        description="Re-walk the event chain (seq, prev links, every content address) and compare each read-model "
        "table with a rebuild into a shadow schema. Exit 0 when intact, 1 naming the first bad seq and why. Progress "
        "goes to stderr (not with --json).",
    )
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_verify)

    p = sub.add_parser(
        "replay",
        help="rebuild every read model from the log",
        description="Truncate every read model and replay the whole event log: the inline read models first, "
        "then the lazy search postings (timed apart); print row counts and digests.",
    )
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_replay)

    p = sub.add_parser(
        "export",
        help="write every item to DIR/items.jsonl (atomic)",
        description="Save the store's items as DIR/items.jsonl, one JSON item per line, atomically. Progress goes "
        "to stderr.",
    )
    add_store_options(p)
    p.add_argument("dir", help="directory to write items.jsonl into")
    add_as_of_option(p)
    p.set_defaults(handler=_export)

    p = sub.add_parser(
        "import",
        help="replace the store's items with DIR/items.jsonl (all-or-nothing)",
        description="Load DIR/items.jsonl into the store in one transaction; a bad row aborts the import and names "
        "the file, line and a preview. Progress (reading, checking, writing) goes to stderr.",
    )
    add_store_options(p)
    p.add_argument("dir", help="directory holding items.jsonl")
    p.set_defaults(handler=_import)

    p = sub.add_parser(
        "events",
        help="print the event log",
        description="Print events in log order, optionally filtered by stream, type and starting position.",
    )
    add_store_options(p)
    p.add_argument("--stream", help="only this stream (an item id, a belief id, ...)")
    p.add_argument("--since", type=int, default=0, help="only events with seq greater than this")
    p.add_argument("--type", help="only events of this type (e.g. ItemPut)")
    add_as_of_option(p)
    p.add_argument("--limit", type=int, default=None, help="print at most this many events")
    p.add_argument("--json", action="store_true", help="one JSON object per event, one per line (JSON Lines)")
    p.set_defaults(handler=_events)
