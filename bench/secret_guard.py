"""Secret guard speed: guard_item and detect_secrets, the anchored fast path beside the every-rule reference path.

Run: python bench/secret_guard.py [--clean 20000] [--dirty 2000] [--repeat 3] [--data SCIFACT_DIR] [--no-write]

Inputs, built deterministically: (a) clean realistic texts -- SciFact abstract sentences, lines of this repository's
Python source and templated config/env/JSON lines, keeping only those the reference path finds nothing in; (b)
texts with secrets -- every rule's test example (tests/unit/guard/test_security*.py) inside a SciFact sentence. Each
text is timed through detect_secrets(text), guard_item(item, "redact") (a kind="text" item with provenance and
a tag, every fourth with a small payload) and guard_data({"item": item.to_json()}, "redact") (an ItemPut event's
data, as the write door guards it), first in the reference mode (service.guard.secrets._reference_scan: every
rule on every string, deep copy then walk), then the fast path; best of --repeat passes, in this process's CPU
time (other work on a shared machine does not count, so the ratios hold under load). Every input's results
are compared (findings; the guarded item's JSON or the refusal): the disagreement count must be 0.
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, bench/ comes first on sys.path, where bench/http.py would shadow the standard library's
# ``http``: import from the repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.results import replace_section  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.guard.secrets import SecretPolicyError, _reference_scan, detect_secrets, guard_data, guard_item  # noqa: E402
from tests.unit.guard.test_security_speed_equivalence import POSITIVES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench/secret_guard.py:begin -->", "<!-- bench/secret_guard.py:end -->"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
_SENT = re.compile(r"(?<=[.!?])\s+")

_CONFIG = [
    "{name}_timeout = {n}",
    "max_{name}_tokens: {n}",
    "{NAME}_URL=https://{name}.example.org/api/v{d}/items?page={n}",
    "export PATH=/usr/local/{name}/bin:$PATH",
    '{{"name": "{name}", "port": {n}, "enabled": true, "tags": ["{name}", "v{d}"]}}',
    "  {name}:\n    image: registry.local/{name}:{d}.{n}\n    replicas: {d}",
    "[{name}]\nhost = {name}.internal\nport = {n}",
    "log_level: INFO  # {name} service, retries={d}",
    "password_min_length = {n}",
    "SELECT id, text FROM {name} WHERE scope = :scope AND seq > {n} ORDER BY seq LIMIT {d}",
    "{name}.{name}_ratio=0.{n}",
    "token_bucket_refill_per_second: {d}",
]
_NAMES = ["alpha", "billing", "search", "ingest", "cache", "worker", "gateway", "audit", "vectors", "replay"]


def _scifact_sentences(data: Path) -> list[str]:
    out: list[str] = []
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        out += [s for s in _SENT.split(doc["text"]) if s.strip()]
    return out


def _code_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "service").rglob("*.py")) + sorted((ROOT / "projections").rglob("*.py")):
        lines += [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if len(ln.strip()) >= 12]
    return lines


def _config_lines(n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        name = rng.choice(_NAMES)
        fields = {"name": name, "NAME": name.upper(), "n": rng.randint(1, 9999), "d": rng.randint(1, 9)}
        out.append(rng.choice(_CONFIG).format(**fields))
    return out


def corpora(n_clean: int, n_dirty: int, data: Path, seed: int = 11) -> tuple[list[str], list[str], int]:
    """The clean texts (70% SciFact, 15% code, 15% config), the texts with secrets, and how many candidates were
    dropped from the clean set because the reference path found something in them."""
    rng = random.Random(seed)
    sentences = _scifact_sentences(data)
    n_code = n_config = n_clean * 15 // 100
    candidates = (
        rng.sample(sentences, n_clean - n_code - n_config)
        + rng.sample(_code_lines(), n_code)
        + _config_lines(n_config, rng)
    )
    with _reference_scan():
        clean = [t for t in candidates if detect_secrets(t).clean]
    dropped = len(candidates) - len(clean)
    while len(clean) < n_clean:  # top up with more sentences (checked too) for any that were dropped
        extra = rng.choice(sentences)
        with _reference_scan():
            if detect_secrets(extra).clean:
                clean.append(extra)
    dirty = [f"{rng.choice(sentences)} {POSITIVES[i % len(POSITIVES)][1]}" for i in range(n_dirty)]
    return clean, dirty, dropped


def _item(i: int, text: str) -> SubstrateItem:
    payload = {"source": "bench", "doc": f"d{i}", "sentence": i % 7} if i % 4 == 0 else {}
    return SubstrateItem(
        kind="text",
        text=text,
        payload=payload,
        provenance={"source": "bench", "position": i},
        tags=["bench"],
        id=f"item-{i}",
        created_at=1.0,
    )


def _guard(item: SubstrateItem) -> Any:
    try:
        return guard_item(item, "redact")
    except SecretPolicyError as exc:
        return exc


def _guard_data(data: dict[str, Any]) -> Any:
    try:
        return guard_data(data, "redact")
    except SecretPolicyError as exc:
        return exc


def _comparable(result: Any) -> Any:
    if isinstance(result, SubstrateItem):
        return result.to_json()
    if isinstance(result, dict):  # guard_data's result
        return json.dumps(result, sort_keys=True)
    if isinstance(result, SecretPolicyError):
        return ("refused", str(result), result.rules, result.fields)
    return result.as_dict()  # a SecretScan


def _time(fn: Callable[[Any], Any], inputs: list[Any], repeat: int, reference: bool) -> tuple[float, list[Any]]:
    """Best-of-``repeat`` microseconds per call (results dropped as made), then every input's comparable result."""
    best = float("inf")
    with _reference_scan() if reference else contextlib.nullcontext():
        for _ in range(repeat):
            t0 = time.process_time()
            for x in inputs:
                fn(x)
            best = min(best, time.process_time() - t0)
        results = [_comparable(fn(x)) for x in inputs]
    return best / len(inputs) * 1e6, results


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    clean, dirty, dropped = corpora(args.clean, args.dirty, args.data)
    print(
        f"clean texts: {len(clean)} (dropped {dropped} candidates the reference path flagged); with secrets: {len(dirty)}"
    )
    rows = []
    for label, texts in (("clean", clean), ("with secrets", dirty)):
        items = [_item(i, t) for i, t in enumerate(texts)]
        # guard_data as the write door calls it: over an ItemPut event's data, the whole item.
        events = [{"item": item.to_json()} for item in items]
        for name, fn, inputs in (
            ("guard_item(redact)", _guard, items),
            ("guard_data(redact)", _guard_data, events),
            ("detect_secrets", detect_secrets, texts),
        ):
            ref_us, ref = _time(fn, inputs, args.repeat, reference=True)
            fast_us, fast = _time(fn, inputs, args.repeat, reference=False)
            disagree = sum(1 for a, b in zip(ref, fast, strict=True) if a != b)
            row = {
                "set": label,
                "fn": name,
                "n": len(inputs),
                "ref_us": ref_us,
                "fast_us": fast_us,
                "speedup": ref_us / fast_us,
                "disagree": disagree,
            }
            rows.append(row)
            print(
                f"{label:13s} {name:19s} n={len(inputs):6d}  reference {ref_us:8.1f} us  fast {fast_us:7.1f} us  "
                f"x{row['speedup']:.1f}  disagreements {disagree}"
            )
        print(f"{label:13s} guard_data / guard_item (fast path): {_data_ratio(rows, label):.2f}x")
    return rows


