"""Substrate.search / reindex on real PostgreSQL: ranking, filters, validation, freshness, isolation, persistence."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from projections.runner import catch_up_engine
from projections.search_index import ALL_DOMAIN, SEARCH
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.search.embedders import MIN_FIT_DOCS, refit
from service.substrate import Substrate

CORPUS = [
    "The mitochondria produce energy for the cell through respiration",
    "Photosynthesis in plant leaves converts sunlight into chemical energy",
    "Insulin regulates blood glucose levels in diabetic patients",
    "Vaccines train the immune system to recognise viral proteins",
    "Antibiotics kill bacteria but do not work against viruses",
    "Neural networks learn layered representations from training data",
    "Gradient descent minimises the loss of a machine learning model",
    "Transformers use attention to model long range dependencies in text",
    "The stock market fell sharply after the interest rate decision",
    "Central banks raise interest rates to slow down inflation",
    "Bond yields rise when investors expect higher inflation",
    "The football team won the championship after a penalty shootout",
    "The marathon runner trained at altitude for the olympic games",
    "Tennis players serve faster on grass courts than on clay",
    "Glaciers retreat as the global climate warms",
    "Rising sea levels threaten coastal cities with flooding",
    "Volcanic eruptions release ash and sulfur dioxide into the atmosphere",
    "Bread dough rises because yeast ferments the sugar",
    "A slow cooked tomato sauce needs garlic and olive oil",
    "Chocolate cake recipes call for cocoa butter and eggs",
]


def _matched(hits: list[tuple[SubstrateItem, float]]) -> list[str]:
    """The ids of the hits that match the query (score above zero), in rank order."""
    return [it.id for it, s in hits if s > 0]


def fill(store: Substrate, scope: str = "local", prefix: str = "doc", texts: list[str] = CORPUS) -> list[str]:
    return store.put_many(
        SubstrateItem(kind="text", text=t, scope=scope, id=f"{prefix}-{i}", created_at=1.0) for i, t in enumerate(texts)
    )


def embedders(store: Substrate) -> dict[str, tuple]:
    with store.engine.connect() as c:
        rows = c.execute(text("SELECT domain, dim, fitted_seq, fitted_at, n_fit, n_folded FROM embedders")).all()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_text_items_rank_by_relevance_with_descending_scores_in_unit_range(store: Substrate) -> None:
    fill(store)
    hits = store.search("interest rates and inflation", k=5)
    assert hits[0][0].id == "doc-9"  # the only one with all three words
    assert {h[0].id for h in hits[1:3]} == {"doc-8", "doc-10"}
    scores = [s for _, s in hits]
    assert all(isinstance(s, float) and 0 <= s <= 1 for s in scores) and scores[2] > 0
    assert scores == sorted(scores, reverse=True)


def test_results_are_copies_and_mutating_them_changes_nothing(store: Substrate) -> None:
    fill(store)
    item, _ = store.search("glaciers climate", k=1)[0]
    item.text = "mutated"
    item.tags.append("x")
    again, _ = store.search("glaciers climate", k=1)[0]
    assert again.text == CORPUS[14] and again.tags == []


def test_the_domain_embedder_is_semantic_not_only_lexical(store: Substrate) -> None:
    fill(store)
    assert embedders(store) == {}
    lexical = store.search("energy", k=3)
    assert embedders(store) == {}  # a search fits nothing: the upkeep does
    store.reindex()
    (dim, *_rest) = embedders(store)[ALL_DOMAIN]
    assert dim > 0  # enough text to learn an embedding: dense vectors take part in ranking
    assert [s for _, s in store.search("energy", k=3)] != [s for _, s in lexical]


def test_kind_and_scope_filters(store: Substrate) -> None:
    fill(store, scope="a")
    fill(store, scope="b", prefix="b", texts=["Inflation and interest rates worry the central bank"] * 3)
    store.add("record", payload={"topic": "inflation report"}, scope="a", id="rec-1")
    hits = store.search("inflation", k=10, scope="a")
    assert {it.scope for it, _ in hits} == {"a"} and "rec-1" in {it.id for it, _ in hits}
    only_records = store.search("inflation", k=10, kind="record")
    assert [it.id for it, _ in only_records] == ["rec-1"]
    assert {it.scope for it, _ in store.search("inflation", k=10, scope="b")} == {"b"}
    everywhere = {it.scope for it, _ in store.search("inflation", k=20)}
    assert everywhere == {"a", "b"}
    assert store.search("inflation", k=10, kind="image") == []
    assert store.search("inflation", k=10, scope="nobody") == []


@pytest.mark.parametrize("k", [True, False, 1.0, 2.5, -1, "3", None])
def test_invalid_k_raises_before_any_refit(store: Substrate, k: object) -> None:
    fill(store)
    with pytest.raises(InvalidArgument):
        store.search("energy", k=k)  # type: ignore[arg-type]
    assert embedders(store) == {}


def test_zero_k_returns_nothing_without_fitting(store: Substrate) -> None:
    fill(store)
    assert store.search("energy", k=0) == []
    assert embedders(store) == {}


def test_a_non_text_query_ranks_lexically(store: Substrate) -> None:
    fill(store)
    store.add("record", payload={"sku": 48213, "colour": "teal"}, id="rec-teal")
    assert store.search(48213, k=1)[0][0].id == "rec-teal"
    assert store.search({"colour": "teal"}, k=1)[0][0].id == "rec-teal"
    assert store.search(b"teal", k=1)[0][0].id == "rec-teal"
    # A non-text query scores by lexical overlap alone: the same as the words' lexical score, never the embedding's.
    (hit, score), *_ = store.search(["teal"], k=1)
    assert hit.id == "rec-teal" and 0.0 < score <= 1.0
    # None holds no words: nothing matches, and the k slots are filled in insertion order at 0.0.
    assert [s for _, s in store.search(None, k=3)] == [0.0, 0.0, 0.0]


def test_an_unknown_kind_filters_out_everything_as_all_does(store: Substrate) -> None:
    fill(store)
    assert store.search("energy", k=3, kind="txt") == [] == store.all(kind="txt")


def test_a_kind_or_scope_of_the_wrong_type_is_a_typed_error(store: Substrate) -> None:
    with pytest.raises(InvalidArgument, match="kind"):
        store.search("x", k=3, kind=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="scope"):
        store.search("x", k=3, scope="  ")
    with pytest.raises(InvalidArgument, match="kind"):
        store.all(kind=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="scope"):
        store.all(scope=5)  # type: ignore[arg-type]


def test_k_beyond_any_store_means_every_match(store: Substrate) -> None:
    fill(store)
    assert len(store.search("energy", k=2**64)) == len(store.search("energy", k=10_000)) == len(store)


def test_an_id_that_is_not_a_string_names_no_item(store: Substrate) -> None:
    store.add("text", "x", id="5")
    assert store.get(5) is None and store.remove(5) is False  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        store.update(5, text="y")  # type: ignore[arg-type]
    assert store.get("5") is not None


def test_removed_and_updated_items_never_match_their_old_text(store: Substrate) -> None:
    fill(store)
    store.add("text", "Zebrafish regenerate heart tissue after injury", id="zebra")
    store.reindex()
    assert store.search("zebrafish heart", k=1)[0][0].id == "zebra"  # fitted with the zebrafish text
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM item_vectors WHERE item_id = 'zebra'")).scalar_one() == 2
    store.update("zebra", text="Sourdough starters need regular feeding")
    # The stale vectors are gone in the same transaction as the event, before any refit.
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM item_vectors WHERE item_id = 'zebra'")).scalar_one() == 0
    assert "zebra" not in {it.id for it, _ in store.search("zebrafish heart regenerate", k=20)}
    assert store.search("sourdough feeding", k=1)[0][0].id == "zebra"
    store.remove("doc-14")
    assert "doc-14" not in {it.id for it, _ in store.search("glaciers retreat climate warms", k=20)}
    assert "doc-14" not in {it.id for it, _ in store.search("glaciers retreat climate warms", k=20, scope="local")}


def test_small_changes_fold_in_and_large_ones_refit(store: Substrate) -> None:
    fill(store)
    store.reindex()
    dim, seq0, _at, n_fit, n_folded = embedders(store)[ALL_DOMAIN]
    assert (n_fit, n_folded) == (len(CORPUS), 0)
    store.add("text", "Quantum computers use superconducting qubits", id="q1")
    assert store.search("superconducting qubits", k=1)[0][0].id == "q1"  # before any refit: ranked lexically
    store.reindex()
    assert store.search("superconducting qubits", k=1)[0][0].id == "q1"
    _, seq1, _, n_fit1, n_folded1 = embedders(store)[ALL_DOMAIN]
    assert seq1 > seq0 and (n_fit1, n_folded1) == (n_fit, 1)
    store.put_many(SubstrateItem(kind="text", text=f"Extra note {i} about cooking pasta") for i in range(10))
    store.reindex()
    _, _, _, n_fit2, n_folded2 = embedders(store)[ALL_DOMAIN]
    assert (n_fit2, n_folded2) == (len(CORPUS) + 11, 0)


def test_writes_only_mark_domains_dirty_and_the_rule_follows_text(store: Substrate) -> None:
    fill(store, scope="s")
    store.reindex()
    fitted = embedders(store)
    assert set(fitted) == {"s", ALL_DOMAIN}
    store.add("record", payload={"k": "v"}, scope="s", id="r")  # no text: nothing to refit
    store.reindex()
    assert embedders(store) == fitted
    store.put(SubstrateItem(kind="record", payload={"k": "v"}, scope="s", id="doc-0"))  # text replaced by none
    catch_up_engine(store.engine)  # what the upkeep does first: the lazy postings (and dirty marks) catch up
    with store.engine.connect() as c:
        stale = c.execute(
            text(
                "SELECT count(*) FROM search_domains d JOIN embedders e USING (domain) WHERE e.fitted_seq <> d.changed_seq"
            )
        ).scalar_one()
    assert stale == 2  # "s" and the all-scopes domain
    store.reindex()
    assert "doc-0" not in _matched(store.search("mitochondria respiration", k=20, scope="s"))


def test_scope_isolation_results_and_scores_ignore_other_scopes(make_store) -> None:  # type: ignore[no-untyped-def]
    a, b = make_store(), make_store()
    for s in (a, b):
        fill(s, scope="mine")
    # Only b has another scope, sharing vocabulary (it would shift pooled document frequencies and the fit).
    fill(b, scope="theirs", prefix="t", texts=[t + " inflation energy cell" for t in CORPUS] * 2)
    b.add("record", payload={"note": "inflation energy"}, scope="theirs")
    a.reindex()
    b.reindex()
    for query in ("interest rates and inflation", "energy in the cell", "cooking with garlic", "zzz unknown"):
        ra = [(it.id, sc) for it, sc in a.search(query, k=10, scope="mine")]
        rb = [(it.id, sc) for it, sc in b.search(query, k=10, scope="mine")]
        assert ra == rb
    ea, eb = embedders(a)["mine"], embedders(b)["mine"]
    assert ea[0] == eb[0] and ea[3:] == eb[3:]  # same dimensions and corpus size


def test_a_second_handle_reuses_the_persisted_embedder(store: Substrate) -> None:
    fill(store)
    store.reindex()
    first = store.search("vaccines immune system", k=3)
    before = embedders(store)
    other = Substrate(url=store.url)
    try:
        assert [(i.id, s) for i, s in other.search("vaccines immune system", k=3)] == [(i.id, s) for i, s in first]
        assert embedders(other) == before  # same fitted_at: nothing was refitted
    finally:
        other.close()


def test_structured_items_rank_lexically_over_payload_and_tags(store: Substrate) -> None:
    fill(store)
    store.add("record", payload={"model": "resnet", "dataset": "imagenet"}, tags=["vision"], id="r1")
    store.add("record", payload={"model": "resnet", "dataset": "cifar"}, tags=["vision", "imagenet"], id="r2")
    store.add("artifact", payload={"path": "weights.bin"}, tags=["checkpoint"], id="a1")
    hits = store.search("resnet imagenet vision", k=5)
    assert [it.id for it, _ in hits[:2]] in (["r1", "r2"], ["r2", "r1"])
    assert store.search("checkpoint", k=3)[0][0].id == "a1"
    assert _matched(store.search("cifar", k=3)) == ["r2"]


def test_small_corpus_falls_back_to_lexical_ranking(store: Substrate) -> None:
    fill(store, texts=CORPUS[: MIN_FIT_DOCS - 1])
    hits = store.search("energy from sunlight", k=5)
    assert hits[0][0].id == "doc-1"
    assert hits[0][1] > 0 and all(s >= 0 for _, s in hits)
    unmatched = store.search("football championship", k=5)  # nothing shares a word: the first five, at 0.0
    assert [(it.id, sc) for it, sc in unmatched] == [(it.id, 0.0) for it in store.all()[:5]]
    store.reindex()
    (dim, *_r) = embedders(store)[ALL_DOMAIN]
    assert dim == 0


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   \n\t",
        "!!! ??? ...",
        "the of and",
        "x\x00y",
        "'; DROP TABLE items; --",
        "%s %(k)s :k $1 \\",
        "über café naïve 日本語の文 😀",
        "energy " * 5000,
        "a" * 5000,
        "(energy) & !cell | <->",
        "cell\ud800energy",
    ],
)
def test_odd_queries_never_crash(store: Substrate, query: str) -> None:
    fill(store)
    hits = store.search(query, k=3)
    assert isinstance(hits, list) and len(hits) <= 3
    assert store.search(query, k=3, scope="local", kind="text") == [h for h in hits if h[0].kind == "text"][:3]


def test_a_scope_no_item_can_have_is_an_empty_domain(store: Substrate) -> None:
    fill(store)
    assert store.search("energy", k=3, scope="lo\x00cal") == []
    assert store.search("energy", k=3, scope="lo\udc80cal") == []


def test_queries_without_words_match_nothing_so_every_item_scores_zero(store: Substrate) -> None:
    fill(store)
    first = [it.id for it in store.all()[:3]]
    for q in ("", "   ", "?!", "the and of"):
        assert [(it.id, sc) for it, sc in store.search(q, k=3)] == [(i, 0.0) for i in first]


def test_fewer_matches_than_k_are_topped_up_with_the_unmatched_items_at_zero(store: Substrate) -> None:
    store.add("text", "apples are red", id="t1")
    store.add("text", "bananas are yellow", id="t2", scope="team")
    store.add("text", "cherries are small", id="t3")
    store.add("record", payload={"a": 1}, id="r1")
    store.add("record", payload={"fruit": "apples"}, id="r2", scope="team")
    hits = store.search("apples", k=10)
    assert [it.id for it, _ in hits][:2] in (["t1", "r2"], ["r2", "t1"]) and all(s > 0 for _, s in hits[:2])
    assert [(it.id, sc) for it, sc in hits[2:]] == [("t2", 0.0), ("t3", 0.0), ("r1", 0.0)]  # insertion order
    assert [(it.id, sc) for it, sc in store.search("zzzz qqqq", k=3)] == [("t1", 0.0), ("t2", 0.0), ("t3", 0.0)]
    assert [(it.id, sc) for it, sc in store.search("bananas", k=5, kind="record")] == [("r1", 0.0), ("r2", 0.0)]
    team = store.search("cherries", k=5, scope="team")
    assert [(it.id, sc) for it, sc in team] == [("t2", 0.0), ("r2", 0.0)]
    assert store.search("apples", k=5, scope="team", kind="image") == []
    assert len(store.search("apples", k=1)) == 1 and store.search("apples", k=1)[0][1] > 0


def test_unicode_items_are_searchable(store: Substrate) -> None:
    store.add("text", "Crème brûlée à la française", id="fr")
    store.add("text", "Die Straße ist naß", id="de")
    assert store.search("brûlée", k=1)[0][0].id == "fr"
    assert store.search("straße", k=1)[0][0].id == "de"


def test_rebuild_and_shadow_replay_keep_search_digests_and_vectors(store: Substrate) -> None:
    from projections.runner import rebuild, shadow_digests, table_digests

    fill(store, scope="a")
    fill(store, scope="b", prefix="b")
    store.update("doc-3", text="Vaccines and boosters train immune memory")
    store.remove("b-5")
    store.add("record", payload={"x": 1.5e20, "y": [1, "two"]}, tags=["t"], scope="a")
    store.reindex()
    before = store.search("vaccines immune", k=5, scope="a")
    mine = SEARCH.tables
    with store.engine.connect() as c:
        live = {t: d for t, d in table_digests(c)[1].items() if t in mine}
    _, _, shadow = shadow_digests(store.engine)
    assert {t: shadow[t] for t in mine} == live
    report = rebuild(store.engine)
    assert {t: report.digests[t] for t in mine} == live
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM item_vectors")).scalar_one() > 0
    assert [(i.id, s) for i, s in store.search("vaccines immune", k=5, scope="a")] == [(i.id, s) for i, s in before]


def test_a_scope_named_star_is_its_own_domain(store: Substrate) -> None:
    store.add("text", "alpha particles", scope="*", id="star")
    store.add("text", "alpha centauri", scope="other", id="other")
    assert [it.id for it, _ in store.search("alpha", k=5, scope="*")] == ["star"]
    assert {it.id for it, _ in store.search("alpha", k=5)} == {"star", "other"}


def test_cli_search_and_reindex(store: Substrate, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from service.cli import main

    fill(store)
    assert main(["reindex", "--url", store.url]) == 0
    out = capsys.readouterr().out
    assert "refitted 2 domain(s)" in out and "local" in out
    assert main(["search", "interest rates", "--k", "2", "--scope", "local", "--json", "--url", store.url]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and rows[0]["item"]["id"] in {"doc-9", "doc-8"} and rows[0]["score"] > 0
    assert main(["search", "interest rates", "--url", store.url]) == 0
    assert "doc-9" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["search", "x", "--k", "-1", "--url", store.url])


def test_concurrent_upkeeps_of_a_dirty_domain_fit_it_once(store: Substrate) -> None:
    from concurrent.futures import ThreadPoolExecutor

    fill(store)
    catch_up_engine(store.engine)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: refit(store.engine, ALL_DOMAIN), range(4)))
    results = [store.search("glaciers and sea levels", k=3) for _ in range(2)]
    assert all([i.id for i, _ in r] == [i.id for i, _ in results[0]] for r in results)
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM embedders")).scalar_one() == 1
        assert c.execute(text("SELECT n_folded FROM embedders")).scalar_one() == 0


def test_a_prefix_rebuild_is_searched_as_of_its_prefix(store: Substrate) -> None:
    from projections.runner import rebuild

    fill(store)
    store.reindex()
    before = store.position
    store.update("doc-3", text="Sourdough bread needs a lively starter")
    assert store.search("sourdough starter", k=1)[0][0].id == "doc-3"
    rebuild(store.engine, until=before)  # the read models as of before the update
    assert store.search("vaccines immune viral", k=1)[0][0].id == "doc-3"
    assert "doc-3" not in _matched(store.search("sourdough starter", k=5))
    rebuild(store.engine)
    assert store.search("sourdough starter", k=1)[0][0].id == "doc-3"


def test_concurrent_full_fits_of_different_domains_do_not_deadlock(store: Substrate) -> None:
    from concurrent.futures import ThreadPoolExecutor

    for scope in ("a", "b", "c"):
        fill(store, scope=scope, prefix=scope)
    catch_up_engine(store.engine)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda d: refit(store.engine, d, full=True), ["a", "b", "c", ALL_DOMAIN]))
    results = [store.search("interest rates inflation", k=2, scope=s) for s in ["a", "b", "c", None]]
    assert [r[0][0].id for r in results[:3]] == ["a-9", "b-9", "c-9"]
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM embedders WHERE dim > 0")).scalar_one() == 4


def test_equal_scores_come_in_insertion_order(store: Substrate) -> None:
    # Same surface, same score: the spec's stable sort keeps the insertion order, whatever the ids.
    for item_id in ("zz-first", "mm-second", "aa-third"):
        store.add("text", "Tidal energy from ocean currents", id=item_id)
    store.add("text", "Unrelated note about bread", id="other")
    hits = store.search("tidal energy", k=3)
    assert len({s for _, s in hits}) == 1
    assert [it.id for it, _ in hits] == ["zz-first", "mm-second", "aa-third"]
