"""``ask``'s abstention floor on SciFact: corpus claims answered (with a gold abstract cited) vs off-topic abstained.

Run: python -m bench.ask --data DIR (or $SUBSTRATE_SCIFACT) [--claims N] [--no-write]

Loads the abstracts into one scope as bench/retrieval_quality.py does, then asks the judged training claims and the
general-knowledge questions below (capitals, sports, cooking, films, geography: nothing a SciFact abstract answers)
through ``service.retrieval.grounded.ask`` at floor 0, so one run gives every candidate sentence's support; at
floor F a question is answered with its sentences whose support is >= F. For each floor: the share of claims
answered, the share of those whose cited items include an abstract the claim cites (qrels), and the share of
off-topic questions abstained. The floor picked is the one answering the most claims of the tuning half while at
least TARGET of the tuning off-topic questions abstain; the held-out claims and questions check it.
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.results import replace_section  # noqa: E402
from bench.retrieval_quality import SCOPE, load_store  # noqa: E402
from bench.scifact import add_data_option, corpus, data_dir, judged, split  # noqa: E402
from service import Substrate  # noqa: E402
from service.retrieval.grounded import DEFAULT_FLOOR, CitedSentence, GroundedAnswer, ask  # noqa: E402

OFF_TOPIC = [
    "What is the capital of France?",
    "What is the capital city of Australia?",
    "Which city is the capital of Canada?",
    "What is the capital of Japan?",
    "Who won the 2018 FIFA World Cup?",
    "How many players are on a basketball team on the court?",
    "Who holds the record for the most Wimbledon titles?",
    "How long is a marathon in kilometres?",
    "Which country has won the most Olympic gold medals in swimming?",
    "What is the offside rule in football?",
    "How do you make a French omelette?",
    "How long should pasta be boiled to be al dente?",
    "What temperature should bread be baked at?",
    "What are the ingredients of a classic margherita pizza?",
    "How do you make sourdough starter?",
    "Who directed the film Jaws?",
    "Which film won the Oscar for best picture in 1998?",
    "Who played the lead role in The Godfather?",
    "What is the plot of the movie Casablanca?",
    "Who composed the soundtrack of Star Wars?",
    "What is the longest river in Africa?",
    "How high is Mount Everest?",
    "Which ocean is the largest?",
    "What is the largest desert in the world?",
    "Which country has the most islands?",
    "When did the Roman Empire fall?",
    "Who was the first president of the United States?",
    "In which year did the Berlin Wall come down?",
    "Who wrote the novel Pride and Prejudice?",
    "Who painted the Mona Lisa?",
    "What language is spoken in Brazil?",
    "What is the currency of Switzerland?",
    "How many strings does a violin have?",
    "Who invented the telephone?",
    "What is the tallest building in the world?",
    "How do I change a flat tyre on a bicycle?",
    "What is the best time of year to visit Iceland?",
    "How many moons does Jupiter have?",
    "Which chess piece can only move diagonally?",
    "What does a sommelier do in a restaurant?",
]
# Written after the floor's first tuning, never used to pick it: a check that the floor is not fitted to the above.
HELD_OUT = [
    "What is the capital of Italy?",
    "Which team won the Super Bowl in 2020?",
    "How many minutes are in a football match?",
    "Who is the fastest sprinter in history?",
    "How do you cook risotto?",
    "What spices go into a curry?",
    "Who directed the film Titanic?",
    "Which actor played James Bond first?",
    "What is the smallest country in Europe?",
    "Which mountain range separates France and Spain?",
    "Who discovered America in 1492?",
    "What year did the First World War end?",
    "Who wrote Hamlet?",
    "How many keys does a piano have?",
    "What is the population of Tokyo?",
    "Which planet is closest to the sun?",
    "How do I tie a bow tie?",
    "What is the rule for castling in chess?",
    "Where is the Taj Mahal?",
    "What is the national dish of Spain?",
]
FLOORS = (0.2, 0.25, 0.3, 0.34, 0.36, 0.38, 0.4, 0.42, 0.45, 0.5)
TARGET = 0.95  # the share of off-topic questions that must abstain


def _answered(sentences: list[CitedSentence], floor: float) -> list[CitedSentence]:
    """The sentences ``ask`` would use at ``floor`` (it keeps its best ones that reach the floor)."""
    return [s for s in sentences if s.support > 0 and s.support >= floor]


def _claims(results: list[tuple[GroundedAnswer, set[str]]], floor: float) -> tuple[float, float]:
    """(share of claims answered, share of those whose cited items include an abstract the claim cites)."""
    cited = [{s.item_id for s in _answered(r.sentences, floor)} for r, _ in results]
    gold = [any(f"doc-{d}" in ids for d in docs) for ids, (_, docs) in zip(cited, results, strict=True) if ids]
    return len(gold) / len(results), (sum(gold) / len(gold) if gold else 0.0)


def _abstained(results: list[GroundedAnswer], floor: float) -> float:
    return sum(not _answered(r.sentences, floor) for r in results) / len(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--claims", type=int, default=0, help="ask only the first N judged claims of each half (0 = all)")
    ap.add_argument("--url", help="PostgreSQL URL (default: a fresh ephemeral database)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    data = data_dir(args.data)
    docs = corpus(data)
    claims, qrels = judged(data)
    halves = split(claims)
    if args.claims:
        halves = (halves[0][: args.claims], halves[1][: args.claims])

    store = Substrate(url=args.url) if args.url else Substrate()
    load_store(store, docs)
    t0 = time.perf_counter()

    def asked(questions: list[str]) -> list[GroundedAnswer]:
        return [ask(store, q, scope=SCOPE, min_confidence=0.0) for q in questions]

    tune, held = (
        [(r, set(qrels[c["_id"]])) for r, c in zip(asked([c["text"] for c in h]), h, strict=True)] for h in halves
    )
    off, off_held = asked(OFF_TOPIC), asked(HELD_OUT)
    per_ask = 1000 * (time.perf_counter() - t0) / (len(tune) + len(held) + len(off) + len(off_held))
    store.close()

    rows, pick = [], (-1.0, 0.0)
    for floor in sorted({*FLOORS, DEFAULT_FLOOR}):
        (a_tune, g_tune), (a_held, g_held) = _claims(tune, floor), _claims(held, floor)
        abst, abst_held = _abstained(off, floor), _abstained(off_held, floor)
        if abst >= TARGET:
            pick = max(pick, (a_tune, -floor))
        mark = " (default)" if floor == DEFAULT_FLOOR else ""
        rows.append(
            f"| {floor:.2f}{mark} | {100 * a_tune:.1f}% / {100 * a_held:.1f}% | {100 * g_tune:.1f}% / {100 * g_held:.1f}% "
            f"| {100 * abst:.1f}% / {100 * abst_held:.1f}% |"
        )
    top = sorted(max((s.support for s in r.sentences), default=0.0) for r in off)
    lines = [
        f"Judged SciFact training claims (tuning half {len(tune)}, held-out half {len(held)}, the halves of "
        f"bench/scifact.py) and general-knowledge questions (capitals, sports, cooking, films, geography; "
        f"{len(OFF_TOPIC)} to tune, {len(HELD_OUT)} held out; in the script) asked of {len(docs)} abstracts in one "
        f"scope; k=5 items in 2000 chars; {per_ask:.0f} ms per ask.",
        f"Best off-topic sentence support: median {statistics.median(top):.3f}, max {top[-1]:.3f}. Floor with the "
        f"most tuning claims answered while >= {100 * TARGET:.0f}% of the tuning off-topic questions abstain: "
        f"{-pick[1]:.2f}.",
        "",
        "| floor | claims answered (tuning / held out) | of those, a cited abstract is gold | off-topic abstained |",
        "| --- | --- | --- | --- |",
        *rows,
    ]
    print("\n".join(lines))
    if not args.no_write:
        begin, end = "<!-- bench/ask.py:begin -->", "<!-- bench/ask.py:end -->"
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
        head = [
            "## Ask: the abstention floor (bench/ask.py)",
            "",
            f"Command: `python -m bench.ask --data $SUBSTRATE_SCIFACT` ({stamp})",
            "",
        ]
        replace_section("\n".join([begin, *head, *lines, end]), begin, end)


if __name__ == "__main__":
    main()
