"""The HTTP edge's parsers: cursors, ?as_of= and storable text never crash and never misparse."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.http.errors import ProblemError
from service.http.items import CURSOR_PATTERN, _decode_cursor, _encode_cursor
from service.http.models import storable
from service.http.views import parse_as_of


@given(st.integers(min_value=0, max_value=2**62 - 1))
def test_a_cursor_round_trips(pos: int) -> None:
    assert _decode_cursor(_encode_cursor(pos)) == pos


@given(st.text(max_size=80))
def test_any_cursor_text_is_a_position_or_a_400(raw: str) -> None:
    try:
        assert 0 <= _decode_cursor(raw) < 2**62
    except ProblemError as exc:
        assert exc.status == 400


@given(st.from_regex(CURSOR_PATTERN, fullmatch=True))
def test_every_cursor_the_document_allows_is_a_position(raw: str) -> None:
    assert 0 <= _decode_cursor(raw) < 2**62 and re.fullmatch(CURSOR_PATTERN, _encode_cursor(_decode_cursor(raw)) or "")


def test_no_cursor_is_the_first_page_and_the_last_page_has_none() -> None:
    assert _decode_cursor(None) == 0 and _decode_cursor("") == 0 and _encode_cursor(None) is None


@given(st.text(max_size=40))
def test_as_of_is_a_seq_a_datetime_or_a_422(raw: str) -> None:
    try:
        value = parse_as_of(raw)
    except ProblemError as exc:
        assert exc.status == 422 and "as_of" in exc.detail
        return
    assert isinstance(value, (int, datetime))


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("0", 0),
        (" 42 ", 42),
        ("2026-11-29T10:00:00+00:00", datetime.fromisoformat("2026-11-29T10:00:00+00:00")),
        ("2026-11-29", datetime(2026, 11, 29, tzinfo=UTC)),  # a time without a zone is UTC
        ("2026-11-29t10:00:00z", datetime(2026, 11, 29, 10, tzinfo=UTC)),  # RFC 3339 allows lower case
        ("2026-11-29T10:00:00+02:00", datetime(2026, 11, 29, 8, tzinfo=UTC)),
        ("0001-01-01T00:00:00+01:00", datetime.min.replace(tzinfo=UTC)),  # before year 1 in UTC: the start
        (None, None),
    ],
)
def test_as_of_examples(raw: str | None, expected: object) -> None:
    assert parse_as_of(raw) == expected


@given(st.text())
def test_storable_text_has_no_nul_and_no_lone_surrogate(value: str) -> None:
    bad = "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if bad:
        with pytest.raises(ValueError):
            storable(value)
    else:
        assert storable(value) == value
