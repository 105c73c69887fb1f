"""Tamper evidence: any single changed, reordered or deleted event is reported with the first bad seq.

The long run is ``python bench/tamper.py``; this is its short version on a few thousand events.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from bench import tamper as tk
from service import Substrate
from service.store.audit import verify_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def logged() -> Iterator[Substrate]:
    with Substrate() as store:
        tk.build(store, 3000, seed=8)
        assert verify_store(store).ok
        yield store


@pytest.mark.parametrize("kind", ["data", "type", "stream", "swap", "delete"])
def test_each_required_tampering_is_caught_at_the_first_bad_seq(logged: Substrate, kind: str) -> None:
    report = tk.run_tampers(logged, (kind,), 3, random.Random(kind))  # first, last and a random event
    assert report["cases"] == 3 and report["caught"] == 3, report["missed_or_misplaced"]
    assert all(case["restored_ok"] for case in report["all"])


def test_every_other_hashed_column_is_covered_too(logged: Substrate) -> None:
    kinds = ("principal", "scope", "version", "prev", "event_id")
    report = tk.run_tampers(logged, kinds, 1, random.Random(1))
    assert report["caught"] == report["cases"] == len(kinds), report["missed_or_misplaced"]


def test_recomputing_the_edited_events_address_breaks_the_next_link(logged: Substrate) -> None:
    report = tk.run_tampers(logged, ("rehash",), 2, random.Random(2))
    assert report["caught"] == report["cases"] == 2, report["missed_or_misplaced"]
    assert all("prev" in c["reason"] or "head" in c["reason"] for c in report["all"])


def test_a_tampered_read_model_is_reported_and_a_clean_store_verifies(logged: Substrate) -> None:
    with logged.engine.begin() as c:
        item_id, original = c.execute(text("SELECT id, text FROM items ORDER BY pos LIMIT 1")).one()
        c.execute(text("UPDATE items SET text = text || ' (edited)' WHERE id = :i"), {"i": item_id})
    try:
        report = verify_store(logged)
        assert not report.ok and report.first_bad_seq is None
        assert report.tables["items"]["match"] is False
    finally:
        with logged.engine.begin() as c:
            c.execute(text("UPDATE items SET text = :t WHERE id = :i"), {"t": original, "i": item_id})
    assert verify_store(logged).ok


def test_the_substrate_verify_command_names_the_first_bad_seq(logged: Substrate) -> None:
    head = logged.events.head()
    seq = random.Random(3).randint(2, head - 1)
    expected, undo = tk.tamper(logged.engine, "data", seq, head, random.Random(3))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", "verify", "--url", logged.url, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        undo()
    assert done.returncode == 1, done.stderr[-2000:]
    chain = json.loads(done.stdout)["chain"]
    assert chain["ok"] is False and chain["first_bad_seq"] == expected == seq
    assert logged.events.verify_chain().ok


def test_backdating_an_event_out_of_order_is_caught(logged: Substrate) -> None:
    report = tk.run_tampers(logged, ("recorded_at",), 1, random.Random(4))
    assert report["caught"] == 1, report["missed_or_misplaced"]


def test_moving_any_events_time_is_caught_even_between_its_neighbours(logged: Substrate) -> None:
    # First back a day, last forward a day, one in the middle to between its neighbours: no order is broken, so
    # only the address covering the time can tell.
    report = tk.run_tampers(logged, ("redate",), 3, random.Random(5))
    assert report["cases"] == 3 and report["caught"] == 3, report["missed_or_misplaced"]
    assert all("re-dated" in case["reason"] for case in report["all"])
    assert all(case["restored_ok"] for case in report["all"])


def test_the_substrate_verify_command_names_a_redated_event(logged: Substrate) -> None:
    head = logged.events.head()
    seq = head - 5  # among the single updates: its neighbours' times differ, and it moves between them
    expected, undo = tk.tamper(logged.engine, "redate", seq, head, random.Random(6))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", "verify", "--url", logged.url, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        undo()
    assert done.returncode == 1, done.stderr[-2000:]
    chain = json.loads(done.stdout)["chain"]
    assert chain["ok"] is False and chain["first_bad_seq"] == expected == seq
    assert "re-dated" in chain["reason"]
