"""compare: per-scheduler options for every [scheduler] key (also for the scenario's own
policy), labels that name a variant, the trace seed note, and progress."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.core.errors import InputError
from simsched.present.compare_tables import to_markdown
from simsched.runs.compare import CompareProgress, compare_spec, run_compare
from simsched.runs.parallel import TaskRunner

JOBS = "job_id,submit,duration,gpus\na,0,100,1\nb,1,10,2\nc,2,10,1\n"
BASE = """
name = "opts"
seed = 1
[[cluster]]
name = "c0"
nodes = [{{ count = 1, gpus = 2, gpu_type = "V100" }}]
[workload]
source = "csv"
path = "jobs.csv"
{workload}
[scheduler]
policy = "fifo"
backfill = true
[compare]
{compare}
"""


def _scenario(tmp_path: Path, compare: str, workload: str = "") -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS)
    path = tmp_path / "opts.toml"
    path.write_text(BASE.format(compare=compare, workload=workload))
    return path


def _avg_jct(result) -> dict[str, float]:
    return result.runs.set_index("scheduler")["avg_jct"].to_dict()


def test_options_apply_to_the_scenarios_own_policy_and_labels_name_variants(tmp_path):
    # two GPUs: a holds one until 100, b needs both. Backfill lets c (1 GPU) run at 2-12:
    # JCTs 100, 109, 10 -> 73. Without backfill c waits for b: 100, 109, 118 -> 109.
    path = _scenario(tmp_path, 'schedulers = ["fifo", "fifo-bf"]\n'
                               '[compare.options.fifo]\nbackfill = false\n'
                               '[compare.options.fifo-bf]\npolicy = "fifo"\nbackfill = true\n')
    result = run_compare(compare_spec(path), workers=1)
    assert _avg_jct(result) == {"fifo": pytest.approx(109.0), "fifo-bf": pytest.approx(73.0)}


def test_placement_is_a_per_scheduler_option(tmp_path):
    from simsched.config.scenario import load_scenario
    from simsched.runs.compare import _options_for, _with_scheduler

    path = _scenario(tmp_path, 'schedulers = ["sjf", "sjf-ff"]\n'
                               '[compare.options.sjf-ff]\npolicy = "sjf"\nplacement = "first_fit"\n')
    spec = compare_spec(path)
    scenario = load_scenario(path)
    variants = {name: _with_scheduler(scenario, name, _options_for(spec, scenario, name)).scheduler
                for name in spec.schedulers}
    assert (variants["sjf"].policy, variants["sjf"].placement) == ("sjf", "best_fit")
    assert (variants["sjf-ff"].policy, variants["sjf-ff"].placement) == ("sjf", "first_fit")


@pytest.mark.parametrize("compare, needle", [
    ('schedulers = ["fifo"]\n[compare.options.fifo]\nplacment = "first_fit"\n',
     "[compare.options.fifo]: scheduler.placment: unknown key"),
    ('schedulers = ["fifo"]\n[compare.options.fifo]\nplacement = "tetris"\n',
     "scheduler.placement: unknown value 'tetris'"),
    ('schedulers = ["nope"]\n', "unknown scheduler 'nope'"),
])
def test_bad_options_fail_before_any_run(tmp_path, compare, needle):
    with pytest.raises(InputError) as info:
        compare_spec(_scenario(tmp_path, compare))
    assert needle in str(info.value)


def test_trace_title_says_seeds_change_only_synthesised_fields(tmp_path):
    path = _scenario(tmp_path, 'schedulers = ["fifo", "sjf"]\nseeds = 2\n',
                     workload="synthesize_deadline = true\nsynthesize_weight = true")
    result = run_compare(compare_spec(path), workers=1)
    md = to_markdown(result)
    assert "seeds change only the synthesised deadlines and the synthesised weights" in md
    assert "Note: on a trace the jobs are the same for every seed" in md


def test_progress_counts_finished_runs_and_names_running_ones(tmp_path):
    path = _scenario(tmp_path, 'schedulers = ["fifo", "sjf"]\nseeds = 2\n')
    snaps: list[CompareProgress] = []
    run_compare(compare_spec(path), workers=1, progress=snaps.append)
    assert [s.done for s in snaps] == [0, 1, 2, 3, 4] and all(s.total == 4 for s in snaps)
    assert snaps[0].running == ("fifo seed 1",) and snaps[0].left_s is None
    assert snaps[2].running == ("fifo seed 2",) and snaps[-1].running == ()
    assert snaps[-1].left_s == 0.0 and snaps[2].left_s == pytest.approx(snaps[2].elapsed_s)


def _square(x: int) -> int:
    return x * x


def test_task_runner_reports_every_task_as_it_finishes():
    seen: list[int] = []
    with TaskRunner("local", 2) as runner:
        assert runner.map(_square, [(i,) for i in range(6)], on_task=seen.append) == [0, 1, 4, 9, 16, 25]
    assert sorted(seen) == list(range(6))
