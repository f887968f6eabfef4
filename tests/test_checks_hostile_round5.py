"""Classes an independent hostile round against issue 39's fixes found open (each with one test):

- a child's message of the right shape with the wrong payload for its kind (a result of another type
  or a hollow one, text that is no text, an error that is no exception, an unknown kind): an internal
  error before;
- a policy's own interrupt (``raise KeyboardInterrupt`` in its child) taken for the user's Ctrl-C;
- a small message that makes the parent build something huge (``bytearray(2**31)``,
  ``tuple(range(10**9))``, ``DataFrame(None, range, range)``) or an error whose text is exponential;
- ``compare`` with no bound on its runs (``seeds=2**70`` hung in the plan);
- ``--schedulers fifo,,sjf`` dropping the empty name the API refuses;
- a folder where an output file goes: an internal error after the whole run;
- a scenario saved with a UTF-8 BOM refused as "Invalid statement";
- a label's bidirectional or invisible character printed raw in the tables.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import simsched
from simsched.cli.main import main
from simsched.core.errors import InputError
from simsched.runs import messages
from simsched.runs.compare import compare_spec, run_compare
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.single import RunResult

SCENARIO = """name = "tiny"
seed = 1
[[cluster]]
name = "lab"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 4
gpus = [1, 2]
mean_duration_s = 600.0
load = 0.9
[scheduler]
policy = "fifo"
"""

POLICY = """import sys
from simsched.policies import Decision, Start

class Sends:
    sent = False
    def decide(self, view):
        if not self.sent:
            self.sent = True
            sys.stdout.conn.send_bytes({payload!r})
        starts, free = [], list(view.free)
        for job in view.queue:
            for option in job.options:
                nodes = [n for n in view.fleet.groups[option.cluster, option.gpu_type] if free[n] >= option.per_worker]
                if len(nodes) >= job.workers:
                    for n in nodes[:job.workers]:
                        free[n] -= option.per_worker
                    starts.append(Start(job.job_id, tuple(nodes[:job.workers])))
                    break
        return Decision(starts=tuple(starts))

class Interrupts:
    def decide(self, view):
        raise KeyboardInterrupt
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- a message of the right shape with the wrong payload ------------------------------------------------
@pytest.mark.skipif(not ISOLATION, reason="user policies run in a child process only on POSIX")
@pytest.mark.parametrize("message, said", [
    (("ok", 5), "a result simsched does not accept (a int, not a RunResult)"),
    (("ok", RunResult.__new__(RunResult)), "(it holds simsched.runs.single.RunResult, which is not plain data)"),
    (("stdout", 12345), "(its stdout message does not hold a str)"),
    (("error", "not an exception"), "(its error message does not hold a Exception)"),
    (("launch", None), "(it is not a (kind, payload) message)"),
])
def test_a_message_with_the_wrong_payload_for_its_kind_is_a_failed_run(tiny: Path, capsys, message, said) -> None:
    (tiny.parent / "pol.py").write_text(POLICY.format(payload=pickle.dumps(message)))
    assert main([str(tiny), "--policy", str(tiny.parent / "pol.py") + ":Sends", "--quiet"]) == 2
    line = _one_line(capsys)
    assert said in line and "pol.py:Sends (seed 1)" in line, line


# -- a policy's own KeyboardInterrupt is not the user's Ctrl-C --------------------------------------------
@pytest.mark.skipif(not ISOLATION, reason="user policies run in a child process only on POSIX")
def test_a_policy_raising_keyboard_interrupt_is_a_failed_run_not_an_interrupt(tiny: Path, capsys) -> None:
    (tiny.parent / "pol.py").write_text(POLICY.format(payload=b""))
    assert main([str(tiny), "--policy", str(tiny.parent / "pol.py") + ":Interrupts", "--quiet"]) == 2
    assert "and simsched was not interrupted; a policy must return a Decision" in _one_line(capsys)
    assert main(["compare", str(tiny), "--schedulers", f"fifo,{tiny.parent / 'pol.py'}:Interrupts",
                 "--workers", "1", "--quiet"]) == 2
    assert "and simsched was not interrupted" in _one_line(capsys)


# -- a small message that would make the parent build something huge -------------------------------------
@pytest.mark.parametrize("data, said", [
    (b"(S'ok'\ncbuiltins\nbytearray\n(I2000000000\ntRt.", "builtins.bytearray, which is not plain data"),
    (b"(S'ok'\ncbuiltins\ntuple\n(cbuiltins\nrange\n(I1000000000\ntRtRt.", "builtins.tuple, which is not plain data"),
    (b"(S'ok'\ncpandas\nDataFrame\n(Ncbuiltins\nrange\n(I100000\ntRcbuiltins\nrange\n(I2000\ntRS'f8'\ntRt.",
     "pandas.DataFrame, which is not plain data"),
    (b"(S'ok'\ncnumpy\nndarray\n((I100000\nI100000\nttRt.", "numpy.ndarray, which is not plain data"),
])
def test_a_small_message_cannot_make_the_parent_build_something_huge(data: bytes, said: str) -> None:
    with pytest.raises(messages.Refused, match=said):
        messages.loads(data)


class _Pipe:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def recv_bytes(self, limit: int | None = None) -> bytes:
        return self.data


