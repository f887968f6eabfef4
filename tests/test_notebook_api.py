"""The notebook API (issue 22): ``simsched.run(..., jobs_limit, overrides)``, ``simsched.compare(...)``
-> Comparison (tidy ``.df``), ExperimentResult, HTML reprs and ``.plot(kind)`` figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched
from simsched.cli.main import main
from simsched.core.errors import InputError
from tests.helpers import write_scenario

pytest.importorskip("matplotlib", reason="figures need the extra 'plots' (matplotlib)")
pytest.importorskip("scipy.stats", reason="confidence intervals need scipy (extra 'plots')")

REPO = Path(__file__).resolve().parents[1]
TWO_NODES = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]'
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,", "d,3,90,2,,,,,", "e,4,30,1,,,,,", "f,5,400,4,,,,,"]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, clusters=TWO_NODES, jobs=JOBS, scheduler='policy = "fifo"')


def _synthetic(tmp_path: Path) -> Path:
    """A small synthetic scenario whose jobs change with the seed (so seeds give a spread)."""
    path = tmp_path / "syn.toml"
    path.write_text('name = "syn"\nseed = 1\n[[cluster]]\nname = "c0"\n'
                    'nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]\n'
                    '[workload]\nsource = "synthetic"\ngenerator = "simple"\njobs = 25\ngpus = [1, 2, 4]\n'
                    'mean_duration_s = 600.0\nload = 1.2\n[scheduler]\npolicy = "fifo"\n')
    return path


# -- simsched.run ---------------------------------------------------------------------------
def test_run_overrides_equal_the_command_line_set(scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main([str(scenario), "--set", "scheduler.backfill=easy", "--set", "workload.jobs_limit=5",
                 "--out", str(out), "--quiet"]) == 0
    cli = json.loads((out / "summary.json").read_text())
    api = simsched.run(scenario, overrides={"scheduler.backfill": "easy", "workload.jobs_limit": 5})
    assert api.summary["overrides"] == cli["overrides"] == {"scheduler.backfill": "easy", "workload.jobs_limit": 5}
    assert api.summary["scheduler"]["backfill"] == "easy" and api.summary["jobs"] == 5
    for key in ("avg_jct", "avg_wait", "makespan", "completed"):
        assert api.summary[key] == cli[key]


@pytest.mark.parametrize("overrides, message", [
    ({"workload.load": -1}, "workload.load: must be > 0"),
    ({"scheduler.placement": "bogus"}, "unknown value 'bogus'"),
    ({"seed": 3}, "'seed': give a dotted scenario key"),
    ({"fleet.nodes": 3}, "cannot be overridden"),
])
def test_run_bad_override_is_one_line_as_with_set(scenario: Path, capsys, overrides: dict, message: str) -> None:
    with pytest.raises(InputError) as caught:
        simsched.run(scenario, overrides=overrides)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    key, value = next(iter(overrides.items()))
    if "." in key:  # the command line says the same about the same key
        assert main([str(scenario), "--set", f"{key}={value}", "--quiet"]) == 2
        assert message in capsys.readouterr().err


def test_run_jobs_limit_seed_and_example_names(scenario: Path) -> None:
    result = simsched.run(scenario, jobs_limit=3, seed=9)
    assert result.summary["jobs"] == 3 and result.summary["seed"] == 9
    assert result.summary["overrides"] == {"jobs_limit": 3}
    assert simsched.run(scenario, jobs=3).jobs.equals(result.jobs)  # the older name
    with pytest.raises(InputError, match="jobs=2 and jobs_limit=3 disagree"):
        simsched.run(scenario, jobs=2, jobs_limit=3)
    with pytest.raises(InputError, match="jobs_limit must be an integer >= 1"):
        simsched.run(scenario, jobs_limit=0)
    example = simsched.run("philly_hetero", jobs_limit=20)  # a shipped example, by name
    assert example.summary["scenario"] == "philly_hetero" and example.summary["jobs"] == 20


def test_run_takes_a_policy_class_or_object_written_in_the_session(tmp_path: Path) -> None:
    from docs.examples.my_policy import MyPolicy  # stands for a class defined in a notebook cell

    one_node = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
    scenario = write_scenario(tmp_path, clusters=one_node, jobs=JOBS, scheduler='policy = "fifo"\nbackfill = false')

    by_class = simsched.run(scenario, scheduler=MyPolicy)
    by_object = simsched.run(scenario, scheduler=MyPolicy())
    by_file = simsched.run(scenario, scheduler=str(REPO / "docs" / "examples" / "my_policy.py") + ":MyPolicy")
    assert by_class.jobs.equals(by_object.jobs) and by_class.jobs.equals(by_file.jobs)
    assert by_class.summary["scheduler"]["policy"] == "docs.examples.my_policy:MyPolicy"
    starts = by_class.jobs.set_index("job_id")["start"]
    fifo = simsched.run(scenario).jobs.set_index("job_id")["start"]
    assert starts["c"] == 2.0 and fifo["c"] > 2.0  # fewest GPUs first: c runs beside a; fifo holds it


# -- Result: repr and figures ------------------------------------------------------------------
def test_result_repr_html_holds_scenario_seed_and_metric_table(scenario: Path) -> None:
    result = simsched.run(scenario, seed=4, overrides={"scheduler.backfill": False})
    page = result._repr_html_()
    assert "<table" in page and "simsched run: t" in page
    assert "<dt>seed</dt><dd>4</dd>" in page and "<dt>scheduler</dt><dd>fifo</dd>" in page
    assert "scheduler.backfill=False" in page
    summary = result.summary
    assert f"<td>Avg JCT (s)</td><td>{summary['avg_jct']:,.2f}</td>" in page
    assert f"<td>Completed jobs</td><td>{summary['completed']:,.0f}</td>" in page


def test_result_plot_kinds_return_figures_with_their_axes(scenario: Path) -> None:
    from matplotlib.figure import Figure

    result = simsched.run(scenario)
    expected = {"jct": ["JCT (s, log scale)"], "wait": ["wait (s, log scale)"],
                "cdf": ["JCT (s, log scale)", "wait (s, log scale)"], "queue": ["simulated time (s)"],
                "utilisation": ["simulated time (s)"], "utilization": ["simulated time (s)"],
                "gantt": ["simulated time (s)"], "wait_by_weight": ["weight class u (larger = more urgent)"]}
    for kind, labels in expected.items():
        fig = result.plot(kind)
        assert isinstance(fig, Figure)
        assert [ax.get_xlabel() for ax in fig.axes if ax.get_visible() and ax.get_xlabel()] == labels, kind
    # the JCT CDF draws every completed job's JCT: its last step is at the largest JCT, at 1
    line = result.plot("jct").axes[0].lines[0]
    done = result.jobs[result.jobs["status"] == "done"]
    assert float(line.get_xdata()[-1]) == pytest.approx(done["jct"].max())
    assert float(line.get_ydata()[-1]) == 1.0
    queued = result.plot("queue").axes[0].lines[0]  # the fleet rows of the timeline
    fleet = result.timeline[result.timeline["cluster"] == "*"]
    assert np.array_equal(queued.get_ydata(), fleet["queued"].to_numpy(float))
    with pytest.raises(InputError, match="unknown kind 'jtc'.*valid: jct, wait"):
        result.plot("jtc")


# -- simsched.compare -> Comparison --------------------------------------------------------------
def test_compare_tidy_frame_summary_with_t_intervals_and_the_cli_agree(tmp_path: Path) -> None:
    from scipy import stats

    path = _synthetic(tmp_path)
    cmp = simsched.compare(path, ["fifo", "sjf", "srtf"], seeds=3, workers=1)
    df = cmp.df
    assert list(df.columns) == ["instance", "seed", "scheduler", "metric", "value"]
    from simsched.runs.compare import METRIC_KEYS

    assert len(df) == 3 * 3 * (len(METRIC_KEYS) + 1)  # runs x (metrics + rank)
    assert set(df["metric"]) == set(METRIC_KEYS) | {"rank"}
    assert cmp.to_frame() is df
    # the same runs as the command's compare_runs.csv
    out = tmp_path / "cli"
    assert main(["compare", str(path), "--schedulers", "fifo,sjf,srtf", "--seeds", "3", "--workers", "1",
                 "--out", str(out), "--quiet"]) == 0
    runs = pd.read_csv(out / "compare_runs.csv")
    wide = df.pivot_table(index=["seed", "scheduler"], columns="metric", values="value")
    for row in runs.itertuples(index=False):
        assert wide.loc[(row.seed, row.scheduler), "avg_jct"] == pytest.approx(row.avg_jct, rel=1e-12)
        assert wide.loc[(row.seed, row.scheduler), "rank"] == row.rank
    # summary: the mean and a Student-t 95% interval over the three seeds
    summary = cmp.summary.set_index(["metric", "scheduler"])
    values = runs.loc[runs["scheduler"] == "sjf", "avg_wait"].to_numpy(float)
    low, high = stats.t.interval(0.95, 2, loc=values.mean(), scale=values.std(ddof=1) / math.sqrt(3))
    row = summary.loc[("avg_wait", "sjf")]
    assert row["mean"] == pytest.approx(values.mean()) and row["n"] == 3
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert row["ci_low"] < row["mean"] < row["ci_high"]


def test_comparison_repr_and_plots(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    cmp = simsched.compare(_synthetic(tmp_path), "fifo,sjf", seeds=2, workers=1,
                           overrides={"workload.jobs": 12}, keep_jobs=True)
    page = cmp._repr_html_()
    assert "simsched compare: fifo, sjf" in page and "<dt>seeds</dt><dd>1, 2</dd>" in page
    assert "workload.jobs=12" in page and "± half-width of its 95% CI over the cases" in page
    row = cmp.summary.set_index(["metric", "scheduler"]).loc[("avg_jct", "sjf")]
    assert f"{row['mean']:,.2f} ± {(row['ci_high'] - row['ci_low']) / 2:,.2f}" in page
    fig = cmp.plot("ranks")
    assert isinstance(fig, Figure) and [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["fifo", "sjf"]
    one = cmp.plot("metric", metric="avg_wait")
    assert [ax.get_title() for ax in one.axes if ax.get_visible()] == ["Avg wait (s)"]
    assert len(cmp.plot("metrics").axes) == 6
    cdf = cmp.plot("jct")
    assert [line.get_label().split(" ")[0] for line in cdf.axes[0].lines] == ["fifo", "sjf"]
    with pytest.raises(InputError, match="unknown metric 'avg_jtc'"):
        cmp.plot("metric", metric="avg_jtc")


def test_simsched_compare_stays_callable_after_its_module_is_imported(tmp_path: Path) -> None:
    import simsched.runs.compare as module
    import simsched.runs.results

    assert simsched.compare is simsched.runs.results.compare and callable(simsched.compare)
    assert module.METRIC_KEYS  # the module simsched/runs/compare.py is still a module
    with pytest.raises(InputError, match="unknown scheduler 'nope'"):
        simsched.compare(_synthetic(tmp_path), ["fifo", "nope"], workers=1)
    with pytest.raises(InputError, match="give a dotted scenario key"):
        simsched.compare(_synthetic(tmp_path), ["fifo"], workers=1, overrides={"seed": 2})


# -- experiments ---------------------------------------------------------------------------------
def test_experiment_result_from_a_run_and_from_its_folder(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from tests.test_experiment import _spec_dir

    spec = _spec_dir(tmp_path)
    out = tmp_path / "store"
    ran = simsched.run_experiment(spec, out, workers=1, preset="quick")
    loaded = simsched.load_experiment(out)
    assert len(ran.results) == len(loaded.results) == 2 * 3 * 1  # scenarios x schedulers x seeds
    assert ran.metric == loaded.metric == "avg_wait"
    pd.testing.assert_frame_equal(ran.summary.reset_index(drop=True), loaded.summary, check_dtype=False)
    page = loaded._repr_html_()
    assert "simsched experiment: store" in page and "<dt>seeds</dt><dd>7</dd>" in page
    assert f"{ran.summary['mean'].iloc[0]:,.4g}" in page
    tidy = loaded.df
    assert {"scheduler", "seed", "metric", "value"} <= set(tidy.columns)
    assert len(tidy[tidy["metric"] == "avg_wait"]) == len(loaded.results)
    fig = loaded.plot("ranks")
    assert isinstance(fig, Figure) and fig.axes[0].get_ylabel() == "mean rank by avg_wait (1 = best)"
    assert sorted(t.get_text() for t in fig.axes[0].get_xticklabels()) == ["fifo", "sjf", "tiresias"]
    assert isinstance(loaded.plot("decision_time"), Figure)
    box = loaded.plot("metric")
    assert [ax.get_title() for ax in box.axes if ax.get_visible()] == ["avg_wait"]
    with pytest.raises(InputError, match="is not swept"):
        loaded.plot("sweep")
    with pytest.raises(InputError, match="no results.csv"):
        simsched.load_experiment(tmp_path / "nothing")
