"""Build hook: the wheel carries the shipped example scenarios and workloads, and the assignment's
handout (docs/examples/), as package data.

The checkout's ``scenarios/`` and ``workloads/`` stay the only source; the build copies them into
``simsched/examples/`` of the wheel (simsched/config/examples.py finds them there). Everything else is in
setup.cfg.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SHIPPED = ("scenarios", "workloads")
ASSIGNMENT = "docs/examples"  # the assignment's handout (simsched/config/handout.py), to examples/assignment/


class BuildWithExamples(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "simsched" / "examples"
        for folder in SHIPPED:
            if (HERE / folder).is_dir():
                shutil.copytree(HERE / folder, target / folder, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_tmp_*"))
        if (HERE / ASSIGNMENT).is_dir():
            shutil.copytree(HERE / ASSIGNMENT, target / "assignment", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithExamples})
