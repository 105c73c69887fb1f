"""``item_states``: the insertion-order index covers the closed states only.

A read as of a log position takes the live states valid there from ``items`` (its rows written at or before the
position: ``items.seq`` is the live state's ``from_seq``) and only the closed ones from ``item_states``, so the
order index needs no entry for a live state: a new item costs the table one index entry (its primary key), not
two, and the entry is added when the state is replaced or removed.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX item_states_pos")
    op.execute("CREATE INDEX item_states_closed_pos ON item_states (pos) WHERE to_seq IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX item_states_closed_pos")
    op.execute("CREATE INDEX item_states_pos ON item_states (pos)")
