"""Unit checks of the reliability layer (issue 13): --debug, unreadable files, atomic writes,
the numba cache fallback, skipped rows in the table, policy errors through worker processes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from simsched.cli.main import main
from simsched.core import atomic
from tests.test_fuzz_inputs import jobs_csv, scenario_text

RAISING_POLICY = ("from simsched.policies import Decision\n\n\nclass P:\n    def decide(self, view):\n"
                  "        return helper()\n\n\ndef helper():\n    return 1 / 0\n")


def _folder(tmp_path: Path, **overrides) -> Path:
    (tmp_path / "s.toml").write_text(scenario_text(overrides))
    (tmp_path / "jobs.csv").write_text(jobs_csv())
    (tmp_path / "p.py").write_text(RAISING_POLICY)
    return tmp_path


def test_policy_error_names_innermost_line_and_debug_shows_traceback(tmp_path, capsys):
    folder = _folder(tmp_path, **{"scheduler.policy": "p.py:P"})
    assert main([str(folder / "s.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {folder / 'p.py'}:10: P.decide raised ZeroDivisionError: division by zero"
    assert main([str(folder / "s.toml"), "--quiet", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "return 1 / 0" in err
    assert err.strip().splitlines()[-1].startswith("error: ") and "p.py:10" in err.strip().splitlines()[-1]


def test_policy_error_through_worker_processes_is_one_line(tmp_path, capsys):
    folder = _folder(tmp_path)
    code = main(["compare", str(folder / "s.toml"), "--schedulers", "fifo,p.py:P", "--seeds", "2",
                 "--workers", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "_RemoteTraceback" not in err and "Traceback" not in err
    assert err.strip() == f"error: {folder / 'p.py'}:10: P.decide raised ZeroDivisionError: division by zero"


def _deny(monkeypatch, target: Path) -> None:
    """Make opening ``target`` fail as it would without read permission (tests may run as root)."""
    original = Path.open

    def guarded(self, *args, **kwargs):
        if Path(self).resolve() == target.resolve():
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", guarded)


@pytest.mark.parametrize("name", ["s.toml", "jobs.csv"])
def test_unreadable_file_is_one_line(tmp_path, capsys, monkeypatch, name):
    folder = _folder(tmp_path)
    _deny(monkeypatch, folder / name)
    assert main([str(folder / "s.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {folder / name}: cannot read the file (Permission denied)"


def test_internal_error_is_one_line_with_exit_1(tmp_path, capsys, monkeypatch):
    import simsched.runs.single

    folder = _folder(tmp_path)
    monkeypatch.setattr(simsched.runs.single, "collect", lambda *a, **k: {}["boom"])
    assert main([str(folder / "s.toml"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("internal error: KeyError: 'boom'") and "--debug" in err
    assert len(err.splitlines()) == 1


def test_atomic_write_leaves_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "x.csv"
    target.write_text("old\n")

    def failing(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_with(target, failing)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"]  # no temporary left behind
    atomic.write_text(target, "new\n")
    assert target.read_text() == "new\n"


def test_partial_marker_round_trip(tmp_path):
    atomic.mark_partial(tmp_path, "interrupted run")
    assert atomic.is_partial(tmp_path) and (tmp_path / atomic.MARKER).read_text() == "interrupted run\n"
    atomic.clear_partial(tmp_path)
    assert not atomic.is_partial(tmp_path)


def test_check_out_dir_rejects_files_and_unwritable_places(tmp_path):
    from simsched.core.errors import InputError

    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="exists and is not a folder"):
        atomic.check_out_dir(tmp_path / "f")
    with pytest.raises(InputError, match="cannot create the folder"):
        atomic.check_out_dir("/proc/simsched-not-here")
    assert atomic.check_out_dir(tmp_path / "new" / "deep").is_dir()
    with pytest.raises(InputError, match="is a folder"):
        atomic.check_out_file(tmp_path)
    with pytest.raises(InputError, match="not writable"):
        atomic.check_out_file("/proc/learned.json")


def test_numba_cache_falls_back_to_a_temporary_folder(monkeypatch, tmp_path):
    from simsched.evo import numba_cache

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba_cache.tempfile, "gettempdir", lambda: str(tmp_path))
    real = numba_cache._writable
    monkeypatch.setattr(numba_cache, "_writable", lambda folder: str(folder).startswith(str(tmp_path)) and real(folder))
    import numba.core.config as config

    before = config.CACHE_DIR
    try:
        chosen = numba_cache.ensure_writable_cache()
        assert chosen is not None and chosen.startswith(str(tmp_path))
        assert os.environ["NUMBA_CACHE_DIR"] == chosen and config.CACHE_DIR == chosen
    finally:
        config.CACHE_DIR = before
        os.environ.pop("NUMBA_CACHE_DIR", None)
    # a writable package folder or a user's own setting is left alone
    monkeypatch.setattr(numba_cache, "_writable", lambda folder: True)
    assert numba_cache.ensure_writable_cache() is None
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere")
    assert numba_cache.ensure_writable_cache() is None


def test_metric_table_shows_skipped_rows(tmp_path):
    import simsched
    from simsched.present.report import metric_table

    (tmp_path / "s.toml").write_text(scenario_text())
    (tmp_path / "jobs.csv").write_text(jobs_csv(["a,0,10,1,,,,,", "b,x,10,1,,,,,", "c,1,10,0,,,,,"]))
    result = simsched.run(tmp_path / "s.toml")
    console = Console(file=io.StringIO(), width=120)
    console.print(metric_table(result.summary))
    text = " ".join(console.file.getvalue().split())  # the caption wraps at the table's width
    assert "Skipped input rows" in text and "1 bad submit" in text and "1 non-positive gpus" in text
    clean = Console(file=io.StringIO(), width=120)
    (tmp_path / "jobs.csv").write_text(jobs_csv())
    clean.print(metric_table(simsched.run(tmp_path / "s.toml").summary))
    assert "Skipped" not in clean.file.getvalue()


def test_interval_rounds_estimate_names_the_key(tmp_path, capsys):
    folder = _folder(tmp_path, **{"scheduler.interval_s": 1e-9})
    assert main([str(folder / "s.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "scheduler.interval_s = 1e-09" in err and "periodic decision rounds" in err and "limit 1e+07" in err


def test_a_missing_dependency_says_how_to_install(monkeypatch, capsys):
    """Run from a checkout without `pip install -e .`: one line naming the package, not 'a bug'."""
    import simsched.cli.main as cli

    def missing(argv):
        raise ModuleNotFoundError("No module named 'rich'", name="rich")

    monkeypatch.setattr(cli, "run_command", missing)
    assert cli.main(["s.toml"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: the package 'rich' is not installed; install simsched with its dependencies first, "
                   "into the python that runs it: python -m pip install -e .  (optional extras: docs in README.md)"]
