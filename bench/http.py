"""HTTP benchmark: Substrate beside a minimal FastAPI + psycopg peer, speed and quality read together.

Run: python -m bench.http --data DIR [--seconds 30] [--clients 8] [--workers 2] [--write-ratio 0.2] [--no-write]
DIR is a SciFact copy (corpus.jsonl, queries-train.jsonl, qrels-train.tsv); instead of --data, the environment
variable SCIFACT_DIR may name it.

Both services hold the SciFact corpus (5,183 abstracts, title + text) on the same embedded PostgreSQL and run as
separate uvicorn processes on loopback:
- Substrate: `substrate serve --workers W` over a persistent store (one scope, written through put_many);
- the peer (``peer_app`` below): one table with a stored ``tsvector`` (GIN) and a 256-dim hashed bag-of-words
  vector (HNSW, cosine); a search fuses the 50 best ``ts_rank_cd`` matches with the 50 nearest vectors
  (reciprocal rank fusion, k=60), with the query's terms OR-ed or AND-ed (``plainto_tsquery``).
Quality first: every judged train claim once through each service's HTTP search (k=10), nDCG@10 (graded gains,
log2 discount). Then throughput: C client threads (one keep-alive httpx connection each) for S seconds, read-only
and with a share of writes (one new text item each), with 1 and W server processes. Writes (replaces) its section of
bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# This file is named http.py: drop its own folder from the path so `import http` finds the standard library.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bench.results import replace_section  # noqa: E402

BEGIN, END = "<!-- bench/http.py:begin -->", "<!-- bench/http.py:end -->"
SCOPE = "bench"
DIM = 256
ROOT = Path(__file__).resolve().parent.parent
TARGET_OR, TARGET_AND = 3.0, 0.5  # Substrate's throughput over the OR-ed peer's, and over the AND-ed peer's


# ----------------------------------------------------------------------------------------------- the peer service
def _embed(texts: list[str]) -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    hv = HashingVectorizer(n_features=DIM, stop_words="english", alternate_sign=False, norm="l2")
    return hv.transform(texts).toarray().astype("float32")


_PEER_SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE peer_docs (id bigserial PRIMARY KEY, doc_id text, scope text NOT NULL, body text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED, emb vector({DIM}));
CREATE INDEX peer_docs_tsv ON peer_docs USING gin (tsv);
CREATE INDEX peer_docs_emb ON peer_docs USING hnsw (emb vector_cosine_ops);
"""
_TSQUERY = {
    "or": "replace(plainto_tsquery('english', %(q)s)::text, ' & ', ' | ')::tsquery",
    "and": "plainto_tsquery('english', %(q)s)",
}


def _peer_sql(mode: str) -> str:
    return f"""
WITH q AS (SELECT {_TSQUERY[mode]} AS tq),
lex AS (SELECT d.id, row_number() OVER (ORDER BY ts_rank_cd(d.tsv, q.tq) DESC) AS r FROM peer_docs d, q
        WHERE d.tsv @@ q.tq AND d.scope = %(scope)s ORDER BY ts_rank_cd(d.tsv, q.tq) DESC LIMIT 50),
vec AS (SELECT d.id, row_number() OVER (ORDER BY d.emb <=> %(v)s) AS r FROM peer_docs d WHERE d.scope = %(scope)s
        ORDER BY d.emb <=> %(v)s LIMIT 50)
SELECT d.doc_id, d.body, f.s FROM (SELECT id, sum(1.0 / (60 + r)) AS s FROM (SELECT * FROM lex UNION ALL
  SELECT * FROM vec) u GROUP BY id ORDER BY s DESC LIMIT %(k)s) f JOIN peer_docs d USING (id) ORDER BY f.s DESC"""


