"""Experiments on a real multi-node Ray cluster (several Ray nodes as separate processes on this
machine, ray.cluster_utils.Cluster): a worker node killed mid-experiment loses no result and
duplicates none, and the tables equal a serial run's; under --quiet nothing of Ray's own logging
reaches the terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simsched.runs.experiment.runner import run_experiment
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.store import read_results

ray = pytest.importorskip("ray", reason="Ray is the optional extra 'ray' (pip install -e '.[ray]')")
pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")
from ray.cluster_utils import Cluster  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "a"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 4, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 400
gpus = [1, 2, 4, 8]
mean_duration_s = 900.0
[scheduler]
policy = "fifo"
"""

SPEC = """
name = "ray-nodes"
scenarios = ["a.toml"]
schedulers = ["fifo", "sjf", "srsf"]
seeds = 8
metric = "avg_wait"
"""


@pytest.fixture
def cluster():
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # the head runs no task
    workers = [nodes.add_node(num_cpus=1) for _ in range(2)]
    nodes.wait_for_nodes()
    try:
        yield nodes, workers
    finally:
        nodes.shutdown()


def test_a_worker_node_killed_mid_experiment_loses_and_duplicates_nothing(tmp_path: Path, cluster) -> None:
    nodes, workers = cluster
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    driver = subprocess.Popen([sys.executable, "-m", "simsched", "experiment", "spec.toml", "--out", str(out),
                               "--executor", "ray", "--address", nodes.address, "--quiet"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None:
        rows = (out / "results.csv").read_text().count("\n") - 1 if (out / "results.csv").exists() else 0
        if rows >= 2:
            break
        time.sleep(0.2)
    killed_mid_run = driver.poll() is None
    nodes.remove_node(workers[0])  # its raylet and workers die; its tasks in flight are retried elsewhere
    stdout, stderr = driver.communicate(timeout=300)
    assert killed_mid_run, "the experiment ended before a node could be killed; make the runs longer"
    assert driver.returncode == 0, stderr
    assert stdout == "" and stderr == "", (stdout, stderr)  # --quiet: not a line of Ray's logging
    results = read_results(out)
    assert len(results) == 24 and results["run_id"].is_unique
    serial = run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "serial", workers=1)
    assert serial.retries == 0
    got = results.set_index("run_id").loc[serial.results["run_id"]].reset_index()
    pd.testing.assert_frame_equal(got.drop(columns="wall_s"), serial.results.drop(columns="wall_s"),
                                  check_dtype=False)


def test_a_driver_killed_mid_experiment_resumes_without_running_anything_twice(tmp_path: Path, cluster) -> None:
    nodes, _ = cluster
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "simsched", "experiment", "spec.toml", "--out", str(out), "--executor", "ray",
               "--address", nodes.address, "--resume"]
    driver = subprocess.Popen([*command, "--quiet"], cwd=tmp_path, env=env)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None:
        if (out / "results.csv").exists() and (out / "results.csv").read_text().count("\n") - 1 >= 2:
            break
        time.sleep(0.1)
    assert driver.poll() is None, "the experiment ended before the driver could be killed"
    driver.kill()  # SIGKILL: no clean-up at all
    driver.wait()
    recorded = len(read_results(out))
    assert 2 <= recorded < 24
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"24 runs ({recorded} already recorded, {24 - recorded} run now" in again.stderr
    assert "took over the lock of pid" in again.stderr
    results = read_results(out)
    assert len(results) == 24 and results["run_id"].is_unique
    serial = run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "serial", workers=1)
    got = results.set_index("run_id").loc[serial.results["run_id"]].reset_index()
    pd.testing.assert_frame_equal(got.drop(columns="wall_s"), serial.results.drop(columns="wall_s"),
                                  check_dtype=False)


def test_live_progress_names_the_nodes_the_running_tasks_and_the_retries(tmp_path: Path, cluster) -> None:
    nodes, _ = cluster
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    seen: list[str] = []
    run = run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "out", executor="ray",
                         address=nodes.address, status=seen.append)
    assert len(run.results) == 24
    assert seen and all(re.fullmatch(r"3 nodes, [0-2] running, 0 retried", line) for line in seen), seen
    assert any(not line.startswith("3 nodes, 0 ") for line in seen), seen  # a task was seen running


