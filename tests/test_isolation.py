"""User code runs in a child process whose parent enforces the limits (simsched.runs.isolated):
a run there equals an in-process run, and a class of twelve students -- good, buggy, hanging,
dying, hogging memory, editing the scenario, writing into the output folder -- is graded by one
``compare --keep-going`` with every bad student named and nothing hung (issue 37)."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import simsched
from simsched.core.arguments import parse_memory
from simsched.runs import compare
from simsched.runs.isolated import AVAILABLE, Limits, RunFailed, run_watched

CLASS = Path(__file__).parent / "data" / "class37"
BAD = ["some_seeds", "loop", "retry", "no_alarm", "no_timer", "exits", "segfault", "sysexit", "hog"]
SEEDS = 2


def test_a_watched_run_equals_an_in_process_run() -> None:
    spec = compare.compare_spec(CLASS / "class.toml", schedulers=["good.py:Policy"], seeds=2)
    for task in compare.plan(spec):
        watched = compare.run_task_guarded(task)
        plain = compare.run_task(task)
        assert watched.keys() == plain.keys()
        assert all(watched[k] == plain[k] or (watched[k] != watched[k] and plain[k] != plain[k])
                   for k in plain if k != "_warnings")


def test_the_api_runs_a_notebook_object_in_a_child_with_the_same_result(monkeypatch) -> None:
    sys.path.insert(0, str(CLASS))
    try:
        from good import Policy  # a class from outside simsched, as a notebook's would be
    finally:
        sys.path.remove(str(CLASS))
    watched = simsched.run(CLASS / "class.toml", scheduler=Policy)
    monkeypatch.setattr("simsched.runs.single.ISOLATION", False)
    plain = simsched.run(CLASS / "class.toml", scheduler=Policy)
    assert watched.jobs.equals(plain.jobs) and watched.events.equals(plain.events)


def _frozen_after_a_child(freeze_first: bool) -> int:
    """In a fresh interpreter: freeze first or not, run a watched child, and say how many objects
    the collector then leaves out (gc.get_freeze_count)."""
    code = ("import gc, sys\n"
            "from simsched.runs.isolated import run_watched\n"
            f"{'gc.freeze()' if freeze_first else ''}\n"
            "run_watched(print, ('child',), who='t')\n"
            "print(gc.get_freeze_count())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1])


@pytest.mark.skipif(not AVAILABLE, reason="no fork on this platform: runs stay in-process")
def test_a_fork_gives_a_notebook_its_objects_back_and_keeps_the_command_lines_frozen() -> None:
    # the Python API (nothing frozen before): every object is collectable again after the fork, so a
    # long notebook session leaks no cycle; the command line froze its libraries: they stay so
    assert _frozen_after_a_child(freeze_first=False) == 0
    assert _frozen_after_a_child(freeze_first=True) > 0


def test_the_api_names_a_dead_policy_and_its_seed() -> None:
    with pytest.raises(RunFailed, match=r"exits\.py: .*exits\.py:Policy \(seed 1\): the run's process ended "
                                        r"with exit code 3"):
        simsched.run(CLASS / "class.toml", scheduler=str(CLASS / "exits.py") + ":Policy")


@pytest.mark.parametrize("bad", ["0", "12X", "1k", "-1G"])
def test_a_bad_run_memory_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_memory(bad)


def test_bad_limit_flags_are_one_line_exit_2(tmp_path: Path) -> None:
    for flags in (["--run-memory", "lots"], ["--run-timeout", "0"], ["--decide-timeout", "nan"]):
        done = subprocess.run([sys.executable, "-m", "simsched", "compare", str(CLASS / "class.toml"), *flags],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def rank_table(report: Path) -> dict[str, list[str]]:
    """compare.md's rank table: scheduler (as shown, without backquotes) -> its cells (cases, mean rank, place)."""
    text = report.read_text().split("### Rank by")[1]
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| `")]
    return {cells[0].strip().strip("`"): [""] + [c.strip() for c in cells[1:]] for cells in rows}