def peer_app() -> Any:
    """The peer's ASGI app (uvicorn --factory): POST /search {query, k, mode}, POST /items {text}; $PEER_DB_URL."""
    import psycopg
    from fastapi import FastAPI
    from pgvector.psycopg import register_vector

    url = os.environ["PEER_DB_URL"]
    local = threading.local()
    sql = {mode: _peer_sql(mode) for mode in _TSQUERY}
    app = FastAPI()

    def conn() -> Any:
        if getattr(local, "conn", None) is None:
            local.conn = psycopg.connect(url, autocommit=True)
            register_vector(local.conn)
        return local.conn

    @app.post("/search")
    def search(body: dict[str, Any]) -> dict[str, Any]:
        params = {"q": body["query"], "k": body.get("k", 10), "scope": SCOPE, "v": _embed([body["query"]])[0]}
        rows = conn().execute(sql[body.get("mode", "or")], params, prepare=True).fetchall()
        return {"hits": [{"doc_id": r[0], "text": r[1], "score": float(r[2])} for r in rows]}

    @app.post("/items", status_code=201)
    def add(body: dict[str, Any]) -> dict[str, Any]:
        row = (
            conn()
            .execute(
                "INSERT INTO peer_docs (scope, body, emb) VALUES (%s, %s, %s) RETURNING id",
                (SCOPE, body["text"], _embed([body["text"]])[0]),
            )
            .fetchone()
        )
        return {"id": str(row[0])}

    return app


