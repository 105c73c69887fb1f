"""The ``item_states`` read model: every item state with the log interval ``[from_seq, to_seq)`` it was live in.

Reads as of a log position become queries over the states valid there instead of a replay into a schema of their
own. A store written before this revision gets the table filled by folding its log with the projector itself
(``projections.item_states``), and the projector's checkpoint at the log head, where a replay would leave both, so
``substrate verify`` compares equal right after the upgrade.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from typing import Any, NamedTuple

from alembic import op
from sqlalchemy import text

revision = "0008"
down_revision = "0007"
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
        CREATE TABLE item_states (
            item_id  text   NOT NULL,
            from_seq bigint NOT NULL,   -- the event that produced this state
            to_seq   bigint,            -- the event that replaced or removed it; NULL while live
            digest   text   NOT NULL,   -- revisions.digest of the state (the full document lives there)
            scope    text   NOT NULL,
            kind     text   NOT NULL,
            pos      bigint NOT NULL,   -- what items.pos was for this state (insertion order)
            PRIMARY KEY (item_id, from_seq)
        );
        CREATE INDEX item_states_pos ON item_states (pos);
        """
    )
    op.execute("ALTER TABLE item_states ENABLE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY reader_item_states ON item_states FOR SELECT USING (scope = {_VISIBLE})")
    op.execute(
        f"DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN "
        f"EXECUTE 'GRANT SELECT ON item_states TO {READER}'; END IF; END $$"
    )
    _fill()


def _fill() -> None:
    """Fold the existing log into the table, as a replay would (the projector's own apply, in log order)."""
    from projections import item_states
    from projections.canonical import clear_digest_memo
    from projections.jsonutil import loads

    conn = op.get_bind()
    types = sorted(item_states.PROJECTOR.handles)
    sql = text(
        "SELECT seq, stream, version, type, data::text FROM events WHERE seq > :after "
        "AND type = ANY(CAST(:types AS text[])) ORDER BY seq LIMIT :lim"
    )
    after = 0
    while True:
        rows = conn.execute(sql, {"after": after, "types": types, "lim": _BATCH}).all()
        if not rows:
            break
        item_states.apply(conn, [_Event(r[0], r[1], r[2], r[3], loads(r[4])) for r in rows])
        clear_digest_memo()
        after = rows[-1][0]
    conn.execute(
        text(
            "INSERT INTO checkpoints (name, seq) SELECT :name, seq FROM log_head WHERE id = 1 AND seq > 0 "
            "ON CONFLICT (name) DO NOTHING"
        ),
        {"name": item_states.NAME},
    )


def downgrade() -> None:
    op.execute("DROP TABLE item_states")
    op.execute("DELETE FROM checkpoints WHERE name = 'item_states'")
