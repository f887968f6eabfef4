"""The experiment store as a shared resource (issue 23, and issue 24's store items): one writer
per folder, a run counts once, a torn last line is redone, a damaged middle line and a foreign or
binary results.csv are one-line errors, rows that do not belong to the plan or hold non-numbers
are moved aside and redone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simsched.cli.main import main
from simsched.runs.experiment.lock import LOCK, FolderLock
from simsched.runs.experiment.runner import run_experiment
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.store import REJECTED, read_results

pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")
REPO = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "a"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 20
gpus = [1, 2, 4]
mean_duration_s = 600.0
[scheduler]
policy = "fifo"
"""

SPEC = """
name = "shared"
scenarios = ["a.toml"]
schedulers = ["fifo", "sjf"]
seeds = {seeds}
metric = "avg_wait"
"""


def _spec(tmp_path: Path, seeds: int = 3) -> Path:
    (tmp_path / "a.toml").write_text(SCENARIO)
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(seeds=seeds))
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# -- one writer ----------------------------------------------------------------------------------
def test_a_held_folder_is_refused_at_once_naming_the_holder(tmp_path: Path, capsys) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time\nfrom simsched.runs.experiment.lock import FolderLock\n"
                               f"FolderLock({str(out)!r}).acquire()\nprint('held', flush=True)\ntime.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet", "--workers", "1"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert f"is in use by pid {holder.pid} on " in err[0] and "choose another --out" in err[0]
        assert not (out / "results.csv").exists()  # nothing written by the refused invocation
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone (killed): the kernel released its lock, the next invocation runs and says
    # it took over a lock whose pid is dead
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet", "--workers", "1"]) == 0
    assert "took over the lock of pid" in capsys.readouterr().err
    assert len(read_results(out)) == 6


def test_two_invocations_at_once_one_runs_one_is_refused_and_every_run_counts_once(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=40), tmp_path / "out"  # 80 runs: the first holds the folder for seconds
    command = [sys.executable, "-m", "simsched", "experiment", str(spec), "--out", str(out), "--resume",
               "--quiet", "--workers", "1"]
    first = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
    second = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path)
    outcomes = sorted([(first.wait(timeout=300), first.stderr.read()), (second.wait(timeout=300),
                                                                          second.stderr.read())])
    assert [code for code, _ in outcomes] == [0, 2], outcomes
    refused = outcomes[1][1].strip().splitlines()
    assert len(refused) == 1 and "is in use by pid" in refused[0]
    results = read_results(out)
    assert len(results) == 80 and results["run_id"].is_unique


