"""A generated corpus of hostile inputs (issue 13): each gives exit 2 and one line, never a traceback.

Every case runs in-process through :func:`simsched.cli.main.main` (no subprocess per
case, so the corpus stays fast). A case is files to write, the argv, and what
must happen: ``bad`` (exit 2, exactly one stderr line, no traceback, the
line contains ``needle``) or ``ok`` -- a documented acceptance (exit 0), e.g.
a CSV with a UTF-8 byte-order mark. The corpus covers TOML syntax, every
scenario value, every reader's file formats, the CLI flags of every
subcommand, and user policies (run directly and through ``compare``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from simsched.cli.commands import SUBCOMMANDS
from simsched.cli.main import main

HEADER = "job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type"
GOOD_ROWS = ["a,0,100,1,,,,,", "b,5,50,2,,,,,"]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def scenario_text(overrides: dict[str, object] | None = None, drop: tuple[str, ...] = ()) -> str:
    """A small valid scenario; ``overrides`` set "table.key" (or "key") values, ``drop`` removes keys."""
    tables: dict[str, dict[str, object]] = {
        "": {"name": "fuzz", "seed": 1},
        "cluster": {"name": "c0", "nodes": [{"count": 2, "gpus": 8, "gpu_type": "V100"}]},
        "workload": {"source": "csv", "path": "jobs.csv"},
        "scheduler": {"policy": "fifo"},
    }
    for key, value in (overrides or {}).items():
        table, _, name = key.rpartition(".")
        tables.setdefault(table, {})[name] = value
    for key in drop:
        table, _, name = key.rpartition(".")
        tables.get(table, {}).pop(name, None)
    lines = [f"{k} = {toml_value(v)}" for k, v in tables.pop("").items()]
    for table, body in tables.items():
        lines.append(f"[[{table}]]" if table == "cluster" else f"[{table}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def jobs_csv(rows: list[str] = GOOD_ROWS, header: str = HEADER) -> str:
    return header + "\n" + "\n".join(rows) + "\n"


@dataclass
class Case:
    id: str
    argv: list[str]  # "{d}" is replaced by the case folder
    files: dict[str, str | bytes] = field(default_factory=dict)
    expect: str = "bad"  # "bad" (exit 2, one line) or "ok" (documented acceptance, exit 0)
    needle: str = ""


def run_case(case: Case, tmp_path: Path, capsys) -> tuple[int, str]:
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    argv = [a.replace("{d}", str(tmp_path)) for a in case.argv]
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def scenario_case(id: str, overrides=None, drop=(), needle: str = "", rows=GOOD_ROWS, extra_files=None,
                  expect: str = "bad", argv_extra=()) -> Case:
    files = {"s.toml": scenario_text(overrides, drop), "jobs.csv": jobs_csv(rows)}
    files.update(extra_files or {})
    return Case(id, ["{d}/s.toml", "--quiet", *argv_extra], files, expect, needle)


# ---------------------------------------------------------------- TOML syntax
TOML_SYNTAX = {
    "unclosed_table": "[cluster\nname = 1\n",
    "unclosed_string": 'name = "abc\n',
    "duplicate_key": 'name = "a"\nname = "b"\n',
    "bare_value": "= 3\n",
    "missing_value": "name =\n",
    "bad_escape": 'name = "\\q"\n',
    "unclosed_array": "seed = [1, 2\n",
    "deep_array_5000": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "deep_inline_table_3000": "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
    "tab_garbage": "\t\t\x01\x02\n",
    "redefined_table": "[scheduler]\npolicy = 'fifo'\n[scheduler]\npolicy = 'sjf'\n",
    "mixed_array_of_tables": "cluster = 3\n[[cluster]]\nname = 'x'\n",
    "date_garbage": "seed = 1979-05-27T07:32:00Z\n",
    "bad_number": "seed = 1_\n",
    "bad_float": "seed = 1.e5\n",
    "empty_file": "",
    "only_comment": "# nothing\n",
    "key_with_space": "my key = 1\n",
    "nul_byte": "name = 'a\x00b'\n",
    "crlf_junk": "name = 'a'\r\r\n",
}
TOML_BYTES = {
    "latin1_byte": b"name = 'caf\xe9'\n",
    "binary": bytes(range(256)),
    "utf16": "name = 'x'\n".encode("utf-16"),
}


def toml_syntax_cases() -> list[Case]:
    cases = [Case(f"toml-{k}", ["{d}/s.toml", "--quiet"], {"s.toml": v}) for k, v in TOML_SYNTAX.items()]
    cases += [Case(f"toml-{k}", ["{d}/s.toml", "--quiet"], {"s.toml": v}) for k, v in TOML_BYTES.items()]
    return cases


# ---------------------------------------------------------------- scenario values
NOT_NUMBERS = ["x", True, [1], {"a": 1}]
BAD_FLOATS = [math.nan, math.inf, -math.inf, -1.0]
VALUE_CASES: dict[str, list] = {
    "seed": ["1", -1, 1.5, True, math.nan],
    "name": [1, True, [1]],
    "cluster.name": ["", "   ", 3],
    "cluster.nodes": [[], "x", [1], [{"count": 1}], [{"count": 0, "gpus": 8}], [{"count": 1, "gpus": 0}],
                      [{"count": 1, "gpus": 10**12}], [{"count": 10**9, "gpus": 8}],
                      [{"count": 1, "gpus": 8, "gpu_type": "NOPE"}], [{"count": 1, "gpus": 8, "extra": 1}],
                      [{"count": 1.5, "gpus": 8}], [{"count": -3, "gpus": 8}]],
    "scheduler.policy": ["nope", 3, "", "missing.py:X", "x:"],
    "scheduler.placement": ["tetris", 1],
    "scheduler.allocation": ["nope", True],
    "scheduler.backfill": ["yes", 1],
    "scheduler.heterogeneous": ["no", 0],
    "scheduler.interval_s": [*BAD_FLOATS, 0, 0.0, "60", 1e-9],
    "scheduler.restart_penalty_s": [*BAD_FLOATS, "0"],
    "scheduler.typo_key": [1],
    "objective.weights": [[1, 1], [math.nan, 1, 1], [math.inf, 1, 1], [-1, 1, 1], ["a", 1, 1], 3],
    "workload.source": ["nope", 3],
    "workload.path": ["missing.csv", 3, "."],
    "workload.jobs_limit": [0, -1, 1.5, "10"],
    "workload.time_window": [[5, 1], [1], [math.nan, 5], [0, math.inf], ["a", "b"], [1e9, 2e9]],
    "workload.strict": ["true"],
    "workload.deadline_slack": [[0, 1], [2, 1], [math.nan, 2], [1, math.inf]],
    "workload.weight_range": [[0, 5], [5, 1], [1.5, 2]],
    "workload.reference_gpu_type": ["NOPE", 1],
    "workload.load": [*BAD_FLOATS, 0, 1e300, "1"],
    "workload.clusters": ["c0", [1], ["nope"]],
    "workload.unknown_key": [1],
}
SYNTHETIC_CASES: dict[str, list] = {
    "workload.jobs": [0, -5, 1.5, 1000000000000],
    "workload.mean_duration_s": [*BAD_FLOATS, 0, 1e300],
    "workload.load": [*BAD_FLOATS, 0, 1e300],
    "workload.gpus": [[], [0], ["a"], 3],
    "workload.gpu_weights": [[1], [-1, 1, 1, 1], [math.nan, 1, 1, 1]],
    "workload.generator": ["nope"],
}
GPU_TYPE_CASES = [
    {"name": "X1", "speedup": math.nan, "memory_gb": 16},
    {"name": "X1", "speedup": -1, "memory_gb": 16},
    {"name": "X1", "speedup": 1, "memory_gb": math.inf},
    {"name": "X1", "speedup": 1},
    {"name": "V100", "speedup": 0},
    {"speedup": 1, "memory_gb": 16},
]


def value_cases() -> list[Case]:
    cases = []
    for key, values in VALUE_CASES.items():
        for i, value in enumerate(values):
            cases.append(scenario_case(f"value-{key}-{i}", {key: value}))
    synthetic = {"workload.source": "synthetic", "workload.generator": "simple"}
    for key, values in SYNTHETIC_CASES.items():
        for i, value in enumerate(values):
            cases.append(scenario_case(f"synthetic-{key}-{i}", {**synthetic, key: value}, drop=("workload.path",)))
    for i, entry in enumerate(GPU_TYPE_CASES):
        text = scenario_text() + "[[gpu_type]]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in entry.items())
        cases.append(Case(f"gpu_type-{i}", ["{d}/s.toml", "--quiet"], {"s.toml": text + "\n", "jobs.csv": jobs_csv()}))
    # required pieces missing
    cases.append(Case("missing-cluster", ["{d}/s.toml", "--quiet"],
                      {"s.toml": 'name = "x"\n[workload]\nsource = "csv"\npath = "jobs.csv"\n', "jobs.csv": jobs_csv()}))
    cases.append(scenario_case("missing-workload-source", drop=("workload.source",)))
    # include cycles and missing includes
    cluster_file = "[[cluster]]\nfile = '{other}'\n"
    cases.append(Case("cluster-file-self", ["{d}/s.toml", "--quiet"],
                      {"s.toml": scenario_text().replace('[[cluster]]\nname = "c0"',
                                                         "[[cluster]]\nfile = \"a.toml\"\n[[cluster]]\nname = \"c0\""),
                       "a.toml": cluster_file.format(other="a.toml"), "jobs.csv": jobs_csv()}, needle="cycle"))
    cases.append(Case("cluster-file-pair", ["{d}/s.toml", "--quiet"],
                      {"s.toml": scenario_text().replace('[[cluster]]\nname = "c0"',
                                                         "[[cluster]]\nfile = \"a.toml\"\n[[cluster]]\nname = \"c0\""),
                       "a.toml": cluster_file.format(other="b.toml"), "b.toml": cluster_file.format(other="a.toml"),
                       "jobs.csv": jobs_csv()}, needle="cycle"))
    cases.append(scenario_case("cluster-file-missing", {"cluster.file": "none.toml"}, drop=("cluster.name", "cluster.nodes")))
    cases.append(scenario_case("workload-file-self", {"workload.file": "s.toml"},
                               drop=("workload.source", "workload.path"), needle="cycle"))
    cases.append(scenario_case("workload-file-pair", {"workload.file": "w1.toml"},
                               drop=("workload.source", "workload.path"), needle="cycle",
                               extra_files={"w1.toml": "[workload]\nfile = 'w2.toml'\n",
                                            "w2.toml": "[workload]\nfile = 'w1.toml'\n"}))
    cases.append(scenario_case("workload-file-missing", {"workload.file": "none.toml"}))
    return cases


# ---------------------------------------------------------------- job CSV (strict and not)
STRICT_BAD_ROWS = {
    "unknown_home_cluster": "a,0,100,1,,,,nowhere,",
    "unknown_gpu_type": "a,0,100,1,,,,,NOPE",
    "fractional_worker_share": "a,0,100,4,3,,,,",
    "deadline_before_submit": "a,100,10,1,,,50,,",
    "huge_submit": "a,1e300,10,1,,,,,",
    "huge_duration": "a,0,1e300,1,,,,,",
    "nan_submit": "a,nan,10,1,,,,,",
    "inf_duration": "a,0,inf,1,,,,,",
    "negative_submit": "a,-1,10,1,,,,,",
    "zero_gpus": "a,0,10,0,,,,,",
    "text_gpus": "a,0,10,x,,,,,",
    "zero_workers": "a,0,10,1,0,,,,",
    "fractional_workers": "a,0,10,2,1.5,,,,",
    "zero_weight": "a,0,10,1,,0,,,",
    "huge_weight": "a,0,10,1,,1e300,,,",
    "empty_job_id": ",0,10,1,,,,,",
    "too_few_fields": "a,0,10",
    "too_many_fields": "a,0,10,1,,,,,,,,",
    "huge_gpus": "a,0,10,1e300,,,,,",
}
CSV_FILES = {
    "latin1": ("bytes", HEADER.encode() + b"\ncaf\xe9,0,10,1,,,,,\n", "not a UTF-8 text file"),
    "huge_field": ("text", HEADER + "\n" + "a" * 200_000 + ",0,10,1,,,,,\n", "jobs.csv"),
    "header_only": ("text", HEADER + "\n", "no jobs"),
    "empty": ("text", "", "missing column"),
    "missing_column": ("text", "job_id,submit,gpus\na,0,1\n", "missing column"),
    "unknown_column": ("text", HEADER + ",color\na,0,10,1,,,,,,red\n", "unknown column"),
    "binary": ("bytes", bytes(range(256)) * 4, "jobs.csv"),
    "unterminated_quote": ("text", HEADER + '\n"a,0,10,1,,,,,\n', "no jobs"),
}


def csv_cases() -> list[Case]:
    cases = []
    for key, row in STRICT_BAD_ROWS.items():
        cases.append(scenario_case(f"csv-strict-{key}", {"workload.strict": True}, rows=["ok,0,1,1,,,,,", row],
                                   needle="jobs.csv:3:"))
        # not strict: the only row is bad, so the run has no jobs and says why
        cases.append(scenario_case(f"csv-allbad-{key}", rows=[row], needle="all 1 rows skipped"))
    for key, (_kind, content, needle) in CSV_FILES.items():
        files = {"s.toml": scenario_text(), "jobs.csv": content}
        cases.append(Case(f"csv-file-{key}", ["{d}/s.toml", "--quiet"], files, "bad", needle))
    # documented acceptances
    cases.append(Case("csv-bom-accepted", ["{d}/s.toml", "--quiet"],
                      {"s.toml": scenario_text(), "jobs.csv": "\ufeff" + jobs_csv()}, "ok"))
    cases.append(Case("csv-duplicate-id-skipped", ["{d}/s.toml", "--quiet"],
                      {"s.toml": scenario_text(), "jobs.csv": jobs_csv(["a,0,10,1,,,,,", "a,1,10,1,,,,,"])}, "ok"))
    cases.append(Case("csv-some-bad-rows-skipped", ["{d}/s.toml", "--quiet"],
                      {"s.toml": scenario_text(), "jobs.csv": jobs_csv([*GOOD_ROWS, "c,x,1,1,,,,,"])}, "ok"))
    cases.append(scenario_case("empty-time-window", {"workload.time_window": [1000, 2000]}, needle="time_window"))
    return cases


# ---------------------------------------------------------------- other readers' file formats
READER_GARBAGE = {
    "empty": "",
    "binary": bytes(range(256)) * 8,
    "latin1": b"a,b,c\n\xe9\xe8,1,2\n",
    "wrong_header": "x,y,z\n1,2,3\n",
    "header_only_itp": "job_id,submission_time,duration,num_gpu\n",
    "header_only_philly": "timestamp,duration,num_gpus,gpu_time,cluster\n",
    "json_garbage": "{not json",
    "deep_json": "[" * 100_000 + "]" * 100_000,
}
READER_SOURCES = {
    "philly": {},
    "philly-raw": {"workload.source": "philly", "workload.format": "raw"},
    "itp": {},
    "helios": {},
    "pai": {"workload.task_table": "tasks.csv"},
    "openb": {},
}


def reader_cases() -> list[Case]:
    cases = []
    for source, options in READER_SOURCES.items():
        for key, content in READER_GARBAGE.items():
            overrides = {"workload.source": source, "workload.path": "trace.dat", **options}
            files = {"s.toml": scenario_text(overrides), "trace.dat": content, "tasks.csv": content}
            cases.append(Case(f"reader-{source}-{key}", ["{d}/s.toml", "--quiet"], files))
        cases.append(Case(f"reader-{source}-folder", ["{d}/s.toml", "--quiet"],
                          {"s.toml": scenario_text({"workload.source": source, "workload.path": "sub", **options}),
                           "sub/x": "1"}))
    return cases


# ---------------------------------------------------------------- CLI flags of every subcommand
def cli_cases() -> list[Case]:
    ok = {"s.toml": scenario_text(), "jobs.csv": jobs_csv(), "file.txt": "x"}
    runs = {
        "run-seed-negative": ["--seed", "-1"], "run-seed-text": ["--seed", "x"], "run-jobs-zero": ["--jobs", "0"],
        "run-jobs-negative": ["--jobs", "-1"], "run-jobs-float": ["--jobs", "1.5"],
        "run-out-devnull": ["--out", "/dev/null"], "run-out-proc-version": ["--out", "/proc/version"],
        "run-out-file": ["--out", "{d}/file.txt"], "run-out-unwritable": ["--out", "/proc/simsched-out"],
        "run-unknown-flag": ["--frobnicate"], "run-extra-positional": ["extra"],
    }
    cases = [Case(k, ["{d}/s.toml", "--quiet", *v], ok) for k, v in runs.items()]
    cases.append(Case("run-jobs-negative-message", ["{d}/s.toml", "--jobs", "-1"], ok, needle=">= 1"))
    cases += [
        Case("run-no-scenario", [], ok),
        Case("run-missing-scenario", ["{d}/none.toml"], ok, needle="not found"),
        Case("run-scenario-folder", ["{d}"], ok, needle="folder"),
        Case("run-scenario-devnull", ["/dev/null", "--quiet"], ok),
        Case("validate-missing", ["validate", "{d}/none.toml"], ok),
        Case("validate-extra", ["validate", "{d}/s.toml", "more"], ok),
        Case("validate-bad-value", ["validate", "{d}/b.toml"],
             {**ok, "b.toml": scenario_text({"scheduler.interval_s": math.nan})}, needle="interval_s"),
    ]
    compare = {
        "compare-schedulers-empty": ["--schedulers", ","], "compare-schedulers-unknown": ["--schedulers", "nope"],
        "compare-schedulers-twice": ["--schedulers", "fifo,fifo"], "compare-seeds-zero": ["--seeds", "0"],
        "compare-workers-zero": ["--workers", "0"], "compare-rank-by": ["--rank-by", "nope"],
        "compare-resume-no-out": ["--resume"], "compare-address-local": ["--address", "x:1", "--schedulers", "fifo"],
        "compare-executor": ["--executor", "mpi"], "compare-out-file": ["--out", "{d}/file.txt"],
        "compare-out-devnull": ["--out", "/dev/null"], "compare-out-unwritable": ["--out", "/proc/simsched-out"],
        "compare-jobs-zero": ["--jobs", "0"], "compare-missing-policy-file": ["--schedulers", "fifo,none.py:X"],
        "compare-resume-no-journal": ["--resume", "--out", "{d}/cmp", "--schedulers", "fifo"],
    }
    cases += [Case(k, ["compare", "{d}/s.toml", "--quiet", *v], ok) for k, v in compare.items()]
    learn = {
        "learn-no-out": [], "learn-out-folder": ["--out", "{d}"], "learn-out-unwritable": ["--out", "/proc/x/l.json"],
        "learn-out-missing-folder": ["--out", "{d}/no/such/l.json"],
        "learn-out-proc": ["--out", "/proc/l.json"], "learn-out-devnull": ["--out", "/dev/null"], "learn-population-zero": ["--population", "0"],
        "learn-population-huge": ["--population", "1000000000000"], "learn-generations-negative": ["--generations", "-1"],
        "learn-alpha-over-train": ["--alpha", "5", "--train", "2"], "learn-workers-zero": ["--workers", "0"],
        "learn-executor": ["--executor", "mpi"], "learn-address-local": ["--address", "x:1"],
    }
    cases += [Case(k, ["learn", "{d}/s.toml", "--quiet", *(v if "--out" in v or k == "learn-no-out"
                                                               else [*v, "--out", "{d}/l.json"])], ok)
              for k, v in learn.items()]
    cases.append(Case("learn-bad-checkpoint", ["learn", "{d}/s.toml", "--quiet", "--out", "{d}/l.json", "--resume",
                                               "--population", "4", "--generations", "0", "--train", "2",
                                               "--alpha", "1", "--validation", "1", "--workers", "1"],
                      {**ok, "l.json.ckpt": "{garbage"}, needle="checkpoint"))
    cases.append(Case("learn-mutation-nan", ["learn", "{d}/b.toml", "--quiet", "--out", "{d}/l.json"],
                      {**ok, "b.toml": scenario_text() + "[learn]\nmutation_rate = nan\n"}, needle="b.toml"))
    # every registered subcommand (including ones added later) rejects an unknown flag and a missing scenario
    for name in SUBCOMMANDS:
        cases.append(Case(f"subcommand-{name}-unknown-flag", [name, "{d}/s.toml", "--no-such-flag"], ok))
        cases.append(Case(f"subcommand-{name}-missing-scenario", [name, "{d}/none.toml", "--out", "{d}/o.json"], ok))
    return cases


# ---------------------------------------------------------------- user policies
POLICY_HEAD = "from simsched.policies import Decision, Start\nimport sys\n\n\nclass P:\n"
FIRST_FIT = """
    def first(self, view):
        for job in view.queue:
            option = job.options[0]
            nodes = [n for n in view.fleet.groups[option.cluster, option.gpu_type]
                     if view.free[n] >= option.per_worker]
            if len(nodes) >= job.workers:
                return job, tuple(nodes[:job.workers])
        return None, ()
