"""Administration: admin grants (``grants.can_admin``) and approver revocations (``approvers.revoked``).

An ``AccessGranted`` event of mode ``admin`` makes a principal an administrator of a scope (it may grant and revoke
access and approvers there; it also reads and writes it); an ``ApproverRevoked`` event is a row of the approvers
trail with ``revoked`` true, and the live approvers of a scope are those whose latest row is a grant. Existing
stores hold neither event: the new columns' defaults are what a replay gives them. The views show the live
approvers only, and the admin flag.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE grants ADD COLUMN can_admin boolean NOT NULL DEFAULT false")
    op.execute("ALTER TABLE approvers ADD COLUMN revoked boolean NOT NULL DEFAULT false")
    # The write door reads a principal's live approver scopes on every authorized append.
    op.execute("CREATE INDEX approvers_who_scope_seq ON approvers (who, scope, seq)")
    op.execute(
        "CREATE OR REPLACE VIEW analytics_access WITH (security_invoker = true) AS "
        "SELECT principal, scope, can_read, can_write, seq, can_admin FROM grants"
    )
    op.execute(
        "CREATE OR REPLACE VIEW analytics_approvers WITH (security_invoker = true) AS "
        "SELECT a.scope, a.who, min(a.seq) AS since_seq, bool_or(a.bootstrap) AS bootstrapped FROM approvers a "
        "WHERE NOT a.revoked AND a.seq > coalesce((SELECT max(r.seq) FROM approvers r WHERE r.scope = a.scope "
        "AND r.who = a.who AND r.revoked), 0) GROUP BY a.scope, a.who"
    )


def downgrade() -> None:
    op.execute(
        "CREATE OR REPLACE VIEW analytics_approvers WITH (security_invoker = true) AS "
        "SELECT scope, who, min(seq) AS since_seq, bool_or(bootstrap) AS bootstrapped FROM approvers "
        "GROUP BY scope, who"
    )
    op.execute("DROP VIEW analytics_access")
    op.execute(
        "CREATE VIEW analytics_access WITH (security_invoker = true) AS "
        "SELECT principal, scope, can_read, can_write, seq FROM grants"
    )
    op.execute(
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'substrate_reader') THEN "
        "GRANT SELECT ON analytics_access TO substrate_reader; END IF; END $$"
    )
    op.execute("DROP INDEX approvers_who_scope_seq")
    op.execute("ALTER TABLE approvers DROP COLUMN revoked")
    op.execute("ALTER TABLE grants DROP COLUMN can_admin")
