import os
from pathlib import Path

from simsched.policies import Decision, Start


class Good:

    def decide(self, view):
        free = list(view.free)
        starts = []
        for job in sorted(view.queue, key=lambda job: (job.duration, job.index)):
            for option in job.options:
                taken = []
                for node in view.fleet.groups[option.cluster, option.gpu_type]:
                    while free[node] >= option.per_worker and len(taken) < job.workers:
                        free[node] -= option.per_worker
                        taken.append(node)
                if len(taken) == job.workers:
                    starts.append(Start(job.job_id, tuple(taken)))
                    break
                for node in taken:
                    free[node] += option.per_worker
        return Decision(starts=tuple(starts))


class Policy(Good):
    def decide(self, view):
        out = Path(os.environ.get("CLASS37_OUT", "out"))
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.csv").write_text("scheduler,mean\nwrites_out,0\n")
        return super().decide(view)
