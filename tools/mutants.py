"""One-line mutants of the engine, the fast EASY walk and the quota wrapper, each run against the tests
that target its module (docs/engine.md "Mutation check").

Usage: ``python tools/mutants.py [engine|easy|quota ...] [--list]``. The checkout's tracked and
untracked (not ignored) files are copied once to a folder under /tmp; each mutant replaces one line of
its module there (the line must occur exactly once), runs the module's test files with ``-x``, and
restores the line. The real files are never edited. A mutant is killed when the tests fail, survived
when they pass; the table printed is the one docs/engine.md shows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: module -> (its file, the test files that target it)
MODULES = {
    "engine": ("simsched/core/engine.py", ("tests/test_engine.py", "tests/test_preemption.py")),
    "easy": ("simsched/policies/easy.py", ("tests/test_backfill_modes.py", "tests/test_easy_fast.py")),
    "quota": ("simsched/policies/quota.py", ("tests/test_quota_reclaim.py", "tests/test_quota_walk.py",
                                              "tests/test_tenants.py")),
}

#: module -> (name, the original line (stripped), the mutated line); the issue 39 survivors are marked *
MUTANTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "engine": (
        ("* remaining_time: + run_penalty", "done = max(0.0, self.now - job.run_start - job.run_penalty) * job.run_speed",
         "done = max(0.0, self.now - job.run_start + job.run_penalty) * job.run_speed"),
        ("* penalty counted as useful work", "useful = max(0.0, elapsed - job.run_penalty)", "useful = max(0.0, elapsed)"),
        ("* no one-node-per-worker guard", "if len(nodes) != job.workers:", "if False:"),
        ("no restart penalty", "penalty = self.config.restart_penalty_s if job.preemptions else 0.0",
         "penalty = 0.0"),
        ("penalty on first starts too", "penalty = self.config.restart_penalty_s if job.preemptions else 0.0",
         "penalty = self.config.restart_penalty_s"),
        ("over-allocation allowed", "if amount > free[n]:", "if amount > free[n] + 1000:"),
        ("work kept at full speed", "job.remaining_work = max(0.0, job.remaining_work - useful * job.run_speed)",
         "job.remaining_work = max(0.0, job.remaining_work - useful)"),
        ("preemption count not kept", "job.preemptions += 1", "pass"),
        ("wait not accumulated at a start", "job.wait_so_far += now - job.queued_since\n        if job.status",
         "pass\n        if job.status"),
        ("first start overwritten", "if job.status == QUEUED and math.isnan(job.first_start):",
         "if job.status == QUEUED:"),
        ("run time ignores speed", "run_time = penalty + job.remaining_work / option.speed",
         "run_time = penalty + job.remaining_work"),
        ("any GPU type accepted", "if option.cluster == cluster and option.gpu_type == type_name:",
         "if option.cluster == cluster:"),
        ("GPU seconds without the share", "gpus_held = job.run_share * job.workers / MILLI",
         "gpus_held = job.workers"),
        ("no decision after a finish", "self.finished += 1", "self.finished += 2"),
    ),
    "easy": (
        ("* start does not lower the reservation (least[n] -= share)",
         "                if n in least:\n                    least[n] -= share\n",
         "                if n in least:\n                    pass\n"),
        ("* start: reservation.at >= end -> >", "            if reservation.at >= end:\n                break\n            least",
         "            if reservation.at > end:\n                break\n            least"),
        ("* release without the restart penalty",
         "return job.run_start + (job.run_penalty + job.remaining_work / job.run_speed)",
         "return job.run_start + (0.0 + job.remaining_work / job.run_speed)"),
        ("window check ignores reservations", "if least < scratch[n]:", "if False:"),
        ("window end inclusive", "if reservation.at >= before:", "if reservation.at > before:"),
        ("zero-run start keeps its GPUs after now", "if not end > self.now:", "if False:"),
        ("start frees nothing now", "free[n] -= share", "pass"),
        ("reservation takes nothing", "least_here[n] = least_here.get(n, value[n]) - share",
         "least_here[n] = least_here.get(n, value[n])"),
        ("no reservation", "plan.reserve(job, cluster, groups, placement, view, running, first)", "pass"),
        ("depth ignored", "if len(made) < depth:", "if True:"),
        ("ended jobs not dropped", "del self.releases[:done]", "pass"),
        ("slots off by one", "if slots[k] >= workers:", "if slots[k] > workers:"),
        ("failed shape memory wrong way", "if work >= failed_now.get(shape, math.inf):",
         "if work <= failed_now.get(shape, math.inf):"),
        ("resume without checking free", "return (view.now >= self.now and view.free == self.free and "
         "len(ordered) >= self.length", "return (view.now >= self.now and len(ordered) >= self.length"),
        ("release sorted by start", "i = bisect_right(self.ends, end)", "i = len(self.ends)"),
    ),
    "quota": (
        ("* victim-keeping rule inverted", "victims = [v for v in chosen if used.intersection(v.running_nodes)]",
         "victims = [v for v in chosen if not used.intersection(v.running_nodes)]"),
        ("* exact fit judged not to fit", "return all(free[n] >= amount for n, amount in need.items())",
         "return all(free[n] > amount for n, amount in need.items())"),
        ("* quota refund sign flipped",
         "staged.add(job.tenant, job.running_cluster, job.gpu_type_used, -job.run_share * job.workers)",
         "staged.add(job.tenant, job.running_cluster, job.gpu_type_used, job.run_share * job.workers)"),
        ("victims of tenants within quota",
         "if not scratch.borrowing(victim.tenant, victim.running_cluster, victim.gpu_type_used):",
         "if False:"),
        ("reclaim when it fits already", "return None  # it fits without anyone's GPUs: the borrowing pass will start it",
         "pass"),
        ("oldest start first", "key=lambda r: (-r.run_start, -r.index))", "key=lambda r: (r.run_start, r.index))"),
        ("reclaimer not charged", "staged.add(job.tenant, option.cluster, option.gpu_type, need)\n            commit(",
         "pass\n            commit("),
        ("reclaim over quota", "if not staged.admits(job.tenant, option.cluster, option.gpu_type, need):\n"
         "                continue\n            group", "if False:\n                continue\n            group"),
        ("strict borrows", 'if self.mode == "strict":\n            return Decision(tuple(starts), tuple(preempts))',
         'if False:\n            return Decision(tuple(starts), tuple(preempts))'),
        ("step 1 over quota", "continue  # it would take its tenant over the quota: it waits", "pass"),
        ("no reclaim pass", "self._reclaim_pass(queue, view, staged, free, running, preempts, starts, started)",
         "pass"),
        ("admission refund twice", "if victim.job_id not in self.released:", "if True:"),
        ("copy shares the delta", "out._delta = dict(staged._delta)", "out._delta = staged._delta"),
        ("freed GPUs not taken", "_take(free, nodes, option.per_worker)\n            staged.add",
         "pass\n            staged.add"),
        ("failed kinds remembered per tenant only", "same = (job.tenant, id(job.options), job.workers)",
         "same = (job.tenant,)"),
    ),
}


def copy_checkout(into: Path) -> None:
    """The checkout's tracked and untracked, not ignored, files (as they are now) under ``into``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def mutate(text: str, original: str, mutated: str) -> str:
    """``text`` with its one line equal to ``original`` (stripped) replaced by ``mutated``, indentation
    kept; an ``original`` of several lines, or part of a line, must occur exactly once."""
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == original.strip()]
    if "\n" not in original and len(hits) == 1:
        i = hits[0]
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + mutated.strip() + "\n"
        return "".join(lines)
    if text.count(original) != 1:
        raise SystemExit(f"mutant anchor found {text.count(original)} times: {original!r}")
    return text.replace(original, mutated)


