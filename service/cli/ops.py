"""Operating a store: ``substrate stats`` (what it holds and costs on disk), ``substrate url`` and ``substrate psql``."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from service.cli.common import add_store_options, display_url, open_store, print_json

__all__ = ["register"]

READER_ROLE = "substrate_reader"  # the row-level-security role of migration 0003 (docs/analytics.md)


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def _stats(args: argparse.Namespace) -> int:
    from service.store.footprint import footprint

    store = open_store(args)
    try:
        report = footprint(store.engine)
    finally:
        store.close()
    if args.json:
        print_json(report.as_dict())
        return 0
    tables = sum(t.table_bytes for t in report.tables)
    indexes = sum(t.index_bytes for t in report.tables)
    settings = ", ".join(f"{k} {v}" for k, v in report.settings.items())
    wal = "not readable by this role" if report.wal_bytes is None else f"{_size(report.wal_bytes)}"
    print(f"events     {report.events:,}")
    print(f"database   {_size(report.database_bytes)} (tables {_size(tables)}, indexes {_size(indexes)})")
    print(f"WAL        {wal} ({settings})")
    print("items per scope:")
    for scope, kinds in sorted(report.items.items()):
        detail = ", ".join(f"{kind} {n:,}" for kind, n in sorted(kinds.items()))
        print(f"  {scope:<24} {sum(kinds.values()):>10,}  ({detail})")
    if not report.items:
        print("  (none)")
    print(f"  {'TABLE':<24} {'DATA':>10} {'INDEXES':>10} {'ROWS (EST.)':>12} {'DEAD ROWS':>10}")
    for t in report.tables:
        print(f"  {t.name:<24} {_size(t.table_bytes):>10} {_size(t.index_bytes):>10} {t.rows:>12,} {t.dead_rows:>10,}")
    for line in report.advice():
        print(f"advice: {line}")
    return 0


def _pg_option(value: str) -> str:
    """A value as PGOPTIONS takes it: spaces and backslashes escaped with a backslash."""
    return value.replace("\\", "\\\\").replace(" ", "\\ ")


def _psql_program() -> str:
    from service.store.embedded import embedded_program

    try:
        return embedded_program("psql")  # the embedded server's own version
    except (FileNotFoundError, ImportError, KeyError):
        found = shutil.which("psql")
        if found is None:
            raise FileNotFoundError("psql is neither in the embedded PostgreSQL package nor on PATH") from None
        return found


def _connection(url: str, principal: str | None) -> tuple[str, dict[str, str]]:
    """The libpq URL (no password: that goes in PGPASSWORD, never on a command line) and psql's environment."""
    from sqlalchemy.engine import make_url

    env = dict(os.environ)
    password = make_url(url).password
    if password:
        env["PGPASSWORD"] = str(password)
    plain = display_url(str(make_url(url)._replace(password=None)))
    if principal is not None:
        if not principal.strip():
            raise ValueError("--as must name a principal, got an empty string")
        # The reader role and its principal for the whole session: row-level security shows that principal's
        # readable scopes only (docs/analytics.md).
        opts = f"-c role={READER_ROLE} -c substrate.principal={_pg_option(principal)}"
        env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {opts}".strip()
    return plain, env


def _url(args: argparse.Namespace) -> int:
    running = _embedded_running(args)
    store = open_store(args)
    try:
        print(display_url(store.url, password=args.show_password))
    finally:
        store.close()
    if running is False:
        print(
            "substrate url: note: the embedded server of this store runs only while a substrate process uses it "
            "(e.g. `substrate serve`); `substrate psql` starts it for its session",
            file=sys.stderr,
        )
    return 0


def _embedded_running(args: argparse.Namespace) -> bool | None:
    """For an embedded store: whether its server is running now (None for a --url store)."""
    import psutil

    if getattr(args, "url", None) or os.environ.get("SUBSTRATE_DATABASE_URL"):
        return None
    pidfile = Path(args.root or ".substrate") / "pgdata" / "postmaster.pid"
    try:
        return psutil.pid_exists(int(pidfile.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return False


def _psql(args: argparse.Namespace) -> int:
    program = _psql_program()
    store = open_store(args)  # keeps the embedded server running for as long as psql does
    try:
        url, env = _connection(store.url, args.principal)
        return subprocess.run([program, url, *args.psql_args], env=env, check=False).returncode
    finally:
        store.close()


def register(sub: Any) -> None:
    """Add ``stats``, ``url`` and ``psql``."""
    p = sub.add_parser(
        "stats",
        help="events, items per scope, table and index sizes, the WAL",
        description="Print what the store holds and what it costs on disk: the number of events, the items per scope "
        "and kind, every table's and its indexes' size with its live and dead rows, the write-ahead log's size and "
        "the settings that bound it, replication slots, and advice when something stands out (dead rows a VACUUM "
        "would reclaim, a forgotten slot holding WAL). Read-only. See the README's 'Disk' section.",
    )
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_stats)

    p = sub.add_parser(
        "url",
        help="print the store's PostgreSQL connection URL",
        description="Print the libpq connection URL of the store (for an embedded store: the Unix socket under its "
        "root; it answers while a substrate process such as `substrate serve` runs it). The password of a --url "
        "store is masked unless --show-password.",
    )
    add_store_options(p)
    p.add_argument("--show-password", action="store_true", help="print the password instead of ***")
    p.set_defaults(handler=_url)

    p = sub.add_parser(
        "psql",
        help="open psql on the store (optionally as a principal's row-level-security reader)",
        description="Run psql on the store: the embedded server's own psql (or psql on PATH), connected to the "
        "store's database, with the embedded server kept running for the session. --as PRINCIPAL sets the session "
        f"role to {READER_ROLE} and substrate.principal to PRINCIPAL, so every table and analytics view shows only "
        "the scopes that principal may read (docs/analytics.md). Arguments after -- go to psql, e.g. "
        "`substrate psql -- -c 'SELECT count(*) FROM events'`. Exits with psql's code.",
    )
    add_store_options(p)
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL", help=f"read as this principal through {READER_ROLE}")
    p.add_argument("psql_args", nargs="*", metavar="PSQL_ARG", help="arguments passed to psql (after --)")
    p.set_defaults(handler=_psql)
