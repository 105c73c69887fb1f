"""Crash safety: SIGKILL a writer (or the embedded PostgreSQL) at random points, reopen, and check nothing is lost.

A writer process appends bulk batches (``put_many``), bulk ingests (``ingest_documents``), single puts and
updates to a persistent store (``Substrate(root=...)``), printing ``BEGIN`` before and ``ACK`` after each call
returns. The driver kills it at a random point (or kills the postmaster under it); the next writer's open
checks everything written so far: the chain verifies, every acknowledged write is present, no batch is
half-applied, the counter's updates are gapless, and the read models equal a rebuild.

Run: python -m bench.crash [--rounds 20] [--pg-every 5] [--seed 1] [--max-wait 2.0] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCOPE = "crash"
COUNTER = "crash-counter"
MAX_BULK = 1500  # below Substrate._BULK_CHUNK and ingest BATCH_SIZE: one call is one transaction
MAX_INGEST = 800


# ----------------------------------------------------------------- the journal of what the writer did
@dataclass
class Op:
    """One writer call: its kind (bulk, ingest, put, update), a unique tag, its size, and whether it was ACKed."""

    kind: str
    tag: str
    n: int
    acked: bool = False


def op_ids(op: Op) -> list[str]:
    """The item ids a write touches (known up front, so a half-applied batch is detectable)."""
    from service.ingest.batch import stable_id

    if op.kind == "bulk":
        return [f"{op.tag}-{j}" for j in range(op.n)]
    if op.kind == "ingest":
        return [stable_id(SCOPE, op.tag, j) for j in range(op.n)]
    if op.kind == "put":
        return [op.tag]
    return []


def load_journal(path: Path) -> dict[str, Op]:
    if not path.exists():
        return {}
    return {d["tag"]: Op(**d) for d in json.loads(path.read_text())}


def save_journal(path: Path, ops: dict[str, Op]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(o) for o in ops.values()]))
    os.replace(tmp, path)


# ----------------------------------------------------------------- the check
def check_store(store: Any, ops: dict[str, Op]) -> dict[str, Any]:
    """Everything the crash contract promises, measured on an open store: a JSON-able report with ``ok``."""
    from service.store.audit import verify_store

    audit = verify_store(store)
    missing, half, committed_unacked, acked_items = [], [], 0, 0
    for op in ops.values():
        ids = op_ids(op)
        if not ids:
            continue
        present = 0
        for start in range(0, len(ids), 2000):
            present += len(store.get_many(ids[start : start + 2000]))
        if present not in (0, len(ids)):
            half.append(f"{op.tag}: {present}/{len(ids)}")
        if op.acked:
            acked_items += len(ids)
            if present != len(ids):
                missing.append(op.tag)
        elif present == len(ids):
            committed_unacked += 1  # committed, killed before the ACK line: allowed
    counter = _check_counter(store, ops)
    ok = audit.ok and not missing and not half and counter["ok"]
    return {
        "ok": ok,
        "events": audit.events,
        "chain_ok": audit.first_bad_seq is None,
        "first_bad_seq": audit.first_bad_seq,
        "reason": audit.reason,
        "read_models_match": audit.ok,
        "ops": len(ops),
        "acked_ops": sum(o.acked for o in ops.values()),
        "acked_items": acked_items,
        "committed_unacked": committed_unacked,
        "missing_acked": missing,
        "half_applied": half,
        "counter": counter,
    }


def _check_counter(store: Any, ops: dict[str, Op]) -> dict[str, Any]:
    # The counter's updates set n = 1, 2, 3, ...: the log must hold exactly that gapless run, ending at or
    # after the last ACKed value and at or before the last attempted one.
    updates = [o for o in ops.values() if o.kind == "update"]
    acked = max((o.n for o in updates if o.acked), default=0)
    begun = max((o.n for o in updates), default=0)
    values = [e.data["item"]["payload"]["n"] for e in store.events.read(stream=COUNTER, types=["ItemUpdated"])]
    item = store.get(COUNTER)
    stored = item.payload["n"] if item is not None else 0
    ok = values == list(range(1, len(values) + 1)) and acked <= stored <= begun and stored == len(values)
    return {"ok": ok, "stored": stored, "acked": acked, "begun": begun, "updates_in_log": len(values)}


# ----------------------------------------------------------------- the writer process
def writer(root: str, round_no: int, seed: int, journal: Path) -> None:
    """Open the store, print the check of all earlier rounds, then write until killed."""
    from service import Substrate, SubstrateItem
    from service.ingest.sources import ingest_documents

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    store = Substrate(root=root)
    print("CHECK " + json.dumps(check_store(store, load_journal(journal))), flush=True)
    rng = random.Random(seed)

    def call(kind: str, tag: str, n: int, fn: Any) -> None:
        print(f"BEGIN {kind} {tag} {n}", flush=True)
        fn()
        print(f"ACK {tag}", flush=True)

    if store.get(COUNTER) is None:
        call(
            "put",
            COUNTER,
            1,
            lambda: store.put(SubstrateItem(kind="record", id=COUNTER, scope=SCOPE, payload={"n": 0})),
        )
    value = store.get(COUNTER).payload["n"]  # type: ignore[union-attr]
    for k in range(10**9):
        roll, tag = rng.random(), f"r{round_no}-{k}"
        if roll < 0.35:
            n = rng.randint(50, MAX_BULK)
            items = [
                SubstrateItem(kind="text", id=f"{tag}-{j}", scope=SCOPE, text=f"bulk {tag} row {j}", payload={"j": j})
                for j in range(n)
            ]
            call("bulk", tag, n, lambda items=items: store.put_many(items))
        elif roll < 0.55:
            n = rng.randint(20, MAX_INGEST)
            docs = [f"ingested {tag} line {j} about crash safety" for j in range(n)]

            def ingest(docs: list[str] = docs, tag: str = tag) -> None:
                receipt = ingest_documents(store, docs, source=tag, scope=SCOPE)
                assert not receipt.failed and len(receipt) == len(docs), receipt

            call("ingest", tag, n, ingest)
        elif roll < 0.85:
            call(
                "put",
                tag,
                1,
                lambda tag=tag: store.put(SubstrateItem(kind="text", id=tag, scope=SCOPE, text=f"single {tag}")),
            )
        else:
            value += 1
            call("update", f"u{value}", value, lambda v=value: store.update(COUNTER, payload={"n": v}))


# ----------------------------------------------------------------- the driver
@dataclass
class Round:
    """What one round saw: the writer's check of the store at open, its ACKs, and how it ended."""

    number: int
    kill: str
    check: dict[str, Any]
    begun: int = 0
    acked: int = 0
    stderr: str = ""
    seconds: float = 0.0
    recovery_reported: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def postmaster_pid(root: str | Path) -> int | None:
    """The embedded server's pid from ``<root>/pgdata/postmaster.pid`` (None when absent)."""
    pidfile = Path(root) / "pgdata" / "postmaster.pid"
    try:
        return int(pidfile.read_text().splitlines()[0])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_server(root: str | Path, timeout: float = 60.0) -> None:
    """Fast-shutdown the embedded server of ``root`` (killed writers never stop it themselves)."""
    pid = postmaster_pid(root)
    if pid is None or not _alive(pid):
        return
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def kill_postmaster(root: str | Path, timeout: float = 30.0) -> None:
    """SIGKILL the embedded postmaster of ``root`` and wait until its orphaned children are gone too."""
    import psutil

    pid = postmaster_pid(root)
    assert pid is not None and _alive(pid), f"no running postmaster for {root}"
    children = psutil.Process(pid).children()
    os.kill(pid, signal.SIGKILL)
    # Backends notice the postmaster's death and exit; a restart before that would find its shared memory in use.
    psutil.wait_procs(children, timeout=timeout)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SUBSTRATE_DATABASE_URL", None)
    return env


