"""canonical_json (orjson where it is byte-identical) must equal the stdlib definition on every JSON value."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.canonical import (
    canonical_json,
    event_address,
    event_item_digest,
    item_digest,
    reference_canonical_json,
)
from projections.jsonutil import loads

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 9999999999999998.0, 1e-5, 5e-324, 1.7976931348623157e308])
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=25,
)


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return fn(value)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:  # lone surrogates cannot be encoded either way
        return type(exc).__name__ if not isinstance(exc, UnicodeEncodeError) else "unencodable"


def _normalized(outcome: Any) -> Any:
    return "unencodable" if outcome in ("unencodable", "JSONEncodeError") else outcome


_text = st.text(max_size=12)


@settings(max_examples=400)
@given(
    _json | st.dictionaries(st.just("item"), st.dictionaries(st.text(max_size=8), _json, max_size=5), min_size=1),
    _text,
    st.integers(min_value=1, max_value=2**40),
    _text,
    st.none() | _text,
    st.none() | _text,
)
def test_event_address_is_the_hash_of_the_reference_canonical_body(
    data: Any, stream: str, version: int, principal: str, scope: str | None, prev: str | None
) -> None:
    body = {"stream": stream, "version": version, "type": "T", "data": data, "principal": principal, "scope": scope}
    body["prev"] = prev
    try:
        expected = "sha256:" + hashlib.sha256(reference_canonical_json(body)).hexdigest()
    except (ValueError, TypeError, UnicodeEncodeError):
        return  # not storable (normalize_json refuses it before any address is taken)
    assert event_address(**body) == expected  # type: ignore[arg-type]
    if isinstance(data, dict) and isinstance(data.get("item"), dict) and len(data) == 1:
        assert event_item_digest(data["item"]) == item_digest(data["item"])  # the memo the address fills


@settings(max_examples=600)
@given(_json)
def test_fast_canonical_json_equals_the_stdlib_definition(value: Any) -> None:
    assert _normalized(_outcome(canonical_json, value)) == _normalized(_outcome(reference_canonical_json, value))


def test_exponent_floats_and_big_ints_take_the_reference_path() -> None:
    for value in (1e20, 1e-5, 2**70, {"a": [1e-7, 3]}):
        assert canonical_json(value) == reference_canonical_json(value)
    assert canonical_json({"b": 1, "a": "é\n"}) == '{"a":"é\\n","b":1}'.encode()


def test_non_finite_floats_are_refused() -> None:
    for bad in (float("nan"), float("inf")):
        try:
            canonical_json({"x": bad})
        except ValueError:
            continue
        raise AssertionError("non-finite float accepted")


@settings(max_examples=600)
@given(_json)
def test_loads_reads_every_json_text_like_the_stdlib(value: Any) -> None:
    # Integers beyond 64 bits included: orjson alone would round them to floats.
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode()
    except UnicodeEncodeError:  # lone surrogates: not a text jsonb could hold
        return
    assert _same(loads(text), json.loads(text))
    assert _same(loads(text.encode()), json.loads(text))


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types throughout (1 == 1.0 would hide an integer read as a float)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
