"""The event log, its chain head and immutability triggers; items, revisions and checkpoints.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE events (
            -- seq is assigned by the appender while it holds the log_head row lock, so it is gapless
            -- and equal to commit order (an identity column can commit out of order and leave gaps).
            seq         bigint PRIMARY KEY,
            stream      text NOT NULL,
            version     integer NOT NULL CHECK (version >= 1),
            type        text NOT NULL,
            data        jsonb NOT NULL,
            principal   text NOT NULL,
            scope       text,
            recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            event_id    text NOT NULL UNIQUE,
            prev        text,
            -- The per-aggregate concurrency check: a stale writer collides here and writes nothing.
            CONSTRAINT events_stream_version UNIQUE (stream, version)
        );
        CREATE INDEX events_type_seq ON events (type, seq);
        CREATE INDEX events_scope_seq ON events (scope, seq);
        CREATE INDEX events_recorded_at ON events (recorded_at);

        -- One row: the chain head. Appenders lock it FOR UPDATE, which serializes appends.
        CREATE TABLE log_head (
            id       integer PRIMARY KEY CHECK (id = 1),
            seq      bigint NOT NULL,
            event_id text
        );
        INSERT INTO log_head VALUES (1, 0, NULL);

        CREATE FUNCTION events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'the event log is append-only: % on events is refused', TG_OP
                USING ERRCODE = 'insufficient_privilege';
        END $$;
        CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
            FOR EACH ROW EXECUTE FUNCTION events_immutable();
        CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
            FOR EACH STATEMENT EXECUTE FUNCTION events_immutable();

        CREATE TABLE items (
            id         text PRIMARY KEY,
            kind       text NOT NULL,
            scope      text NOT NULL,
            text       text NOT NULL,
            doc        jsonb NOT NULL,
            digest     text NOT NULL,
            version    integer NOT NULL,
            pos        bigint NOT NULL,
            seq        bigint NOT NULL,
            created_at double precision NOT NULL
        );
        CREATE INDEX items_scope_kind_pos ON items (scope, kind, pos);
        CREATE INDEX items_kind_pos ON items (kind, pos);
        CREATE INDEX items_pos ON items (pos);

        CREATE TABLE revisions (
            digest  text PRIMARY KEY,
            item_id text NOT NULL,
            doc     jsonb NOT NULL,
            seq     bigint NOT NULL
        );
        CREATE INDEX revisions_item ON revisions (item_id, seq);

        CREATE TABLE checkpoints (
            name text PRIMARY KEY,
            seq  bigint NOT NULL
        );
        """
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE checkpoints, revisions, items, log_head; "
        "DROP TRIGGER events_no_truncate ON events; DROP TRIGGER events_no_update ON events; "
        "DROP TABLE events; DROP FUNCTION events_immutable();"
    )
