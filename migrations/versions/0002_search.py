"""Embeddings and lexical search read models (filled in by the search issue).

Revision ID: 0002
Revises: 0001
"""

from alembic import op  # noqa: F401

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
