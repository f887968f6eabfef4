"""The bare event loop tools/bench/e2e.py races simsched's whole process against.

    python tools/bench/e2e_reference.py JOBS.csv [--nodes 32] [--gpus 8] [--out TIMES.csv]

The same model as the scenario e2e.py writes: one cluster of ``--nodes`` nodes of
``--gpus`` whole GPUs, every job one worker; at each timestamp the completions, then the
arrivals (in file order), then one FIFO pass with first fit (the lowest-index node with room),
strict: the pass stops at the first job that does not fit. It reads the CSV (job_id, submit,
duration, gpus) with the csv module and, with ``--out``, writes job_id,start,end.
"""

import argparse
import csv
import heapq


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("jobs")
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--out")
    args = p.parse_args()
    with open(args.jobs, newline="") as f:
        rows = [(r[0], float(r[1]), float(r[2]), int(float(r[3]))) for r in list(csv.reader(f))[1:]]
    free = [args.gpus] * args.nodes
    start = [0.0] * len(rows)
    end = [0.0] * len(rows)
    events = [(submit, 1, i, -1) for i, (_, submit, _, _) in enumerate(rows)]  # (time, 0 finish / 1 arrive, job, node)
    heapq.heapify(events)
    queue: list[int] = []
    head = 0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, i, node = heapq.heappop(events)
            if kind == 0:
                free[node] += rows[i][3]
            else:
                queue.append(i)
        while head < len(queue):
            i = queue[head]
            g = rows[i][3]
            node = next((n for n, f in enumerate(free) if f >= g), -1)
            if node < 0:
                break
            free[node] -= g
            start[i], end[i] = now, now + rows[i][2]
            heapq.heappush(events, (end[i], 0, i, node))
            head += 1
    if args.out:
        with open(args.out, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["job_id", "start", "end"])
            out.writerows((row[0], start[i], end[i]) for i, row in enumerate(rows))


if __name__ == "__main__":
    main()
