"""A guard for the one-statement append: fail the whole statement when its compare-and-set on the head missed.

The single-event append (service.store.eventstore) runs as one autocommit statement whose first step is a
compare-and-set of ``log_head``. When another append got there first, that step matches no row and nothing may be
written, yet the statement's other data-modifying CTEs (the projectors' upserts) would still run; this function
raises instead, so the statement is void and the caller retries under the chain lock.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION substrate_appended(recorded timestamptz) RETURNS timestamptz
        LANGUAGE plpgsql AS $$
        BEGIN
            IF recorded IS NULL THEN
                RAISE EXCEPTION 'append raced: the log head or the stream version moved since it was read'
                    USING ERRCODE = 'SB409';
            END IF;
            RETURN recorded;
        END
        $$
        """
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION substrate_appended(timestamptz)")
