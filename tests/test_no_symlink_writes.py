"""Files simsched writes in place inside a folder others may write into (issue 39, item 1): the
store lock, the store's appends, the compare journal. A planted symbolic link or a non-regular file
is refused in one line (exit 2) and its target is left byte-identical; files replaced whole take a
fresh temporary name, so a link planted at an old fixed temporary name is never followed."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from simsched.cli.main import main
from simsched.core.atomic import open_own, write_text
from simsched.core.errors import InputError
from simsched.runs import compare
from simsched.runs.experiment import store
from simsched.runs.experiment.lock import LOCK, FolderLock

THESIS = b"\\documentclass{article} my thesis, three years of work\n"


def _thesis(tmp_path: Path) -> Path:
    target = tmp_path / "thesis.tex"
    target.write_bytes(THESIS)
    return target


def test_a_symlinked_lock_is_refused_with_exit_2_and_its_target_is_untouched(tmp_path: Path, capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    (tmp_path / "a.toml").write_text(
        'name = "a"\nseed = 1\n[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]\n'
        '[workload]\nsource = "synthetic"\ngenerator = "simple"\njobs = 5\ngpus = [1]\nmean_duration_s = 60.0\n'
        '[scheduler]\npolicy = "fifo"\n')
    (tmp_path / "spec.toml").write_text('name = "s"\nscenarios = ["a.toml"]\nschedulers = ["fifo"]\nseeds = 1\n'
                                        'metric = "avg_wait"\n')
    target, out = _thesis(tmp_path), tmp_path / "shared"
    out.mkdir()
    (out / LOCK).symlink_to("../thesis.tex")
    code = main(["experiment", str(tmp_path / "spec.toml"), "--out", str(out), "--resume", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "symbolic link" in err[0] and LOCK in err[0], err
    assert target.read_bytes() == THESIS
    assert not (out / "results.csv").exists()


def test_a_dangling_lock_link_creates_no_file_outside_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    (out / LOCK).symlink_to("../planted.txt")
    with pytest.raises(InputError, match="symbolic link"):
        FolderLock(out).acquire()
    assert not (tmp_path / "planted.txt").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_lock_that_is_no_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / LOCK
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        FolderLock(tmp_path).acquire()


def test_every_in_place_writer_refuses_a_planted_link(tmp_path: Path) -> None:
    target = _thesis(tmp_path)
    link = tmp_path / "results.csv"
    link.symlink_to(target)
    with pytest.raises(InputError, match="symbolic link"):
        store._append(link, b"x,y\n")  # the experiment store's one-write appends
    with pytest.raises(InputError, match="symbolic link"):
        open_own(link, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # what the compare journal appends through
    assert target.read_bytes() == THESIS


def test_whole_file_writes_replace_a_planted_link_never_its_target(tmp_path: Path) -> None:
    target = _thesis(tmp_path)
    for name in ("results.csv.tmp", "PARTIAL", "summary.json"):  # the store's old fixed temporary name too
        (tmp_path / name).symlink_to(target)
    store._rewrite(tmp_path / "results.csv", b"a,b\n")
    write_text(tmp_path / "PARTIAL", "interrupted\n")
    write_text(tmp_path / "summary.json", "{}\n")
    assert target.read_bytes() == THESIS
    assert (tmp_path / "results.csv").read_bytes() == b"a,b\n"
    assert not (tmp_path / "PARTIAL").is_symlink() and not (tmp_path / "summary.json").is_symlink()


def test_a_compare_journal_link_planted_mid_run_is_not_followed(tmp_path: Path) -> None:
    target = _thesis(tmp_path)
    journal = tmp_path / compare.JOURNAL
    journal.symlink_to(target)
    fake = compare._Journal.__new__(compare._Journal)
    fake.path, fake.rows, fake.lock = journal, {}, threading.Lock()
    fake.tasks = [SimpleNamespace(instance_name="a", seed=1, scheduler="fifo")]
    with pytest.raises(InputError, match="symbolic link"):
        fake.add(0, {})
    assert target.read_bytes() == THESIS
