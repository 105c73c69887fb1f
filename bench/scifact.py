"""The SciFact data the search benchmarks read: abstracts, training claims, judgements, passages, a fixed split.

The data set is not part of the repository: its folder (BEIR packaging: corpus.jsonl, queries-train.jsonl,
qrels-train.tsv) comes from ``--data`` or the environment variable SUBSTRATE_SCIFACT.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
from collections import defaultdict
from pathlib import Path

__all__ = ["ENV", "add_data_option", "claims", "corpus", "data_dir", "judged", "passages", "split"]

ENV = "SUBSTRATE_SCIFACT"
_SENT = re.compile(r"(?<=[.!?])\s+")


def add_data_option(ap: argparse.ArgumentParser) -> None:
    """``--data DIR`` (default: $SUBSTRATE_SCIFACT)."""
    ap.add_argument("--data", type=Path, default=None, help=f"SciFact folder (default: ${ENV})")


def data_dir(given: Path | None) -> Path:
    """The SciFact folder: ``given``, else $SUBSTRATE_SCIFACT; exits with a message when neither names one."""
    path = given if given is not None else (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if path is None or not (path / "corpus.jsonl").is_file():
        raise SystemExit(f"SciFact data not found: pass --data DIR or set {ENV} (a folder with corpus.jsonl)")
    return path


def corpus(data: Path) -> list[dict[str, str]]:
    """Every abstract: ``{"_id", "title", "text"}``."""
    return [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]


def claims(data: Path) -> list[dict[str, str]]:
    """Every training claim: ``{"_id", "text"}``."""
    return [json.loads(line) for line in (data / "queries-train.jsonl").open(encoding="utf-8")]


def judged(data: Path) -> tuple[list[dict[str, str]], dict[str, dict[str, int]]]:
    """The training claims that have judgements, and the judgements (claim id -> doc id -> grade)."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (data / "qrels-train.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, doc, score = line.split("\t")
        qrels[q][doc] = int(score)
    return [q for q in claims(data) if q["_id"] in qrels], dict(qrels)


def split(items: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A fixed half/half split by a hash of each claim's id: (tuning half, held-out half)."""
    tune, held = [], []
    for q in items:
        (tune if hashlib.sha256(q["_id"].encode()).digest()[0] % 2 == 0 else held).append(q)
    return tune, held


def passages(n: int, data: Path, seed: int = 7) -> list[str]:
    """n distinct passages (an abstract's title + 2-5 consecutive sentences), deterministic: SciFact-like text."""
    split_docs = [(d["title"], [s for s in _SENT.split(d["text"]) if s.strip()]) for d in corpus(data)]
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    for _ in range(50 * n):
        if len(out) == n:
            break
        title, sents = rng.choice(split_docs)
        w = rng.randint(2, 5)
        start = rng.randrange(max(1, len(sents) - w + 1))
        passage = " ".join([title, *sents[start : start + w]])
        if passage not in seen:
            seen.add(passage)
            out.append(passage)
    return out
