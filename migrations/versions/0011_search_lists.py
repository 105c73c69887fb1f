"""Search read models a search can read without writing, and as of any log position.

Replaces the per-posting rows (``item_terms``, ``term_df`` and the per-item ``search_docs``) with:
- ``search_docs``: one row per *doc*, a run of consecutive states of one item with the same search surface, with
  the log interval ``[doc, to_seq)`` it was live in and its terms and counts (exact rescoring, embedder fits);
- ``search_lists``: the postings of a batch of docs as arrays, one row per (term, scope, kind) per segment;
- ``search_deaths``: per term, the positions at which docs holding it stopped being live;
- ``search_domain_log``: a domain's document count and total length after every event that changed them.
``search_domains`` stays (counts and dirty marks at the search checkpoint).

A store written before this revision gets the new tables empty and its search checkpoint reset: the upkeep (or
the first ``substrate reindex``) builds them from the log. Its fitted embedders are dropped too: their vectors
were keyed by item version, the new ones by doc.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        DROP TABLE item_terms, term_df, search_docs;
        TRUNCATE search_domains;
        DELETE FROM checkpoints WHERE name = 'search';
        TRUNCATE embedders, embedder_terms;
        DO $$ DECLARE p text; BEGIN
            FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                     WHERE i.inhparent = 'item_vectors'::regclass LOOP
                EXECUTE format('DROP TABLE %I', p);
            END LOOP;
        END $$;

        -- The text an item is found by: its text, its payload (jsonb's canonical text) and its tags. Shared by the
        -- projector and by searches (which tokenize the items written since the checkpoint themselves).
        CREATE FUNCTION search_surface(item jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT left(concat_ws(' ', item->>'text',
                CASE WHEN coalesce(item->'payload', '{}') IN ('{}'::jsonb, 'null'::jsonb) THEN NULL
                     ELSE (item->'payload')::text END,
                (SELECT string_agg(t.v, ' ' ORDER BY t.n) FROM jsonb_array_elements_text(
                    CASE WHEN jsonb_typeof(item->'tags') = 'array' THEN item->'tags' ELSE '[]' END)
                    WITH ORDINALITY AS t(v, n))), 200000)
        $$;

        CREATE TABLE search_docs (
            doc      bigint PRIMARY KEY,  -- the seq of the run's first state
            item_id  text NOT NULL,
            scope    text NOT NULL,
            kind     text NOT NULL,
            has_text boolean NOT NULL,
            dl       integer NOT NULL,    -- tokens (the tsvector's positions)
            thash    uuid NOT NULL,       -- md5 of scope, kind, has_text and surface: what a run shares
            to_seq   bigint,              -- the event that changed or removed it; NULL while live
            terms    text[] NOT NULL,     -- its lexemes, and their counts alongside
            tfs      smallint[] NOT NULL
        );
        CREATE INDEX search_docs_live_item ON search_docs (item_id) WHERE to_seq IS NULL;
        -- An embedder fit reads a domain's live text docs; a fold-in only those born since the fit.
        CREATE INDEX search_docs_live_text ON search_docs (scope, doc) WHERE to_seq IS NULL AND has_text;

        -- Postings: per segment (a batch of docs indexed together; merged as they accumulate), per term, scope and
        -- kind, the docs holding the term (ascending) with their impact (BM25 term saturation at a fixed reference
        -- length), plus the strongest HEAD of them when there are more (a common term's candidates). hist rows hold
        -- only docs that were no longer live when their segment was last merged: live searches skip them.
        CREATE SEQUENCE search_segment_ids;
        CREATE TABLE search_lists (
            term      text NOT NULL,
            scope     text NOT NULL,
            kind      text NOT NULL,
            seg       bigint NOT NULL,
            hist      boolean NOT NULL,
            n         integer NOT NULL,
            lo        bigint NOT NULL,    -- docs[1]: a search as of an older position skips younger rows
            docs      bigint[] NOT NULL,
            imps      real[] NOT NULL,
            head_docs bigint[],
            head_imps real[],
            PRIMARY KEY (term, scope, kind, seg, hist)
        );
        -- Per segment, term, scope and kind: the positions (ascending) at which docs holding the term ended.
        CREATE TABLE search_deaths (
            term  text NOT NULL,
            scope text NOT NULL,
            kind  text NOT NULL,
            seg   bigint NOT NULL,
            n     integer NOT NULL,
            tos   bigint[] NOT NULL,
            PRIMARY KEY (term, scope, kind, seg)
        );
        -- Each segment's size (list and death entries: what a merge rewrites) and the docs its lists hold.
        CREATE TABLE search_segments (
            seg      bigint PRIMARY KEY,
            lo       bigint,
            hi       bigint,
            postings bigint NOT NULL
        );
        -- A domain's counts after each event that changed them (a scope, or '' for every scope).
        CREATE TABLE search_domain_log (
            domain    text NOT NULL,
            seq       bigint NOT NULL,
            n_docs    bigint NOT NULL,
            total_len bigint NOT NULL,
            PRIMARY KEY (domain, seq)
        );
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TABLE search_docs, search_lists, search_deaths, search_segments, search_domain_log;
        DROP SEQUENCE search_segment_ids;
        DROP FUNCTION search_surface(jsonb);
        TRUNCATE search_domains, embedders, embedder_terms;
        DELETE FROM checkpoints WHERE name = 'search';
        CREATE TABLE search_docs (
            item_id text PRIMARY KEY, scope text NOT NULL, kind text NOT NULL, seq bigint NOT NULL,
            has_text boolean NOT NULL, dl integer NOT NULL, thash text NOT NULL
        );
        CREATE INDEX search_docs_scope_seq ON search_docs (scope, seq);
        CREATE INDEX search_docs_seq ON search_docs (seq);
        CREATE TABLE item_terms (
            item_id text NOT NULL, term text NOT NULL, scope text NOT NULL, kind text NOT NULL,
            tf integer NOT NULL, dl integer NOT NULL, imp real NOT NULL,
            PRIMARY KEY (item_id, term) INCLUDE (tf, dl)
        );
        CREATE INDEX item_terms_scope_term ON item_terms (scope, term, imp DESC) INCLUDE (item_id, kind, tf, dl);
        CREATE TABLE term_df (domain text NOT NULL, term text NOT NULL, df integer NOT NULL, PRIMARY KEY (domain, term));
        CREATE INDEX term_df_spent ON term_df (domain, term) WHERE df <= 0;
        """
    )
