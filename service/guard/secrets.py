"""Secret detection and redaction: find credentials in text and items, and mask them before anything is stored."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from service.domain.errors import SecretPolicyError
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument, require_count
from service.guard.copying import copy_fields, deep_copy, gathered_copy
from service.guard.findings import SecretFinding, SecretScan, preview
from service.guard.rules import RULES, Rule, sensitive_key_in_any, sensitive_pair, triggered, triggered_in_any
from service.guard.rules import core as rule_core

__all__ = [
    "SecretFinding",
    "SecretPolicyError",
    "SecretScan",
    "detect_secrets",
    "guard_data",
    "redact_item",
    "redact_secrets",
    "safe_text",
    "scan_item",
    "scan_substrate",
]

DEFAULT_MASK = "[REDACTED:{rule}]"
SECRET_POLICIES = ("redact", "reject")
# Each pass masks at least one finding and the default mask is never itself a secret shape, so real text
# converges in one or two passes; the cap only turns a pathological (or self-matching custom) mask into an error.
_MAX_PASSES = 8
_PAIR_RULE = "sensitive_assignment"


def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise InvalidArgument(f"text must be a str, got {type(text).__name__}")
    return text


_SHORTEST_SECRET = 8  # no rule matches fewer characters (the shortest is a generic `pwd=` + 6-char value)


# True: every rule runs on every string and items are deep-copied before the walk -- the reference the fast path
# (anchor prefilter, one-pass masked copy) is proven equivalent to.
_reference = False


@contextmanager
def _reference_scan() -> Iterator[None]:
    """Within the block, scan and copy the reference way (every rule on every string): for equivalence tests."""
    global _reference
    saved, _reference = _reference, True
    rule_core.fast_finds = False
    try:
        yield
    finally:
        _reference = saved
        rule_core.fast_finds = not saved


def _findings(text: str) -> list[SecretFinding]:
    if len(text) < _SHORTEST_SECRET:
        return []
    rules: list[tuple[int, Rule]] | enumerate[Rule] = enumerate(RULES) if _reference else triggered(text)
    candidates = [(start, end, order, rule.name) for order, rule in rules for start, end in rule.find(text)]
    if not candidates:
        return []
    # Longest span wins; on a tie the more specific (earlier) rule names it. Accepted spans never overlap.
    candidates.sort(key=lambda c: (c[0] - c[1], c[2], c[0]))
    starts: list[int] = []
    ends: list[int] = []
    kept: list[SecretFinding] = []
    for start, end, _order, name in candidates:
        if end <= start:
            continue
        i = bisect.bisect_right(starts, start)
        if (i > 0 and ends[i - 1] > start) or (i < len(starts) and starts[i] < end):
            continue
        starts.insert(i, start)
        ends.insert(i, end)
        kept.append(SecretFinding(name, start, end, preview(text[start:end])))
    kept.sort(key=lambda f: f.start)
    return kept


def detect_secrets(text: str) -> SecretScan:
    """Scan text for well-known secret shapes; return a SecretScan naming each (non-overlapping) finding."""
    return SecretScan(_findings(_require_text(text)))


def _mask(text: str, findings: list[SecretFinding], mask: str, keep_prefix: int) -> str:
    parts, pos = [], 0
    for f in findings:
        secret = text[f.start : f.end]
        # Never reveal more than half a secret, however large keep_prefix is: a reader may tell which it was, not use it.
        visible = min(keep_prefix, len(secret) // 2)
        parts += [text[pos : f.start], secret[:visible], mask.replace("{rule}", f.rule)]
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _redact(text: str, mask: str, keep_prefix: int, first: list[SecretFinding] | None = None) -> tuple[str, int]:
    out, count = text, 0
    for n in range(_MAX_PASSES):
        findings = first if n == 0 and first is not None else _findings(out)
        if not findings:
            return out, count
        # Later passes mask fully: re-revealing the same prefix every pass could keep a finding alive forever.
        out = _mask(out, findings, mask, keep_prefix if n == 0 else 0)
        count += len(findings)
    rules = sorted({f.rule for f in _findings(out)})
    if rules:
        raise SecretPolicyError(
            f"redaction did not reach a fixed point after {_MAX_PASSES} passes (rules {', '.join(rules)}); "
            "refusing to return text that still carries a secret",
            rules=rules,
            scan=SecretScan(),
        )
    return out, count


def redact_secrets(text: str, *, mask: str = DEFAULT_MASK, keep_prefix: int = 0) -> str:
    """Return text with every detected secret masked, re-scanned to a fixed point (MXR-080-1882) or refused."""
    _require_text(text)
    if not isinstance(mask, str):
        raise InvalidArgument(f"mask must be a str, got {type(mask).__name__}")
    require_count(keep_prefix, "keep_prefix")
    return _redact(text, mask, keep_prefix)[0]


def safe_text(text: str) -> str:
    """Redact-before-store guard: mask any secrets so they are never indexed or served."""
    return redact_secrets(text)


# What json.dumps(payload, sort_keys=..., ensure_ascii=False, default=str) builds on every call, built once.
_SORTED_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
_INSERTION_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def _serialized(payload: Any) -> str:
    # The same surface search serializes (sorted-key JSON); mixed-type keys cannot sort, so fall back to insertion order.
    try:
        return _SORTED_JSON.encode(payload)
    except TypeError:
        return _INSERTION_JSON.encode(payload)


class _Walk:
    """One pass over an item's surface, collecting (field, finding) hits and building the masked copy.

    With ``memo`` (a deepcopy memo) the copy is independent of the item: the walk rebuilds every container and
    deep-copies every other value that is not immutable, so it holds what a walk over ``item.copy()`` would.
    """

    def __init__(self, memo: dict[int, Any] | None = None) -> None:
        self.hits: list[tuple[str, SecretFinding]] = []
        self.count = 0
        self.memo = memo

    def own(self, value: Any) -> Any:
        """``value`` itself, or (when building an independent copy) a deep copy of it unless it is immutable."""
        return value if self.memo is None else deep_copy(value, self.memo)

    def masked(self, value: str, found: list[SecretFinding], where: str, *, key: bool = False) -> str:
        """``value`` with ``found`` (its findings) masked to a fixed point; the hits are recorded under ``where``."""
        out, count = _redact(value, DEFAULT_MASK, 0, found)
        # A key's own label names it masked: the same text safe_text(key) gives.
        label = f"{where}.{out} (key)" if key else where
        self.hits += [(label, f) for f in found]
        self.count += count
        return out

    def text(self, value: str, where: str) -> str:
        value = self.own(value)
        found = _findings(value)
        return self.masked(value, found, where) if found else value

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, dict):
            return self.mapping(value, where)
        if isinstance(value, (list, tuple, set, frozenset)):
            items = [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return items if isinstance(value, list) else type(value)(items)
        return self.own(value)

    def mapping(self, value: dict[Any, Any], where: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = self.own(k)
            if isinstance(key, str):
                found = _findings(key)
                if found:
                    key = self.masked(key, found, where, key=True)
            if key in out:  # two keys masked to the same text must not silently overwrite each other
                key = _free_key(out, key)
            child = f"{where}.{key}"
            if isinstance(v, str):
                v = self.own(v)
                found = _findings(v)
                if found:
                    out[key] = self.masked(v, found, child)
                elif isinstance(k, str) and sensitive_pair(k, v):
                    # {"password": <literal>}: neither string is a secret alone, but the serialized pair is.
                    self.hits.append((child, SecretFinding(_PAIR_RULE, 0, len(v), preview(v))))
                    self.count += 1
                    out[key] = DEFAULT_MASK.replace("{rule}", _PAIR_RULE)
                else:
                    out[key] = v
            else:
                out[key] = self.value(v, child)
        return out


def _free_key(taken: dict[Any, Any], key: str) -> str:
    """``key#2``, ``key#3``, ...: the first not in ``taken`` (a masked key that collides keeps its own entry)."""
    n = 2
    while f"{key}#{n}" in taken:
        n += 1
    return f"{key}#{n}"


