"""A griffe extension of the documentation site (mkdocs.yml): the docstrings' Sphinx roles as
code.

hudi_ds's docstrings name other objects Sphinx's way (``:class:`~hudi_ds.storage.Storage```,
``:func:`write```), which mkdocstrings shows as written, role and all. This turns each into
inline code of the name -- its last part where Sphinx's ``~`` asks for the short form -- so the
API reference reads as the source means it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def _plain(m: re.Match[str]) -> str:
    name = m.group(2)
    return f"`{name.rsplit('.', 1)[-1] if m.group(1) else name}`"


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_plain, obj.docstring.value)
