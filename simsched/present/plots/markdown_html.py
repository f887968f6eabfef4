"""compare.md as HTML for ``report.html``: the subset of Markdown simsched itself writes there.

compare.md holds what the terminal shows of a comparison (simsched.present.compare_tables.to_markdown):
the warnings and the failed runs before the tables (``Warning: ...``, ``Failed: ...``), the metric
tables with the best mean in bold and the schedulers that left jobs unfinished marked †, the rank table
with its *Place* column, and the notes. The report shows the same, so it says no less than the
terminal: headings (``##``/``###``), paragraphs, pipe tables (a ``---:`` column right-aligned),
``**bold**`` and ```code``` spans. Every piece of text is escaped.
"""

from __future__ import annotations

import html
import re

#: a paragraph starting with one of these gets the class, so the page can colour it as the terminal does
KINDS = {"Warning:": "warning", "Failed:": "failed", "Note:": "note"}


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str], caption: str) -> str:
    header, rule, *body = lines
    right = ["---:" in cell for cell in _cells(rule)]
    align = [' class="num"' if r else "" for r in right]
    head = "".join(f"<th{a}>{_inline(c)}</th>" for c, a in zip(_cells(header), align))
    rows = "".join("<tr>" + "".join(f"<td{a}>{_inline(c)}</td>" for c, a in zip(_cells(row), align)) + "</tr>"
                   for row in body)
    cap = f"<caption>{_inline(caption)}</caption>" if caption else ""
    return f'<table class="metrics">{cap}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def markdown_html(text: str) -> str:
    """compare.md's text as HTML: a table takes the heading just before it as its caption."""
    parts: list[str] = []
    blocks = re.split(r"\n\s*\n", text.strip())
    caption = ""
    for block in blocks:
        lines = block.strip().splitlines()
        if not lines:
            continue
        if lines[0].startswith("#"):
            level = len(lines[0]) - len(lines[0].lstrip("#"))
            title = lines[0][level:].strip()
            if level >= 3:  # a table's title: its caption, as the terminal titles its tables
                caption = title
                continue
            parts.append(f"<h3>{_inline(title)}</h3>")
            continue
        if len(lines) >= 2 and lines[0].startswith("|") and re.fullmatch(r"\|[-:| ]+\|", lines[1].strip()):
            parts.append(_table(lines, caption))
            caption = ""
            continue
        paragraph = " ".join(line.strip() for line in lines)
        kind = next((css for start, css in KINDS.items() if paragraph.startswith(start)), "")
        parts.append(f'<p class="{kind}">{_inline(paragraph)}</p>' if kind else f"<p>{_inline(paragraph)}</p>")
    return "\n".join(parts)
