"""Access grants, share history, governance; analytics views and row-level security for readers.

Revision ID: 0003
Revises: 0002

Row-level security: the service connects as the tables' owner and is unaffected (owners and superusers
bypass RLS). Analysts connect as (or SET ROLE to) ``substrate_reader``, which is granted SELECT on the
read models, the log and the ``analytics_*`` views, and see only the scopes their principal may read:
its home scope (its own name), ``public``, and the scopes the ``grants`` read model gives it read on.
The principal is ``current_setting('substrate.principal')`` for the shared ``substrate_reader`` role,
or the role's own name for a per-principal role that is a member of ``substrate_reader`` (such a role
cannot impersonate another principal by changing the setting).
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

READER = "substrate_reader"
# Tables a reader may select from; each carries a policy below (a table without one would leak).
_READER_TABLES = ("events", "items", "revisions", "item_history", "grants", "approvers", "proposals")
_VIEWS = (
    "analytics_principal",
    "analytics_items_by_scope_kind",
    "analytics_events_per_day",
    "analytics_share_history",
    "analytics_pending_proposals",
    "analytics_access",
    "analytics_approvers",
)

_TABLES = """
CREATE TABLE grants (
    principal text NOT NULL,
    scope     text NOT NULL,
    can_read  boolean NOT NULL,
    can_write boolean NOT NULL,
    seq       bigint NOT NULL,
    PRIMARY KEY (principal, scope)
);
CREATE INDEX grants_scope ON grants (scope);

CREATE TABLE item_history (
    item_id     text NOT NULL,
    seq         bigint NOT NULL,
    action      text NOT NULL,
    by          text NOT NULL,
    from_scope  text,
    to_scope    text,
    version     integer,
    revision    text,
    entry       jsonb NOT NULL,
    recorded_at timestamptz,
    PRIMARY KEY (item_id, seq)
);
CREATE INDEX item_history_seq ON item_history (seq);

-- Every approver grant, in order: the audit trail; the live ACL is its distinct (scope, who).
CREATE TABLE approvers (
    seq       bigint PRIMARY KEY,
    scope     text NOT NULL,
    who       text NOT NULL,
    by        text NOT NULL,
    bootstrap boolean NOT NULL
);
CREATE INDEX approvers_scope_who ON approvers (scope, who);

-- The append-only proposal history: one row per proposal/approval/rejection, never updated.
CREATE TABLE proposals (
    item_id     text NOT NULL,
    seq         bigint NOT NULL,
    status      text NOT NULL,
    from_scope  text,
    to_scope    text NOT NULL,
    by          text NOT NULL,
    proposer    text NOT NULL,
    reason      text NOT NULL,
    item_digest text NOT NULL,
    entry       jsonb NOT NULL,
    recorded_at timestamptz,
    PRIMARY KEY (item_id, seq)
);
CREATE INDEX proposals_status_to ON proposals (status, to_scope, seq);
"""

# SQL-standard bodies are bound at creation time, so a reader's search_path cannot substitute a table.
_FUNCTIONS = f"""
CREATE FUNCTION substrate_principal() RETURNS text LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT CASE WHEN current_user = '{READER}'
                THEN nullif(current_setting('substrate.principal', true), '')
                ELSE current_user::text END;
END;

CREATE FUNCTION substrate_visible_scopes() RETURNS text[] LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT ARRAY['public', substrate_principal()]
        || coalesce((SELECT array_agg(g.scope ORDER BY g.scope) FROM grants g
                     WHERE g.principal = substrate_principal() AND g.can_read), '{{}}'::text[]);
END;
"""

# (SELECT substrate_visible_scopes()) is an InitPlan: evaluated once per query, not once per row.
_VISIBLE = "ANY (CAST((SELECT substrate_visible_scopes()) AS text[]))"
_POLICIES = f"""
CREATE POLICY reader_events ON events FOR SELECT USING (scope = {_VISIBLE});
CREATE POLICY reader_items ON items FOR SELECT USING (scope = {_VISIBLE});
CREATE POLICY reader_revisions ON revisions FOR SELECT USING ((doc->>'scope') = {_VISIBLE});
CREATE POLICY reader_item_history ON item_history FOR SELECT
    USING (to_scope = {_VISIBLE} OR from_scope = {_VISIBLE});
