"""Ranking runs within a case so that leaving work undone never pays (docs/engine.md "Every job counts").

``compare`` and ``experiment`` both rank schedulers within each case (one
instance and seed) with :func:`case_ranks`. The order is lexicographic:

1. runs that finished every feasible job first, runs with unfinished jobs after
   all of them, whatever the metric;
2. among runs with unfinished jobs, fewer unfinished jobs first;
3. then the metric (lower or higher better); a metric that is n/a (NaN) last.

Ties on all three share the mean of their ranks; rank 1 is best. Without an
``unfinished`` column (e.g. rows recorded by an older simsched) only the metric
counts.

A run that failed (``compare --keep-going``: the policy raised, timed out, died) has no row, so no
case rank. Over the cases, :func:`standing` places every scheduler that completed all cases before
every one that failed on some, whatever their means (see the rule below).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

UNFINISHED = "unfinished"


def case_ranks(frame: pd.DataFrame, by: Sequence[str], metric: str, higher_is_better: bool) -> pd.Series:
    """Each row's rank within its group of ``by`` columns (see the module docstring)."""
    if len(frame) == 0:
        return pd.Series([], index=frame.index, dtype=float)
    value = pd.to_numeric(frame[metric], errors="coerce").astype(float)
    value_rank = value.rank(method="dense", ascending=not higher_is_better, na_option="bottom")
    if UNFINISHED in frame.columns:
        left = pd.to_numeric(frame[UNFINISHED], errors="coerce").fillna(0.0).astype(float)
    else:
        left = pd.Series(0.0, index=frame.index)
    left_rank = left.rank(method="dense")  # 1 = fewest unfinished (0 when any run finished everything)
    tier = (left > 0).astype(float)
    # dense ranks are integers <= len(frame): the composite key is exact in float64
    base = float(len(frame) + 1)
    key = (tier * base + left_rank) * base + value_rank
    return key.groupby([frame[c] for c in by], sort=False, dropna=False).rank(method="average")


def incomplete(frame: pd.DataFrame) -> pd.Series:
    """True for the rows (runs) that left feasible jobs unfinished."""
    if UNFINISHED not in frame.columns:
        return pd.Series(False, index=frame.index)
    return pd.to_numeric(frame[UNFINISHED], errors="coerce").fillna(0.0) > 0


def incomplete_counts(frame: pd.DataFrame, column: str = "scheduler") -> dict[str, int]:
    """Per scheduler, how many of its runs left jobs unfinished (only schedulers with at least one)."""
    flags = incomplete(frame)
    counts = flags.groupby(frame[column], sort=False).sum()
    return {str(name): int(n) for name, n in counts.items() if n > 0}


def mark(name: str, marked: bool) -> str:
    """A scheduler's name in a table, with the unfinished-jobs mark when ``marked``."""
    return f"{name} †" if marked else name


NOTE = ("† left feasible jobs unfinished (in {cases}): ranked after every run that finished all its "
        "feasible jobs; its means include the unfinished jobs censored at the end of the run")


def note(counts: dict[str, int], runs_per_scheduler: dict[str, int] | None = None) -> str:
    """The footnote explaining the mark, naming each marked scheduler and its cases."""
    parts = []
    for name, n in counts.items():
        total = (runs_per_scheduler or {}).get(name)
        parts.append(f"{name}: {n} of {total} runs" if total else f"{name}: {n} runs")
    return NOTE.format(cases="; ".join(parts))



# -- schedulers that failed on some cases (compare --keep-going) ------------------------------------------
#
# One rule for compare and experiment (docs/assignment.md "How failures are ranked"): a scheduler whose run
# failed on any case is placed after every scheduler that completed all the cases, whatever its mean; among
# those that failed, more cases completed first; then the mean rank over the cases it completed. A mean over
# fewer cases than the others is shown with its ``n``, never wins a "best", and a scheduler that failed
# every case is listed as "failed (k of k)".

def standing(completed: pd.Series, cases: int, mean_rank: pd.Series) -> pd.Series:
    """Each scheduler's place (1 = best; ties share the mean place), by the rule above.

    ``completed``: per scheduler, how many of the ``cases`` it completed (ran without failing);
    ``mean_rank``: its mean case rank over those (NaN when it completed none)."""
    if len(completed) == 0:
        return pd.Series([], dtype=float)
    mean_rank = mean_rank.reindex(completed.index)
    failed_any = (completed < cases).astype(float)
    fewer = (cases - completed).astype(float).rank(method="dense")  # 1 = most cases completed
    by_rank = mean_rank.rank(method="dense", na_option="bottom")
    base = float(len(completed) + 1)
    key = (failed_any * base + fewer) * base + by_rank  # integers <= len: exact in float64
    return key.rank(method="average")


def complete(completed: pd.Series, cases: int) -> pd.Series:
    """True for the schedulers that completed every case: only they can hold a "best"."""
    return completed >= cases


def failed_label(failed: int, cases: int) -> str:
    """The rank table's entry for a scheduler that completed no case."""
    return f"failed ({failed} of {cases})"


def with_n(text: str, n: int, most: int) -> str:
    """A mean's text, with its ``n`` when it is over fewer cases than the others' ``most``."""
    return f"{text} (n={n})" if n < most else text


FAILED_NOTE = ("failed runs ({who}): a scheduler that failed on any case is placed after every scheduler that "
               "completed all cases, then by cases completed; its means are over the cases it completed (n=) and "
               "win no best")


def failed_note(failed: dict[str, int], cases: int) -> str:
    """The note under a rank table that has failed runs: who failed how often, and the rule."""
    return FAILED_NOTE.format(who=", ".join(f"{name}: {n} of {cases}" for name, n in failed.items()))
