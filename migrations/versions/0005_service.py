"""HTTP tokens and service tables (filled in by the service issue).

Revision ID: 0005
Revises: 0004
"""

from alembic import op  # noqa: F401

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
