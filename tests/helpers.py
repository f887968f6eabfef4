"""Small builders shared by tests: a scenario file and a job CSV in a temp folder."""

from __future__ import annotations

from pathlib import Path

import simsched

HEADER = "job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type"


def write_jobs(folder: Path, rows: list[str], header: str = HEADER) -> Path:
    path = folder / "jobs.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def write_scenario(folder: Path, *, clusters: str, scheduler: str, jobs: list[str] | None = None,
                   extra: str = "", workload: str | None = None, header: str = HEADER) -> Path:
    """A scenario TOML with a csv workload (unless ``workload`` gives the table body)."""
    if jobs is not None:
        write_jobs(folder, jobs, header)
    if workload is None:
        workload = 'source = "csv"\npath = "jobs.csv"'
    path = folder / "scenario.toml"
    path.write_text(f'name = "t"\nseed = 1\n{extra}\n{clusters}\n[workload]\n{workload}\n[scheduler]\n{scheduler}\n')
    return path


def run_rows(path: Path, **kwargs) -> dict[str, tuple[float, float]]:
    """job_id -> (start, end) of a run."""
    result = simsched.run(path, **kwargs)
    return {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()}


def log(result) -> list[tuple]:
    """The event log as (time, event, job_id, detail) tuples."""
    return [tuple(r) for r in result.events.itertuples(index=False)]


def ends_its_worker_on_seed_2(task, *shipped):
    """An experiment task for Ray tests: the run of seed 2 ends its worker process (as the kernel's OOM
    killer would) every time it is tried; the others run as usual. Importable by Ray's workers."""
    import os

    from simsched.runs.experiment.runner import execute_guarded

    if task.seed == 2:
        os._exit(1)
    return execute_guarded(task, *shipped)


def compare_run_ending_its_worker_on_seed_2(task, *rest):
    """A compare task for Ray tests: as :func:`ends_its_worker_on_seed_2`, around run_task_guarded."""
    import os

    from simsched.runs.compare import run_task_guarded

    if task.seed == 2:
        os._exit(1)
    return run_task_guarded(task, *rest)
