"""A griffe extension for the API pages: Sphinx roles in docstrings (``:class:`Scenario```,
``:func:`~simsched.runs.single.run```, ``:data:`X```) render as inline code instead of raw role text.

The docstrings are written for readers of the source, with reST roles and ``double
backticks``; Markdown shows ``double backticks`` as code already."""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`~?([^`]+)`")


class RstRoles(griffe.Extension):
    def _fix(self, obj) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(lambda m: f"`{m.group(1)}`", obj.docstring.value)

    def on_instance(self, *, obj, **kwargs) -> None:
        self._fix(obj)
