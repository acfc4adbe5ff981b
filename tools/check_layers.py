"""Check hudi_ds's layering and refuse import cycles.

Layers, bottom to top (docs/architecture.md):
    errors, config, faults -> storage, schema, table_config, keygen, joda
    -> timeline, layout -> concurrency -> log -> index, merge -> table -> write -> services
    -> engine -> spark, cli, api

Rules, for every module of the package:

1. Every import anywhere in the module -- at module level, inside functions and classes, under
   ``if TYPE_CHECKING:``, relative imports resolved -- names a module of its own layer or of a
   layer below.
2. Nothing outside ``hudi_ds/spark`` imports pyspark.
3. The package's import graph has no cycle at all. Its edges are all imports: module level,
   inside functions and under ``if TYPE_CHECKING:`` alike (a type names a dependency as much as
   a call does). An edge goes to the module an import names: ``import a.b.c`` and
   ``from a.b.c import x`` to ``a.b.c``, ``from a.b import c`` to ``a.b.c`` when ``c`` is a
   module, else to ``a.b`` (the package's ``__init__``). Each strongly connected component of
   more than one module (or a module importing itself) is refused, printed with its modules
   and the import lines inside it.
4. The engine adapter ``hudi_ds/spark`` imports of hudi_ds only the public core API
   (``hudi_ds.engine``), the error family (``hudi_ds.errors``), typed options
   (``hudi_ds.config``) and its own modules (:data:`ADAPTER_IMPORTS`): whatever else it needs
   belongs behind ``hudi_ds.engine``.
5. Sizes do not grow back: no module over 1,000 lines and no function over 80 lines (from its
   ``def`` to its last line, methods and nested functions too) unless ``tools/size_baseline.txt``
   lists it, and none listed there grows past its listed size. A listed one may shrink; after a
   split, ``python tools/check_layers.py --write-size-baseline`` rewrites the file.

Usage: ``python tools/check_layers.py [PACKAGE_DIR]`` (default: the repository's ``hudi_ds``);
``main(root)`` returns the exit status (0 clean, 1 findings) and prints the findings.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LAYERS = [
    {"errors", "config", "faults"},
    {
        "storage",
        "storage_types",
        "object_store",
        "schema",
        "table_config",
        "table_create",
        "keygen",
        "joda",
    },
    {"timeline", "layout"},
    # the transaction around a commit fences completions on the timeline; only write/ and
    # services/ use the room
    {"concurrency"},
    {"log"},
    {"index", "merge", "metadata"},
    {"table"},
    {"write"},
    {"services"},
    # DML statements (merge, update, delete by predicate) beside the engine API: both turn a
    # request into reads and writes of the layers below
    {"engine", "dml"},
    {"spark", "cli", "api"},
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
#: engine adapter package -> the top-level modules of the package it may import (rule 4)
ADAPTER_IMPORTS = {"spark": ("engine", "errors", "config", "spark")}


@dataclass(frozen=True)
class Import:
    """One import statement's target, as found in a module."""

    module: str  # the importing module (dotted)
    target: str  # the imported module (dotted, resolved)
    path: Path
    line: int
    text: str  # the statement's source line
    type_only: bool  # under ``if TYPE_CHECKING:``


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` in the package rooted at ``root``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``node`` with whether it sits in an ``if TYPE_CHECKING:`` body."""
    for child in ast.iter_child_nodes(node):
        yield child, type_only
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield stmt, True
                yield from _walk(stmt, True)
            for stmt in child.orelse:
                yield stmt, type_only
                yield from _walk(stmt, type_only)
        else:
            yield from _walk(child, type_only)


def _resolve(name: str, modules: set[str]) -> str:
    """The longest prefix of ``name`` that is a module of the package (``name`` if none is)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return name


def imports_of(path: Path, root: Path, modules: set[str]) -> list[Import]:
    """Every import in the module at ``path``, relative ones resolved against its package."""
    mod = module_name(path, root)
    is_package = path.name == "__init__.py"
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, str(path))
    found: list[Import] = []
    for node, type_only in _walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [_resolve(a.name, modules) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = mod.split(".") if is_package else mod.split(".")[:-1]
                keep = len(package) - (node.level - 1)
                base = ".".join(package[: max(keep, 0)])
                source_mod = f"{base}.{node.module}" if node.module else base
            else:
                source_mod = node.module or ""
            for alias in node.names:
                sub = f"{source_mod}.{alias.name}"
                targets.append(sub if sub in modules else _resolve(source_mod, modules))
        else:
            continue
        text = lines[node.lineno - 1].strip()
        for target in dict.fromkeys(targets):
            found.append(Import(mod, target, path, node.lineno, text, type_only))
    return found


def _layer(module: str, package: str) -> str | None:
    parts = module.split(".")
    if parts[0] != package:
        return None
    return parts[1] if len(parts) > 1 else None


def layer_errors(imports: list[Import], package: str) -> list[str]:
    """Imports of a higher layer, of pyspark outside spark/, and of modules with no layer."""
    errors = []
    for imp in imports:
        own = _layer(imp.module, package)
        if imp.target.split(".")[0] == "pyspark" and own != "spark":
            errors.append(f"{imp.path}:{imp.line}: imports pyspark outside {package}/spark")
        dep = _layer(imp.target, package)
        if own is None or dep is None or dep == own:
            continue
        if own not in RANK or dep not in RANK:
            errors.append(f"{imp.path}:{imp.line}: module '{own}' or '{dep}' has no layer")
        elif RANK[dep] > RANK[own]:
            errors.append(
                f"{imp.path}:{imp.line}: layer '{own}' imports higher layer '{dep}': {imp.text}"
            )
    return errors


def adapter_errors(imports: list[Import], package: str) -> list[str]:
    """Imports of an engine adapter (:data:`ADAPTER_IMPORTS`) beyond the public core API."""
    errors = []
    for imp in imports:
        own = _layer(imp.module, package)
        allowed = ADAPTER_IMPORTS.get(own or "")
        dep = _layer(imp.target, package)
        if allowed is None or dep is None or dep in allowed:
            continue
        errors.append(
            f"{imp.path}:{imp.line}: the engine adapter '{own}' imports '{imp.target}' "
            f"(allowed: {', '.join(f'{package}.{m}' for m in allowed)}): {imp.text}"
        )
    return errors


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
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
                    work.append((child, iter(sorted(graph.get(child, ())))))
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
                components.append(sorted(component))
    return components


def cycle_errors(imports: list[Import], modules: set[str]) -> list[str]:
    """One finding per import cycle: the component's modules and the imports inside it."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if imp.target in modules:
            graph[imp.module].add(imp.target)
    errors = []
    for component in strongly_connected(graph):
        members = set(component)
        if len(component) == 1 and component[0] not in graph[component[0]]:
            continue
        closing = [
            f"    {imp.path}:{imp.line}: {imp.text}"
            for imp in imports
            if imp.module in members and imp.target in members
        ]
        errors.append(
            "import cycle between " + ", ".join(component) + ":\n" + "\n".join(sorted(closing))
        )
    return errors


def check(root: Path) -> list[str]:
    """Every finding for the package rooted at directory ``root`` (layers, the adapter's
    imports, then cycles)."""
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(p, root) for p in paths}
    imports = [imp for p in paths for imp in imports_of(p, root, modules)]
    return (
        layer_errors(imports, root.name)
        + adapter_errors(imports, root.name)
        + cycle_errors(imports, modules)
    )


# -- sizes ----------------------------------------------------------------------------------------

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 80
SIZE_BASELINE = "tools/size_baseline.txt"


def sizes(root: Path) -> dict[tuple[str, str], int]:
    """Every module's line count and every function's (methods and nested functions too, from
    its ``def`` -- or first decorator -- to its last line), keyed ``("module", path)`` and
    ``("function", "path qualified.name")``; paths relative to ``root``'s parent, ``/``-separated.
    Of two functions with one qualified name (a property's getter and setter) the longer counts."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        source = path.read_text()
        found[("module", rel)] = len(source.splitlines())

        def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                        length = (child.end_lineno or child.lineno) - first + 1
                        key = ("function", f"{rel} {name}")
                        found[key] = max(found.get(key, 0), length)
                    visit(child, f"{name}.")
                else:
                    visit(child, prefix)

        visit(ast.parse(source, str(path)), "")
    return found


def over_limits(found: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The entries of :func:`sizes` over :data:`MAX_MODULE_LINES` / :data:`MAX_FUNCTION_LINES`."""
    limit = {"module": MAX_MODULE_LINES, "function": MAX_FUNCTION_LINES}
    return {key: n for key, n in found.items() if n > limit[key[0]]}


def read_size_baseline(path: Path) -> dict[tuple[str, str], int]:
    """The baseline file: ``module <path> <lines>`` and ``function <path> <name> <lines>`` per
    line, ``#`` comments; an absent file is an empty baseline."""
    baseline: dict[tuple[str, str], int] = {}
    if not path.is_file():
        return baseline
    for line in path.read_text().splitlines():
        parts = line.split("#", 1)[0].split()
        if parts:
            baseline[(parts[0], " ".join(parts[1:-1]))] = int(parts[-1])
    return baseline


def size_errors(root: Path, baseline: dict[tuple[str, str], int]) -> list[str]:
    """Modules over 1,000 lines and functions over 80 that the baseline does not list, and listed
    ones that grew past their baseline size. A listed one may shrink (or go) freely."""
    errors = []
    for (kind, what), n in sorted(over_limits(sizes(root)).items()):
        limit = MAX_MODULE_LINES if kind == "module" else MAX_FUNCTION_LINES
        allowed = baseline.get((kind, what))
        if allowed is None:
            errors.append(f"{kind} {what}: {n} lines, over {limit} (split it)")
        elif n > allowed:
            errors.append(
                f"{kind} {what}: {n} lines, grew from {allowed} ({SIZE_BASELINE}; split it)"
            )
    return errors


def write_size_baseline(root: Path, path: Path) -> None:
    """Write today's modules and functions over the limits to the baseline file ``path``."""
    lines = [
        f"# Modules over {MAX_MODULE_LINES} lines and functions over {MAX_FUNCTION_LINES} lines"
        " of hudi_ds (tools/check_layers.py):",
        "# each may shrink, none may grow, and no other may pass the limits.",
        "# Rewrite after a split: python tools/check_layers.py --write-size-baseline",
    ]
    for (kind, what), n in sorted(over_limits(sizes(root)).items()):
        lines.append(f"{kind} {what} {n}")
    path.write_text("\n".join(lines) + "\n")


def main(root: Path | None = None) -> int:
    """Check the package at ``root`` (default: the repository's ``hudi_ds``); print findings.

    Sizes are checked against ``tools/size_baseline.txt`` next to the package (none: an empty
    baseline)."""
    if root is None:
        root = Path(__file__).resolve().parents[1] / "hudi_ds"
    errors = check(root) + size_errors(root, read_size_baseline(root.parent / SIZE_BASELINE))
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-size-baseline"]:
        repo = Path(__file__).resolve().parents[1]
        write_size_baseline(repo / "hudi_ds", repo / SIZE_BASELINE)
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
