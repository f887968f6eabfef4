"""Input files that travel with Ray tasks (simsched.runs.shipping), without Ray: the driver lists what a
resolved scenario names, and a worker that cannot see those files runs the same simulation from a
private mirror of them."""

from __future__ import annotations

import shutil
from pathlib import Path

from simsched.config.scenario import load_scenario
from simsched.runs.shipping import Shipment, _mirror, files_of, rebase
from simsched.runs.single import simulation

REPO = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "t"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "csv"
path = "data/jobs.csv"
[scheduler]
policy = "pol/student_policy.py:StudentPolicy"
"""


def _checkout(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True)
    (folder / "pol").mkdir()
    rows = [f"{i},{i * 30},{600 + 37 * i},{1 + i % 4},1,{1 + i % 3},,," for i in range(40)]
    (folder / "data" / "jobs.csv").write_text("job_id,submit,duration,gpus,workers,weight,deadline,"
                                              "home_cluster,gpu_type\n" + "\n".join(rows) + "\n")
    shutil.copy(REPO / "tests" / "student_policy.py", folder / "pol" / "student_policy.py")
    (folder / "s.toml").write_text(SCENARIO)
    return folder / "s.toml"


def test_files_of_lists_the_trace_and_the_policy_file(tmp_path: Path) -> None:
    scenario = load_scenario(_checkout(tmp_path / "c"))
    assert files_of(scenario) == [(tmp_path / "c" / "data" / "jobs.csv").resolve(),
                                  (tmp_path / "c" / "pol" / "student_policy.py").resolve()]


def test_a_worker_without_the_files_runs_the_same_simulation_from_the_mirror(tmp_path: Path) -> None:
    path = _checkout(tmp_path / "c")
    scenario = load_scenario(path)
    expected = simulation(scenario).run().summary
    kept: list = []
    shipment = Shipment(files_of(scenario), lambda contents: kept.append(contents) or "ref")
    assert shipment.files == 2 and shipment.handle is not None
    shutil.rmtree(tmp_path / "c")  # what a worker on another machine sees
    root = _mirror(shipment.digest, kept[0])
    moved = rebase(scenario, root, Path.cwd())
    assert str(moved.workload.base_dir).startswith(str(root))
    got = simulation(moved).run().summary
    same = [k for k in expected if k not in ("wall_time_s", "scenario_file", "decide_time_s")]
    assert len(same) > 10 and expected["jobs"] == 40
    assert {k: got[k] for k in same if k in got} == {k: expected[k] for k in same}


def test_relative_scenario_paths_resolve_against_the_drivers_folder(tmp_path: Path, monkeypatch) -> None:
    _checkout(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario(Path("c/s.toml"))
    moved = rebase(scenario, tmp_path / "mirror", tmp_path)
    assert moved.path == tmp_path / "mirror" / str(tmp_path / "c" / "s.toml").lstrip("/")


def test_mirrors_unused_for_a_day_are_removed_when_another_is_written(tmp_path: Path, monkeypatch) -> None:
    """Mirror folders were never cleaned. Writing a mirror removes this user's mirrors unused for more
    than MIRROR_TTL_S (a worker marks the mirror it uses at most every MIRROR_MARK_S), and keeps the
    others: a mirror in use is never that old."""
    import os
    import tempfile
    import time

    from simsched.runs import shipping

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = tmp_path / f"simsched-inputs-{os.getuid()}"
    mine.mkdir(mode=0o700)
    old, recent = mine / "old0123456789abc", mine / "recent0123456789"
    for folder in (old, recent):
        (folder / "data").mkdir(parents=True)
        (folder / "data" / "jobs.csv").write_text("x\n")
    day = shipping.MIRROR_TTL_S
    os.utime(old, (time.time() - day - 60, time.time() - day - 60))
    os.utime(recent, (time.time() - day + 3600, time.time() - day + 3600))
    root = shipping._mirror("new0123456789abc", {str(tmp_path / "c" / "a.csv"): b"a\n"})
    assert sorted(p.name for p in mine.iterdir()) == ["new0123456789abc", "recent0123456789"]
    assert (root / str(tmp_path / "c" / "a.csv").lstrip("/")).read_bytes() == b"a\n"
    # a worker that uses the recent one marks it used: it is young again
    shipping._MARKED.pop(recent, None)
    shipping._mark_used(recent)
    assert time.time() - recent.stat().st_mtime < 60
