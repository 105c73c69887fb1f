"""SubstrateItem validation and its JSON form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service import MODALITIES, SubstrateItem

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def test_modalities_are_the_documented_ten_in_order() -> None:
    assert MODALITIES == (
        "text",
        "record",
        "image",
        "signal",
        "graph",
        "field",
        "event_stream",
        "artifact",
        "trace",
        "context",
    )


def test_defaults_match_the_spec() -> None:
    item = SubstrateItem(kind="text")
    assert (item.text, item.payload, item.provenance, item.scope) == ("", {}, {}, "local")
    assert item.tags == [] and item.links == [] and item.derived_from == []
    assert isinstance(item.id, str) and item.id
    assert isinstance(item.created_at, float)
    assert SubstrateItem(kind="text").id != item.id


def test_unknown_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="kind"):
        SubstrateItem(kind="video")


@pytest.mark.parametrize(
    "field,value",
    [
        ("text", 3),
        ("payload", []),
        ("provenance", "x"),
        ("scope", ""),
        ("tags", "a"),
        ("links", [1]),
        ("derived_from", "abc"),
        ("id", ""),
        ("created_at", "now"),
        ("created_at", True),
    ],
)
def test_bad_field_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        SubstrateItem(kind="record", **{field: value})


def test_links_and_derived_from_are_separate_lists() -> None:
    item = SubstrateItem(kind="text", links=["a"], derived_from=["b"])
    d = item.to_json()
    assert d["links"] == ["a"] and d["derived_from"] == ["b"]


def test_to_json_is_an_independent_copy() -> None:
    item = SubstrateItem(kind="record", payload={"n": [1, 2]})
    d = item.to_json()
    d["payload"]["n"].append(3)
    assert item.payload == {"n": [1, 2]}


def test_from_json_rejects_non_dicts_unknown_fields_and_missing_kind() -> None:
    with pytest.raises(ValueError):
        SubstrateItem.from_json(["kind", "text"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown"):
        SubstrateItem.from_json({"kind": "text", "colour": "red"})
    with pytest.raises(ValueError, match="kind"):
        SubstrateItem.from_json({"text": "x"})


@given(
    kind=st.sampled_from(MODALITIES),
    text=st.text(max_size=50),
    payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    tags=st.lists(st.text(max_size=8), max_size=4),
    scope=st.text(min_size=1, max_size=10).filter(str.strip),
)
def test_json_round_trip(kind: str, text: str, payload: dict, tags: list, scope: str) -> None:
    item = SubstrateItem(kind=kind, text=text, payload=payload, tags=tags, scope=scope)
    assert SubstrateItem.from_json(item.to_json()) == item


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_from_json_never_fails_with_anything_but_value_error(d: dict) -> None:
    try:
        SubstrateItem.from_json(d)
    except ValueError:
        pass


def test_only_ids_the_item_generated_are_marked_generated() -> None:
    from service.domain.items import is_generated_id

    made = SubstrateItem(kind="text", text="x")
    assert is_generated_id(made.id) and isinstance(made.id, str)
    assert not is_generated_id(SubstrateItem(kind="text", id="given").id)
    assert not is_generated_id(SubstrateItem.from_json(made.to_json() | {"id": str(made.id)}).id)
    assert made == SubstrateItem.from_json(made.to_json())  # equal to the same item with a plain-string id