CREATE POLICY reader_grants ON grants FOR SELECT USING (principal = (SELECT substrate_principal()));
CREATE POLICY reader_approvers ON approvers FOR SELECT USING (scope = {_VISIBLE});
CREATE POLICY reader_proposals ON proposals FOR SELECT
    USING (to_scope = {_VISIBLE} OR from_scope = {_VISIBLE});
"""

# security_invoker: a view runs with the reader's rights, so the policies above apply through it.
_VIEW_SQL = """
CREATE VIEW analytics_principal WITH (security_invoker = true) AS
    SELECT substrate_principal() AS principal, substrate_visible_scopes() AS visible_scopes;

CREATE VIEW analytics_items_by_scope_kind WITH (security_invoker = true) AS
    SELECT scope, kind, count(*) AS items, max(seq) AS last_seq FROM items GROUP BY scope, kind;

CREATE VIEW analytics_events_per_day WITH (security_invoker = true) AS
    SELECT (recorded_at AT TIME ZONE 'UTC')::date AS day, type, count(*) AS events,
           count(DISTINCT principal) AS principals
    FROM events GROUP BY 1, 2;

CREATE VIEW analytics_share_history WITH (security_invoker = true) AS
    SELECT h.seq, h.recorded_at, h.item_id, h.action, h.by, h.from_scope, h.to_scope, h.version,
           h.revision, h.entry->>'merged_into' AS merged_into, h.entry->'parents' AS parents
    FROM item_history h;

CREATE VIEW analytics_pending_proposals WITH (security_invoker = true) AS
    SELECT p.item_id, i.kind, left(i.text, 120) AS preview, p.from_scope, p.to_scope,
           p.by AS proposed_by, p.seq, p.recorded_at AS proposed_at
    FROM proposals p JOIN items i ON i.id = p.item_id
    WHERE p.status = 'pending'
      AND NOT EXISTS (SELECT 1 FROM proposals q WHERE q.item_id = p.item_id AND q.seq > p.seq);

CREATE VIEW analytics_access WITH (security_invoker = true) AS
    SELECT principal, scope, can_read, can_write, seq FROM grants;

CREATE VIEW analytics_approvers WITH (security_invoker = true) AS
    SELECT scope, who, min(seq) AS since_seq, bool_or(bootstrap) AS bootstrapped
    FROM approvers GROUP BY scope, who;
"""

# Roles are cluster-wide: create the reader once, tolerating a concurrent creator or a role without
# CREATEROLE (then RLS is still enabled, and a DBA can create the role and rerun the grants).
_ROLE_AND_GRANTS = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN
        BEGIN
            CREATE ROLE {READER} NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'cannot create role {READER}; create it and grant SELECT on the analytics views';
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN
        EXECUTE 'GRANT USAGE ON SCHEMA public TO {READER}';
        EXECUTE 'GRANT SELECT ON {", ".join(_READER_TABLES)}, {", ".join(_VIEWS)} TO {READER}';
    END IF;
END $$;
"""


def upgrade() -> None:
    op.execute(_TABLES)
    op.execute(_FUNCTIONS)
    for table in _READER_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(_POLICIES)
    op.execute(_VIEW_SQL)
    op.execute(_ROLE_AND_GRANTS)


def downgrade() -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN
                EXECUTE 'REVOKE ALL ON {", ".join(_READER_TABLES)}, {", ".join(_VIEWS)} FROM {READER}';
            END IF;
        END $$;
        """
    )
    op.execute("DROP VIEW " + ", ".join(_VIEWS))
    for policy, table in (
        ("reader_events", "events"),
        ("reader_items", "items"),
        ("reader_revisions", "revisions"),
        ("reader_item_history", "item_history"),
        ("reader_grants", "grants"),
        ("reader_approvers", "approvers"),
        ("reader_proposals", "proposals"),
    ):
        op.execute(f"DROP POLICY {policy} ON {table}")
    for table in ("events", "items", "revisions"):
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute("DROP FUNCTION substrate_visible_scopes(); DROP FUNCTION substrate_principal();")
    op.execute("DROP TABLE proposals, approvers, item_history, grants")
    # The role is cluster-wide and may serve other databases: it is left in place.
