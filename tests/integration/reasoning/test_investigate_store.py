"""investigate() over a real store: retrieval carries a small store's partial match past the default floor."""

from __future__ import annotations

from service import Action, Substrate, investigate, retrieve_action


def _echo(question: str, context: str) -> str:
    return context


def test_a_broken_action_does_not_sink_an_investigation_retrieval_can_answer(store: Substrate) -> None:
    def boom(question: str) -> list[str]:
        raise RuntimeError("nope")

    store.add(kind="text", text="refunds within 30 days")
    actions = [Action("boom", "compute", run=boom, cost=1.0, description="refunds policy"), retrieve_action(store)]
    inv = investigate("refunds policy", actions, _echo)
    assert not inv.abstained and "refunds within 30 days" in str(inv.answer)
    failed = [s for s in inv.steps if s.failed]
    assert [s.action for s in failed] == ["boom"] and "nope" in failed[0].error
    assert inv.confidence >= 0.15


def test_an_unrelated_store_still_abstains(store: Substrate) -> None:
    store.add(kind="text", text="refunds within 30 days")
    inv = investigate("quantum chromodynamics lagrangian", [retrieve_action(store)], _echo)
    assert inv.abstained and inv.answer is None
