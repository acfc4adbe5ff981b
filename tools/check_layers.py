"""Check hudi_ds's layering: a module imports only from its own layer or the layers below.

Layers, bottom to top (docs/architecture.md):
    errors, config -> storage, schema, table_config, keygen -> timeline, layout, log
    -> index, merge -> table -> write -> services -> spark, cli
Also: nothing outside hudi_ds/spark imports pyspark.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LAYERS = [
    {"errors", "config", "faults"},
    {"storage", "schema", "table_config", "table_create", "keygen"},
    {"timeline", "layout", "log"},
    {"index", "merge"},
    {"table"},
    {"write"},
    {"services"},
    {"spark", "cli", "api"},
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "hudi_ds" else None


def main() -> int:
    root = Path(__file__).resolve().parents[1] / "hudi_ds"
    errors = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        mod = ".".join(rel.parts)
        own = top(mod) if mod != "hudi_ds.__init__" else None
        if own is not None:
            own = own.removesuffix(".__init__")
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "pyspark" and own != "spark":
                    errors.append(f"{path}: imports pyspark outside hudi_ds/spark")
                dep = top(name)
                if own is None or dep is None or dep == own:
                    continue
                if own not in RANK or dep not in RANK:
                    errors.append(f"{path}: module '{own}' or '{dep}' has no layer")
                elif RANK[dep] > RANK[own]:
                    errors.append(f"{path}: layer '{own}' imports higher layer '{dep}' ({name})")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
