"""ContextBudget, ReceiverProfile and ContextPacket: what a target can take, and the aligned view it gets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument, require_count, require_name
from service.retrieval.knowledge import packet_bundle_dict, packet_knowledge_dict
from service.retrieval.text import flat, item_surface, query_coverage

__all__ = [
    "SHAPES",
    "ContextBudget",
    "ContextPacket",
    "FrozenList",
    "ReceiverProfile",
    "render_packet",
    "require_bool",
    "require_fits",
]

SHAPES: tuple[str, ...] = ("passages", "brief", "features")


class FrozenList(tuple):  # type: ignore[type-arg]
    """A packet's items, scores or texts: immutable (they stay aligned, MXR-080-0240), yet equal to a list of the
    same elements, since the spec's packet holds lists (``packet.items == []``). Ten lines of a tuple subclass
    instead of a dependency (aio-libs' frozenlist is mutable until frozen and unhashable before)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return repr(list(self))


def require_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is exactly ``True`` or ``False`` (a truthy string is not a flag)."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be a bool, got {value!r}")
    return value


def _positive(value: Any, name: str) -> int:
    if require_count(value, name) < 1:
        raise InvalidArgument(f"{name} must be a positive int, got {value!r}")
    return value


def render_packet(
    task: str, items: Sequence[SubstrateItem], texts: Sequence[str], shape: str, *, header: bool = True
) -> str:
    """The exact string ``ContextPacket.render`` returns for these aligned items and texts."""
    if len(items) != len(texts):
        raise InvalidArgument(f"render needs aligned items and texts, got {len(items)} and {len(texts)}")
    head = f"# Context for: {flat(task)}\n" if header else ""
    if shape == "brief":  # for a human: bullets, no tags
        return head + "\n".join(f"- {flat(t)}" for t in texts)
    if shape == "features":  # for a small student: one tagged line per item
        return head + "\n".join(f"{i.kind}:{i.id} | {flat(t)}" for i, t in zip(items, texts, strict=True))
    return head + "\n\n".join(f"[{i.kind}:{i.id}] {t}" for i, t in zip(items, texts, strict=True))


@dataclass(frozen=True)
class ContextBudget:
    """What a target can take: ``max_chars`` and ``max_items`` positive ints, ``shape`` one of SHAPES."""

    max_chars: int = 2000
    max_items: int = 20
    shape: str = "passages"

    def __post_init__(self) -> None:
        _positive(self.max_chars, "ContextBudget.max_chars")
        _positive(self.max_items, "ContextBudget.max_items")
        if self.shape not in SHAPES:
            raise InvalidArgument(f"ContextBudget.shape must be one of {SHAPES}, got {self.shape!r}")


def require_fits(task: str, budget: ContextBudget) -> None:
    """Raise unless ``budget.max_chars`` holds at least the empty (header-only) rendering for ``task``."""
    need = len(render_packet(task, (), (), budget.shape))
    if need > budget.max_chars:
        raise InvalidArgument(
            f"ContextBudget.max_chars={budget.max_chars} cannot hold even the header for this task ({need} chars)"
        )


@dataclass(frozen=True)
class ReceiverProfile:
    """A named receiver's capacity; validated at construction exactly as its ContextBudget would be."""

    name: str
    max_chars: int = 2000
    max_items: int = 20
    shape: str = "passages"
    compress: bool = False

    def __post_init__(self) -> None:
        require_name(self.name, "ReceiverProfile.name")
        require_bool(self.compress, "ReceiverProfile.compress")
        self.to_budget()

    def to_budget(self) -> ContextBudget:
        """This receiver's ContextBudget."""
        return ContextBudget(max_chars=self.max_chars, max_items=self.max_items, shape=self.shape)