LEARN_SCENARIO = """name = "tiny"
seed = 3
[[cluster]]
name = "a"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster]]
name = "b"
nodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "paper"
jobs_per_node = 4
[scheduler]
policy = "fifo"
"""


def test_a_worker_node_killed_mid_learn_changes_nothing_in_the_learned_function(tmp_path: Path, cluster) -> None:
    from simsched.learning.gp import LearnConfig, checkpoint_path, learn

    nodes, workers = cluster
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(LEARN_SCENARIO)
    small = dict(population=12, generations=6, alpha=2, train=4, validation=2, seed=5)
    out = tmp_path / "learned.json"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    driver = subprocess.Popen([sys.executable, "-m", "simsched", "learn", str(scenario), "--out", str(out),
                               "--executor", "ray", "--address", nodes.address, "--quiet",
                               *(f"--{key}={value}" for key, value in small.items())],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ckpt = checkpoint_path(out)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None and not ckpt.exists():
        time.sleep(0.05)  # the checkpoint of generation 0: learning is under way
    killed_mid_run = driver.poll() is None
    nodes.remove_node(workers[0], allow_graceful=False)  # its raylet and workers die with their tasks
    stdout, stderr = driver.communicate(timeout=300)
    assert killed_mid_run, "learning ended before a node could be killed; make it longer"
    assert driver.returncode == 0, stderr
    assert stdout == "" and stderr == "", (stdout, stderr)
    serial = learn(scenario, LearnConfig(**small), out=tmp_path / "serial.json", workers=1)
    on_ray = json.loads(out.read_text())
    alone = json.loads((tmp_path / "serial.json").read_text())
    assert on_ray["meta"]["history"] == alone["meta"]["history"] == serial.meta["history"]
    assert on_ray["meta"]["validation"] == alone["meta"]["validation"]
    assert {k: v for k, v in on_ray.items() if k != "meta"} == {k: v for k, v in alone.items() if k != "meta"}


def test_an_experiment_whose_files_the_workers_cannot_see_completes_with_the_serial_tables(
        tmp_path: Path, cluster, monkeypatch) -> None:
    """The tasks carry the resolved scenario (a generated workload): the driver reads the spec folder
    while it plans, and no node reads it after. Here the folder is deleted once the plan is made,
    before the first task reaches Ray, so no worker could have read it."""
    import shutil

    import simsched.runs.experiment.runner as runner_module
    from simsched.runs.experiment.stats import compute
    from simsched.runs.parallel import TaskRunner

    nodes, _ = cluster
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "a.toml").write_text(SCENARIO)
    (checkout / "spec.toml").write_text(SPEC)
    spec = load_spec(checkout / "spec.toml")
    serial = run_experiment(spec, tmp_path / "serial", workers=1)

    class FolderGoneFirst(TaskRunner):
        def __enter__(self) -> TaskRunner:
            shutil.rmtree(checkout)  # after the plan, before any task is submitted
            return super().__enter__()

    monkeypatch.setattr(runner_module, "TaskRunner", FolderGoneFirst)
    on_ray = run_experiment(spec, tmp_path / "ray", executor="ray", address=nodes.address)
    assert not checkout.exists() and len(on_ray.results) == 24
    pd.testing.assert_frame_equal(on_ray.results.drop(columns="wall_s"), serial.results.drop(columns="wall_s"),
                                  check_dtype=False)
    same_wall = serial.results["wall_s"]  # the only column that may differ: the tables use the rest
    ours = compute(on_ray.results.assign(wall_s=same_wall), spec)
    theirs = compute(serial.results, spec)
    for name in ("cases", "summary", "instance_ranks", "tests"):
        pd.testing.assert_frame_equal(getattr(ours, name), getattr(theirs, name))


