"""``substrate ask`` answers from the store or abstains, citing what it used."""

from __future__ import annotations

import json
from pathlib import Path

from service import Substrate
from service.cli import main
from service.retrieval.extractive import extractive_answerer


def test_extractive_answerer_picks_supporting_sentences() -> None:
    ctx = "Paris is the capital of France. Bananas are yellow. The Seine flows through Paris."
    assert extractive_answerer("What is the capital of France?", ctx, max_sentences=1) == (
        "Paris is the capital of France."
    )
    assert extractive_answerer("quantum chromodynamics", ctx) == ""


def test_ask_prints_answer_confidence_and_citations(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "s")
    s = Substrate(root=root)
    doc = s.add("text", "Aspirin inhibits platelet aggregation. It is taken daily by many patients.")
    s.add("text", "The Eiffel tower is in Paris.")
    s.close()
    assert main(["ask", "What does aspirin inhibit?", "--root", root]) == 0
    out = capsys.readouterr().out
    assert "platelet aggregation" in out and "confidence:" in out and doc in out
    assert main(["ask", "What does aspirin inhibit?", "--root", root, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["abstained"] is False and any(c["id"] == doc for c in data["cited"])


def test_ask_abstains_on_an_empty_store(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["db", "upgrade", "--root", str(tmp_path / "empty")]) == 0
    assert main(["ask", "Anything?", "--root", str(tmp_path / "empty")]) == 0
    assert "abstained" in capsys.readouterr().out


def test_ask_json_cites_every_sentence_or_abstains_with_nothing_cited(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(tmp_path / "s")
    s = Substrate(root=root)
    aspirin = s.add("text", "Aspirin irreversibly inhibits platelet cyclooxygenase. It is taken daily.", scope="sci")
    statins = s.add("text", "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase.", scope="sci")
    s.close()
    assert main(["ask", "Who won the 2018 world cup?", "--root", root, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["abstained"] is True and off["answer"] is None
    assert off["citations"] == off["cited"] == off["sentences"] == []

    claim = "Aspirin irreversibly inhibits platelet cyclooxygenase."
    assert main(["ask", claim, "--root", root, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["abstained"] is False and out["answer"] == claim
    assert [(x["text"], x["item_id"]) for x in out["sentences"]] == [(claim, aspirin)]
    assert [c["id"] for c in out["cited"]] == [c["id"] for c in out["citations"]] == [aspirin] != [statins]

    assert main(["ask", claim, "--root", root]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{claim} [1]" and lines[2].startswith(f"  [1] text:{aspirin} (sci)")
