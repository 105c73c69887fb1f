"""Alembic environment: runs on the connection handed in by service.store.database.upgrade, or on a URL."""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import context

config = context.config


def _run(connection: sa.engine.Connection) -> None:
    context.configure(connection=connection, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = config.get_main_option("sqlalchemy.url") or os.environ["SUBSTRATE_DATABASE_URL"]
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
