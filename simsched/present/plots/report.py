"""Saving figures (PNG/SVG files) and the self-contained ``report.html``.

The report embeds every figure as inline SVG (fonts drawn as paths) and has
no script, stylesheet, font or image reference outside the file: it opens
from disk with no network. SVG ids are salted with the figure's name so
several figures in one page never share an id.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.core.atomic import replacing as atomic_replacing
from simsched.core.atomic import subfolder, write_text
from simsched.core.version import __version__
from simsched.present.plots import pyplot

FORMATS = ("png", "svg")


def save_figures(figures: Mapping[str, Any], folder: str | Path, fmt: str = "png",
                 close: bool = True) -> list[Path]:
    """Write each figure as ``folder/NAME.fmt`` (and close it unless ``close`` is false). ``folder``
    (``plots/``) is made inside an output folder, and is refused when it is a link (atomic.subfolder)."""
    plt = pyplot()
    folder = subfolder(folder)
    paths = []
    for name, fig in figures.items():
        path = folder / f"{name}.{fmt}"
        with plt.rc_context({"svg.hashsalt": name}), atomic_replacing(path) as tmp:  # never via a planted link
            fig.savefig(tmp, format=fmt, dpi=100, metadata=_metadata(fmt))
        if close:
            plt.close(fig)
        paths.append(path)
    return paths


def _metadata(fmt: str) -> dict[str, Any]:
    # no creation date: the same run gives the same file
    return {"Date": None} if fmt == "svg" else {}


def svg_markup(fig: Any, name: str) -> str:
    """The figure as an ``<svg>`` element ready to inline in HTML (no XML prolog, no metadata block)."""
    import io

    plt = pyplot()
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    # fixed pixel size from the figure; the page scales it down on narrow screens
    return text


def table_html(frame: pd.DataFrame, caption: str = "", index: bool = False) -> str:
    """A plain HTML table (escaped cells)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in ([frame.index.name or ""] if index else [])
                   + list(frame.columns))
    rows = []
    for label, row in frame.iterrows():
        cells = ([f"<th>{html.escape(str(label))}</th>"] if index else []) + [
            f"<td>{html.escape(_cell(v))}</td>" for v in row.tolist()]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<table class="metrics">{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


_STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table.metrics { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
table.metrics td, table.metrics th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
table.metrics th:first-child, table.metrics td:first-child { text-align: left; }
table.metrics caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.meta dt { font-weight: bold; } dl.meta dd { margin: 0; font-family: monospace; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
table.metrics td.num, table.metrics th.num { text-align: right; }
p.warning { background: #fff4e0; border-left: 4px solid #e08a00; padding: 0.3em 0.6em; }
p.failed { background: #fde8e8; border-left: 4px solid #c62828; padding: 0.3em 0.6em; }
p.note { color: #444; font-size: 0.9em; }
code { font-family: monospace; font-size: 0.95em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
"""


def write_report(path: str | Path, title: str, meta: Sequence[tuple[str, Any]],
                 tables: Iterable[str], figures: Mapping[str, Any],
                 captions: Mapping[str, str] | None = None,
                 texts: Sequence[tuple[str, str]] = ()) -> Path:
    """Write a self-contained HTML page: metadata list, tables (HTML from :func:`table_html`),
    figures (inline SVG, closed afterwards) and preformatted texts (e.g. the scenario file)."""
    plt = pyplot()
    captions = captions or {}
    parts = [f"<h1>{html.escape(title)}</h1>", '<dl class="meta">']
    for key, value in list(meta) + [("simsched version", __version__)]:
        parts.append(f"<dt>{html.escape(str(key))}</dt><dd>{html.escape(str(value))}</dd>")
    parts.append("</dl>")
    tables = list(tables)
    if tables:
        parts.append("<h2>Metrics</h2>")
        parts.extend(tables)
    if figures:
        parts.append("<h2>Figures</h2>")
    for name, fig in figures.items():
        caption = captions.get(name, "")
        parts.append(f'<figure id="fig-{html.escape(name)}" class="figure">{svg_markup(fig, name)}'
                     + (f"<figcaption>{html.escape(caption)}</figcaption>" if caption else "") + "</figure>")
        plt.close(fig)
    for heading, text in texts:
        parts.append(f"<h2>{html.escape(heading)}</h2><pre>{html.escape(text)}</pre>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
    return write_text(path, page)  # atomically, and never through a planted link
