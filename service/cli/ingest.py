"""Commands: ingest files and folders (progress bar, receipt summary), freshness and lineage audits."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.cli.common import add_store_options, open_store, print_json

__all__ = ["Walk", "expand_paths", "parse_duration", "register"]

_WALKED_EXTENSIONS = (".txt", ".md", ".jsonl", ".csv")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_SHOWN_FAILURES = 20


def parse_duration(value: str) -> float:
    """Seconds in "90", "90s", "15m", "12h", "7d" or "2w"; argparse-friendly ValueError otherwise."""
    m = _DURATION.fullmatch(value)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {value!r} (use e.g. 3600, 90s, 15m, 12h, 7d, 2w)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass
class Walk:
    """What a walk over the given paths found: the files to ingest, and what it left out (said, never silent)."""

    files: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)  # dot-files and dot-folders not entered
    other: list[Path] = field(default_factory=list)  # files of a format ingest does not read from a folder

    def skipped(self) -> str:
        """One line saying what was left out and how to include it ("" when nothing was)."""
        parts = []
        if self.hidden:
            parts.append(f"{len(self.hidden):,} hidden file(s)/folder(s) (add --hidden to include them)")
        if self.other:
            exts = sorted({p.suffix.lower() or "(none)" for p in self.other})
            shown = ", ".join(exts[:6]) + (", ..." if len(exts) > 6 else "")
            parts.append(f"{len(self.other):,} file(s) of other types [{shown}] (give --kind to read every file)")
        return "skipped " + " and ".join(parts) if parts else ""


def expand_paths(paths: list[str], *, every_file: bool, hidden: bool = False) -> Walk:
    """Each file given, and every file under each folder given, recursively, in sorted order; dot-files and
    dot-folders only with ``hidden``, and only .txt/.md/.jsonl/.csv files unless ``every_file``."""
    walk = Walk()
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            walk.files.append(p)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            here = Path(dirpath)
            if not hidden:
                walk.hidden.extend(here / d for d in dirnames if d.startswith("."))
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            dirnames.sort()
            for name in sorted(filenames):
                if name.startswith(".") and not hidden:
                    walk.hidden.append(here / name)
                elif every_file or name.lower().endswith(_WALKED_EXTENSIONS):
                    walk.files.append(here / name)
                else:
                    walk.other.append(here / name)
    return walk


def _missing_paths(paths: list[str]) -> list[str]:
    return [p for p in paths if not os.path.lexists(p)]


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


def _progress(enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    class _Rate(TextColumn):
        def __init__(self) -> None:
            super().__init__("")

        def render(self, task: Any) -> Any:
            from rich.text import Text

            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} items/s" if speed else "- items/s", style="progress.data.speed")

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )


def _ingest(args: argparse.Namespace) -> int:
    from service.ingest.sources import IngestReceipt, ingest_artifacts, ingest_file

    missing = _missing_paths(args.paths)
    if missing:  # before the store is opened (or made): nothing to do, and the format of nothing is no question
        raise FileNotFoundError("no such file or directory: " + ", ".join(missing))
    every_file = args.kind is not None
    if args.kind in ("artifact", "artifacts"):
        walk = Walk(files=[Path(p) for p in args.paths])
    else:
        walk = expand_paths(args.paths, every_file=every_file, hidden=args.hidden)
    files = walk.files
    if walk.skipped():
        print(f"substrate ingest: {walk.skipped()}", file=sys.stderr)
    if not files:
        print("substrate ingest: error: no file to ingest under " + ", ".join(args.paths), file=sys.stderr)
        return 1
    if args.source is not None and len(files) != 1:
        raise ValueError(f"--source names one source, but {len(files)} files were given; drop it to use each path")
    store = open_store(args, create=True)
    receipt = IngestReceipt()
    started = time.perf_counter()
    try:
        with _progress(not args.json) as bar:
            total = sum(_count_lines(f) for f in files if f.is_file())
            task = bar.add_task("ingesting", total=total or None)
            for f in files:
                bar.update(task, description=f"ingesting {f.name}")

                def tick(n: int) -> None:
                    bar.advance(task, n)

                try:
                    if args.kind in ("artifact", "artifacts"):
                        part = ingest_artifacts(store, f, scope=args.scope, progress=tick)
                    else:
                        part = ingest_file(
                            store, f, kind=args.kind, source=args.source, scope=args.scope, progress=tick
                        )
                except (ValueError, OSError) as exc:
                    part = IngestReceipt(failed=[{"source": str(f), "line": None, "reason": str(exc)}])
                receipt = receipt.merge(part)
            done = bar.tasks[0].completed
            bar.update(task, description="ingested", total=done, completed=done)  # blank lines were estimated too
    finally:
        store.close()
    seconds = time.perf_counter() - started
    if args.json:
        print_json({**receipt.as_dict(), "files": len(files), "seconds": round(seconds, 3)})
    else:
        _print_receipt(receipt, len(files), seconds)
    return 1 if receipt.failed else 0


def _where(f: dict[str, Any]) -> str:
    return f"{f['source']}:{f['line']}" if f.get("line") is not None else str(f["source"])


def _print_receipt(receipt: Any, n_files: int, seconds: float) -> None:
    rate = len(receipt) / seconds if seconds else 0.0
    print(
        f"ingested {len(receipt):,} items from {n_files} file(s) in {seconds:.2f}s ({rate:,.0f} items/s): "
        f"{receipt.n_new:,} new, {len(receipt.revised):,} revised, {len(receipt.unchanged):,} unchanged, "
        f"{len(receipt.failed):,} failed"
    )
    for f in receipt.failed[:_SHOWN_FAILURES]:
        print(f"  failed {_where(f)}: {f['reason']}")
    if len(receipt.failed) > _SHOWN_FAILURES:
        print(f"  ... and {len(receipt.failed) - _SHOWN_FAILURES:,} more (use --json to see every failure)")


def _freshness(args: argparse.Namespace) -> int:
    from service.ingest.freshness import freshness_report

    store = open_store(args)
    try:
        report = freshness_report(store, max_age_s=args.max_age, scope=args.scope)
    finally:
        store.close()
    if args.json:
        print_json(report)
    else:
        print(
            f"{report['n_items']:,} items: {report['n_fresh']:,} fresh, {report['n_stale']:,} stale, "
            f"{report['n_unverifiable']:,} unverifiable"
        )
        for state in ("stale", "unverifiable"):
            for item_id in report[state]:
                print(f"  {state:<12} {item_id}  {'; '.join(report['signals'][item_id])}")
    return 1 if report["n_stale"] or report["n_unverifiable"] else 0


def _audit(args: argparse.Namespace) -> int:
    from service.ingest.lineage import audit_substrate

    store = open_store(args)
    try:
        report = audit_substrate(store, scope=args.scope, max_depth=args.max_depth)
    finally:
        store.close()
    if args.json:
        print_json(report)
    else:
        print(
            f"{report['n_items']:,} items: {report['n_intact']:,} intact, {report['n_broken']:,} broken, "
            f"{report['n_unverified']:,} unverified"
        )
        for state in ("broken", "unverified"):
            for finding in report[state]:
                why = ", ".join(f"{k} {v}" for k, v in finding.items() if k != "item_id" and v)
                print(f"  {state:<10} {finding['item_id']}  {why}")
    return 1 if report["n_broken"] or report["n_unverified"] else 0


def register(sub: Any) -> None:
    """Add the ingest, freshness and audit commands."""
    p = sub.add_parser(
        "ingest",
        help="ingest files and folders (.txt/.md, .jsonl, .csv) as items",
        description="Ingest files, and folders recursively (their .txt/.md/.jsonl/.csv files; every file with "
        "--kind). .txt/.md: one text item per non-blank line; .jsonl: one item per line (a string or "
        '{"text": ...} is a text item, any other object a record); .csv: one record per row keyed by the header. '
        "Dot-files and dot-folders are skipped (--hidden walks them), and so are files of other types in a folder; "
        "what was skipped is said on stderr. Item ids derive from (scope, source, line), so ingesting a file again "
        "revises the rows whose content changed and appends nothing for the others (unchanged). Shows a progress "
        "bar, then a receipt: ingested, new, revised, unchanged, and every failed row as file:line. Exit 0 when every "
        "row was ingested, 1 when some failed or nothing was found to ingest, 2 when a PATH does not exist.",
    )
    add_store_options(p)
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to ingest")
    p.add_argument("--scope", default="local", help="scope of the new items (default: local)")
    p.add_argument(
        "--kind",
        choices=["text", "txt", "md", "jsonl", "csv", "trace", "artifact"],
        help="force the format instead of inferring it from the extension (trace: .jsonl of "
        "{input, answer|label|call} rows; artifact: PATHs are registries of dirs holding manifest.json)",
    )
    p.add_argument("--source", help="provenance source label for a single file (default: its absolute path)")
    p.add_argument(
        "--hidden", action="store_true", help="also walk dot-files and dot-folders (skipped by default, with a note)"
    )
    p.add_argument("--json", action="store_true", help="print the receipt as JSON (no progress bar)")
    p.set_defaults(handler=_ingest)

    p = sub.add_parser(
        "freshness",
        help="report stale and unverifiable items",
        description="Audit every item (of --scope) for staleness: source file moved or changed (content hash), "
        "superseded, older than --max-age, or an invalid timestamp (stale); a recorded hash that cannot be "
        "checked because the path cannot be read (unverifiable). Exit 0 when everything is fresh, else 1.",
    )
    add_store_options(p)
    p.add_argument(
        "--max-age",
        type=parse_duration,
        default=None,
        metavar="AGE",
        help="items older than this are stale: seconds, or 90s, 15m, 12h, 7d, 2w",
    )
    p.add_argument("--scope", help="only audit items of this scope")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_freshness)

    p = sub.add_parser(
        "audit",
        help="verify every item's derived_from lineage",
        description="Walk every item's derived_from ancestry: intact, broken (a dangling ancestor or a cycle) or "
        "unverified (depth cap reached, or with --scope an ancestor that scope may not read). "
        "Exit 0 when every chain is intact, else 1.",
    )
    add_store_options(p)
    p.add_argument("--scope", help="audit this scope's items, as that scope (only ancestors it may read count)")
    p.add_argument("--max-depth", type=int, default=20, help="deepest ancestry level walked (default: 20)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_audit)
