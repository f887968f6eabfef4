"""A student-style policy loaded by path in the compare tests: most urgent user first."""

from simsched.policies import Decision, Start


class StudentPolicy:
    """Highest weight first (ties: earlier submit); each worker on the lowest-index node that fits."""

    def decide(self, view):
        free = list(view.free)
        starts = []
        for job in sorted(view.queue, key=lambda j: (-j.weight, j.submit, j.index)):
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
