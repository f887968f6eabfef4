"""Two policies that game a ranking by leaving work undone (issue 25): tests check they never win."""

from simsched.policies import Decision, Start


class Never:
    """Starts nothing: every job stays queued to the end."""

    def decide(self, view):
        return Decision()


class OnlyShort:
    """Starts only jobs shorter than 30 minutes (first fit); the rest wait forever."""

    def decide(self, view):
        free = list(view.free)
        starts = []
        for job in view.queue:
            if job.duration >= 1800:
                continue
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
