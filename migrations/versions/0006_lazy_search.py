"""Search postings become a lazy projector; stale-vector deletes stay inline as the ``vectors`` projector.

No table changes. A store written before this revision has its search postings current (they were maintained
inline) but no checkpoint for the new inline ``vectors`` projector: give it the log head, which is where a replay
would leave it, so ``substrate verify`` compares equal right after the upgrade.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO checkpoints (name, seq) SELECT 'vectors', seq FROM log_head WHERE id = 1 AND seq > 0 "
        "ON CONFLICT (name) DO NOTHING"
    )


def downgrade() -> None:
    op.execute("DELETE FROM checkpoints WHERE name = 'vectors'")
