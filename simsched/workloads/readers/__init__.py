"""Trace readers, one file per trace; importing this package registers them all (SPEC §5)."""

from simsched.workloads.readers import helios, itp, openb, pai, philly

__all__ = ["helios", "itp", "openb", "pai", "philly"]