def place(places: dict[str, list[str]], name: str) -> float:
    return float(places[name][-1])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_class_of_twelve_is_graded_in_one_command(tmp_path: Path, workers: int) -> None:
    folder = tmp_path / "class"
    shutil.copytree(CLASS, folder)
    out = tmp_path / "grades"
    students = ["good", *BAD, "edits", "writes_out"]
    schedulers = ",".join(["fifo", "sjf", *(f"{name}.py:Policy" for name in students)])
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "simsched", "compare", str(folder / "class.toml"), "--schedulers",
                           schedulers, "--seeds", str(SEEDS), "--keep-going", "--decide-timeout", "2",
                           "--run-timeout", "60", "--run-memory", "1G", "--workers", str(workers), "--quiet",
                           "--out", str(out)],
                          capture_output=True, text=True, timeout=SEEDS * len(students) * 60 + 120,
                          env={**os.environ, "CLASS37_OUT": str(out)})
    wall = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    failed_lines = [line for line in done.stderr.splitlines() if line.startswith("failed: ")]
    for name in BAD[1:]:  # every bad student, each run one line naming the student's file
        lines = [line for line in failed_lines if line.startswith(f"failed: {name}:Policy on ")]  # short labels
        assert len(lines) == SEEDS, (name, done.stderr)
        assert all(str(folder / f"{name}.py") in line for line in lines), lines
    assert [line for line in failed_lines if line.startswith("failed: some_seeds:Policy on ")] \
        == [line for line in failed_lines if "some_seeds" in line and "(seed 2)" in line]  # seed 1 ran, seed 2 raised
    places = rank_table(out / "compare.md")
    # honest ranking (docs/assignment.md): the student who failed one seed is placed below fifo, although
    # its one completed seed ranks above fifo's; every student who failed every run is in the table, last
    assert places["some_seeds:Policy"][1] != "failed" and places["some_seeds:Policy"][2] == "failed"
    assert float(places["some_seeds:Policy"][1]) < float(places["fifo"][1])
    assert place(places, "some_seeds:Policy") > place(places, "fifo") > place(places, "sjf")
    assert places["some_seeds:Policy"][-2] == f"{float(places['some_seeds:Policy'][1]):.2f} (n=1)"
    for name in BAD[1:]:
        assert places[f"{name}:Policy"][-2] == f"failed ({SEEDS} of {SEEDS})"
        assert place(places, f"{name}:Policy") > place(places, "some_seeds:Policy")
    report = (out / "compare.md").read_text()
    assert "nan" not in report.lower() and "**" not in "".join(places["some_seeds:Policy"])
    with open(out / "compare.csv", newline="") as fh:  # no "best" from the one seed it completed; the full path kept
        rows = [row for row in csv.DictReader(fh) if row["scheduler"] == "some_seeds.py:Policy"]
    assert rows and not any(row["best"] == "True" for row in rows)
    assert {(row["shown_as"], row["policy_file"]) for row in rows} == {("some_seeds:Policy", str(folder / "some_seeds.py"))}
    reasons = "\n".join(failed_lines)
    assert "--decide-timeout 2 s" in reasons and "signal SIGSEGV" in reasons and "exit code 3" in reasons
    assert "sys.exit(5)" in reasons
    assert "MemoryError" in reasons or "--run-memory" in reasons
    with open(out / "compare_runs.csv", newline="") as fh:
        ranked = {row["scheduler"] for row in csv.DictReader(fh)}
    assert {"fifo", "sjf", "good.py:Policy", "edits.py:Policy", "writes_out.py:Policy"} <= ranked
    assert "scheduler,mean\nwrites_out,0" not in (out / "compare.csv").read_text()  # ours, written last
    assert "count = 64" in (folder / "class.toml").read_text()  # the student did edit it ...
    with open(out / "compare.csv", newline="") as fh:  # ... and every run used the scenario as first read
        table = {(row["metric"], row["scheduler"]): row for row in csv.DictReader(fh)}
    assert table["completed", "edits.py:Policy"]["mean"] == table["completed", "good.py:Policy"]["mean"]
    assert table["avg_jct", "edits.py:Policy"]["mean"] == table["avg_jct", "good.py:Policy"]["mean"]
    assert wall < SEEDS * len(students) * 60 + 60
    print(f"class of {len(students)} with {workers} worker(s): {wall:.1f} s")


def _prints_forever() -> None:
    while True:
        print("still here")


@pytest.mark.skipif(not AVAILABLE, reason="watched runs need fork (not on Windows)")
def test_a_child_that_prints_without_end_is_still_stopped_by_its_run_timeout(capsys) -> None:
    """Messages from the child (prints, progress) never postpone the parent's checks of its limits."""
    with pytest.raises(RunFailed, match="took longer than --run-timeout 1 s"):  # before the fix: no return
        run_watched(_prints_forever, (), who="printer.py:Policy (seed 1)", limits=Limits(run_timeout_s=1.0))
    assert "still here" in capsys.readouterr().out


def _pid(*_: object) -> int:
    return os.getpid()


def _raises() -> None:
    raise ValueError("a student's bug")


def _exits() -> None:
    os._exit(3)


def _sleeps() -> None:
    time.sleep(60)


def _leaves_a_thread() -> int:
    import threading

    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    return os.getpid()


def _kept_here() -> int:
    from simsched.runs import isolated

    return len(isolated._kept)


