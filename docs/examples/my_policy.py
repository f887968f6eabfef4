"""A template scheduler: copy it, rename the class, change ``priority`` (and maybe ``place``).

From this file's folder (a handout from `simsched assignment DIR`, or docs/examples/ of a checkout):

Run it:      python -m simsched compare_mine.toml
Compare it:  python -m simsched compare compare_mine.toml --schedulers fifo,sjf,my_policy.py:MyPolicy

The interface is one method, ``decide(view) -> Decision`` (see docs/assignment.md).
"""

from simsched.policies import Decision, Start


class MyPolicy:
    """Fewest GPUs first (ties: shorter job, then earlier submit); first-fit placement; backfill."""

    def priority(self, job, view):
        """Smaller runs first. Try: job.duration, view.queued_time(job), -job.weight, job.deadline..."""
        return (job.gpus, job.duration, job.submit, job.index)

    def decide(self, view):
        free = list(view.free)  # our scratch copy of the free milli-GPUs per node
        starts = []
        for job in sorted(view.queue, key=lambda job: self.priority(job, view)):
            nodes = self.place(job, view, free)
            if nodes is not None:  # it fits now: start it (else skip it and try the next one)
                starts.append(Start(job.job_id, nodes))
        return Decision(starts=tuple(starts))

    def place(self, job, view, free):
        """One node per worker, all of one GPU type; takes the GPUs from ``free``. None if it does not fit."""
        for option in job.options:  # where the job may run, fastest GPU type first
            nodes = view.fleet.groups[option.cluster, option.gpu_type]
            taken = []
            for node in nodes:
                while free[node] >= option.per_worker and len(taken) < job.workers:
                    free[node] -= option.per_worker
                    taken.append(node)
            if len(taken) == job.workers:
                return tuple(taken)
            for node in taken:  # did not fit on this type: give the GPUs back
                free[node] += option.per_worker
        return None
