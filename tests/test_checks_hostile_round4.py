"""Validation classes an independent hostile check of issue 39 found open on main (its rows #49,
#79, #99-#107, #119, #135-#137, #225-#227 and the API scripts): each class with one test.

- weights fine one by one whose sum (or product with a time) overflows;
- timeouts below the timers' resolution (1 us), and a user policy's per-call limit that calls back
  to back slipped through;
- ``run_memory`` beyond the range, and the API's and the flags' one validator;
- a scheduler object or class given to the API meets a file policy's checks;
- a text in a number column of a read-back table: one line naming file, line and column;
- control characters in a compare label;
- a scheduler flag that overrides what a ``[compare.options.LABEL]`` table sets;
- an experiment's ``avg_wait@<tenant>`` for a tenant no instance has.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched
from simsched.cli.main import main
from simsched.core import arguments
from simsched.core.errors import InputError, SimschedWarning
from simsched.policies import Decision, Start
from simsched.runs.experiment.grid import plan
from simsched.runs.experiment.spec import load_spec
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.metric_check import check_metric_tenants

ONE = """
name = "one"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
TENANTS
[workload]
source = "synthetic"
generator = "simple"
jobs = 8
gpus = [1, 2]
mean_duration_s = 600.0
MIX
[scheduler]
policy = "fifo"
"""


def _scenario(folder: Path, name: str = "one.toml", tenants: bool = False, extra: str = "") -> Path:
    path = folder / name
    path.write_text(ONE.replace("TENANTS", 'tenant = [{ name = "a", gpus = 4 }, { name = "b", gpus = 4 }]'
                                if tenants else "")
                    .replace("MIX", "tenant_mix = { a = 0.5, b = 0.5 }" if tenants else "") + extra)
    return path


@pytest.fixture
def one(tmp_path: Path) -> Path:
    return _scenario(tmp_path)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- weights whose sum or product overflows (row #49) ------------------------------------------------
@pytest.mark.parametrize("setting, says", [
    ("workload.gpu_weights=[1e308, 1e308]", "gpu_weights: must give one weight >= 0 per entry of gpus"),
    ("objective.weights=[1e308, 0, 0]", "objective.weights: must be three numbers >= 0"),
    ("objective.weights=[6e99, 6e99, 0]", "with a sum of at most 1e\\+100"),
])
def test_weights_fine_one_by_one_whose_sum_overflows_are_one_line(one: Path, capsys, setting: str,
                                                                 says: str) -> None:
    assert main([str(one), "--set", setting, "--quiet"]) == 2
    line = _one_line(capsys)
    assert "internal error" not in line and re.search(says, line), line
    key, _, value = setting.partition("=")
    with pytest.raises(InputError, match=says):
        simsched.run(one, overrides={key: [float(v) for v in value.strip("[]").split(",")]})


def test_weights_in_range_still_run(one: Path) -> None:
    a = simsched.run(one, overrides={"workload.gpu_weights": [1e307, 3e307], "objective.weights": [1e99, 0, 0]})
    b = simsched.run(one, overrides={"workload.gpu_weights": [1, 3]})
    assert a.jobs["gpus"].equals(b.jobs["gpus"])  # the same mix: only the ratio counts
    assert np.isfinite(a.summary["objective"])


# -- timeouts: the timers' resolution, and a call timed from its own start (rows #225 #227) ----------
@pytest.mark.parametrize("value", ["1e-7", "1e-320", "0.0000001"])
def test_a_timeout_that_rounds_to_no_timer_is_one_line_saying_the_range(one: Path, capsys, value: str) -> None:
    for flag in ("--decide-timeout", "--run-timeout"):
        assert main([str(one), flag, value, "--quiet"]) == 2
        line = _one_line(capsys)
        assert flag in line and "from 1e-06 (the timers count microseconds)" in line, line
    with pytest.raises(InputError, match=r"simsched.run: decide_timeout must be a number of seconds from 1e-06"):
        simsched.run(one, scheduler="fifo", decide_timeout=float(value))
    with pytest.raises(InputError, match=r"simsched.compare: decide_timeout must be a number of seconds from 1e-06"):
        simsched.compare(one, ["fifo"], decide_timeout=float(value))


def test_the_flags_and_the_api_share_one_timeout_range() -> None:
    week = arguments.MAX_DECIDE_TIMEOUT_S
    for value, ok in ((1e-6, True), (0.5e-6, False), (week, True), (week * 1.01, False), (np.float64(2.0), True),
                      (True, False), ("2", False), (float("nan"), False)):
        assert arguments.timeout_ok(value, week) is ok, value
    assert arguments.seconds(np.float64(2.0), "decide_timeout", "x", maximum=week) == 2.0


SLOW = """
import time
from simsched.policies import Decision


