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


def arguments(doc: str) -> argparse.Namespace:
    """The command line of this script and of e2e_simpy_floor.py (the same model, the same files)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("jobs")
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--out")
    return p.parse_args()


def read_jobs(path: str) -> list[tuple[str, float, float, int]]:
    """(job_id, submit, duration, gpus) of every row of the job CSV, read with the csv module."""
    with open(path, newline="") as f:
        return [(r[0], float(r[1]), float(r[2]), int(float(r[3]))) for r in list(csv.reader(f))[1:]]


def write_times(path: str, rows: list, start: list[float], end: list[float]) -> None:
    """job_id,start,end of every job (e2e.py compares these files)."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "start", "end"])
        out.writerows((row[0], start[i], end[i]) for i, row in enumerate(rows))


def main() -> None:
    args = arguments(__doc__)
    rows = read_jobs(args.jobs)
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
        write_times(args.out, rows, start, end)


if __name__ == "__main__":
    main()
