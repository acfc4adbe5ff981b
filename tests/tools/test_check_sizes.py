"""tools/check_layers.py's size rule: modules over 1,000 lines and functions over 80 fail unless
tools/size_baseline.txt lists them, and listed ones may shrink but not grow."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.checker import REPO, check_layers


def _function(name: str, body_lines: int, indent: str = "") -> str:
    """A function of ``body_lines + 1`` lines."""
    return f"{indent}def {name}():\n" + f"{indent}    x = 1\n" * body_lines


def _package(root: Path, files: dict[str, str], baseline: str | None = None) -> Path:
    """A package ``hudi_ds`` under ``root`` with ``files``, and ``tools/size_baseline.txt``
    holding ``baseline`` when given."""
    pkg = root / "hudi_ds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    for rel, source in files.items():
        (pkg / rel).write_text(source)
    if baseline is not None:
        (root / "tools").mkdir()
        (root / "tools" / "size_baseline.txt").write_text(baseline)
    return pkg


def _run(pkg: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    rc = check_layers.main(pkg)
    return rc, capsys.readouterr().out.splitlines()


def test_functions_and_modules_within_the_limits_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _function("f", 79) + "\n" + "class C:\n" + _function("g", 79, "    ")
    source += "# filler\n" * (1000 - len(source.splitlines()))
    assert len(source.splitlines()) == 1000
    assert _run(_package(tmp_path, {"errors.py": source}), capsys) == (0, [])


def test_a_long_function_a_long_method_and_a_long_module_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nested = "def outer():\n" + _function("inner", 80, "    ")
    method = "class C:\n    @property\n" + _function("g", 79, "    ")
    source = _function("f", 80) + nested + method + "# filler\n" * 800
    rc, out = _run(_package(tmp_path, {"errors.py": source}), capsys)
    assert rc == 1
    assert out == [
        "function hudi_ds/errors.py C.g: 81 lines, over 80 (split it)",
        "function hudi_ds/errors.py f: 81 lines, over 80 (split it)",
        "function hudi_ds/errors.py outer: 82 lines, over 80 (split it)",
        "function hudi_ds/errors.py outer.inner: 81 lines, over 80 (split it)",
        "module hudi_ds/errors.py: 1045 lines, over 1000 (split it)",
    ]


def test_the_baseline_admits_what_it_lists_and_refuses_growth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _function("f", 90) + _function("g", 100) + _function("h", 85)
    baseline = (
        "# today's exceptions\n"
        "function hudi_ds/errors.py f 91\n"  # unchanged
        "function hudi_ds/errors.py g 95\n"  # grew to 101
        "function hudi_ds/errors.py gone 120\n"  # split since: no finding
    )
    rc, out = _run(_package(tmp_path, {"errors.py": source}, baseline), capsys)
    assert rc == 1
    assert out == [
        "function hudi_ds/errors.py g: 101 lines, grew from 95 (tools/size_baseline.txt; split it)",
        "function hudi_ds/errors.py h: 86 lines, over 80 (split it)",
    ]


def test_a_shrunk_entry_passes_and_the_written_baseline_admits_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = _package(tmp_path, {"errors.py": _function("f", 85)}, "function hudi_ds/errors.py f 99\n")
    assert _run(pkg, capsys) == (0, [])
    (pkg / "errors.py").write_text(_function("f", 85) + _function("g", 81))
    assert _run(pkg, capsys)[0] == 1
    check_layers.write_size_baseline(pkg, tmp_path / "tools" / "size_baseline.txt")
    assert check_layers.read_size_baseline(tmp_path / "tools" / "size_baseline.txt") == {
        ("function", "hudi_ds/errors.py f"): 86,
        ("function", "hudi_ds/errors.py g"): 82,
    }
    assert _run(pkg, capsys) == (0, [])


def test_hudi_ds_is_within_its_baseline() -> None:
    baseline = check_layers.read_size_baseline(REPO / "tools" / "size_baseline.txt")
    assert check_layers.size_errors(REPO / "hudi_ds", baseline) == []
