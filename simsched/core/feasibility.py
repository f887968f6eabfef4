"""Infeasible jobs: the ones no node of the fleet can ever hold (docs/engine.md "Every job counts").

Which jobs are infeasible depends on the fleet and on the two placement rules
that limit where a job may go (``heterogeneous`` and ``allocation = "home"``),
never on the ordering policy, so every policy compared on one scenario sees
the same set. The engine takes them out at arrival (SPEC §3, which calls them
"unscheduled"); the metrics leave them out. This module says so before a run:
:func:`infeasible_report` feeds ``validate`` and the run's warnings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsched.core.engine import Engine


@dataclass(frozen=True, slots=True)
class InfeasibleReport:
    """How many jobs can never run, and the largest request against the largest node."""

    count: int
    total: int
    largest_job: str  # the infeasible job asking for the most GPUs
    largest_gpus: float  # its GPUs (total, on its reference type)
    largest_workers: int
    largest_node: int  # GPUs of the fleet's largest node
    largest_node_type: str
    largest_group: int  # GPUs of the largest (cluster, GPU type) group: all of one job's workers share one
    heterogeneous: bool
    home_only: bool

    @property
    def per_worker(self) -> float:
        return self.largest_gpus / max(self.largest_workers, 1)

    @property
    def share(self) -> float:
        return self.count / self.total if self.total else 0.0

    def message(self) -> str:
        """One line for warnings, ``validate`` and summary.json."""
        per_worker = self.per_worker
        text = (f"{self.count:,} of {self.total:,} jobs ({100 * self.share:.1f}%) are infeasible: no node of the "
                f"fleet can ever hold them, so they are left out of every metric; the largest request, job "
                f"{self.largest_job!r}, is {self.largest_gpus:g} GPUs ({self.largest_workers} worker(s) of "
                f"{per_worker:g}) against a largest node of {self.largest_node} {self.largest_node_type} GPUs")
        if per_worker > self.largest_node:  # a worker fits no node
            return text
        if self.largest_gpus > self.largest_group:
            return text + f" and at most {self.largest_group} GPUs of one type in one cluster"
        rules = []
        if not self.heterogeneous:
            rules.append("heterogeneous = false keeps each job on its own GPU type")
        if self.home_only:
            rules.append('allocation = "home" keeps each job in its home cluster')
        return text + ("; they are small enough, but " + (" and ".join(rules) if rules else
                       "no node has a GPU type they may use (allowed_types, GPU memory)"))


def infeasible_report(engine: Engine) -> InfeasibleReport | None:
    """The infeasible jobs of a built (not yet run) engine; None when every job can run somewhere."""
    index = engine.infeasible()
    if len(index) == 0:
        return None
    jobs = engine.jobs
    worst = int(index[int(np.argmax(jobs.gpus[index]))])
    largest = max(engine.fleet.nodes, key=lambda node: node.gpus)
    groups: dict[tuple[int, str], int] = {}
    for node in engine.fleet.nodes:
        groups[node.cluster, node.gpu_type] = groups.get((node.cluster, node.gpu_type), 0) + node.gpus
    return InfeasibleReport(
        count=len(index), total=len(jobs), largest_job=jobs.job_ids[worst], largest_gpus=float(jobs.gpus[worst]),
        largest_workers=int(jobs.workers[worst]), largest_node=largest.gpus, largest_node_type=largest.gpu_type,
        largest_group=max(groups.values()), heterogeneous=engine.config.heterogeneous,
        home_only=engine.config.restrict_to_home)