def _data_ratio(rows: list[dict[str, Any]], label: str) -> float:
    """guard_data's time over an item's whole data beside guard_item's on the same item (fast paths)."""
    by = {r["fn"]: r["fast_us"] for r in rows if r["set"] == label}
    return float(by["guard_data(redact)"] / by["guard_item(redact)"])


# What the rules catch, measured apart from this bench (the blind sets stay outside the repository, so this text
# is updated by hand when the rules change).
QUALITY = [
    "Detection (2026-12-04; five blind sets of credentials in realistic contexts and look-alikes, kept outside the "
    "repository: A 238/163 mixed contexts, B 325/142 scanner-fixture shapes after public scanners' rule sets, C "
    "118/135 and D 138/122 more contexts, E 152/112 written last and never tuned on). Recall before -> after this "
    "round's rules: A 0.882 -> 0.996, B 0.843 -> 0.988, C 0.898 -> 1.000, D 0.862 -> 0.986, **E 0.921 -> 0.954**; "
    "look-alikes flagged 5 -> 2 of 674 (D's Stripe documentation key sk_test_4eC39... and `password: hunter2`). A-D "
    "were tuned on; read blind, before their own misses were, C rose 0.898 -> 0.915 and D not at all, so E is the "
    "figure to quote. SciFact's 10,366 titles and abstracts: no finding; 20,000 files of installed packages: the "
    "same findings as before. Clean-text cost beside the previous rules (CPU time, 7,804 SciFact sentences and "
    "source lines, alternating runs): `detect_secrets` 15.3 -> 19.1 us.",
]


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> str:
    cmd = f"python bench/secret_guard.py --clean {args.clean} --dirty {args.dirty} --repeat {args.repeat}"
    lines = [
        BEGIN,
        "## Secret guard (`bench/secret_guard.py`)",
        "",
        f"Command: `{cmd}` ({time.strftime('%Y-%m-%d')}, 2 cores, other benchmarks possibly running; best of "
        f"{args.repeat} passes, in CPU time). Clean texts: 70% SciFact sentences, 15% lines of this repository's Python source, "
        "15% templated config/env/JSON/SQL lines, all checked clean by the reference path. Texts with secrets: every "
        "rule test example inside a SciFact sentence. Items: kind text, provenance, one tag, every fourth a 3-key "
        "payload.",
        "",
        "| texts | function | n | reference path (every rule) | fast path (anchors) | speed-up | disagreements |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | `{r['fn']}` | {r['n']:,} | {r['ref_us']:.1f} us | {r['fast_us']:.1f} us | "
            f"{r['speedup']:.1f}x | {r['disagree']} |"
        )
    lines += [
        "",
        "`guard_data` over an ItemPut event's data (the whole item: id, text, payload, provenance, tags, links, "
        "keys included) beside `guard_item` on the same item, fast paths: "
        f"{_data_ratio(rows, 'clean'):.2f}x on clean items, {_data_ratio(rows, 'with secrets'):.2f}x on items "
        "with secrets. On clean data it joins every string (NUL between them) and runs the anchor search once: no "
        "anchor can match across, or be hidden by, the join (`service.guard.rules._joinable`, checked at import).",
        "",
        "The reference path is `service.guard.secrets._reference_scan()`: every rule's regex on every string, and "
        "`item.copy()` before the walk. The fast path searches one combined regex of every rule's declared anchors "
        "(and the assignment keywords, in the reversed text) and runs only the rules whose anchors occur, each "
        "rule's anchors tried only where the combined regex matched; the assignment rule matches only just before "
        "the keyword-and-glue spots the reversed search found; a pattern whose top level holds a literal run "
        "(dckr_pat_, hooks.slack.com/) is skipped by a substring test when the text lacks it. (The reference path "
        "takes none of these shortcuts.) `guard_item` copies the item in the same pass that "
        "masks it. Equivalence is tested in "
        "`tests/unit/guard/test_security_speed_equivalence.py` (hypothesis, against the reference path).",
        "",
        "Before the prefilter (the guard as of commit 462d86b, loaded beside the new one, same inputs, best of 3, "
        "one-off run on 2026-11-29): `guard_item` 152.8 us clean / 535.3 us with secrets, `detect_secrets` 102.0 us "
        "/ 286.2 us per text; the fast path agreed with that code on every input too.",
        "",
        "Before those three shortcuts (commit 3e17318, one-off run on 2026-11-30): 13.8 us clean / 270.2 us with "
        "secrets for `guard_item`, 5.5 us / 183.9 us for `detect_secrets`. On 8,248 texts (the gitleaks-derived "
        "corpus and 2,500 files of installed packages, up to 30 kB each) `detect_secrets` now takes 5.3 s instead "
        "of 9.0 s, with the reference path's findings on every text.",
        "",
        *QUALITY,
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clean", type=int, default=20000, help="clean texts (default 20000)")
    ap.add_argument("--dirty", type=int, default=2000, help="texts with secrets (default 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="passes per measurement, best taken (default 3)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact directory (corpus.jsonl)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update bench/RESULTS.md")
    args = ap.parse_args()
    rows = run(args)
    section = report(args, rows)
    if not args.no_write:
        replace_section(section, BEGIN, END)
    if any(r["disagree"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