def run_round(
    root: str | Path,
    number: int,
    ops: dict[str, Op],
    journal: Path,
    *,
    rng: random.Random,
    kill: str = "writer",
    max_wait: float = 1.5,
    timeout: float = 180.0,
) -> Round:
    """Start a writer, let it write for a random time, then SIGKILL it (or its postmaster); fold its ACKs into ops."""
    save_journal(journal, ops)
    t0 = time.monotonic()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.crash",
            "writer",
            "--root",
            str(root),
            "--round",
            str(number),
            "--seed",
            str(rng.randrange(2**31)),
            "--journal",
            str(journal),
        ],
        stdout=subprocess.PIPE,
        stderr=err,
        cwd=REPO,
        env=_env(),
        text=True,
    )
    lines: list[str] = []
    first_ack = threading.Event()
    checked = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.endswith("\n"):
                break  # a line cut by the kill was never an acknowledgement
            lines.append(line.rstrip("\n"))
            if line.startswith("CHECK "):
                checked.set()
            elif line.startswith("ACK "):
                first_ack.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not first_ack.wait(timeout):
            raise RuntimeError(f"writer made no acknowledged write in {timeout}s")
        time.sleep(rng.uniform(0.0, max_wait))
        if kill == "postmaster":
            kill_postmaster(root)
            try:
                proc.wait(30)  # the writer fails on its lost connection
            except subprocess.TimeoutExpired:
                proc.kill()
        else:
            proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        reader.join(30)
    err.seek(0)
    stderr = err.read().decode("utf-8", "replace")
    err.close()
    check = next((json.loads(line[6:]) for line in lines if line.startswith("CHECK ")), None)
    if check is None:
        raise RuntimeError(f"writer printed no check; stderr:\n{stderr[-3000:]}")
    result = Round(
        number,
        kill,
        check,
        stderr=stderr,
        seconds=time.monotonic() - t0,
        recovery_reported="unclean shutdown" in stderr.lower(),
    )
    for line in lines:
        parts = line.split()
        if parts[0] == "BEGIN":
            ops[parts[2]] = Op(parts[1], parts[2], int(parts[3]))
            result.begun += 1
        elif parts[0] == "ACK":
            ops[parts[1]].acked = True
            result.acked += 1
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="role")
    w = sub.add_parser("writer", help="(internal) the writer process the driver kills")
    w.add_argument("--root", required=True)
    w.add_argument("--round", type=int, required=True)
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=20, help="writer rounds (each ends in a SIGKILL)")
    parser.add_argument("--pg-every", type=int, default=5, help="every Nth round kills the postmaster instead")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-wait", type=float, default=2.0, help="kill within this many seconds of the first ACK")
    parser.add_argument("--root", help="store directory (default: a fresh temp dir)")
    args = parser.parse_args(argv)
    if args.role == "writer":
        writer(args.root, args.round, args.seed, args.journal)
        return 0
    return _drive(args)


