"""Crash safety: a writer SIGKILLed at random points, and the embedded PostgreSQL killed mid-write, lose nothing.

The long run is ``python bench/crash.py``; this is its short version (three writer kills, one postmaster kill).
"""

from __future__ import annotations

import logging
import random
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench import crash
from service import Substrate


@dataclass
class Crashed:
    rounds: list[crash.Round]
    final: dict[str, Any]
    ops: dict[str, crash.Op]
    root: Path
    recovery_messages: list[str]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crashed]:
    work = tmp_path_factory.mktemp("crash")
    root, journal = work / "store", work / "journal.json"
    rng, ops = random.Random(8), {}
    try:
        rounds = [crash.run_round(root, n, ops, journal, rng=rng, max_wait=0.8) for n in (1, 2, 3)]
        rounds.append(crash.run_round(root, 4, ops, journal, rng=rng, kill="postmaster", max_wait=0.5))
        # The next open is this process's: the embedded server restarts and PostgreSQL replays its WAL.
        messages: list[str] = []
        handler = _Collect(messages)
        logging.getLogger().addHandler(handler)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                store = Substrate(root=root)
        finally:
            logging.getLogger().removeHandler(handler)
        messages += [str(w.message) for w in caught]
        try:
            final = crash.check_store(store, ops)
        finally:
            store.close()
        yield Crashed(rounds, final, ops, root, messages)
    finally:
        crash.stop_server(root)


class _Collect(logging.Handler):
    def __init__(self, out: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        self.out.append(record.getMessage())


def test_every_reopen_after_a_sigkill_finds_an_intact_store(crashed: Crashed) -> None:
    # Each writer's first act is the full check of everything the earlier (killed) writers did.
    for r in crashed.rounds[1:]:
        assert r.check["ok"], r.check
    assert crashed.final["ok"], crashed.final
    assert sum(r.acked for r in crashed.rounds) >= 4


def test_every_acknowledged_write_is_present(crashed: Crashed) -> None:
    assert crashed.final["acked_items"] > 0
    assert crashed.final["missing_acked"] == []
    acked = [o for o in crashed.ops.values() if o.acked]
    assert {o.kind for o in acked} >= {"bulk", "put"}


def test_no_batch_is_half_applied(crashed: Crashed) -> None:
    assert crashed.final["half_applied"] == []
    # The killed call of every round is in the journal: begun, never acknowledged, all or nothing.
    assert sum(not o.acked for o in crashed.ops.values()) >= 1


def test_updates_are_gapless_and_none_acknowledged_is_lost(crashed: Crashed) -> None:
    counter = crashed.final["counter"]
    assert counter["ok"], counter
    assert counter["acked"] <= counter["stored"] <= counter["begun"]


def test_the_chain_verifies_and_read_models_equal_a_rebuild(crashed: Crashed) -> None:
    assert crashed.final["chain_ok"] and crashed.final["first_bad_seq"] is None
    assert crashed.final["read_models_match"]
    assert crashed.final["events"] >= crashed.final["acked_items"]


def test_killing_postgres_mid_write_is_recovered_by_the_next_open(crashed: Crashed) -> None:
    pg_round = crashed.rounds[-1]
    assert pg_round.kill == "postmaster" and pg_round.acked >= 1
    log = (crashed.root / "pgdata" / "log").read_text(errors="replace")
    assert "not properly shut down; automatic recovery in progress" in log  # WAL recovery really ran
    assert crashed.final["ok"], crashed.final


def test_the_open_after_a_postgres_crash_says_it_recovered(crashed: Crashed) -> None:
    assert any("unclean shutdown" in m.lower() for m in crashed.recovery_messages), crashed.recovery_messages
