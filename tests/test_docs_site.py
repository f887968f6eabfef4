"""The docs site's hooks (docs/hooks/links.py): page mentions become site links, code stays code.

`mkdocs build --strict` itself runs in .ci/run (it needs the docs extra)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_links_hook", ROOT / "docs" / "hooks" / "links.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:  # mkdocs is in the docs extra
        import pytest

        pytest.skip(f"{exc.name} is not installed; pip install -e '.[docs]'")
    return module


def test_mentions_become_links_relative_to_the_page():
    link = _hooks().link_mentions
    assert link("see docs/evo.md, Speed.\n") == "see [docs/evo.md](evo.md), Speed.\n"
    assert link("(`docs/engine.md`)\n") == "([docs/engine.md](engine.md))\n"
    assert link("docs/learning.md#time\n", "api") == "[docs/learning.md#time](../learning.md#time)\n"


def test_a_mention_of_a_missing_page_stays_text():
    link = _hooks().link_mentions
    text = "see docs/evo.md and docs/not_yet.md\n"
    assert link(text, "", lambda path: path == "evo.md") == "see [docs/evo.md](evo.md) and docs/not_yet.md\n"


def test_code_and_existing_links_stay():
    link = _hooks().link_mentions
    text = ("```toml\n[compare]  # see docs/assignment.md\n```\n"
            "[docs/evo.md](evo.md#speed) and `python x docs/rl.md --flag`\n")
    assert link(text) == text


def test_the_readme_is_the_home_page_with_site_links():
    home = _hooks().readme_as_index()
    assert "](docs/" not in home
    assert "](plots.md)" in home and "](img/philly_gantt.png)" in home


def test_the_gallery_page_is_the_tools_and_its_figures_exist():
    spec = importlib.util.spec_from_file_location("gen_gallery", ROOT / "tools" / "gen_gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8") == module.page(), \
        "docs/gallery.md is out of date: python tools/gen_gallery.py"
    for group, _, _, _, figures in module.GROUPS:
        for name, _ in figures:
            assert (ROOT / "docs" / "img" / "gallery" / f"{group}_{name}.png").is_file(), (group, name)


def test_every_page_is_in_the_site_nav() -> None:
    """mkdocs --strict (in CI) fails on a page left out of the nav: say which, here, in seconds."""
    root = Path(__file__).resolve().parents[1]
    nav = (root / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    pages = sorted(p.relative_to(root / "docs").as_posix() for p in (root / "docs").rglob("*")
                   if p.suffix in (".md", ".ipynb") and "hooks" not in p.parts and p.name != "index.md")
    text = (root / "mkdocs.yml").read_text()
    # pages mkdocs leaves out of the site on purpose (the assignment handout's README, shipped in the wheel)
    excluded = set(text.split("exclude_docs: |", 1)[1].split("\n\n", 1)[0].split()) if "exclude_docs: |" in text else set()
    missing = [page for page in pages if f": {page}" not in nav and page not in excluded]
    assert not missing, f"docs pages not in mkdocs.yml's nav: {missing}"
