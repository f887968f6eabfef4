"""The engine's job records and its columnar store of the jobs not in play.

A run of a million jobs cannot keep a Python object per job: about 2 KB each
with its floats, lists and dict entries. :class:`JobStore` keeps every job's
inputs in numpy columns, makes a :class:`JobRecord` only when a job arrives
(or when someone asks for it), and when the job ends (finished, or reported
unscheduled) copies the record's fields into result columns and lets the
record go. So Python objects exist only for the jobs in play (queued or
running), and memory per job is a few hundred bytes of columns.

The store is still a ``Sequence[JobRecord]``: ``store[i]`` is the live record
of job ``i`` while it is in play (one object from its first use to its end),
and a record rebuilt from the columns, with exactly the fields it ended with,
after that. Only the engine changes records and the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np

from simsched.core.contract import Option
from simsched.core.model import JobSpec

QUEUED, RUNNING, DONE, PENDING = "queued", "running", "done", "pending"
#: no node of the fleet can ever hold the job (taken out at arrival; SPEC §3 calls these "unscheduled")
INFEASIBLE = "infeasible"
#: the policy left the job queued when nothing else was left to happen (it counts in the metrics)
UNFINISHED = "unfinished"
UNSCHEDULED = INFEASIBLE  # the old name of the status, kept for code that imports it
STATUSES = (PENDING, QUEUED, RUNNING, DONE, INFEASIBLE, UNFINISHED)
_STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}

# flags column: which times were Python ints (SimPy's clock starts at the int 0), so a
# rebuilt record and the jobs table keep the exact types the record held
_INT_FIRST_START, _INT_RUN_START, _INT_QUEUED_SINCE = 1, 2, 4


class JobRecord:
    """Runtime state of one job. Policies read it (see ``JobView``); only the engine writes."""

    __slots__ = (
        "job_id", "index", "submit", "duration", "gpus", "workers", "weight", "deadline",
        "home_cluster", "options", "remaining_work", "attained_service", "queued_since",
        "wait_so_far", "running_nodes", "running_cluster", "run_start", "run_speed", "run_share",
        "preemptions", "status", "first_start", "end", "clusters", "gpu_type_used",
        "gpu_seconds", "wakeup", "process", "reason", "run_penalty", "queue_seq", "tenant",
    )  # fmt: skip

    def __init__(self, job_id: str, index: int, submit: float, duration: float, gpus: float, workers: int,
                 weight: int, deadline: float | None, home_cluster: int | None,
                 options: tuple[Option, ...], tenant: str | None = None) -> None:
        self.job_id = job_id
        self.tenant = tenant
        self.index = index
        self.submit = submit
        self.duration = duration
        self.gpus = gpus
        self.workers = workers
        self.weight = weight
        self.deadline = deadline
        self.home_cluster = home_cluster
        self.options = options
        self.remaining_work = duration
        self.attained_service = 0.0
        self.queued_since = submit
        self.queue_seq = -1  # grows each time the job (re-)enters the queue
        self.wait_so_far = 0.0
        self.running_nodes: tuple[int, ...] = ()
        self.running_cluster: int | None = None
        self.run_start = math.nan
        self.run_speed = 1.0
        self.run_share = 0  # milli-GPUs per worker in the current run
        self.run_penalty = 0.0
        self.preemptions = 0
        self.status = PENDING
        self.first_start = math.nan
        self.end = math.nan
        self.clusters: list[int] = []
        self.gpu_type_used: str | None = None
        self.gpu_seconds = 0.0
        self.wakeup = None
        self.process = None
        self.reason = ""


#: distinct job shapes that still fit one int64 key (JobSpecColumns.shapes)
SHAPE_KEYS = 2**62


class JobSpecColumns(Sequence[JobSpec]):
    """A workload's jobs as one column per :class:`JobSpec` field: a million jobs without a million
    objects. ``self[i]`` is job ``i``'s JobSpec, made on use; :class:`JobStore` reads the columns.

    ``deadline`` is NaN where a job has none; ``allowed_types`` holds "T4|P100" strings (or None).
    """

    def __init__(self, job_id: list[str], submit: np.ndarray, duration: np.ndarray, gpus: np.ndarray,
                 workers: np.ndarray, weight: np.ndarray, deadline: np.ndarray, home_cluster: list,
                 gpu_type: list, allowed_types: list, tenant: list, model: list) -> None:
        self.job_id = job_id
        self.submit, self.duration, self.gpus = submit, duration, gpus
        self.workers, self.weight, self.deadline = workers, weight, deadline
        self.home_cluster, self.gpu_type, self.allowed_types = home_cluster, gpu_type, allowed_types
        self.tenant, self.model = tenant, model

    def __len__(self) -> int:
        return len(self.job_id)

    @overload
    def __getitem__(self, i: int) -> JobSpec: ...
    @overload
    def __getitem__(self, i: slice) -> list[JobSpec]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        deadline = float(self.deadline[i])
        allowed = self.allowed_types[i]
        return JobSpec(job_id=self.job_id[i], submit=float(self.submit[i]), duration=float(self.duration[i]),
                       gpus=float(self.gpus[i]), workers=int(self.workers[i]), weight=int(self.weight[i]),
                       deadline=None if deadline != deadline else deadline, home_cluster=self.home_cluster[i],
                       gpu_type=self.gpu_type[i], allowed_types=None if allowed is None else tuple(allowed.split("|")),
                       tenant=self.tenant[i], model=self.model[i])

    def __iter__(self) -> Iterator[JobSpec]:
        return (self[i] for i in range(len(self)))

    def shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """(the first job of each distinct (home cluster, GPU type, gpus, workers, allowed types,
        model), in job order; each job's row in that list): what a job's home and placement
        options depend on, so the store works them out once per shape."""
        if not len(self):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        codes = [_factorized(column) for column in (self.home_cluster, self.gpu_type, self.allowed_types,
                                                    self.model)]
        codes += [np.unique(column, return_inverse=True)[1].reshape(-1) for column in (self.gpus, self.workers)]
        sizes = [int(code.max()) + 1 for code in codes]
        if math.prod(sizes) < SHAPE_KEYS:  # one int64 key per job (mixed radix): a 1-D unique, much faster
            key = np.zeros(len(self), np.int64)
            for code, size in zip(codes, sizes):
                key = key * size + code
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        else:
            _, first, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # shapes by their first job
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return first[order], rank[inverse.reshape(-1)]


def _factorized(values: list) -> np.ndarray:
    """An int code per value (equal values, equal codes); all zeros at once when every value is None."""
    if values.count(None) == len(values):
        return np.zeros(len(values), np.int64)
    seen: dict = {}
    return np.fromiter((seen.setdefault(v, len(seen)) for v in values), np.int64, len(values))


class _Codes:
    """Small interning table: value <-> int code (GPU types, cluster paths, reasons)."""

    def __init__(self, first: object) -> None:
        self.values: list = [first]
        self._code = {first: 0}

    def code(self, value: object) -> int:
        code = self._code.get(value)
        if code is None:
            code = self._code[value] = len(self.values)
            self.values.append(value)
        return code


class JobStore(Sequence[JobRecord]):
    """Every job of a run, by input index: records for the jobs in play, columns for the rest."""

    def __init__(self, specs: Sequence[JobSpec], home_of: Callable[[JobSpec], int | None],
                 options_of: Callable[[JobSpec, int | None], tuple[Option, ...]]) -> None:
        if isinstance(specs, JobSpecColumns):
            self._from_columns(specs, home_of, options_of)
        else:
            self._from_specs(specs, home_of, options_of)
        n = len(self.job_ids)
        # result columns, written when a job leaves play
        self.status = np.zeros(n, np.int8)  # code in STATUSES; PENDING until it arrives
        self.first_start = np.full(n, math.nan)
        self.end = np.full(n, math.nan)
        self.wait_so_far = np.zeros(n)
        self.gpu_seconds = np.zeros(n)
        self.attained_service = np.zeros(n)
        self.remaining_work = self.duration.copy()
        self.queued_since = self.submit.copy()
        self.run_start = np.full(n, math.nan)
        self.run_speed = np.ones(n)
        self.run_penalty = np.zeros(n)
        self.run_share = np.zeros(n, np.int32)
        self.preemptions = np.zeros(n, np.int32)
        self.queue_seq = np.full(n, -1, np.int64)
        self.flags = np.zeros(n, np.uint8)
        self.gpu_type = np.zeros(n, np.int32)  # code in self.gpu_types
        self.path = np.zeros(n, np.int32)  # code in self.paths: the clusters it ran in, in order
        self.reason = np.zeros(n, np.int32)  # code in self.reasons
        self.gpu_types = _Codes(None)
        self.paths = _Codes(())
        self.reasons = _Codes("")
        self.live: dict[int, JobRecord] = {}  # jobs in play (and pending ones someone asked for)
        self._retired = np.zeros(n, bool)
        self._by_id: _ById | None = None
        self._views()

    def _from_specs(self, specs: Sequence[JobSpec], home_of: Callable[[JobSpec], int | None],
                    options_of: Callable[[JobSpec, int | None], tuple[Option, ...]]) -> None:
        """The input columns from JobSpec objects (tests, benches, the API's own lists)."""
        n = len(specs)
        self.job_ids: list[str] = [spec.job_id for spec in specs]
        self.submit = np.fromiter((spec.submit for spec in specs), np.float64, n)
        self.duration = np.fromiter((spec.duration for spec in specs), np.float64, n)
        self.gpus = np.fromiter((spec.gpus for spec in specs), np.float64, n)
        self.workers = np.fromiter((spec.workers for spec in specs), np.int64, n)
        self.weight = np.fromiter((spec.weight for spec in specs), np.int64, n)
        self.deadline = np.fromiter((math.nan if spec.deadline is None else spec.deadline for spec in specs),
                                    np.float64, n)
        # tenants as codes into self.tenants (code 0: no tenant)
        self.tenants = _Codes(None)
        self.tenant = np.fromiter((self.tenants.code(spec.tenant) for spec in specs), np.int32, n)
        self.option_sets: list[tuple[Option, ...]] = []
        codes: dict[tuple[Option, ...], int] = {}
        self.home = np.empty(n, np.int32)  # -1: none
        self.option_set = np.empty(n, np.int32)
        for i, spec in enumerate(specs):
            home = home_of(spec)
            self.home[i] = -1 if home is None else home
            options = options_of(spec, home)
            code = codes.get(options)
            if code is None:
                code = codes[options] = len(self.option_sets)
                self.option_sets.append(options)
            self.option_set[i] = code

    def _from_columns(self, specs: JobSpecColumns, home_of: Callable[[JobSpec], int | None],
                      options_of: Callable[[JobSpec, int | None], tuple[Option, ...]]) -> None:
        """The same columns as :meth:`_from_specs` gives, from columns: a JobSpec per distinct shape, not per job."""
        n = len(specs)
        self.job_ids = specs.job_id
        self.submit = np.array(specs.submit, np.float64)
        self.duration = np.array(specs.duration, np.float64)
        self.gpus = np.array(specs.gpus, np.float64)
        self.workers = np.array(specs.workers, np.int64)
        self.weight = np.array(specs.weight, np.int64)
        self.deadline = np.array(specs.deadline, np.float64)
        self.tenants = _Codes(None)
        code = self.tenants.code
        self.tenant = np.zeros(n, np.int32) if specs.tenant.count(None) == n else \
            np.fromiter((code(tenant) for tenant in specs.tenant), np.int32, n)
        self.option_sets = []
        codes: dict[tuple[Option, ...], int] = {}
        first, shape = specs.shapes()
        homes = np.empty(len(first), np.int32)
        sets = np.empty(len(first), np.int32)
        for k, i in enumerate(first.tolist()):  # in job order, so option sets are numbered as _from_specs does
            spec = specs[i]
            home = home_of(spec)
            homes[k] = -1 if home is None else home
            options = options_of(spec, home)
            set_code = codes.get(options)
            if set_code is None:
                set_code = codes[options] = len(self.option_sets)
                self.option_sets.append(options)
            sets[k] = set_code
        self.home = homes[shape]
        self.option_set = sets[shape]

    def _views(self) -> None:
        # memoryviews of the columns: a Python float/int per item read or write, about 2x faster
        # than numpy scalar indexing, which the engine does ~30 times per job
        self._in = tuple(memoryview(c) for c in (self.submit, self.duration, self.gpus, self.workers,
                                                 self.weight, self.deadline, self.home, self.option_set,
                                                 self.tenant))
        self._out = tuple(memoryview(c) for c in (
            self.status, self.first_start, self.end, self.wait_so_far, self.gpu_seconds, self.attained_service,
            self.remaining_work, self.queued_since, self.run_start, self.run_speed, self.run_penalty,
            self.run_share, self.preemptions, self.queue_seq, self.flags, self.gpu_type, self.path, self.reason,
            self._retired))

    def __getstate__(self) -> dict:  # memoryviews do not pickle; they are remade from the columns
        return {k: v for k, v in self.__dict__.items() if k not in ("_in", "_out")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._views()

    # -- records ---------------------------------------------------------------
    def record(self, i: int) -> JobRecord:
        """The live record of job ``i``, made on first use (it stays until the job leaves play)."""
        job = self.live.get(i)
        if job is None:
            if self._retired[i]:
                return self._rebuilt(i)
            submit, duration, gpus, workers, weight, deadline, home, option_set, tenant = self._in
            deadline = deadline[i]
            home = home[i]
            job = self.live[i] = JobRecord(
                self.job_ids[i], i, submit[i], duration[i], gpus[i], workers[i], weight[i],
                None if deadline != deadline else deadline, None if home < 0 else home,
                self.option_sets[option_set[i]], self.tenants.values[tenant[i]])
        return job

    def retire(self, job: JobRecord) -> None:
        """Copy a job's final fields into the columns and drop its record (it left play for good)."""
        i = job.index
        (status, first_start, end, wait_so_far, gpu_seconds, attained_service, remaining_work, queued_since,
         run_start, run_speed, run_penalty, run_share, preemptions, queue_seq, flags, gpu_type, path, reason,
         retired) = self._out
        status[i] = _STATUS_CODE[job.status]
        first_start[i] = job.first_start
        end[i] = job.end
        wait_so_far[i] = job.wait_so_far
        gpu_seconds[i] = job.gpu_seconds
        attained_service[i] = job.attained_service
        remaining_work[i] = job.remaining_work
        queued_since[i] = job.queued_since
        run_start[i] = job.run_start
        run_speed[i] = job.run_speed
        run_penalty[i] = job.run_penalty
        run_share[i] = job.run_share
        preemptions[i] = job.preemptions
        queue_seq[i] = job.queue_seq
        flags[i] = ((_INT_FIRST_START if type(job.first_start) is int else 0)
                    | (_INT_RUN_START if type(job.run_start) is int else 0)
                    | (_INT_QUEUED_SINCE if type(job.queued_since) is int else 0))
        gpu_type[i] = self.gpu_types.code(job.gpu_type_used)
        path[i] = self.paths.code(tuple(job.clusters))
        reason[i] = self.reasons.code(job.reason)
        retired[i] = True
        del self.live[i]

    def _rebuilt(self, i: int) -> JobRecord:
        """A retired job's record as it was when it left play (a new object on each call)."""
        deadline = float(self.deadline[i])
        home = int(self.home[i])
        job = JobRecord(self.job_ids[i], i, float(self.submit[i]), float(self.duration[i]), float(self.gpus[i]),
                        int(self.workers[i]), int(self.weight[i]), None if deadline != deadline else deadline,
                        None if home < 0 else home, self.option_sets[self.option_set[i]],
                        self.tenants.values[self.tenant[i]])
        flags = int(self.flags[i])

        def time(column: np.ndarray, flag: int) -> float:
            value = float(column[i])
            return int(value) if flags & flag else value

        job.status = STATUSES[self.status[i]]
        job.first_start = time(self.first_start, _INT_FIRST_START)
        job.end = float(self.end[i])
        job.wait_so_far = float(self.wait_so_far[i])
        job.gpu_seconds = float(self.gpu_seconds[i])
        job.attained_service = float(self.attained_service[i])
        job.remaining_work = float(self.remaining_work[i])
        job.queued_since = time(self.queued_since, _INT_QUEUED_SINCE)
        job.run_start = time(self.run_start, _INT_RUN_START)
        job.run_speed = float(self.run_speed[i])
        job.run_penalty = float(self.run_penalty[i])
        job.run_share = int(self.run_share[i])
        job.preemptions = int(self.preemptions[i])
        job.queue_seq = int(self.queue_seq[i])
        job.gpu_type_used = self.gpu_types.values[self.gpu_type[i]]
        job.clusters = list(self.paths.values[self.path[i]])
        job.reason = self.reasons.values[self.reason[i]]
        return job

    # -- Sequence ----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.job_ids)

    @overload
    def __getitem__(self, i: int) -> JobRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[JobRecord]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.record(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("job index out of range")
        return self.record(i)

    def __iter__(self) -> Iterator[JobRecord]:
        for i in range(len(self)):
            yield self.record(i)

    @property
    def by_id(self) -> Mapping[str, JobRecord]:
        """job id -> record (the id index is built on first use)."""
        if self._by_id is None:
            self._by_id = _ById(self)
        return self._by_id

    # -- output ------------------------------------------------------------------
    def run_speeds(self) -> np.ndarray:
        """Each job's speed factor in its last run (1.0 for a job that never ran), live records included."""
        speed = self.run_speed.copy()
        for i, job in self.live.items():
            speed[i] = job.run_speed
        return speed

    def output_columns(self, cluster_names: Sequence[str]) -> dict[str, np.ndarray]:
        """The per-job columns of jobs.csv (without ``nodes`` and ``runs``), in input order, with
        the values and dtypes :func:`simsched.core.metrics.jobs_frame` gives for the same records.

        Jobs still in play (a partial run) are read from their live records. The input columns
        (``submit``, ``gpus``, ...) are the store's own arrays, which never change; the others
        are new arrays.
        """
        def column(values: np.ndarray) -> np.ndarray:  # a copy: the table must not share the store's results
            return values.copy()

        status, first_start, end, wait = column(self.status), column(self.first_start), column(self.end), \
            column(self.wait_so_far)
        gpu_seconds, share = column(self.gpu_seconds), self.run_share.astype(np.int64)
        preemptions, flags = self.preemptions.astype(np.int64), column(self.flags)
        gpu_type, path, reason = column(self.gpu_type), column(self.path), column(self.reason)
        for i, job in self.live.items():
            status[i] = _STATUS_CODE[job.status]
            first_start[i], end[i], wait[i] = job.first_start, job.end, job.wait_so_far
            gpu_seconds[i], share[i], preemptions[i] = job.gpu_seconds, job.run_share, job.preemptions
            flags[i] = _INT_FIRST_START if type(job.first_start) is int else 0
            gpu_type[i] = self.gpu_types.code(job.gpu_type_used)
            path[i] = self.paths.code(tuple(job.clusters))
            reason[i] = self.reasons.code(job.reason)
        done = status == _STATUS_CODE[DONE]
        # an unfinished job's wait and JCT are censored at the end of the run (its `end` holds that time)
        counted = done | (status == _STATUS_CODE[UNFINISHED])
        # pandas makes an int64 column of a list of Python ints: every start was the int clock
        all_int_starts = len(status) > 0 and bool((flags & _INT_FIRST_START).all())
        type_names = np.array([t or "" for t in self.gpu_types.values], dtype=object)
        path_names = np.array(["|".join(cluster_names[c] for c in p) for p in self.paths.values], dtype=object)
        homes = np.array(["", *cluster_names], dtype=object)
        return {
            "job_id": np.array(self.job_ids, dtype=object),
            "submit": self.submit,
            "start": first_start.astype(np.int64) if all_int_starts else first_start,
            "end": np.where(done, end, math.nan),
            "wait": np.where(counted, wait, math.nan),
            "jct": np.where(counted, end - self.submit, math.nan),
            "cluster": path_names[path],
            "gpu_type": type_names[gpu_type],
            "preemptions": preemptions,
            "gpus": self.gpus,
            "workers": self.workers,
            "weight": self.weight,
            "duration": self.duration,
            "deadline": self.deadline,
            "gpu_seconds": gpu_seconds,
            "status": np.array(STATUSES, dtype=object)[status],
            "reason": np.array(self.reasons.values, dtype=object)[reason],
            "home_cluster": homes[self.home + 1],
            "tenant": np.array([t or "" for t in self.tenants.values], dtype=object)[self.tenant],
            "share": share,
        }


class _ById(Mapping[str, JobRecord]):
    """``JobStore.by_id``: a job id -> index dict over the store."""

    def __init__(self, store: JobStore) -> None:
        self._store = store
        self._index = {job_id: i for i, job_id in enumerate(store.job_ids)}

    def __getitem__(self, job_id: str) -> JobRecord:
        return self._store.record(self._index[job_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)
