"""Ray soak: an experiment of thousands of short runs on a multi-node local Ray cluster that loses a node
every minute, against the same experiment on ``--workers 2``.

    python tools/bench/ray_soak.py [--runs 2400] [--jobs 400] [--nodes 2] [--kill-every 60] [--json]

The cluster is ``ray.cluster_utils.Cluster``: a head node that runs no task (``num_cpus=0``) and
``--nodes`` worker nodes of one CPU each, every one a separate raylet with its own worker processes.
Every ``--kill-every`` seconds the oldest worker node is killed (``remove_node(allow_graceful=False)``:
its raylet and workers die with the tasks they hold) and a fresh node joins, as a preempted cloud node
is replaced, so the CPU count stays ``--nodes``.

The experiment (written into a temporary folder) is one synthetic scenario (``--jobs`` jobs on 16 V100
GPUs) x four schedulers x ``runs / 4`` seeds. Both experiments run as a user runs them, as
``python -m simsched experiment`` in a subprocess: first ``--workers 2`` (local processes), then
``--executor ray --address <the cluster>``.

Reported:
- runs per second of each, over the whole command (start-up included) and between its first and its
  last recorded row (the steady rate);
- the Ray driver's resident memory (``VmRSS``, sampled every 0.5 s) when its first row is recorded,
  when a quarter, half and three quarters of the rows are, at its last row (before it computes the
  tables), and its peak (the tables included);
- the node kills and the tasks Ray retried: as the driver's last line says (Ray's messages to the
  driver, counted by simsched) and as the driver's own Ray core log counts them (``Attempting to
  resubmit task`` in the cluster's session folder: exact);
- rows lost (a planned run without a row) and rows duplicated (a run_id with more than one row) in
  results.csv, read as raw CSV, and rows whose metrics differ from the ``--workers 2`` run's.

It loads the machine: every CPU, for a few minutes. Run it once, ``nice -n 10``, on a quiet machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCHEDULERS = ("fifo", "sjf", "srsf", "las")

SCENARIO = """name = "soak"
seed = 1
[[cluster]]
name = "c0"
nodes = [{{ count = 4, gpus = 4, gpu_type = "V100" }}]
[workload]
source = "synthetic"
generator = "simple"
jobs = {jobs}
gpus = [1, 2, 4, 8]
mean_duration_s = 900.0
[scheduler]
policy = "fifo"
"""

SPEC = """name = "ray-soak"
scenarios = ["soak.toml"]
schedulers = [{schedulers}]
seeds = {seeds}
metric = "avg_wait"
"""


def rows_of(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def planned(folder: Path) -> list[str]:
    with open(folder / "plan.csv", newline="") as f:
        return [row["run_id"] for row in csv.DictReader(f)]


def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) / 1024 if found else None


def count_rows(folder: Path) -> int:
    try:
        with open(folder / "results.csv", "rb") as f:
            return max(0, f.read().count(b"\n") - 1)
    except OSError:
        return 0


class Watch:
    """Samples a running experiment every 0.5 s: rows recorded, the driver's RSS, first/last row times."""

    def __init__(self, pid: int, folder: Path, total: int) -> None:
        self.pid, self.folder, self.total = pid, folder, total
        self.started = time.monotonic()
        self.started_epoch = time.time()
        self.first_row_s: float | None = None
        self.last_row_s: float | None = None
        self.rss_first_row: float | None = None
        self.rss_end: float | None = None
        self.rss_peak = 0.0
        self.last_sample: tuple[int, float] = (0, 0.0)  # (rows, RSS MB) at the driver's last sample
        self.rss_quarters: dict[int, float] = {}  # RSS when 1/4, 2/4, 3/4 of the rows were recorded
        self.samples: list[tuple[float, int, float]] = []  # (seconds, rows, rss MB)

    def sample(self) -> None:
        now = time.monotonic() - self.started
        rows = count_rows(self.folder)
        rss = rss_mb(self.pid)
        if rss is None:
            return
        self.samples.append((round(now, 1), rows, round(rss, 1)))
        self.rss_peak = max(self.rss_peak, rss)
        if rows and self.first_row_s is None:
            self.first_row_s, self.rss_first_row = now, rss
        for quarter in (1, 2, 3):
            if rows >= quarter * self.total / 4:
                self.rss_quarters.setdefault(quarter, rss)
        if rows >= self.total and self.rss_end is None:  # before the tables are computed
            self.rss_end = rss
        self.last_sample = (rows, rss)

    def finish(self) -> None:
        """The time of the last row: results.csv's modification time."""
        try:
            self.last_row_s = (self.folder / "results.csv").stat().st_mtime - self.started_epoch
        except OSError:
            self.last_row_s = None


