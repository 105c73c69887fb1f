"""Test doubles for the substrate protocol (duck-typed surface) and the telemetry protocol, for pure-logic tests."""

from __future__ import annotations

import json
import re

from service.domain.items import SubstrateItem

__all__ = ["BrokenTelemetry", "FakeSubstrate", "Recorder"]


class FakeSubstrate:
    """A test double for the substrate's public surface: a dict of items and token-overlap search."""

    def __init__(self, items=()):
        self._items = {}
        self.searches = []
        for it in items:
            self.put(it)

    def put(self, item):
        self._items[item.id] = item.copy()
        return item.id

    def add(self, kind, text="", **kw):
        return self.put(SubstrateItem(kind, text, **kw))

    def get(self, item_id):
        it = self._items.get(item_id)
        return it.copy() if it else None

    def all(self, *, kind=None, scope=None):
        return [i.copy() for i in self._items.values() if kind in (None, i.kind) and scope in (None, i.scope)]

    def search(self, query, k=5, *, kind=None, scope=None):
        self.searches.append((query, k, kind, scope))
        q = set(re.findall(r"\w+", query.lower()))
        hits = []
        for it in self.all(kind=kind, scope=scope):
            words = set(re.findall(r"\w+", f"{it.text} {json.dumps(it.payload)} {' '.join(it.tags)}".lower()))
            score = len(q & words) / max(len(q), 1)
            if score > 0:
                hits.append((it, score))
        hits.sort(key=lambda p: -p[1])
        return hits[:k]


class Recorder:
    """Collects every telemetry record."""

    def __init__(self):
        self.events = []

    def record(self, kind, *, features, choice, outcome):
        self.events.append((kind, features, choice, outcome))


class BrokenTelemetry:
    """A telemetry sink that always fails."""

    def record(self, kind, *, features, choice, outcome):
        raise RuntimeError("down")
