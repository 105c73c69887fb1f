"""The secret guard over whole events: every string of an event's data, keys and values, at any depth.

Text, payload and tags, but also provenance, links, derived_from, ids, proposal reasons, evidence sources and
notes, grant names: whatever an event carries. Secrets in content are masked ("redact") or refused ("reject").
What names a thing (the stream, the scope, an item's id and scope, a grant's principal) is never masked, whatever
the policy: a masked id would name another item, a masked scope another scope; it is refused.
"""

from __future__ import annotations

from typing import Any

from projections.items import ITEM_EVENTS
from service.domain.errors import InvalidArgument, SecretPolicyError
from service.domain.events import NewEvent, normalize_json
from service.guard.secrets import SECRET_POLICIES, guard_data

__all__ = ["guard_event"]


def guard_event(e: NewEvent, policy: str) -> NewEvent:
    """``e`` with its data secret-guarded under ``policy`` (a new, normalized event); SecretPolicyError when a
    secret must be refused, InvalidArgument when the event's stream or scope disagree with its item."""
    if policy not in SECRET_POLICIES:
        raise InvalidArgument(f"secret_policy must be one of {SECRET_POLICIES}, got {policy!r}")
    kind = e.event.type_name
    data: dict[str, Any] = e.event.to_data() if e.normalized else normalize_json(e.event.to_data(), kind)
    if kind in ITEM_EVENTS:
        item = data.get("item")
        if not isinstance(item, dict) or item.get("id") != e.stream or item.get("scope") != e.scope:
            raise InvalidArgument(f"a {kind} event's stream and scope must be its item's id and scope")
        guarded = guard_data(data, policy, field="data")
        kept = guarded["item"]
        if kept.get("id") != item["id"] or kept.get("scope") != item["scope"]:
            _keep_names({"data.item.id": item["id"], "data.item.scope": item["scope"]})
    else:
        _keep_names({"stream": e.stream, "scope": e.scope})
        guarded = guard_data(data, policy, field="data")
        names = {f"data.{k}": v for k, v in data.items() if isinstance(v, str)}
        if any(guarded.get(f.removeprefix("data.")) != v for f, v in names.items()):
            _keep_names(names)
    return NewEvent(e.stream, type(e.event).from_data(guarded), e.scope, e.expected_version, normalized=True)


def _keep_names(names: dict[str, Any]) -> None:
    """Refuse (whatever the policy) a name that holds a secret: masking would make it name something else."""
    for field, value in names.items():
        if isinstance(value, str):
            try:
                guard_data(value, "reject", field=field)
            except SecretPolicyError as exc:
                raise SecretPolicyError(
                    f"{field} holds a secret and names something, so it cannot be masked: {exc}",
                    rules=exc.rules,
                    fields=exc.fields,
                    scan=exc.scan,
                ) from None
