"""Time travel by query: reads as of a log position against the same reads of the live store, side by side.

A store of ``--items`` items (bulk put), of which a fifth are then updated and a fifth removed (and some of
those put again), so that positions fall before, between and after changes. At ``--positions`` random log
positions S, each read is timed as of S and live, alternately (``--reps`` times each, the median kept): ``get`` of
a random id, a list page of 100 from a random cursor, an item's history (its events and share history) and, with
``--search``, a search. Reported: the median over positions of each read as of S and live, and their ratio; the
database size before and after asking the positions (a read as of S must write nothing).

Run: python -m bench.timetravel [--items 50000] [--positions 50] [--reps 5] [--search] [--write]
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import text

from bench.results import replace_section
from service import Substrate, SubstrateItem
from service.teams.spaces import history

_BEGIN, _END = "<!-- bench/timetravel.py:begin -->", "<!-- bench/timetravel.py:end -->"
_WORDS = "apple pear orchard river stone cloud signal field trace graph record artifact memory lamp".split()
_SIZE = "SELECT pg_database_size(current_database()), (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'asof%')"


def _doc(rng: random.Random, n: int) -> str:
    return f"Document {n}: " + " ".join(rng.choice(_WORDS) for _ in range(12))


def _build(store: Substrate, n: int, rng: random.Random) -> list[str]:
    """n items in two scopes; a fifth updated (bulk), a fifth removed, a tenth of those put again."""
    ids = [f"item-{i:06d}" for i in range(n)]
    scopes = ("team-a", "team-b")
    store.put_many(
        [SubstrateItem(kind="text", text=_doc(rng, i), id=i_d, scope=scopes[i % 2]) for i, i_d in enumerate(ids)]
    )
    changed = rng.sample(ids, n // 5)
    store.put_many(
        [
            SubstrateItem(kind="text", text=_doc(rng, n + j) + " revised", id=i_d, scope=scopes[j % 2])
            for j, i_d in enumerate(changed)
        ]
    )
    gone = rng.sample(ids, n // 5)
    for i_d in gone:
        store.remove(i_d)
    store.put_many(
        [SubstrateItem(kind="text", text=_doc(rng, 2 * n + j), id=i_d) for j, i_d in enumerate(gone[: n // 50])]
    )
    return ids


def _reads(item_id: str, cursor: int, query: str, search: bool) -> dict[str, Callable[[Substrate, int | None], Any]]:
    """The reads timed at one position: each takes the handle (a view or the live store) and the view's position."""
    reads: dict[str, Callable[[Substrate, int | None], Any]] = {
        "get": lambda s, _u: s.get(item_id),
        "list page": lambda s, _u: s.page_items(after=cursor, limit=100),
        "history": lambda s, u: (list(s.events.read(stream=item_id, until=u)), history(s, item_id)),
    }
    if search:
        reads["search"] = lambda s, _u: s.search(query, k=10)
    return reads


def _timed(read: Callable[[], Any]) -> float:
    t = time.perf_counter()
    read()
    return time.perf_counter() - t


def _size(store: Substrate) -> tuple[int, int]:
    with store.engine.connect() as c:
        size, schemas = c.execute(text(_SIZE)).one()
    return int(size), int(schemas)


def run(items: int, positions: int, reps: int, search: bool, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    store = Substrate()
    t0 = time.perf_counter()
    ids = _build(store, items, rng)
    built = time.perf_counter() - t0
    if search:
        store.reindex()  # what the upkeep (substrate serve's background thread) has done by then: searches read it
    head = store.events.head()
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM ANALYZE"))  # what autovacuum would do next, not during the timings
    timings: dict[str, dict[str, list[float]]] = {
        k: {"as_of": [], "live": []} for k in ("get", "list page", "history", *(("search",) if search else ()))
    }
    before = _size(store)
    for _ in range(positions):
        at = rng.randint(1, head)
        view = store.as_of(at)
        item_id = rng.choice(ids)
        cursor = rng.randint(0, at)
        query = " ".join(rng.sample(_WORDS, 3))
        reads = _reads(item_id, cursor, query, search)
        for name, read in reads.items():
            past, live = functools.partial(read, view, at), functools.partial(read, store, None)
            past(), live()  # warm: the first run of a statement shape on a connection is planned
            # Alternately, so that the machine's drift hits both alike; the median of the repetitions.
            pairs = [(_timed(past), _timed(live)) for _ in range(reps)]
            timings[name]["as_of"].append(statistics.median(p for p, _ in pairs))
            timings[name]["live"].append(statistics.median(q for _, q in pairs))
    after = _size(store)
    with store.engine.connect() as c:
        footprint = dict(
            c.execute(
                text(
                    "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
                    "('items', 'item_states', 'revisions', 'events') AND relkind = 'r'"
                )
            ).all()
        )
    store.close()
    return {
        "items": items,
        "events": head,
        "built": built,
        "positions": positions,
        "reads": {
            k: {"as_of": statistics.median(v["as_of"]), "live": statistics.median(v["live"])}
            for k, v in timings.items()
        },
        "size_before": before,
        "size_after": after,
        "footprint": footprint,
    }


_TARGETS = {"get": 2.0, "list page": 2.0, "history": 2.0, "search": 3.0}


def _report(r: dict[str, Any], command: str) -> str:
    lines = [
        _BEGIN,
        "## Time travel by query (`bench/timetravel.py`)",
        "",
        f"Command: `{command}` ({datetime.now():%Y-%m-%d %H:%M}). {r['items']:,} items, a fifth updated and a fifth "
        f"removed ({r['events']:,} events; built in {r['built']:.0f} s); {r['positions']} random log positions, each "
        "read timed as of the position and live alternately (median of the repetitions), medians over positions:",
        "",
        "| read | as of S | live | ratio | target |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, t in r["reads"].items():
        ratio = t["as_of"] / t["live"]
        target = _TARGETS[name]
        lines.append(
            f"| {name} | {t['as_of'] * 1000:.2f} ms | {t['live'] * 1000:.2f} ms | {ratio:.2f}x | "
            f"{target:g}x ({'met' if ratio <= target else 'not met'}) |"
        )
    if "search" in r["reads"]:
        lines += ["", "A search as of S ranks lexically (docs/search.md); a live one also weighs the fitted embedding."]
    (b, bs), (a, as_) = r["size_before"], r["size_after"]
    fp = r["footprint"]
    lines += [
        "",
        f"Database size before the positions {b:,} bytes, after {a:,} ({(a - b) / r['positions']:,.0f} bytes per "
        f"position; time-travel schemas {bs} -> {as_}). The intervals' own footprint: item_states "
        f"{fp.get('item_states', 0) / 1e6:.1f} MB beside items {fp.get('items', 0) / 1e6:.1f} MB, revisions "
        f"{fp.get('revisions', 0) / 1e6:.1f} MB, events {fp.get('events', 0) / 1e6:.1f} MB.",
        _END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--positions", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--search", action="store_true", help="also time a search as of each position")
    ap.add_argument("--write", action="store_true", help="replace this script's section of bench/RESULTS.md")
    args = ap.parse_args()
    command = (
        "python -m bench.timetravel"
        + "".join(
            f" --{k.replace('_', '-')} {v}"
            for k, v in (("items", args.items), ("positions", args.positions), ("reps", args.reps))
        )
        + (" --search" if args.search else "")
    )
    report = _report(run(args.items, args.positions, args.reps, args.search), command)
    print(report)
    if args.write:
        replace_section(report + "\n", _BEGIN, _END)


if __name__ == "__main__":
    main()
