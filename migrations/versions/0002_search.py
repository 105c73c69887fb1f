"""Search read models: per-domain lexical postings and statistics, fitted embedders, pgvector rows.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE EXTENSION IF NOT EXISTS vector;

        -- Deterministic read models (projector "search"): pure functions of the log, digested by verify.
        -- One row per live item: its lexical length and whether it is a text item (embedding corpus).
        CREATE TABLE search_docs (
            item_id  text PRIMARY KEY,
            scope    text NOT NULL,
            kind     text NOT NULL,
            seq      bigint NOT NULL,
            has_text boolean NOT NULL,
            dl       integer NOT NULL,
            thash    text NOT NULL
        );
        CREATE INDEX search_docs_scope_seq ON search_docs (scope, seq);  -- a fold-in reads what changed since
        CREATE INDEX search_docs_seq ON search_docs (seq);

        -- Postings: stemmed lexemes (to_tsvector 'english') of each item's surface with their counts.
        -- imp orders a term's postings by BM25 term-frequency saturation, so a query can read only the
        -- strongest postings of a very common term; the covering index makes that an index-only scan (the
        -- all-scopes domain reads it once per scope rather than paying for a second index on every write).
        CREATE TABLE item_terms (
            item_id text NOT NULL,
            term    text NOT NULL,
            scope   text NOT NULL,
            kind    text NOT NULL,
            tf      integer NOT NULL,
            dl      integer NOT NULL,
            imp     real NOT NULL,
            -- Covering: rescoring a candidate reads its postings of the query terms without the heap.
            PRIMARY KEY (item_id, term) INCLUDE (tf, dl)
        );
        CREATE INDEX item_terms_scope_term ON item_terms (scope, term, imp DESC) INCLUDE (item_id, kind, tf, dl);

        -- Document frequency per domain (a scope, or '' -- never a valid scope -- for everything): lexical
        -- statistics never pool scopes.
        CREATE TABLE term_df (
            domain text NOT NULL,
            term   text NOT NULL,
            df     integer NOT NULL,
            PRIMARY KEY (domain, term)
        );
        CREATE INDEX term_df_spent ON term_df (domain, term) WHERE df <= 0;

        -- Per-domain counts for BM25 and the dirty rule: changed_seq is the last event that changed the
        -- domain's text items; an embedder fitted at a different changed_seq is stale.
        CREATE TABLE search_domains (
            domain      text PRIMARY KEY,
            n_docs      bigint NOT NULL,
            total_len   bigint NOT NULL,
            n_text      bigint NOT NULL,
            changed_seq bigint NOT NULL
        );

        -- Lazily fitted caches (not projector tables; validated against search_domains and items.seq).
        CREATE SEQUENCE embedder_ids;
        CREATE TABLE embedders (
            domain      text PRIMARY KEY,
            domain_id   integer NOT NULL UNIQUE,
            version     text NOT NULL,
            dim         integer NOT NULL,
            n_fit       integer NOT NULL,
            n_folded    integer NOT NULL,
            n_vectors   integer NOT NULL,
            vocab       integer NOT NULL,
            fitted_seq  bigint NOT NULL,
            fitted_at   timestamptz NOT NULL,
            params      jsonb NOT NULL
        );
        -- The fitted model itself: one row per vocabulary term, idf * its SVD component column.
        -- A query embedding is the sum of its terms' rows, computed inside the search statement.
        CREATE TABLE embedder_terms (
            domain_id integer NOT NULL,
            term      text NOT NULL,
            vec       vector(256) NOT NULL,
            PRIMARY KEY (domain_id, term)
        );
        -- One list partition per domain (created by the first full fit; the HNSW index below is the template
        -- every partition gets). Why not one global HNSW index with WHERE domain = X: measured here it loses
        -- recall to the filter (0.37 at ef_search 40 without iterative scans), and a refit would have to insert
        -- row by row into a live graph (270-600 rows/s); partial per-domain indexes cannot be declared in a
        -- migration for scopes nobody knows yet. A partition gives each domain its own graph, and a full refit
        -- bulk-loads a fresh table, builds its index once, and swaps it in (service/vectors.py). Domains with
        -- at most EXACT_MAX vectors are scanned exactly instead (service/embedding.py).
        CREATE TABLE item_vectors (
            domain_id integer NOT NULL,
            item_id   text NOT NULL,
            item_seq  bigint NOT NULL,
            kind      text NOT NULL,
            embedding vector(256) NOT NULL,
            PRIMARY KEY (domain_id, item_id)
        ) PARTITION BY LIST (domain_id);
        CREATE INDEX item_vectors_item ON item_vectors (item_id);
        -- ef_construction 128 (not the default 64): measured on 100k LSA vectors, recall@10 at ef_search 40 rose
        -- from 0.86 to 0.93 (0.97 at ef_search 120) for a build of 45 s; m = 32 built twice as slowly for no gain.
        CREATE INDEX item_vectors_hnsw ON item_vectors USING hnsw (embedding vector_cosine_ops)
            WITH (m = 16, ef_construction = 128);
        """
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE item_vectors, embedder_terms, embedders, search_domains, term_df, item_terms, search_docs; "
        "DROP SEQUENCE embedder_ids;"
    )