def test_the_lock_is_released_when_the_call_ends(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    with FolderLock(out) as lock:  # free again
        assert lock.warning is None
    assert (out / LOCK).read_text() == ""  # a clean exit names no holder


# -- a run counts once -----------------------------------------------------------------------------
def test_a_second_row_for_a_run_is_dropped_on_resume_and_never_counted(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=2), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    lines = _lines(out / "results.csv")
    (out / "results.csv").write_text("\n".join([*lines, lines[1], lines[2]]) + "\n")  # two runs twice
    notes: list[str] = []
    run = run_experiment(load_spec(spec), out, workers=1, resume=True, notify=notes.append)
    assert run.ran == 0 and len(run.results) == 4 and run.results["run_id"].is_unique
    assert sum("a second row for a run already recorded" in n for n in notes) == 2
    assert _lines(out / "results.csv") == lines  # the file holds each run once again
    assert len(_lines(out / REJECTED)) == 3  # header + the two extra rows, kept aside, not lost


def test_add_refuses_a_run_already_recorded(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    from simsched.runs.experiment.store import ResultStore

    store = ResultStore(out, ())
    finished = store.open(resume=True)
    run_id = sorted(finished)[0]
    before = (out / "results.csv").read_bytes()
    assert store.add({"run_id": run_id, "scenario": "a", "instance": "a", "scheduler": "fifo", "seed": 1,
                      "ea_stream": None, "scenario_hash": "x", "wall_s": 0.1}, {}, {"avg_wait": 1.0}) is False
    assert (out / "results.csv").read_bytes() == before
    assert "already recorded" in store.notices[-1]


# -- damaged files ----------------------------------------------------------------------------------
def test_a_torn_last_line_is_dropped_with_a_warning_and_its_run_redone(tmp_path: Path, capsys) -> None:
    spec, out = _spec(tmp_path, seeds=2), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    whole = read_results(out)
    text = (out / "results.csv").read_text()
    (out / "results.csv").write_text(text[: text.rstrip("\n").rfind("\n") + 1 + 25])  # a power cut mid-row
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert ":5: the last line was cut off" in err
    again = read_results(out)
    assert len(again) == 4
    pd.testing.assert_frame_equal(again.drop(columns="wall_s"), whole.drop(columns="wall_s"))


def test_a_damaged_middle_line_is_an_error_naming_it(tmp_path: Path, capsys) -> None:
    spec, out = _spec(tmp_path, seeds=2), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    lines = _lines(out / "results.csv")
    lines[2] = lines[2][:20]
    (out / "results.csv").write_text("\n".join(lines) + "\n")
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.csv:3:" in err[0] and "damaged" in err[0]


@pytest.mark.parametrize("content, expected", [
    (b"\x00\x01\x02binary\xff", "binary content"),
    (b"run_id,x\n\xff\xfe\n", "not UTF-8 text"),
    (b"name,age\nada,36\n", "do not match this spec's"),
])
def test_a_binary_or_foreign_results_file_is_one_line(tmp_path: Path, capsys, content: bytes,
                                                      expected: str) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_bytes(content)
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "results.csv" in err[0]
    assert (out / "results.csv").read_bytes() == content  # left as it was


def test_results_csv_that_is_a_device_is_not_read(tmp_path: Path, capsys) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    out.mkdir()
    (out / "results.csv").symlink_to("/dev/zero")
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet"]) == 2
    assert "not a regular file" in capsys.readouterr().err


# -- content ----------------------------------------------------------------------------------------
def test_rows_with_non_numbers_or_another_identity_are_moved_aside_and_redone(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=2), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    whole = read_results(out)
    frame = whole.copy()
    column = list(frame.columns).index("avg_wait")
    lines = _lines(out / "results.csv")
    cells = lines[1].split(",")
    cells[column] = "nan"
    lines[1] = ",".join(cells)
    cells = lines[2].split(",")
    cells[3] = "sjf" if cells[3] == "fifo" else "fifo"  # the run_id of one scheduler, the name of the other
    lines[2] = ",".join(cells)
    (out / "results.csv").write_text("\n".join(lines) + "\n")
    notes: list[str] = []
    run = run_experiment(load_spec(spec), out, workers=1, resume=True, notify=notes.append)
    assert run.ran == 2 and run.skipped == 2
    assert any("not a finite number in avg_wait" in n and "done again" in n for n in notes)
    assert any("differ from the plan's run" in n for n in notes)
    pd.testing.assert_frame_equal(run.results.drop(columns="wall_s"), whole.drop(columns="wall_s"))


def test_an_empty_metric_cell_is_a_mean_over_no_jobs_not_damage(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    lines = _lines(out / "results.csv")
    column = lines[0].split(",").index("avg_wait")
    cells = lines[1].split(",")
    cells[column] = ""
    lines[1] = ",".join(cells)
    (out / "results.csv").write_text("\n".join(lines) + "\n")
    run = run_experiment(load_spec(spec), out, workers=1, resume=True)
    assert run.ran == 0


def test_load_rows_never_counts_a_negative_number_of_missing_runs(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path, seeds=1), tmp_path / "out"
    run_experiment(load_spec(spec), out, workers=1)
    from simsched.runs.experiment.grid import plan
    from simsched.runs.experiment.runner import load_rows

    tasks = plan(load_spec(spec))
    lines = _lines(out / "results.csv")
    (out / "results.csv").write_text("\n".join([*lines, *lines[1:]]) + "\n")  # written by an old, unlocked simsched
    results, _, _ = load_rows(out, tasks)
    assert len(results) == 2 and results["run_id"].is_unique


# -- resource errors are errors, not bugs ----------------------------------------------------------
def _small_tmpfs(folder: Path, size: str) -> bool:
    """Mount a tmpfs of ``size`` on ``folder`` (needs root; False where that is not allowed)."""
    folder.mkdir()
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


def test_a_full_disk_is_one_line_with_its_own_exit_code_and_the_store_survives(tmp_path: Path, capsys,
                                                                             monkeypatch) -> None:
    from simsched.core.atomic import RESOURCE_EXIT
    from simsched.runs.experiment import store as store_module

    spec, out = _spec(tmp_path, seeds=3), tmp_path / "out"
    real_write, calls = os.write, []

    def full_after_two_rows(fd: int, data) -> int:
        calls.append(1)
        if len(calls) > 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(store_module.os, "write", full_after_two_rows)
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == RESOURCE_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"error: cannot write {out / 'results.csv'}: No space left on device (ENOSPC)")
    assert "internal error" not in err[0] and "bug" not in err[0]
    assert len(read_results(out)) == 2  # the rows written before the disk filled stay
    monkeypatch.setattr(store_module.os, "write", real_write)
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1", "--resume"]) == 0
    assert len(read_results(out)) == 6


def test_a_real_full_tmpfs_under_run_out(tmp_path: Path, capsys) -> None:
    from simsched.core.atomic import RESOURCE_EXIT

    small = tmp_path / "small"
    if not _small_tmpfs(small, "16k"):
        pytest.skip("cannot mount a small tmpfs here (needs root); the patched-write test covers the message")
    try:
        code = main([str(REPO / "scenarios" / "philly_hetero.toml"), "--out", str(small), "--quiet",
                     "--jobs-limit", "400"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == RESOURCE_EXIT, err
        assert len(err) == 1 and "No space left on device (ENOSPC)" in err[0] and str(small) in err[0]
        assert not [p.name for p in small.iterdir() if p.name.endswith(".tmp")]  # no temporary files left
    finally:
        subprocess.run(["umount", str(small)], check=False)


# -- modes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_get_the_mode_open_would_give_under_the_umask(tmp_path: Path, umask: int) -> None:
    from simsched.core.atomic import write_text

    old = os.umask(umask)
    try:
        path = write_text(tmp_path / "summary.json", "{}")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777) == 0o666 & ~umask


def test_runs_ray_gave_up_on_are_one_line_exit_74_and_resume_runs_them(tmp_path: Path, capsys,
                                                                        monkeypatch) -> None:
    """When Ray's retries run out for a run (its worker died each time: WorkerCrashedError), the
    executor names it after the other runs finished (simsched.runs.parallel.TasksLost). The CLI says
    so on one line, as a resource failure (exit 74, not "a bug in simsched"), with the rows kept and
    --resume to run the rest. Here the executor is stood in for: the second task is lost."""
    from simsched.core.atomic import RESOURCE_EXIT
    from simsched.runs.experiment import runner as runner_module
    from simsched.runs.parallel import TaskRunner, TasksLost

    class LosesTheSecond(TaskRunner):
        def imap_unordered(self, fn, tasks, on_wait=None):
            for i, task in enumerate(tasks):
                if i != 1:
                    yield i, fn(*task)
            raise TasksLost([(1, "WorkerCrashedError: The worker died unexpectedly")])

    spec, out = _spec(tmp_path, seeds=3), tmp_path / "out"
    monkeypatch.setattr(runner_module, "TaskRunner", LosesTheSecond)
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == RESOURCE_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: 1 of 6 runs lost on Ray, the first ")
    assert "(WorkerCrashedError: The worker died unexpectedly)" in err[0] and "not a bug in simsched" in err[0]
    assert err[0].endswith(f"5 of 6 runs are recorded in {out}; run again with --resume to run the rest")
    assert len(read_results(out)) == 5
    monkeypatch.setattr(runner_module, "TaskRunner", TaskRunner)
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1", "--resume"]) == 0
    assert len(read_results(out)) == 6
