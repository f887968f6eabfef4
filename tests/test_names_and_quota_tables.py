"""Names and quota tables as people write them (issue 39, items 8 and 11b): control characters in a
name are refused at validation; invisible and bidirectional characters are shown escaped in every
error line; a quota table with a BOM, a trailing comma or a TOML date reads as the plain one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.config.scenario import load_scenario, scenario_from_table
from simsched.core.errors import InputError, visible

FLEET = [{"name": "c0", "nodes": [{"count": 1, "gpus": 8, "gpu_type": "V100"}]}]
WORKLOAD = {"source": "synthetic", "generator": "simple", "jobs": 3, "gpus": [1], "mean_duration_s": 60.0}


@pytest.mark.parametrize("where", ["scenario", "cluster", "tenant", "gpu_type", "tenant_mix"])
@pytest.mark.parametrize("bad", ["a\x00b", "a\nb", "a\x1b[31mb"])
def test_a_name_with_a_control_character_is_refused_at_validation(tmp_path: Path, where: str, bad: str) -> None:
    raw = {"name": "s", "cluster": [dict(FLEET[0])], "workload": dict(WORKLOAD)}
    if where == "scenario":
        raw["name"] = bad
    elif where == "cluster":
        raw["cluster"][0]["name"] = bad
    elif where == "tenant":
        raw["cluster"][0]["tenant"] = [{"name": bad, "gpus": 2}]
    elif where == "gpu_type":
        raw["gpu_type"] = [{"name": bad, "speedup": 1.0, "memory_gb": 16}]
    else:
        raw["workload"]["tenant_mix"] = {bad: 1.0}
    with pytest.raises(InputError, match="control characters") as caught:
        scenario_from_table(raw, tmp_path / "s.toml")
    assert "\n" not in str(caught.value) and "\x00" not in str(caught.value) and "\x1b" not in str(caught.value)


def test_invisible_and_bidirectional_characters_are_shown_escaped_in_error_lines(tmp_path: Path, capsys) -> None:
    assert visible("b\u200b and \u202eevil") == "b<U+200B> and <U+202E>evil"
    assert str(InputError("tenant b\u200b is not b")) == "tenant b<U+200B> is not b"
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]\n'
                    '[[cluster.tenant]]\nname = "b"\ngpus = 2\n[[cluster.tenant]]\nname = "b\u200b"\ngpus = 2\n'
                    '[workload]\nsource = "synthetic"\ngenerator = "simple"\njobs = 3\ngpus = [1]\n'
                    'mean_duration_s = 60.0\ntenant_mix = { "b\u200b" = 1.0, "c" = 1.0 }\n'
                    '[scheduler]\npolicy = "fifo"\nquota = "strict"\n')
    assert main([str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "\u200b" not in err and "<U+200B>" in err, err


# -- quota tables as spreadsheets write them -------------------------------------------------------------
def _scenario(tmp_path: Path, table: bytes, start: str = "") -> Path:
    (tmp_path / "quotas.csv").write_bytes(table)
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]\n'
                    f'quota_file = "quotas.csv"\n{start}'
                    '[workload]\nsource = "synthetic"\ngenerator = "simple"\njobs = 3\ngpus = [1]\n'
                    'mean_duration_s = 60.0\n[scheduler]\npolicy = "fifo"\nquota = "strict"\n')
    return path


PLAIN = b"date,a,b\n2020-01-01,2,3\n2020-01-02,4,4\n"


@pytest.mark.parametrize("table", [
    b"\xef\xbb\xbf" + PLAIN,  # Excel's "CSV UTF-8"
    b"date,a,b,\n2020-01-01,2,3,\n2020-01-02,4,4,\n",  # a trailing comma on every line
    b"\xef\xbb\xbfdate,a,b,\r\n2020-01-01,2,3,\r\n2020-01-02,4,4,\r\n",  # both, with CRLF
])
def test_a_spreadsheet_quota_table_reads_as_the_plain_one(tmp_path: Path, table: bytes) -> None:
    (tmp_path / "p").mkdir()
    plain = load_scenario(_scenario(tmp_path / "p", PLAIN))
    other = load_scenario(_scenario(tmp_path, table))
    assert other.clusters[0].quota_schedule.tenants == plain.clusters[0].quota_schedule.tenants == ("a", "b")
    assert other.clusters[0].quota_schedule.gpus == plain.clusters[0].quota_schedule.gpus


def test_an_empty_tenant_column_with_values_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="column 3 has no tenant name"):
        load_scenario(_scenario(tmp_path, b"date,a,,b\n2020-01-01,2,1,3\n"))


def test_quota_start_may_be_a_toml_date(tmp_path: Path) -> None:
    as_date = load_scenario(_scenario(tmp_path, PLAIN, "quota_start = 2020-01-02\n"))
    as_text = load_scenario(_scenario(tmp_path, PLAIN, 'quota_start = "2020-01-02"\n'))
    assert as_date.clusters[0].quota_schedule.gpus == as_text.clusters[0].quota_schedule.gpus
    assert as_date.clusters[0].quota_schedule.gpus[0] == (4.0, 4.0)
    with pytest.raises(InputError, match="date and time"):
        load_scenario(_scenario(tmp_path, PLAIN, "quota_start = 2020-01-02T10:00:00\n"))
