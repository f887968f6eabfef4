"""GPU speeds as training sees them (issue 38): the training basis is the default and cites a source
per type, ``speed_basis = "fp32"`` keeps the datasheet ratios, the course keeps its table, and a job
with a ``model`` runs at that model's measured speed on each type (hand-checked against Gavel's
and Lambda's published throughputs)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.cli.main import main
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.core.model import (
    ClusterSpec,
    Fleet,
    NodeGroup,
    builtin_gpu_types,
    model_speed_table,
    speed_factor,
    type_speed,
)
from simsched.workloads.registry import GENERATORS, Params
from tests.helpers import write_scenario

REPO = Path(__file__).resolve().parents[1]

#: the catalog before issue 38 (FP32 datasheet TFLOPS / 15.7), copied from simsched/data/gpu_types.toml at cac2e99
FP32_BEFORE = {"V100": 1.0, "V100M16": 1.0, "V100M32": 1.0, "K80": 0.278, "M60": 0.307, "P40": 0.764,
               "P100": 0.592, "T4": 0.516, "A10": 1.987, "A100": 1.242, "A100M80": 1.242, "H100": 4.268,
               "MISC": 0.278, "2x12": 0.592, "8x24": 0.764}

#: Gavel's ResNet-50 steps/s alone on one GPU (scheduler/simulation_throughputs.json, "null" entries at
#: stanford-futuredata/gavel@c4fa400), batch sizes 16, 32, 64, 128: (K80, P100, V100)
GAVEL_RESNET50 = [(2.3005199880283542, 9.053, 11.3961), (1.236568777004088, 4.8883, 7.7873),
                  (0.6190282202246573, 2.6195, 4.3948), (0.3472236920519382, 1.5844, 2.4968)]
#: Lambda's resnet50 column (pytorch-train-throughput-fp16.csv at lambdal/deeplearning-benchmark@0551cb7)
LAMBDA_RESNET50 = {"V100": 833.0, "A10": 638.0, "A100": 1396.0, "A100M80": 1582.0, "H100": 2616.0}
#: Baidu DeepBench's training kernels, mixed precision (results/train/DeepBench_NV_T4.xlsx and
#: DeepBench_NV_V100.xlsx at baidu-research/DeepBench@da81ba7): per application, the geometric mean over
#: its GEMM and convolution kernels of V100 time / T4 time (158, 23, 8, 4, 30, 10 and 19 kernels)
DEEPBENCH_T4 = {"DeepSpeech": 0.447, "Face Recognition": 0.583, "Language Modelling": 0.479, "OCR": 0.280,
                "Resnet": 0.433, "Speaker ID": 0.420, "Vision": 0.360}


def test_the_default_basis_ranks_a100_above_a10_and_v100_with_a_source_per_row(capsys):
    assert main(["gpu-types", "--csv"]) == 0
    rows = [line.split(",", 3) for line in capsys.readouterr().out.strip().splitlines()[1:]]
    names = [r[0] for r in rows]
    assert names.index("A100") < names.index("V100") and names.index("A100") < names.index("A10")
    assert names.index("H100") < names.index("A100")
    assert all(r[3].strip() for r in rows)
    speeds = {r[0]: float(r[1]) for r in rows}
    assert speeds["A100"] == 2.205 and speeds["A10"] == 0.892 and speeds["H100"] == 4.417
    assert speeds["K80"] == 0.276 and speeds["P100"] == 0.859


def test_basis_fp32_shows_the_old_column(capsys):
    assert main(["gpu-types", "--basis", "fp32", "--csv"]) == 0
    rows = [line.split(",", 3) for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert {r[0]: float(r[1]) for r in rows} == FP32_BEFORE
    assert {n: t.speedup for n, t in builtin_gpu_types("fp32").items()} == FP32_BEFORE


def test_the_model_table_is_listed(capsys):
    assert main(["gpu-types", "--models", "--csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "model,K80,P100,V100,A10,A100,A100M80,H100,source"
    assert any(line.startswith("resnet50,0.1583,0.659,1,0.7659,1.6759,1.8992,3.1405,") for line in out)


def test_a_scenario_and_a_basis_together_are_refused(capsys):
    assert main(["gpu-types", str(REPO / "scenarios" / "philly_hetero.toml"), "--basis", "fp32"]) == 2


@pytest.mark.parametrize("name", ["K80", "P100", "A10", "A100", "A100M80", "H100"])
def test_a_type_average_is_the_geometric_mean_of_its_model_column(name):
    column = [row[name] for row in model_speed_table().values() if name in row]
    assert builtin_gpu_types()[name].speedup == round(statistics.geometric_mean(column), 3)


def test_the_resnet50_row_is_gavels_and_lambdas_measurements():
    row = model_speed_table()["resnet50"]
    k80 = statistics.geometric_mean([k / v for k, _, v in GAVEL_RESNET50])
    p100 = statistics.geometric_mean([p / v for _, p, v in GAVEL_RESNET50])
    assert row["K80"] == pytest.approx(k80, abs=5e-5) and row["P100"] == pytest.approx(p100, abs=5e-5)
    for name in ("A10", "A100", "A100M80", "H100"):
        assert row[name] == pytest.approx(LAMBDA_RESNET50[name] / LAMBDA_RESNET50["V100"], abs=5e-5)


def test_t4_is_deepbenchs_kernels_and_p40_m60_keep_their_datasheet_ratio():
    training, fp32 = builtin_gpu_types(), builtin_gpu_types("fp32")
    assert training["T4"].speedup == round(statistics.geometric_mean(DEEPBENCH_T4.values()), 3) == 0.42
    assert "DeepBench" in training["T4"].source and fp32["T4"].speedup == FP32_BEFORE["T4"]
    for name in ("P40", "8x24", "M60"):
        assert training[name].speedup == fp32[name].speedup == FP32_BEFORE[name]
        assert "no training measurement with a V100 baseline" in training[name].source


ONE_OF_EACH = ('[[cluster]]\nname = "c0"\nnodes = [' + ", ".join(
    f'{{ count = 1, gpus = 2, gpu_type = "{t}" }}' for t in ("K80", "P100", "V100", "A10", "A100", "H100")) + "]")


def test_a_resnet50_job_runs_at_resnet50s_measured_speed_on_each_type(tmp_path):
    """Hand test: 100 s of V100 work, one job forced onto each type (allowed_types); every job alone
    on its node, so it ends at 100 / speed, speed = the resnet50 row of the matrix. A job without a
    model runs at the type's average; a job measured on a K80 (reference K80) runs on a V100 at
    1 / 0.1583 of the K80 speed."""
    types = ("K80", "P100", "V100", "A10", "A100", "H100")
    rows = [f"r_{t},0,100,1,,,,,V100,{t},resnet50" for t in types]
    rows += ["plain_A100,0,100,1,,,,,V100,A100,", "k80ref,0,100,1,,,,,K80,V100,resnet50"]
    path = write_scenario(tmp_path, clusters=ONE_OF_EACH, jobs=rows,
                          header="job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type,"
                                 "allowed_types,model",
                          scheduler='policy = "fifo"\nheterogeneous = true')
    jobs = {r.job_id: r for r in simsched.run(path).jobs.itertuples()}
    expected = {"K80": 0.1583, "P100": 0.659, "V100": 1.0, "A10": 0.7659, "A100": 1.6759, "H100": 3.1405}
    for t in types:
        assert jobs[f"r_{t}"].gpu_type == t and jobs[f"r_{t}"].start == 0
        assert jobs[f"r_{t}"].end == pytest.approx(100 / expected[t], rel=1e-12)
    assert jobs["plain_A100"].end == pytest.approx(100 / 2.205, rel=1e-12)
    assert jobs["k80ref"].gpu_type == "V100"
    assert jobs["k80ref"].end == pytest.approx(100 * 0.1583, rel=1e-12)


def test_best_fit_reads_the_per_job_speed_from_the_view(tmp_path):
    """Options are ordered by the job's own speed: Gavel measured Recommendation faster on a P100
    (2.1685) than on a V100, so best_fit puts it there; a job without a model takes the V100."""
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }, ' \
               '{ count = 1, gpus = 1, gpu_type = "P100" }]'
    rows = ["rec,0,100,1,,,,,V100,recommendation", "other,1,100,1,,,,,V100,"]
    path = write_scenario(tmp_path, clusters=clusters, jobs=rows,
                          header="job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type,model",
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nheterogeneous = true')
    jobs = {r.job_id: r for r in simsched.run(path).jobs.itertuples()}
    assert jobs["rec"].gpu_type == "P100" and jobs["rec"].end == pytest.approx(100 / 2.1685, rel=1e-12)
    assert jobs["other"].gpu_type == "V100" and jobs["other"].end == pytest.approx(101, rel=1e-12)


def test_the_course_scenarios_keep_the_course_table():
    for path in sorted((REPO / "scenarios" / "course").glob("*.toml")):
        scenario = load_scenario(path)
        assert scenario.speed_basis == "fp32", path.name
        assert {n: t.speedup for n, t in scenario.gpu_types.items()} == FP32_BEFORE
    # the course README's one figure: a job of 10 minutes on a V100 takes about 20 on a T4
    assert 1 / FP32_BEFORE["T4"] == pytest.approx(2, abs=0.07)


def test_model_mix_gives_models_to_jobs_without_one(tmp_path):
    rows = [f"j{i},{i},10,1,,,,,V100,{'lm' if i == 0 else ''}" for i in range(40)]
    path = write_scenario(tmp_path, clusters=ONE_OF_EACH, jobs=rows,
                          header="job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type,model",
                          workload='source = "csv"\npath = "jobs.csv"\nmodel_mix = { resnet50 = 1, a3c = 1 }',
                          scheduler='policy = "fifo"\nheterogeneous = true')
    first = simsched.run(path)
    again = simsched.run(path)
    assert first.jobs.equals(again.jobs)
    # each job's run time is 10 / its model's speed on the type it got: lm for j0, resnet50 or a3c for the others
    table = model_speed_table()
    for r in first.jobs.itertuples():
        speed = 10 / (r.end - r.start)
        candidates = ("lm",) if r.job_id == "j0" else ("resnet50", "a3c")
        assert any(math.isclose(speed, type_speed(builtin_gpu_types()[r.gpu_type], m), rel_tol=1e-9)
                   for m in candidates), (r.job_id, r.gpu_type, speed)
    assert {"resnet50", "a3c"} <= {m for m in table}


@pytest.mark.parametrize("workload, message", [
    ('model_mix = { resnet51 = 1 }', "workload.model_mix: unknown model 'resnet51'"),
    ('model_mix = { resnet50 = -1 }', "workload.model_mix: must be a table of model = weight"),
])
def test_a_bad_model_mix_is_one_clear_line(tmp_path, capsys, workload, message):
    path = write_scenario(tmp_path, clusters=ONE_OF_EACH, jobs=["a,0,10,1,,,,,V100"],
                          workload=f'source = "csv"\npath = "jobs.csv"\n{workload}', scheduler='policy = "fifo"')
    assert main([str(path), "--quiet", "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


def test_an_unknown_model_in_a_trace_is_a_bad_row(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=ONE_OF_EACH, jobs=["a,0,10,1,,,,,V100,resnet51"],
                          header="job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type,model",
                          workload='source = "csv"\npath = "jobs.csv"\nstrict = true', scheduler='policy = "fifo"')
    assert main([str(path), "--quiet", "--out", str(tmp_path / "out")]) == 2
    assert "unknown model: 'resnet51'" in capsys.readouterr().err


def test_an_unknown_basis_is_refused(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=ONE_OF_EACH, jobs=["a,0,10,1,,,,,V100"], extra='speed_basis = "fp16"',
                          scheduler='policy = "fifo"')
    assert main([str(path), "--quiet", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "speed_basis" in err and "training" in err and "fp32" in err


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(sorted(model_speed_table())), st.sampled_from(sorted(builtin_gpu_types())),
       st.sampled_from(sorted(builtin_gpu_types())), st.sampled_from(sorted(builtin_gpu_types())))
def test_per_model_speed_factors_compose(model, a, b, c):
    """Moving a job's work from type a to b to c is the same as from a to c (one speed per type)."""
    types = builtin_gpu_types()
    via = speed_factor(types[b], types[a], model) * speed_factor(types[c], types[b], model)
    assert via == pytest.approx(speed_factor(types[c], types[a], model), rel=1e-12)
    assert speed_factor(types[a], types[a], model) == 1.0


