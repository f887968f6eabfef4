"""Seeded workload generators (SPEC §5); importing this package registers them all."""

from simsched.workloads.generators import helios, pai, paper, philly, venus

__all__ = ["helios", "pai", "paper", "philly", "venus"]
