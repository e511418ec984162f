"""The layout holds: no import circle among the apps' modules, nor among their folders, nor among the apps,
and no module past 400 lines.

The import graph is read from the source (ast), so it counts every import a module makes: at its top,
inside a function, and under `TYPE_CHECKING`. `from a import b` is an edge to the module `a.b` when there
is one, else to `a`. A package's `__init__` counts only where it is imported by name.

At folder level a module's folder is its node. An edge from a folder to one of its own ancestors is left
out: an app's root holds Django's fixed modules, the base (`models`) and the top (`views`, `api`) side by
side, and a sub-folder uses the first as the second uses it. Every other edge between two folders counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("core", "accounts", "chat", "memory", "connect", "imports", "usage")
TOP = "config"  # the project's top: settings, urls, api, asgi, celery; it imports the apps, none imports it
MAX_LINES = 400


@cache
def modules() -> dict[str, Path]:
    """Every module of the apps and the project's top by dotted name (migrations left out)."""
    found: dict[str, Path] = {}
    for package in (*APPS, TOP):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _known(name: str) -> str | None:
    """The deepest module of ours that `name` is or lies in, or None (not ours)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def _targets(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(_known(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in modules() else _known(base))
    return {t for t in targets if t is not None and t != name}


@cache
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(_targets(name, path)) for name, path in modules().items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _in(package: str, name: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def _folder(name: str) -> str:
    path = modules()[name]
    return ".".join(path.parent.relative_to(ROOT).parts)


def file_edges(package: str) -> dict[str, set[str]]:
    return {m: {t for t in ts if _in(package, t)} for m, ts in graph().items() if _in(package, m)}


def folder_edges(package: str) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, targets in file_edges(package).items():
        here = _folder(module)
        for target in targets:
            there = _folder(target)
            if there != here and not _in(there, here):  # to an ancestor: left out (see the docstring)
                edges.setdefault(here, set()).add(there)
    return edges


@pytest.mark.parametrize("package", (*APPS, TOP))
def test_no_import_circle_between_modules(package: str) -> None:
    assert circles(file_edges(package)) == []


@pytest.mark.parametrize("package", (*APPS, TOP))
def test_no_import_circle_between_folders(package: str) -> None:
    assert circles(folder_edges(package)) == []


def test_no_import_circle_between_apps_and_nothing_imports_the_projects_top() -> None:
    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        here = module.split(".")[0]
        edges.setdefault(here, set()).update(t.split(".")[0] for t in targets if not _in(here, t))
    assert circles(edges) == []
    assert [app for app in APPS if TOP in edges.get(app, set())] == []
    assert edges["core"] == set()  # below every app


@pytest.mark.parametrize("package", (*APPS, TOP))
def test_no_module_past_400_lines(package: str) -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if _in(package, name) and n > MAX_LINES} == {}


def test_the_graph_sees_imports_in_functions_and_under_type_checking() -> None:
    assert "chat.views" in graph()["chat.apps"]  # inside AppConfig.ready()
    assert "chat.turn.agent" in graph()["chat.turn.fanout"]  # under TYPE_CHECKING
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
