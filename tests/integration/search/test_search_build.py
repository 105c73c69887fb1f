"""The search read models built from nothing (a rebuild) equal the event-by-event fold, however the log was cut."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.runner import catch_up_engine, rebuild, shadow_digests, table_digests
from projections.search_index import SEARCH
from projections.search_segments import merge_segments
from service import Substrate, SubstrateItem
from service.teams.spaces import merge_versions

_SEARCH = SEARCH.tables

_put = st.tuples(
    st.just("put"),
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from(["text", "record"]),
    st.sampled_from(["", "alpha beta", "gamma gamma delta", "Pricing of refunds"]),
    st.sampled_from(["local", "team-a", "team-b"]),
    st.sampled_from([{}, {"n": 1.5e16, "k": "v w"}, {"nested": {"x": [1, 2.5, "three"]}}]),
    st.sampled_from([[], ["x"], ["y", "x"]]),
)
_ops = st.lists(
    st.one_of(
        _put,
        st.tuples(st.just("remove"), st.sampled_from(["a", "b", "c", "d"])),
        st.tuples(st.just("catch_up")),  # the live fold applies what came so far: a cut in the log
        st.tuples(st.just("merge")),  # segments merged, live postings of ended docs moved to history
    ),
    min_size=1,
    max_size=14,
)


def _search_digests(digests: dict[str, str]) -> dict[str, str]:
    return {t: digests[t] for t in _SEARCH}


def _run(store: Substrate, ops: list[tuple[Any, ...]]) -> None:
    for op in ops:
        if op[0] == "put":
            _, i, kind, text, scope, payload, tags = op
            store.put(SubstrateItem(kind=kind, text=text, id=i, scope=scope, payload=payload, tags=tags))
        elif op[0] == "remove":
            if store.get(op[1]) is not None:
                store.remove(op[1])
        elif op[0] == "catch_up":
            catch_up_engine(store.engine)
        else:
            with store.engine.begin() as c:
                merge_segments(c)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_a_rebuild_builds_the_search_models_the_fold_makes(make_store: Any, ops: list[tuple[Any, ...]]) -> None:
    store = make_store()
    _run(store, ops)
    with store.engine.connect() as c:
        live = _search_digests(table_digests(c)[1])
    _, _, shadow = shadow_digests(store.engine)  # the fold in batches of 2000, from nothing
    assert _search_digests(shadow) == live
    assert _search_digests(rebuild(store.engine).digests) == live  # the set-wise build
    store.close()


def test_merges_and_scope_moves_build_the_same_domains(store: Substrate) -> None:
    a = store.add("text", "refund policy for teams", scope="team-a", id="m1")
    b = store.add("text", "refund policy, older", scope="team-a", id="m2")
    store.add("record", "", scope="team-b", id="r1", payload={"k": 1})
    store.remove("r1")  # team-b's only document (no text) is gone: the domain holds nothing
    store.put(SubstrateItem(kind="text", text="moved", id="m3", scope="team-a"))
    store.put(SubstrateItem(kind="text", text="moved", id="m3", scope="team-c"))
    merge_versions(store, a, b, by="team-a", confirm=True)
    with store.engine.connect() as c:
        live = _search_digests(table_digests(c)[1])
        domains = dict(c.exec_driver_sql("SELECT domain, n_docs FROM search_domains").all())
    # team-b's only document is gone (the domain stays, with its history, holding nothing live)
    assert domains["team-b"] == 0 and {"", "team-a", "team-c"} <= set(domains)
    assert _search_digests(rebuild(store.engine).digests) == live


def test_a_catch_up_next_to_a_reader_neither_waits_nor_differs(store: Substrate) -> None:
    # A reader holds the search tables: the catch-up appends rows and takes no lock the reader conflicts with.
    import threading

    for n in range(30):
        store.add("text", f"glaciers and sea levels {n}", scope="team-a" if n % 2 else "local")
    reader = store.engine.connect()
    reader.exec_driver_sql("SELECT count(*) FROM search_domains, search_lists, search_docs").scalar()
    done: list[dict[str, int]] = []
    t = threading.Thread(target=lambda: done.append(catch_up_engine(store.engine)))
    t.start()
    t.join(20)
    finished_while_read = not t.is_alive()
    reader.rollback()
    reader.close()
    t.join(30)
    assert finished_while_read  # it did not wait for the reader
    assert done and done[0]["search"] == store.events.head()
    with store.engine.connect() as c:
        live = _search_digests(table_digests(c)[1])
    assert _search_digests(rebuild(store.engine).digests) == live
