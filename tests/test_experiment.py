"""``python -m simsched experiment``: grid expansion, overrides, validation, the result store
(resume == uninterrupted, a partial run is never recorded), serial == processes == Ray, statistics."""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsched.cli.main import main
from simsched.config.overrides import apply_overrides
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.runs.experiment import runner as runner_module
from simsched.runs.experiment.grid import plan, points
from simsched.runs.experiment.runner import ExperimentInterrupted, run_experiment
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.stats import bootstrap_ci, compute
from simsched.runs.experiment.store import read_results

scipy_stats = pytest.importorskip("scipy.stats", reason="statistics need the extra 'experiment' (scipy)")
REPO = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "{name}"
seed = {seed}
[[cluster]]
name = "c0"
nodes = [{{ count = 2, gpus = 4, gpu_type = "V100" }}]
[[cluster]]
name = "c1"
nodes = [{{ count = 1, gpus = 8, gpu_type = "V100" }}]
[workload]
source = "synthetic"
generator = "simple"
jobs = 30
gpus = [1, 2, 4]
mean_duration_s = 600.0
[scheduler]
policy = "fifo"
restart_penalty_s = 5
"""

SPEC = """
name = "tiny"
scenarios = ["a.toml", "b.toml"]
schedulers = ["fifo", "sjf", {{ name = "tiresias", policy = "mct-tiresias" }}]
seeds = 2
metric = "avg_wait"
headline = "sjf"
record = ["decisions", "jobs"]
{extra}
[overrides]
"workload.jobs" = 24
[sweep]
"scheduler.restart_penalty_s" = [0, 30]
[preset.quick]
seeds = [7]
sweep = {{ "scheduler.restart_penalty_s" = [10] }}
"""


def _spec_dir(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "a.toml").write_text(SCENARIO.format(name="a", seed=1))
    (tmp_path / "b.toml").write_text(SCENARIO.format(name="b", seed=5))
    path = tmp_path / "spec.toml"
    text = SPEC.format(extra="")
    key = extra.split("=")[0].strip()
    lines = text.split("\n")
    if key and any(line.startswith(f"{key} = ") for line in lines):  # a top key already set: replace it
        text = "\n".join(extra if line.startswith(f"{key} = ") else line for line in lines)
    else:
        text = SPEC.format(extra=extra)
    path.write_text(text)
    return path


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=["wall_s"]).reset_index(drop=True)


# -- grid -----------------------------------------------------------------------------------
def test_grid_expansion_order_and_values(tmp_path: Path) -> None:
    spec = load_spec(_spec_dir(tmp_path))
    tasks = plan(spec)
    # 2 sweep points x 2 instances x 2 seeds x 3 schedulers
    assert len(tasks) == 24
    assert len({t.run_id for t in tasks}) == 24
    assert [t.point for t in tasks[:1]] == [(("scheduler.restart_penalty_s", 0),)]
    assert [(t.instance, t.seed, t.scheduler) for t in tasks[:6]] == [
        ("a", 1, "fifo"), ("a", 1, "sjf"), ("a", 1, "tiresias"), ("a", 2, "fifo"), ("a", 2, "sjf"),
        ("a", 2, "tiresias")]
    assert [t.seed for t in tasks if t.instance == "b"][:3] == [5, 5, 5]  # seeds count from each scenario's seed
    for task in tasks:
        assert task.resolved.seed == task.seed
        assert task.resolved.scheduler.restart_penalty_s == dict(task.point)["scheduler.restart_penalty_s"]
        assert task.resolved.workload.params["jobs"] == 24
        assert task.resolved.scheduler.policy == {"fifo": "fifo", "sjf": "sjf", "tiresias": "mct-tiresias"}[
            task.scheduler]
        assert task.ea_stream is None
    # one scenario hash per distinct resolved scenario
    assert len({t.scenario_hash for t in tasks}) == 24


def test_grid_ea_streams_only_multiply_the_ea_scheduler(tmp_path: Path) -> None:
    path = _spec_dir(tmp_path)
    path.write_text(path.read_text().replace(
        'schedulers = ["fifo", "sjf", { name = "tiresias", policy = "mct-tiresias" }]',
        'schedulers = ["fifo", { name = "evo", policy = "evo-gp", population = 4, generations = 2 }]\n'
        'ea_streams = 3').replace('headline = "sjf"', 'headline = "evo"'))
    tasks = plan(load_spec(path))
    # per (point, instance, seed): fifo once, evo once per stream
    assert len(tasks) == 2 * 2 * 2 * (1 + 3)
    assert [t.ea_stream for t in tasks[:4]] == [None, 0, 1, 2]
    assert "ea_stream" not in tasks[1].resolved.scheduler.options  # stream 0 = the default stream
    assert tasks[2].resolved.scheduler.options["ea_stream"] == 1


def test_preset_merges_over_the_spec(tmp_path: Path) -> None:
    spec = load_spec(_spec_dir(tmp_path), "quick")
    assert spec.seeds == (7,)
    assert spec.sweep == (("scheduler.restart_penalty_s", (10,)),)
    assert spec.overrides == (("workload.jobs", 24),)  # untouched keys stay
    tasks = plan(spec)
    assert len(tasks) == 2 * 1 * 3 and {t.seed for t in tasks} == {7}
    assert points(spec) == [(("scheduler.restart_penalty_s", 10),)]


def test_override_equals_the_key_written_in_the_scenario(tmp_path: Path) -> None:
    _spec_dir(tmp_path)
    base = load_scenario(tmp_path / "a.toml")
    edited = tmp_path / "a2.toml"
    edited.write_text((tmp_path / "a.toml").read_text().replace("jobs = 30", "jobs = 12\narrival_rate = 0.01")
                      .replace("restart_penalty_s = 5", "restart_penalty_s = 60\nbackfill = false")
                      + "[objective]\nweights = [1.0, 2.0, 0.0]\n")
    overridden = apply_overrides(base, {"workload.jobs": 12, "workload.arrival_rate": 0.01,
                                        "scheduler.restart_penalty_s": 60, "scheduler.backfill": False,
                                        "objective.weights": [1, 2, 0]})
    direct = load_scenario(edited)
    assert replace(overridden.workload, params_file="") == replace(direct.workload, params_file="")
    assert overridden.workload.params_file.endswith("a.toml (overriding a)")
    assert overridden.scheduler == direct.scheduler
    assert overridden.objective_weights == direct.objective_weights == (1.0, 2.0, 0.0)
    eq16 = apply_overrides(base, {"objective.kind": "eq16", "objective.w": 0.25})
    assert (eq16.objective.kind, eq16.objective.w) == ("eq16", 0.25)
    assert apply_overrides(eq16, {"objective.w": 1}).objective.w == 1.0
    with pytest.raises(InputError, match=r"objective.w: must be <= 1.0"):
        apply_overrides(eq16, {"objective.w": 2})
    with pytest.raises(InputError, match=r"scheduler.restart_penalty_s: must be >= 0"):
        apply_overrides(base, {"scheduler.restart_penalty_s": -1})


def test_paper_specs_load_with_every_preset() -> None:
    for path in sorted((REPO / "experiments" / "paper").glob("*.toml")):
        for preset in ("quick", "full"):
            spec = load_spec(path, preset)
            assert spec.schedulers and spec.headline in spec.scheduler_names, path


def test_tiny_fig4_preset_runs(tmp_path: Path) -> None:
    spec = load_spec(REPO / "experiments" / "paper" / "fig4.toml", "tiny")
    run = run_experiment(spec, tmp_path / "fig4", workers=1)
    assert len(run.results) == 4 and set(run.results["scheduler"]) == {
        "evo-gp", "evo-gp/no-migration", "mct-gp", "mct-spark"}
    assert (run.results["instance"] == "paper-test13-s0").all()
    assert run.results.loc[run.results["scheduler"] == "evo-gp/no-migration", "preemptions"].item() == 0
    stats = compute(run.results, spec)
    assert list(stats.summary["scheduler"]) == list(spec.scheduler_names)
    assert set(stats.tests["baseline"]) == {"evo-gp/no-migration", "mct-gp", "mct-spark"}


@pytest.mark.parametrize("extra, message", [
    ("bogus = 1", "spec.toml: bogus: unknown key"),
    ('metric = "speed"', "metric: unknown metric 'speed'; valid: completed"),
    ('headline = "lyra"', "headline: unknown value 'lyra'; valid: fifo, sjf, tiresias"),
    ('record = ["events"]', "record: unknown record 'events'; valid: decisions, jobs"),
    ("ea_streams = 0", "ea_streams: must be a count >= 1"),
])
def test_bad_spec_keys_name_file_and_key(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_spec(_spec_dir(tmp_path, extra))


def test_bad_overrides_fail_before_any_run(tmp_path: Path) -> None:
    path = _spec_dir(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('"workload.jobs" = 24', '"cluster.count" = 2'))
    with pytest.raises(InputError, match=r"overrides.cluster.count: must be a dotted scenario key in one of"):
        load_spec(path)
    path.write_text(text.replace('"workload.jobs" = 24', '"scheduler.placement" = "tightest"'))
    with pytest.raises(InputError, match=r"scheduler.placement: unknown value 'tightest'; valid: "):
        plan(load_spec(path))
    path.write_text(text.replace('"workload.jobs" = 24', '"workload.jobz" = 24'))
    with pytest.raises(InputError, match=r"workload.jobz: unknown key"):
        run_experiment(load_spec(path), tmp_path / "out", workers=1)
    assert not (tmp_path / "out" / "results.csv").exists()


def test_cli_bad_spec_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    path = _spec_dir(tmp_path, 'seeds = "two"')
    assert main(["experiment", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "spec.toml: seeds: must be an integer or a list" in err
    assert main(["experiment", str(path), "--preset", "nope"]) == 2
    assert "no [preset.nope] table; valid: quick" in capsys.readouterr().err


# -- store, resume, executors ---------------------------------------------------------------------
def test_resume_after_interruption_equals_an_uninterrupted_run(tmp_path: Path, monkeypatch) -> None:
    spec = load_spec(_spec_dir(tmp_path))
    whole = run_experiment(spec, tmp_path / "whole", workers=1)
    assert len(whole.results) == 24 and whole.ran == 24

    real = runner_module.execute
    calls = {"n": 0}

    def interrupted_after_ten(task):
        calls["n"] += 1
        if calls["n"] == 11:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(runner_module, "execute", interrupted_after_ten)
    with pytest.raises(ExperimentInterrupted, match="10 of 24 runs recorded"):
        run_experiment(spec, tmp_path / "cut", workers=1)
    monkeypatch.setattr(runner_module, "execute", real)
    assert len(read_results(tmp_path / "cut")) == 10
    # a torn last line (a write cut short) and decision rows of an unrecorded run are dropped on resume
    with open(tmp_path / "cut" / "results.csv", "a") as fh:
        fh.write("deadbeef00000000,a,a,fifo,1")
    with open(tmp_path / "cut" / "decisions.csv", "a") as fh:
        fh.write("ffffffffffffffff,fifo,3,0.5\n")
    with pytest.raises(InputError, match="pass --resume"):
        run_experiment(spec, tmp_path / "cut", workers=1)
    resumed = run_experiment(spec, tmp_path / "cut", workers=1, resume=True)
    assert (resumed.skipped, resumed.ran) == (10, 14)
    pd.testing.assert_frame_equal(_comparable(whole.results), _comparable(resumed.results))
    pd.testing.assert_frame_equal(whole.decisions.drop(columns="seconds"), resumed.decisions.drop(columns="seconds"))
    a, b = compute(whole.results, spec), compute(resumed.results, spec)
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.tests, b.tests)
    again = run_experiment(spec, tmp_path / "cut", workers=1, resume=True)
    assert (again.skipped, again.ran) == (24, 0)


def test_partial_run_is_never_recorded(tmp_path: Path, monkeypatch) -> None:
    spec = load_spec(_spec_dir(tmp_path), "quick")
    real = runner_module.execute

    def partial_for_sjf(task):
        row = real(task)
        if task.scheduler == "sjf":
            row["partial"] = True  # as when Engine.run was interrupted
        return row

    monkeypatch.setattr(runner_module, "execute", partial_for_sjf)
    with pytest.raises(ExperimentInterrupted, match="1 of 6 runs recorded"):  # it stops there, like Ctrl-C
        run_experiment(spec, tmp_path / "o", workers=1)
    assert list(read_results(tmp_path / "o")["scheduler"]) == ["fifo"]


def test_serial_equals_processes_equals_ray(tmp_path: Path) -> None:
    spec = load_spec(_spec_dir(tmp_path), "quick")
    serial = run_experiment(spec, tmp_path / "serial", workers=1)
    processes = run_experiment(spec, tmp_path / "processes", workers=2)
    pd.testing.assert_frame_equal(_comparable(serial.results), _comparable(processes.results))
    ray = pytest.importorskip("ray", reason="Ray is the optional extra 'ray' (pip install -e '.[ray]')")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        on_ray = run_experiment(spec, tmp_path / "ray", workers=2, executor="ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(_comparable(serial.results), _comparable(on_ray.results))
    tables = [compute(r.results, spec) for r in (serial, processes, on_ray)]
    for other in tables[1:]:
        pd.testing.assert_frame_equal(tables[0].summary, other.summary)
        pd.testing.assert_frame_equal(tables[0].instance_ranks, other.instance_ranks)


def test_store_columns_and_cli_files(tmp_path: Path) -> None:
    path = _spec_dir(tmp_path)
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--preset", "quick", "--out", str(out), "--workers", "1",
                 "--quiet"]) == 0
    results = read_results(out)
    assert list(results.columns[:9]) == ["run_id", "scenario", "instance", "scheduler", "seed", "ea_stream",
                                         "scenario_hash", "wall_s", "scheduler.restart_penalty_s"]
    for metric in ("avg_jct", "avg_wait", "cq_max", "objective", "utilization", "preemptions", "decisions"):
        assert metric in results.columns
    decisions = pd.read_csv(out / "decisions.csv")
    assert list(decisions.columns) == ["run_id", "scheduler", "queued", "seconds"]
    assert decisions.groupby("run_id").size().sort_index().tolist() == results.set_index("run_id")["decisions"].sort_index().tolist()
    plan_rows = pd.read_csv(out / "plan.csv", dtype={"run_id": str})
    assert list(plan_rows.columns) == ["run_id", "scenario", "instance", "scheduler", "seed", "ea_stream",
                                       "scheduler.restart_penalty_s"]
    assert sorted(plan_rows["run_id"]) == sorted(results["run_id"])
    for name in ("summary.csv", "instance_ranks.csv", "tests.csv", "by_priority.csv", "decision_time.csv",
                 "report.md"):
        assert (out / name).exists(), name
    assert len(list((out / "jobs").glob("*.csv"))) == 6
    assert "| scheduler | cases | mean avg_wait |" in (out / "report.md").read_text()


# -- statistics --------------------------------------------------------------------------------
def _fake_results(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for scheduler, per_case in values.items():
        for case, value in enumerate(per_case):
            rows.append({"run_id": f"{scheduler}{case}", "scenario": "s", "instance": f"i{case // 2}",
                         "scheduler": scheduler, "seed": case % 2, "ea_stream": math.nan, "scenario_hash": "h",
                         "wall_s": 1.0, "objective": value})
    return pd.DataFrame(rows)


def test_statistics_on_a_hand_computed_case(tmp_path: Path) -> None:
    spec = load_spec(_spec_dir(tmp_path))
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__slots__}, "sweep": (), "metric": "objective",
                         "headline": "fifo"})
    # 4 cases (2 instances x 2 seeds); lower is better
    values = {"fifo": [1.0, 2.0, 3.0, 4.0], "sjf": [2.0, 2.0, 5.0, 1.0], "tiresias": [3.0, 3.0, 6.0, 9.0]}
    out = compute(_fake_results(values), spec)
    summary = out.summary.set_index("scheduler")
    # case ranks: case0 1,2,3; case1 1.5,1.5,3; case2 1,2,3; case3 2,1,3
    assert summary.loc["fifo", "mean_rank"] == pytest.approx((1 + 1.5 + 1 + 2) / 4)
    assert summary.loc["sjf", "mean_rank"] == pytest.approx((2 + 1.5 + 2 + 1) / 4)
    assert summary.loc["tiresias", "mean_rank"] == 3.0
    assert summary.loc["tiresias", ["rank_ci_low", "rank_ci_high"]].tolist() == [3.0, 3.0]
    assert summary.loc["fifo", "mean"] == 2.5
    # instance means: i0 fifo 1.5 sjf 2 tir 3; i1 fifo 3.5 sjf 3 tir 7.5 -> fifo first on i0, sjf on i1
    assert summary["first"].tolist() == [1, 1, 0]
    tests = out.tests.set_index("baseline")
    assert tests.loc["sjf", ["wins", "ties", "losses"]].tolist() == [2, 1, 1]
    expected = scipy_stats.wilcoxon(values["fifo"], values["tiresias"]).pvalue
    assert tests.loc["tiresias", "p_value"] == pytest.approx(expected)
    assert tests.loc["tiresias", "mean_difference"] == pytest.approx(2.5 - 5.25)


def test_runs_that_left_jobs_unfinished_rank_last_in_experiments(tmp_path: Path) -> None:
    """Issue 25: tiresias has the best objective in every case but left jobs unfinished in cases 0
    and 1: there it ranks after fifo and sjf, which finished everything; the tables mark it †."""
    from simsched.present.experiment_tables import summary_rows, to_markdown

    spec = load_spec(_spec_dir(tmp_path))
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__slots__}, "sweep": (), "metric": "objective",
                         "headline": "fifo"})
    values = {"fifo": [1.0, 2.0, 3.0, 4.0], "sjf": [2.0, 2.0, 5.0, 1.0], "tiresias": [0.5, 0.5, 0.5, 0.5]}
    results = _fake_results(values)
    results["unfinished"] = [0, 0, 0, 0, 0, 0, 0, 0, 7, 3, 0, 0]
    summary = compute(results, spec).summary.set_index("scheduler")
    # case ranks: case0 fifo 1, sjf 2, tir 3; case1 1.5, 1.5, 3; case2 tir 1, fifo 2, sjf 3; case3 tir 1, sjf 2, fifo 3
    assert summary.loc["tiresias", "mean_rank"] == pytest.approx((3 + 3 + 1 + 1) / 4)
    assert summary.loc["fifo", "mean_rank"] == pytest.approx((1 + 1.5 + 2 + 3) / 4)
    assert summary.loc["tiresias", "unfinished_cases"] == 2 and summary.loc["fifo", "unfinished_cases"] == 0
    # instance i0 (cases 0, 1): tiresias left jobs unfinished, so fifo is first there; i1: tiresias
    assert summary["first"].tolist() == [1, 0, 1]
    stats = compute(results, spec)
    header, rows = summary_rows(stats, spec, "")
    assert [row[0] for row in rows] == ["fifo", "sjf", "tiresias †"]
    assert not rows[2][2].startswith("*")  # not the "best" mean, though the lowest: it left work undone
    assert "tiresias: 2 of 4 runs" in to_markdown(stats, spec, "t")


def test_bootstrap_ci_brackets_the_mean_and_is_reproducible() -> None:
    values = np.array([1.0, 4.0, 2.0, 8.0, 5.0, 3.0])
    low, high = bootstrap_ci(values)
    assert low < values.mean() < high
    assert bootstrap_ci(values) == (low, high)
    assert bootstrap_ci(np.array([3.0, 3.0])) == (3.0, 3.0)
    assert all(math.isnan(x) for x in bootstrap_ci(np.array([3.0])))


def test_run_ids_do_not_depend_on_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    spec_path = REPO / "experiments" / "paper" / "fig4.toml"
    monkeypatch.chdir(REPO)
    here = [t.run_id for t in plan(load_spec(Path("experiments/paper/fig4.toml"), "tiny"))]
    monkeypatch.chdir(tmp_path)
    there = [t.run_id for t in plan(load_spec(spec_path, "tiny"))]
    assert here == there


def test_list_and_bool_sweep_values(tmp_path: Path) -> None:
    path = _spec_dir(tmp_path)
    path.write_text(path.read_text().replace(
        '"scheduler.restart_penalty_s" = [0, 30]',
        '"objective.weights" = [[1, 1, 1], [1, 0, 0]]\n"scheduler.backfill" = [true, false]'))
    spec = load_spec(path, "quick")
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__slots__},
                         "sweep": (("objective.weights", ([1, 1, 1], [1, 0, 0])), ("scheduler.backfill", (True, False)))})
    run = run_experiment(spec, tmp_path / "o", workers=1)
    assert len(run.results) == 4 * 2 * 3
    assert set(run.results["objective.weights"]) == {"[1, 1, 1]", "[1, 0, 0]"}
    summary = compute(run.results, spec).summary
    assert len(summary) == 4 * 3
    fifo = run.results[(run.results["scheduler"] == "fifo") & (run.results["objective.weights"] == "[1, 0, 0]")]
    assert (fifo["objective"] == fifo["cq_avg"]).all()


def test_resume_with_a_changed_grid_reports_only_the_new_grid(tmp_path: Path, capsys) -> None:
    """Rows of runs no longer planned stay in results.csv but count nowhere: the tables, the report
    and the figures' data of a resumed experiment with a changed grid equal a fresh run of that grid."""
    path = _spec_dir(tmp_path)
    text = path.read_text()
    old_grid = text.replace('sweep = { "scheduler.restart_penalty_s" = [10] }',
                            'sweep = { "scheduler.restart_penalty_s" = [0, 10] }')
    new_grid = text.replace('sweep = { "scheduler.restart_penalty_s" = [10] }',
                            'sweep = { "scheduler.restart_penalty_s" = [10, 30] }')
    resumed, fresh = tmp_path / "resumed", tmp_path / "fresh"
    quick = ["--preset", "quick", "--workers", "1", "--quiet"]
    path.write_text(old_grid)
    assert main(["experiment", str(path), "--out", str(resumed), *quick]) == 0
    path.write_text(new_grid)
    capsys.readouterr()
    assert main(["experiment", str(path), "--out", str(resumed), "--resume", *quick]) == 0
    err = capsys.readouterr().err
    # 2 instances x 1 seed x 3 schedulers at restart_penalty_s = 0 are stale; the 10 s runs are reused
    assert "6 rows of runs not in the current plan" in err and err.count("\n") == 1
    assert len(read_results(resumed)) == 18  # kept on disk
    assert main(["experiment", str(path), "--out", str(fresh), *quick]) == 0
    assert "not in the current plan" not in capsys.readouterr().err
    for name in ("summary.csv", "instance_ranks.csv", "tests.csv", "by_priority.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(resumed / name), pd.read_csv(fresh / name), obj=name)
    timed = ["median", "p90", "max"]  # wall seconds of decisions differ between two runs; the counts do not
    pd.testing.assert_frame_equal(pd.read_csv(resumed / "decision_time.csv").drop(columns=timed),
                                  pd.read_csv(fresh / "decision_time.csv").drop(columns=timed))

    def report(folder: Path) -> str:
        return (folder / "report.md").read_text().split("## Decision time")[0]

    assert report(resumed) == report(fresh)
    pytest.importorskip("matplotlib", reason="figures need the extra 'plots' (matplotlib)")
    from simsched.present.plots.experiment import load_experiment

    a, b = load_experiment(resumed), load_experiment(fresh)
    assert (a["stale"], b["stale"]) == (6, 0) and a["sweep_keys"] == b["sweep_keys"]
    pd.testing.assert_frame_equal(_comparable(a["results"]), _comparable(b["results"]))
    pd.testing.assert_frame_equal(a["decisions"].drop(columns="seconds"), b["decisions"].drop(columns="seconds"))
    assert main(["plot", str(resumed)]) == 0
    assert "6 rows of runs not in the current plan" in capsys.readouterr().err


# -- a scheduler key that follows a swept value -------------------------------------------------
def _per_w_spec(tmp_path: Path, priority: str = "pw{objective.w}.json", sweep: str = "[0.0, 1.0]") -> Path:
    from simsched.evo.priority import parse, save_priority

    path = _spec_dir(tmp_path)
    save_priority(parse("g * d"), tmp_path / "pw0.json")
    save_priority(parse("0 - q"), tmp_path / "pw1.json")
    text = path.read_text().replace('schedulers = ["fifo", "sjf", { name = "tiresias", policy = "mct-tiresias" }]',
                                    'schedulers = ["fifo", { name = "gp/w", policy = "mct-gp", priority = "'
                                    + priority + '" }, { name = "gp/0", policy = "mct-gp", priority = "pw0.json" }, '
                                    '{ name = "gp/1", policy = "mct-gp", priority = "pw1.json" }]')
    text = text.replace('headline = "sjf"', 'headline = "gp/w"').replace('record = ["decisions", "jobs"]', "")
    text = text.replace('"workload.jobs" = 24', '"workload.jobs" = 24\n"objective.kind" = "eq16"')
    text = text.replace('"scheduler.restart_penalty_s" = [0, 30]', f'"objective.w" = {sweep}')
    text = text.replace('sweep = {{ "scheduler.restart_penalty_s" = [10] }}', "").replace(
        'sweep = { "scheduler.restart_penalty_s" = [10] }', "")
    path.write_text(text)
    return path


def test_scheduler_key_follows_the_swept_value(tmp_path: Path) -> None:
    """priority = "pw{objective.w}.json" pairs each w with its own learned function (Fig. 7-8)."""
    spec = load_spec(_per_w_spec(tmp_path), "quick")
    tasks = plan(spec)
    paired = {dict(t.point)["objective.w"]: t.resolved.scheduler.options["priority"]
              for t in tasks if t.scheduler == "gp/w"}
    assert {w: Path(p).name for w, p in paired.items()} == {0.0: "pw0.json", 1.0: "pw1.json"}
    assert len({t.run_id for t in tasks}) == len(tasks) == 2 * 2 * 4
    run = run_experiment(spec, tmp_path / "o", workers=1)
    rows = run.results.set_index(["scheduler", "objective.w", "instance"])
    metrics = ["avg_jct", "max_wait", "objective"]
    for w, literal in ((0.0, "gp/0"), (1.0, "gp/1")):  # the same schedule as the literal file at that w
        pd.testing.assert_frame_equal(rows.loc["gp/w"].loc[w][metrics], rows.loc[literal].loc[w][metrics])
    # the two functions do schedule differently here, so the pairing is visible in the results
    assert not rows.loc["gp/0"][metrics].equals(rows.loc["gp/1"][metrics])
    assert load_spec(_per_w_spec(tmp_path, "pw{objective.w}.json", "[0, 1]"), "quick").schedulers[1].at(
        {"objective.w": 1}) == (("priority", "pw1.json"),)


@pytest.mark.parametrize("priority, sweep, message", [
    ("pw{objective.x}.json", "[0.0, 1.0]", r"schedulers\[1\].priority: \{objective.x\} names no swept key; "
                                           r"a placeholder takes the grid point's value of a \[sweep\] key: objective.w"),
    ("pw{objective.w.json", "[0.0, 1.0]", r"schedulers\[1\].priority: unbalanced braces"),
    ("pw{objective.w}.json", "[0.0, 0.5]", r"scheduler 'gp/w' at objective.w = 0.5: .*pw0.5.json.* not found"),
])
def test_bad_scheduler_placeholders(tmp_path: Path, priority: str, sweep: str, message: str) -> None:
    path = _per_w_spec(tmp_path, priority, sweep)
    with pytest.raises(InputError, match=message):
        run_experiment(load_spec(path, "quick"), tmp_path / "o", workers=1)
    assert not (tmp_path / "o" / "results.csv").exists()  # refused before any run


PIN = (b"# Pinned to the catalog it ran with (issue 38): this fleet is all V100 (speed 1 on every basis),\n"
       b"# but the catalog is part of every run id of the committed stores made from it.\n"
       b'speed_basis = "fp32"\n')


def test_fig7_8_learned_functions_match_their_w() -> None:
    """Every w of the Fig. 7-8 spec (full preset) has a shipped function, learned with Eq. 16 at that w
    from the unchanged learning scenario of that w, over the cluster sizes with alpha = 1."""
    import json

    from simsched.evo.priority import load_priority
    from simsched.runs.experiment.spec import point_text

    spec = load_spec(REPO / "experiments" / "paper" / "fig7_8.toml", "full")
    (key, values), = spec.sweep
    assert key == "objective.w"
    learned = [t for t in plan(spec) if t.scheduler == "gp/learned-w" and t.seed == 1]
    assert len(learned) == len(values) == 5
    for task in learned:
        w = dict(task.point)["objective.w"]
        path = (Path(task.resolved.path).parent / task.resolved.scheduler.options["priority"]).resolve()
        assert path == REPO / "workloads" / "priorities" / f"venus_w{point_text(w)}.json"
        load_priority(path)
        meta = json.loads(path.read_text())["meta"]
        source = REPO / "experiments" / "paper" / "scenarios" / f"venus_w{point_text(w)}.toml"
        scenario = load_scenario(source)
        assert (scenario.objective.kind, scenario.objective.w) == ("eq16", w)
        assert meta["objective"] == f"Eq. 16, w = {point_text(w)}"
        # venus_w1.toml is also Fig. 9b's scenario: issue 38 pinned its speed basis (an all-V100 fleet,
        # so nothing it simulates changed) after the function was learned; the file it was learned
        # from is this one without those three lines
        text = source.read_bytes()
        unpinned = text.replace(PIN, b"")
        assert meta["scenario_sha256"] in (scenario.digest, hashlib.sha256(unpinned).hexdigest()[:16])
        assert text == unpinned or (w == 1 and text.count(PIN) == 1)
        assert meta["config"]["instances"] == "sizes" and meta["config"]["alpha"] == 1
        assert task.resolved.objective.w == w


def test_equal_streams_tie_exactly_and_their_spread_is_tabled(tmp_path: Path) -> None:
    """15 EA streams that all give 0.7750292349667665 average to that value exactly (a float mean of
    them is ...662, which broke the tie with a deterministic scheduler's single run); the spread table
    ranks each stream alone against the others' averages."""
    spec = load_spec(_spec_dir(tmp_path))
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__slots__}, "sweep": (), "metric": "objective",
                         "headline": "evo"})
    v = 0.7750292349667665
    assert float(np.mean([v] * 15)) != v  # the trap
    rows = [{"run_id": f"e{s}", "scenario": "s", "instance": "i0", "scheduler": "evo", "seed": 0, "ea_stream": s,
             "scenario_hash": "h", "wall_s": 1.0, "objective": v} for s in range(15)]
    # a second scheduler whose streams differ: 0.5, 1.0, 2.0 (mean 7/6)
    rows += [{"run_id": f"m{s}", "scenario": "s", "instance": "i0", "scheduler": "mig", "seed": 0, "ea_stream": s,
              "scenario_hash": "h", "wall_s": 1.0, "objective": x} for s, x in enumerate([0.5, 1.0, 2.0])]
    rows += [{"run_id": "f", "scenario": "s", "instance": "i0", "scheduler": "fifo", "seed": 0, "ea_stream": math.nan,
              "scenario_hash": "h", "wall_s": 1.0, "objective": v}]
    out = compute(pd.DataFrame(rows), spec)
    ranks = out.instance_ranks.set_index("scheduler")["rank"]
    # evo and fifo tie at v (ranks 1 and 2 shared: 1.5); mig's mean 7/6 is last
    assert ranks.to_dict() == {"evo": 1.5, "mig": 3.0, "fifo": 1.5}
    spread = out.streams.set_index("scheduler")
    assert spread.loc["evo", ["streams", "min", "max", "std"]].tolist() == [15, v, v, 0.0]
    assert spread.loc["evo", ["best_rank", "worst_rank", "first_streams"]].tolist() == [1.5, 1.5, 15]
    # mig's streams alone against evo (v) and fifo (v): 0.5 ranks 1; 1.0 and 2.0 rank 3
    assert spread.loc["mig", ["best_rank", "worst_rank", "first_streams"]].tolist() == [1.0, 3.0, 1]
    assert spread.loc["mig", "mean"] == pytest.approx(7 / 6)


def test_no_stream_table_without_several_streams(tmp_path: Path) -> None:
    spec = load_spec(_spec_dir(tmp_path))
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__slots__}, "sweep": (), "metric": "objective",
                         "headline": "fifo"})
    out = compute(_fake_results({"fifo": [1.0, 2.0], "sjf": [2.0, 1.0]}), spec)
    assert out.streams is None
