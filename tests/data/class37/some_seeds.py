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
    """Good on seed 1, a bug on seed 2: its first job is short there (24 s; seed 1's is 715 s)."""

    first = None

    def decide(self, view):
        if self.first is None and view.queue:
            self.first = view.queue[0].duration
        if self.first is not None and self.first < 100 and view.now > 0:
            raise ValueError("student bug on some seeds")
        return super().decide(view)
