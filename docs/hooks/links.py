"""mkdocs hooks of the docs site (mkdocs.yml ``hooks:``).

- The home page is README.md, read at build time (one source, no copy): its
  ``docs/X`` links become site links.
- Prose that names a page as ``docs/X.md`` (outside code) becomes a link to
  that page, so cross-references written for a reader of the checkout are
  site links too. A mention of a page that does not exist stays plain text
  (no broken link) and the build log says so.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.hooks.links")
_FENCE = re.compile(r"^(```|~~~)")
#: `docs/X.md` in backticks, or bare; not already the text of a link ([docs/X.md](...))
_MENTION = re.compile(r"(?<!\[)(`?)docs/([A-Za-z0-9_./-]+?\.md)(#[A-Za-z0-9_-]+)?\1(?!\]\()")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def link_mentions(markdown: str, page_dir: str = "", exists: Callable[[str], bool] | None = None) -> str:
    """``docs/X.md`` mentions outside code -> ``[docs/X.md](X.md)``, relative to ``page_dir``
    (the page's folder inside docs/). A mention in backticks becomes a link too; code blocks stay.
    With ``exists``, a mention of a page for which it is false stays as it is."""
    out: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            out.append(line)
            continue
        out.append(line if fenced else _link_line(line, page_dir, exists))
    return "".join(out)


def _link_line(line: str, page_dir: str, exists: Callable[[str], bool] | None) -> str:
    def repl(m: re.Match) -> str:
        if exists is not None and not exists(m.group(2)):
            return m.group(0)
        target = posixpath.relpath(m.group(2), page_dir or ".") + (m.group(3) or "")
        return f"[docs/{m.group(2)}{m.group(3) or ''}]({target})"

    # inline code that is not just a docs/X.md mention stays as it is
    pieces, last = [], 0
    for code in _INLINE_CODE.finditer(line):
        pieces.append(_MENTION.sub(repl, line[last:code.start()]))
        text = code.group(0)
        pieces.append(_MENTION.sub(repl, text) if _MENTION.fullmatch(text) else text)
        last = code.end()
    pieces.append(_MENTION.sub(repl, line[last:]))
    return "".join(pieces)


def readme_as_index() -> str:
    """README.md as the site's home page: ``](docs/...)`` links made relative to docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files, config):
    if files.get_file_from_path("index.md") is None:
        files.append(File.generated(config, "index.md", content=readme_as_index()))
    return files


def on_page_markdown(markdown, page, config, files):
    def exists(path: str) -> bool:
        if files.get_file_from_path(path) is not None:
            return True
        log.info("%s mentions docs/%s, which is not a page: left as text", page.file.src_uri, path)
        return False

    return link_mentions(markdown, posixpath.dirname(page.file.src_uri), exists)
