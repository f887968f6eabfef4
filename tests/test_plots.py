"""Figures and report.html: every figure is drawn, and what it draws equals values recomputed from the
output files (utilisation integral, queue maximum, Gantt capacity); the report is self-contained and a
real headless Chromium paints its figures."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("matplotlib", reason="the plots extra is not installed (pip install -e '.[plots]')")

import simsched  # noqa: E402
from simsched.cli.main import main  # noqa: E402
from simsched.core.outputs import read_table  # noqa: E402
from simsched.present.plots import compare as compare_plots  # noqa: E402
from simsched.present.plots import experiment as experiment_plots  # noqa: E402
from simsched.present.plots import learn as learn_plots  # noqa: E402
from simsched.present.plots import run as run_plots  # noqa: E402
from simsched.present.plots.report import save_figures  # noqa: E402
from tests.helpers import write_scenario  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLUSTERS = ('[[cluster]]\nname = "a"\nnodes = [{ count = 3, gpus = 4, gpu_type = "V100" }, '
            '{ count = 1, gpus = 8, gpu_type = "T4" }]\n'
            '[[cluster]]\nname = "b"\nnodes = [{ count = 2, gpus = 2, gpu_type = "V100" }]')


def _jobs(count: int = 60, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        submit = int(rng.integers(0, 4000))
        duration = int(rng.integers(1, 1500))
        gpus = [0.5, 1, 2, 4, 8][int(rng.integers(0, 5))]
        weight = int(rng.integers(1, 4))
        home = "ab"[int(rng.integers(0, 2))]
        rows.append(f"j{i},{submit},{duration},{gpus},,{weight},,{home},")
    return rows


def _run(folder: Path, policy: str = "fifo", **kwargs) -> Path:
    path = write_scenario(folder, clusters=CLUSTERS, jobs=_jobs(),
                          scheduler=f'policy = "{policy}"\nplacement = "best_fit"\nallocation = "round_robin"')
    out = folder / "out"
    simsched.run(path, **kwargs).write(out)
    return out


@pytest.fixture(scope="module")
def fifo_out(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("fifo"))


@pytest.fixture(scope="module")
def las_out(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("las"), policy="las")


def _close_all():
    import matplotlib.pyplot as plt

    plt.close("all")


def _drawn(fig) -> int:
    """Data points drawn on a figure: line vertices, collection paths, patches."""
    count = 0
    for ax in fig.axes:
        count += sum(len(line.get_xdata()) for line in ax.lines)
        count += sum(len(c.get_paths()) for c in ax.collections)
        count += len(ax.patches) + len(ax.images)
    return count


def _assert_written(figures: dict, folder: Path) -> None:
    for name, fig in figures.items():
        assert _drawn(fig) > 0, name
    for path in save_figures(figures, folder, "png"):  # SVG: the report fixture writes every run figure as SVG
        assert path.stat().st_size > 2000, path


# -- run figures ---------------------------------------------------------------------------------
def test_every_run_figure_is_drawn(fifo_out, tmp_path):
    figures = run_plots.run_figures(run_plots.load_run(fifo_out))
    assert list(figures) == ["cdf", "queue", "utilization", "gantt", "wait_by_weight"]
    _assert_written(figures, tmp_path)


def _lines(fig) -> dict[str, np.ndarray]:
    return {line.get_label(): line.get_xydata() for ax in fig.axes for line in ax.lines}


@pytest.mark.parametrize("which", ["fifo", "las"])
def test_utilization_integrates_to_gpu_seconds(which, fifo_out, las_out):
    out = {"fifo": fifo_out, "las": las_out}[which]
    tables = run_plots.load_run(out)
    nodes = read_table(out / "nodes.csv")
    capacity = nodes.groupby(["cluster", "gpu_type"])["capacity_milli"].sum() / 1000  # GPUs
    fig = run_plots.utilization_figure(tables["timeline"], tables["nodes"])
    total = 0.0
    for label, xy in _lines(fig).items():
        if label.startswith("fleet"):
            continue
        cluster, rest = label.split(" · ")
        gpus = capacity[(cluster, rest.split(" (")[0])]
        total += float((xy[:-1, 1] * np.diff(xy[:, 0])).sum()) * gpus
    summary = json.loads((out / "summary.json").read_text())
    expected = summary["utilization"] * capacity.sum() * summary["makespan"]
    assert math.isclose(total, expected, rel_tol=1e-9)
    _close_all()


def test_queue_maximum_equals_submit_start_count(fifo_out):
    jobs = read_table(fifo_out / "jobs.csv")
    fig = run_plots.queue_figure(read_table(fifo_out / "timeline.csv"))
    queued = _lines(fig)["queued jobs"]
    # independent: after all events at t, queued = submitted by t and not yet started (fifo: no preemption)
    done = jobs[jobs["status"] == "done"]
    times = np.union1d(done["submit"].to_numpy(), done["start"].to_numpy())
    counts = [int(((done["submit"] <= t) & (done["start"] > t)).sum()) for t in times]
    assert max(counts) > 0  # the case does queue
    assert queued[:, 1].max() == max(counts)
    running = _lines(fig)["running jobs"]
    assert running[:, 1].max() == max(int(((done["start"] <= t) & (done["end"] > t)).sum()) for t in times)
    _close_all()


def _gantt_rectangles(fig):
    ax = fig.axes[0]
    (collection,) = [c for c in ax.collections if c.get_label() == "gantt"]
    boxes = []
    for path in collection.get_paths():
        xs, ys = path.vertices[:, 0], path.vertices[:, 1]
        boxes.append((xs.min(), xs.max(), ys.min(), ys.max()))
    return boxes


@pytest.mark.parametrize("which", ["fifo", "las"])
def test_gantt_bars_never_exceed_node_capacity(which, fifo_out, las_out):
    out = {"fifo": fifo_out, "las": las_out}[which]
    spells, nodes = read_table(out / "spells.csv"), read_table(out / "nodes.csv")
    fig = run_plots.gantt_figure(spells, nodes)
    boxes = _gantt_rectangles(fig)
    assert boxes
    lanes: dict[int, list] = {}
    for x0, x1, y0, y1 in boxes:
        lane = int(math.floor(y0 + 1e-9))
        assert y1 <= lane + run_plots.LANE + 1e-9  # inside its node's lane
        lanes.setdefault(lane, []).append((x0, x1, y1 - y0))
    for lane, bars in lanes.items():
        # at every bar start the heights of the bars in progress sum to at most the lane (= capacity)
        for t in {x0 for x0, _, _ in bars}:
            held = sum(h for x0, x1, h in bars if x0 <= t < x1)
            assert held <= run_plots.LANE + 1e-9, (lane, t)
    # and each bar's height is its share / capacity: the drawn GPU-seconds are the spells' GPU-seconds
    drawn = sum((x1 - x0) * (y1 - y0) / run_plots.LANE * nodes["capacity_milli"].iloc[int(math.floor(y0 + 1e-9))]
                for x0, x1, y0, y1 in boxes) / 1000
    held = ((spells["end"] - spells["start"]) * spells["share"] * spells["workers"]).sum() / 1000
    assert math.isclose(drawn, held, rel_tol=1e-9)
    _close_all()


def test_gantt_samples_large_fleets_and_says_so():
    nodes = pd.DataFrame({"node": range(100), "cluster": ["c"] * 100, "gpu_type": ["V100"] * 100,
                          "capacity_milli": [8000] * 100})
    spells = pd.DataFrame({"job_id": ["x"], "spell": [0], "start": [0.0], "end": [10.0], "end_event": ["finish"],
                           "cluster": ["c"], "gpu_type": ["V100"], "nodes": ["0 99"], "workers": [2],
                           "share": [8000]})
    fig = run_plots.gantt_figure(spells, nodes, limit=10)
    assert "10 of 100 nodes shown" in fig.axes[0].get_title()
    assert len(fig.axes[0].get_yticks()) == 10
    assert run_plots.sample_nodes(100, 10)[0] == 0 and run_plots.sample_nodes(100, 10)[-1] == 99
    _close_all()


bars = st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30), st.integers(1, 8)), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(bars)
def test_pack_never_overlaps(raw):
    """Bars admitted by a capacity-8 pool are placed in pieces that add up and never overlap."""
    capacity, admitted, active = 8, [], []
    for start, length, amount in sorted(raw):
        active = [(s, e, a) for s, e, a in active if e > start]
        if sum(a for _, _, a in active) + amount <= capacity:
            admitted.append((float(start), float(start + length), amount))
            active.append(admitted[-1])
    placed = run_plots.pack(admitted, capacity)
    for (_, _, amount), pieces in zip(admitted, placed):
        assert sum(hi - lo for lo, hi in pieces) == amount
        assert all(0 <= lo < hi <= capacity for lo, hi in pieces)
    for i, (s1, e1, _) in enumerate(admitted):
        for j in range(i + 1, len(admitted)):
            s2, e2, _ = admitted[j]
            if s1 < e2 and s2 < e1:  # overlap in time: no overlap in space
                for lo1, hi1 in placed[i]:
                    for lo2, hi2 in placed[j]:
                        assert hi1 <= lo2 or hi2 <= lo1


def test_cdf_and_weight_figures_match_jobs(fifo_out):
    jobs = read_table(fifo_out / "jobs.csv")
    done = jobs[jobs["status"] == "done"]
    fig = run_plots.cdf_figure(jobs)
    (jct,) = fig.axes[0].lines
    x, y = jct.get_xdata(), jct.get_ydata()
    for value, fraction in zip(x, y):
        assert fraction == pytest.approx((done["jct"] <= value).mean())
    fig = run_plots.wait_by_weight_figure(jobs)
    heights = [p.get_height() for p in fig.axes[0].patches]
    expected = done.groupby("weight")["wait"].mean().sort_index().tolist()
    assert heights == pytest.approx(expected)
    _close_all()


# -- compare, learn, experiment ------------------------------------------------------------------
def _compare_out(folder: Path) -> Path:
    path = write_scenario(folder, clusters=CLUSTERS, jobs=_jobs(30),
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nallocation = "round_robin"')
    out = folder / "cmp"
    code = main(["compare", str(path), "--schedulers", "fifo,sjf", "--seeds", "2", "--workers", "1",
                 "--out", str(out), "--keep-jobs", "--quiet"])
    assert code == 0
    return out


def test_compare_figures(tmp_path):
    out = _compare_out(tmp_path)
    data = compare_plots.load_compare(out)
    assert set(data["jobs"]) == {"fifo", "sjf"} and len(data["jobs"]["fifo"]) == 2
    figures = compare_plots.compare_figures(data)
    assert list(figures) == ["metrics", "jct_cdf", "ranks"]
    cdf = _lines(figures["jct_cdf"])
    for name, tables in data["jobs"].items():
        done = pd.concat(tables)
        done = done[done["status"] == "done"]
        (label,) = [k for k in cdf if k.startswith(name + " ")]
        assert cdf[label][-1, 1] == 1.0 and cdf[label][-1, 0] == done["jct"].max()
    ranks = figures["ranks"].axes[0].images[0].get_array()
    runs = pd.read_csv(out / "compare_runs.csv")
    assert np.asarray(ranks).ravel().tolist() == runs.pivot(index="scheduler", columns="seed", values="rank") \
        .loc[["fifo", "sjf"]].to_numpy().ravel().tolist()
    _assert_written(figures, tmp_path / "figs")


def test_learn_figures(tmp_path):
    from simsched.evo.priority import BUILTIN, parse, save_priority

    graph = parse(BUILTIN["gp-paper"])
    history = [{"generation": g, "best": b, "median": m, "mean": m + 0.1}
               for g, b, m in ((0, 3.0, 4.0), (1, 2.5, 3.5), (2, 2.4, 3.0))]
    path = save_priority(graph, tmp_path / "learned.json", history=history)
    data = learn_plots.load_learned(path)
    figures = learn_plots.learn_figures(data)
    lines = _lines(figures["fitness"])
    assert lines["best"][:, 1].tolist() == [3.0, 2.5, 2.4] and lines["median"][:, 1].tolist() == [4.0, 3.5, 3.0]
    tree = figures["tree"].axes[0]
    assert tree.get_title().replace("\n", " ") == f"f = {data['infix']}"
    unfolded = learn_plots.unfold(graph)
    # a tree of binary operators: n leaves, n - 1 operators; labels are the ops and terminals
    assert unfolded.number_of_nodes() == 2 * sum(1 for v in unfolded if unfolded.out_degree(v) == 0) - 1
    assert sorted(t.get_text() for t in tree.texts) == sorted(learn_plots._label(unfolded, v) for v in unfolded)
    _assert_written(figures, tmp_path / "figs")


def _experiment_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for load in (0.5, 1.0):
        for seed in range(3):
            for name, base in (("fifo", 100.0), ("sjf", 80.0), ("evo-gp", 70.0)):
                jct = base * load + (seed * 7 % 5) * (1 if name != "sjf" else 4)
                rows.append({"run_id": f"r{load}-{seed}-{name}", "scenario": "s", "instance": 0, "scheduler": name,
                             "seed": seed, "ea_stream": 0,
                             "scenario_hash": "h", "wall_s": 1.0, "workload.load": load, "avg_jct": jct})
    decisions = pd.DataFrame({"run_id": ["r0.5-0-fifo"] * 20 + ["r0.5-0-evo-gp"] * 20,
                              "scheduler": ["fifo"] * 20 + ["evo-gp"] * 20,
                              "queued": list(range(20)) * 2,
                              "seconds": [1e-4 * (q + 1) for q in range(20)] + [1e-3 * (q + 1) for q in range(20)]})
    return pd.DataFrame(rows), decisions


def test_experiment_figures(tmp_path):
    results, decisions = _experiment_frames()
    results.to_csv(tmp_path / "results.csv", index=False)
    decisions.to_csv(tmp_path / "decisions.csv", index=False)
    data = experiment_plots.load_experiment(tmp_path)
    assert data["sweep_keys"] == ["workload.load"] and data["metric"] == "avg_jct"
    figures = experiment_plots.experiment_figures(data)
    assert list(figures) == ["ranks", "sweep_workload_load", "decision_time"]
    # rank bars: mean rank per scheduler recomputed by hand, best first
    case = ["seed", "workload.load"]
    expected = results.assign(rank=results.groupby(case)["avg_jct"].rank()).groupby("scheduler")["rank"].mean()
    ax = figures["ranks"].axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert [p.get_height() for p in ax.patches] == pytest.approx(expected.loc[labels].tolist())
    assert labels[0] == "evo-gp"
    sweep = _lines(figures["sweep_workload_load"])
    fifo = results[results["scheduler"] == "fifo"].groupby("workload.load")["avg_jct"].mean()
    assert sweep["fifo"][:, 1].tolist() == pytest.approx(fifo.tolist())
    mean, low, high = experiment_plots.mean_ci(np.array([1.0, 2.0, 3.0, 4.0]))
    assert mean == 2.5 and 1.0 <= low < 2.5 < high <= 4.0
    assert experiment_plots.mean_ci(np.array([3.0, 3.0])) == (3.0, 3.0, 3.0)
    _assert_written(figures, tmp_path / "figs")


def test_rank_bars_equal_the_report_on_ea_streams():
    """The rank bars rank as the experiment's report does: 15 equal EA streams average to exactly
    their value, so they tie with a single run of that value (a float mean of 15 copies of
    0.7750292349667665 is ...662, which split the tie before), and a run with unfinished jobs ranks last."""
    value = 0.7750292349667665
    assert np.mean([value] * 15) != value  # the float mean alone would split the tie
    rows = [{"scenario": "s", "instance": "i", "seed": 1, "scheduler": "evo", "ea_stream": k, "objective": value,
             "unfinished": 0} for k in range(15)]
    rows += [{"scenario": "s", "instance": "i", "seed": 1, "scheduler": "mct", "ea_stream": 0, "objective": value,
              "unfinished": 0},
             {"scenario": "s", "instance": "i", "seed": 1, "scheduler": "bad", "ea_stream": 0, "objective": 0.1,
              "unfinished": 3}]
    ranked = experiment_plots.ranks(pd.DataFrame(rows), "objective").set_index("scheduler")["rank"]
    assert ranked.to_dict() == {"evo": 1.5, "mct": 1.5, "bad": 3.0}


def test_rank_bars_equal_committed_fig4_full_summary():
    """Golden check on the committed full Fig. 4 (30 instances x 15 EA streams): every bar of
    ``simsched plot``'s rank figure is the store's summary.csv mean rank."""
    store = REPO / "experiments" / "paper" / "results" / "fig4-full"
    data = experiment_plots.load_experiment(store)
    ax = experiment_plots.experiment_figures(data)["ranks"].axes[0]
    bars = dict(zip([t.get_text() for t in ax.get_xticklabels()], [p.get_height() for p in ax.patches]))
    summary = pd.read_csv(store / "summary.csv").set_index("scheduler")["mean_rank"]
    assert bars == pytest.approx(summary.to_dict(), abs=1e-12)


# -- CLI -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report(fifo_out) -> Path:
    """``plot OUT --format svg --report`` once for the tests below."""
    assert main(["plot", str(fifo_out), "--format", "svg", "--report"]) == 0
    return fifo_out / "report.html"


def test_plot_command_writes_figures_and_report(fifo_out, report):
    for name in ("cdf", "queue", "utilization", "gantt", "wait_by_weight"):
        assert (fifo_out / "plots" / f"{name}.svg").stat().st_size > 2000
    assert (fifo_out / "report.html").is_file()


def test_plot_command_bad_input(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "summary.json" in err
    assert main(["plot", str(tmp_path / "missing")]) == 2
    assert main(["plot", str(tmp_path), "--format", "gif"]) == 2


def test_run_flags_need_out(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=CLUSTERS, jobs=_jobs(5), scheduler='policy = "fifo"')
    assert main([str(path), "--plots", "--quiet"]) == 2
    assert "--out" in capsys.readouterr().err


def test_without_matplotlib_one_line_naming_the_extra(tmp_path):
    path = write_scenario(tmp_path, clusters=CLUSTERS, jobs=_jobs(5), scheduler='policy = "fifo"')
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from simsched.cli.main import main\n"
            f"sys.exit(main([{str(path)!r}, '--out', {str(tmp_path / 'out')!r}, '--plots', '--quiet']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: plots need matplotlib, which is not installed: pip install -e '.[plots]'"]
    assert not (tmp_path / "out").exists()  # failed before simulating anything
    # and the core still imports and runs without it
    code = ("import sys; sys.modules['matplotlib'] = None\nimport simsched\n"
            f"print(simsched.run({str(path)!r}).summary['jobs'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout.strip() == "5"


# -- report.html ---------------------------------------------------------------------------------
class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.references: list[tuple[str, str, str]] = []
        self.figures = 0
        self.tables = 0
        self.svgs = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.figures += tag == "figure"
        self.tables += tag == "table"
        self.svgs += tag == "svg"
        for name, value in attrs:
            if name in ("href", "src", "xlink:href", "srcset", "action", "data", "poster") and value:
                if not (value.startswith("#") or value.startswith("data:")):
                    self.references.append((tag, name, value))
            if name == "style" and value and "url(" in value and "url(#" not in value:
                self.references.append((tag, name, value))


def test_report_is_self_contained(fifo_out, report):
    page_text = report.read_text(encoding="utf-8")
    page = _Page()
    page.feed(page_text)
    page.close()
    assert page.figures == 5 and page.svgs == 5  # every run figure, inline
    assert page.tables == 1
    assert "Avg JCT (s)" in page_text and "Queue time by weight class" in page_text
    assert page.references == []
    assert "<script" not in page_text and "<link" not in page_text and "@import" not in page_text
    summary = json.loads((fifo_out / "summary.json").read_text())
    assert summary["scenario_sha256"] in page_text and f"{summary['wall_time_s']:.2f}" in page_text
    assert "[[cluster]]" in page_text  # the scenario file itself
    assert ">n/a<" in page_text  # no job has a deadline: the miss rate is not applicable


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on PATH: .ci/run installs Debian's chromium with apt-get when it can; "
                "here it could not be installed")


CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--force-device-scale-factor=1")
MEASURE = """<script>
window.addEventListener('load', () => {
  const boxes = [...document.querySelectorAll('figure svg')].map(s => {
    const r = s.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; });
  const out = document.createElement('pre'); out.id = 'measured';
  out.textContent = JSON.stringify({boxes, height: document.documentElement.scrollHeight});
  document.body.appendChild(out);
});
</script></body>"""


def _chrome(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *CHROME_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=180)


def test_chromium_paints_the_figures(report, tmp_path):
    binary = _chromium()
    width = 1200
    # 1. where are the figures? the same page plus a script that writes their boxes into the DOM
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE), encoding="utf-8")
    dom = _chrome(binary, tmp_path / "profile1", f"--window-size={width},1000", "--virtual-time-budget=5000",
                  "--dump-dom", measured.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    data = json.loads(dom.stdout.split('<pre id="measured">', 1)[1].split("</pre>", 1)[0].replace("&quot;", '"'))
    assert len(data["boxes"]) == 5
    # 2. a screenshot of the untouched report, tall enough for the whole page
    height = int(min(16000, data["height"] + 10))
    shot = tmp_path / "shot.png"
    proc = _chrome(binary, tmp_path / "profile2", f"--window-size={width},{height}", f"--screenshot={shot}",
                   report.as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.shape[1] == width
    for left, top, w, h in data["boxes"]:
        assert w > 200 and h > 150
        area = pixels[int(top):int(top + h), int(left):int(left + w)]
        assert area.size
        painted = (area < 0.95).any(axis=2).mean()  # share of non-white pixels
        colours = len(np.unique((area * 255).astype(np.uint8).reshape(-1, 3), axis=0))
        assert painted > 0.02 and colours > 20, (left, top, painted, colours)
    # the page background outside the figures is white: the check above can tell painted from blank
    assert (pixels[5:15, -15:-5] > 0.95).all()


def test_experiment_command_plots_and_report(tmp_path):
    path = write_scenario(tmp_path, clusters=CLUSTERS, jobs=_jobs(20),
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nallocation = "round_robin"')
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "tiny"\nscenarios = ["{path.name}"]\nschedulers = ["fifo", "sjf"]\nseeds = 2\n'
                    'metric = "avg_jct"\nrecord = ["decisions"]\n[sweep]\n"scheduler.backfill" = [true, false]\n')
    out = tmp_path / "exp"
    assert main(["experiment", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--plots",
                 "--report"]) == 0
    for name in ("ranks", "sweep_scheduler_backfill", "decision_time"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 2000, name
    page = _Page()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    assert page.svgs == 3 and page.references == []


def test_objective_terms_figure_and_representative_instance():
    """The paper's Fig. 6 panels: terms averaged over EA streams; the representative instance is the
    median-objective one among instances where some job waits (hand-computed)."""
    rows = []
    # i0: nobody waits (excluded); i1, i2, i3 wait, mean objectives 11, 101, 1001 -> i2 is the median
    for instance, cq_max in (("i0", 0.0), ("i1", 10.0), ("i2", 100.0), ("i3", 1000.0)):
        for name, scale in (("a", 1.0), ("b", 1.0)):
            for stream in (0, 1):
                value = cq_max * scale + (stream if name == "a" and cq_max else 0)  # a's streams: +0, +1
                rows.append({"run_id": f"{instance}{name}{stream}", "scenario": "s", "instance": instance,
                             "scheduler": name, "seed": 1, "ea_stream": stream, "cq_avg": 1.0 if cq_max else 0.0,
                             "cq_max": value, "utilization": 0.25,
                             "objective": (1.0 if cq_max else 0.0) + value + 0.75})
    results = pd.DataFrame(rows)
    terms = experiment_plots.objective_terms(results)
    a2 = terms[(terms["instance"] == "i2") & (terms["scheduler"] == "a")].iloc[0]
    assert a2["cq_max"] == 100.5  # mean of the two streams 100 and 101
    assert a2["cq_max_share"] == pytest.approx(100.5 / (1.0 + 100.5 + 0.75))
    assert terms.loc[terms["instance"] == "i0", "cq_max_share"].tolist() == [0.0, 0.0]
    assert experiment_plots.representative_instance(terms) == "i2"
    figure = experiment_plots.objective_terms_figure(results)
    panels = figure.axes
    assert [ax.get_title() for ax in panels] == [label for _, label in experiment_plots.OBJECTIVE_TERMS]
    assert [p.get_height() for p in panels[1].patches] == [100.5, 100.0]
    assert "i2" in figure._suptitle.get_text()
    data = {"results": results, "metric": "objective"}
    assert "objective_terms" in experiment_plots.experiment_figures(data)
