"""Tamper evidence: change one event of a few-thousand-event log (as the superuser, triggers off) and verify.

Each case edits one event (data, type, stream, principal, scope, version, prev, event_id), swaps two events'
order, deletes one, or edits one and recomputes its own address, commits, runs ``verify_store`` (what
``substrate verify`` runs), records whether it was caught and at which seq, then undoes the change and
checks the chain is intact again. Positions are random (plus the first and last event).

Run: python -m bench.tamper [--events 5000] [--per-kind 25] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import text

# kind -> what a verifier must report as the first bad seq, given the tampered seq s (and the head).
CHAIN_KINDS = ("data", "type", "stream", "principal", "scope", "version", "prev", "event_id", "swap", "delete")
_COLS = "seq, stream, version, type, data::text, principal, scope, recorded_at, event_id, prev, hash_version"


def build(store: Any, n: int, seed: int = 1) -> int:
    """Fill ``store`` with about ``n`` events: bulk puts across scopes and kinds, then single updates."""
    from service import SubstrateItem

    rng = random.Random(seed)
    bulk = max(1, n - n // 50)
    items = [
        SubstrateItem(
            kind=rng.choice(["text", "record"]),
            text=f"event {i} text {rng.random()}",
            scope=rng.choice(["alpha", "beta", "public"]),
            payload={"i": i},
        )
        for i in range(bulk)
    ]
    ids = store.put_many(items)
    for _ in range(n - bulk):
        store.update(rng.choice(ids), payload={"touched": rng.random()})
    return int(store.events.head())


@contextmanager
def _triggers_off(engine: Any) -> Iterator[Any]:
    # Immutability triggers are USER triggers: only an owner/superuser can switch them off, as an attacker would.
    with engine.begin() as c:
        c.execute(text("ALTER TABLE events DISABLE TRIGGER USER"))
        yield c
        c.execute(text("ALTER TABLE events ENABLE TRIGGER USER"))


def _row(engine: Any, seq: int) -> Any:
    with engine.connect() as c:
        return c.execute(text(f"SELECT {_COLS} FROM events WHERE seq = :s"), {"s": seq}).one()


_SET = {
    "data": "data = data || '{\"tampered\": true}'::jsonb",
    "type": "type = type || 'X'",
    "stream": "stream = stream || '~t'",
    "principal": "principal = principal || '~t'",
    "scope": "scope = coalesce(scope, '') || '~t'",
    "version": "version = version + 100000",
    "prev": "prev = 'sha256:' || md5(coalesce(prev, 'none')) || md5('x')",
    "event_id": "event_id = 'sha256:' || md5(event_id) || md5('y')",
}


def tamper(engine: Any, kind: str, seq: int, head: int, rng: random.Random) -> tuple[int, Callable[[], None]]:
    """Apply one tampering at ``seq``; return (the first bad seq a verifier must report, the undo)."""
    original = _row(engine, seq)
    if kind in _SET:
        with _triggers_off(engine) as c:
            c.execute(text(f"UPDATE events SET {_SET[kind]} WHERE seq = :s"), {"s": seq})
        return seq, lambda: _restore(engine, original)
    if kind == "swap":
        other = rng.choice([s for s in (seq - 1, seq + 1, rng.randint(1, head)) if 1 <= s <= head and s != seq])
        lo, hi = sorted((seq, other))
        _swap(engine, lo, hi)
        return lo, lambda: _swap(engine, lo, hi)
    if kind == "delete":
        with _triggers_off(engine) as c:
            c.execute(text("DELETE FROM events WHERE seq = :s"), {"s": seq})
        return seq, lambda: _reinsert(engine, original)
    if kind == "rehash":
        # An attacker who also recomputes the edited event's own address: the next link (or the head) breaks.
        from service.domain.events import StoredEvent, stored_address

        data = {**json.loads(original[4]), "tampered": True}
        new_id = stored_address(StoredEvent(*original[:4], data, *original[5:]))
        with _triggers_off(engine) as c:
            c.execute(
                text("UPDATE events SET data = CAST(:d AS jsonb), event_id = :e WHERE seq = :s"),
                {"d": json.dumps(data), "e": new_id, "s": seq},
            )
        return seq + 1, lambda: _restore(engine, original)
    if kind == "recorded_at":
        # Backdate one event to before its predecessor (seq stays put): time travel by timestamp would lie.
        seq = max(seq, 2)
        original = _row(engine, seq)
        with _triggers_off(engine) as c:
            c.execute(
                text(
                    "UPDATE events SET recorded_at = (SELECT recorded_at FROM events WHERE seq = :p) "
                    "- interval '1 hour' WHERE seq = :s"
                ),
                {"s": seq, "p": seq - 1},
            )
        return seq, lambda: _restore(engine, original)
    if kind == "redate":
        # Move one event's time without breaking the order: the first back and the last forward by a day (each has
        # a neighbour on one side only), any other to between its neighbours (or a microsecond on, when they are
        # one instant): the re-dating a time outside the address let through.
        when = original[7]
        if seq == 1:
            moved = when - timedelta(days=1)
        elif seq == head:
            moved = when + timedelta(days=1)
        else:
            before, after = (_row(engine, s)[7] for s in (seq - 1, seq + 1))
            moved = before + (after - before) / 2
            if moved == when:
                moved = when + timedelta(microseconds=1)
        with _triggers_off(engine) as c:
            c.execute(text("UPDATE events SET recorded_at = :t WHERE seq = :s"), {"t": moved, "s": seq})
        return seq, lambda: _restore(engine, original)
    raise ValueError(f"unknown tampering {kind!r}")


def _swap(engine: Any, lo: int, hi: int) -> None:
    with _triggers_off(engine) as c:
        c.execute(text("UPDATE events SET seq = -1 WHERE seq = :lo"), {"lo": lo})
        c.execute(text("UPDATE events SET seq = :lo WHERE seq = :hi"), {"lo": lo, "hi": hi})
        c.execute(text("UPDATE events SET seq = :hi WHERE seq = -1"), {"hi": hi})


def _restore(engine: Any, r: Any) -> None:
    with _triggers_off(engine) as c:
        c.execute(
            text(
                "UPDATE events SET stream = :stream, version = :version, type = :type, data = CAST(:data AS jsonb), "
                "principal = :principal, scope = :scope, recorded_at = :recorded_at, event_id = :event_id, prev = :prev, "
                "hash_version = :hash_version "
                "WHERE seq = :seq"
            ),
            _params(r),
        )


def _reinsert(engine: Any, r: Any) -> None:
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO events (seq, stream, version, type, data, principal, scope, recorded_at, event_id, prev, "
                "hash_version) VALUES (:seq, :stream, :version, :type, CAST(:data AS jsonb), :principal, :scope, "
                ":recorded_at, :event_id, :prev, :hash_version)"
            ),
            _params(r),
        )


def _params(r: Any) -> dict[str, Any]:
    keys = (
        "seq",
        "stream",
        "version",
        "type",
        "data",
        "principal",
        "scope",
        "recorded_at",
        "event_id",
        "prev",
        "hash_version",
    )
    return dict(zip(keys, r))


def positions(head: int, per_kind: int, rng: random.Random) -> list[int]:
    """The first and last event, then random ones."""
    picked = [1, head][:per_kind]
    while len(picked) < per_kind:
        picked.append(rng.randint(1, head))
    return picked


def run_tampers(store: Any, kinds: tuple[str, ...], per_kind: int, rng: random.Random) -> dict[str, Any]:
    """Try every kind at ``per_kind`` positions; each case is verified, undone, and the chain re-checked."""
    from service.store.audit import verify_store

    head = store.events.head()
    cases, caught, wrong, seconds = [], 0, [], 0.0
    for kind in kinds:
        for seq in positions(head, per_kind, rng):
            expected, undo = tamper(store.engine, kind, seq, head, rng)
            t0 = time.perf_counter()
            report = verify_store(store)
            seconds += time.perf_counter() - t0
            undo()
            restored = store.events.verify_chain()
            hit = not report.ok and report.first_bad_seq == expected
            caught += hit
            case = {
                "kind": kind,
                "seq": seq,
                "expected": expected,
                "reported": report.first_bad_seq,
                "ok": report.ok,
                "reason": report.reason,
                "restored_ok": restored.ok,
            }
            cases.append(case)
            if not hit or not restored.ok:
                wrong.append(case)
    return {
        "events": head,
        "cases": len(cases),
        "caught": caught,
        "missed_or_misplaced": wrong,
        "verify_seconds_mean": round(seconds / max(1, len(cases)), 3),
        "all": cases,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--per-kind", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    from service import Substrate
    from service.store.audit import verify_store

    rng = random.Random(args.seed)
    with Substrate() as store:
        build(store, args.events, args.seed)
        chain = run_tampers(store, CHAIN_KINDS, args.per_kind, rng)
        extra = run_tampers(store, ("rehash", "recorded_at", "redate"), args.per_kind, rng)
        final_ok = verify_store(store).ok
    tally: dict[str, list[int]] = {}
    for case in chain["all"] + extra["all"]:
        hit = not case["ok"] and case["reported"] == case["expected"]
        tally.setdefault(case["kind"], [0, 0])
        tally[case["kind"]][0] += hit
        tally[case["kind"]][1] += 1
    by_kind = {kind: f"{hit}/{tried}" for kind, (hit, tried) in tally.items()}
    summary = {
        "events": chain["events"],
        "chain_cases": chain["cases"],
        "chain_caught_at_first_bad_seq": chain["caught"],
        "by_kind_caught_of_tried": by_kind,
        "verify_seconds_mean": chain["verify_seconds_mean"],
        "misses": (chain["missed_or_misplaced"] + extra["missed_or_misplaced"])[:10],
        "final_verify_ok": final_ok,
    }
    print(json.dumps(summary, indent=2, default=str))
    return 0 if chain["caught"] == chain["cases"] and final_ok else 1


if __name__ == "__main__":
    sys.exit(main())