def test_an_unknown_model_on_a_job_spec_is_an_input_error():
    with pytest.raises(InputError, match="not in the model table"):
        type_speed(builtin_gpu_types()["V100"], "resnet51")


# -- the gavel generator (Gavel's continuous-single job mix) ------------------------------------------

GAVEL_FLEET = Fleet((ClusterSpec("gavel", (NodeGroup(9, 4, "V100"), NodeGroup(9, 4, "P100"),
                                           NodeGroup(9, 4, "K80"))),), builtin_gpu_types())


def _gavel(options: dict, seed: int = 0):
    return GENERATORS["gavel"](Params(options, "workload"), np.random.default_rng(seed), GAVEL_FLEET)


def test_gavel_jobs_follow_gavels_generator():
    table = _gavel({"jobs": 4000, "jobs_per_hour": 6.0})
    assert len(table) == 4000 and (table["gpus"] == 1).all() and (table["gpu_type"] == "V100").all()
    # run times: 10^U(1.5, 3) minutes with probability 0.8, else 10^U(3, 4)
    minutes = table["duration"] / 60
    assert minutes.min() >= 10**1.5 - 1e-3 and minutes.max() <= 10**4 + 1e-3
    long_share = float((minutes > 1000).mean())
    assert 0.17 < long_share < 0.23
    # models in proportion to Gavel's 26 templates (ResNet-50 has 4 of them, A3C 1)
    shares = table["model"].value_counts(normalize=True)
    assert shares["resnet50"] == pytest.approx(4 / 26, abs=0.02) and shares["a3c"] == pytest.approx(1 / 26, abs=0.01)
    assert (table["tenant"] == table["model"]).all()
    # Poisson arrivals at 6 an hour: the mean gap is 600 s
    gaps = np.diff(table["submit"].to_numpy())
    assert gaps.mean() == pytest.approx(600, rel=0.06) and table["submit"].iloc[0] == 0


def test_gavel_is_seeded_and_its_options_are_checked():
    assert _gavel({"jobs": 50}, seed=4).equals(_gavel({"jobs": 50}, seed=4))
    assert not _gavel({"jobs": 50}, seed=4).equals(_gavel({"jobs": 50}, seed=5))
    assert (_gavel({"jobs": 20, "tenants": "job"})["tenant"] == _gavel({"jobs": 20})["job_id"]).all()
    assert _gavel({"jobs": 20, "tenants": "none"})["tenant"].isna().all()
    with pytest.raises(InputError, match="load.*either"):
        _gavel({"load": 0.5, "jobs_per_hour": 3.0})
    with pytest.raises(InputError, match="tenants"):
        _gavel({"tenants": "user"})
