"""IC-13 bridge: items and packets as plain, JSON-native KnowledgeItem/ContextPacket/KnowledgeBundle dicts."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

from service.domain.items import DEFAULT_SCOPE, SubstrateItem
from service.domain.validation import InvalidArgument, require_name

__all__ = [
    "GENERIC_KNOWLEDGE_SCHEMA",
    "GENERIC_SCHEMA",
    "PROPERTY_GRAPH_SCHEMA",
    "SCHEMA_VERSION",
    "SIGNAL_SCHEMA",
    "SPATIAL_MEDIA_SCHEMA",
    "TYPED_TABLE_SCHEMA",
    "canonical_json",
    "packet_bundle_dict",
    "packet_knowledge_dict",
    "source_ref",
    "substrate_item_to_knowledge_dict",
]

SCHEMA_VERSION = "1.0.0"
# The schema URIs schema_uri defaults to, by kind (and a typed-table record's shape).
GENERIC_SCHEMA = GENERIC_KNOWLEDGE_SCHEMA = "substrate://schema/substrate-item/1"
PROPERTY_GRAPH_SCHEMA = "substrate://schema/property-graph/1"
TYPED_TABLE_SCHEMA = "substrate://schema/typed-table/1"
SPATIAL_MEDIA_SCHEMA = "substrate://schema/spatial-media/1"
SIGNAL_SCHEMA = "substrate://schema/signal/1"
_SCHEMA_BY_KIND = {
    "graph": PROPERTY_GRAPH_SCHEMA,
    "image": SPATIAL_MEDIA_SCHEMA,
    "field": SPATIAL_MEDIA_SCHEMA,
    "signal": SIGNAL_SCHEMA,
}

# substrate kind -> (IC-13 resource kind, IC-13 modality); an unmapped kind degrades to a generic pair.
_RESOURCE = {
    "text": ("document", "text"),
    "record": ("table", "table"),
    "image": ("image", "image"),
    "signal": ("timeseries", "timeseries"),
    "graph": ("artifact", "graph"),
    "field": ("geospatial_layer", "raster"),
    "event_stream": ("dataset", "timeseries"),
    "artifact": ("artifact", "structured"),
    "trace": ("trace", "structured"),
    "context": ("context_packet", "structured"),
}


def _canonical(value: Any, path: str = "$") -> Any:
    # MXR-080-0238: a closed schema. A set has no order, a Path collides with its str, and a repr embeds
    # memory addresses, so anything outside JSON's own types is rejected rather than stringified.
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(f"{path}: non-finite float {value!r} has no canonical JSON form")
        return value
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgument(f"{path}: canonical JSON keys must be str, got {k!r}")
            out[k] = _canonical(v, f"{path}.{k}")
        return out
    raise InvalidArgument(f"{path}: {type(value).__name__} has no canonical JSON form; convert it first")


def canonical_json(value: Any) -> str:
    """Sorted-key, whitespace-free JSON over the closed JSON type set; anything else raises (MXR-080-0238)."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def source_ref(item: SubstrateItem) -> dict[str, Any]:
    """An IC-13 SourceRef: ``uri`` (source, path, uri, else ``substrate:<id>``) + known media_type/version/license."""
    prov = item.provenance or {}
    ref: dict[str, Any] = {
        "uri": str(prov.get("source") or prov.get("path") or prov.get("uri") or f"substrate:{item.id}")
    }
    if prov.get("media_type"):
        ref["media_type"] = str(prov["media_type"])
    if prov.get("version") is not None:
        ref["version"] = str(prov["version"])
    if prov.get("license"):
        ref["license"] = str(prov["license"])
    return ref


