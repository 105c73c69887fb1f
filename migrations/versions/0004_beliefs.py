"""The ``beliefs`` read model: one row per live belief item (credence and evidence trail).

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE beliefs (
            id        text PRIMARY KEY,
            scope     text NOT NULL,
            -- The normalized claim text: find-or-create looks a belief up by (scope, claim_key).
            claim_key text NOT NULL,
            claim     jsonb NOT NULL,
            credence  double precision NOT NULL CHECK (credence >= 0 AND credence <= 1),
            evidence  jsonb NOT NULL,
            -- Every source_id the trail cites, so retract finds its citers through an index, not a scan.
            sources   text[] NOT NULL,
            version   integer NOT NULL,
            pos       bigint NOT NULL,
            seq       bigint NOT NULL
        );
        -- Not UNIQUE: assimilate already serializes creation on a deterministic per-(scope, key) stream;
        -- a unique index here would make an unrelated direct put of a colliding record fail its append.
        CREATE INDEX beliefs_scope_key ON beliefs (scope, claim_key, pos);
        -- retrieve_beliefs filters and bounds on credence over the whole domain (MXR-080-0245).
        CREATE INDEX beliefs_scope_credence ON beliefs (scope, credence DESC);
        CREATE INDEX beliefs_credence ON beliefs (credence DESC);
        CREATE INDEX beliefs_sources ON beliefs USING gin (sources);
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE beliefs")
