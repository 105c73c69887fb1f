"""search() against an independent exhaustive reference of the scoring its module docstring states.

Every returned score is the documented score of that item; small domains (every item a candidate) return exactly
the reference top k; truncated candidate lists (tiny knobs) still return exact scores in order; and repeated
searches on one connection (prepared statements, generic plans) return what the first one did.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from projections.search_index import ALL_DOMAIN, BM25_B, BM25_K1
from service.domain.items import SubstrateItem
from service.search import ranking as embedding
from service.substrate import Substrate

VOCAB = (
    "cell protein gene tumor immune virus insulin glucose brain neuron heart muscle blood cancer therapy drug "
    "mouse human patient risk dose trial receptor signal growth factor stem tissue liver kidney"
).split()
TOL = 1e-7  # cosines are float4 arithmetic (pgvector); the lexical part agrees to ~1e-15


def _corpus(seed: int, n: int, scopes: tuple[str, ...] = ("a",)) -> list[SubstrateItem]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        words = rng.choices(VOCAB[: 8 + i % 23], k=rng.randint(1, 12))
        scope = scopes[i % len(scopes)]
        if i % 7 == 3:  # structured items rank lexically over payload and tags
            items.append(
                SubstrateItem(
                    kind="record",
                    payload={"note": " ".join(words)},
                    tags=words[:2],
                    scope=scope,
                    id=f"r{i}",
                    created_at=1.0,
                )
            )
        else:
            items.append(SubstrateItem(kind="text", text=" ".join(words), scope=scope, id=f"t{i}", created_at=1.0))
    return items


def _filled(store: Substrate, seed: int, n: int, scopes: tuple[str, ...] = ("a",)) -> None:
    """The corpus indexed and fitted by the upkeep, then a tail the index has not seen: items changed (one of them
    in metadata only), removed and added after it, so every search scores both kinds of candidates."""
    items = _corpus(seed, n, scopes)
    store.put_many(items)
    store.reindex()
    rng = random.Random(seed)
    text_items = [it for it in items if it.kind == "text"]
    for it in rng.sample(text_items, 2):
        store.update(it.id, text=" ".join(rng.choices(VOCAB, k=rng.randint(2, 9))))
    store.update(text_items[0].id, provenance={"checked": True})
    store.remove(text_items[1].id)
    store.put_many(_corpus(seed + 1000, 3, scopes))


def reference(store: Substrate, query: str, k: int, *, kind: str | None, scope: str | None) -> list[tuple[str, float]]:
    """Every live item of the domain scored by the module docstring's formula (no index, no candidate lists): the
    items tokenized here from the items table, their vectors those of their live docs; the top k."""
    domain = ALL_DOMAIN if scope is None else scope
    in_domain = "TRUE" if scope is None else "i.scope = :scope"
    with store.engine.connect() as c:
        rows = c.execute(
            text(
                f"SELECT i.id, i.kind, l.lexeme, cardinality(l.positions) FROM items i "
                f"LEFT JOIN LATERAL unnest(to_tsvector('english', search_surface(i.doc))) l ON true WHERE {in_domain}"
            ),
            {"scope": scope},
        ).all()
        qrows = c.execute(
            text("SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', :q))"), {"q": query}
        ).all()
        docs: dict[str, dict[str, int]] = {}
        kinds: dict[str, str] = {}
        for item_id, item_kind, term, tf in rows:
            kinds[item_id] = item_kind
            docs.setdefault(item_id, {})
            if term is not None:
                docs[item_id][term] = tf
        n = len(docs)
        avgdl = max(sum(sum(d.values()) for d in docs.values()) / max(n, 1), 1.0)
        df: dict[str, int] = {}
        for d in docs.values():
            for t in d:
                df[t] = df.get(t, 0) + 1
        qtf = dict(qrows)
        n_idf = max(n, embedding.IDF_MIN_DOCS)  # the domain counts as at least IDF_MIN_DOCS items for idf
        idf = {t: math.log(1 + (n_idf - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in qtf}
        qw = sorted(qtf, key=lambda t: (df.get(t, 0) == 0, -idf[t], t))[: embedding.MAX_TERMS]
        qdl = sum(qtf.values())

        def bm25(tf: int, dl: float) -> float:
            return tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))

        z = sum(idf[t] * bm25(qtf[t], qdl) for t in qw)
        # The cosine in the domain's embedding (pgvector's own operator), for vectors of the item's live doc.
        cos = dict(
            c.execute(
                text(
                    "WITH qv AS (SELECT sum(e.vec) AS v FROM embedders m JOIN embedder_terms e USING (domain_id) "
                    "            WHERE m.domain = :domain AND m.dim > 0 AND e.term = ANY(:terms)) "
                    "SELECT v.item_id, 1 - (v.embedding <=> qv.v) FROM qv, embedders m "
                    "JOIN item_vectors v USING (domain_id) JOIN search_docs d ON d.item_id = v.item_id "
                    "AND d.doc = v.item_seq AND d.to_seq IS NULL WHERE m.domain = :domain AND qv.v IS NOT NULL"
                ),
                {"domain": domain, "terms": qw},
            ).all()
        )
    w, floor = embedding.DENSE_WEIGHT, embedding.MIN_COS
    scored = []
    for item_id, terms in docs.items():
        if kind is not None and kinds[item_id] != kind:
            continue
        dl = sum(terms.values())
        lex = min(1.0, sum(idf[t] * bm25(terms[t], dl) for t in qw if t in terms) / z) if z else 0.0
        s = lex
        if item_id in cos:
            s = (1 - w) * lex + w * max(0.0, (cos[item_id] - floor) / (1 - floor))
        if s > 0:
            scored.append((item_id, s))
    scored.sort(key=lambda r: (-r[1], r[0]))
    return scored[:k]


def _matched(got: list[tuple[SubstrateItem, float]], ref_all: dict[str, float]) -> list[tuple[SubstrateItem, float]]:
    """The hits above zero; the rest tops the list up to k with items the reference scores 0, at exactly 0.0."""
    matched = [(it, s) for it, s in got if s > 0]
    assert got[: len(matched)] == matched
    assert all(s == 0.0 and it.id not in ref_all for it, s in got[len(matched) :]), (got, ref_all)
    return matched


def assert_exact_and_ordered(got: list[tuple[SubstrateItem, float]], ref_all: dict[str, float]) -> None:
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True)
    for item, s in _matched(got, ref_all):
        assert math.isclose(s, ref_all[item.id], rel_tol=TOL, abs_tol=TOL), (item.id, s, ref_all[item.id])


def assert_is_top_k(got: list[tuple[SubstrateItem, float]], ref: list[tuple[str, float]], k: int) -> None:
    """``got`` is the reference top k, up to the order of scores equal within rounding."""
    assert len(got) <= k
    got = _matched(got, dict(ref)) if len(ref) < k else got
    assert len(got) == len(ref)
    if not ref:
        return
    kth = ref[-1][1]
    ref_all = dict(ref)
    for item, s in got:
        assert item.id in ref_all or math.isclose(s, kth, rel_tol=TOL, abs_tol=TOL), (item.id, s, ref)
    for (_item, s), (_, rs) in zip(got, ref):
        assert math.isclose(s, rs, rel_tol=TOL, abs_tol=TOL), (got, ref)


_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_QUERY = st.lists(st.sampled_from([*VOCAB, "the", "unknownword", "Cells", "tumors"]), min_size=1, max_size=8).map(
    " ".join
)


@_SETTINGS
@given(
    query=_QUERY,
    k=st.integers(1, 12),
    kind=st.sampled_from([None, "text", "record"]),
    scope=st.sampled_from([None, "a", "b"]),
)
def test_small_domains_return_exactly_the_reference_top_k(
    store: Substrate, query: str, k: int, kind: str | None, scope: str | None
) -> None:
    assert embedding.LEX_CANDIDATES >= 30 and embedding.RARE_DF >= 30
    if not len(store):
        _filled(store, 1, 28, scopes=("a", "b"))  # ~15 per scope: every matching item is a candidate
    got = store.search(query, k=k, kind=kind, scope=scope)
    assert_is_top_k(got, reference(store, query, k, kind=kind, scope=scope), k)


@_SETTINGS
@given(query=_QUERY, k=st.integers(1, 12), kind=st.sampled_from([None, "text"]), scope=st.sampled_from([None, "a"]))
def test_truncated_candidate_lists_still_score_exactly(
    store: Substrate, monkeypatch: pytest.MonkeyPatch, query: str, k: int, kind: str | None, scope: str | None
) -> None:
    # Tiny knobs: common terms read 2 postings, 3 lexical and 3 vector candidates, HNSW instead of an exact scan.
    for name, value in {"PER_TERM": 2, "RARE_DF": 3, "LEX_CANDIDATES": 3, "CANDIDATES": 3, "EXACT_MAX": 5}.items():
        monkeypatch.setattr(embedding, name, value)
    if not len(store):
        _filled(store, 2, 150)
    got = store.search(query, k=k, kind=kind, scope=scope)
    ref_all = dict(reference(store, query, 10**6, kind=kind, scope=scope))
    assert_exact_and_ordered(got, ref_all)
    assert len(got) <= k and all(kind is None or it.kind == kind for it, _ in got)


def test_larger_domains_score_exactly_and_fill_k(store: Substrate) -> None:
    _filled(store, 3, 300)
    for query in ("cell protein", "tumor immune therapy drug", "insulin glucose blood", "stem cell growth factor"):
        for k in (1, 5, 10):
            got = store.search(query, k=k, scope="a")
            ref = reference(store, query, 10**6, kind=None, scope="a")
            assert_exact_and_ordered(got, dict(ref))
            assert len(got) == min(k, len(ref))


@pytest.mark.parametrize("exact_max", [10**6, 5])
def test_repeated_searches_on_one_connection_agree(
    store: Substrate, monkeypatch: pytest.MonkeyPatch, exact_max: int
) -> None:
    # psycopg prepares a statement from its 5th execution on a connection; the plan is then generic.
    monkeypatch.setattr(embedding, "EXACT_MAX", exact_max)
    store.put_many(_corpus(5, 6, scopes=("tiny",)))  # a lexical-only domain (too small to fit an embedder)
    _filled(store, 4, 120, scopes=("a", "b"))
    cases = [
        (q, kind, scope)
        for q in ("cell protein gene", "heart muscle blood", "mouse")
        for kind in (None, "text", "record")
        for scope in (None, "a", "tiny")
    ]
    first = [[(it.id, s) for it, s in store.search(q, k=7, kind=kind, scope=scope)] for q, kind, scope in cases]
    assert any(first)
    for _ in range(8):
        again = [[(it.id, s) for it, s in store.search(q, k=7, kind=kind, scope=scope)] for q, kind, scope in cases]
        assert again == first


@pytest.mark.parametrize("exact_max", [10**6, 5])
def test_a_vector_of_an_older_version_never_counts(
    store: Substrate, monkeypatch: pytest.MonkeyPatch, exact_max: int
) -> None:
    monkeypatch.setattr(embedding, "EXACT_MAX", exact_max)
    _filled(store, 6, 60)
    query = "insulin glucose blood cell"
    top = store.search(query, k=3, scope="a")
    # As if a refit raced a write: the item's vector says it was embedded at an older version.
    with store.engine.begin() as c:
        c.execute(text("UPDATE item_vectors SET item_seq = item_seq - 1 WHERE item_id = :id"), {"id": top[0][0].id})
    got = store.search(query, k=10**3, scope="a")
    ref_all = dict(reference(store, query, 10**6, kind=None, scope="a"))
    assert_exact_and_ordered(got, ref_all)
    stale = {it.id: s for it, s in got}[top[0][0].id]
    assert not math.isclose(stale, top[0][1], rel_tol=TOL, abs_tol=TOL)  # its cosine no longer counts


def test_a_changed_statement_variant_or_a_failed_round_trip_still_answers(
    store: Substrate, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(store, 7, 60)
    query = "cancer therapy drug trial"
    first = [(it.id, s) for it, s in store.search(query, k=5, scope="a")]
    monkeypatch.setattr(embedding, "EXACT_MAX", 5)  # the domain now asks for the HNSW variant, not the one sent
    ref_all = dict(reference(store, query, 10**6, kind=None, scope="a"))
    assert_exact_and_ordered(store.search(query, k=5, scope="a"), ref_all)
    monkeypatch.setattr(embedding, "EXACT_MAX", 10**6)
    # A failing pipelined round trip falls back to one statement at a time.
    monkeypatch.setattr(embedding, "state_statement", lambda domain, ef: ("SELECT 1 / 0", {}))
    assert [(it.id, s) for it, s in store.search(query, k=5, scope="a")] == first