def run_command(command: list[str], cwd: Path, folder: Path, total: int,
                on_tick=None) -> tuple[subprocess.CompletedProcess, Watch, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.monotonic()
    with open(cwd / f"{folder.name}.stdout", "w+") as stdout, open(cwd / f"{folder.name}.stderr", "w+") as stderr:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr, text=True)
        watch = Watch(process.pid, folder, total)
        while process.poll() is None:
            watch.sample()
            if on_tick:
                on_tick(time.monotonic() - started)
            time.sleep(0.5)
        wall = time.monotonic() - started
        watch.finish()
        stdout.seek(0)
        stderr.seek(0)
        done = subprocess.CompletedProcess(command, process.returncode, stdout.read(), stderr.read())
    return done, watch, wall


def check_store(folder: Path) -> dict[str, int]:
    rows = rows_of(folder)
    ids = [row["run_id"] for row in rows]
    plan = planned(folder)
    return {"rows": len(rows), "planned": len(plan), "lost": len(set(plan) - set(ids)),
            "duplicated": len(ids) - len(set(ids)), "foreign": len(set(ids) - set(plan))}


def differing(a: Path, b: Path) -> int:
    """Rows of b whose cells (wall_s aside) differ from a's row of the same run."""
    mine = {row["run_id"]: {k: v for k, v in row.items() if k != "wall_s"} for row in rows_of(a)}
    return sum(1 for row in rows_of(b) if mine.get(row["run_id"]) != {k: v for k, v in row.items() if k != "wall_s"})


def resubmissions(cluster, pid: int) -> int | None:
    """Tasks the driver resubmitted, counted in its Ray core log (exact; Ray throttles its messages to the
    driver, which are what simsched counts)."""
    logs = Path(cluster.head_node.get_session_dir_path()) / "logs"
    found = list(logs.glob(f"python-core-driver-*_{pid}.log"))
    if not found:
        return None
    return sum(f.read_bytes().count(b"Attempting to resubmit task") for f in found)


