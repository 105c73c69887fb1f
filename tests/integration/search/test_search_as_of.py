"""Search as of a log position: the index's intervals, counts at S and the states valid at S, never a replay.

The oracle is what a live search returned at that position (lexical: no embedder is fitted in these stores), with
the index cut at whatever point the upkeep had reached then; as of S, later, the index is cut elsewhere.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.runner import catch_up_engine
from projections.search_segments import merge_segments
from service import Substrate, SubstrateItem
from service.search.upkeep import upkeep_once

WORDS = ["glacier", "volcano", "harbor", "meadow", "canyon", "lagoon", "tide", "dune"]
QUERIES = [("glacier harbor", None), ("volcano tide dune", "a"), ("meadow", None), ("lagoon canyon glacier", "b")]

_text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
_op = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from("pqrst"),
        _text,
        st.sampled_from(["a", "b"]),
        st.sampled_from(["text", "record"]),
    ),
    st.tuples(st.just("meta"), st.sampled_from("pqrst")),  # a metadata-only change: the same doc goes on
    st.tuples(st.just("remove"), st.sampled_from("pqrst")),
    st.tuples(st.just("index")),  # the upkeep indexes what came so far (and merges): a cut in the log
)


def _rounded(hits: list[tuple[SubstrateItem, float]]) -> list[tuple[str, str, float]]:
    return [(it.id, it.text, round(s, 9)) for it, s in hits]


def _searches(store: Substrate) -> list[Any]:
    return [_rounded(store.search(q, k=4, scope=scope)) for q, scope in QUERIES]


def _apply(store: Substrate, op: tuple[Any, ...], n: int) -> bool:
    """Apply one operation; whether it appended an event."""
    if op[0] == "put":
        _, i, words, scope, kind = op
        payload = {"note": words} if kind == "record" else {}
        text = words if kind == "text" else ""
        store.put(SubstrateItem(kind=kind, text=text, payload=payload, id=i, scope=scope, created_at=1.0))
        return True
    if op[0] == "meta":
        if store.get(op[1]) is None:
            return False
        store.update(op[1], provenance={"checked": n})
        return True
    if op[0] == "remove":
        return store.get(op[1]) is not None and store.remove(op[1])
    upkeep_once(store.engine, refits=False)
    return False


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=18))
def test_a_search_as_of_any_position_returns_what_a_live_search_returned_there(make_store: Any, ops: list[Any]) -> None:
    store = make_store()
    seen: dict[int, list[Any]] = {0: _searches(store)}
    for n, op in enumerate(ops):
        if _apply(store, op, n):
            seen[store.position] = _searches(store)
    catch_up_engine(store.engine)
    with store.engine.begin() as c:
        merge_segments(c)
    for position, expected in seen.items():
        assert _searches(store.as_of(position)) == expected, position
    store.close()


def test_the_past_finds_old_text_and_removed_items_but_not_later_ones(store: Substrate) -> None:
    for i in range(12):
        store.add("text", f"note {i} about harbors and tides", id=f"n{i}", scope="port")
    store.add("text", "The lighthouse keeper logs every storm", id="keeper", scope="port")
    then = store.position
    store.reindex()
    store.update("keeper", text="The keeper retired to grow tomatoes")
    store.remove("n3")
    store.add("text", "A new lighthouse opened on the cape", id="cape", scope="port")
    store.reindex()  # the index has seen everything: as of `then`, its intervals answer
    past = store.as_of(then)
    assert past.search("lighthouse storm", k=1, scope="port")[0][0].text == "The lighthouse keeper logs every storm"
    assert "cape" not in {it.id for it, s in past.search("lighthouse cape", k=5, scope="port") if s > 0}
    assert "n3" in {it.id for it, _ in past.search("note 3 harbors", k=3, scope="port")}
    live = store.search("lighthouse storm", k=2, scope="port")
    assert live[0][0].id == "cape" or live[0][0].text != "The lighthouse keeper logs every storm"
    assert past.search("lighthouse storm", k=1, scope="port")[0][1] >= 0.5  # calibrated as a live search is
