"""normalize_json's fast path must give exactly what the path-naming normalizer gives, errors included."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain.events import _normalize, normalize_json

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from([0.0, -0.0, 1e16, -1e17, 1.5e16, 2.0**60, float("nan"), float("inf")])
    | st.text()
    | st.sampled_from(["a\x00b", "\ud800", "é", "\U0001f600"])
)
_keys = st.text(max_size=6) | st.sampled_from(["k\x00", "\udfff"]) | st.integers(0, 3)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple) | st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=20,
)


def _outcome(fn: Any) -> Any:
    try:
        out = fn()
    except ValueError as exc:
        return ("error", str(exc))
    return ("ok", repr(out), _types(out))


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


@settings(max_examples=800)
@given(_values)
def test_fast_normalization_equals_the_reference(value: Any) -> None:
    assert _outcome(lambda: normalize_json(value, "item")) == _outcome(lambda: _normalize(value, "item"))


def test_errors_still_name_the_path() -> None:
    for bad, where in (({"a": [1, "x\x00"]}, "item.a[1]"), ({"b": float("nan")}, "item.b"), ({1: 2}, "item")):
        try:
            normalize_json(bad, "item")
        except ValueError as exc:
            assert str(exc).startswith(where + ":"), exc
        else:
            raise AssertionError(f"{bad!r} accepted")


class _Label(str):
    __slots__ = ()


def test_str_subclasses_are_stored_as_plain_strings() -> None:
    out = normalize_json({"id": _Label("a1"), "tags": [_Label("t")], _Label("k"): 1}, "item")
    assert out == {"id": "a1", "tags": ["t"], "k": 1}
    assert {type(out["id"]), type(out["tags"][0])} | {type(k) for k in out} == {str}
    slow = _normalize({"id": _Label("a1")}, "item")
    assert type(slow["id"]) is str


def test_a_str_enum_is_stored_as_its_value_not_its_name() -> None:
    import enum

    class Color(str, enum.Enum):  # noqa: UP042 - the mixin form, whose str() is the name, is the point
        RED = "red"

    assert normalize_json({"c": Color.RED, "l": [Color.RED]}, "payload") == {"c": "red", "l": ["red"]}
    assert _normalize({"c": Color.RED}, "payload") == {"c": "red"}