def _artifact_ref(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _access(scope: str) -> dict[str, Any]:
    if scope == DEFAULT_SCOPE:
        return {"scope": "private"}
    if scope == "public":
        return {"scope": "public"}
    return {"scope": "team", "teams": [scope]}


def substrate_item_to_knowledge_dict(item: SubstrateItem, *, schema_uri: str | None = None) -> dict[str, Any]:
    """Bridge one SubstrateItem to an IC-13 KnowledgeItem-shaped, JSON-native dict (an independent copy).

    Keys, exactly: ``id``, ``kind`` (IC-13 resource kind), ``modality``, ``schema_uri``, ``schema_version``,
    ``media_type``, ``content_hash`` (64-hex sha256 of the canonical JSON of ``{schema_uri, schema_version,
    payload, artifact_ref, metadata}``, never of the text alone), ``payload`` (the item payload minus a
    ``ref``/``path`` pointer; ``None`` when only a pointer remained), ``artifact_ref`` (that pointer as it is,
    else ``None``), ``text_surface`` (text or ``None``), ``provenance`` (one SourceRef: ``uri`` plus optional
    ``media_type``/``version``/``license``), ``relations`` (``{"predicate": "related_to"|"derived_from",
    "target_id"}`` from ``links`` and ``derived_from``), ``uncertainty`` (``None``), ``metadata``
    (``tags``, ``substrate_kind``, ``scope``, and ``substrate_provenance`` when provenance is non-empty),
    ``access`` (``{"scope": "private"|"public"}`` or ``{"scope": "team", "teams": [scope]}``), ``revision`` (1),
    ``supersedes`` (``[]``), ``created_at`` (ISO-8601 UTC). ``schema_uri`` defaults from the kind (a record whose
    payload has ``columns`` and ``primary_key`` is a typed table); an explicit value always wins.
    """
    if not isinstance(item, SubstrateItem):
        raise InvalidArgument(f"item must be a SubstrateItem, got {type(item).__name__}")
    if schema_uri is not None:
        require_name(schema_uri, "schema_uri")
    rest: dict[str, Any] = copy.deepcopy(item.payload) if item.payload else {}
    artifact_ref = None
    for key in ("ref", "path"):
        if key in rest:
            artifact_ref = _artifact_ref(rest.pop(key))
            break
    payload = None if not rest and artifact_ref is not None else rest
    if schema_uri is None:
        raw = item.payload or {}
        if item.kind == "record" and {"columns", "primary_key"} <= set(raw):
            schema_uri = TYPED_TABLE_SCHEMA
        else:
            schema_uri = _SCHEMA_BY_KIND.get(item.kind, GENERIC_SCHEMA)
    metadata: dict[str, Any] = {"tags": list(item.tags), "substrate_kind": item.kind, "scope": item.scope}
    if item.provenance:
        metadata["substrate_provenance"] = copy.deepcopy(item.provenance)
    envelope = {
        "schema_uri": schema_uri,
        "schema_version": SCHEMA_VERSION,
        "payload": payload,
        "artifact_ref": artifact_ref,
        "metadata": metadata,
    }
    resource_kind, modality = _RESOURCE.get(item.kind, ("artifact", "structured"))
    relations = [{"predicate": "related_to", "target_id": t} for t in item.links]
    relations += [{"predicate": "derived_from", "target_id": t} for t in item.derived_from]
    return {
        "id": item.id,
        "kind": resource_kind,
        "modality": modality,
        "schema_uri": schema_uri,
        "schema_version": SCHEMA_VERSION,
        "media_type": None,
        "content_hash": hashlib.sha256(canonical_json(envelope).encode("utf-8")).hexdigest(),
        "payload": payload,
        "artifact_ref": artifact_ref,
        "text_surface": item.text or None,
        "provenance": [source_ref(item)],
        "relations": relations,
        "uncertainty": None,
        "metadata": metadata,
        "access": _access(item.scope),
        "revision": 1,
        "supersedes": [],
        "created_at": datetime.fromtimestamp(item.created_at, tz=UTC).isoformat()
        if math.isfinite(item.created_at)
        else None,
    }


def _opt_dict(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"{name} must be a dict or None, got {type(value).__name__}")
    return json.loads(canonical_json(value))


def _common(packet: Any, id: str, project_id: str, target_kind: str, target_id: str | None) -> dict[str, Any]:  # noqa: A002
    require_name(id, "id")
    require_name(project_id, "project_id")
    require_name(target_kind, "target_kind")
    if target_id is not None:
        require_name(target_id, "target_id")
    return {"id": id, "project_id": project_id, "task": packet.task, "target_kind": target_kind, "target_id": target_id}


def _legacy(packet: Any) -> tuple[dict[str, Any], str]:
    text: str = packet.render()
    return {
        "shape": packet.budget.shape,
        "compressed": packet.compressed,
        "compression_ratio": packet.compression_ratio,
        "preservation": packet.preservation(),
        "used_chars": len(text),
        "used_bytes": len(text.encode("utf-8")),
    }, text


def packet_knowledge_dict(
    packet: Any,
    *,
    id: str,  # noqa: A002 - the IC-13 field name
    project_id: str,
    target_kind: str,
    target_id: str | None = None,
    expected_output_schema: dict[str, Any] | None = None,
    factuality: Any = None,
) -> dict[str, Any]:
    """The body of ``ContextPacket.to_knowledge_dict`` (see its docstring for the exact keys)."""
    out = _common(packet, id, project_id, target_kind, target_id)
    receipt, text = _legacy(packet)
    payload: dict[str, Any] = {"rendered": text, **receipt}
    if factuality is not None:
        if isinstance(factuality, dict):
            payload["factuality"] = json.loads(canonical_json(factuality))
        elif callable(getattr(factuality, "as_dict", None)):
            payload["factuality"] = json.loads(canonical_json(factuality.as_dict()))
        else:
            raise InvalidArgument("factuality must be a FactualityReceipt (with as_dict()), a dict, or None")
    out.update(
        token_budget=None,
        byte_budget=packet.budget.max_chars,
        evidence_item_ids=[i.id for i in packet.items],
        constraints=[],
        citations=[source_ref(i) for i in packet.items],
        expected_output_schema=_opt_dict(expected_output_schema, "expected_output_schema"),
        payload=payload,
    )
    return out


def packet_bundle_dict(
    packet: Any,
    *,
    id: str,  # noqa: A002 - the IC-13 field name
    project_id: str,
    target_kind: str,
    target_id: str | None = None,
    expected_output_schema: dict[str, Any] | None = None,
    gaps: list[dict[str, Any]] | None = None,
    required_capability_ids: list[str] | None = None,
    handoff_policy: dict[str, Any] | None = None,
    continuation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of ``ContextPacket.to_knowledge_bundle_dict`` (see its docstring for the exact keys)."""
    out = _common(packet, id, project_id, target_kind, target_id)
    if gaps is not None and (not isinstance(gaps, (list, tuple)) or not all(isinstance(g, dict) for g in gaps)):
        raise InvalidArgument("gaps must be a list of dicts or None")
    caps = list(required_capability_ids or [])
    for c in caps:
        require_name(c, "required_capability_ids entry")
    if continuation is not None and not isinstance(continuation, dict):
        raise InvalidArgument("continuation must be a dict or None")
    receipt, text = _legacy(packet)
    out.update(
        revision=1,
        items=[substrate_item_to_knowledge_dict(i) for i in packet.items],
        gaps=json.loads(canonical_json(list(gaps or []))),
        constraints=[],
        citations=[source_ref(i) for i in packet.items],
        expected_output_schema=_opt_dict(expected_output_schema, "expected_output_schema"),
        token_budget=None,
        byte_budget=packet.budget.max_chars,
        lineage=[],  # ancestry already travels per item, as its "derived_from" relations
        required_capability_ids=caps,
        handoff_policy=_opt_dict(handoff_policy, "handoff_policy"),
        continuation=None if continuation is None else json.loads(canonical_json(continuation)),
        renderings={"legacy_text": {"text": text, **receipt}},
    )
    return out
