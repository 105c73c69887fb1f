"""Property: any string is a valid query; results are bounded, scored in [0, 1], descending, and in scope."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.domain.items import SubstrateItem
from service.substrate import Substrate

TEXTS = [
    "Solar panels convert sunlight into electricity",
    "Wind turbines generate power from moving air",
    "Batteries store energy for the electric grid",
    "Hydroelectric dams turn falling water into power",
    "Nuclear reactors split uranium atoms to make heat",
    "Geothermal plants tap the heat below the crust",
    "Coal plants emit carbon dioxide when they burn fuel",
    "Heat pumps move warmth from outside air into homes",
    "Smart meters report electricity use every hour",
    "Transmission lines carry power across long distances",
    "Grid operators balance supply and demand each second",
    "Hydrogen fuel cells combine hydrogen and oxygen",
]

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(query=st.text(max_size=300), k=st.integers(min_value=0, max_value=8))
def test_any_text_query_is_answered_within_bounds(store: Substrate, query: str, k: int) -> None:
    if not len(store):
        store.put_many(SubstrateItem(kind="text", text=t, scope="grid", id=f"g{i}") for i, t in enumerate(TEXTS))
        store.add("record", payload={"meter": "smart", "kwh": 12.5}, tags=["energy"], scope="grid", id="m1")
        store.add("text", "Power outage reported downtown", scope="news", id="n1")
    hits = store.search(query, k=k, scope="grid")
    assert len(hits) == min(k, len(TEXTS) + 1)  # every item of the scope is a candidate: k of them come back
    scores = [s for _, s in hits]
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert all(item.scope == "grid" for item, _ in hits)
    assert len({item.id for item, _ in hits}) == len(hits)
