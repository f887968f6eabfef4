# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # simsched in a notebook: a tutorial
#
# This notebook walks the usual path of a scheduling study with simsched's Python API
# (docs/notebook.md describes every call):
#
# 1. run a scenario and read its metrics,
# 2. look at the jobs as a pandas DataFrame,
# 3. compare three schedulers over several seeds, with confidence intervals,
# 4. write a scheduling policy here, in a cell, and run it,
# 5. plot.
#
# It runs in well under a minute: every run keeps the first 600 jobs (`jobs_limit`) of
# `course/philly`, a shipped example (`simsched examples` lists them): Philly-like jobs on
# 5 machines of each of Philly's two node classes (50 GPUs), loaded so that almost every
# job queues and the order of the queue matters.
#
# This file is kept in two forms, `docs/tutorial.py` (jupytext) and `docs/tutorial.ipynb`
# (executed); a test checks that they hold the same cells and runs the notebook.

# %%
import pandas as pd

import simsched

SCENARIO = "course/philly"  # a shipped example, by name; a path to a TOML file works the same
JOBS = 600

# %% [markdown]
# ## 1. Run a scenario
#
# `simsched.run` returns a `Result`. As the last line of a cell it shows the scenario, the
# scheduler, the seed and the metric table (the table `simsched SCENARIO` prints).

# %%
result = simsched.run(SCENARIO, jobs_limit=JOBS, seed=1)
result

# %% [markdown]
# The numbers are in `result.summary`; its provenance (seed, scheduler, overrides,
# versions) travels with them.

# %%
result.summary["avg_jct"], result.summary["utilization"], result.summary["overrides"]

# %% [markdown]
# Scenario keys can be changed for one run with `overrides`: dotted keys, checked exactly
# like `simsched ... --set KEY=VALUE` (a typo is one clear error, not a silent default).
# Here the same jobs without backfilling, so a job that does not fit holds up every job
# behind it: the mean wait, in seconds, without and with backfilling:

# %%
strict = simsched.run(SCENARIO, jobs_limit=JOBS, seed=1, overrides={"scheduler.backfill": False})
strict.summary["avg_wait"], result.summary["avg_wait"]

# %% [markdown]
# ## 2. Look at the jobs
#
# `result.jobs` is one row per job (the columns of `jobs.csv`, docs/outputs.md): submit,
# start and end times, wait and JCT in seconds, the GPU type the job ran on, its size.

# %%
jobs = result.jobs
jobs[["job_id", "submit", "start", "end", "wait", "jct", "gpus", "gpu_type", "status"]].head()

# %% [markdown]
# Plain pandas from here. Who waits? The mean wait by job size:

# %%
sizes = pd.cut(jobs["gpus"], [0, 1, 8, float("inf")], labels=["<= 1 GPU", "2-8 GPUs", "> 8 GPUs"])
jobs.groupby(sizes, observed=True)["wait"].agg(["count", "mean", "median"]).round(0)

# %% [markdown]
# ## 3. Compare three schedulers, with confidence intervals
#
# `simsched.compare` runs every scheduler on the same jobs for each seed (here five seeds:
# five different draws of the workload) and ranks them per seed. Its table shows each
# metric's mean with a 95% confidence interval over the seeds.

# %%
cmp = simsched.compare(SCENARIO, ["fifo", "sjf", "hrrn"], seeds=5, jobs_limit=JOBS, workers=1)
cmp

# %% [markdown]
# `cmp.summary` holds those numbers as a DataFrame (Student-t intervals over the five seeds),
# and `cmp.df` is the tidy table: one row per run and metric, ready for `pivot_table`,
# `groupby` or seaborn.

# %%
cmp.summary.query("metric == 'avg_jct'")[["scheduler", "mean", "ci_low", "ci_high", "n"]]

# %%
cmp.df.head()

# %%
cmp.df.pivot_table(index="scheduler", columns="metric", values="value")[["avg_jct", "avg_wait", "rank"]]

