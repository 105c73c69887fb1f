"""The house keeps its shape: no import circles, no reach into another module's privates, small modules, one
module that writes the log. (The layers themselves are import-linter's contracts: test_architecture.py.)"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("service", "projections")
MAX_LINES = 400
# The only place rows reach the log: the event store's statements (every command goes through the facade's door).
LOG_WRITERS = {"service/store/appendsql.py"}


def _modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def _imports(name: str, path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import in the file, function-level ones included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [a.name for a in node.names], node.lineno


def _graph() -> dict[str, set[str]]:
    modules = dict(_modules())
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for target, names, _ in _imports(name, path):
            for candidate in [f"{target}.{n}" for n in names] or [target]:
                found = candidate if candidate in modules else target
                while found and found not in modules:
                    found = found.rpartition(".")[0]
                if found and found != name:
                    graph[name].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_packages_have_no_import_circles_not_even_through_function_level_imports() -> None:
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_another_modules_private_names() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target} {name}"
        for module, path in _modules()
        for target, names, line in _imports(module, path)
        if target.split(".")[0] in PACKAGES
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert found == []


def test_no_module_reaches_into_the_facades_private_state() -> None:
    facade = sorted((ROOT / "service" / "substrate").glob("*.py"))
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in facade]
    private = {
        name
        for tree in trees
        for node in ast.walk(tree)
        for name in (
            [node.attr] if isinstance(node, ast.Attribute) else [node.name] if isinstance(node, ast.FunctionDef) else []
        )
        if name.startswith("_") and not name.startswith("__")
    }
    assert {"_writable", "_admit"} <= private, "the check looks in the wrong place"
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}"
        for _, path in _modules()
        if path not in facade
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert found == []


def test_every_module_stays_small() -> None:
    big = {
        str(path.relative_to(ROOT)): n
        for _, path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert big == {}, f"split these by job (at most {MAX_LINES} lines each): {big}"


def test_only_the_event_store_writes_the_log() -> None:
    writes = re.compile(r"\b(INSERT\s+INTO|COPY)\s+(public\.)?events\b", re.IGNORECASE)
    found = {str(path.relative_to(ROOT)) for _, path in _modules() if writes.search(path.read_text(encoding="utf-8"))}
    assert found <= LOG_WRITERS, found - LOG_WRITERS
    assert found, "the event store's own statements were not found: the check looks in the wrong place"