class Slow:
    def decide(self, view):
        time.sleep(0.06)  # about one tick of the watching parent (50 ms), call after call
        return Decision(starts=())
"""


@pytest.mark.skipif(not ISOLATION, reason="user code runs in a watched child only where fork exists")
def test_calls_back_to_back_each_about_one_tick_long_are_each_timed(one: Path, capsys) -> None:
    """The parent used to time a call from the first tick that saw it, and a new call restarted that
    clock: calls of about one tick, back to back, were never seen twice and never stopped (the hostile
    rows' 50 ms policy ran to the end under a 1e-7 s limit). Each call is now timed from its own start."""
    (one.parent / "slow.py").write_text(SLOW)
    assert main([str(one), "--policy", "slow.py:Slow", "--decide-timeout", "0.001", "--quiet"]) == 2
    assert "decide() ran longer than --decide-timeout 0.001 s" in _one_line(capsys)


# -- run_memory: one validator for the flag and the API ----------------------------------------------
@pytest.mark.parametrize("value, says", [
    (2**80, "run_memory must be at most 1024T"),
    ("99999999999G", "run_memory must be at most 1024T"),
    (1 << 20, "run_memory must be at least 64M"),
    (2.5e9, "run_memory must be a number of bytes or a size"),
    (True, "run_memory must be a number of bytes or a size"),
])
def test_run_memory_out_of_range_is_one_line_from_the_api_as_from_the_flag(one: Path, capsys, value,
                                                                          says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        simsched.run(one, scheduler="fifo", run_memory=value)
    assert str(caught.value).startswith("simsched.run: ") and "\n" not in str(caught.value)
    if isinstance(value, int) and not isinstance(value, bool):
        assert main([str(one), "--run-memory", str(value), "--quiet"]) == 2
        assert says.removeprefix("run_memory ") in _one_line(capsys)


def test_run_memory_accepts_numpy_integers_and_sizes() -> None:
    assert arguments.memory(np.int64(2**31), "run_memory", "x") == 2**31
    assert arguments.memory("1.5G", "run_memory", "x") == 3 << 29


# -- a policy object or class given to the API: a file policy's checks -------------------------------
class ReturnsList:
    def decide(self, view):
        return []


class ReturnsNone:
    def decide(self, view):
        return None


class NeedsArgument:
    def __init__(self, level):
        self.level = level

    def decide(self, view):  # pragma: no cover - never made
        return Decision(starts=())


class RaisesInInit:
    def __init__(self):
        raise ValueError("no config")

    def decide(self, view):  # pragma: no cover - never made
        return Decision(starts=())


class Tricky(str):
    pass


class StrSubclassId:
    def decide(self, view):
        free = list(view.free)
        for job in view.queue:
            for option in job.options:
                for node in view.fleet.groups[option.cluster, option.gpu_type]:
                    if free[node] >= option.per_worker and job.workers == 1:
                        return Decision(starts=(Start(Tricky(job.job_id), (node,)),))
        return Decision(starts=())


@pytest.mark.parametrize("scheduler, says", [
    (ReturnsList, "ReturnsList.decide returned list .*; it must return a Decision"),
    (ReturnsList(), "ReturnsList.decide returned list .*; it must return a Decision"),
    (ReturnsNone, "ReturnsNone.decide returned NoneType None; it must return a Decision"),
    (NeedsArgument, "the class NeedsArgument cannot be made without arguments .*level.*pass an object"),
    (RaisesInInit, "RaisesInInit.__init__ raised ValueError: no config"),
    (StrSubclassId, "Start.job_id must be the job's job_id string .*a Tricky, a subclass of str"),
])
def test_a_notebook_policy_gets_the_checks_of_a_file_policy(one: Path, scheduler, says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        simsched.run(one, scheduler=scheduler)
    assert "\n" not in str(caught.value)
    if not isinstance(scheduler, type) or scheduler is not NeedsArgument:  # the class and line are named
        assert Path(__file__).name in str(caught.value)


def test_a_good_notebook_policy_runs_as_before(one: Path) -> None:
    class Idle:
        def decide(self, view):
            return Decision(starts=())

    with pytest.warns(SimschedWarning, match="left 8 of 8 feasible jobs unfinished"):
        result = simsched.run(one, scheduler=Idle)
    assert result.summary["completed"] == 0 and result.summary["scheduler"]["policy"].endswith("Idle")


# -- a text in a number column of a read-back table (row #79) ----------------------------------------
@pytest.mark.parametrize("column, value, what", [("wait", "zero", "is not a number"),
                                                 ("runs", "1x", "is not an integer")])
def test_a_text_in_a_number_column_is_one_line_naming_file_line_and_column(one: Path, tmp_path: Path, capsys,
                                                                          column: str, value: str,
                                                                          what: str) -> None:
    out = tmp_path / "out"
    simsched.run(one).write(out)
    lines = (out / "jobs.csv").read_text().splitlines()
    index = lines[0].split(",").index(column)
    cells = lines[3].split(",")
    cells[index] = value
    lines[3] = ",".join(cells)
    (out / "jobs.csv").write_text("\n".join(lines) + "\n")
    expected = f"jobs.csv: line 4, column {column}: '{value}' {what}"
    with pytest.raises(InputError, match=expected):
        simsched.load_run(out)
    assert main(["plot", str(out)]) == 2
    assert expected in _one_line(capsys)


def test_a_text_in_a_compare_number_column_is_one_line(one: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", str(one), "--schedulers", "fifo,sjf", "--workers", "1", "--quiet", "--out", str(out)]) == 0
    lines = (out / "compare_runs.csv").read_text().splitlines()
    index = lines[0].split(",").index("avg_jct")
    cells = lines[2].split(",")
    cells[index] = "zero"
    lines[2] = ",".join(cells)
    (out / "compare_runs.csv").write_text("\n".join(lines) + "\n")
    assert main(["plot", str(out)]) == 2
    assert "compare_runs.csv: line 3, column avg_jct: 'zero' is not a number" in _one_line(capsys)


# -- control characters in a compare label (rows #99 #105 #107) --------------------------------------
def test_a_control_character_in_a_compare_label_is_refused_before_any_run(tmp_path: Path, capsys) -> None:
    scenario = _scenario(tmp_path, extra='[compare]\nschedulers = ["fifo", "ff\\u0000x"]\n'
                                          '[compare.options."ff\\u0000x"]\npolicy = "fifo"\nbackfill = "easy"\n')
    assert main(["compare", str(scenario), "--workers", "1", "--quiet", "--out", str(tmp_path / "out")]) == 2
    line = _one_line(capsys)
    assert "compare.options: label 'ff\\x00x' holds control characters (U+0000)" in line, line
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())  # nothing written
    with pytest.raises(InputError, match="scheduler 'sj\\\\x1bf' holds control characters"):
        simsched.compare(_scenario(tmp_path, "two.toml"), ["fifo", "sj\x1bf"], workers=1)


# -- a flag that overrides a label's own setting (row #119) ------------------------------------------
OPTIONS = """
[compare]
schedulers = ["fifo-none", "fifo-easy"]
[compare.options.fifo-none]
policy = "fifo"
backfill = "none"
[compare.options.fifo-easy]
policy = "fifo"
backfill = "easy"
"""


def test_a_flag_that_overrides_what_a_label_sets_is_refused(tmp_path: Path, capsys) -> None:
    scenario = _scenario(tmp_path, extra=OPTIONS)
    assert main(["compare", str(scenario), "--workers", "1", "--quiet", "--no-backfill"]) == 2
    line = _one_line(capsys)
    assert "--no-backfill would run every scheduler with backfill = false" in line, line
    assert "[compare.options.fifo-none] sets backfill" in line
    # a flag for a key no label sets applies to all of them alike: no lie, it runs
    assert main(["compare", str(scenario), "--workers", "1", "--quiet", "--placement", "best_fit"]) == 0


# -- an experiment's avg_wait@<tenant> for a tenant no instance has (rows #135 #137) -----------------
def _spec(folder: Path, scenario: str, metric: str) -> Path:
    path = folder / "spec.toml"
    path.write_text(f'name = "s"\nscenarios = ["{scenario}"]\nschedulers = ["fifo", "sjf"]\nseeds = 1\n'
                    f'metric = "{metric}"\n')
    return path


def test_a_tenant_metric_for_a_tenant_no_instance_has_is_refused_naming_the_tenants(tmp_path: Path,
                                                                                     capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    _scenario(tmp_path, "ten.toml", tenants=True)
    spec = _spec(tmp_path, "ten.toml", "avg_wait@zzz")
    assert main(["experiment", str(spec), "--workers", "1", "--quiet", "--out", str(tmp_path / "out")]) == 2
    line = _one_line(capsys)
    assert "metric: 'avg_wait@zzz': no instance has a tenant 'zzz'" in line and \
        line.endswith("valid: avg_wait@a, avg_wait@b"), line
    assert not (tmp_path / "out" / "results.csv").exists()
    _scenario(tmp_path, "one.toml")
    assert main(["experiment", str(_spec(tmp_path, "one.toml", "avg_wait@a")), "--workers", "1", "--quiet",
                 "--out", str(tmp_path / "out2")]) == 2
    assert "valid: none: no instance has tenants" in _one_line(capsys)


def test_a_tenant_metric_for_a_tenant_of_the_trace_alone_is_accepted(tmp_path: Path) -> None:
    """A trace's own tenant column (no quotas, no tenant_mix) counts: the workload is read to find it."""
    (tmp_path / "jobs.csv").write_text("job_id,submit,duration,gpus,tenant\n0,0,60,1,vc1\n1,5,60,1,vc2\n2,9,60,1,\n")
    (tmp_path / "trace.toml").write_text(
        'name = "trace"\nseed = 1\n[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]\n'
        '[workload]\nsource = "csv"\npath = "jobs.csv"\n[scheduler]\npolicy = "fifo"\n')
    for metric in ("avg_wait@vc2", "avg_wait@(no tenant)"):
        spec = load_spec(_spec(tmp_path, "trace.toml", metric))
        check_metric_tenants(spec.metric, [t.resolved for t in plan(spec)], "metric")  # no error
    spec = load_spec(_spec(tmp_path, "trace.toml", "avg_wait@vc3"))
    with pytest.raises(InputError, match=r"valid: avg_wait@\(no tenant\), avg_wait@vc1, avg_wait@vc2"):
        check_metric_tenants(spec.metric, [t.resolved for t in plan(spec)], "metric")


@pytest.mark.parametrize("column, value, message", [
    ("job_id", "b\x1b[31m", r"workload: job_id 'b\\x1b\[31m' holds control characters \(U\+001B\)"),
    ("tenant", "t\x00x", r"workload: job 'b': tenant 't\\x00x' holds control characters \(U\+0000\)"),
    ("tenant", "a\nb", r"workload: job 'b': tenant 'a\\nb' holds control characters \(U\+000A\)"),
])
def test_control_characters_in_trace_job_ids_and_tenants_are_one_line(tmp_path, column, value, message) -> None:
    """Job ids and tenants from any reader end up in tables, per-tenant figure names and the terminal
    (an ESC sequence recolours it; a NUL ends a file name): refused in the one place every reader's
    table passes through (simsched.workloads.table.to_job_specs), naming the job."""
    from simsched.core.errors import InputError
    from simsched.workloads.table import normalize, to_job_specs

    rows = {"job_id": ["a", "b"], "submit": [0.0, 5.0], "duration": [10.0, 10.0], "gpus": [1, 1],
            "tenant": ["t1", "t1"]}
    rows[column] = [rows[column][0], value]
    with pytest.raises(InputError, match=message):
        to_job_specs(normalize(pd.DataFrame(rows)), 8)
    rows[column] = [rows[column][0], "b" if column == "job_id" else "t2"]
    assert to_job_specs(normalize(pd.DataFrame(rows)), 8).job_id == ["a", "b"]
