"""SHA-256 digests of the shipped scenarios' event logs and job tables (issue 33: a pure move).

Each case runs the CLI as a user would (``python -m simsched SCENARIO --out DIR --quiet`` plus
flags) and hashes the files it writes. ``tests/golden/event_digests.json`` holds the digests taken
on the code before the layering move (d94677d), except the philly_hetero cases, re-taken on
purpose by issue 38 (its 2x12 nodes run at the measured P100 speed, 0.859, on the new default
training basis, not 0.592), and the course cases, taken before issue 38 and unchanged by it (the
course scenarios pin speed_basis = "fp32"). ``tests/test_event_digests.py`` re-runs every
case and expects the same bytes. Run ``python tools/event_digests.py --write`` only when a
behaviour change is intended, and say so in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "event_digests.json"
FILES = ("events.csv", "jobs.csv")

#: case name -> (scenario, extra CLI flags); small enough for CI (each a few seconds)
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "philly_hetero-fifo-easy": ("scenarios/philly_hetero.toml", ("--jobs", "1500")),
    "philly_hetero-sjf-easy": ("scenarios/philly_hetero.toml", ("--jobs", "1500", "--policy", "sjf")),
    "philly_hetero-fifo-greedy": ("scenarios/philly_hetero.toml",
                                  ("--jobs", "1500", "--set", "scheduler.backfill=true")),
    "philly_hetero-sjf-none": ("scenarios/philly_hetero.toml",
                               ("--jobs", "1500", "--policy", "sjf", "--set", "scheduler.backfill=false")),
    "philly_vc-drf-strict": ("scenarios/course/philly_vc.toml",
                             ("--jobs", "1500", "--policy", "drf", "--set", "scheduler.quota=strict")),
    "philly_vc-drf-borrow": ("scenarios/course/philly_vc.toml",
                             ("--jobs", "1500", "--policy", "drf", "--set", "scheduler.quota=borrow")),
    "philly_vc-fifo-borrow-preempt": ("scenarios/course/philly_vc.toml",
                                      ("--jobs", "1500", "--set", "scheduler.quota=borrow",
                                       "--set", "scheduler.reclaim=preempt")),
    "paper_multicluster-evo-gp-200": ("scenarios/paper_multicluster.toml", ("--jobs", "200")),
    # the course's look-alikes (issue 38: pinned to speed_basis = "fp32", byte-identical to the runs
    # before the training basis became the catalog's default; digests taken on cac2e99)
    "course_philly-fifo": ("scenarios/course/philly.toml", ("--jobs", "1500")),
    "course_pai-sjf": ("scenarios/course/pai.toml", ("--jobs", "1500", "--policy", "sjf")),
}


def digests(case: str) -> dict[str, str]:
    """{file name: sha256} of one case's outputs."""
    scenario, flags = CASES[case]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "simsched", str(ROOT / scenario), "--out", out, "--quiet",
                        *flags], check=True, cwd=ROOT)
        return {name: hashlib.sha256((Path(out) / name).read_bytes()).hexdigest() for name in FILES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the digests to {GOLDEN.relative_to(ROOT)}")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    found = {case: digests(case) for case in (args.cases or CASES)}
    text = json.dumps(found, indent=2, sort_keys=True) + "\n"
    if args.write:
        GOLDEN.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