def run_tests(root: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, str]:
    """(passed, the first failing test) of ``tests`` in the copy at ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root))
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rf", *tests],
                              cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timeout"
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return done.returncode == 0, (failed[0] if failed else f"exit {done.returncode}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module {unknown[0]!r}; choose from {', '.join(MODULES)}")
    args.modules = args.modules or list(MODULES)
    if args.list:
        for module in args.modules:
            for name, original, mutated in MUTANTS[module]:
                print(f"{module}\t{name}\t{original.strip()!r} -> {mutated.strip()!r}")
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="simsched-mutants-") as folder:
        root = Path(folder)
        copy_checkout(root)
        for module in args.modules:
            path, tests = MODULES[module]
            target = root / path
            pristine = target.read_text()
            ok, first = run_tests(root, tests, args.timeout)
            if not ok:
                raise SystemExit(f"{module}: the unmutated tests fail ({first}); fix them first")
            for name, original, mutated in MUTANTS[module]:
                target.write_text(mutate(pristine, original, mutated))
                started = time.perf_counter()
                passed, first = run_tests(root, tests, args.timeout)
                target.write_text(pristine)
                status = "survived" if passed else "killed"
                rows.append((module, name, status, "" if passed else first))
                print(f"{module:7} {status:8} {time.perf_counter() - started:6.1f}s  {name}  {first if not passed else ''}",
                      flush=True)
    print()
    print("| module | mutant | result | killed by |")
    print("|---|---|---|---|")
    for module, name, status, test in rows:
        print(f"| {module} | {name} | {status} | {test} |")
    for module in args.modules:
        mine = [r for r in rows if r[0] == module]
        killed = sum(r[2] == "killed" for r in mine)
        print(f"{module}: {killed}/{len(mine)} killed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
