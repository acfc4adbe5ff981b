"""The documentation site builds with ``mkdocs build --strict`` (what ``make docs`` runs): every
warning -- a broken link or anchor, a page left out of the nav, a docstring griffe cannot
parse -- fails the build. And the links from docs/ to files outside it
(tools/mkdocs_hooks.py) reach a copy of the file on the site, or fail the build when the file
does not exist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hudi_ds

REPO = Path(hudi_ds.__file__).resolve().parents[1]
HOOKS = REPO / "tools" / "mkdocs_hooks.py"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_site_builds_without_warnings(tmp_path: Path) -> None:
    proc = _build(REPO / "mkdocs.yml", tmp_path / "site")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "WARNING" not in log, log[-4000:]
    site = tmp_path / "site"
    # the API reference was generated from the docstrings, not left as its ::: lines
    api = (site / "reference" / "api.html").read_text()
    assert ":::" not in api
    for name in ("write", "read", "HudiTable", "rescale_buckets"):
        assert f'id="hudi_ds.{name}"' in api, name
    errors = (site / "reference" / "errors.html").read_text()
    assert 'id="hudi_ds.errors.SparkSetupError"' in errors
    # Sphinx roles of the docstrings become code (tools/griffe_roles.py)
    assert ":class:" not in api and "<code>hudi_ds.table.table.ReadableTable</code>" in api
    spark = (site / "reference" / "spark.html").read_text()
    assert 'id="hudi_ds.spark.register"' in spark
    assert 'id="hudi_ds.spark.MergeBuilder"' in spark


def _mini_site(root: Path, index: str) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text(index)
    (root / "README.md").write_text("# Readme\n\nSee [the docs](docs/index.md).\n")
    (root / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    config = root / "mkdocs.yml"
    config.write_text(
        f"site_name: t\nuse_directory_urls: false\nhooks:\n  - {HOOKS}\nnav:\n  - index.md\n"
    )
    return config


def test_links_outside_docs_reach_a_copy(tmp_path: Path) -> None:
    config = _mini_site(
        tmp_path / "ok",
        "# Home\n\n[readme](../README.md#readme) ![chart](../chart.png)\n\n"
        # code is shown as written: a link in it is no link
        "* in a list:\n\n  ```text\n  [not a link](../nothing_here.py)\n  ```\n",
    )
    proc = _build(config, tmp_path / "ok" / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = tmp_path / "ok" / "site"
    html = (site / "index.html").read_text()
    assert 'href="_repo/index.html#readme"' in html
    assert 'src="_repo/chart.png"' in html
    assert (site / "_repo" / "chart.png").read_bytes() == b"\x89PNG\r\n\x1a\n"
    # the copied README is a page whose own links resolve from its place in the repository
    assert 'href="../index.html"' in (site / "_repo" / "index.html").read_text()


def test_a_link_outside_docs_to_a_missing_file_fails_the_build(tmp_path: Path) -> None:
    config = _mini_site(tmp_path, "# Home\n\n[code](../hudi_ds/nothing_here.py)\n")
    proc = _build(config, tmp_path / "site")
    assert proc.returncode != 0
    assert "links to '../hudi_ds/nothing_here.py', which is not a file of the repository" in (
        proc.stderr
    ), proc.stderr[-3000:]