def _walk_item(item: Any, memo: dict[int, Any] | None = None) -> tuple[_Walk, str, Any, list[str], list[SecretFinding]]:
    walk = _Walk(memo)
    text = walk.text(getattr(item, "text", None) or "", "text")
    payload = walk.value(getattr(item, "payload", None) or {}, "payload")
    tags = [
        walk.text(t, f"tags[{i}]") if isinstance(t, str) else walk.own(t)
        for i, t in enumerate(getattr(item, "tags", []) or [])
    ]
    # Anything the per-string walk cannot see (a str() of an opaque object) still shows on the serialized surface.
    residue = _findings(_serialized(payload)) if payload else []
    return walk, text, payload, tags, residue


def scan_item(item: Any) -> SecretScan:
    """Scan a substrate item's full indexed/serialized surface (text + payload + tags) for secrets."""
    walk, *_, residue = _walk_item(item)
    return SecretScan([f for _, f in walk.hits] + residue)


def _refuse(hits: list[tuple[str, SecretFinding]], why: str, item_id: Any = None) -> SecretPolicyError:
    rules = sorted({f.rule for _, f in hits})
    fields = list(dict.fromkeys(where for where, _ in hits))
    item = item_id if isinstance(item_id, str) else None
    where = f" of item {item!r}" if item else ""
    return SecretPolicyError(
        f"{why}: secret(s) matching rule(s) {', '.join(rules)} in field(s) {', '.join(fields)}{where}; "
        "nothing was stored",
        rules=rules,
        fields=fields,
        scan=SecretScan([f for _, f in hits]),
        item_id=item,
    )


