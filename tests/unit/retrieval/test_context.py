"""Context packets: budgets, exact-fit packing, compression receipts, receivers, and the IC-13 bridges."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain.items import SubstrateItem
from service.retrieval.context import (
    GENERIC_KNOWLEDGE_SCHEMA,
    PROPERTY_GRAPH_SCHEMA,
    SIGNAL_SCHEMA,
    SPATIAL_MEDIA_SCHEMA,
    TYPED_TABLE_SCHEMA,
    ContextBudget,
    ContextPacket,
    ReceiverProfile,
    assemble_context,
    assemble_for_receivers,
    compress_text,
    substrate_item_to_knowledge_dict,
)
from tests.unit.fakes import FakeSubstrate, Recorder


class BrokenTelemetry:
    def record(self, kind, *, features, choice, outcome):
        raise RuntimeError("telemetry sink is down")


def _uid(prefix="i"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


LONG = (
    "The refund policy allows returns within 30 days of purchase. Shipping is free for orders over fifty dollars. "
    "Refunds for defective items are processed immediately with no restocking fee. Gift cards cannot be returned. "
    "Store hours are nine to five on weekdays."
)


def _shard():
    return FakeSubstrate(
        [
            SubstrateItem("text", LONG, id=_uid("doc"), provenance={"source": "faq.md"}),
            SubstrateItem("text", "refund requests need the original receipt", id=_uid("doc")),
            SubstrateItem("record", payload={"order": 7, "status": "refund issued"}, id=_uid("rec")),
            SubstrateItem("text", "the cafeteria serves soup on mondays", id=_uid("doc")),
        ]
    )


BAD_COUNTS = [0, -1, 1.5, True, "10", None]


@pytest.mark.parametrize("bad", BAD_COUNTS)
def test_budget_rejects_non_positive_or_non_int_sizes(bad):
    with pytest.raises(ValueError):
        ContextBudget(max_chars=bad)
    with pytest.raises(TypeError):
        ContextBudget(max_items=bad)


def test_budget_rejects_unknown_shape():
    with pytest.raises(ValueError):
        ContextBudget(shape="essay")


def test_receiver_profile_validates_at_construction_and_converts_to_budget():
    with pytest.raises(ValueError):
        ReceiverProfile("")
    with pytest.raises(ValueError):
        ReceiverProfile("student", max_chars=0)
    with pytest.raises(TypeError):
        ReceiverProfile("student", compress="yes")
    assert ReceiverProfile("lm", max_chars=500, max_items=3, shape="brief").to_budget() == ContextBudget(
        500, 3, "brief"
    )


@pytest.mark.parametrize("bad", BAD_COUNTS)
def test_compress_text_rejects_invalid_max_chars(bad):
    with pytest.raises(ValueError):
        compress_text(LONG, "refund", bad)


def test_compress_text_never_exceeds_max_chars_at_any_budget():
    for n in range(1, len(LONG) + 5):
        assert len(compress_text(LONG, "refund policy defective", n)) <= n


_WORDS = st.sampled_from(["refund", "policy", "soup", "the", "days", "receipt", "x", "état", "\u2603"])
_TEXT = st.lists(st.tuples(_WORDS, st.sampled_from([" ", ". ", "! ", "\n", ", "])), max_size=40).map(
    lambda parts: "".join(w + sep for w, sep in parts)
)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT, task=_TEXT, max_chars=st.integers(min_value=1, max_value=300))
def test_compress_text_fits_for_arbitrary_text(text, task, max_chars):
    out = compress_text(text, task, max_chars)
    assert len(out) <= max_chars
    if len(text) <= max_chars:
        assert out == text


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(_TEXT.filter(str.strip), min_size=1, max_size=6),
    extra=st.integers(min_value=0, max_value=400),
    max_items=st.integers(min_value=1, max_value=6),
    shape=st.sampled_from(["passages", "brief", "features"]),
    compress=st.booleans(),
)
def test_assembled_packet_fits_for_arbitrary_corpora(texts, extra, max_items, shape, compress):
    s = FakeSubstrate([SubstrateItem("text", t, id=f"d{i}") for i, t in enumerate(texts)])
    task = "refund policy receipt"
    header = len(ContextPacket(task, budget=ContextBudget(shape=shape)).render())
    budget = ContextBudget(max_chars=header + extra, max_items=max_items, shape=shape)
    p = assemble_context(s, task, budget=budget, compress=compress)
    assert p.used_chars <= budget.max_chars
    assert len(p.items) <= max_items
    hit_order = [it.id for it, _ in s.search(task, k=100)]
    assert [i.id for i in p.items] == [i for i in hit_order if i in {x.id for x in p.items}]


def test_compress_text_keeps_the_query_relevant_sentences():
    out = compress_text(LONG, "refund defective items", 140)
    assert "defective items" in out
    assert "Store hours" not in out
    assert compress_text("short text", "anything", 100) == "short text"


def test_packet_requires_aligned_items_scores_and_texts():
    item = SubstrateItem("text", "alpha", id=_uid())
    with pytest.raises(ValueError):
        ContextPacket("task", items=[item], scores=[])
    with pytest.raises(ValueError):
        ContextPacket("task", items=[item], scores=[1.0], texts=["a", "b"])
    with pytest.raises(ValueError):
        ContextPacket("task", items=[item], scores=[float("nan")])


def test_packet_is_immutable_and_used_chars_is_the_true_render_length():
    item = SubstrateItem("text", "alpha beta", id=_uid())
    p = ContextPacket("alpha", items=[item], scores=[0.5])
    assert p.texts == ("alpha beta",)  # default: the full surface
    assert p.used_chars == len(p.render())
    with pytest.raises(AttributeError):
        p.items = ()  # type: ignore[misc]
    assert p.preservation() == [1.0]
    assert p.compression_ratio == 1.0
    assert len(p) == 1


def test_structured_item_surface_is_its_payload():
    item = SubstrateItem("record", payload={"status": "refund issued"}, id=_uid())
    p = ContextPacket("refund", items=[item], scores=[1.0])
    assert "refund issued" in p.render()


@pytest.mark.parametrize("shape", ["passages", "brief", "features"])
@pytest.mark.parametrize("compress", [False, True])
def test_assembled_rendering_always_fits_the_budget(shape, compress):
    s = _shard()
    task = "refund policy for defective items"
    header = len(ContextPacket(task, budget=ContextBudget(shape=shape)).render())
    for max_chars in [header, header + 1, header + 5, header + 20, header + 60, header + 150, header + 400, 2000]:
        budget = ContextBudget(max_chars=max_chars, max_items=3, shape=shape)
        p = assemble_context(s, task, budget=budget, compress=compress)
        assert p.used_chars <= max_chars
        assert len(p.render()) == p.used_chars
        assert len(p.items) <= 3
        assert len(p.items) == len(p.scores) == len(p.texts)


def test_header_infeasible_budget_raises_before_any_search():
    s = _shard()
    with pytest.raises(ValueError):
        assemble_context(s, "refund policy", budget=ContextBudget(max_chars=5))
    assert s.searches == []


def test_small_feasible_budget_still_yields_the_top_item_shrunk():
    s = _shard()
    task = "refund policy returns purchase"
    header = len(ContextPacket(task).render())
    p = assemble_context(s, task, budget=ContextBudget(max_chars=header + 40))
    assert len(p.items) == 1
    assert p.used_chars <= header + 40
    assert len(p.texts[0]) < len(p.items[0].text)


def test_packing_follows_descending_relevance_and_the_item_cap():
    s = _shard()
    p = assemble_context(s, "refund receipt original", budget=ContextBudget(max_chars=5000, max_items=2))
    assert len(p.items) == 2
    assert list(p.scores) == sorted(p.scores, reverse=True)
    assert "receipt" in p.items[0].text
    assert p.n_candidates >= 2


def test_compression_keeps_more_sources_and_reports_preservation():
    s = _shard()
    task = "refund defective"
    budget = ContextBudget(max_chars=260, max_items=4)
    plain = assemble_context(s, task, budget=budget)
    squeezed = assemble_context(s, task, budget=budget, compress=True)
    assert len(squeezed.items) >= len(plain.items)
    assert squeezed.compressed
    assert squeezed.compression_ratio < 1.0
    assert all(0.0 <= v <= 1.0 for v in squeezed.preservation())


def test_kind_and_scope_are_passed_to_search():
    s = _shard()
    s.add("text", "refund in team scope", scope="team-a", id=_uid())
    p = assemble_context(s, "refund", kind="text", scope="team-a")
    assert {i.scope for i in p.items} == {"team-a"}
    assert s.searches[-1][2:] == ("text", "team-a")
    with pytest.raises(ValueError):
        assemble_context(s, "refund", kind="document")


def test_compress_flag_must_be_a_bool():
    with pytest.raises(TypeError):
        assemble_context(_shard(), "refund", compress="false")


def test_assemble_emits_a_context_event_and_survives_broken_telemetry():
    s = _shard()
    rec = Recorder()
    p = assemble_context(s, "refund", telemetry=rec)
    kind, features, choice, outcome = rec.events[-1]
    assert kind == "context"
    assert features["budget_chars"] == 2000
    assert choice == ",".join(i.id for i in p.items)
    assert outcome["used_chars"] == p.used_chars
    assert assemble_context(s, "refund", telemetry=BrokenTelemetry()).items


def test_receivers_get_different_renderings_keyed_by_name():
    s = _shard()
    packets = assemble_for_receivers(
        s,
        "refund policy defective",
        [
            ReceiverProfile("frontier_llm", max_chars=2000, shape="passages"),
            ReceiverProfile("local_student", max_chars=200, shape="features", compress=True),
        ],
    )
    assert set(packets) == {"frontier_llm", "local_student"}
    assert packets["local_student"].used_chars <= 200
    assert packets["frontier_llm"].render() != packets["local_student"].render()


def test_duplicate_receiver_names_are_rejected_before_any_work():
    s = _shard()
    rec = Recorder()
    with pytest.raises(ValueError):
        assemble_for_receivers(s, "refund", [ReceiverProfile("a"), ReceiverProfile("a", max_chars=100)], telemetry=rec)
    with pytest.raises(ValueError):
        assemble_for_receivers(s, "refund", [ReceiverProfile("a"), ReceiverProfile("b", max_chars=3)], telemetry=rec)
    assert s.searches == [] and rec.events == []


ITEM_KEYS = {
    "id",
    "kind",
    "modality",
    "schema_uri",
    "schema_version",
    "media_type",
    "content_hash",
    "payload",
    "artifact_ref",
    "text_surface",
    "provenance",
    "relations",
    "uncertainty",
    "metadata",
    "access",
    "revision",
    "supersedes",
    "created_at",
}


def test_item_bridge_emits_exactly_the_documented_keys_as_json():
    item = SubstrateItem(
        "graph", "a graph", payload={"nodes": [1, 2]}, links=["x1"], derived_from=["p1"], scope="team-a", id=_uid()
    )
    d = substrate_item_to_knowledge_dict(item)
    assert set(d) == ITEM_KEYS
    assert json.loads(json.dumps(d)) == d
    assert d["payload"] == {"nodes": [1, 2]}
    assert d["access"] == {"scope": "team", "teams": ["team-a"]}
    assert {"predicate": "related_to", "target_id": "x1"} in d["relations"]
    assert {"predicate": "derived_from", "target_id": "p1"} in d["relations"]
    assert re.fullmatch(r"[0-9a-f]{64}", d["content_hash"])


def test_item_bridge_moves_a_ref_pointer_to_artifact_ref_and_honours_schema_override():
    item = SubstrateItem("artifact", "model", payload={"ref": "/models/m1", "bbox": [0, 1]}, id=_uid())
    d = substrate_item_to_knowledge_dict(item)
    assert d["artifact_ref"] == "/models/m1"  # the spec: "that pointer becomes artifact_ref"
    assert d["payload"] == {"bbox": [0, 1]}
    only_ref = substrate_item_to_knowledge_dict(SubstrateItem("image", payload={"path": "s3://b/x.png"}, id=_uid()))
    assert only_ref["payload"] is None and only_ref["artifact_ref"] == "s3://b/x.png"
    assert substrate_item_to_knowledge_dict(item, schema_uri="urn:custom")["schema_uri"] == "urn:custom"
    table = SubstrateItem("record", payload={"columns": ["a"], "primary_key": ["a"]}, id=_uid())
    assert substrate_item_to_knowledge_dict(table)["schema_uri"] == TYPED_TABLE_SCHEMA
    defaults = {
        "graph": PROPERTY_GRAPH_SCHEMA,
        "image": SPATIAL_MEDIA_SCHEMA,
        "field": SPATIAL_MEDIA_SCHEMA,
        "signal": SIGNAL_SCHEMA,
        "text": GENERIC_KNOWLEDGE_SCHEMA,
    }
    for kind, schema in defaults.items():
        assert substrate_item_to_knowledge_dict(SubstrateItem(kind, "x", id=_uid()))["schema_uri"] == schema


def test_item_hash_covers_the_canonical_envelope_not_the_text():
    a = SubstrateItem("record", "one text", payload={"x": 1}, id=_uid())
    b = SubstrateItem("record", "other text", payload={"x": 1}, id=_uid())
    c = SubstrateItem("record", "one text", payload={"x": 2}, id=_uid())
    ha, hb, hc = (substrate_item_to_knowledge_dict(i)["content_hash"] for i in (a, b, c))
    assert ha == hb != hc
    with pytest.raises(TypeError):
        substrate_item_to_knowledge_dict(SubstrateItem("record", payload={"s": {1, 2}}, id=_uid()))


class _Receipt:
    def as_dict(self):
        return {"answer": "x", "grounded_fraction": 1.0}


def test_packet_knowledge_dict_keys_and_factuality():
    p = assemble_context(_shard(), "refund policy")
    d = p.to_knowledge_dict(id="pk1", project_id="proj", target_kind="llm", factuality=_Receipt())
    assert set(d) == {
        "id",
        "project_id",
        "task",
        "target_kind",
        "target_id",
        "token_budget",
        "byte_budget",
        "evidence_item_ids",
        "constraints",
        "citations",
        "expected_output_schema",
        "payload",
    }
    assert d["evidence_item_ids"] == [i.id for i in p.items]
    assert d["payload"]["rendered"] == p.render()
    assert d["payload"]["factuality"]["grounded_fraction"] == 1.0
    assert {"uri": "faq.md"} in d["citations"]
    assert json.loads(json.dumps(d)) == d
    with pytest.raises(ValueError):
        p.to_knowledge_dict(id="", project_id="proj", target_kind="llm")


def test_packet_bundle_dict_carries_each_items_canonical_form():
    s = FakeSubstrate([SubstrateItem("graph", "refund graph", payload={"edges": [[1, 2]]}, id=_uid())])
    p = assemble_context(s, "refund graph")
    d = p.to_knowledge_bundle_dict(id="b1", project_id="proj", target_kind="student", gaps=[{"what": "prices"}])
    assert set(d) == {
        "id",
        "project_id",
        "task",
        "target_kind",
        "target_id",
        "revision",
        "items",
        "gaps",
        "constraints",
        "citations",
        "expected_output_schema",
        "token_budget",
        "byte_budget",
        "lineage",
        "required_capability_ids",
        "handoff_policy",
        "continuation",
        "renderings",
    }
    assert d["items"][0]["payload"] == {"edges": [[1, 2]]}
    assert d["items"][0] == substrate_item_to_knowledge_dict(p.items[0])
    assert d["renderings"]["legacy_text"]["text"] == p.render()
    assert d["gaps"] == [{"what": "prices"}]
    assert json.loads(json.dumps(d)) == d


def test_packet_fields_equal_lists_yet_cannot_be_changed() -> None:
    empty = ContextPacket(task="t")
    assert empty.items == [] and empty.scores == [] and empty.texts == []
    item = SubstrateItem("text", "refunds take thirty days", id="r1")
    packet = ContextPacket(task="refunds", items=[item], scores=[0.5])
    assert packet.items == [item] and packet.scores == [0.5] and packet.texts == ["refunds take thirty days"]
    assert [0.5] == packet.scores and packet.scores != [0.4]
    with pytest.raises(AttributeError):
        packet.items.append(item)  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        packet.items = []  # type: ignore[misc]
