"""The ``simsched`` console script is the same program as ``python -m simsched``."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_setup_cfg_declares_the_console_script() -> None:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    scripts = config["options.entry_points"]["console_scripts"].strip().splitlines()
    assert "simsched = simsched.cli.console:entry" in [line.strip() for line in scripts]


def test_the_console_entry_answers_as_python_dash_m_does(tmp_path: Path) -> None:
    as_module = subprocess.run([sys.executable, "-m", "simsched", "validate", "nope.toml"], capture_output=True,
                               text=True, env=_env(), cwd=tmp_path)
    as_script = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['simsched', 'validate', 'nope.toml']; "
                                "from simsched.cli.console import entry; entry()"],
                               capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert as_module.returncode == as_script.returncode == 2
    assert as_module.stderr == as_script.stderr and "nope.toml" in as_script.stderr


def test_the_installed_script_runs_when_installed(tmp_path: Path) -> None:
    script = shutil.which("simsched")
    if script is None:  # a checkout used through PYTHONPATH, not installed: nothing on PATH to run
        import pytest

        pytest.skip("the simsched script is not on PATH (pip install -e . puts it there)")
    done = subprocess.run([script, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: simsched ")  # the program as it was started


def _start_with_a_broken_import(signal_first: bool) -> subprocess.CompletedProcess:
    """``entry()`` when importing the CLI fails (as numpy's C extension did in CI when SIGTERM came
    while it loaded), after a start-up signal was recorded or with none."""
    code = ("import sys\n"
            "from simsched.core import interrupts\n"
            f"{'interrupts._state.update(received=15, early=15)' if signal_first else ''}\n"
            "sys.modules['simsched.cli.main'] = None  # importing it raises ImportError\n"
            "from simsched.cli.console import entry\n"
            "entry()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_an_import_broken_by_a_start_up_signal_ends_as_that_signal() -> None:
    done = _start_with_a_broken_import(signal_first=True)
    assert done.returncode == 143, done.stderr
    assert done.stderr.strip() == ("terminated: stopped while starting or ending; outputs already written "
                                   "are complete")


def test_an_import_broken_without_a_signal_is_still_an_error() -> None:
    done = _start_with_a_broken_import(signal_first=False)
    assert done.returncode == 1
    assert "import of simsched.cli.main halted" in done.stderr  # the error itself, with its traceback
