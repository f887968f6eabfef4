"""Issue 37 item 9, "Newcomer polish": each was a real stumble of a first-time user."""

from __future__ import annotations

from simsched.cli.main import main
from tests.helpers import write_scenario

CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 4, gpus = 8, gpu_type = "V100" }]'
JOBS = ["0,0,100,8,,,,,", "1,10,50,16,,,,,", "2,20,5,1,,,,,"]


def _scenario(folder, name="scenario.toml", extra=""):
    path = write_scenario(folder, clusters=CLUSTER, scheduler='policy = "fifo"', jobs=JOBS, extra=extra)
    return path.rename(folder / name)


def test_validate_prints_the_path_as_typed(tmp_path, monkeypatch, capsys):
    # simsched prints the argument untouched; a viewer that capitalises the first character of an
    # output (as some notebook and agent front-ends do) showed "My.toml" for "my.toml"
    monkeypatch.chdir(tmp_path)
    _scenario(tmp_path, "my.toml")
    (tmp_path / "sub").mkdir()
    _scenario(tmp_path / "sub", "mY.Toml")
    assert main(["validate", "my.toml"]) == 0
    assert capsys.readouterr().out.startswith("my.toml: ok: ")
    assert main(["validate", "./sub/mY.Toml"]) == 0
    assert capsys.readouterr().out.startswith("./sub/mY.Toml: ok: ")
