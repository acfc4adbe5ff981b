"""mkdocs hooks of the documentation site (mkdocs.yml ``hooks:``): links from docs/ to files
outside it.

The pages link to files of the repository that are not pages (``../README.md``,
``../bench/results/*.png``, ``../hudi_ds/...py``). mkdocs resolves a link only inside
``docs_dir``: such a link would warn (failing ``--strict``) or, with the warning turned off,
be silently dead on the site. Here each linked file that exists is copied into the site under
``_repo/<its path in the repository>`` and the link points at the copy (an image shows, a source
file opens as text, a markdown file such as the README is rendered as a page outside the nav,
its own links resolved from where it lies in the repository), and a link to a file that does
not exist is a warning, so ``--strict`` fails on it as on a broken link between pages.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

log = logging.getLogger("mkdocs.hooks.repo_links")

COPY_DIR = "_repo"
# a markdown link or image target: ](target) or ](target "title"); fenced code is skipped below
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.S | re.M)


def _source(file: File) -> Path:
    return Path(file.abs_src_path or "").resolve()


def _outside_targets(source: Path, markdown: str, docs_dir: Path) -> list[tuple[str, Path]]:
    """(link target, file it names) of each link of a page, read from ``source``, that leaves
    ``docs_dir``."""
    found = []
    text = FENCE.sub("", markdown)
    page_dir = source.parent
    for m in LINK.finditer(text):
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            continue
        path = target.split("#", 1)[0]
        if not path:
            continue
        resolved = (page_dir / path).resolve()
        if not resolved.is_relative_to(docs_dir):
            found.append((target, resolved))
    return found


def _repo_root(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def on_files(files: Files, config: Any) -> Files:
    """Add every existing repository file a page links to, as ``_repo/<path>``."""
    docs_dir = Path(config["docs_dir"]).resolve()
    root = _repo_root(config)
    added: set[str] = set()
    todo = [_source(page) for page in files.documentation_pages()]
    while todo:  # a copied markdown file is a page too: its links are followed as well
        source = todo.pop()
        markdown = source.read_text(encoding="utf-8")
        for _target, resolved in _outside_targets(source, markdown, docs_dir):
            if not resolved.is_file() or not resolved.is_relative_to(root):
                continue  # reported by on_page_markdown
            src_uri = f"{COPY_DIR}/{resolved.relative_to(root).as_posix()}"
            if src_uri in added:
                continue
            added.add(src_uri)
            files.append(
                File.generated(
                    config,
                    src_uri,
                    abs_src_path=str(resolved),
                    inclusion=InclusionLevel.NOT_IN_NAV,
                )
            )
            if resolved.suffix == ".md":
                todo.append(resolved)
    return files


def _link_uri(resolved: Path, docs_dir: Path, root: Path) -> str:
    """The site path (``src_uri``) of a repository file: its page in docs/, else its copy."""
    if resolved.is_relative_to(docs_dir):
        return resolved.relative_to(docs_dir).as_posix()
    return f"{COPY_DIR}/{resolved.relative_to(root).as_posix()}"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point each link that leaves ``docs_dir`` at its copy; warn on a missing file. In a copied
    page every relative link is resolved from the page's place in the repository."""
    docs_dir = Path(config["docs_dir"]).resolve()
    root = _repo_root(config)
    source = _source(page.file)
    copied = not source.is_relative_to(docs_dir)
    targets = dict(_outside_targets(source, markdown, docs_dir))
    if not targets and not copied:
        return markdown
    page_dir = posixpath.dirname(page.file.src_uri)

    def rewrite(m: re.Match[str]) -> str:
        target = m.group(2)
        resolved = targets.get(target)
        if resolved is None:
            if not copied or re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
                return m.group(0)
            path, _, anchor = target.partition("#")
            inside = (source.parent / path).resolve()
            rel = posixpath.relpath(_link_uri(inside, docs_dir, root), page_dir or ".")
            return f"{m.group(1)}{rel}{'#' + anchor if anchor else ''}{m.group(3)}"
        if not resolved.is_file() or not resolved.is_relative_to(root):
            log.warning(
                "Doc file '%s' links to '%s', which is not a file of the repository",
                page.file.src_uri,
                target,
            )
            return m.group(0)
        _, _, anchor = target.partition("#")
        rel = posixpath.relpath(_link_uri(resolved, docs_dir, root), page_dir or ".")
        return f"{m.group(1)}{rel}{'#' + anchor if anchor else ''}{m.group(3)}"

    # rewrite outside fenced code only: split on fences, keep them as they are
    out, last = [], 0
    for fence in FENCE.finditer(markdown):
        out.append(LINK.sub(rewrite, markdown[last : fence.start()]))
        out.append(fence.group(0))
        last = fence.end()
    out.append(LINK.sub(rewrite, markdown[last:]))
    return "".join(out)
