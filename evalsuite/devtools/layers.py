"""Check that evalsuite's imports point one way: down the layers, and never in a circle.

Run ``python -m evalsuite.devtools.layers [PACKAGE_DIR]``: exit status 0 when the package is
clean, 1 with a list of the problems otherwise.

Every ``.py`` file under the package folder is parsed with :mod:`ast` (nothing is imported).
Each ``import`` and ``from … import`` statement counts, at any depth (in functions, classes,
``try`` blocks), relative forms (``from . import x``, ``from ..records import model``) resolved
against the importing module. ``from a.b import c`` is an import of the module ``a.b.c`` when
that module exists, else of ``a.b``. Imports of modules outside the package are ignored, and so
are dynamic imports (``importlib.import_module``), which :mod:`ast` cannot see.

The rules:

* **Layers.** Every module belongs to a layer (:data:`LAYER_MAP`, a module name and everything
  under it; the longest name wins). A module may import from its own layer and the layers
  below, never from a layer above (:data:`LAYERS`, lowest first). This holds for *every* import:
  a function-local (lazy) import or one under ``if TYPE_CHECKING:`` still makes the lower
  layer depend on the upper one, so neither is exempt. A module no entry covers is reported
  too, so that a new module gets a layer when it is added.
* **Cycles.** No cycle among the module-level imports. Function-local imports are exempt: they
  run after every module has loaded, which is how a deliberate back-reference (the engine
  registry importing its built-in engine list) is written. Imports under
  ``if TYPE_CHECKING:`` never run and are exempt as well. A module importing itself is ignored.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The folder of the ``evalsuite`` package, checked by default."""

LAYERS: tuple[str, ...] = ("bottom", "sources", "engines", "inside-vllm", "middle", "top")
"""The layers, lowest first: a module imports only from its own layer and those before it."""

LAYER_MAP: dict[str, str] = {
    # bottom: building blocks that know nothing of benchmarks, records or presentation
    "evalsuite": "bottom",  # the package itself: only __version__
    "evalsuite.errors": "bottom",
    "evalsuite.confined": "bottom",
    "evalsuite.images": "bottom",
    "evalsuite.browser": "bottom",
    "evalsuite.textformat": "bottom",
    "evalsuite.textfiles": "bottom",
    "evalsuite.prompts": "bottom",
    "evalsuite.tokens": "bottom",
    "evalsuite.tokenizer": "bottom",
    "evalsuite.metrics": "bottom",
    "evalsuite.render": "bottom",
    # sources: what feeds a benchmark, model profiles (prompts, image rules, converters) and
    # data sets; a data loader may use a metric's tables, never the reverse
    "evalsuite.models": "sources",
    "evalsuite.datasets": "sources",
    # engines: what runs a model on a page; an engine may follow a profile or read a data set
    "evalsuite.engines": "engines",
    # inside-vllm: code vLLM imports in its own processes; it builds on the engines' pieces
    # (DeepSeek's views, the wire constants), and no engine depends on it
    "evalsuite.vllm_plugin": "inside-vllm",
    # middle: running benchmarks and keeping their results
    "evalsuite.records": "middle",
    "evalsuite.stats": "middle",
    "evalsuite.stats_paired": "middle",
    "evalsuite.golden": "middle",
    "evalsuite.runner": "middle",
    "evalsuite.shards": "middle",
    "evalsuite.request_cache": "middle",
    "evalsuite.benchmarks": "middle",
    # top: what a user runs or reads (the pytest front end, commands, reports, servers)
    "evalsuite.pytest_plugin": "top",
    "evalsuite.plugin": "top",
    "evalsuite.cli": "top",
    "evalsuite.__main__": "top",
    "evalsuite.commands": "top",
    "evalsuite.finix": "top",
    "evalsuite.single_image": "top",
    "evalsuite.reports": "top",
    "evalsuite.serving": "top",
    "evalsuite.perf": "top",
    "evalsuite.devtools": "top",
}
"""Module (and everything under it, except for the package's own name) → layer."""


