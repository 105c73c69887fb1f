"""`substrate serve --workers N`: several stateless processes, exactly one of them doing the background upkeep."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest
from sqlalchemy import text

from service import Substrate
from service.search.upkeep import UPKEEP_LEASE
from tests.e2e.http_server import Server, create_token, start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("workers")
    server = start_server(str(root / "store"), root, "--workers", "2", "--background-interval", "0.2")
    yield server
    server.stop()


def _upkeep_holders(store: Substrate) -> list[int]:
    """The pids of the processes whose session holds the upkeep lease (named in their application_name)."""
    with store.engine.connect() as c:
        names = c.execute(
            text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                "WHERE l.locktype = 'advisory' AND l.objid = :k AND l.granted AND l.database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"k": UPKEEP_LEASE},
        ).scalars()
        return [int(n.rsplit(" ", 1)[1]) for n in names]


def _one_holder(store: Substrate, other_than: int | None = None, seconds: float = 30) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        holders = _upkeep_holders(store)
        assert len(holders) <= 1, holders
        if holders and holders[0] != other_than:
            return holders[0]
        time.sleep(0.1)
    raise AssertionError(f"no process took the upkeep lease in {seconds} s (other than {other_than})")


def test_several_processes_serve_and_exactly_one_does_the_upkeep(srv: Server) -> None:
    token = create_token(srv.root, "alice")
    workers = psutil.Process(srv.proc.pid).children()
    assert len([w for w in workers if "python" in w.name().lower()]) >= 2
    store = Substrate(root=srv.root)
    try:
        with srv.client(token) as client:
            for i in range(20):
                r = client.post("/v1/items", json={"kind": "text", "text": f"glacier note {i}", "scope": "alice"})
                assert r.status_code == 201, r.text
            holder = _one_holder(store)
            assert holder in {w.pid for w in psutil.Process(srv.proc.pid).children()}
            hits = client.post("/v1/search", json={"query": "glacier", "k": 5, "scope": "alice"}).json()["hits"]
            assert len(hits) == 5
            os.kill(holder, signal.SIGKILL)  # the upkeep process dies: another one takes the lease over
            successor = _one_holder(store, other_than=holder)
            assert successor in {w.pid for w in psutil.Process(srv.proc.pid).children()}
            for _ in range(10):  # the others went on serving (and uvicorn replaced the dead one)
                r = client.post("/v1/search", json={"query": "glacier note", "k": 3, "scope": "alice"})
                assert r.status_code == 200 and len(r.json()["hits"]) == 3
    finally:
        store.close()