def test_an_error_whose_text_would_be_exponential_or_huge_is_refused() -> None:
    level: list = []
    for _ in range(60):  # 2**60 leaves when printed or walked, a few hundred bytes pickled
        level = [level, level]
    shared = messages.encode(("error", InputError("x")))
    crafted = ("error", (*shared[1][:3], (level,), []))
    huge = ("error", (*shared[1][:3], ("x" * (messages.MAX_ERROR_TEXT + 1),), []))
    for message in (crafted, huge):
        with pytest.raises(messages.Refused, match="an error"):
            messages.receive(_Pipe(pickle.dumps(message, protocol=5)))
    shallow: list = []
    for _ in range(30):  # within the nesting limit: 2**30 values to visit from a few hundred bytes
        shallow = [shallow, shallow]
    with pytest.raises(messages.Refused, match="refers to the same values over and over"):
        messages.receive(_Pipe(pickle.dumps(("ok", shallow), protocol=5)))  # outside an error too
    kind, error = messages.receive(_Pipe(messages.dumps(("error", InputError("a plain line")))))
    assert (kind, str(error)) == ("error", "a plain line")


# -- compare: a bound on its runs ------------------------------------------------------------------------
def test_compare_refuses_more_runs_than_an_experiment_may_plan(tiny: Path, capsys) -> None:
    with pytest.raises(InputError, match=r"compare: 2,000,000 runs \(1 instance\(s\) x 1,000,000 seeds x 2 schedulers\)"):
        simsched.compare(tiny, ["fifo", "sjf"], seeds=1_000_000)
    assert main(["compare", str(tiny), "--schedulers", "fifo,sjf", "--seeds", str(2**70), "--quiet"]) == 2
    assert "is more than 1,000,000; compare fewer seeds" in _one_line(capsys)


def test_an_empty_scheduler_name_is_refused_by_the_flag_as_by_the_api(tiny: Path, capsys) -> None:
    for names in ("fifo,,sjf", "fifo,sjf,"):
        assert main(["compare", str(tiny), "--schedulers", names, "--quiet"]) == 2
        assert "an empty name" in _one_line(capsys)
    with pytest.raises(InputError, match="got ''"):
        simsched.compare(tiny, ["fifo", ""])


# -- a folder where an output file goes ------------------------------------------------------------------
def test_a_folder_where_an_output_file_goes_is_refused_before_the_run(tiny: Path, capsys) -> None:
    out = tiny.parent / "out"
    (out / "summary.json").mkdir(parents=True)
    assert main([str(tiny), "--out", str(out), "--quiet"]) == 2
    assert "summary.json: is a folder where simsched writes a file" in _one_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # nothing run, nothing written


# -- a scenario saved with a BOM -------------------------------------------------------------------------
def test_a_scenario_saved_with_a_utf8_bom_reads_as_without(tiny: Path) -> None:
    bom = tiny.with_name("bom.toml")
    bom.write_bytes(b"\xef\xbb\xbf" + SCENARIO.encode())
    assert simsched.run(bom).summary["avg_jct"] == simsched.run(tiny).summary["avg_jct"]


# -- a label's bidirectional character in the tables -----------------------------------------------------
def test_a_labels_bidirectional_character_is_escaped_in_the_tables(tiny: Path) -> None:
    from simsched.present.compare_tables import to_markdown

    with tiny.open("a") as fh:
        fh.write('[compare.options."s\\u202Ej"]\npolicy = "sjf"\n')
    result = run_compare(compare_spec(tiny, schedulers=["fifo", "s\u202ej"]), workers=1)
    text = to_markdown(result)
    assert "\u202e" not in text and "s<U+202E>j" in text


@pytest.mark.skipif(not ISOLATION, reason="user policies run in a child process only on POSIX")
def test_a_crafted_row_from_a_policys_child_is_a_failed_run_in_compare_and_experiment(tiny: Path, capsys) -> None:
    row = {"instance": "tiny", "seed": 1, "scheduler": "x", "avg_jct": "fast"}
    (tiny.parent / "pol.py").write_text(POLICY.format(payload=pickle.dumps(("ok", row))))
    assert main(["compare", str(tiny), "--schedulers", "fifo,pol.py:Sends", "--workers", "1", "--quiet"]) == 2
    assert "pol.py:Sends (seed 1): its process sent a row that is not a run's (another run's identity)" \
        in _one_line(capsys)
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    spec = tiny.with_name("spec.toml")
    spec.write_text('name = "s"\nscenarios = ["tiny.toml"]\nschedulers = ["fifo", "pol.py:Sends"]\nseeds = 1\n')
    assert main(["experiment", str(spec), "--workers", "1", "--quiet", "--out", str(tiny.parent / "out")]) == 2
    assert "its process sent a result that is not this run's, and its run is refused" in _one_line(capsys)


# -- bad input leaves no output folder behind ----------------------------------------------------------
def test_bad_input_found_after_the_out_check_leaves_no_folder_behind(tiny: Path, capsys) -> None:
    """run and compare check --out before they read their inputs, without making the folder: the run
    makes it when it writes, so a refused --set (or scheduler) leaves nothing in the user's tree."""
    out = tiny.parent / "new" / "out"
    assert main([str(tiny), "--out", str(out), "--set", "workload.load=-1", "--quiet"]) == 2
    assert main(["compare", str(tiny), "--schedulers", "fifo,nope", "--out", str(out), "--quiet"]) == 2
    assert not (tiny.parent / "new").exists()
    assert main([str(tiny), "--out", str(out), "--quiet"]) == 0
    assert (out / "jobs.csv").is_file()
    blocker = tiny.parent / "file"
    blocker.write_text("x")
    assert main([str(tiny), "--out", str(blocker / "out"), "--quiet"]) == 2
    assert "is not a folder" in capsys.readouterr().err
