"""KG retrieval: link a question's entities, serve the (schema-valid) facts about them as typed evidence.

An ontology, when given, is one of: an object with ``filter_triples(triples, types) -> (kept, rejected)``;
an object with ``check_triple(head, relation, tail, types) -> reasons`` (empty/None = valid); or a mapping
``relation -> (head_type | None, tail_type | None)`` where an unknown relation or a type mismatch rejects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from service.domain.validation import InvalidArgument, require_count
from service.reasoning.act import Action

__all__ = ["kg_action", "link_entities", "retrieve_triples"]

_WORD = re.compile(r"[a-z0-9]+")
_INVENTORY_PREFIX = "knowledge graph facts about"

Triple = tuple[Any, Any, Any]


def _norm(text: Any) -> str:
    return " ".join(_WORD.findall(str(text).lower()))


def _materialize_triples(triples: Any) -> tuple[Triple, ...]:
    """Consume ``triples`` exactly once into an immutable tuple of 3-tuples, rejecting any other arity (MXR-080-0253)."""
    if triples is None or isinstance(triples, (str, bytes)):
        raise InvalidArgument(f"triples must be an iterable of (head, relation, tail), got {triples!r}")
    out: list[Triple] = []
    for i, entry in enumerate(triples):
        if isinstance(entry, (str, bytes)):
            raise InvalidArgument(f"triples[{i}] must be a 3-tuple (head, relation, tail), got the string {entry!r}")
        try:
            tup = tuple(entry)
        except TypeError:
            raise InvalidArgument(f"triples[{i}] must be a 3-tuple (head, relation, tail), got {entry!r}") from None
        if len(tup) != 3:
            raise InvalidArgument(
                f"triples[{i}] must be a 3-tuple (head, relation, tail); got {len(tup)} element(s): {tup!r}"
            )
        out.append((tup[0], tup[1], tup[2]))
    return tuple(out)


def _inventory(triples: tuple[Triple, ...]) -> list[str]:
    return sorted({str(h) for h, _, _ in triples} | {str(t) for _, _, t in triples})


def link_entities(question: str, entities: Any) -> list[str]:
    """The entities whose normalized name is a token span of ``question``, in match order: longest name first,
    names of one length in the order given."""
    claimed = f" {_norm(question)} "
    names = {str(e): _norm(e) for e in entities}
    linked: list[str] = []
    for entity, name in sorted(names.items(), key=lambda kv: -len(kv[1])):
        span = f" {name} "
        if name and span in claimed:
            linked.append(entity)
            # A matched span cannot also link a shorter entity inside it ("new york city" vs "york").
            claimed = claimed.replace(span, " \x00 ")
    return linked


def _mapping_reasons(schema: Mapping[Any, Any], triple: Triple, types: Mapping[str, str]) -> list[str]:
    head, relation, tail = triple
    if relation not in schema:
        return [f"unknown relation {relation!r}"]
    want_head, want_tail = schema[relation]
    reasons = []
    for role, entity, want in (("head", head, want_head), ("tail", tail, want_tail)):
        got = types.get(str(entity))
        if want is not None and got != want:
            got_text = "is untyped" if got is None else f"has type {got!r}"
            reasons.append(f"{role} {entity!r} {got_text}; relation {relation!r} needs {want!r}")
    return reasons


def _filter(ontology: Any, hits: list[Triple], types: Mapping[str, str]) -> tuple[list[Triple], list[dict[str, Any]]]:
    if callable(getattr(ontology, "filter_triples", None)):
        kept, rejected = ontology.filter_triples(hits, dict(types))
        return [tuple(t) for t in kept], [r if isinstance(r, dict) else {"triple": r, "reasons": []} for r in rejected]
    if callable(getattr(ontology, "check_triple", None)):
        reasons_of = lambda t: ontology.check_triple(*t, dict(types))  # noqa: E731
    elif isinstance(ontology, Mapping):
        reasons_of = lambda t: _mapping_reasons(ontology, t, types)  # noqa: E731
    else:
        raise InvalidArgument(
            f"ontology must have filter_triples/check_triple or be a relation mapping, got {ontology!r}"
        )
    kept_list: list[Triple] = []
    rejected_list: list[dict[str, Any]] = []
    for triple in hits:
        reasons = reasons_of(triple)
        reasons = [reasons] if isinstance(reasons, str) else list(reasons or [])
        if reasons:
            rejected_list.append({"triple": triple, "reasons": [str(r) for r in reasons]})
        else:
            kept_list.append(triple)
    return kept_list, rejected_list


def _retrieve(triples: tuple[Triple, ...], question: str, ontology: Any, types: Any, k: int) -> dict[str, Any]:
    linked = link_entities(question, _inventory(triples))
    wanted = set(linked)
    hits = [t for t in triples if str(t[0]) in wanted or str(t[2]) in wanted]
    rejected: list[dict[str, Any]] = []
    if ontology is not None:
        hits, rejected = _filter(ontology, hits, types or {})
    return {"entities": linked, "facts": hits[:k], "rejected": rejected}


def retrieve_triples(
    triples: Any, question: str, *, ontology: Any = None, types: dict[str, str] | None = None, k: int = 8
) -> dict[str, Any]:
    """``{entities, facts, rejected}``: up to ``k`` schema-valid facts touching a linked entity; rejects named."""
    k = require_count(k, "k")
    return _retrieve(_materialize_triples(triples), question, ontology, types, k)


def kg_action(
    triples: Any,
    *,
    ontology: Any = None,
    types: dict[str, str] | None = None,
    name: str = "kg",
    cost: float = 1.0,
    description: str = "",
    k: int = 8,
) -> Any:
    """A RETRIEVE action over a KG: one ``head relation tail`` fragment per fact, none when nothing links.

    ``triples`` is materialized once here (MXR-080-0253); the description carries the entity inventory,
    so a question naming a known entity scores.
    """
    k = require_count(k, "k")
    facts = _materialize_triples(triples)
    frozen_types = dict(types or {})
    desc = f"{description or _INVENTORY_PREFIX} {' '.join(_inventory(facts))}".strip()

    def _run(question: str) -> list[str]:
        found = _retrieve(facts, question, ontology, frozen_types, k)
        return [f"{h} {r} {t}" for h, r, t in found["facts"]]

    return Action(name=name, kind="retrieve", run=_run, cost=cost, description=desc, base_score=0.0)