TRACE_SCENARIO = """
name = "t"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 3, gpus = 4, gpu_type = "V100" }]
[workload]
source = "csv"
path = "data/jobs.csv"
[scheduler]
policy = "fifo"
"""

TRACE_SPEC = """
name = "ray-shipped"
scenarios = ["t.toml"]
schedulers = ["fifo", "sjf", "student_policy.py:StudentPolicy"]
seeds = 3
metric = "avg_wait"
"""


def test_a_trace_and_a_policy_file_the_workers_cannot_see_travel_with_the_tasks(
        tmp_path: Path, cluster, monkeypatch) -> None:
    """A job CSV and a policy file (relative names, in a sub-folder) are read by the workers when a
    run starts. The driver ships them (simsched.runs.shipping); the folder is deleted before the first
    task reaches Ray, so the workers read the shipped copies, and every row equals a serial run's."""
    import shutil

    import numpy as np

    import simsched.runs.experiment.runner as runner_module

    nodes, _ = cluster
    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True)
    rng = np.random.default_rng(7)
    rows = [f"{i},{i * 60},{int(rng.integers(300, 4000))},{int(rng.choice([1, 2, 4]))},1,"
            f"{int(rng.integers(1, 5))},,," for i in range(150)]
    (checkout / "data" / "jobs.csv").write_text("job_id,submit,duration,gpus,workers,weight,deadline,"
                                                "home_cluster,gpu_type\n" + "\n".join(rows) + "\n")
    shutil.copy(REPO / "tests" / "student_policy.py", checkout / "student_policy.py")
    (checkout / "t.toml").write_text(TRACE_SCENARIO)
    (checkout / "spec.toml").write_text(TRACE_SPEC)
    spec = load_spec(checkout / "spec.toml")
    serial = run_experiment(spec, tmp_path / "serial", workers=1)

    shipped: list = []
    real_ship = runner_module._ship

    def spy(runner, tasks):
        handle = real_ship(runner, tasks)
        shipped.append(handle)
        shutil.rmtree(checkout)  # shipped; from now on only the object store has the files
        return handle

    monkeypatch.setattr(runner_module, "_ship", spy)
    on_ray = run_experiment(spec, tmp_path / "ray", executor="ray", address=nodes.address)
    assert not checkout.exists() and len(on_ray.results) == 9
    assert shipped and shipped[0] is not None
    pd.testing.assert_frame_equal(on_ray.results.drop(columns="wall_s"), serial.results.drop(columns="wall_s"),
                                  check_dtype=False)


def test_compare_on_ray_ships_the_scenario_its_trace_and_its_policy_file(tmp_path: Path, cluster,
                                                                          monkeypatch) -> None:
    """compare --executor ray: the driver prepares each task's scenario and ships the files it names,
    so workers that cannot see the scenario folder give the serial table."""
    import shutil

    import simsched.runs.compare as compare_module
    from simsched.runs.compare import compare_spec, run_compare

    nodes, _ = cluster
    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True)
    rows = [f"{i},{i * 45},{500 + (97 * i) % 3000},{1 + i % 4},1,{1 + i % 3},,," for i in range(120)]
    (checkout / "data" / "jobs.csv").write_text("job_id,submit,duration,gpus,workers,weight,deadline,"
                                                "home_cluster,gpu_type\n" + "\n".join(rows) + "\n")
    shutil.copy(REPO / "tests" / "student_policy.py", checkout / "student_policy.py")
    (checkout / "t.toml").write_text(TRACE_SCENARIO)
    spec = compare_spec(checkout / "t.toml", schedulers=["fifo", "srsf", "student_policy.py:StudentPolicy"],
                        seeds=2)
    serial = run_compare(spec, workers=1)
    real = compare_module._for_ray

    def then_gone(runner, tasks):
        sent = real(runner, tasks)
        shutil.rmtree(checkout)  # shipped: from now on only the object store has the files
        return sent

    monkeypatch.setattr(compare_module, "_for_ray", then_gone)
    on_ray = run_compare(spec, executor="ray", address=nodes.address)
    assert not checkout.exists()
    pd.testing.assert_frame_equal(on_ray.table, serial.table)
    pd.testing.assert_frame_equal(on_ray.runs.drop(columns=[c for c in on_ray.runs if "wall" in c]),
                                  serial.runs.drop(columns=[c for c in serial.runs if "wall" in c]))


