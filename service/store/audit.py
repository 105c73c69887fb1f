"""Forensic verification: the chain, every content address, and live read models against a replay."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from projections.runner import live_digests, shadow_digests
from service.store.eventstore import EventStore

__all__ = ["VerifyReport", "verify_store"]


class HasLog(Protocol):
    """What verification needs of a store: its event log (a Substrate has one)."""

    @property
    def events(self) -> EventStore: ...


@dataclass
class VerifyReport:
    """Chain status plus, per read-model table, the live and the replayed digest."""

    ok: bool
    events: int
    first_bad_seq: int | None
    reason: str
    head: str | None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "chain": {
                "events": self.events,
                "ok": self.first_bad_seq is None,
                "first_bad_seq": self.first_bad_seq,
                "reason": self.reason,
                "head": self.head,
            },
            "projections": self.tables,
        }

    def summary(self) -> str:
        lines = []
        if self.first_bad_seq is not None:
            lines.append(f"BROKEN at seq {self.first_bad_seq}: {self.reason}")
        else:
            lines.append(f"chain intact: {self.events} events, head {self.head}")
        for name, t in sorted(self.tables.items()):
            mark = "ok " if t["match"] else "DIFF"
            lines.append(f"  {mark} {name:<16} {t['live_rows']:>10} rows  {t['live_digest']}")
        if self.first_bad_seq is None and not self.ok:
            lines.append("read models differ from a replay of the log: run `substrate replay` to rebuild them")
        return "\n".join(lines)


def verify_store(
    store: HasLog,
    *,
    progress: Callable[[int], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Re-walk the chain; if intact, replay into a shadow schema and compare every table's digest.

    ``on_phase`` is told when each phase starts: "chain" and "shadow" (their events so far go to ``progress``),
    "lazy" (the live search postings catch up), "digests" (of the live read models), then "shadow lazy" and
    "shadow digests" (the same two in the shadow schema).
    """
    tell = on_phase or (lambda _phase: None)
    tell("chain")
    chain = store.events.verify_chain(progress=progress)
    report = VerifyReport(chain.ok, chain.events, chain.first_bad_seq, chain.reason, chain.head)
    if not chain.ok:
        return report
    # The live digests come from one snapshot, and the shadow replays the log up to the position it describes:
    # events appended while verify runs are in neither (else a live store would always look tampered with).
    position, live_counts, live = live_digests(store.events.engine, on_phase=tell)
    if position > chain.events:  # appended since the walk began: walk them too, so all that is compared is walked
        chain = store.events.verify_chain(until=position, resume=chain)
        report = VerifyReport(chain.ok, chain.events, chain.first_bad_seq, chain.reason, chain.head)
        if not chain.ok:
            return report
    tell("shadow")
    _, shadow_counts, shadow = shadow_digests(
        store.events.engine, until=position, progress=progress, on_phase=lambda phase: tell(f"shadow {phase}")
    )
    for table in live:
        match = live[table] == shadow.get(table)
        report.tables[table] = {
            "live_rows": live_counts[table],
            "replayed_rows": shadow_counts.get(table),
            "live_digest": live[table],
            "replayed_digest": shadow.get(table),
            "match": match,
        }
        report.ok = report.ok and match
    return report