@dataclass(frozen=True)
class ContextPacket:
    """A budgeted, provenanced view for one task: items, scores and texts are one aligned, immutable record."""

    task: str
    items: Sequence[SubstrateItem] = field(default_factory=tuple)
    scores: Sequence[float] = field(default_factory=tuple)
    budget: ContextBudget = field(default_factory=ContextBudget)
    n_candidates: int = 0
    texts: Sequence[str] = field(default_factory=tuple)
    compressed: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.task, str):
            raise InvalidArgument(f"ContextPacket.task must be a str, got {type(self.task).__name__}")
        if not isinstance(self.budget, ContextBudget):
            raise InvalidArgument(f"ContextPacket.budget must be a ContextBudget, got {type(self.budget).__name__}")
        require_count(self.n_candidates, "ContextPacket.n_candidates")
        require_bool(self.compressed, "ContextPacket.compressed")
        items = tuple(self.items)
        for it in items:
            if not isinstance(it, SubstrateItem):
                raise InvalidArgument(f"ContextPacket.items must be SubstrateItems, got {type(it).__name__}")
        scores = tuple(self.scores)
        for s in scores:
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise InvalidArgument(f"ContextPacket.scores must be finite numbers, got {s!r}")
        texts = tuple(self.texts) if self.texts else tuple(item_surface(i) for i in items)
        if not all(isinstance(t, str) for t in texts):
            raise InvalidArgument("ContextPacket.texts must be strings")
        # MXR-080-0240: one aligned record, so a packet can never cite evidence other than what it renders.
        if not len(items) == len(scores) == len(texts):
            raise InvalidArgument(
                f"ContextPacket needs aligned items/scores/texts, got {len(items)}/{len(scores)}/{len(texts)}"
            )
        object.__setattr__(self, "items", FrozenList(items))
        object.__setattr__(self, "scores", FrozenList(float(s) for s in scores))
        object.__setattr__(self, "texts", FrozenList(texts))

    def render(self, *, header: bool = True) -> str:
        """The assembled context string the target consumes, in the budget's shape."""
        return render_packet(self.task, self.items, self.texts, self.budget.shape, header=header)

    @property
    def used_chars(self) -> int:
        """The true length of the default rendering, always measured from ``render()`` (MXR-080-0239/0240)."""
        return len(self.render())

    def preservation(self) -> list[float]:
        """Per item, the fraction of the task's terms (that the full item had) still present in its used text."""
        return [query_coverage(t, self.task, full=item_surface(i)) for i, t in zip(self.items, self.texts, strict=True)]

    @property
    def compression_ratio(self) -> float:
        """Used chars / full chars over the selected items (1.0 when nothing was shortened or nothing is selected)."""
        full = sum(len(item_surface(i)) for i in self.items)
        return round(sum(len(t) for t in self.texts) / full, 4) if full else 1.0

    def provenance(self) -> list[dict[str, Any]]:
        """Per included item: ``id``, ``kind``, ``source`` (provenance source/path or None), ``score`` (4 d.p.)."""
        return [
            {
                "id": i.id,
                "kind": i.kind,
                "source": i.provenance.get("source") or i.provenance.get("path"),
                "score": round(s, 4),
            }
            for i, s in zip(self.items, self.scores, strict=True)
        ]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable summary: sizes, budget, compression receipt and provenance."""
        return {
            "task": self.task,
            "n_items": len(self.items),
            "n_candidates": self.n_candidates,
            "used_chars": self.used_chars,
            "budget_chars": self.budget.max_chars,
            "max_items": self.budget.max_items,
            "shape": self.budget.shape,
            "compressed": self.compressed,
            "compression_ratio": self.compression_ratio,
            "preservation": self.preservation(),
            "provenance": self.provenance(),
        }

    def to_knowledge_dict(
        self,
        *,
        id: str,  # noqa: A002 - the IC-13 field name
        project_id: str,
        target_kind: str,
        target_id: str | None = None,
        expected_output_schema: dict[str, Any] | None = None,
        factuality: Any = None,
    ) -> dict[str, Any]:
        """A plain dict shaped like the IC-13 ContextPacket (deprecated compatibility view).

        Keys, exactly: ``id``, ``project_id``, ``task``, ``target_kind``, ``target_id``, ``token_budget`` (None),
        ``byte_budget`` (``budget.max_chars``), ``evidence_item_ids``, ``constraints`` (``[]``), ``citations``
        (one SourceRef per item: ``uri`` plus optional ``media_type``/``version``/``license``),
        ``expected_output_schema`` (``{}`` when None), ``payload``. ``payload`` keys: ``rendered``, ``shape``,
        ``compressed``, ``compression_ratio``, ``preservation``, ``used_chars``, ``used_bytes``, and
        ``factuality`` (``factuality.as_dict()``, or a dict) only when ``factuality`` is given.
        """
        return packet_knowledge_dict(
            self,
            id=id,
            project_id=project_id,
            target_kind=target_kind,
            target_id=target_id,
            expected_output_schema=expected_output_schema,
            factuality=factuality,
        )

    def to_knowledge_bundle_dict(
        self,
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
        """A plain dict shaped like the IC-13 KnowledgeBundle, carrying each item's own canonical form.

        Keys, exactly: ``id``, ``project_id``, ``task``, ``target_kind``, ``target_id``, ``revision`` (1),
        ``items`` (``substrate_item_to_knowledge_dict`` per selected item), ``gaps``, ``constraints`` (``[]``),
        ``citations`` (as in ``to_knowledge_dict``), ``expected_output_schema``, ``token_budget`` (None),
        ``byte_budget``, ``lineage`` (``[]``; ancestry is in each item's ``derived_from`` relations),
        ``required_capability_ids``, ``handoff_policy``, ``continuation``, ``renderings``. ``renderings`` holds
        only ``legacy_text``: ``text`` (``render()``), ``shape``, ``compressed``, ``compression_ratio``,
        ``preservation``, ``used_chars``, ``used_bytes`` - a disposable view, never canonical state.
        """
        return packet_bundle_dict(
            self,
            id=id,
            project_id=project_id,
            target_kind=target_kind,
            target_id=target_id,
            expected_output_schema=expected_output_schema,
            gaps=gaps,
            required_capability_ids=required_capability_ids,
            handoff_policy=handoff_policy,
            continuation=continuation,
        )

    def __len__(self) -> int:
        return len(self.items)
