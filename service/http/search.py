"""Read routes over the caller's readable scopes: search, retrieve, context and ask."""

from __future__ import annotations

from fastapi import APIRouter

from service.http.auth import Caller, CallerDep
from service.http.items import AsOf, item_out
from service.http.searchmodels import (
    AnswerOut,
    AskIn,
    ContextIn,
    ContextOut,
    Hit,
    RetrieveIn,
    RetrieveOut,
    SearchIn,
    SearchOut,
)
from service.http.views import ScopedReader, read_view
from service.retrieval.context import ContextBudget, assemble_context
from service.retrieval.grounded import ask as grounded_ask
from service.retrieval.packet import render_packet
from service.retrieval.retrieve import retrieve

__all__ = ["router"]

router = APIRouter(tags=["search"])


def _reader(caller: Caller, view: object, scope: str | None) -> ScopedReader:
    """The view through the caller's readable scopes (404 for a requested scope it cannot read)."""
    if scope is not None:
        caller.require_read(scope, f"scope {scope!r}")
    return ScopedReader(view, [scope] if scope is not None else caller.readable)  # type: ignore[arg-type]


@router.post("/search", response_model=SearchOut, summary="Search the caller's readable scopes")
def search(caller: CallerDep, body: SearchIn, as_of: AsOf = None) -> SearchOut:
    """The k best hits, best first; without ``scope``, every readable scope is searched on its own index and merged."""
    with read_view(caller.live, as_of) as (view, seq):
        hits = _reader(caller, view, body.scope).search(body.query, k=body.k, kind=body.kind)
    return SearchOut(hits=[Hit(item=item_out(i), score=s) for i, s in hits], as_of=seq)


@router.post("/retrieve", response_model=RetrieveOut, summary="Cross-kind retrieval")
def retrieve_items(caller: CallerDep, body: RetrieveIn, as_of: AsOf = None) -> RetrieveOut:
    """Per-kind searches merged (diversified round-robin or flat), with validated per-kind weights."""
    with read_view(caller.live, as_of) as (view, seq):
        found = retrieve(
            _reader(caller, view, body.scope),
            body.query,
            k=body.k,
            kinds=list(body.kinds) if body.kinds is not None else None,
            weights={str(k): w for k, w in body.weights.items()} if body.weights is not None else None,
            diversify=body.diversify,
        )
    hits = [Hit(item=item_out(h.item), score=h.score) for h in found.hits]
    return RetrieveOut(query=found.query, hits=hits, kinds=found.kinds(), as_of=seq)


@router.post("/context", response_model=ContextOut, summary="A budgeted context packet")
def context(caller: CallerDep, body: ContextIn, as_of: AsOf = None) -> ContextOut:
    """The most relevant readable items packed so the rendering fits ``max_chars``.

    A ``max_chars`` too small for even the header ("# Context for: TASK") packs nothing: an empty text and a
    packet whose ``note`` says how many characters the header needs (a limit the document cannot state, as it
    depends on the task's length)."""
    budget = ContextBudget(max_chars=body.max_chars, max_items=body.max_items, shape=body.shape)
    need = len(render_packet(body.task, (), (), body.shape))
    with read_view(caller.live, as_of) as (view, seq):
        if need > body.max_chars:
            note = (
                f"max_chars={body.max_chars} cannot hold even the header for this task ({need} chars): nothing packed"
            )
            return ContextOut(text="", packet={"task": body.task, "n_items": 0, "note": note}, items=[], as_of=seq)
        packet = assemble_context(
            _reader(caller, view, body.scope), body.task, budget=budget, kind=body.kind, compress=body.compress
        )
    return ContextOut(
        text=packet.render(), packet=packet.as_dict(), items=[item_out(i) for i in packet.items], as_of=seq
    )


@router.post("/ask", response_model=AnswerOut, summary="Answer a question (extractive, cited)")
def ask(caller: CallerDep, body: AskIn, as_of: AsOf = None) -> AnswerOut:
    """The evidence sentences that support the question, each cited to its item; abstains when none clears
    ``min_confidence`` (a sentence's support: its item's calibrated score times the question terms it holds)."""
    budget = ContextBudget(max_chars=body.max_chars, max_items=body.k)
    with read_view(caller.live, as_of) as (view, seq):
        answer = grounded_ask(
            _reader(caller, view, body.scope),
            body.question,
            budget=budget,
            hops=body.hops,
            min_confidence=body.min_confidence,
        )
    return AnswerOut(**answer.as_dict(), as_of=seq)
