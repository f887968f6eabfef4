"""How a result reaches its pictures without the runs layer importing the presentation layer.

The result types (:class:`~simsched.runs.single.RunResult`, :class:`~simsched.runs.results.Comparison`,
:class:`~simsched.runs.results.ExperimentResult`, :class:`~simsched.runs.compare.CompareResult`) are
data. What renders them -- a notebook's HTML view, a matplotlib figure, compare.md's Markdown, an
experiment's report files -- lives in :mod:`simsched.present.notebook`, which registers it here
when it is imported::

    register("run", html=..., plot=...)            # the presentation layer, once
    html("run", result)                            # RunResult._repr_html_
    plot("run", result, "jct")                     # RunResult.plot("jct")
    render("compare", "markdown", compare_result)  # any other view by name

Kinds and views: ``run`` (a RunResult: ``html``, ``plot``), ``comparison`` (a Comparison: ``html``,
``plot``), ``compare`` (a CompareResult: ``markdown``, the text of compare.md), ``experiment`` (an
ExperimentResult: ``html``, ``plot``), ``experiment_stats`` (``write``: an experiment's statistics
tables and report.md, as ``simsched experiment`` writes them).

When nothing has registered a view yet, the loader installed by the ``simsched`` facade
(:func:`set_loader`; it imports :mod:`simsched.present.notebook`) is called once. Every import
of a simsched module runs the facade first, so the loader is always installed. This module stays
tiny: ``import simsched`` imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ``import simsched`` imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_views: dict[str, dict[str, Callable[..., Any]]] = {}
_loader: Callable[[], None] | None = None


def set_loader(loader: Callable[[], None]) -> None:
    """``loader()`` registers the renderers (imports the presentation layer); called when a view is missing."""
    global _loader
    _loader = loader


def register(kind: str, **views: Callable[..., Any]) -> None:
    """The functions that render a ``kind`` of result, by view name (``html=``, ``plot=`` ...)."""
    _views.setdefault(kind, {}).update(views)


def renderer(kind: str, view: str) -> Callable[..., Any]:
    """The function registered for ``kind``'s ``view``, loading the presentation layer when none is."""
    found = _views.get(kind, {}).get(view)
    if found is None and _loader is not None:
        _loader()
        found = _views.get(kind, {}).get(view)
    if found is None:
        raise LookupError(f"simsched.runs.display: no {view!r} view of {kind!r} is registered "
                          "(simsched.present.notebook registers them when imported)")
    return found


def render(kind: str, view: str, *args: Any, **kwargs: Any) -> Any:
    """``kind``'s ``view`` applied to ``args``."""
    return renderer(kind, view)(*args, **kwargs)


def html(kind: str, obj: Any) -> str:
    """A notebook's HTML view of ``obj`` (``_repr_html_``)."""
    return render(kind, "html", obj)


def plot(kind: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
    """A matplotlib Figure of ``obj`` (``.plot(kind, ...)``)."""
    return render(kind, "plot", obj, *args, **kwargs)
