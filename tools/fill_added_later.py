"""Fill the counts columns a committed store predates (plans, ea_runs, moves, moves_per_job) by running
its rows again, exactly as ``--verify`` does.

    python tools/fill_added_later.py experiments/paper/fig4.toml --preset medium \
        --out experiments/paper/results/fig4-medium-arrival [--only scheduler=evo-gp] [--limit 10]

For each row of results.csv that lacks a value of a counts column
(:data:`simsched.runs.experiment.store.COUNTS_ADDED_LATER`; other metrics added later, such as
p99_wait, are left out: filled on part of the rows, the report would average them over those), the run is repeated with the code
path the experiment uses; every metric the row already holds must come out **identical** (as
text, as ``--verify`` compares), or the tool stops with exit 3 and that row is left as it was.
Then the new values are written into the row, the missing columns appended to the header (a later
``--resume`` writes them too). results.csv is rewritten atomically after every row under the
store's lock, so the tool can be stopped and started again: filled rows are skipped. ``--workers N``
runs N rows at once in worker processes (simsched's own TaskRunner); each is checked and written as it
finishes. Re-make the
tables with ``--tables-only`` afterwards.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from simsched.runs.experiment.grid import plan
from simsched.runs.experiment.lock import FolderLock
from simsched.runs.experiment.runner import execute
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.store import (
    ADDED_LATER_METRICS,
    COUNTS_ADDED_LATER,
    IDENTITY_COLUMNS,
    _line,
    _rewrite,
)
from simsched.runs.experiment.verify import _now_text, parse_only
from simsched.runs.parallel import TaskRunner

MISMATCH_EXIT = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--preset")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", help="key=value pairs as --verify takes them")
    parser.add_argument("--limit", type=int, help="fill at most this many rows in this sitting")
    parser.add_argument("--workers", type=int, default=1, help="rows run at once, in worker processes (default 1)")
    args = parser.parse_args(argv)
    for flag, value in (("--workers", args.workers), ("--limit", args.limit)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be an integer >= 1, got {value}")
    spec = load_spec(args.spec, args.preset)
    only = parse_only(args.only, spec.sweep_keys)
    tasks = {task.run_id: task for task in plan(spec)}
    path = args.out / "results.csv"
    with FolderLock(args.out):
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
        header, body = rows[0], rows[1:]
        # only the counts are added: a metric such as p99_wait filled on some rows would be averaged
        # over those rows alone in the report's side table while the store is being filled
        added = [m for m in COUNTS_ADDED_LATER if m not in header]
        header = header + added
        body = [row + [""] * len(added) for row in body]
        later = [header.index(m) for m in ADDED_LATER_METRICS if m in header]
        counts = [header.index(m) for m in COUNTS_ADDED_LATER]
        identity = set(IDENTITY_COLUMNS) | set(spec.sweep_keys)
        chosen = []
        for row in body:
            record = dict(zip(header, row))
            if row[0] not in tasks or all(row[i] != "" for i in counts):
                continue
            if any(str(record.get(k, "")) != v and not _same_number(record.get(k, ""), v) for k, v in only.items()):
                continue
            if args.limit is not None and len(chosen) >= args.limit:
                break
            chosen.append(row)
        filled = 0
        with TaskRunner("local", args.workers) as runner:
            # rows run in parallel with --workers; each is checked and written as it finishes
            for index, fresh in runner.imap_unordered(execute, [(tasks[row[0]],) for row in chosen]):
                row = chosen[index]
                record = dict(zip(header, row))
                if fresh["partial"]:
                    raise KeyboardInterrupt
                metrics = fresh["metrics"]
                differences = [(c, record[c], _now_text(metrics.get(c))) for c in header
                               if c not in identity and c not in ADDED_LATER_METRICS
                               and record[c] != _now_text(metrics.get(c))]
                # an added-later column the row already holds must reproduce too
                differences += [(c, record[c], _now_text(metrics.get(c))) for c in ADDED_LATER_METRICS
                                if c in record and record[c] != "" and record[c] != _now_text(metrics.get(c))]
                if differences:
                    shown = "; ".join(f"{c}: stored {a}, now {b}" for c, a, b in differences[:4])
                    print(f"MISMATCH  {row[0]} {record['instance']} {record['scheduler']}: {shown}; nothing "
                          "written for this row", file=sys.stderr)
                    return MISMATCH_EXIT
                for i in later:
                    if row[i] == "":
                        row[i] = _now_text(metrics.get(header[i]))
                _rewrite(path, b"".join(_line(r) for r in [header, *body]))
                filled += 1
                print(f"filled    {row[0]} {record['instance']} {record['scheduler']} seed {record['seed']}"
                      + (f" stream {record['ea_stream']}" if record["ea_stream"] else "")
                      + f": every stored metric identical; moves_per_job {row[header.index('moves_per_job')]}",
                      flush=True)
        left = sum(1 for row in body if row[0] in tasks and any(row[i] == "" for i in counts))
        if added and not filled:
            print(f"{path}: no row filled; header unchanged")
        print(f"{filled} rows filled in this sitting; {left} rows still lack an added-later value")
    return 0


def _same_number(cell: str, value: str) -> bool:
    try:
        return float(cell) == float(value)
    except ValueError:
        return False


if __name__ == "__main__":
    sys.exit(main())
