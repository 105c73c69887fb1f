"""The ingest format parsers: every input yields (line, value or Bad) with true 1-based lines, and never raises."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.cli.ingest import parse_duration
from service.domain.validation import InvalidArgument
from service.ingest.batch import IngestReceipt, stable_id
from service.ingest.formats import (
    Bad,
    detect_format,
    doc_fields,
    iter_with_indices,
    parse_csv,
    parse_jsonl,
    parse_text_lines,
    record_fields,
    trace_fields,
)

line_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)


@given(st.lists(line_text, max_size=20), st.sampled_from(["\n", "\r\n"]))
def test_text_lines_yield_every_non_blank_line_stripped_with_its_line_number(lines: list[str], eol: str) -> None:
    data = eol.join(lines).encode()
    got = list(parse_text_lines(io.BytesIO(data)))
    assert got == [(n, t.strip()) for n, t in enumerate(lines, start=1) if t.strip()]


@given(st.binary(max_size=200))
def test_text_lines_never_raise_and_report_undecodable_lines(data: bytes) -> None:
    for n, value in parse_text_lines(io.BytesIO(data)):
        assert n >= 1
        assert isinstance(value, (str, Bad))


def test_text_lines_strip_a_bom_and_name_bad_utf8() -> None:
    got = list(parse_text_lines(io.BytesIO(b"\xef\xbb\xbfhello\n\xff\xfe bad\nok\n")))
    assert got[0] == (1, "hello") and got[2] == (3, "ok")
    assert got[1][0] == 2 and isinstance(got[1][1], Bad) and "UTF-8" in got[1][1].reason


@given(st.lists(json_values, max_size=15))
def test_jsonl_round_trips_values_with_their_line_numbers(values: list[object]) -> None:
    data = "\n".join(json.dumps(v) for v in values).encode()
    assert list(parse_jsonl(io.BytesIO(data))) == list(enumerate(values, start=1))


@given(st.lists(st.one_of(json_values.map(json.dumps), line_text), max_size=15))
def test_jsonl_yields_exactly_one_entry_per_non_blank_line(lines: list[str]) -> None:
    got = list(parse_jsonl(io.BytesIO("\n".join(lines).encode())))
    assert [n for n, _ in got] == [n for n, line in enumerate(lines, start=1) if line.strip()]
    for (_, value), line in zip(got, [x for x in lines if x.strip()]):
        try:
            expected = json.loads(line)
        except ValueError:
            assert isinstance(value, Bad) and value.reason.startswith("invalid JSON")
        else:
            # Compared serialized: a line "NaN" parses to a float that is not equal to itself.
            assert json.dumps(value) == json.dumps(expected)


@given(st.binary(max_size=300))
def test_jsonl_and_csv_never_raise_on_arbitrary_bytes(data: bytes) -> None:
    for parse in (parse_jsonl, parse_csv):
        for n, _value in parse(io.BytesIO(data)):
            assert n >= 1


cell = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=8)


@settings(max_examples=60)
@given(
    st.integers(1, 4).flatmap(
        lambda w: st.tuples(
            st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=w, max_size=w, unique=True),
            st.lists(st.lists(cell, min_size=w, max_size=w), max_size=8),
        )
    )
)
def test_csv_rows_are_keyed_by_the_header_and_start_at_their_true_line(
    table: tuple[list[str], list[list[str]]],
) -> None:
    header, rows = table
    buf = io.StringIO()
    writer = csv.writer(buf)  # "\r\n" rows: a bare "\r" inside a cell is then quoted, so it round-trips
    writer.writerow(header)
    starts, line = [], 2
    for row in rows:
        starts.append(line)
        before = buf.tell()
        writer.writerow(row)
        line += buf.getvalue()[before:].count("\n")
    got = list(parse_csv(io.BytesIO(buf.getvalue().encode())))
    # A row whose every cell is blank carries no data and is skipped like a blank line.
    expected = [(s, dict(zip(header, r))) for s, r in zip(starts, rows) if any(c.strip() for c in r)]
    assert got == expected


def test_csv_names_short_rows_duplicate_headers_and_bad_bytes() -> None:
    got = list(parse_csv(io.BytesIO(b"a,b\n1,2\n3\n\xff,4\n5,6\n")))
    assert got[0] == (2, {"a": "1", "b": "2"}) and got[-1] == (5, {"a": "5", "b": "6"})
    assert got[1][0] == 3 and "expected 2 fields" in got[1][1].reason
    assert got[2][0] == 4 and "UTF-8" in got[2][1].reason
    dup = list(parse_csv(io.BytesIO(b"a,a\n1,2\n")))
    assert len(dup) == 1 and isinstance(dup[0][1], Bad) and "duplicate" in dup[0][1].reason


@given(
    st.text(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
def test_doc_fields_accept_strings_and_text_objects(text: str, tags: list[str], payload: dict[str, object]) -> None:
    assert doc_fields(text) == (text, [], {})
    assert doc_fields({"text": text, "tags": tags, "payload": payload}) == (text, tags, payload)


@given(json_values.filter(lambda v: not isinstance(v, (str, dict))))
def test_doc_fields_reject_anything_else_with_a_reason(value: object) -> None:
    with pytest.raises(ValueError, match="document"):
        doc_fields(value)


def test_doc_fields_keep_extra_keys_in_the_payload() -> None:
    assert doc_fields({"text": "t", "lang": "en", "payload": {"x": 1}}) == ("t", [], {"lang": "en", "x": 1})
    with pytest.raises(ValueError, match="'text' must be a string"):
        doc_fields({"text": 3})
    with pytest.raises(ValueError, match="tags"):
        doc_fields({"text": "t", "tags": "oops"})


@given(st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=4))
def test_record_fields_store_dicts_as_is_and_serialize_them_as_text(record: dict[str, object]) -> None:
    body, payload = record_fields(record, None)
    assert payload == record and json.loads(body) == record


def test_record_fields_text_fields_tuples_and_rejects() -> None:
    assert record_fields({"title": "Dune", "year": 1965, "x": None}, ["title", "year", "x"]) == (
        "Dune 1965",
        {"title": "Dune", "year": 1965, "x": None},
    )
    assert record_fields(("a", 1), None) == ('["a", 1]', {"values": ["a", 1]})
    with pytest.raises(ValueError, match="record"):
        record_fields(42, None)


def test_trace_fields_take_any_object() -> None:
    assert trace_fields({"input": "2+2", "answer": "4"}) == ("2+2\nanswer: 4", {"input": "2+2", "answer": "4"})
    assert trace_fields({"input": "q", "call": {"f": 1}})[0] == 'q\ncall: {"f": 1}'
    # A row without an input is still a row (the spec fails only lines that are not objects).
    assert trace_fields({"answer": 1}) == ("answer: 1", {"answer": 1})
    assert trace_fields({"note": "x"}) == ('{"note": "x"}', {"note": "x"})
    for bad in ([1, 2], "text", 3):
        with pytest.raises(ValueError, match="trace row"):
            trace_fields(bad)


def test_detect_format_from_extension_or_kind() -> None:
    assert detect_format("a.TXT") == "text" and detect_format("b.md") == "text"
    assert detect_format("c.jsonl") == "jsonl" and detect_format("d.csv") == "csv"
    assert detect_format("e.log", "jsonl") == "jsonl" and detect_format("x.csv", "trace") == "trace"
    for path, kind in (("e.log", None), ("noext", None), ("a.txt", "xml"), ("a.txt", 3)):
        with pytest.raises(InvalidArgument):
            detect_format(path, kind)


def test_indices_align_with_values_or_raise() -> None:
    assert list(iter_with_indices("ab", None)) == [(0, 1, "a"), (1, 2, "b")]
    assert list(iter_with_indices("ab", [4, 9])) == [(4, 4, "a"), (9, 9, "b")]
    with pytest.raises(InvalidArgument, match="fewer"):
        list(iter_with_indices("ab", [1]))
    with pytest.raises(InvalidArgument, match="indices"):
        list(iter_with_indices("a", [True]))


@given(
    st.text(max_size=8),
    st.text(max_size=8),
    st.integers(0, 10**6),
    st.text(max_size=8),
    st.text(max_size=8),
    st.integers(0, 10**6),
)
def test_stable_ids_are_deterministic_and_distinct(s1: str, src1: str, p1: int, s2: str, src2: str, p2: int) -> None:
    a, b = stable_id(s1, src1, p1), stable_id(s2, src2, p2)
    assert a == stable_id(s1, src1, p1) and len(a) == 32 and int(a, 16) >= 0
    assert (a == b) == ((s1, src1, p1) == (s2, src2, p2))


def test_receipt_is_a_list_and_merge_keeps_both_sides_failures() -> None:
    left = IngestReceipt(["a"], failed=[{"source": "f", "line": 2, "reason": "x"}], revised=["a"], position=3)
    right = IngestReceipt(["b"], failed=[{"source": "f", "line": 5, "reason": "y"}], position=7)
    merged = left.merge(right)
    assert merged == ["a", "b"] and isinstance(merged, list)
    assert [f["line"] for f in merged.failed] == [2, 5]
    assert merged.revised == ["a"] and merged.n_new == 1 and merged.position == 7
    assert left.failed == [{"source": "f", "line": 2, "reason": "x"}]  # merge never mutates its inputs
    assert merged.as_dict()["failed"] == 2


@given(st.floats(0, 1e6, allow_nan=False), st.sampled_from(["", "s", "m", "h", "d", "w"]))
def test_durations_parse_with_units(n: float, unit: str) -> None:
    text = f"{n:.3f}{unit}"
    factor = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit]
    assert parse_duration(text) == pytest.approx(float(f"{n:.3f}") * factor)


@pytest.mark.parametrize("bad", ["", "-1", "1y", "nan", "inf", "1 2"])
def test_bad_durations_are_rejected(bad: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(bad)