def load_peer(url: str, docs: list[tuple[str, str]]) -> None:
    """Create the peer's table in the database at ``url`` and COPY the corpus in (then ANALYZE)."""
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in _PEER_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        register_vector(conn)
        vectors = _embed([text for _, text in docs])
        with (
            conn.cursor() as cur,
            cur.copy("COPY peer_docs (doc_id, scope, body, emb) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(["text", "text", "text", "vector"])
            for (doc_id, text), v in zip(docs, vectors, strict=True):
                cp.write_row((doc_id, SCOPE, text, v))
        conn.execute("ANALYZE peer_docs")


# ---------------------------------------------------------------------------------------------------- the data
def load_data(data: Path) -> tuple[list[tuple[str, str]], list[tuple[str, dict[str, int]]], list[str]]:
    """(doc id, text) of the corpus; (claim, judgements) of the judged train claims; every train claim."""
    docs = []
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        docs.append((str(r["_id"]), f"{r['title']} {r['text']}"))
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (data / "qrels-train.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, doc, score = line.split("\t")
        qrels[q][doc] = int(score)
    claims = [json.loads(line) for line in (data / "queries-train.jsonl").open(encoding="utf-8")]
    judged = [(c["text"], qrels[c["_id"]]) for c in claims if c["_id"] in qrels]
    return docs, judged, [c["text"] for c in claims]


def ndcg10(ranked: list[str], rel: dict[str, int]) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0


# ------------------------------------------------------------------------------------------------- the clients
Op = Callable[[str, str], None]


def substrate_client(url: str, token: str) -> Callable[[], tuple[Op, Callable[[str], list[str]]]]:
    def make() -> tuple[Op, Callable[[str], list[str]]]:
        client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120)

        def op(kind: str, arg: str) -> None:
            if kind == "search":
                r = client.post("/v1/search", json={"query": arg, "k": 10, "scope": SCOPE})
            else:
                r = client.post("/v1/items", json={"kind": "text", "text": arg, "scope": SCOPE})
            r.raise_for_status()

        def ranked(query: str) -> list[str]:
            r = client.post("/v1/search", json={"query": query, "k": 10, "scope": SCOPE})
            r.raise_for_status()
            return [str(h["item"]["payload"].get("doc_id")) for h in r.json()["hits"]]

        return op, ranked

    return make


def peer_client(url: str, mode: str) -> Callable[[], tuple[Op, Callable[[str], list[str]]]]:
    def make() -> tuple[Op, Callable[[str], list[str]]]:
        client = httpx.Client(base_url=url, timeout=120)

        def op(kind: str, arg: str) -> None:
            if kind == "search":
                r = client.post("/search", json={"query": arg, "k": 10, "mode": mode})
            else:
                r = client.post("/items", json={"text": arg})
            r.raise_for_status()

        def ranked(query: str) -> list[str]:
            r = client.post("/search", json={"query": query, "k": 10, "mode": mode})
            r.raise_for_status()
            return [str(h["doc_id"]) for h in r.json()["hits"]]

        return op, ranked

    return make


def quality(
    make: Callable[[], tuple[Op, Callable[[str], list[str]]]], judged: list[tuple[str, dict[str, int]]]
) -> float:
    """Mean nDCG@10 over the judged claims, each searched once (k=10) through the service's HTTP API."""
    _, ranked = make()
    return statistics.fmean(ndcg10(ranked(claim), rel) for claim, rel in judged)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def drive(
    make: Callable[[], tuple[Op, Any]], clients: int, seconds: float, write_ratio: float, claims: list[str]
) -> dict[str, Any]:
    """``clients`` threads for ``seconds``, each op a search (a random claim) or, with ``write_ratio``, a write."""
    lat: dict[str, list[float]] = {"search": [], "write": []}
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def run(n: int) -> None:
        rng = random.Random(n)
        op, _ = make()
        mine: dict[str, list[float]] = {"search": [], "write": []}
        for claim in rng.sample(claims, 5):  # untimed: connections open, every server process has started up
            op("search", claim)
        start.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            kind = "write" if rng.random() < write_ratio else "search"
            arg = rng.choice(claims) if kind == "search" else f"note {n}-{rng.random():.6f}: {rng.choice(claims)}"
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
    out: dict[str, Any] = {"ops_per_s": total / elapsed, "ops": total, "errors": len(errors)}
    out["first_error"] = errors[0] if errors else ""
    for k, v in lat.items():
        out[k] = {"p50_ms": percentile(v, 0.5) * 1000, "p99_ms": percentile(v, 0.99) * 1000}
    return out


# ------------------------------------------------------------------------------------------------- the servers
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(argv: list[str], port: int, health: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, cwd=ROOT, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{argv[:4]} exited {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}{health}", timeout=2).status_code < 500:
                return proc
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"{argv[:4]} did not answer in 180 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve_substrate(root: str, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SUBSTRATE_DATABASE_URL", "SUBSTRATE_READ_URL")}
    argv = [sys.executable, "-m", "service.cli", "serve", "--root", root, "--port", str(port)]
    argv += ["--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    return start(argv, port, "/healthz", env), f"http://127.0.0.1:{port}"


def serve_peer(db_url: str, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PEER_DB_URL": db_url}
    argv = [sys.executable, "-m", "uvicorn", "bench.http:peer_app", "--factory", "--port", str(port)]
    argv += ["--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    return start(argv, port, "/docs", env), f"http://127.0.0.1:{port}"


# ------------------------------------------------------------------------------------------------------ the run
def prepare(store: Any, docs: list[tuple[str, str]]) -> tuple[str, str]:
    """Fill the Substrate store and the peer's database (same embedded cluster); (token, peer database URL)."""
    import psycopg

    from service import SubstrateItem
    from service.store.embedded import embedded_server_url
    from service.teams.tokens import create_token

    store.put_many(
        SubstrateItem(kind="text", text=text, payload={"doc_id": doc_id}, scope=SCOPE) for doc_id, text in docs
    )
    store.reindex()  # the index and the embedder, before any timing (a search builds neither)
    _, token = create_token(store, SCOPE)
    server = embedded_server_url(str(Path(store.root).resolve() / "pgdata"))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CREATE DATABASE peer")
    peer_url = server.replace("/postgres?", "/peer?")
    load_peer(peer_url, docs)
    return token, peer_url


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("SCIFACT_DIR"), help="SciFact folder (default: $SCIFACT_DIR)")
    ap.add_argument("--seconds", type=float, default=30.0, help="duration of each throughput run (default 30)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    ap.add_argument("--workers", type=int, default=2, help="server processes of the multi-process runs (default 2)")
    ap.add_argument("--write-ratio", type=float, default=0.2, help="share of writes in the mixed runs (default 0.2)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update bench/RESULTS.md")
    args = ap.parse_args()
    if not args.data or not (Path(args.data) / "corpus.jsonl").is_file():
        raise SystemExit("give the SciFact folder: --data DIR or SCIFACT_DIR (corpus.jsonl, queries-train.jsonl, ...)")
    docs, judged, claims = load_data(Path(args.data))
    results: dict[tuple[str, int, float], dict[str, Any]] = {}
    ndcg: dict[str, float] = {}
    loads: list[float] = []  # the 1-minute load average after each run: other work on the machine shows here
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        root = str(Path(tmp) / "store")
        from service import Substrate

        keeper = Substrate(root=root)  # keeps the embedded cluster up between the server runs
        try:
            print(f"loading {len(docs):,} abstracts into both services ...", flush=True)
            token, peer_url = prepare(keeper, docs)
            for workers in sorted({1, args.workers}):
                sub, sub_url = serve_substrate(root, workers)
                peer, p_url = serve_peer(peer_url, workers)
                systems = {
                    "Substrate": substrate_client(sub_url, token),
                    "peer, OR-ed terms": peer_client(p_url, "or"),
                    "peer, AND-ed terms": peer_client(p_url, "and"),
                }
                try:
                    if not ndcg:
                        for name, make in systems.items():
                            print(f"nDCG@10 of {name} over {len(judged)} claims ...", flush=True)
                            ndcg[name] = quality(make, judged)
                    for ratio in (0.0, args.write_ratio):
                        for name, make in systems.items():
                            print(
                                f"{name}: {workers} process(es), {ratio:.0%} writes, {args.seconds:.0f} s", flush=True
                            )
                            results[(name, workers, ratio)] = drive(make, args.clients, args.seconds, ratio, claims)
                            loads.append(os.getloadavg()[0])
                finally:
                    stop(sub)
                    stop(peer)
        finally:
            keeper.close()
    section = report(args, len(docs), len(judged), results, ndcg, loads)
    print(section)
    for key, r in results.items():
        if r["errors"]:
            print(f"{key}: {r['errors']} errors, first: {r['first_error']}", file=sys.stderr)
    if not args.no_write:
        replace_section(section, BEGIN, END)


def report(
    args: argparse.Namespace,
    n_docs: int,
    n_judged: int,
    results: dict[tuple[str, int, float], dict[str, Any]],
    ndcg: dict[str, float],
    loads: list[float],
) -> str:
    lines = [
        BEGIN,
        "## HTTP API beside a plain PostgreSQL peer (`bench/http.py`)",
        "",
        f"Command: `python -m bench.http --data <SciFact> --seconds {args.seconds:g} --clients {args.clients} "
        f"--workers {args.workers} --write-ratio {args.write_ratio:g}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{n_docs:,} SciFact abstracts in one scope; {os.cpu_count()} CPUs shared by the clients, the servers and the "
        f"embedded PostgreSQL (1-minute load average after the runs: {min(loads, default=0):.1f}-"
        f"{max(loads, default=0):.1f}, other work included). {args.clients} client threads, one keep-alive "
        f"connection each, k=10 searches of random train claims; writes add one text item. The peer: FastAPI + "
        "psycopg over one table with a stored `tsvector` (GIN) and a hashed bag-of-words vector (HNSW), the 50 best "
        "`ts_rank_cd` matches fused with the 50 nearest vectors (RRF); its query terms OR-ed or AND-ed.",
        "",
        f"nDCG@10 over the {n_judged} judged train claims (each searched once over HTTP): "
        + ", ".join(f"{name} **{v:.3f}**" for name, v in ndcg.items())
        + ".",
        "",
        "| service | processes | writes | ops/s | search p50 ms | search p99 ms | write p50 ms | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (name, workers, ratio), r in results.items():
        w = f"{r['write']['p50_ms']:.1f}" if ratio else "-"
        lines.append(
            f"| {name} | {workers} | {ratio:.0%} | {r['ops_per_s']:,.0f} | {r['search']['p50_ms']:.1f} | "
            f"{r['search']['p99_ms']:.1f} | {w} | {r['errors']} |"
        )
    lines += [
        "",
        "Targets: Substrate's throughput at least 3x the OR-ed peer's and at least half the AND-ed peer's, "
        "at a better nDCG@10 than both.",
        "",
    ]
    lines += [
        "| processes | writes | Substrate / OR-ed peer | Substrate / AND-ed peer | met |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for (name, workers, ratio), r in results.items():
        if name != "Substrate":
            continue
        over_or = r["ops_per_s"] / results[("peer, OR-ed terms", workers, ratio)]["ops_per_s"]
        over_and = r["ops_per_s"] / results[("peer, AND-ed terms", workers, ratio)]["ops_per_s"]
        better = all(ndcg["Substrate"] > v for k, v in ndcg.items() if k != "Substrate")
        met = "yes" if over_or >= TARGET_OR and over_and >= TARGET_AND and better else "no"
        lines.append(f"| {workers} | {ratio:.0%} | {over_or:.2f}x | {over_and:.2f}x | {met} |")
    lines.append(END)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
