"""Issue 39, the output-folder classes of the fourth hostile round: a hard-linked file simsched writes
in place is refused (its other name is left byte-identical); a sub-folder planted as a link inside an
output folder (jobs/, plots/) is refused before anything runs and nothing lands outside; the API's
``compare(out=<a file>)`` is one InputError; a second comparison into a folder leaves nothing of the
first one's per-job tables or figures; a closed pipe after the rich tables ends with exit 141, as
``--json`` does."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import simsched
from simsched.cli.main import PIPE_EXIT, main
from simsched.core.atomic import open_own, subfolder
from simsched.core.errors import InputError
from simsched.evo import numba_cache
from simsched.present.report import Console
from simsched.runs.experiment import store
from simsched.runs.experiment.lock import LOCK, FolderLock

REPO = Path(__file__).resolve().parents[1]
THESIS = b"\\documentclass{article} my thesis, three years of work\n"
ONE = """
name = "one"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 8
gpus = [1, 2]
mean_duration_s = 60.0
[scheduler]
policy = "fifo"
"""
SPEC = 'name = "s"\nscenarios = ["one.toml"]\nschedulers = ["fifo", "sjf"]\nseeds = 1\nrecord = ["jobs"]\n'


@pytest.fixture
def one(tmp_path: Path) -> Path:
    path = tmp_path / "one.toml"
    path.write_text(ONE)
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- a hard link written in place ---------------------------------------------------------------------
def test_a_hard_linked_lock_is_refused_with_exit_2_and_its_other_name_is_untouched(one: Path, capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    (one.parent / "spec.toml").write_text(SPEC)
    thesis, out = one.parent / "thesis.tex", one.parent / "shared"
    thesis.write_bytes(THESIS)
    out.mkdir()
    os.link(thesis, out / LOCK)  # ln ../thesis.tex shared/.simsched.lock: the same file, a second name
    code = main(["experiment", str(one.parent / "spec.toml"), "--out", str(out), "--quiet", "--workers", "1"])
    line = _one_line(capsys)
    assert code == 2 and LOCK in line and "2 hard links" in line, line
    assert thesis.read_bytes() == THESIS
    assert not (out / "results.csv").exists()


def test_a_resume_refuses_a_hard_linked_results_csv_before_any_run(one: Path, capsys) -> None:
    """`cp -al store snapshot`: appending to the store's results.csv would change the snapshot's too."""
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    spec = one.parent / "spec.toml"
    spec.write_text(SPEC)
    out = one.parent / "store"
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    snapshot = one.parent / "snapshot.csv"
    os.link(out / "results.csv", snapshot)
    before = snapshot.read_bytes()
    jobs = sorted(p.name for p in (out / "jobs").iterdir())
    spec.write_text(SPEC.replace("seeds = 1", "seeds = 2"))  # two more runs to append
    capsys.readouterr()
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1", "--resume"]) == 2
    line = _one_line(capsys)
    assert "results.csv" in line and "2 hard links" in line, line
    assert snapshot.read_bytes() == before
    assert sorted(p.name for p in (out / "jobs").iterdir()) == jobs  # refused before any run


@pytest.mark.parametrize("flags", [os.O_RDWR | os.O_CREAT, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                   os.O_WRONLY | os.O_TRUNC])
def test_every_in_place_writer_refuses_a_hard_link_before_a_byte_changes(tmp_path: Path, flags: int) -> None:
    thesis = tmp_path / "thesis.tex"
    thesis.write_bytes(THESIS)
    (tmp_path / "shared").mkdir()
    linked = tmp_path / "shared" / "results.csv"
    os.link(thesis, linked)
    with pytest.raises(InputError, match="hard links"):
        open_own(linked, flags)  # O_TRUNC is applied only after the checks
    with pytest.raises(InputError, match="hard links"):
        store._append(linked, b"x,y\n")  # the experiment store's appends
    assert thesis.read_bytes() == THESIS
    os.unlink(linked)
    linked.write_bytes(b"old\n")
    fd = open_own(linked, flags)  # a file with one name is opened as asked, truncated with O_TRUNC
    os.close(fd)
    assert linked.read_bytes() == (b"" if flags & os.O_TRUNC else b"old\n")


# -- a sub-folder planted as a link ---------------------------------------------------------------------
def _plant(out: Path, name: str) -> Path:
    """OUT/NAME -> ../outside, with a file there that must survive."""
    outside = out.parent / "outside"
    outside.mkdir()
    (outside / "index.csv").write_bytes(THESIS)
    out.mkdir(exist_ok=True)
    (out / name).symlink_to("../outside")
    return outside


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["index.csv"]
    assert (outside / "index.csv").read_bytes() == THESIS


@pytest.mark.parametrize("case", ["run --plots", "compare --keep-jobs", "compare plots/", "experiment jobs/"])
def test_a_planted_sub_folder_link_is_refused_before_anything_runs(one: Path, capsys, case: str) -> None:
    out = one.parent / "out"
    if case == "run --plots":
        pytest.importorskip("matplotlib")
        outside = _plant(out, "plots")
        argv = [str(one), "--out", str(out), "--plots", "--quiet"]
        written = out / "summary.json"
    elif case.startswith("compare"):
        outside = _plant(out, "jobs" if "jobs" in case else "plots")
        argv = ["compare", str(one), "--schedulers", "fifo,sjf", "--workers", "1", "--out", str(out), "--quiet",
                "--keep-jobs" if "jobs" in case else "--seeds=1"]
        written = out / "compare_runs.partial.jsonl"  # the journal: made as the runs start
    else:
        pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
        (one.parent / "spec.toml").write_text(SPEC)
        outside = _plant(out, "jobs")
        argv = ["experiment", str(one.parent / "spec.toml"), "--out", str(out), "--quiet", "--workers", "1"]
        written = out / "plan.csv"
    assert main(argv) == 2
    line = _one_line(capsys)
    assert "is a symbolic link" in line and str(out) in line, line
    assert not written.exists()  # refused before any run
    _untouched(outside)


def test_the_plot_command_refuses_a_planted_plots_link(one: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = one.parent / "out"
    assert main([str(one), "--out", str(out), "--quiet"]) == 0
    outside = _plant(out, "plots")
    assert main(["plot", str(out)]) == 2
    assert "is a symbolic link" in _one_line(capsys)
    _untouched(outside)


def test_the_writers_themselves_refuse_a_link_planted_after_the_checks(tmp_path: Path) -> None:
    """The check at write time (a link planted while the runs went on): the experiment store's jobs/."""
    out = tmp_path / "out"
    outside = _plant(out, "jobs")
    results = store.ResultStore(out, (), "csv")
    results.open(resume=False)
    with pytest.raises(InputError, match="symbolic link"):
        results.add({"run_id": "r1", "scheduler": "fifo"}, {}, {"avg_jct": 1.0}, jobs=pd.DataFrame({"a": [1]}))
    _untouched(outside)
    (out / "plain").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        subfolder(out / "plain")
    assert subfolder(out / "made").is_dir() and not (out / "made").is_symlink()


