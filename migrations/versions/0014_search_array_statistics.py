"""No planner statistics for the search index's array columns (terms, counts, posting and head arrays).

No statement filters or joins on these columns (they are unnested after an index probe), but ANALYZE gathered
element statistics over them: after a large stretch of indexing, the upkeep's ANALYZE of search_docs and
search_lists took 1.0 s at 100,000 passages, 0.34 s without them. The other columns keep their statistics.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_COLUMNS = {"search_docs": ("terms", "tfs"), "search_lists": ("docs", "imps", "head_docs", "head_imps")}


def _set(target: int) -> None:
    for table, columns in _COLUMNS.items():
        op.execute(f"ALTER TABLE {table} " + ", ".join(f"ALTER COLUMN {c} SET STATISTICS {target}" for c in columns))


def upgrade() -> None:
    _set(0)


def downgrade() -> None:
    _set(-1)
