"""HTTP bearer tokens (the service's credentials; not a read model, never in the event log).

Only the sha256 of each token is stored; the token itself is shown once, by ``substrate token create``.
The ``substrate_reader`` analytics role is deliberately granted nothing here.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE api_tokens (
            id         text PRIMARY KEY,          -- the public handle `token list` shows and `token revoke` takes
            principal  text NOT NULL,
            token_hash text NOT NULL UNIQUE,      -- hex sha256 of the bearer token; the lookup key
            label      text NOT NULL DEFAULT '',
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            revoked_at timestamptz
        );
        CREATE INDEX api_tokens_principal ON api_tokens (principal, created_at);
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE api_tokens")