# -- the API's compare(out=...) ---------------------------------------------------------------------
def test_api_compare_into_a_file_or_a_planted_link_is_one_input_error(one: Path) -> None:
    with pytest.raises(InputError, match=r"^simsched\.compare: out .*one\.toml: exists and is not a folder"):
        simsched.compare(one, ["fifo"], workers=1, out=one)
    outside = _plant(one.parent / "out", "jobs")
    with pytest.raises(InputError, match="symbolic link"):
        simsched.compare(one, ["fifo"], workers=1, out=one.parent / "out", keep_jobs=True)
    _untouched(outside)
    (one.parent / "held").mkdir()
    with FolderLock(one.parent / "held"), pytest.raises(InputError, match="is in use by"):
        simsched.compare(one, ["fifo"], workers=1, out=one.parent / "held")


# -- one comparison per folder ----------------------------------------------------------------------
def test_a_second_compare_into_a_folder_leaves_nothing_of_the_first(one: Path) -> None:
    out = one.parent / "out"
    assert main(["compare", str(one), "--schedulers", "fifo,sjf,hrrn", "--workers", "1", "--out", str(out),
                 "--keep-jobs", "--quiet"]) == 0
    assert sorted(p.name for p in (out / "jobs").iterdir()) == ["0.csv", "1.csv", "2.csv", "index.csv"]
    (out / "plots").mkdir()
    for name in ("jct_cdf.png", "metrics.svg", "mine.txt"):  # the first one's figures, and a file of the user's
        (out / "plots" / name).write_text("old")
    (out / "report.html").write_text("old")
    # fewer runs, per-job tables kept: the first one's third table goes
    assert main(["compare", str(one), "--schedulers", "sjf", "--workers", "1", "--out", str(out),
                 "--keep-jobs", "--quiet"]) == 0
    assert sorted(p.name for p in (out / "jobs").iterdir()) == ["0.csv", "index.csv"]
    assert list(pd.read_csv(out / "jobs" / "index.csv")["scheduler"]) == ["sjf"]
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["mine.txt"]
    assert not (out / "report.html").exists()
    # no per-job tables: none of the earlier ones stays for `plot` to pair with this comparison's runs
    assert main(["compare", str(one), "--schedulers", "hrrn", "--workers", "1", "--out", str(out), "--quiet"]) == 0
    assert not (out / "jobs").exists()
    assert list(pd.read_csv(out / "compare_runs.csv")["scheduler"]) == ["hrrn"]


