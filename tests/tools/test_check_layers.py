"""tools/check_layers.py: layer order for every import (in functions, relative, TYPE_CHECKING)
and no import cycle, on small package trees and on hudi_ds itself."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.tools.checker import REPO, check_layers


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A package ``hudi_ds`` under ``root`` with ``files`` (paths relative to the package)."""
    pkg = root / "hudi_ds"
    for rel, source in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(pkg).parents:
            init = pkg / parent / "__init__.py"
            if not init.exists():
                init.write_text("")
        path.write_text(textwrap.dedent(source))
    return pkg


def _run(pkg: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = check_layers.main(pkg)
    return rc, capsys.readouterr().out


CLEAN = {
    "errors.py": "class HudiError(Exception): ...\n",
    "storage.py": "from hudi_ds.errors import HudiError\n",
    "timeline/instant.py": "from hudi_ds.storage import HudiError\n",
    "timeline/timeline.py": """\
        from hudi_ds.timeline.instant import HudiError

        def load():
            from hudi_ds.storage import HudiError
            return HudiError
        """,
    "log/reader.py": "from ..timeline import timeline\n",
    "table/table.py": """\
        from typing import TYPE_CHECKING

        from hudi_ds.log.reader import timeline

        if TYPE_CHECKING:
            from hudi_ds.timeline.timeline import load
        """,
}


def test_a_clean_tree_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(_tree(tmp_path, CLEAN), capsys)
    assert (rc, out) == (0, "")


def test_an_upward_import_inside_a_function_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["timeline/timeline.py"] = """\
        def load():
            from hudi_ds.log.reader import timeline
            return timeline
        """
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert "timeline/timeline.py:2: layer 'timeline' imports higher layer 'log'" in out
    assert "from hudi_ds.log.reader import timeline" in out


def test_an_upward_relative_import_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["storage.py"] = """\
        class Storage:
            def table(self):
                from .table import table
                return table
        """
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert "storage.py:3: layer 'storage' imports higher layer 'table'" in out


def test_an_upward_import_under_type_checking_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["log/reader.py"] = """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from hudi_ds.table.table import timeline
        """
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert "log/reader.py:4: layer 'log' imports higher layer 'table'" in out


def test_a_two_module_cycle_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = dict(CLEAN)
    files["timeline/instant.py"] = """\
        def parse():
            from hudi_ds.timeline import timeline
            return timeline
        """
    files["timeline/timeline.py"] = "from hudi_ds.timeline.instant import parse\n"
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert "import cycle between hudi_ds.timeline.instant, hudi_ds.timeline.timeline:" in out
    assert "timeline/instant.py:2: from hudi_ds.timeline import timeline" in out
    assert "timeline/timeline.py:1: from hudi_ds.timeline.instant import parse" in out
    assert out.count("import cycle") == 1


def test_a_cycle_closed_under_type_checking_is_a_cycle_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["timeline/instant.py"] = """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from hudi_ds.timeline.timeline import Timeline
        """
    files["timeline/timeline.py"] = "from hudi_ds.timeline.instant import TYPE_CHECKING\n"
    rc, out = _run(_tree(tmp_path, files), capsys)
    # types name a dependency as much as calls do: no cycle at all, not even for the checker
    assert rc == 1
    assert "import cycle between hudi_ds.timeline.instant, hudi_ds.timeline.timeline:" in out
    assert "timeline/instant.py:4: from hudi_ds.timeline.timeline import Timeline" in out


def test_a_longer_cycle_is_one_finding_naming_every_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["services/a.py"] = "import hudi_ds.services.b\n"
    files["services/b.py"] = "from hudi_ds.services.c import x\n"
    files["services/c.py"] = "x = 1\n\ndef f():\n    from . import a\n    return a\n"
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert "import cycle between hudi_ds.services.a, hudi_ds.services.b, hudi_ds.services.c:" in out
    assert "services/c.py:4: from . import a" in out
    assert out.count("import cycle") == 1


def test_a_package_init_importing_its_modules_is_not_a_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["timeline/__init__.py"] = "from hudi_ds.timeline.timeline import load\n"
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert (rc, out) == (0, "")


def test_pyspark_outside_spark_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["spark/reader.py"] = "import pyspark\n"
    files["table/reader.py"] = "def f():\n    import pyspark.sql\n"
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    assert out.splitlines() == [
        f"{tmp_path / 'hudi_ds' / 'table' / 'reader.py'}:2: imports pyspark outside hudi_ds/spark"
    ]


def test_the_spark_adapter_may_import_only_the_public_core_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(CLEAN)
    files["engine.py"] = "from hudi_ds.table.table import timeline\n"
    files["spark/options.py"] = "from hudi_ds.errors import HudiError\n"
    files["spark/reader.py"] = """\
        from typing import TYPE_CHECKING

        from hudi_ds.engine import timeline
        from hudi_ds.spark.options import HudiError

        if TYPE_CHECKING:
            from hudi_ds.timeline.timeline import load

        def read():
            from ..table import table
            return table
        """
    rc, out = _run(_tree(tmp_path, files), capsys)
    assert rc == 1
    reader = tmp_path / "hudi_ds" / "spark" / "reader.py"
    allowed = "(allowed: hudi_ds.engine, hudi_ds.errors, hudi_ds.config, hudi_ds.spark)"
    assert out.splitlines() == [
        f"{reader}:7: the engine adapter 'spark' imports 'hudi_ds.timeline.timeline' "
        f"{allowed}: from hudi_ds.timeline.timeline import load",
        f"{reader}:10: the engine adapter 'spark' imports 'hudi_ds.table.table' "
        f"{allowed}: from ..table import table",
    ]


def test_hudi_ds_has_no_upward_import_and_no_cycle(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(REPO / "hudi_ds", capsys)
    assert (rc, out) == (0, "")
