"""Figures of a run with tenants (issue 20): the per-tenant wait box plot and usage against quota;
what they draw equals values recomputed from the outputs; report.html includes them (and Chromium
paints them) only when the run has tenants."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib", reason="the plots extra is not installed (pip install -e '.[plots]')")

import simsched  # noqa: E402
from simsched.cli.main import main  # noqa: E402
from simsched.present.plots import run as run_plots  # noqa: E402
from simsched.present.plots.tenants import (  # noqa: E402
    bin_means,
    tenant_usage_figure,
    tenant_wait_figure,
    usage_steps,
)
from tests.helpers import write_scenario  # noqa: E402
from tests.test_plots import _chrome, _chromium  # noqa: E402
from tests.test_tenants import CLUSTER, HEADER, JOBS  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def tenant_out(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tenants")
    path = write_scenario(folder, clusters=CLUSTER, jobs=JOBS, header=HEADER,
                          scheduler='policy = "fifo"\nquota = "borrow"\nreclaim = "preempt"\nrestart_penalty_s = 5')
    simsched.run(path).write(folder / "out")
    return folder / "out"


def test_bin_means_are_exact_time_averages():
    times, values = np.array([0.0, 10.0, 30.0]), np.array([4.0, 8.0, 0.0])
    edges = np.array([0.0, 20.0, 40.0])
    # 0-20: 4 GPUs for 10 s, 8 for 10 s -> 6; 20-40: 8 for 10 s, 0 for 10 s -> 4
    assert list(bin_means(times, values, edges)) == [6.0, 4.0]
    assert list(bin_means(times, values, np.array([-10.0, 0.0]))) == [0.0]  # before the first step: 0


def test_usage_steps_follow_the_spells(tenant_out):
    tables = run_plots.load_run(tenant_out)
    steps = usage_steps(tables["spells"], tables["jobs"], 155.0)
    # a holds 16 GPUs at 0, 12 once a4 is preempted at 10, 16 again from 60 (a4 back), 4 from 100, 0 at 155
    times, held = steps["a"]
    assert list(times) == [0.0, 10.0, 60.0, 100.0, 155.0] and list(held) == [16.0, 12.0, 16.0, 4.0, 0.0]
    assert list(steps["b"][0]) == [10.0, 60.0] and list(steps["b"][1]) == [4.0, 0.0]


def test_tenant_figures_draw_the_summary(tenant_out):
    tables = run_plots.load_run(tenant_out)
    figures = run_plots.run_figures(tables)
    assert {"tenant_wait", "tenant_usage"} <= set(figures)
    usage = figures["tenant_usage"]
    panels = [ax for ax in usage.axes if ax.get_visible()]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["a", "b"]  # most GPU-hours first
    # the area under a's bars is its GPU-seconds (gpu_seconds column: 1,600 + 475 of a4's 95 s)
    values, edges, _ = panels[0].patches[0].get_data()  # the bins' mean GPUs held
    area = float((values * np.diff(edges)).sum())
    jobs = tables["jobs"]
    assert area == pytest.approx(jobs.loc[jobs["tenant"] == "a", "gpu_seconds"].sum(), rel=1e-6)
    summary = tables["summary"]
    assert summary["tenants"]["a"]["quota_steps"] == [[0.0, 8.0]]
    wait = tenant_wait_figure(jobs)
    labels = [t.get_text() for t in wait.axes[0].get_xticklabels()]
    assert labels == ["a\n(4; 75% 0 s)", "b\n(1; 100% 0 s)"]  # a4 waited 50 s after its preemption
    assert tenant_usage_figure(tables["spells"], jobs, summary) is not None


def test_a_run_without_tenants_draws_no_tenant_figures(tmp_path):
    plain = [",".join(row.split(",")[:4]) for row in JOBS]
    path = write_scenario(tmp_path, clusters=CLUSTER.split("[[cluster.tenant]]")[0], scheduler='policy = "fifo"',
                          jobs=plain, header="job_id,submit,duration,gpus")
    simsched.run(path).write(tmp_path / "out")
    figures = run_plots.run_figures(run_plots.load_run(tmp_path / "out"))
    assert set(figures) == {"cdf", "queue", "utilization", "gantt", "wait_by_weight"}


def test_report_has_the_tenant_tables_and_chromium_paints_the_figures(tenant_out, tmp_path):
    assert main(["plot", str(tenant_out), "--report"]) == 0
    report = tenant_out / "report.html"
    page = report.read_text(encoding="utf-8")
    assert "Per tenant (summary.json tenants)" in page and "Jain&#x27;s index" in page
    assert "<td>p99 wait (s)</td>" in page  # the starvation rows (issue 21) under the §7 metrics
    assert 'id="fig-tenant_wait"' in page and 'id="fig-tenant_usage"' in page
    binary = _chromium()
    shot = tmp_path / "shot.png"
    proc = _chrome(binary, tmp_path / "profile", "--window-size=1200,6000", f"--screenshot={shot}", report.as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    painted_rows = (pixels < 0.95).any(axis=(1, 2))
    assert painted_rows.sum() > 2000  # seven figures and the tables, not a blank page
    assert json.loads((tenant_out / "summary.json").read_text())["jain_slowdown"] is not None
    assert isinstance(pd.read_csv(tenant_out / "jobs.csv")["tenant"].iloc[0], str)


def test_the_box_plot_keeps_the_thirty_tenants_with_the_most_jobs():
    names = [f"t{i:02d}" for i in range(35) for _ in range(1 + (i >= 5))]  # t05..t34 have two jobs
    jobs = pd.DataFrame({"status": "done", "tenant": names, "wait": np.arange(len(names), dtype=float)})
    fig = tenant_wait_figure(jobs)
    labels = [t.get_text().split("\n")[0] for t in fig.axes[0].get_xticklabels()]
    assert labels == [f"t{i:02d}" for i in range(5, 35)]
    assert "30 of 35 tenants" in fig.axes[0].get_title()
