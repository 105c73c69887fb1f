"""Grant and belief states with their log intervals; per-position time-travel schemas are gone.

``grant_states`` and ``belief_states`` keep every state of a grant and of a belief with the interval
``[from_seq, to_seq)`` it held in, beside the live ``grants`` and ``beliefs`` tables, so the access policy and the
beliefs as of a log position are queries, as items are (0008). A store written before this revision gets both
filled by folding its log with the projectors themselves, and their checkpoints at the log head, so ``substrate
verify`` compares equal right after the upgrade.

Reads as of a position no longer replay the log into a schema of their own: the ``asof_*`` schemas a process left
behind (one per position asked, about as large as the store) are dropped here.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from typing import Any, NamedTuple

from alembic import op
from sqlalchemy import text

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

READER = "substrate_reader"
_VISIBLE = "ANY (CAST((SELECT substrate_visible_scopes()) AS text[]))"
_BATCH = 5000


class _Event(NamedTuple):
    seq: int
    stream: str
    version: int
    type: str
    data: dict[str, Any]


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE grant_states (
            principal text    NOT NULL,
            scope     text    NOT NULL,
            from_seq  bigint  NOT NULL,   -- the grant that produced this state
            to_seq    bigint,             -- the grant or revocation that replaced it; NULL while it holds
            can_read  boolean NOT NULL,
            can_write boolean NOT NULL,
            PRIMARY KEY (principal, scope, from_seq)
        );
        CREATE TABLE belief_states (
            id       text             NOT NULL,
            from_seq bigint           NOT NULL,   -- the event that produced this belief state
            to_seq   bigint,                      -- the one that replaced or dropped it; NULL while live
            scope    text             NOT NULL,
            credence double precision NOT NULL,
            PRIMARY KEY (id, from_seq)
        );
        """
    )
    op.execute("ALTER TABLE grant_states ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE belief_states ENABLE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY reader_grant_states ON grant_states FOR SELECT "
        "USING (principal = (SELECT substrate_principal()))"
    )
    op.execute(f"CREATE POLICY reader_belief_states ON belief_states FOR SELECT USING (scope = {_VISIBLE})")
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN "
        f"EXECUTE 'GRANT SELECT ON grant_states, belief_states TO {READER}'; END IF; END $$"
    )
    _fill()
    _drop_time_travel_schemas()


def _fill() -> None:
    """Fold the existing log into both tables, as a replay would (each projector's own apply, in log order)."""
    from projections import belief_states, grant_states
    from projections.canonical import clear_digest_memo
    from projections.jsonutil import loads

    conn = op.get_bind()
    for projector in (grant_states.PROJECTOR, belief_states.PROJECTOR):
        sql = text(
            "SELECT seq, stream, version, type, data::text FROM events WHERE seq > :after "
            "AND type = ANY(CAST(:types AS text[])) ORDER BY seq LIMIT :lim"
        )
        after = 0
        while True:
            rows = conn.execute(sql, {"after": after, "types": sorted(projector.handles), "lim": _BATCH}).all()
            if not rows:
                break
            projector.apply(conn, [_Event(r[0], r[1], r[2], r[3], loads(r[4])) for r in rows])
            clear_digest_memo()
            after = rows[-1][0]
        conn.execute(
            text(
                "INSERT INTO checkpoints (name, seq) SELECT :name, seq FROM log_head WHERE id = 1 AND seq > 0 "
                "ON CONFLICT (name) DO NOTHING"
            ),
            {"name": projector.name},
        )


def _drop_time_travel_schemas() -> None:
    conn = op.get_bind()
    for (schema,) in conn.execute(text("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'asof\\_%'")).all():
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def downgrade() -> None:
    op.execute("DROP TABLE belief_states, grant_states")
    op.execute("DELETE FROM checkpoints WHERE name IN ('grant_states', 'belief_states')")
