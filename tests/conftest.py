"""Shared fixtures: every test gets its own fresh store on a real PostgreSQL (never a mock)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from service.store.database import ephemeral_database
from service.store.embedded import embedded_server_url
from service.substrate import Substrate


def _server_url() -> str:
    # SUBSTRATE_TEST_DATABASE_URL: a real server given by the user; "docker": testcontainers; else embedded.
    url = os.environ.get("SUBSTRATE_TEST_DATABASE_URL")
    if url:
        return url
    if os.environ.get("SUBSTRATE_TEST_BACKEND") == "docker":
        return _docker_url()
    return embedded_server_url(None)


_docker: list[object] = []


def _docker_url() -> str:
    if not _docker:
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("pgvector/pgvector:pg17", driver="psycopg")
        container.start()
        _docker.append(container)
    return str(_docker[0].get_connection_url())  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    yield _server_url()
    for c in _docker:
        c.stop()  # type: ignore[attr-defined]


@pytest.fixture
def make_store(server_url: str) -> Iterator[object]:
    """Factory for fresh, isolated stores on the test server; all are closed (and dropped) afterwards."""
    opened: list[Substrate] = []

    def make(**kw: object) -> Substrate:
        s = Substrate(_database=ephemeral_database(server_url), **kw)  # type: ignore[arg-type]
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(make_store) -> Substrate:  # type: ignore[no-untyped-def]
    """One fresh, empty store."""
    return make_store()


@pytest.fixture
def uid() -> str:
    """A unique suffix for names a test creates."""
    return uuid.uuid4().hex[:10]
