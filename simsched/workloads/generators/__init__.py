"""Seeded workload generators (SPEC §5); importing this package registers them all."""

from simsched.workloads.generators import pai, paper, philly, venus

__all__ = ["pai", "paper", "philly", "venus"]
