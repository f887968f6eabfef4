"""Seeded workload generators (SPEC §5); importing this package registers them all."""

from simsched.workloads.generators import gavel, helios, pai, paper, philly, venus

__all__ = ["gavel", "helios", "pai", "paper", "philly", "venus"]
