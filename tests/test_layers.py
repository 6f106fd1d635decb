"""The import rules of README's "Layout", read from the source (imports anywhere in a file count, function-level
ones included):
- pipelines/, db/ and pallas_kernels/ import nothing from textclf/ and nothing from each other;
- inside textclf/, a module imports only from its own room or from a lower layer (LAYERS, lowest first);
- no import cycle among the project's modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOWER = ("pipelines", "db", "pallas_kernels")
# textclf's rooms, lowest first; a room may import its own modules and any room of a lower layer.
LAYERS = (
    ("errors", "settings", "paths", "versions"),
    ("models",),
    ("training", "inference"),
    ("runs",),
    ("estimator", "frontends"),  # the faces: each trains through runs' one engine
    ("__main__",),
)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in ("textclf", *LOWER):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def import_edges(modules: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a project module, resolved to the longest module name."""
    edges = set()
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add((name, target))
    return edges


def layer_of(module: str) -> tuple[int, str] | None:
    parts = module.split(".")
    if parts[0] != "textclf" or len(parts) == 1:
        return None  # a lower package, or textclf/__init__ (the public API on top of everything)
    for level, rooms in enumerate(LAYERS):
        if parts[1] in rooms:
            return level, parts[1]
    raise AssertionError(f"{module} is in no layer: add its room to LAYERS (and README's Layout)")


def layer_violations(edges) -> list[str]:
    bad = []
    for importer, imported in sorted(edges):
        top, imported_top = importer.split(".")[0], imported.split(".")[0]
        if top in LOWER:
            if imported_top != top:
                bad.append(f"{importer} -> {imported} (a lower layer imports {imported_top})")
            continue
        source, target = layer_of(importer), layer_of(imported)
        if source is None or target is None:
            continue
        if target[0] > source[0] or (target[0] == source[0] and target[1] != source[1] and source[0] != 0):
            bad.append(f"{importer} -> {imported} (layer {source[1]} may not import {target[1]})")
    return bad


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_layers_import_only_downwards():
    assert layer_violations(import_edges(project_modules())) == []


def test_no_import_cycles():
    assert cycles(import_edges(project_modules())) == []


def test_the_checks_catch_an_upward_import_and_a_cycle():
    edges = {
        ("pipelines.corpus", "textclf.errors"),
        ("textclf.models.mlp", "textclf.training.network"),
        ("textclf.training.network", "textclf.models.mlp"),
        ("db.runs", "pipelines.corpus"),
    }
    assert len(layer_violations(edges)) == 3
    assert cycles(edges) == [["textclf.models.mlp", "textclf.training.network"]]


def test_runs_and_the_faces_enter_training_through_its_front_doors():
    """runs/, the faces and the estimator import training's names from `textclf.training` and
    `textclf.training.search` (their front doors, textclf/training/__init__.py), never from the modules inside."""
    modules = project_modules()
    inside = sorted(
        f"{importer} -> {imported}"
        for importer, imported in import_edges(modules)
        if importer.startswith(("textclf.runs", "textclf.frontends", "textclf.estimator"))
        and imported.startswith("textclf.training.")
        and imported != "textclf.training.search"
    )
    assert not inside, "imports past training's front doors:\n" + "\n".join(inside)