@pytest.mark.parametrize("given, env, expected", [
    (None, None, "local"),  # a new Ray of our own, not one that `ray start` left on the machine
    (None, "10.0.0.9:6379", "10.0.0.9:6379"),  # Ray's own RAY_ADDRESS is honoured
    ("10.0.0.7:6379", "10.0.0.9:6379", "10.0.0.7:6379"),  # --address wins over it
])
def test_which_ray_an_executor_starts_or_joins(monkeypatch, given, env, expected) -> None:
    from simsched.core.errors import InputError
    from simsched.runs.parallel import TaskRunner

    calls = []

    def fake_init(**kwargs):
        calls.append(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    if env is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", env)
    with pytest.raises(InputError, match="could not start or reach Ray"):
        with TaskRunner("ray", 2, address=given):
            pass
    assert calls[0]["address"] == expected
    assert ("num_cpus" in calls[0]) == (expected == "local")


def test_sigterm_to_a_driver_on_ray_ends_like_one_without_ray(tmp_path: Path, cluster) -> None:
    """ray.init replaces the SIGTERM handler simsched installed (a sys.exit and Ray's C++ failure-signal
    dump): the executor puts it back, so Slurm's or timeout's SIGTERM gives exit 143 and the
    `interrupted:` line, and not a line of Ray's dump, even under --quiet."""
    import signal

    nodes, _ = cluster
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    driver = subprocess.Popen([sys.executable, "-m", "simsched", "experiment", "spec.toml", "--out", str(out),
                               "--executor", "ray", "--address", nodes.address, "--quiet"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None:
        if (out / "results.csv").exists() and (out / "results.csv").read_text().count("\n") - 1 >= 1:
            break
        time.sleep(0.1)
    assert driver.poll() is None, "the experiment ended before the driver could be signalled"
    driver.send_signal(signal.SIGTERM)
    stdout, stderr = driver.communicate(timeout=120)
    recorded = len(read_results(out))
    assert driver.returncode == 143, stderr
    assert stdout == ""
    assert stderr.splitlines() == [f"interrupted: {recorded} of 24 runs recorded in {out}; "
                                   "run again with --resume to finish"], stderr
    assert "SIGTERM received" not in stderr and "***" not in stderr


def test_a_wrong_address_is_one_line_and_exit_2_without_rays_retries(tmp_path: Path) -> None:
    """--address 127.0.0.1:1 (nothing listens there): Ray alone retried for minutes, printing "Failed
    to connect to GCS" lines even under --quiet. The driver tries the port first (a bounded connect)
    and gives the documented error in one line."""
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "simsched", "experiment", "spec.toml", "--out", "out",
                           "--executor", "ray", "--address", "127.0.0.1:1", "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: could not start or reach Ray at '127.0.0.1:1': "
                                                   "nothing answers at "), done.stderr
    assert "Connection refused" in lines[0] and "GCS" not in lines[0]


@pytest.mark.parametrize("address, reason", [
    ("127.0.0.1", "not an address of the form HOST:PORT"),
    ("127.0.0.1:99999", "not an address of the form HOST:PORT"),
    ("127.0.0.1:1", "nothing answers at"),
    ("auto", None),  # Ray finds it itself
    ("ray://10.0.0.1:10001", None),  # Ray Client: Ray's own protocol
])
def test_which_addresses_are_tried_before_ray_joins_them(address, reason) -> None:
    from simsched.runs.parallel import unreachable

    said = unreachable(address)
    assert (said is None) if reason is None else said.startswith(reason), said


def test_a_private_ray_under_quiet_prints_nothing(tmp_path: Path, monkeypatch) -> None:
    """No --address: simsched starts a Ray of its own, which logs that token authentication is on for
    it. Under --quiet not a line of that reaches the terminal."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "a.toml").write_text(SCENARIO.replace("jobs = 400", "jobs = 40"))
    (tmp_path / "spec.toml").write_text(SPEC.replace("seeds = 8", "seeds = 1"))
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "simsched", "experiment", "spec.toml", "--out", "out",
                           "--executor", "ray", "--workers", "1", "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert len(read_results(tmp_path / "out")) == 3


def test_a_run_whose_worker_dies_on_every_retry_is_a_resource_failure_and_the_others_are_kept(
        tmp_path: Path, cluster, monkeypatch) -> None:
    """The worker running seed 2 dies each time (Ray retries it three times, then gives up with
    WorkerCrashedError). That is not a bug in simsched: every other run is recorded, the error names
    the lost runs, says the rows are kept and that --resume runs the rest, and is a ResourceFailure
    (the CLI's exit 74). --resume then runs only the lost ones."""
    import simsched.runs.experiment.runner as runner_module
    from simsched.runs.experiment.runner import RunsLost
    from tests.helpers import ends_its_worker_on_seed_2

    nodes, _ = cluster
    (tmp_path / "a.toml").write_text(SCENARIO.replace("jobs = 400", "jobs = 60"))
    (tmp_path / "spec.toml").write_text(SPEC.replace("seeds = 8", "seeds = 3"))
    spec = load_spec(tmp_path / "spec.toml")
    real = runner_module.execute_guarded
    monkeypatch.setattr(runner_module, "execute_guarded", ends_its_worker_on_seed_2)
    with pytest.raises(RunsLost) as lost:
        run_experiment(spec, tmp_path / "out", executor="ray", address=nodes.address)
    message = str(lost.value)
    assert message.startswith("3 of 9 runs lost on Ray, the first fifo on a (seed 2): the worker running it died "
                              "on every one of Ray's retries (WorkerCrashedError"), message
    assert "not a bug in simsched" in message
    assert message.endswith(f"6 of 9 runs are recorded in {tmp_path / 'out'}; run again with --resume to run the rest")
    assert sorted(read_results(tmp_path / "out")["seed"]) == [1, 1, 1, 3, 3, 3]
    monkeypatch.setattr(runner_module, "execute_guarded", real)
    again = run_experiment(spec, tmp_path / "out", executor="ray", address=nodes.address, resume=True)
    assert (again.skipped, again.ran) == (6, 3)


def test_compare_keep_going_ranks_the_runs_ray_did_not_lose(tmp_path: Path, cluster, monkeypatch) -> None:
    """compare --keep-going on Ray: a run whose worker dies on every retry becomes a failed row naming
    the cause, and the others are ranked; without --keep-going it is a ResourceFailure keeping the
    finished rows."""
    import simsched.runs.compare as compare_module
    from simsched.runs.compare import RunsLost, compare_spec, run_compare
    from tests.helpers import compare_run_ending_its_worker_on_seed_2

    nodes, _ = cluster
    (tmp_path / "a.toml").write_text(SCENARIO.replace("jobs = 400", "jobs = 60"))
    spec = compare_spec(tmp_path / "a.toml", schedulers=["fifo", "sjf"], seeds=2)
    monkeypatch.setattr(compare_module, "run_task_guarded", compare_run_ending_its_worker_on_seed_2)
    result = run_compare(spec, executor="ray", address=nodes.address, keep_going=True)
    assert [(f["scheduler"], f["seed"]) for f in result.failed] == [("fifo", 2), ("sjf", 2)]
    assert all(f["error"].startswith("lost on Ray: its worker died on every retry (WorkerCrashedError")
               for f in result.failed)
    assert sorted(result.runs["seed"]) == [1, 1]
    with pytest.raises(RunsLost) as lost:
        run_compare(spec, executor="ray", address=nodes.address)
    assert str(lost.value).startswith("compare: the worker running fifo on ")
    assert "(seed 2) died on every one of Ray's retries (WorkerCrashedError" in str(lost.value)
    assert [row["seed"] for row in lost.value.rows] == [1, 1]


def test_a_cluster_without_cpus_is_said_once_and_the_runs_go_on_when_a_node_joins(
        tmp_path: Path, monkeypatch) -> None:
    """A head that runs no task and no worker node (the only one died): the tasks wait. After the grace
    period the driver says so once (it said nothing before, and nothing at all under --quiet); when a
    node with a CPU joins, every run finishes."""
    import threading

    import simsched.runs.parallel as parallel

    monkeypatch.setattr(parallel, "NO_CPU_GRACE_S", 2.0)
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        (tmp_path / "a.toml").write_text(SCENARIO.replace("jobs = 400", "jobs = 40"))
        (tmp_path / "spec.toml").write_text(SPEC.replace("seeds = 8", "seeds = 1"))
        said: list[str] = []
        runs: list = []
        # the driver waits in a thread; this one adds the node (Ray adds nodes from the main thread only)
        driver = threading.Thread(target=lambda: runs.append(run_experiment(
            load_spec(tmp_path / "spec.toml"), tmp_path / "out", executor="ray", address=nodes.address,
            notify=said.append)), daemon=True)
        driver.start()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and driver.is_alive() and not said:
            time.sleep(0.1)
        assert driver.is_alive(), "the driver ended before any node could run its tasks"
        nodes.add_node(num_cpus=1)
        driver.join(timeout=240)
        run = runs[0]
        assert len(run.results) == 3
        warned = [line for line in said if "can run tasks" in line]
        assert len(warned) == 1 and warned[0].startswith("warning: no node of the Ray cluster can run tasks (no CPU "
                                                         "alive for ")
        assert "3 tasks wait for a node with CPUs to join" in warned[0]
    finally:
        nodes.shutdown()


LEARN_TRACE_SCENARIO = """name = "tiny-trace"
seed = 3
[[cluster]]
name = "a"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster]]
name = "b"
nodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]
[workload]
source = "csv"
path = "data/jobs.csv"
[scheduler]
policy = "fifo"
"""


def test_learn_on_ray_ships_its_scenario_and_trace(tmp_path: Path, cluster, monkeypatch) -> None:
    """learn --executor ray: the scenario file and the job CSV it names (a relative name, in a
    sub-folder) travel with the fitness tasks, so workers that cannot see the driver's folder learn
    the same function. The folder is deleted once shipped, before any task reaches Ray."""
    import shutil

    import simsched.learning.gp as gp_module
    from simsched.learning.gp import LearnConfig, learn

    nodes, _ = cluster
    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True)
    rows = [f"{i},{i * 40},{600 + (131 * i) % 2500},{1 + i % 8},1,{1 + i % 3},,," for i in range(60)]
    (checkout / "data" / "jobs.csv").write_text("job_id,submit,duration,gpus,workers,weight,deadline,"
                                                "home_cluster,gpu_type\n" + "\n".join(rows) + "\n")
    scenario = checkout / "tiny.toml"
    scenario.write_text(LEARN_TRACE_SCENARIO)
    small = dict(population=8, generations=2, alpha=2, train=3, validation=2, seed=5)
    serial = learn(scenario, LearnConfig(**small), out=tmp_path / "serial.json", workers=1)
    real = gp_module.ship_inputs
    shipped: list = []

    def then_gone(runner, path, loaded):
        handle = real(runner, path, loaded)
        shipped.append(handle)
        shutil.rmtree(checkout)  # from now on only the object store has the scenario and its trace
        return handle

    monkeypatch.setattr(gp_module, "ship_inputs", then_gone)
    on_ray = learn(scenario, LearnConfig(**small), out=tmp_path / "ray.json", executor="ray", address=nodes.address)
    assert not checkout.exists() and shipped and shipped[0] is not None
    assert on_ray.meta["history"] == serial.meta["history"]
    assert on_ray.meta["validation"] == serial.meta["validation"]
    assert gp_module.gp.to_infix(on_ray.best) == gp_module.gp.to_infix(serial.best)
    # the cluster's CPUs (two worker nodes of one; the head has none), not the driver's
    assert (on_ray.meta["executor"], on_ray.meta["workers"]) == ("ray", 2)
