"""``grant_states.can_admin``: whether a grant state made its principal an administrator of the scope, so the
grants as of a log position say who administered what then (``list_access`` on a time-travel view).

Live states take the flag from ``grants``; a state closed before this migration keeps false (``substrate
replay`` rebuilds every state exactly from the log).

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE grant_states ADD COLUMN can_admin boolean NOT NULL DEFAULT false")
    op.execute(
        "UPDATE grant_states s SET can_admin = true FROM grants g "
        "WHERE s.to_seq IS NULL AND g.principal = s.principal AND g.scope = s.scope AND g.can_admin"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE grant_states DROP COLUMN can_admin")