def _drive(args: argparse.Namespace) -> int:
    work = Path(args.root or tempfile.mkdtemp(prefix="substrate-crash-"))
    root, journal = work / "store", work / "journal.json"
    rng, ops, rounds = random.Random(args.seed), load_journal(journal), []
    t0 = time.monotonic()
    try:
        for n in range(1, args.rounds + 2):
            last = n == args.rounds + 1  # one more writer only to check the final state
            kill = "postmaster" if args.pg_every and n % args.pg_every == 0 else "writer"
            r = run_round(root, n, ops, journal, rng=rng, kill=kill, max_wait=0.0 if last else args.max_wait)
            if rounds:
                rounds[-1].extra["check_at_next_open"] = r.check
                rounds[-1].extra["next_open_reported_recovery"] = r.recovery_reported
            rounds.append(r)
            status = "ok" if r.check["ok"] else "FAILED"
            print(
                f"round {n:3d} ({r.kill:10s}) open-check {status}: events={r.check['events']} "
                f"acked_items={r.check['acked_items']} begun={r.begun} acked={r.acked} ({r.seconds:.1f}s)",
                flush=True,
            )
            if not r.check["ok"]:
                print(json.dumps(r.check, indent=2))
                return 1
    finally:
        stop_server(root)
    killed = rounds[:-1]
    pg = [r for r in killed if r.kill == "postmaster"]
    final = rounds[-1].check
    summary = {
        "rounds": len(killed),
        "writer_kills": len(killed) - len(pg),
        "postmaster_kills": len(pg),
        "recoveries_reported": sum(bool(r.extra.get("next_open_reported_recovery")) for r in pg),
        "checks_passed": sum(r.check["ok"] for r in rounds),
        "events": final["events"],
        "ops": final["ops"],
        "acked_ops": final["acked_ops"],
        "acked_items_checked": final["acked_items"],
        "committed_unacked_ops": final["committed_unacked"],
        "half_applied": len(final["half_applied"]),
        "missing_acked": len(final["missing_acked"]),
        "counter_updates": final["counter"]["updates_in_log"],
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