def _masked_copy(item: SubstrateItem) -> tuple[SubstrateItem, _Walk, list[SecretFinding]]:
    # The reference path (and a subclass, which may customise copying): copy the item as it asks, then walk the copy.
    if _reference or type(item) is not SubstrateItem:
        out = item.copy()
        walk, out.text, out.payload, out.tags, residue = _walk_item(out)
        return out, walk, residue
    # item.copy() and a walk over the copy in one pass: the walk rebuilds text, payload and tags (deep-copying what
    # it does not rebuild, with the same memo), so only the other fields are copied up front.
    out, memo = copy_fields(item, ("text", "payload", "tags"))
    walk, out.text, out.payload, out.tags, residue = _walk_item(item, memo)
    return out, walk, residue


def redact_item(item: SubstrateItem) -> tuple[SubstrateItem, int]:
    """Return a deep copy of ``item`` with secrets in text, payload (keys and values) and tags masked, and how many."""
    out, walk, residue = _masked_copy(item)
    if residue:
        raise _refuse(
            [("payload", f) for f in residue],
            "secret_policy='redact' could not mask the serialized payload",
            getattr(item, "id", None),
        )
    return out, walk.count


def guard_item(item: SubstrateItem, policy: str) -> SubstrateItem:
    """Return a copy of ``item`` safe to store under ``policy``: "redact" masks secrets, "reject" refuses them."""
    if policy not in SECRET_POLICIES:
        raise InvalidArgument(f"secret_policy must be 'redact' or 'reject', got {policy!r}")
    if policy == "redact":
        return redact_item(item)[0]
    walk, *_, residue = _walk_item(item)
    hits = walk.hits + [("payload", f) for f in residue]
    if hits:
        raise _refuse(hits, "secret_policy='reject'", getattr(item, "id", None))
    return copy_fields(item)[0] if type(item) is SubstrateItem and not _reference else item.copy()


def guard_view(item: SubstrateItem, policy: str) -> SubstrateItem:
    """``guard_item`` for callers that copy the result anyway: ``item`` itself when nothing needs masking."""
    if policy not in SECRET_POLICIES:
        raise InvalidArgument(f"secret_policy must be 'redact' or 'reject', got {policy!r}")
    walk, *_, residue = _walk_item(item)
    if walk.hits or residue:
        return guard_item(item, policy)  # the rare path: mask, or refuse, exactly as guard_item does
    return item


_JOINED_MAX = 64  # strings up to this long are joined for one anchor search; longer ones are scanned alone


def guard_data(value: Any, policy: str, *, field: str = "data") -> Any:
    """Return ``value`` (JSON-like: dicts, lists, strings, ...) rebuilt with every secret in every string -- dict
    keys and values, at any depth -- masked as redact_secrets masks it ("redact"), or refuse it ("reject").

    A credential literal under a credential-named key ({"password": "..."}) is masked whole, as guard_item does.
    Keys that mask to the same text keep both entries (``key#2``). Non-strings are returned as they are. The
    refusal (SecretPolicyError) names each field's path under ``field`` (``data.item.provenance.url``) and the
    rules, never the secret."""
    if policy not in SECRET_POLICIES:
        raise InvalidArgument(f"secret_policy must be 'redact' or 'reject', got {policy!r}")
    if not isinstance(field, str):
        raise InvalidArgument(f"field must be a str, got {type(field).__name__}")
    if not _reference:
        texts: list[str] = []
        keys: list[str] = []
        copied = gathered_copy(value, texts, keys, _SHORTEST_SECRET)
        # The common case: no key names a credential, the short strings (ids, names, links) hold no rule's anchor
        # (one search over them joined) and the long ones (a text, a reason) hold no finding -- each long one is
        # scanned on its own, as guard_item scans an item's text, so an anchor in it costs no second walk.
        short = [t for t in texts if len(t) <= _JOINED_MAX]
        if not sensitive_key_in_any(keys) and not triggered_in_any(short):
            if not any(_findings(t) for t in texts if len(t) > _JOINED_MAX):
                return copied
    walk = _Walk()
    out = walk.value(value, field)
    if walk.hits and policy == "reject":
        raise _refuse(walk.hits, "secret_policy='reject'")
    return out


def scan_substrate(substrate: Any, *, scope: str | None = None) -> dict[str, Any]:
    """Sweep a substrate for leaked secrets: ``{n_items, n_dirty, dirty: [{item_id, rules}]}``."""
    n_items, dirty = 0, []
    for item in substrate.all(scope=scope):
        n_items += 1
        scan = scan_item(item)
        if not scan.clean:
            dirty.append({"item_id": item.id, "rules": scan.rules()})
    return {"n_items": n_items, "n_dirty": len(dirty), "dirty": dirty}