# -- a closed pipe after the rich tables ------------------------------------------------------------------
def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_compare_tables_into_a_closed_pipe_end_quietly_with_141(one: Path) -> None:
    child = subprocess.Popen([sys.executable, "-m", "simsched", "compare", str(one), "--schedulers", "fifo",
                              "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    child.stdout.close()  # `| true`: the reader is gone before the tables are printed
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == PIPE_EXIT
    assert err.strip() == "", err


def test_the_console_raises_a_closed_pipe_for_the_command_line_to_end(tmp_path: Path) -> None:
    class Gone:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):  # rich's own Console exits with SystemExit(1) here
        Console(file=Gone()).print("a table")


def test_no_module_prints_through_riches_own_console() -> None:
    """Every console the command line prints through is simsched.present.report.Console."""
    offenders = []
    for path in (REPO / "simsched").rglob("*.py"):
        if path == REPO / "simsched" / "present" / "report.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "rich.console" \
                    and any(alias.name == "Console" for alias in node.names):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


# -- numba's fallback cache folder in the shared temporary folder ------------------------------------------
def test_numba_does_not_cache_into_a_temporary_folder_someone_else_could_write(monkeypatch, tmp_path: Path) -> None:
    """numba loads what it cached (pickles): /tmp/simsched-numba-UID made by someone else is not used."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba_cache.tempfile, "gettempdir", lambda: str(tmp_path))
    real = numba_cache._writable  # only the temporary folder is writable: the fallback is taken
    monkeypatch.setattr(numba_cache, "_writable", lambda folder: str(folder).startswith(str(tmp_path)) and real(folder))
    planted = tmp_path / f"simsched-numba-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)  # as a folder made in /tmp by someone else is (or a link to one)
    import numba.core.config as config

    before = config.CACHE_DIR
    try:
        chosen = numba_cache.ensure_writable_cache()
    finally:
        config.CACHE_DIR = before
        os.environ.pop("NUMBA_CACHE_DIR", None)
    assert chosen is not None and Path(chosen) != planted and Path(chosen).parent == tmp_path
    assert os.stat(chosen).st_mode & 0o077 == 0
    planted.rmdir()
    chosen_again = None
    try:  # this user's own folder, made 0700, is used as before
        chosen_again = numba_cache.ensure_writable_cache()
    finally:
        config.CACHE_DIR = before
        os.environ.pop("NUMBA_CACHE_DIR", None)
    assert chosen_again == str(planted) and os.stat(planted).st_mode & 0o777 == 0o700
