"""Fast copies for the guard: deep copies of an item's fields, and a JSON value's copy with its strings listed."""

from __future__ import annotations

import copy
from typing import Any

from service.domain.items import SubstrateItem

__all__ = ["ATOMIC", "copy_fields", "deep_copy", "gathered_copy"]

# Immutable values copy.deepcopy returns as they are.
ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None)})
_NOTHING = object()


def deep_copy(value: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(value, memo)``; a flat list or dict of immutables is copied directly, with the same memo entry."""
    if type(value) in ATOMIC:
        return value
    done = memo.get(id(value), _NOTHING)
    if done is not _NOTHING:
        return done
    if type(value) is list and all(type(v) in ATOMIC for v in value):
        memo[id(value)] = flat_list = list(value)
        return flat_list
    if type(value) is dict and all(type(k) in ATOMIC and type(v) in ATOMIC for k, v in value.items()):
        memo[id(value)] = flat_dict = dict(value)
        return flat_dict
    return copy.deepcopy(value, memo)


def copy_fields(item: SubstrateItem, skip: tuple[str, ...] = ()) -> tuple[SubstrateItem, dict[int, Any]]:
    """copy.deepcopy(item) for a plain SubstrateItem (a new instance, its __dict__ deep-copied with one memo), except
    the ``skip`` fields, left None (in their place) for the caller to fill; also returns the memo to continue with."""
    out = object.__new__(SubstrateItem)
    memo: dict[int, Any] = {id(item): out}
    out.__dict__.update(
        {
            name: None if name in skip else v if type(v) in ATOMIC else deep_copy(v, memo)
            for name, v in vars(item).items()
        }
    )
    return out, memo


def gathered_copy(value: Any, texts: list[str], keys: list[str], shortest: int) -> Any:
    """``value`` with its containers rebuilt (dicts and lists as such, a tuple or set as its own type) and all else
    as it is -- what the guard's walk returns for a value holding no secret -- listing each string of at least
    ``shortest`` characters (keys too) into ``texts`` and each string key of a string value into ``keys``."""
    kind = type(value)
    if kind is str:
        if len(value) >= shortest:
            texts.append(value)
        return value
    if kind is dict:
        return _gathered_mapping(value, texts, keys, shortest)
    if kind is list:
        return [gathered_copy(v, texts, keys, shortest) for v in value]
    if kind in ATOMIC:
        return value
    if isinstance(value, str):
        if len(value) >= shortest:
            texts.append(value)
        return value
    if isinstance(value, dict):
        return _gathered_mapping(value, texts, keys, shortest)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [gathered_copy(v, texts, keys, shortest) for v in value]
        return items if isinstance(value, list) else type(value)(items)
    return value


def _gathered_mapping(value: dict[Any, Any], texts: list[str], keys: list[str], shortest: int) -> dict[Any, Any]:
    out = {}
    for k, v in value.items():
        if type(k) is str and type(v) is str:  # the common entry, inline
            if len(k) >= shortest:
                texts.append(k)
            if len(v) >= shortest:
                texts.append(v)
            keys.append(k)
            out[k] = v
            continue
        if isinstance(k, str):
            if len(k) >= shortest:
                texts.append(k)
            if isinstance(v, str):
                keys.append(k)
        out[k] = gathered_copy(v, texts, keys, shortest)
    return out