"""
POLICIES = {
    "decide_raises": ("    def decide(self, view):\n        raise ValueError('boom')\n", "p.py:7", "ValueError"),
    "init_raises": ("    def __init__(self):\n        raise RuntimeError('bad init')\n\n"
                    "    def decide(self, view):\n        return Decision()\n", "p.py:7", "__init__"),
    "recursion": ("    def decide(self, view):\n        return self.decide(view)\n", "p.py:7", "recursion"),
    "returns_none": ("    def decide(self, view):\n        return None\n", "p.py:6", "returned NoneType"),
    "returns_str": ("    def decide(self, view):\n        return 'start all'\n", "p.py:6", "returned str"),
    "returns_tuple": ("    def decide(self, view):\n        return ((), ())\n", "p.py:6", "returned tuple"),
    "returns_dict": ("    def decide(self, view):\n        return {'starts': []}\n", "p.py:6", "returned dict"),
    "string_node": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, ('0',)) "
                    "for j in view.queue[:1]))\n", "p.py:6", "node ids must be integers"),
    "int_nodes": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, 0) "
                  "for j in view.queue[:1]))\n", "p.py:6", "nodes must be"),
    "int_job_id": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.index, (0,)) "
                   "for j in view.queue[:1]))\n", "p.py:6", "job_id"),
    "starts_not_start": ("    def decide(self, view):\n        return Decision(starts=('a',))\n", "p.py:6", "Start("),
    "negative_interval": ("    interval_s = -5\n\n    def decide(self, view):\n        return Decision()\n",
                          "p.py:6", "interval_s"),
    "zero_interval": ("    interval_s = 0\n\n    def decide(self, view):\n        return Decision()\n",
                      "p.py:6", "interval_s"),
    "nan_interval": ("    interval_s = float('nan')\n\n    def decide(self, view):\n        return Decision()\n",
                     "p.py:6", "interval_s"),
    "sys_exit_decide": ("    def decide(self, view):\n        sys.exit(0)\n", "p.py:7", "decide called sys.exit(0)"),
    "sys_exit_init": ("    def __init__(self):\n        sys.exit(3)\n\n    def decide(self, view):\n"
                      "        return Decision()\n", "p.py:7", "sys.exit(3)"),
    "keyerror_view": ("    def decide(self, view):\n        return view.nothing\n", "p.py:7", "AttributeError"),
    "over_allocation": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, (0,) * j.workers)"
                        " for j in view.queue))\n", "p.py:6", "over-allocate"),
    "start_twice": (FIRST_FIT + "\n    def decide(self, view):\n        job, nodes = self.first(view)\n"
                    "        if job is None:\n            return Decision()\n"
                    "        return Decision(starts=(Start(job.job_id, nodes), Start(job.job_id, nodes)))\n",
                    "p.py:16", "not queued"),
    "unknown_job": ("    def decide(self, view):\n        return Decision(starts=(Start('nope', (0,)),))\n",
                    "p.py:6", "not queued"),
    "start_running_job": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, j.running_nodes)"
                          " for j in view.running) + tuple(Start(j.job_id, (0,) * j.workers) for j in view.queue[:1]))\n",
                          "p.py:6", "invalid decision"),
    "node_999": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, (999,) * j.workers)"
                 " for j in view.queue[:1]))\n", "p.py:6", "node 999 does not exist"),
    "node_minus_1": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, (-1,) * j.workers)"
                     " for j in view.queue[:1]))\n", "p.py:6", "node -1 does not exist"),
    "wrong_worker_count": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, (0, 1, 0))"
                           " for j in view.queue[:1]))\n", "p.py:6", "needs 1 nodes"),
    "preempt_not_running": ("    def decide(self, view):\n        return Decision(preempts=tuple(j.job_id for j in view.queue))\n",
                            "p.py:6", "not running"),
    "wrong_gpu_type": ("    def decide(self, view):\n        return Decision(starts=tuple(Start(j.job_id, (2,))"
                       " for j in view.queue[:1]))\n", "p.py:6", "may not run on node 2"),
    "missing_decide": ("    def other(self):\n        pass\n", "no decide", "no decide"),
    "syntax_error": ("    def decide(self view):\n        pass\n", "p.py:6", "importing"),
    "import_error": ("    import no_such_module_xyz\n", "p.py", "importing"),
}
POLICY_CLUSTER = [{"count": 2, "gpus": 8, "gpu_type": "V100"}, {"count": 1, "gpus": 8, "gpu_type": "T4"}]


def policy_cases() -> list[Case]:
    cases = []
    for key, (body, where, needle) in POLICIES.items():
        files = {"s.toml": scenario_text({"scheduler.policy": "p.py:P", "cluster.nodes": POLICY_CLUSTER}),
                 "jobs.csv": jobs_csv(["a,0,100,1,,,,,V100", "b,5,50,2,,,,,V100", "c,6,50,1,,,,,V100",
                                       "d,7,50,8,,,,,V100"]),
                 "p.py": POLICY_HEAD + body,
                 "c.toml": scenario_text({"cluster.nodes": POLICY_CLUSTER}).replace('policy = "fifo"',
                                                                                     'policy = "fifo"\nplacement = "first_fit"')}
        cases.append(Case(f"policy-{key}", ["{d}/s.toml", "--quiet"], files, needle=f"{where}"))
        cases.append(Case(f"policy-{key}-compare", ["compare", "{d}/c.toml", "--quiet", "--workers", "1",
                                                      "--schedulers", "fifo,p.py:P"], files, needle=needle))
    return cases


CASES = toml_syntax_cases() + value_cases() + csv_cases() + reader_cases() + cli_cases() + policy_cases()


def test_corpus_is_large_and_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 200


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, tmp_path, capsys):
    code, err = run_case(case, tmp_path, capsys)
    assert "Traceback" not in err, err
    if case.expect == "ok":
        assert code == 0, err
        return
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert case.needle in lines[0], lines[0]
