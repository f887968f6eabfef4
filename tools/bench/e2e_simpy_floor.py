"""The least a SimPy *process-based* simulator of e2e.py's model can cost: its floor.

    python tools/bench/e2e_simpy_floor.py JOBS.csv [--nodes 32] [--gpus 8] [--out TIMES.csv]

tools/bench/e2e_reference.py is a bare heapq loop; simsched is, by the user's design, a SimPy
process-based simulator (an arrival process, one process per job, a scheduler process woken
by an event). This script is the smallest program of that shape with e2e_reference.py's
semantics, so that e2e.py can say how much of simsched's distance to the heapq loop is the
process-based design itself and how much is simsched:

- one arrival process walks the jobs in submit order with ``env.timeout`` between times;
- each started job is a SimPy process: ``yield env.timeout(duration)``, then it frees its
  GPUs and asks for a decision;
- a decision is one event per timestamp, scheduled after every completion and arrival at
  that time (a priority after SimPy's NORMAL), whose process makes one strict FIFO pass with
  first fit, as the reference does.

Nothing else: no validation, no records, no metrics, no event log. It reads and writes its files
with e2e_reference.py's functions (e2e.py checks its times against the reference's).
"""

import simpy
from e2e_reference import arguments, read_jobs, write_times  # (this script's folder is on sys.path)

AFTER_NORMAL = 2  # SimPy's NORMAL priority is 1: the decision runs after the events of its time


def main() -> None:
    args = arguments(__doc__)
    rows = read_jobs(args.jobs)
    env = simpy.Environment()
    free = [args.gpus] * args.nodes
    start = [0.0] * len(rows)
    end = [0.0] * len(rows)
    queue: list[int] = []
    state = {"head": 0, "wakeup": env.event(), "pending": False}

    def request_decision() -> None:
        if not state["pending"]:
            state["pending"] = True
            wakeup = state["wakeup"]
            wakeup._ok, wakeup._value = True, None
            env.schedule(wakeup, AFTER_NORMAL)

    def job(i: int, node: int, duration: float):
        yield env.timeout(duration)
        free[node] += rows[i][3]
        request_decision()

    def arrivals():
        order = sorted(range(len(rows)), key=lambda i: rows[i][1])
        for i in order:
            at = rows[i][1]
            if at > env.now:
                yield env.timeout(at - env.now)
            queue.append(i)
            request_decision()

    def scheduler():
        while True:
            yield state["wakeup"]
            state["wakeup"], state["pending"] = env.event(), False
            now = env.now
            head = state["head"]
            while head < len(queue):
                i = queue[head]
                g = rows[i][3]
                node = next((n for n, f in enumerate(free) if f >= g), -1)
                if node < 0:
                    break
                free[node] -= g
                start[i], end[i] = now, now + rows[i][2]
                env.process(job(i, node, rows[i][2]))
                head += 1
            state["head"] = head

    env.process(arrivals())
    env.process(scheduler())
    env.run()
    if args.out:
        write_times(args.out, rows, start, end)


if __name__ == "__main__":
    main()