@pytest.mark.skipif(not AVAILABLE, reason="watched runs need fork (not on Windows)")
def test_a_kept_child_runs_one_students_runs_and_a_failed_run_ends_it_alone() -> None:
    """``keep``: one child for a policy's runs, each held to its own limits; a run that fails (raises,
    dies, times out, leaves a thread behind) is named alone and the next run gets a fresh child."""
    from simsched.runs.isolated import close_kept

    limits = Limits(run_timeout_s=5.0)
    try:
        first = run_watched(_pid, (1,), who="alice.py:P (seed 1)", limits=limits, keep="alice")
        assert first != os.getpid()
        assert run_watched(_pid, (2,), who="alice.py:P (seed 2)", limits=limits, keep="alice") == first
        assert run_watched(_pid, (1,), who="bob.py:P (seed 1)", limits=limits, keep="bob") != first
        assert run_watched(_kept_here, (), who="bob.py:P (seed 2)", limits=limits, keep="bob") == 0  # alice's is out of reach
        with pytest.raises(ValueError, match="a student's bug"):
            run_watched(_raises, (), who="alice.py:P (seed 3)", limits=limits, keep="alice")
        second = run_watched(_pid, (4,), who="alice.py:P (seed 4)", limits=limits, keep="alice")
        assert second not in (first, os.getpid())
        with pytest.raises(RunFailed, match=r"alice.py:P \(seed 5\): the run's process ended with exit code 3"):
            run_watched(_exits, (), who="alice.py:P (seed 5)", limits=limits, keep="alice")
        with pytest.raises(RunFailed, match=r"alice.py:P \(seed 6\): the run took longer than --run-timeout 1 s"):
            run_watched(_sleeps, (), who="alice.py:P (seed 6)", limits=Limits(run_timeout_s=1.0), keep="alice")
        third = run_watched(_leaves_a_thread, (), who="alice.py:P (seed 7)", limits=limits, keep="alice")
        assert run_watched(_pid, (8,), who="alice.py:P (seed 8)", limits=limits, keep="alice") not in (third, second)
    finally:
        close_kept()


@pytest.mark.skipif(not AVAILABLE, reason="watched runs need fork (not on Windows)")
def test_a_compare_runs_each_students_seeds_in_one_child_and_equals_in_process(tmp_path: Path, monkeypatch) -> None:
    """compare (workers=1): the policy's runs share one child, the one its load check ran in; a seed
    whose run kills it is one failed row, the other seeds run (a fresh child after it) and equal
    in-process runs."""
    shutil.copy(CLASS / "class.toml", tmp_path / "class.toml")
    policy = (CLASS / "some_seeds.py").read_text()  # good, but for seed 2, where it dies instead of raising
    policy = policy.replace('raise ValueError("student bug on some seeds")', "os._exit(7)")
    policy = policy.replace("    first = None\n", "    first = None\n\n    def __init__(self):\n"
                            "        with open(os.environ['PIDS_FILE'], 'a') as fh:\n"
                            "            fh.write(f'{os.getpid()}\\n')\n")
    (tmp_path / "pids.py").write_text("import os\n" + policy)
    monkeypatch.setenv("PIDS_FILE", str(tmp_path / "pids.txt"))
    spec = compare.compare_spec(tmp_path / "class.toml", schedulers=["fifo", "pids.py:Policy"], seeds=3)
    watched = compare.run_compare(spec, workers=1, keep_going=True)
    pids = (tmp_path / "pids.txt").read_text().split()
    assert len(pids) == 4 and pids[0] == pids[1] == pids[2] != pids[3]  # check, seeds 1, 2 | seed 3
    assert str(os.getpid()) not in pids
    assert [(f["seed"], f["scheduler"]) for f in watched.failed] == [(2, "pids.py:Policy")]
    assert "(seed 2): the run's process ended with exit code 7" in watched.failed[0]["error"]
    monkeypatch.setattr(compare, "ISOLATION", False)
    rows = compare.run_task(compare.plan(spec)[5]), compare.run_task(compare.plan(spec)[1])
    for row in rows:
        mine = watched.runs.set_index(["seed", "scheduler"]).loc[(row["seed"], row["scheduler"])]
        assert all(mine[k] == row[k] for k in ("avg_jct", "avg_wait", "makespan"))


@pytest.mark.skipif(not AVAILABLE, reason="watched runs need fork (not on Windows)")
def test_a_worker_keeps_one_child_for_a_students_runs_through_the_builtins(tmp_path: Path,
                                                                          monkeypatch) -> None:
    """What a pool's worker does (runs in task order, ``reuse``): fifo and the policy alternate, and
    the worker's child for the policy lives through the fifo runs, so the policy's three runs
    happen in one child, not one each."""
    from simsched.runs.isolated import close_kept

    shutil.copy(CLASS / "class.toml", tmp_path / "class.toml")
    policy = (CLASS / "good.py").read_text().replace(
        '    """Shortest first, first fit: a good student."""\n',
        '    """Shortest first, first fit: a good student."""\n\n    def __init__(self):\n'
        "        with open(os.environ['PIDS_FILE'], 'a') as fh:\n"
        "            fh.write(f'{os.getpid()}\\n')\n")
    (tmp_path / "pids.py").write_text("import os\n" + policy)
    monkeypatch.setenv("PIDS_FILE", str(tmp_path / "pids.txt"))
    spec = compare.compare_spec(tmp_path / "class.toml", schedulers=["fifo", "pids.py:Policy"], seeds=3,
                                check_policies=False)
    tasks = compare.plan(spec)
    assert [t.scheduler for t in tasks] == ["fifo", "pids.py:Policy"] * 3
    try:
        rows = [compare.run_task_guarded(task, keep_going=True, reuse=True) for task in tasks]
    finally:
        close_kept()
    assert not any("_failed" in row for row in rows)
    pids = (tmp_path / "pids.txt").read_text().split()
    assert len(pids) == 3 and len(set(pids)) == 1 and pids[0] != str(os.getpid()), pids
