"""compare's report.html says what the terminal says (issue 37): the failed runs, the warnings (jobs left
unfinished) and the † marker, the rank table with its failed cells and Place column; rendered by headless
Chromium, the failed and warning lines are on the page, coloured."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="the plots extra is not installed (pip install -e '.[plots]')")

from simsched.cli.main import main  # noqa: E402
from simsched.present.plots.markdown_html import markdown_html  # noqa: E402
from tests.test_plots import _chrome, _chromium  # noqa: E402

TESTS = Path(__file__).resolve().parent


def test_markdown_html_by_hand() -> None:
    text = ("## Title & co\n\nWarning: a <b> left `x` unfinished\n\nFailed: `bob:P` on i (seed 2): boom\n\n"
            "| Metric | `a` | `b` † |\n|---|---:|---:|\n| Avg | **1.00** | 2 (n=1) |\n\n"
            "### Rank per case\n\n| Scheduler | i#1 | Place |\n|---|---:|---:|\n| `a` | failed | 2 |\n\n"
            "Note: failed runs.\n")
    assert markdown_html(text) == (
        "<h3>Title &amp; co</h3>\n"
        '<p class="warning">Warning: a &lt;b&gt; left <code>x</code> unfinished</p>\n'
        '<p class="failed">Failed: <code>bob:P</code> on i (seed 2): boom</p>\n'
        '<table class="metrics"><thead><tr><th>Metric</th><th class="num"><code>a</code></th>'
        '<th class="num"><code>b</code> †</th></tr></thead><tbody><tr><td>Avg</td><td class="num">'
        '<strong>1.00</strong></td><td class="num">2 (n=1)</td></tr></tbody></table>\n'
        '<table class="metrics"><caption>Rank per case</caption><thead><tr><th>Scheduler</th>'
        '<th class="num">i#1</th><th class="num">Place</th></tr></thead><tbody><tr><td><code>a</code></td>'
        '<td class="num">failed</td><td class="num">2</td></tr></tbody></table>\n'
        '<p class="note">Note: failed runs.</p>')


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A class of three over 2 seeds: fifo; a student who raises on seed 2; one who leaves jobs unfinished."""
    folder = tmp_path_factory.mktemp("class")
    shutil.copy(TESTS / "data" / "class37" / "class.toml", folder / "class.toml")
    shutil.copy(TESTS / "data" / "class37" / "some_seeds.py", folder / "some_seeds.py")
    shutil.copy(TESTS / "cheat_policies.py", folder / "cheat_policies.py")
    out = folder / "cmp"
    code = main(["compare", str(folder / "class.toml"), "--schedulers",
                 "fifo,some_seeds.py:Policy,cheat_policies.py:OnlyShort", "--seeds", "2", "--keep-going",
                 "--workers", "1", "--out", str(out), "--report", "--quiet"])
    assert code == 4
    return out / "report.html"


def test_the_report_shows_the_failed_runs_warnings_and_marks(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert '<p class="failed">Failed: <code>some_seeds:Policy</code> on class37 (seed 2): ' in page
    assert "Policy.decide raised ValueError: student bug on some seeds" in page
    assert '<p class="warning">Warning: cheat_policies:OnlyShort left feasible jobs unfinished in 2 of 2 run(s)' in page
    assert page.count("<code>cheat_policies:OnlyShort</code> †") == 3  # both metric tables and the rank table
    assert "† left feasible jobs unfinished" in page
    assert '<th class="num">Place</th>' in page and '<td class="num">failed</td>' in page
    assert "(n=1)" in page and ">nan<" not in page and "<!-- nan -->" not in page  # no nan, in a table or a figure
    assert "<!-- failed -->" in page  # the rank figure's cell of the failed run
    # every line the terminal prints before the tables is in the page
    compare_md = (report.parent / "compare.md").read_text(encoding="utf-8")
    for line in compare_md.splitlines():
        if line.startswith(("Warning:", "Failed:")):
            assert line.split(":", 1)[1].split("`")[-1].strip()[:40].replace("&", "&amp;") in page


MEASURE = """<script>
window.addEventListener('load', () => {
  const boxes = {};
  for (const kind of ['failed', 'warning']) {
    const r = document.querySelector('p.' + kind).getBoundingClientRect();
    boxes[kind] = [r.left, r.top, r.width, r.height];
  }
  const out = document.createElement('pre'); out.id = 'measured';
  out.textContent = JSON.stringify({boxes, height: document.documentElement.scrollHeight});
  document.body.appendChild(out);
});
</script></body>"""


def test_chromium_shows_the_failed_and_warning_lines(report: Path, tmp_path: Path) -> None:
    binary = _chromium()
    width = 1200
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE), encoding="utf-8")
    dom = _chrome(binary, tmp_path / "profile1", f"--window-size={width},1000", "--virtual-time-budget=5000",
                  "--dump-dom", measured.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    data = json.loads(dom.stdout.split('<pre id="measured">', 1)[1].split("</pre>", 1)[0].replace("&quot;", '"'))
    shot = tmp_path / "shot.png"
    proc = _chrome(binary, tmp_path / "profile2", f"--window-size={width},{int(min(16000, data['height'] + 10))}",
                   f"--screenshot={shot}", report.as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    # the tinted backgrounds (#fde8e8 failed, #fff4e0 warning) and their bars (#c62828, #e08a00), seen painted
    for kind, bar in (("failed", (0xC6, 0x28, 0x28)), ("warning", (0xE0, 0x8A, 0x00))):
        left, top, w, h = data["boxes"][kind]
        assert w > 400 and h > 10, (kind, w, h)
        area = (pixels[int(top):int(top + h), int(left):int(left + w)] * 255).round().astype(int)
        on_bar = np.abs(area - np.array(bar)).max(axis=2) <= 8
        text = (area.max(axis=2) < 120).mean()  # dark glyphs: the line's words
        assert on_bar.any(axis=1).mean() > 0.9 and text > 0.01, (kind, on_bar.any(axis=1).mean(), text)