@dataclass(frozen=True)
class Import:
    """One import of a package module by another: where it is written and how it runs."""

    importer: str
    imported: str
    path: Path
    line: int
    lazy: bool = False
    """Inside a function body: runs when the function is called."""
    type_only: bool = False
    """Under ``if TYPE_CHECKING:``: never runs."""

    @property
    def runs_at_import(self) -> bool:
        """Whether it runs when the importing module is imported (what makes cycles)."""
        return not (self.lazy or self.type_only)

    def where(self, root: Path | None = None) -> str:
        """``path:line``, the path relative to ``root`` when given."""
        path = self.path.relative_to(root) if root is not None else self.path
        return f"{path.as_posix()}:{self.line}"


@dataclass(frozen=True)
class Violation:
    """An import from a higher layer."""

    edge: Import
    importer_layer: str
    imported_layer: str

    def describe(self, root: Path | None = None) -> str:
        kind = " (function-local)" if self.edge.lazy else ""
        kind = " (TYPE_CHECKING)" if self.edge.type_only else kind
        return (
            f"{self.edge.where(root)}: {self.edge.importer} ({self.importer_layer}) imports "
            f"{self.edge.imported} ({self.imported_layer}){kind}"
        )


@dataclass(frozen=True)
class Cycle:
    """Modules importing each other at module level: ``edges`` go round, back to the start."""

    edges: tuple[Import, ...]

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(edge.importer for edge in self.edges)

    def describe(self, root: Path | None = None) -> str:
        lines = [" → ".join([*self.modules, self.modules[0]])]
        lines += [f"    {e.where(root)}: {e.importer} imports {e.imported}" for e in self.edges]
        return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    """What :func:`check` found; empty lists mean a clean package."""

    root: Path
    violations: list[Violation]
    cycles: list[Cycle]
    unassigned: list[str]

    @property
    def ok(self) -> bool:
        return not (self.violations or self.cycles or self.unassigned)

    def lines(self) -> list[str]:
        """The report as text, one problem per entry."""
        if self.ok:
            return ["layers: no upward import, no import cycle"]
        lines: list[str] = []
        if self.violations:
            lines.append(f"upward imports ({len(self.violations)}): a layer imports from above")
            lines += [f"  {v.describe(self.root)}" for v in self.violations]
        if self.cycles:
            lines.append(f"import cycles ({len(self.cycles)}) among module-level imports:")
            lines += ["  " + c.describe(self.root).replace("\n", "\n  ") for c in self.cycles]
        if self.unassigned:
            lines.append(
                f"modules without a layer ({len(self.unassigned)}): add them to LAYER_MAP in "
                "evalsuite/devtools/layers.py"
            )
            lines += [f"  {name}" for name in self.unassigned]
        return lines


def discover_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package in ``package_dir`` (namespace subfolders included), by its
    dotted name: ``pkg/a/b.py`` → ``pkg.a.b``, ``pkg/a/__init__.py`` → ``pkg.a``."""
    package_dir = Path(package_dir)
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if not all(part.isidentifier() for part in parts):
            continue  # __pycache__ is skipped by rglob("*.py"); this skips odd folders
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


class _ImportVisitor(ast.NodeVisitor):
    """Collects the imports of one module, noting function-local and TYPE_CHECKING ones."""

    def __init__(self, module: str, is_package: bool, path: Path, known: Iterable[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.path = path
        self.known = set(known)
        self.imports: list[Import] = []
        self._functions = 0
        self._type_checking = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking += 1
            for child in node.body:
                self.visit(child)
            self._type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(self._known_prefix(alias.name), node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node.module, node.level)
        if base is None:
            return
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            self._add(candidate if candidate in self.known else self._known_prefix(base),
                      node.lineno)

    def _absolute(self, module: str | None, level: int) -> str | None:
        """The absolute module name of ``from <level dots><module> import …``."""
        if level == 0:
            return module
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts) - 1:
            return None  # beyond the top-level package
        base = parts[: len(parts) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def _known_prefix(self, name: str) -> str | None:
        """The longest package module that ``name`` is or lies in; None outside the package."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.known:
                return candidate
        return None

    def _add(self, imported: str | None, line: int) -> None:
        if imported is None:
            return
        edge = Import(
            self.module,
            imported,
            self.path,
            line,
            lazy=self._functions > 0,
            type_only=self._type_checking > 0,
        )
        if edge not in self.imports:  # ``from pkg import a, b`` names pkg once
            self.imports.append(edge)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def collect_imports(package_dir: Path) -> list[Import]:
    """Every import of a package module by a package module, in file and line order."""
    modules = discover_modules(package_dir)
    imports: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _ImportVisitor(name, path.name == "__init__.py", path, modules)
        visitor.visit(tree)
        imports += visitor.imports
    return imports


