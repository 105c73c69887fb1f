"""HTTP benchmark: N concurrent clients on loopback, 80% search / 20% writes, beside the same work via the Python API.

Run: python bench/http.py [--seconds 60] [--clients 8] [--items 5000] [--write-ratio 0.2] [--no-write]
Seeds a persistent store with SciFact abstracts (synthetic passages when the data set is absent), runs
`substrate serve` on it as a separate process, drives it with httpx clients (one keep-alive connection per
client thread), then runs the identical mix through an in-process Substrate with the same thread count.
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# This file is named http.py: drop its own folder from the path so `import http` finds the standard library.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bench.results import replace_section  # noqa: E402
from service import Substrate, SubstrateItem, ingest_documents  # noqa: E402
from service.teams.tokens import create_token  # noqa: E402

BEGIN, END = "<!-- bench/http.py:begin -->", "<!-- bench/http.py:end -->"
SCIFACT = Path("/work/shared/data/scifact")
SCOPE = "bench"


def corpus(n: int) -> list[str]:
    path = SCIFACT / "corpus.jsonl"
    if path.exists():
        with open(path) as fh:
            rows = [json.loads(line) for _, line in zip(range(n), fh, strict=False)]
        return [f"{r['title']} {r['text']}"[:2000] for r in rows]
    return [f"passage {i} on topic {i % 97} about item {i * 7 % 1009} and its neighbours" for i in range(n)]


def queries() -> list[str]:
    path = SCIFACT / "queries-train.jsonl"
    if path.exists():
        with open(path) as fh:
            return [json.loads(line)["text"] for line in fh]
    return [f"topic {i} item {i * 3}" for i in range(200)]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def drive(
    clients: int, seconds: float, write_ratio: float, make_worker: Callable[[int], Callable[[str, str], None]]
) -> dict[str, Any]:
    """Run ``clients`` threads for ``seconds``; each picks search or write per op and records its latency."""
    qs = queries()
    lat: dict[str, list[float]] = {"search": [], "write": []}
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def run(n: int) -> None:
        rng = random.Random(n)
        op = make_worker(n)
        mine: dict[str, list[float]] = {"search": [], "write": []}
        start.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            kind = "write" if rng.random() < write_ratio else "search"
            arg = rng.choice(qs) if kind == "search" else f"note {n}-{rng.random():.6f}: {rng.choice(qs)}"
            t0 = time.perf_counter()
            try:
                op(kind, arg)
            except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
                with lock:
                    errors.append(f"{kind}: {exc}")
                continue
            mine[kind].append(time.perf_counter() - t0)
        with lock:
            for k, v in mine.items():
                lat[k].extend(v)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    total = len(lat["search"]) + len(lat["write"])
    out: dict[str, Any] = {
        "ops": total,
        "ops_per_s": total / elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
    }
    for k, v in lat.items():
        out[k] = {
            "n": len(v),
            "p50_ms": percentile(v, 0.5) * 1000,
            "p99_ms": percentile(v, 0.99) * 1000,
            "mean_ms": (statistics.fmean(v) * 1000) if v else float("nan"),
        }
    return out


def http_worker(url: str, token: str) -> Callable[[int], Callable[[str, str], None]]:
    def make(n: int) -> Callable[[str, str], None]:
        client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

        def op(kind: str, arg: str) -> None:
            if kind == "search":
                r = client.post("/v1/search", json={"query": arg, "k": 10, "scope": SCOPE})
            else:
                r = client.post("/v1/items", json={"kind": "text", "text": arg, "scope": SCOPE})
            r.raise_for_status()

        return op

    return make


def python_worker(store: Substrate) -> Callable[[int], Callable[[str, str], None]]:
    def make(n: int) -> Callable[[str, str], None]:
        handle = store.with_principal(SCOPE)

        def op(kind: str, arg: str) -> None:
            if kind == "search":
                handle.search(arg, k=10, scope=SCOPE)
            else:
                handle.put(SubstrateItem(kind="text", text=arg, scope=SCOPE))

        return op

    return make


def serve(root: str, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "SUBSTRATE_DATABASE_URL"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli.main",
            "serve",
            "--root",
            root,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("substrate serve did not become healthy")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def row(name: str, r: dict[str, Any]) -> str:
    s, w = r["search"], r["write"]
    return (
        f"| {name} | {r['ops_per_s']:,.0f} | {s['p50_ms']:.1f} | {s['p99_ms']:.1f} | {w['p50_ms']:.1f} | "
        f"{w['p99_ms']:.1f} | {r['ops']:,} | {r['errors']} |"
    )


def report(args: argparse.Namespace, n_items: int, results: dict[str, dict[str, Any]]) -> str:
    lines = [
        BEGIN,
        "## HTTP API (`bench/http.py`)",
        "",
        f"Command: `python -m bench.http --seconds {args.seconds:g} --clients {args.clients} --items {args.items} "
        f"--write-ratio {args.write_ratio:g}`",
        "",
        f"{args.clients} concurrent clients for {args.seconds:.0f} s each, {1 - args.write_ratio:.0%} search "
        f"(k=10, one scope) / {args.write_ratio:.0%} writes (one text item each), over {n_items:,} seeded SciFact "
        f"abstracts; {os.cpu_count()} CPUs, client, server and the embedded PostgreSQL on the same machine. "
        "HTTP: `substrate serve` (uvicorn, one process) on loopback, one keep-alive httpx connection per client. "
        "Python: the same mix through one in-process `Substrate` (a `with_principal` handle per thread).",
        "",
        "| path | ops/s | search p50 ms | search p99 ms | write p50 ms | write p99 ms | ops | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        row("HTTP", results["http"]),
        row("Python API", results["python"]),
        "",
        f"HTTP throughput is {results['http']['ops_per_s'] / results['python']['ops_per_s']:.0%} of the "
        "in-process throughput. The httpx clients, uvicorn and PostgreSQL share the same cores here; each HTTP "
        "request also authenticates its bearer token (one indexed query), checks scopes and goes through JSON "
        "and Pydantic both ways. With 20% writes most searches first apply the writes since the last search to the "
        "lazy search postings and fold the changed items into the domain's embedder (the write path itself only "
        "appends and projects the core read models).",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="duration of each run (default 60)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    ap.add_argument("--items", type=int, default=5000, help="items seeded before the runs (default 5000)")
    ap.add_argument("--write-ratio", type=float, default=0.2, help="fraction of operations that write (default 0.2)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update bench/RESULTS.md")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        root = str(Path(tmp) / "store")
        store = Substrate(root=root)
        texts = corpus(args.items)
        ingest_documents(store, texts, source="scifact", scope=SCOPE)
        store.search("warm up the index", k=10, scope=SCOPE)
        _, token = create_token(store, SCOPE)
        port = free_port()
        proc = serve(root, port)
        results: dict[str, dict[str, Any]] = {}
        try:
            print(f"HTTP: {args.clients} clients x {args.seconds:.0f} s ...", flush=True)
            results["http"] = drive(
                args.clients, args.seconds, args.write_ratio, http_worker(f"http://127.0.0.1:{port}", token)
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        print(f"Python API: {args.clients} threads x {args.seconds:.0f} s ...", flush=True)
        results["python"] = drive(args.clients, args.seconds, args.write_ratio, python_worker(store))
        store.close()
    section = report(args, len(texts), results)
    print(section)
    for name, r in results.items():
        if r["errors"]:
            print(f"{name}: {r['errors']} errors, first: {r['first_error']}", file=sys.stderr)
    if not args.no_write:
        replace_section(section, BEGIN, END)


if __name__ == "__main__":
    main()