# %% [markdown]
# ## 4. Write a policy in the notebook
#
# A policy is a class with one method, `decide(view) -> Decision` (docs/assignment.md). The
# engine calls it whenever something changes, with a read-only view of the queue and the
# fleet, and applies the jobs it starts. This one starts the job with the smallest area
# (GPUs x duration) first, on the first nodes of one GPU type that have room, and lets
# smaller jobs pass one that does not fit (backfilling).

# %%
from simsched.policies import Decision, Start


class SmallestAreaFirst:
    """Smallest GPUs x duration first; first fit on one GPU type; skip what does not fit."""

    def decide(self, view):
        free = list(view.free)  # our copy of the free milli-GPUs per node
        starts = []
        for job in sorted(view.queue, key=lambda job: (job.gpus * job.duration, job.submit, job.index)):
            nodes = self.place(job, view, free)
            if nodes is not None:
                starts.append(Start(job.job_id, nodes))
        return Decision(starts=tuple(starts))

    def place(self, job, view, free):
        for option in job.options:  # where the job may run, fastest GPU type first
            taken = []
            for node in view.fleet.groups[option.cluster, option.gpu_type]:
                while free[node] >= option.per_worker and len(taken) < job.workers:
                    free[node] -= option.per_worker
                    taken.append(node)
            if len(taken) == job.workers:
                return tuple(taken)
            for node in taken:  # it did not fit on this type: give the GPUs back
                free[node] += option.per_worker
        return None


mine = simsched.run(SCENARIO, jobs_limit=JOBS, seed=1, scheduler=SmallestAreaFirst)
mine

# %% [markdown]
# To set it beside the comparison, run it on the same five seeds and put its mean and
# interval next to the others' (`simsched.runs.results.t_interval` is the interval the
# comparison uses). To rank it with `compare` itself, save the class to a file and name it
# `"my_policy.py:SmallestAreaFirst"`.

# %%
from simsched.runs.results import t_interval

seeds = sorted(cmp.runs["seed"].unique())
values = [simsched.run(SCENARIO, jobs_limit=JOBS, seed=int(seed), scheduler=SmallestAreaFirst).summary["avg_jct"]
          for seed in seeds]
low, high = t_interval(values)
table = cmp.summary.query("metric == 'avg_jct'")[["scheduler", "mean", "ci_low", "ci_high"]]
table = pd.concat([table, pd.DataFrame([{"scheduler": "SmallestAreaFirst", "mean": sum(values) / len(values),
                                         "ci_low": low, "ci_high": high}])], ignore_index=True)
table.sort_values("mean").round(0)

# %% [markdown]
# ## 5. Plot
#
# Every result draws its figures with `.plot(kind)`, which returns a matplotlib `Figure`
# (the same figures `simsched plot` saves). The JCT distribution of the first run:

# %%
result.plot("jct")

# %% [markdown]
# The queue over time, then how busy each GPU type was:

# %%
result.plot("queue")

# %%
result.plot("utilisation")

# %% [markdown]
# The comparison: each scheduler's rank for every seed (1 = best), and one metric over the seeds.

# %%
cmp.plot("ranks")

# %%
cmp.plot("metric", metric="avg_jct")

# %% [markdown]
# Any figure can be changed or saved like another matplotlib figure, and the table above
# plots with pandas: the four policies' mean JCT with their 95% intervals.

# %%
ordered = table.sort_values("mean")
ax = ordered.plot.barh(x="scheduler", y="mean", legend=False, color="tab:blue",
                       xerr=[ordered["mean"] - ordered["ci_low"], ordered["ci_high"] - ordered["mean"]])
ax.set_xlabel("mean JCT (s), 95% CI over 5 seeds")
ax.set_ylabel("")
ax.set_title(f"{SCENARIO}, first {JOBS} jobs");

# %% [markdown]
# ## Where next
#
# - `simsched.compare(...).write("out")` writes what `simsched compare --out out` writes, and
#   `simsched plot out --report` makes the self-contained HTML report of it.
# - `simsched.run_experiment(spec, out)` runs a grid of scenarios, schedulers and seeds with
#   bootstrap statistics (docs/experiment.md); `simsched.load_experiment(out)` reads it back.
# - `result.write("out", format="parquet")` keeps large tables small (docs/outputs.md).