def layer_of(module: str, layer_map: Mapping[str, str]) -> str | None:
    """The layer of ``module``: the entry of its longest name prefix in ``layer_map``. The
    top-level package's own entry covers only itself (its ``__init__``), not its modules."""
    top = module.split(".")[0]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in layer_map and (candidate != top or module == top):
            return layer_map[candidate]
    return None


def upward_imports(
    imports: Iterable[Import], layer_map: Mapping[str, str], layers: Sequence[str] = LAYERS
) -> list[Violation]:
    """The imports whose imported module lies in a higher layer than its importer."""
    rank = {name: index for index, name in enumerate(layers)}
    unknown = sorted(set(layer_map.values()) - set(rank))
    if unknown:
        raise ValueError(f"layer map names unknown layers {unknown}; layers are {list(layers)}")
    found = []
    for edge in imports:
        low, high = layer_of(edge.importer, layer_map), layer_of(edge.imported, layer_map)
        if low is not None and high is not None and rank[high] > rank[low]:
            found.append(Violation(edge, low, high))
    return found


def import_cycles(imports: Iterable[Import]) -> list[Cycle]:
    """One shortest cycle per group of modules that import each other at module level
    (strongly connected components of the import graph; lazy and TYPE_CHECKING imports left
    out)."""
    graph: dict[str, dict[str, Import]] = {}
    for edge in imports:
        if edge.runs_at_import and edge.importer != edge.imported:
            graph.setdefault(edge.importer, {}).setdefault(edge.imported, edge)
            graph.setdefault(edge.imported, {})
    cycles = []
    for component in _strongly_connected(graph):
        if len(component) > 1:
            cycles.append(Cycle(_shortest_cycle(graph, min(component), component)))
    return sorted(cycles, key=lambda cycle: cycle.modules)


def _strongly_connected(graph: Mapping[str, Mapping[str, Import]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _shortest_cycle(
    graph: Mapping[str, Mapping[str, Import]], start: str, component: set[str]
) -> tuple[Import, ...]:
    """The shortest path from ``start`` back to itself within ``component`` (breadth first)."""
    previous: dict[str, Import] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor, edge in sorted(graph[node].items()):
            if successor not in component:
                continue
            if successor == start:
                path = [edge]
                while path[0].importer != start:
                    path.insert(0, previous[path[0].importer])
                return tuple(path)
            if successor not in previous:
                previous[successor] = edge
                queue.append(successor)
    raise AssertionError(f"{start} is in a strongly connected component but on no cycle")


def check(
    package_dir: Path = PACKAGE_DIR,
    layer_map: Mapping[str, str] = LAYER_MAP,
    layers: Sequence[str] = LAYERS,
) -> Report:
    """Check the package in ``package_dir`` against ``layer_map`` and for import cycles."""
    package_dir = Path(package_dir).resolve()
    modules = discover_modules(package_dir)
    imports = collect_imports(package_dir)
    return Report(
        root=package_dir.parent,
        violations=upward_imports(imports, layer_map, layers),
        cycles=import_cycles(imports),
        unassigned=sorted(name for name in modules if layer_of(name, layer_map) is None),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report; 0 when clean, 1 otherwise."""
    parser = argparse.ArgumentParser(
        prog="python -m evalsuite.devtools.layers", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "package_dir", nargs="?", type=Path, default=PACKAGE_DIR,
        help="the package folder to check (default: evalsuite's own)",
    )
    args = parser.parse_args(argv)
    report = check(args.package_dir)
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
