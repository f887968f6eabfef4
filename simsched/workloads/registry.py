"""Name -> reader / generator / cluster builder registries (STYLE rule 6).

A reader is ``fn(path, params, ctx) -> DataFrame`` (canonical table, see
:mod:`simsched.workloads.table`); a generator is ``fn(params, rng, fleet) ->
DataFrame``; a cluster builder is ``fn(path, params, ctx) -> list[ClusterSpec]``.
Each reads its own options through :class:`Params`, which validates type and
choices and names the offending key (``workload.vcs``) and file in errors.
Every option a function does not read is reported as unknown by
:meth:`Params.finish`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from simsched.core.errors import InputError
from simsched.core.params import Params  # noqa: F401  (re-exported: readers and generators import it from here)
from simsched.workloads.table import SkipReport

READERS: dict[str, Callable] = {}
GENERATORS: dict[str, Callable] = {}
CLUSTER_BUILDERS: dict[str, Callable] = {}

def reader(name: str) -> Callable:
    """Register a trace reader under ``workload.source = name``."""

    def deco(fn: Callable) -> Callable:
        READERS[name] = fn
        return fn

    return deco


def generator(name: str) -> Callable:
    """Register a seeded generator under ``workload.generator = name``."""

    def deco(fn: Callable) -> Callable:
        GENERATORS[name] = fn
        return fn

    return deco


def cluster_builder(name: str) -> Callable:
    """Register a machine-table reader under ``[[cluster]] from = name``."""

    def deco(fn: Callable) -> Callable:
        CLUSTER_BUILDERS[name] = fn
        return fn

    return deco


@dataclass
class ReadContext:
    """What a reader needs besides its options: strictness and the skip counter."""

    strict: bool = False
    report: SkipReport = field(default_factory=SkipReport)
    #: the scenario's cluster names and GPU catalog, for row checks (None: not known, not checked)
    clusters: tuple[str, ...] | None = None
    gpu_types: tuple[str, ...] | None = None

    def bad_row(self, path: Path | str, line: int, reason: str, category: str | None = None) -> None:
        """Count a bad row (under ``category``, default the reason), or raise naming file and line
        when strict (SPEC §5)."""
        if self.strict:
            raise InputError(f"{path}:{line}: {reason} (strict = true; set strict = false to skip such rows)")
        self.report.skip(category or reason)
