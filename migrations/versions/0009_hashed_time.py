"""Event times go under the content address: ``events.hash_version`` says how each event was addressed.

Events already in the log keep their addresses (version 1: the time is outside the hash); every event appended
after this revision is version 2, whose address covers its ``recorded_at``. ``substrate verify`` checks each
event by its own version, so a store written before this revision still verifies, and a version-2 event whose
time is moved no longer matches its address. The chain head also records its event's time, so that the next
append (which picks its time before writing, to hash it) never goes back in time.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A constant default fills the existing rows without rewriting them (no UPDATE: the log's triggers stay quiet).
    # IF NOT EXISTS: a downgrade keeps the column (see below), and the upgrade after it finds it there.
    op.execute("ALTER TABLE events ADD COLUMN IF NOT EXISTS hash_version smallint NOT NULL DEFAULT 1")
    op.execute("ALTER TABLE events DROP CONSTRAINT IF EXISTS events_hash_version")
    op.execute("ALTER TABLE events ADD CONSTRAINT events_hash_version CHECK (hash_version IN (1, 2))")
    op.execute("ALTER TABLE log_head ADD COLUMN IF NOT EXISTS recorded_at timestamptz")
    op.execute(
        "UPDATE log_head h SET recorded_at = (SELECT e.recorded_at FROM events e WHERE e.seq = h.seq) WHERE h.id = 1"
    )


def downgrade() -> None:
    # events.hash_version stays: without it the events written since could not be verified any more, and the older
    # code's inserts take its default, 1, which is how that code addresses them.
    op.execute("ALTER TABLE log_head DROP COLUMN recorded_at")
