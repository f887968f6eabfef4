"""Make the docs site's figure gallery: docs/img/gallery/*.png and docs/gallery.md.

    python tools/gen_gallery.py [--workers 2]

Runs small versions of the commands whose figures report.html shows (a run, a compare,
a learn) with ``--plots``, redraws the committed fig4 experiment store with
``simsched plot``, and copies the PNGs here with the page that shows them. The figures are
committed (the site build does not simulate); rerun this after a change to simsched/present/plots/.
About a minute of CPU.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img" / "gallery"
PAGE = ROOT / "docs" / "gallery.md"

#: (group, title, command (run in the checkout, OUT = a scratch folder), the folder its plots land in,
#:  [(figure, caption)])
GROUPS = [
    ("run", "A run",
     "simsched scenarios/philly_hetero.toml --jobs 2000 --out OUT/run --quiet --plots", "run/plots",
     [("cdf", "CDFs of JCT and wait over completed jobs (log x; the legend gives the share of jobs at 0 s)."),
      ("queue", "Queued and running jobs after every change."),
      ("utilization", "Busy GPUs / GPUs per cluster and GPU type; the fleet dashed."),
      ("gantt", "One lane per node (height = its GPUs), one bar per worker and run spell, coloured by job."),
      ("wait_by_weight", "Mean queue time per weight class with a 95% CI, and the 90th percentile.")]),
    ("compare", "A comparison",
     "simsched compare scenarios/philly_hetero.toml --schedulers fifo,sjf,tiresias --seeds 2 --jobs 1000 "
     "--out OUT/cmp --keep-jobs --quiet --plots", "cmp/plots",
     [("metrics", "One panel per metric: a box per scheduler over the cases, one dot per (instance, seed)."),
      ("jct_cdf", "The JCT CDF of every scheduler, completed jobs of all its runs pooled."),
      ("ranks", "Each scheduler's rank per case (1 = best, on avg_jct).")]),
    ("learn", "Learning a priority function",
     "simsched learn scenarios/paper_multicluster.toml --out OUT/learned.json --population 8 --generations 3 "
     "--train 4 --validation 2 --alpha 2 --quiet --plots", "learned_plots/plots",
     [("fitness", "Best and median fitness of the population per generation."),
      ("tree", "The learned priority function, drawn from its graph; its infix form is the title.")]),
    ("experiment", "An experiment (the paper's Fig. 4, committed results)",
     "simsched plot OUT/experiment --format png  # a copy of experiments/paper/results/STORE",
     "experiment/plots",
     [("ranks", "Mean rank per scheduler over every case with a 95% bootstrap CI, best first.")]),
]


#: the committed store the gallery redraws: Fig. 4's complete medium run
GALLERY_STORE = "fig4-medium-event"


def _store() -> Path:
    """The committed experiment store the gallery redraws: :data:`GALLERY_STORE` (another store under
    experiments/paper/results/ only when it is absent)."""
    stores = sorted((ROOT / "experiments" / "paper" / "results").glob("*/results.csv"),
                    key=lambda path: (path.parent.name != GALLERY_STORE, path.parent.name))
    if not stores:
        raise SystemExit("no committed experiment store under experiments/paper/results/")
    return stores[0].parent


def _run(command: str, out: Path, workers: int) -> None:
    words = command.split("  #")[0].replace("OUT", str(out)).split()[1:]  # without "simsched"
    if words[0] in ("compare", "learn"):
        words += ["--workers", str(workers)]
    print("$ simsched", " ".join(words), flush=True)
    subprocess.run([sys.executable, "-m", "simsched", *words], cwd=ROOT, check=True)


def page() -> str:
    lines = ["# Figure gallery", "",
             "The figures simsched draws (`--plots`, and inline in `report.html`), made by",
             "`python tools/gen_gallery.py` from the small commands shown under each heading",
             "(OUT is a scratch folder). Every figure is described in [Plots and report](plots.md).", ""]
    for group, title, command, _, figures in GROUPS:
        lines += [f"## {title}", "", "```bash", command.replace("STORE", _store().name), "```", ""]
        for name, caption in figures:
            lines += [f"![{group} {name}](img/gallery/{group}_{name}.png)", "", f"`{name}`: {caption}", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        store = _store()
        shutil.copytree(store, out / "experiment", ignore=shutil.ignore_patterns("plots"))
        for _, _, command, _, _ in GROUPS:
            _run(command, out, args.workers)
        if IMG.exists():
            shutil.rmtree(IMG)
        IMG.mkdir(parents=True)
        for group, _, _, folder, figures in GROUPS:
            for name, _ in figures:
                shutil.copy(out / folder / f"{name}.png", IMG / f"{group}_{name}.png")
    PAGE.write_text(page(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} and {len(list(IMG.iterdir()))} figures in {IMG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
