"""Seeded workload generators (SPEC §5); importing this package registers them all."""

from simsched.workloads.generators import gavel, helios, helios_demand, pai, paper, philly, venus

__all__ = ["gavel", "helios", "helios_demand", "pai", "paper", "philly", "venus"]
