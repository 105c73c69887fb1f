"""The search read models: per-domain postings, document frequencies and dirty marks, a lazy projector.

A domain is one scope, or ``ALL_DOMAIN`` (the empty string, never a scope) for everything. For every item event
this projector (1) replaces the item's postings (stemmed lexemes of its surface: text, serialized payload, tags)
and adjusts its domains' document frequencies and lengths, (2) advances ``changed_seq`` of each domain whose text
items it touched (the dirty rule of ``Substrate.put``: the new state has text, or the replaced/removed state had
text). It is lazy (off the write path): ``runner.catch_up`` applies the events since its checkpoint before any
search, reindex or digest reads these tables, so a search never sees an item's old text. A second, inline
projector (``vectors``) deletes an item's now-stale vectors in the writing transaction. The embedders themselves
are fitted lazily by ``service.search.embedders``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.projector import Projector, Statement, run_plan

__all__ = ["ALL_DOMAIN", "BM25_B", "BM25_K1", "NAME", "SURFACE_CHARS", "TS_CONFIG", "apply"]

NAME = "search"

# The all-scopes domain (scope=None). Not "*": that is a legal scope name, and must stay its own domain.
ALL_DOMAIN = ""
TS_CONFIG = "english"
# The lexical surface is cut here: to_tsvector refuses results over 1 MB, and relevance lives up front anyway.
SURFACE_CHARS = 200_000
BM25_K1 = 1.2
BM25_B = 0.5
# Reference length for the posting order ``imp`` (a proxy of BM25 saturation that needs no corpus statistic).
_IMP_LEN = 128.0

_OLD = text("SELECT item_id, scope, has_text FROM search_docs WHERE item_id = ANY(CAST(:ids AS text[]))")

_DROP_TERMS = text(
    "WITH gone AS (DELETE FROM item_terms WHERE item_id = ANY(CAST(:ids AS text[])) RETURNING scope, term) "
    "INSERT INTO term_df (domain, term, df) "
    "SELECT x.domain, gone.term, -count(*) FROM gone, LATERAL (VALUES (gone.scope), ('')) x(domain) "
    "GROUP BY 1, 2 ON CONFLICT (domain, term) DO UPDATE SET df = term_df.df + EXCLUDED.df"
)
_DROP_DOCS = text(
    "WITH gone AS (DELETE FROM search_docs WHERE item_id = ANY(CAST(:ids AS text[])) RETURNING scope, dl, has_text) "
    "INSERT INTO search_domains (domain, n_docs, total_len, n_text, changed_seq) "
    "SELECT x.domain, -count(*), -sum(gone.dl), -count(*) FILTER (WHERE gone.has_text), 0 "
    "FROM gone, LATERAL (VALUES (gone.scope), ('')) x(domain) GROUP BY 1 "
    "ON CONFLICT (domain) DO UPDATE SET n_docs = search_domains.n_docs + EXCLUDED.n_docs, "
    "total_len = search_domains.total_len + EXCLUDED.total_len, n_text = search_domains.n_text + EXCLUDED.n_text"
)
# The CTEs that index the surfaces of the CTE ``s`` (item_id, scope, kind, seq, has_text, surface): ``v`` their
# lexemes and lengths, ``docs`` and ``terms`` the inserted rows (what the statistics are counted from), ``st``
# the postings per scope and term. The OFFSET 0 fences keep the planner from inlining ``s`` and ``x``, which
# would compute each surface twice and its tsvector twice (once per reference).
_POSTINGS = (
    "v AS MATERIALIZED (SELECT x.*, (SELECT coalesce(sum(cardinality(l.positions)), 0) FROM unnest(x.tsv) l)::int "
    "  AS dl FROM (SELECT s.*, to_tsvector(CAST(:cfg AS regconfig), s.surface) AS tsv "
    "  FROM (SELECT * FROM s OFFSET 0) s OFFSET 0) x), "
    "docs AS (INSERT INTO search_docs (item_id, scope, kind, seq, has_text, dl, thash) "
    "  SELECT item_id, scope, kind, seq, has_text, dl, md5(surface) FROM v RETURNING scope, dl, has_text), "
    "terms AS (INSERT INTO item_terms (item_id, term, scope, kind, tf, dl, imp) "
    "  SELECT v.item_id, l.lexeme, v.scope, v.kind, cardinality(l.positions), v.dl, "
    "  cardinality(l.positions) / (cardinality(l.positions) + :k1 * (1 - :b + :b * v.dl / :ref)) "
    "  FROM v, unnest(v.tsv) l RETURNING scope, term), "
    "st AS MATERIALIZED (SELECT scope, term, count(*) AS n FROM terms GROUP BY 1, 2), "
)
# Document frequencies: per scope, and for the all-scopes domain the sum over scopes (counted once per term and
# scope rather than once per posting and domain).
_DF_ROWS = "SELECT scope, term, n FROM st UNION ALL SELECT '', term, sum(n) FROM st GROUP BY term"
_POSTING_PARAMS = {"cap": SURFACE_CHARS, "cfg": TS_CONFIG, "k1": BM25_K1, "b": BM25_B, "ref": _IMP_LEN}
# The payload is serialized by jsonb (sorted keys, canonical numbers), so live appends and replays agree.
_ADD = text(
    "WITH d AS (SELECT * FROM jsonb_to_recordset(CAST(:rows AS jsonb)) "
    "  AS d(item_id text, scope text, kind text, seq bigint, txt text, payload jsonb, tags text)), "
    "s AS (SELECT item_id, scope, kind, seq, txt <> '' AS has_text, left(concat_ws(' ', txt, "
    "  CASE WHEN payload = '{}'::jsonb THEN NULL ELSE payload::text END, tags), :cap) AS surface FROM d), "
    + _POSTINGS
    + "df AS (INSERT INTO term_df (domain, term, df) "
    + _DF_ROWS
    + " ON CONFLICT (domain, term) DO UPDATE SET df = term_df.df + EXCLUDED.df) "
    "INSERT INTO search_domains (domain, n_docs, total_len, n_text, changed_seq) "
    "SELECT x.domain, count(*), sum(docs.dl), count(*) FILTER (WHERE docs.has_text), 0 "
    "FROM docs, LATERAL (VALUES (docs.scope), ('')) x(domain) GROUP BY 1 "
    "ON CONFLICT (domain) DO UPDATE SET n_docs = search_domains.n_docs + EXCLUDED.n_docs, "
    "total_len = search_domains.total_len + EXCLUDED.total_len, n_text = search_domains.n_text + EXCLUDED.n_text"
)
_SWEEP = text("DELETE FROM term_df WHERE df <= 0")
_MARK = text(
    "INSERT INTO search_domains (domain, n_docs, total_len, n_text, changed_seq) "
    "SELECT d, 0, 0, 0, s FROM unnest(CAST(:domains AS text[]), CAST(:seqs AS bigint[])) AS x(d, s) "
    "ON CONFLICT (domain) DO UPDATE SET changed_seq = greatest(search_domains.changed_seq, EXCLUDED.changed_seq)"
)
# Vectors carry the item seq they were embedded at. Only strictly older rows go: a replay (rebuild, or verify's
# shadow schema, where this table resolves to the live one) re-applies events no newer than the live rows, so
# it never deletes a current vector, while a catch-up over newer events always supersedes what was there.
_DROP_VECTORS_SQL = (
    "DELETE FROM item_vectors v USING unnest(CAST(:ids AS text[]), CAST(:seqs AS bigint[])) AS x(item_id, seq) "
    "WHERE v.item_id = x.item_id AND v.item_seq < x.seq"
)


# The search read models built from nothing in one statement (``build``): the postings and statistics of every
# live item, read from the items read model at the same log position, plus each domain's last change from the log.
# The same rows as folding every event with ``apply`` (search_domains keeps a domain while it has documents or a
# change mark, in both), at a fraction of the cost: each item is indexed once, frequencies are counted once.
_BUILD = text(
    # The inline read models' position, read by this statement's own snapshot: the items it indexes stand there.
    "WITH pos AS (SELECT coalesce(max(seq) FILTER (WHERE name = ANY(CAST(:inline AS text[]))), 0) AS target "
    "  FROM checkpoints), "
    # (items.scope, kind and text are the doc's own fields, kept as columns: no jsonb lookup for them)
    "s AS (SELECT i.id AS item_id, i.scope, i.kind, i.seq, "
    "  i.text <> '' AS has_text, left(concat_ws(' ', i.text, "
    "  CASE WHEN coalesce(i.doc->'payload', 'null') IN ('{}', 'null') THEN NULL ELSE (i.doc->'payload')::text END, "
    "  coalesce((SELECT string_agg(t.v, ' ' ORDER BY t.n) FROM jsonb_array_elements_text(CASE WHEN "
    "  jsonb_typeof(i.doc->'tags') = 'array' THEN i.doc->'tags' ELSE '[]' END) WITH ORDINALITY AS t(v, n)), '')), "
    "  :cap) AS surface FROM items i), "
    + _POSTINGS
    + "df AS (INSERT INTO term_df (domain, term, df) "
    + _DF_ROWS
    + "), "
    # Every item effect of the log (a state, or a removal: ord orders two effects of one event), and the state
    # it replaced: a change touches the old state's domain if it had text, the new one's if it has text.
    "eff AS (SELECT e.seq, x.ord, x.item_id, x.scope, x.has_text FROM public.events e CROSS JOIN LATERAL ("
    "  SELECT 0 AS ord, e.data->'item'->>'id' AS item_id, e.data->'item'->>'scope' AS scope, "
    "  (e.data->'item'->>'text') <> '' AS has_text WHERE jsonb_typeof(e.data->'item') = 'object' "
    "  UNION ALL SELECT 1, e.data->>'removed', NULL, false "
    "  WHERE e.type = 'ItemsMerged' AND coalesce(e.data->>'removed', '') <> '' "
    "  UNION ALL SELECT 2, e.data->>'id', NULL, false WHERE e.type = 'ItemRemoved') x "
    "  WHERE e.seq <= (SELECT target FROM pos) AND e.type = ANY(CAST(:types AS text[]))), "
    "w AS (SELECT seq, scope, has_text, lag(scope) OVER p AS pscope, coalesce(lag(has_text) OVER p, false) AS ptext "
    "  FROM eff WINDOW p AS (PARTITION BY item_id ORDER BY seq, ord)), "
    "marks AS (SELECT d AS domain, max(seq) AS changed_seq FROM ("
    "  SELECT pscope AS d, seq FROM w WHERE ptext UNION ALL SELECT scope, seq FROM w WHERE has_text "
    "  UNION ALL SELECT '', seq FROM w WHERE ptext OR has_text) t GROUP BY 1), "
    "stats AS (SELECT x.domain, count(*) AS n_docs, sum(docs.dl) AS total_len, "
    "  count(*) FILTER (WHERE docs.has_text) AS n_text "
    "  FROM docs, LATERAL (VALUES (docs.scope), ('')) x(domain) GROUP BY 1), "
    "dom AS (INSERT INTO search_domains (domain, n_docs, total_len, n_text, changed_seq) "
    "  SELECT domain, coalesce(n_docs, 0), coalesce(total_len, 0), coalesce(n_text, 0), coalesce(changed_seq, 0) "
    "  FROM stats FULL JOIN marks USING (domain)) "
    "SELECT target FROM pos"
)
# A domain whose documents are all gone and whose text never changed holds nothing: the fold drops it, as a
# build never makes it (so the rows do not depend on how the log was cut into batches).
_SWEEP_DOMAINS = text("DELETE FROM search_domains WHERE n_docs = 0 AND changed_seq = 0")


def build(conn: Connection, inline: list[str]) -> int:
    """Fill the (empty) search read models from the items read model; the log position they now describe (that of
    the ``inline`` projectors' checkpoints, in the same snapshot as the items)."""
    return int(
        conn.execute(
            _BUILD,
            {
                **_POSTING_PARAMS,
                "inline": inline,
                "types": sorted(ITEM_EVENTS | {"ItemRemoved"}),
            },
        ).scalar_one()
    )


def _effects(e: Any) -> list[tuple[str, dict[str, Any] | None]]:
    out: list[tuple[str, dict[str, Any] | None]] = []
    item = e.data.get("item")
    if item is not None:
        out.append((item["id"], item))
    if e.type == "ItemsMerged" and e.data.get("removed"):
        out.append((e.data["removed"], None))
    if e.type == "ItemRemoved":
        out.append((e.data["id"], None))
    return out


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Replace the touched items' postings and statistics; mark dirty domains."""
    effects = [(e.seq, eff) for e in events for eff in _effects(e)]
    if not effects:
        return
    ids = list(dict.fromkeys(i for _, (i, _) in effects))
    old = {r[0]: (r[1], bool(r[2])) for r in conn.execute(_OLD, {"ids": ids})}
    state: dict[str, tuple[str, bool] | None] = dict(old)
    final: dict[str, tuple[dict[str, Any] | None, int]] = {}
    marks: dict[str, int] = {}
    for seq, (item_id, item) in effects:
        prev = state.get(item_id)
        touched = [prev[0]] if prev is not None and prev[1] else []
        if item is not None and item["text"]:
            touched.append(item["scope"])
        for domain in touched + ([ALL_DOMAIN] if touched else []):
            marks[domain] = max(marks.get(domain, 0), seq)
        state[item_id] = (item["scope"], bool(item["text"])) if item is not None else None
        final[item_id] = (item, seq)
    existed = [i for i in ids if i in old]
    if existed:
        conn.execute(_DROP_TERMS, {"ids": existed})
        conn.execute(_DROP_DOCS, {"ids": existed})
    live = [(i, it, seq) for i, (it, seq) in final.items() if it is not None]
    if live:
        conn.execute(
            _ADD,
            {
                # One JSON document (serialized in C) instead of seven text arrays quoted element by element.
                "rows": dumps(
                    [
                        {
                            "item_id": i,
                            "scope": it["scope"],
                            "kind": it["kind"],
                            "seq": seq,
                            "txt": it["text"],
                            "payload": it.get("payload") or {},
                            "tags": " ".join(it.get("tags") or []),
                        }
                        for i, it, seq in live
                    ]
                ),
                **_POSTING_PARAMS,
            },
        )
    if existed:
        conn.execute(_SWEEP)
    if marks:
        conn.execute(_MARK, {"domains": list(marks), "seqs": list(marks.values())})
    if existed:
        conn.execute(_SWEEP_DOMAINS)


SEARCH = Projector(
    name=NAME,
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("search_docs", "item_terms", "term_df", "search_domains"),
    apply=apply,
    keys={
        "search_docs": "item_id",
        "item_terms": "item_id, term",
        "term_df": "domain, term",
        "search_domains": "domain",
    },
    lazy=True,
    build=build,
)


def drop_stale_vectors(conn: Connection, events: Sequence[Any]) -> None:
    """Delete the vectors of every item these events change or remove (embedded at an older seq)."""
    run_plan(conn, plan_stale_vectors(events))


def plan_stale_vectors(events: Sequence[Any]) -> list[Statement]:
    """The statement of ``drop_stale_vectors`` (none when every event creates its item)."""
    latest: dict[str, int] = {}
    for e in events:
        for item_id, _ in _effects(e):
            # A stream's first event creates its item: there is no vector yet (keeps bulk puts cheap).
            if not (e.version == 1 and item_id == e.stream):
                latest[item_id] = e.seq
    return [(_DROP_VECTORS_SQL, {"ids": list(latest), "seqs": list(latest.values())})] if latest else []


# Inline: a changed or removed item's vector is gone in the same transaction as the event (owns no table of its
# own; item_vectors is a cache table).
VECTORS = Projector(
    name="vectors",
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=(),
    apply=drop_stale_vectors,
    keys={},
    plan=plan_stale_vectors,
)
# Fitted models and their vectors are derived lazily at search time (never replayed from the log).
CACHE_TABLES = ("embedders", "embedder_terms", "item_vectors")
