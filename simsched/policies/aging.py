"""The starvation guard's order (SPEC §3, ``max_wait_s``), kept between decisions.

:func:`aged_reference` is the definition: the queued jobs that have waited longer than
``max_wait_s``, longest wait first (ties: submit, input order). It reads every queued job at
every decision. :class:`AgedJobs` gives the same list at a cost of about the jobs that came and
went, and a binary search:

- A *plain* job (it has waited only since its submit: ``wait_so_far`` 0 and ``queued_since`` its
  submit) has waited ``now - submit`` (the contract's ``queued_time``). The plain jobs kept in
  (submit, input order) are then in the guard's order at any ``now``: a rounded difference is
  monotone, so an earlier submit never waited less, and on an equal wait the guard sorts by
  submit. The aged ones are a prefix (the longer wait the earlier), found by bisection.
- Any other job (preempted, re-queued) is tested and sorted as the reference does, at every
  decision: few jobs, when any.

A job's fields do not change while it is queued (a restart re-queues it with a new
``queue_seq``: it comes back as an arrival). The kept jobs follow the queue by its arrivals
(``queued_after``) and the starts the scheduler reports (:meth:`AgedJobs.forget`); when their
count is not the queue's (a start out of sight, a decision not applied, another view), they are
rebuilt from the queue. A queue of at most :data:`SHORT` jobs is read whole, as the reference
does, which costs less than following it; the kept jobs are rebuilt when it grows past that.
"""

from __future__ import annotations

from bisect import bisect_left

from simsched.core.contract import JobView, SchedulerView

#: a queue this short is read whole at each decision (see the module docstring)
SHORT = 16


def aged_reference(view: SchedulerView, limit: float) -> list[JobView]:
    """The queued jobs of ``view`` that have waited longer than ``limit`` seconds, longest wait
    first (ties: submit, input order): the guard's definition, over the whole queue."""
    now = view.now
    # (a job's queued time is at most now - submit: the cheap test first)
    old = [job for job in view.queue if now - job.submit > limit]
    return _sorted_aged(old, view, limit)


def _sorted_aged(jobs, view: SchedulerView, limit: float) -> list[JobView]:
    if not jobs:
        return []
    queued_time = view.queued_time
    # decorated (-wait, submit, input order, job): sorted by C's tuple comparison, no key function
    # (the input order is unique, so the job itself is never compared)
    waited = [(-queued_time(job), job.submit, job.index, job) for job in jobs]
    return [item[3] for item in sorted(item for item in waited if -item[0] > limit)]


class AgedJobs:
    """:func:`aged_reference` for one scheduler's decisions in turn (see the module docstring)."""

    __slots__ = ("limit", "_keys", "_plain", "_other", "_members", "_last_seq", "_kept")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._keys: list[tuple[float, int]] = []  # (submit, input order) of the plain jobs, ascending
        self._plain: list[JobView] = []  # the plain jobs in that order
        self._other: dict[str, JobView] = {}  # the others, by id
        self._members: dict[str, JobView] = {}  # every kept job, by id
        self._last_seq = -1
        self._kept = True  # False while the queue is short: nothing kept, rebuilt when it grows

    def _add(self, job: JobView) -> None:
        self._members[job.job_id] = job
        if job.wait_so_far == 0 and job.queued_since == job.submit:
            key = (job.submit, job.index)
            keys = self._keys
            if not keys or keys[-1] < key:  # (arrivals usually come in submit order)
                keys.append(key)
                self._plain.append(job)
            else:
                i = bisect_left(keys, key)
                keys.insert(i, key)
                self._plain.insert(i, job)
        else:
            self._other[job.job_id] = job

    def forget(self, job_ids) -> None:
        """Jobs that left the queue (the decision's starts)."""
        if not self._kept:
            return
        members = self._members
        for job_id in job_ids:
            job = members.pop(job_id, None)
            if job is None:
                continue
            if self._other.pop(job_id, None) is None:
                i = bisect_left(self._keys, (job.submit, job.index))
                del self._keys[i]
                del self._plain[i]

    def _sync(self, view: SchedulerView) -> None:
        newcomers = view.queued_after(self._last_seq)
        if newcomers:
            self._last_seq = newcomers[0].queue_seq
            again = [job.job_id for job in newcomers if job.job_id in self._members]
            if again:  # re-queued out of sight: its kept entry is of its earlier spell
                self.forget(again)
        if len(self._members) + len(newcomers) != view.queue_length:  # the queue changed out of sight
            self._rebuild(view)
            return
        for job in reversed(newcomers):  # (oldest first)
            self._add(job)

    def _rebuild(self, view: SchedulerView) -> None:
        self._keys, self._plain, self._other, self._members = [], [], {}, {}
        queue = view.queue
        self._last_seq = max((job.queue_seq for job in queue), default=self._last_seq)
        for job in sorted(queue, key=lambda job: (job.submit, job.index)):
            self._add(job)
        self._kept = True

    def aged(self, view: SchedulerView) -> list[JobView]:
        """The guard's jobs now, as :func:`aged_reference` gives them."""
        if view.queue_length <= SHORT:
            self._kept = False
            return aged_reference(view, self.limit)
        if self._kept:
            self._sync(view)
        else:
            self._rebuild(view)
        now, limit = view.now, self.limit
        plain = self._plain
        # the plain jobs that waited longer than the limit: a prefix (now - submit falls as submit grows);
        # none when the first has not (most decisions)
        low, high = 0, len(plain) if plain and now - plain[0].submit > limit else 0
        while low < high:
            middle = (low + high) // 2
            if now - plain[middle].submit > limit:
                low = middle + 1
            else:
                high = middle
        if not self._other:
            return plain[:low]
        others = _sorted_aged([job for job in self._other.values() if now - job.submit > limit], view, limit)
        if not others:
            return plain[:low]
        return _sorted_aged([*plain[:low], *others], view, limit)


__all__ = ["AgedJobs", "aged_reference"]
