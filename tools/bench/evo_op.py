"""Time one EVO-GP scheduling decision on a seeded paper-style instance.

    python tools/bench/evo_op.py --queued 200 --clusters 5 --nodes 40 --gpus 8 [--json]

The instance follows the paper's workload (Table II job types, exponential
durations, priorities in {1, 2, 3}). Each cluster is first filled to about
half its GPUs with running jobs placed by best fit. Then ``--queued`` jobs
wait, each with 0-2 h already queued. Capacities are in milli-GPUs, as in the engine.

Measured: one full decision (Eq. 17 priority over the queue, then the EA with
n = 100 and 200 generations, cache on), median of ``--repeat`` runs after one
warm-up (the warm-up includes numba compilation or cache loading), as wall and
CPU seconds (CPU time moves less with the load of a shared machine); then one
decision without the exact cache (same result). Also the
planner on cluster 0: plain-Python reference against
the numba kernel (first ``--reference-jobs`` jobs by priority), and whether
the two agree exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from simsched.evo.allocation import AllocationInstance, ClusterState, evolve, mct_assign
from simsched.evo.planner import plan_kernel, plan_reference
from simsched.evo.priority import evaluate, load_priority

MILLI = 1000
#: CPU seconds of every decide() call, in order (wall time moves with the machine's load)
CPU_SECONDS: list[float] = []
# Table II: workers, GPUs, mean hours, sampling weight.
JOB_TYPES = np.array(
    [
        (1, 1, 1.499136, 2.44e-1),
        (1, 2, 0.906435, 1.23e-1),
        (1, 4, 1.050502, 8.20e-2),
        (1, 8, 3.285060, 4.29e-1),
        (2, 2, 1.701724, 3.00e-2),
        (2, 4, 1.348965, 1.00e-3),
        (2, 8, 0.167778, 1.80e-4),
        (2, 16, 6.448247, 2.40e-2),
        (3, 24, 0.277222, 3.70e-4),
        (4, 4, 0.039333, 2.64e-4),
        (4, 32, 4.548746, 2.90e-2),
        (6, 48, 5.659565, 3.30e-3),
        (8, 8, 0.751250, 4.00e-4),
        (8, 64, 11.871677, 1.93e-2),
        (10, 80, 6.448889, 8.50e-4),
        (12, 96, 0.449074, 1.70e-4),
        (16, 16, 0.135417, 1.00e-3),
        (16, 64, 0.036111, 5.30e-5),
        (16, 128, 12.898697, 3.91e-2),
        (24, 192, 0.198611, 5.30e-5),
        (32, 256, 12.730382, 8.60e-4),
    ]
)


def _sample_jobs(
    rng: np.random.Generator, count: int, nodes: int, gpus: int
) -> dict[str, np.ndarray]:
    workers, total, hours, weight = JOB_TYPES.T
    per_worker = total / workers
    feasible = (np.floor(gpus / per_worker) * nodes >= workers) & (per_worker <= gpus)  # Eq. 10
    prob = np.where(feasible, weight, 0.0)
    kind = rng.choice(len(JOB_TYPES), size=count, p=prob / prob.sum())
    duration = np.maximum(np.floor(rng.exponential(hours[kind] * 3600.0)), 1.0)
    return {
        "workers": workers[kind].astype(np.int64),
        "per_worker": (per_worker[kind] * MILLI).astype(np.int64),
        "duration": duration,
        "weight": rng.integers(1, 4, size=count).astype(np.float64),
    }


def _running_cluster(rng: np.random.Generator, nodes: int, gpus: int, now: float) -> ClusterState:
    """Best-fit running jobs until about half the cluster's GPUs are busy."""
    cap = np.full(nodes, gpus * MILLI, dtype=np.int64)
    free = cap.copy()
    finish, usage, weight, queued = [], [], [], []
    target = cap.sum() // 2
    for _ in range(10 * nodes):
        if cap.sum() - free.sum() >= target:
            break
        job = _sample_jobs(rng, 1, nodes, gpus)
        pw, r = int(job["per_worker"][0]), int(job["workers"][0])
        if (free // pw).sum() < r or (cap.sum() - free.sum()) + pw * r > target * 1.1:
            continue
        row = np.zeros(nodes, dtype=np.int64)
        for _w in range(r):
            fits = np.nonzero(free >= pw)[0]
            n = fits[np.argmin(free[fits])]
            free[n] -= pw
            row[n] += pw
        usage.append(row)
        finish.append(now + rng.uniform(0.05, 1.0) * job["duration"][0])
        weight.append(job["weight"][0])
        queued.append(rng.uniform(0, 3600.0))
    return ClusterState(
        cap,
        np.asarray(finish),
        np.asarray(usage).reshape(len(usage), nodes),
        np.asarray(weight),
        np.asarray(queued),
    )


def build_instance(
    queued: int, clusters: int, nodes: int, gpus: int, seed: int = 1
) -> tuple[AllocationInstance, dict[str, np.ndarray]]:
    """A seeded decision instance and the queued jobs' priority features."""
    rng = np.random.default_rng(seed)
    now = 100_000.0
    states = tuple(_running_cluster(rng, nodes, gpus, now) for _ in range(clusters))
    jobs = _sample_jobs(rng, queued, nodes, gpus)
    waited = rng.uniform(0, 7200.0, size=queued)
    features = {
        "d": jobs["duration"],
        "q": waited,
        "u": jobs["weight"],
        "g": (jobs["per_worker"] * jobs["workers"]) / MILLI,
    }
    instance = AllocationInstance(
        now=now,
        clusters=states,
        per_worker=jobs["per_worker"],
        workers=jobs["workers"],
        duration=jobs["duration"],
        weight=jobs["weight"],
        queued=waited,
        priority=np.zeros(queued),
    )
    return instance, features


def decide(
    instance: AllocationInstance, features: dict[str, np.ndarray], seed: int, cache: bool = True
) -> tuple[float, object]:
    """One decision: priority values, then the EA. Returns (seconds, EvolveResult)."""
    started = time.perf_counter()
    cpu = time.process_time()
    priority = evaluate(load_priority("gp-paper"), features)
    decision = AllocationInstance(
        now=instance.now,
        clusters=instance.clusters,
        per_worker=instance.per_worker,
        workers=instance.workers,
        duration=instance.duration,
        weight=instance.weight,
        queued=instance.queued,
        priority=priority,
    )
    result = evolve(decision, np.random.default_rng(seed), n=100, generations=200, cache=cache)
    CPU_SECONDS.append(time.process_time() - cpu)
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--reference-jobs",
        type=int,
        default=200,
        help="jobs (first by priority) in the reference-vs-kernel planner comparison",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    instance, features = build_instance(
        args.queued, args.clusters, args.nodes, args.gpus, args.seed
    )
    warmup_s, _ = decide(instance, features, args.seed)
    CPU_SECONDS.clear()
    runs = [decide(instance, features, args.seed) for _ in range(args.repeat)]
    seconds = statistics.median(s for s, _ in runs)
    cpu_seconds = statistics.median(CPU_SECONDS)
    result = runs[0][1]
    CPU_SECONDS.clear()
    uncached_s, uncached = decide(instance, features, args.seed, cache=False)
    uncached_cpu = CPU_SECONDS[0]

    c = instance.clusters[0]
    order = np.argsort(evaluate(load_priority("gp-paper"), features), kind="stable")
    order = order[: args.reference_jobs]
    plan_args = (
        instance.now,
        c.capacity,
        c.fixed_finish,
        c.fixed_usage,
        instance.kernel.per_worker[:, 0],
        instance.kernel.workers,
        instance.kernel.duration[:, 0],
        order,
    )
    plan_kernel(*plan_args)
    t0 = time.perf_counter()
    ref = plan_reference(*plan_args)
    reference_s = time.perf_counter() - t0
    reps = 50
    t0 = time.perf_counter()
    for _ in range(reps):
        ker = plan_kernel(*plan_args)
    kernel_s = (time.perf_counter() - t0) / reps
    agree = all(
        np.array_equal(a, b, equal_nan=True)
        for a, b in (
            (ref.start, ker.start),
            (ref.finish, ker.finish),
            (ref.worker_node, ker.worker_node),
        )
    )
    mct_assign(instance)  # warm-up (numba cache load)
    mct_start = time.perf_counter()
    mct_assign(instance)
    mct_s = time.perf_counter() - mct_start
    report = {
        "queued": args.queued,
        "clusters": args.clusters,
        "nodes": args.nodes,
        "gpus": args.gpus,
        "running_jobs": int(sum(c.fixed_finish.shape[0] for c in instance.clusters)),
        "seconds_per_decision": seconds,
        "cpu_seconds_per_decision": cpu_seconds,
        "seconds_without_cache": uncached_s,
        "cpu_seconds_without_cache": uncached_cpu,
        "same_result_without_cache": bool(uncached.objective == result.objective),
        "load_average": os.getloadavg(),
        "decision_runs_s": [s for s, _ in runs],
        "warmup_s": warmup_s,
        "objective": result.objective,
        "objective_after_init": float(result.history[0]),
        "evaluations": result.evaluations,
        "cluster_plans": result.cluster_plans,
        "cache_hits": result.cache_hits,
        "mct_s": mct_s,
        "planner_reference_s": reference_s,
        "planner_kernel_s": kernel_s,
        "planner_speedup": reference_s / kernel_s if kernel_s > 0 else float("inf"),
        "planner_jobs": int(order.size),
        "planner_agree": agree,
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"one decision (Q={args.queued}, P={args.clusters}, {args.nodes}x{args.gpus} GPUs, "
            f"{report['running_jobs']} running): {seconds:.3f} s median of {args.repeat} "
            f"(warm-up {warmup_s:.2f} s), CPU {cpu_seconds:.3f} s"
        )
        print(
            f"  without the cache: {uncached_s:.3f} s (CPU {uncached_cpu:.3f} s), same objective: "
            f"{report['same_result_without_cache']}; load average {os.getloadavg()[0]:.2f}"
        )
        print(
            f"  EA: objective {result.history[0]:.2f} -> {result.objective:.2f}, "
            f"{result.evaluations} evaluations, {result.cluster_plans} cluster plans, "
            f"{result.cache_hits} cache hits"
        )
        print(
            f"  planner, cluster 0 with {order.size} jobs: reference {reference_s * 1e3:.1f} ms, "
            f"kernel {kernel_s * 1e3:.3f} ms, ratio x{report['planner_speedup']:.0f}, "
            f"identical: {agree}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
