"""Dependencies point one way: data and models at the bottom, then the run's settings and
code digest, then train, then report and status, then the CLI. A module may import its own
layer or a lower one; data and models, side by side at the bottom, never import each
other; and no two modules import each other, directly or round a loop, in a layer or
across. Read from the source (imports inside functions count too), so a back edge or a
cycle fails here before anyone has to find it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ssmbench"

#: top-level part of the package -> its layer (lower layers know nothing of higher ones)
LAYERS = {
    "ssmbench": 0,  # the package itself: __version__
    "ssmbench.io": 0,
    "ssmbench.os_errors": 0,
    "ssmbench.project_lock": 0,
    "ssmbench.run_lock": 0,
    "ssmbench.snakemake_internals": 0,
    "ssmbench.provenance_file": 0,
    "ssmbench.data": 1,
    "ssmbench.models": 1,
    "ssmbench.code_digest": 2,
    "ssmbench.complexity": 2,
    "ssmbench.staleness": 2,
    "ssmbench.config": 2,
    "ssmbench.config_readers": 2,
    "ssmbench.dvc_params": 2,
    "ssmbench.params_file": 2,
    "ssmbench.path_roots": 2,
    "ssmbench.mmac_table": 2,
    "ssmbench.precedence": 2,
    "ssmbench.reading_plan": 2,
    # every setting's default: the schema's, and the sources' (through the source table)
    "ssmbench.setting_defaults": 2,
    "ssmbench.resources": 2,
    "ssmbench.search_space": 2,
    "ssmbench.series_lengths": 2,
    "ssmbench.step_costs": 2,
    "ssmbench.train": 3,
    "ssmbench.report": 4,
    "ssmbench.status": 4,
    "ssmbench.plan": 4,
    "ssmbench.plan_check": 4,
    "ssmbench.plan_resources": 4,
    "ssmbench.run_allocation": 4,
    "ssmbench.model_contract": 4,
    "ssmbench.offline": 4,
    "ssmbench.cli": 5,
    "ssmbench.__main__": 5,
}
#: parts of one layer that must not import each other
SIBLINGS_APART = {frozenset({"ssmbench.data", "ssmbench.models"})}


def _module_name(path: Path) -> str:
    parts = ("ssmbench", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    """Every ssmbench module ``path`` imports, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from . import scan_paths` imports the module scan_paths, not the package
            found.update(
                f"{target}.{alias.name}" if _is_module(f"{target}.{alias.name}") else target
                for alias in node.names
            )
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t == "ssmbench" or t.startswith("ssmbench.")}


def _part(module: str) -> str:
    return ".".join(module.split(".")[:2])


def import_edges() -> list[tuple[str, str]]:
    """(importer, imported) for every import between two parts of the package."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        for target in _imports(path):
            if _part(importer) != _part(target):
                edges.append((importer, target))
    return edges


def module_edges() -> list[tuple[str, str]]:
    """(importer, imported) for every import between two modules, within a part too."""
    return [
        (_module_name(path), target)
        for path in sorted(PACKAGE.rglob("*.py"))
        for target in sorted(_imports(path))
        if target != _module_name(path)
    ]


def import_cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """The modules of each import cycle (each strongly connected component of more than
    one module, by Tarjan's algorithm), sorted: a cycle makes the order of import matter
    and ties two modules into one, whatever their layers."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def back_edges(edges: list[tuple[str, str]]) -> list[str]:
    bad = []
    for importer, target in edges:
        low, high = _part(target), _part(importer)
        if low not in LAYERS or high not in LAYERS:
            bad.append(f"{importer} -> {target}: a part of the package with no layer in LAYERS")
        elif LAYERS[low] > LAYERS[high]:
            bad.append(f"{importer} (layer {LAYERS[high]}) imports {target} (layer {LAYERS[low]})")
        elif frozenset({low, high}) in SIBLINGS_APART:
            bad.append(f"{importer} imports {target}: {high} and {low} stay apart")
    return bad


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert parts <= set(LAYERS), sorted(parts - set(LAYERS))


def test_no_module_imports_a_higher_layer():
    assert not back_edges(import_edges()), "\n".join(back_edges(import_edges()))


@pytest.mark.parametrize(
    "edge, why",
    [
        (("ssmbench.complexity", "ssmbench.report.reference"), "layer 4"),
        (("ssmbench.report.figures", "ssmbench.cli"), "layer 5"),
        (("ssmbench.data.monster.fetch", "ssmbench.models"), "stay apart"),
        (("ssmbench.models.ms4", "ssmbench.train.protocol"), "layer 3"),
    ],
)
def test_a_back_edge_is_found(edge, why):
    (message,) = back_edges([edge])
    assert why in message


def test_no_import_cycle():
    cycles = import_cycles(module_edges())
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_a_cycle_is_found():
    edges = [
        ("ssmbench.config", "ssmbench.resources"),
        ("ssmbench.resources", "ssmbench.params_file"),
        ("ssmbench.resources", "ssmbench.config"),
        ("ssmbench.cli", "ssmbench.config"),
    ]
    assert import_cycles(edges) == [["ssmbench.config", "ssmbench.resources"]]
    assert import_cycles(edges[:2] + edges[3:]) == []


def test_from_package_import_module_is_an_edge_to_the_module():
    edges = module_edges()
    assert ("ssmbench.models.mamba", "ssmbench.models.scan_paths") in edges
    assert ("ssmbench.models.mamba", "ssmbench.models") not in edges
