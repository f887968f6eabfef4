"""The classroom path (issue 25): one name for the machine-count flag, compare takes run's override
flags, the GPU type catalog, validate --policy, "did you mean", full-width piped tables, no ± for one case."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.core.model import builtin_gpu_types
from simsched.present.compare_tables import to_markdown
from simsched.runs.compare import compare_spec, plan, run_compare

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    for name in ("compare_mine.toml", "my_policy.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    shutil.copy(REPO / "tests" / "cheat_policies.py", tmp_path / "cheats.py")
    return tmp_path / "compare_mine.toml"


def test_compare_takes_the_run_override_flags(mine, tmp_path, capsys):
    code = main(["compare", str(mine), "--schedulers", "fifo,sjf", "--seeds", "1", "--jobs-limit", "12",
                 "--gpus-limit", "2", "--placement", "worst_fit", "--no-backfill", "--workers", "1",
                 "--out", str(tmp_path / "out")])
    assert code == 0
    spec = compare_spec(mine, schedulers=["fifo", "sjf"], seeds=1, jobs=12, nodes_per_type=2,
                        scheduler_keys={"placement": "worst_fit", "backfill": False})
    tasks = plan(spec)
    assert all(t.jobs == 12 and t.nodes_per_type == 2 for t in tasks)
    assert all(t.options["placement"] == "worst_fit" and t.options["backfill"] is False for t in tasks)
    result = run_compare(spec, workers=1)
    assert (result.runs["completed"] == 12).all()
    # one case: the mean alone, no "±"
    assert "±" not in to_markdown(result)
    # a bad flag value names the flag
    with pytest.raises(Exception, match="--placement: scheduler.placement: unknown value 'bestfit' "
                                        r"\(did you mean 'best_fit'\?\)"):
        compare_spec(mine, schedulers=["fifo"], scheduler_keys={"placement": "bestfit"})


def test_nodes_per_type_is_the_one_name_and_gpus_limit_its_alias(mine, tmp_path):
    import json

    for flag in ("--nodes-per-type", "--gpus-limit"):
        out = tmp_path / flag.strip("-")
        assert main([str(mine), "--quiet", flag, "1", "--jobs-limit", "5", "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["overrides"]["nodes_per_type"] == 1
        nodes = (out / "nodes.csv").read_text().strip().splitlines()
        assert len(nodes) == 1 + 1  # header + the one V100 node kept


def test_gpu_types_lists_the_catalog(capsys):
    assert main(["gpu-types", "--csv"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows[0] == "name,speedup,memory_gb,source"
    catalog = builtin_gpu_types()
    names = [r.split(",")[0] for r in rows[1:]]
    assert sorted(names) == sorted(catalog)
    assert [catalog[n].speedup for n in names] == sorted((t.speedup for t in catalog.values()), reverse=True)
    assert main(["gpu-types"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in ("V100", "A100", "H100", "K80", "2x12"))


def test_validate_loads_and_type_checks_a_policy_without_running_it(mine, tmp_path, capsys):
    assert main(["validate", str(mine), "--policy", str(tmp_path / "cheats.py") + ":OnlyShort"]) == 0
    out = capsys.readouterr().out
    assert "policy " in out and "OnlyShort loads and defines decide(view)" in out
    bad = tmp_path / "bad.py"
    bad.write_text("class Bad:\n    def decide(self):\n        return None\n")
    assert main(["validate", str(mine), "--policy", f"{bad}:Bad"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: Bad.decide() must take one argument (the view)" in err
    assert main(["validate", str(mine), "--policy", f"{bad}:Nope"]) == 2
    assert "has no 'Nope'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, hint", [
    (["{mine}", "--policy", "fifoo"], "unknown policy 'fifoo' (did you mean 'fifo'?)"),
    (["{mine}", "--placement", "bestfit"], "(did you mean 'best_fit'?)"),
    (["compare", "{mine}", "--schedulers", "fifo,sjff"], "unknown scheduler 'sjff' (did you mean 'sjf'?)"),
    (["comapre", "{mine}"], "unknown subcommand 'comapre' (did you mean 'compare'?)"),
])
def test_did_you_mean(mine, capsys, argv, hint):
    assert main([a.format(mine=mine) for a in argv]) == 2
    assert hint in capsys.readouterr().err


def test_piped_tables_are_not_cut(mine):
    """Through a pipe: the scheduler headers and the title come out whole (no 80-column cut)."""
    names = "fifo,sjf,my_policy.py:MyPolicy,cheats.py:OnlyShort"
    done = subprocess.run([sys.executable, "-m", "simsched", "compare", str(mine), "--schedulers", names,
                           "--seeds", "2", "--jobs-limit", "30", "--workers", "1"],
                          capture_output=True, text=True, cwd=mine.parent, check=True)
    lines = done.stdout.splitlines()
    header = next(line for line in lines if "Metric" in line)
    assert all(name in header for name in ("fifo", "sjf", "my_policy:MyPolicy", "cheats:OnlyShort †"))  # short labels
    assert any("compare_mine: mean ± std over 2 case(s) (1 instance(s) x 2 seed(s))" in line for line in lines)
    assert not any(line.rstrip().endswith("±") for line in lines)  # no cell wrapped after its ±


def test_the_run_warns_before_its_table_and_keeps_the_warning(mine, tmp_path, capsys):
    """The unfinished-jobs warning is printed (stderr) by the time the table is (stdout), and is in summary.json."""
    import json

    out = tmp_path / "run"
    assert main([str(mine), "--policy", "cheats.py:Never", "--jobs-limit", "6", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning: the policy left 6 of 6 feasible jobs unfinished" in captured.err
    assert "Avg JCT (s)" in captured.out and "[+6 unfinished]" in captured.out
    summary = json.loads((out / "summary.json").read_text())
    assert any(w.startswith("the policy left 6 of 6 feasible jobs unfinished") for w in summary["warnings"])
    assert (summary["unfinished"], summary["completed"], summary["counted"]) == (6, 0, 6)
