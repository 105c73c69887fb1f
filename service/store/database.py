"""Where the store lives: an existing PostgreSQL URL, a persistent embedded cluster, or an ephemeral database."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import uuid
import weakref
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from service.domain.validation import InvalidArgument
from service.store.embedded import embedded_server_url, release_server
from service.store.replica import READ_URL_ENV, Replica

__all__ = ["Database", "guard_parameters", "open_database", "upgrade"]

_log = logging.getLogger("substrate.db")

ENV_URL = "SUBSTRATE_DATABASE_URL"
_TEMPLATE = "substrate_template"
# Every database the embedded server makes sorts text with PostgreSQL's builtin C.UTF-8 collation: the same
# code-point order as the cluster's libc C.UTF-8, but compared bytewise (no strcoll) with abbreviated sort keys,
# which halves the index builds of a rebuild and every text comparison of an index insert. LC_CTYPE stays the
# libc C.UTF-8, so the text-search parser classifies characters exactly as before. (PostgreSQL 17+.)
_CREATE_OPTIONS = "TEMPLATE template0 LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'"

_lock = threading.Lock()
_root_users: dict[str, int] = {}  # open persistent stores per embedded cluster in this process
_template_ready: set[str] = set()


def _driver_url(url: str, database: str | None = None) -> str:
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    if database is not None:
        u = u.set(database=database)
    return u.render_as_string(hide_password=False)


def _admin_engine(url: str) -> Engine:
    return sa.create_engine(_driver_url(url), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def has_nul(value: object) -> bool:
    """Whether any text in ``value`` (nested lists, tuples, dicts) holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, (list, tuple)):
        return any(has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(has_nul(v) for v in value.values())
    return False


def _refuse_nul(conn: object, cursor: object, statement: str, parameters: object, context: object, many: bool) -> None:
    if has_nul(parameters):
        raise InvalidArgument("text values cannot contain NUL (\\x00) characters: PostgreSQL cannot store them")


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def reader(engine: Engine) -> Engine:
    """``engine`` in autocommit, for single-statement reads: one round trip instead of BEGIN, SELECT, ROLLBACK,
    and psycopg keeps its prepared statements (it drops them at every rollback)."""
    found = _READERS.get(engine)
    if found is None:
        found = _READERS[engine] = engine.execution_options(isolation_level="AUTOCOMMIT")
    return found


def guard_parameters(engine: Engine) -> Engine:
    """Refuse NUL characters in any bound text before it reaches PostgreSQL (a typed error, not a DataError)."""
    event.listen(engine, "before_cursor_execute", _refuse_nul)
    return engine


def _make_engine(url: str) -> Engine:
    return guard_parameters(
        sa.create_engine(
            _driver_url(url),
            pool_size=4,
            max_overflow=12,
            pool_pre_ping=False,
            pool_reset_on_return="rollback",
        )
    )


def upgrade(engine: Engine) -> None:
    """Run the alembic migrations to head on ``engine`` (the only place the schema is made)."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    here = Path(__file__).resolve().parents[2] / "migrations"  # the top-level migrations package
    cfg = Config()
    cfg.set_main_option("script_location", str(here))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    with engine.begin() as conn:
        # Concurrent openers of one database serialize here instead of racing on CREATE TABLE.
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(80237)")
        if MigrationContext.configure(conn).get_current_revision() == head:
            return
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def _database_exists(admin: Engine, name: str) -> bool:
    with admin.connect() as conn:
        return conn.exec_driver_sql("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).first() is not None


def _ensure_template(server_url: str) -> None:
    with _lock:
        if server_url in _template_ready:
            return
        admin = _admin_engine(server_url)
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{_TEMPLATE}"')
            conn.exec_driver_sql(f'CREATE DATABASE "{_TEMPLATE}" {_CREATE_OPTIONS}')
        engine = sa.create_engine(_driver_url(server_url, _TEMPLATE), poolclass=sa.pool.NullPool)
        upgrade(engine)
        engine.dispose()
        admin.dispose()
        _template_ready.add(server_url)


def _drop_database(server_url: str, name: str) -> None:
    try:
        admin = _admin_engine(server_url)
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
    except Exception:  # noqa: BLE001 - best effort at exit; the ephemeral cluster is deleted anyway
        pass


@dataclass
class Database:
    """An open database: its engine, its URL, and whether it is an ephemeral one to drop on close."""

    engine: Engine
    url: str
    root: str | None = None
    ephemeral: bool = False
    replica: Replica | None = None  # a hot standby of this database that serves reads (service.store.replica)
    _finalizer: Any = field(default=None, repr=False)

    def close(self) -> None:
        """Dispose the connection pools (and drop the database when it is ephemeral)."""
        if self.replica is not None:
            self.replica.close()
        if self._finalizer is not None:
            self._finalizer()


def _finalize(engine: Engine, server_url: str | None, name: str | None) -> None:
    engine.dispose()
    if server_url and name:
        _drop_database(server_url, name)


def _release_root(engine: Engine, key: str) -> None:
    """Dispose the pool; stop the root's embedded cluster when this process no longer uses it."""
    engine.dispose()
    with _lock:
        _root_users[key] = _root_users.get(key, 1) - 1
        if _root_users[key] > 0:
            return
        del _root_users[key]
    release_server(key)


def open_database(
    *, url: str | None = None, root: str | os.PathLike[str] | None = None, read_url: str | None = None
) -> Database:
    """Open (and migrate) the store: ``url``, else ``$SUBSTRATE_DATABASE_URL``, else ``root``, else ephemeral.

    ``read_url`` (else ``$SUBSTRATE_READ_URL`` when the store is a URL's): a hot standby of it that serves reads.
    """
    url = url or (os.environ.get(ENV_URL) if root is None else None)
    if url:
        read_url = read_url or os.environ.get(READ_URL_ENV)
    db = _open_primary(url, root)
    if read_url:
        db.replica = Replica(_make_engine(read_url))
    return db


def _open_primary(url: str | None, root: str | os.PathLike[str] | None) -> Database:
    if url:
        engine = _make_engine(url)
        upgrade(engine)
        db = Database(engine=engine, url=url)
        db._finalizer = weakref.finalize(db, _finalize, engine, None, None)
        return db
    if root is not None:
        root_path = Path(root).expanduser().resolve()
        root_path.mkdir(parents=True, exist_ok=True)
        key = str((root_path / "pgdata").resolve())
        server_url = embedded_server_url(key)
        with _lock:
            _root_users[key] = _root_users.get(key, 0) + 1
        admin = _admin_engine(server_url)
        if not _database_exists(admin, "substrate"):
            with admin.connect() as conn:
                conn.exec_driver_sql(f'CREATE DATABASE "substrate" {_CREATE_OPTIONS}')
        admin.dispose()
        engine = _make_engine(_driver_url(server_url, "substrate"))
        upgrade(engine)
        db = Database(engine=engine, url=_driver_url(server_url, "substrate"), root=str(root_path))
        db._finalizer = weakref.finalize(db, _release_root, engine, key)
        return db
    server_url = embedded_server_url(None)
    return ephemeral_database(server_url)


def ephemeral_database(server_url: str) -> Database:
    """A new, empty, migrated database on ``server_url`` (cloned from a template); dropped on close."""
    _ensure_template(server_url)
    name = _take_clone(server_url)
    db_url = _driver_url(server_url, name)
    engine = _make_engine(db_url)
    db = Database(engine=engine, url=db_url, ephemeral=True)
    db._finalizer = weakref.finalize(db, _finalize, engine, server_url, name)
    return db


def _clone_template(server_url: str) -> str:
    name = "substrate_" + uuid.uuid4().hex[:16]
    admin = _admin_engine(server_url)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
    finally:
        admin.dispose()
    return name


def _take_clone(server_url: str) -> str:
    """A fresh clone of the template: the oldest spare made in the background when there is one (cloning takes
    30-300 ms, depending on what the checkpointer is doing), and start making spares up to ``_SPARES`` again."""
    pid = os.getpid()
    with _lock:
        queue = _spares.setdefault(server_url, deque())
        while queue and queue[0][0] != pid:  # a forked child never waits on its parent's thread (nor drops theirs)
            queue.popleft()
        spare = queue.popleft() if queue else None
    name = None
    if spare is not None:
        try:
            name = spare[1].result()
        except Exception:  # noqa: BLE001 - the spare failed: clone in the foreground, which raises if it must
            name = None
    if name is None:
        name = _clone_template(server_url)
    with _lock:
        maker = _maker()
        while len(queue) < _SPARES:
            queue.append((pid, maker.submit(_clone_template, server_url)))
    return name


def _maker() -> ThreadPoolExecutor:
    """This process's spare maker (a forked child's copy of its parent's has no thread behind it)."""
    global _spare_maker
    if _spare_maker is None or _spare_maker[0] != os.getpid():
        _spare_maker = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="substrate-spare-db"))
    return _spare_maker[1]


# Spare clones per server, made in the background one after the other (see _take_clone); dropped at exit. Two:
# opens back to back (a test suite, a benchmark) then rarely wait for a clone.
_SPARES = 2
_spares: dict[str, deque[tuple[int, Future[str]]]] = {}
_spare_maker: tuple[int, ThreadPoolExecutor] | None = None


@atexit.register
def _forget_templates() -> None:
    _template_ready.clear()
    with _lock:
        spares = [(url, spare) for url, queue in _spares.items() for pid, spare in queue if pid == os.getpid()]
        _spares.clear()
    for url, spare in spares:
        try:
            name = spare.result(timeout=30)
        except Exception:  # noqa: BLE001 - nothing was made, nothing to drop
            continue
        _drop_database(url, name)