def soak(runs: int, jobs: int, nodes: int, kill_every: float) -> dict:
    from ray.cluster_utils import Cluster

    seeds = -(-runs // len(SCHEDULERS))
    total = seeds * len(SCHEDULERS)
    with tempfile.TemporaryDirectory(prefix="simsched-ray-soak-") as tmp:
        work = Path(tmp)
        (work / "soak.toml").write_text(SCENARIO.format(jobs=jobs))
        (work / "spec.toml").write_text(SPEC.format(schedulers=", ".join(f'"{s}"' for s in SCHEDULERS), seeds=seeds))
        base = [sys.executable, "-m", "simsched", "experiment", "spec.toml"]

        local, local_watch, local_wall = run_command([*base, "--out", "local", "--workers", "2", "--quiet"], work,
                                                     work / "local", total)
        if local.returncode != 0:
            raise SystemExit(f"--workers 2 failed: {local.stderr}")

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        alive = [cluster.add_node(num_cpus=1) for _ in range(nodes)]
        cluster.wait_for_nodes()
        kills: list[float] = []
        try:
            def tick(seconds: float) -> None:
                if seconds >= kill_every * (len(kills) + 1) and count_rows(work / "ray") < total:
                    cluster.remove_node(alive.pop(0), allow_graceful=False)  # its tasks in flight die with it
                    alive.append(cluster.add_node(num_cpus=1))  # a replacement joins
                    kills.append(round(seconds, 1))

            ray_run, ray_watch, ray_wall = run_command([*base, "--out", "ray", "--executor", "ray",
                                                        "--address", cluster.address], work, work / "ray", total,
                                                       on_tick=tick)
            resubmitted = resubmissions(cluster, ray_watch.pid)
        finally:
            cluster.shutdown()
        if ray_run.returncode != 0:
            raise SystemExit(f"the Ray experiment failed (exit {ray_run.returncode}): {ray_run.stderr[-2000:]}")
        retried = re.search(r"(\d+) Ray tasks retried", ray_run.stderr)
        store = check_store(work / "ray")

        def rate(watch: Watch, wall: float) -> dict:
            steady = (watch.last_row_s - watch.first_row_s) if watch.last_row_s and watch.first_row_s else None
            return {"wall_s": round(wall, 1), "runs_per_s": round(total / wall, 2),
                    "steady_runs_per_s": round((total - 1) / steady, 2) if steady else None}

        return {
            "runs": total, "jobs_per_run": jobs, "worker_nodes": nodes, "kill_every_s": kill_every,
            "local_workers_2": rate(local_watch, local_wall),
            "ray": rate(ray_watch, ray_wall),
            "ray_over_local": round(local_wall / ray_wall, 2),
            "driver_rss_mb": {"first_row": round(ray_watch.rss_first_row or 0, 1),
                              **{f"{q}/4": round(v, 1) for q, v in sorted(ray_watch.rss_quarters.items())},
                              "end": round(ray_watch.rss_end, 1) if ray_watch.rss_end else None,
                              "last_sample": [ray_watch.last_sample[0], round(ray_watch.last_sample[1], 1)],
                              "peak": round(ray_watch.rss_peak, 1)},
            "node_kills_at_s": kills,
            "tasks_retried": int(retried.group(1)) if retried else 0,
            "tasks_resubmitted_per_ray_log": resubmitted,
            "store": store,
            "rows_differing_from_local": differing(work / "local", work / "ray"),
            "driver_samples": ray_watch.samples[:: max(1, len(ray_watch.samples) // 40)],
            "load_average": list(os.getloadavg()),
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=2400, help="runs in the experiment (rounded up to 4 schedulers)")
    p.add_argument("--jobs", type=int, default=400, help="jobs per run")
    p.add_argument("--nodes", type=int, default=2, help="Ray worker nodes of one CPU each")
    p.add_argument("--kill-every", type=float, default=60.0, help="seconds between node kills")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = soak(args.runs, args.jobs, args.nodes, args.kill_every)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    local, ray, rss, store = result["local_workers_2"], result["ray"], result["driver_rss_mb"], result["store"]
    print(f"{result['runs']} runs of {result['jobs_per_run']} jobs; Ray: {result['worker_nodes']} worker nodes "
          f"of 1 CPU, one killed (and replaced) every {result['kill_every_s']:g} s")
    print(f"--workers 2   : {local['wall_s']} s, {local['runs_per_s']} runs/s ({local['steady_runs_per_s']} steady)")
    print(f"ray (kills)   : {ray['wall_s']} s, {ray['runs_per_s']} runs/s ({ray['steady_runs_per_s']} steady); "
          f"{result['ray_over_local']}x of --workers 2")
    print(f"driver RSS MB : {rss['first_row']} at the first row, {rss.get('1/4')} / {rss.get('2/4')} / "
          f"{rss.get('3/4')} at 1/4, 2/4, 3/4 of the rows, {rss['end']} at the last row "
          f"({rss['last_sample'][1]} at its last sample, {rss['last_sample'][0]} rows); "
          f"peak {rss['peak']} (the tables included)")
    print(f"node kills    : {len(result['node_kills_at_s'])} at {result['node_kills_at_s']} s; "
          f"tasks retried: {result['tasks_retried']} as simsched reported, "
          f"{result['tasks_resubmitted_per_ray_log']} resubmitted per the driver's Ray log")
    print(f"store         : {store['rows']} rows for {store['planned']} planned runs; lost {store['lost']}, "
          f"duplicated {store['duplicated']}, foreign {store['foreign']}; "
          f"{result['rows_differing_from_local']} rows differ from --workers 2")
    print(f"load average  : {' '.join(f'{x:.2f}' for x in result['load_average'])}")
    return 0 if store["lost"] == store["duplicated"] == store["foreign"] == result["rows_differing_from_local"] == 0 \
        else 1


if __name__ == "__main__":
    sys.exit(main())
