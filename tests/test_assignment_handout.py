"""``simsched assignment DIR`` (issue 37): the handout (scenario, policy template, tasks 1 and 2's data, a README
with the exact commands) is written from a checkout and, from a wheel in a fresh environment outside any
checkout, the README's grading command exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.config.handout import FILES, files, folder

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"


def test_the_handout_is_every_file_of_docs_examples() -> None:
    """A file added to docs/examples/ is in the handout (and so in the wheel), or this fails."""
    assert folder().resolve() == EXAMPLES.resolve()
    present = sorted(p.name for p in EXAMPLES.iterdir() if p.is_file() and p.suffix != ".pyc")
    assert sorted(FILES) == present
    assert [p.name for p in files()] == list(FILES)


def test_assignment_writes_the_handout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "hw"
    assert main(["assignment", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(FILES)
    for name in FILES:
        assert (target / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
    err = capsys.readouterr().err
    assert f"wrote {target}/" in err and "README.md" in err


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    (tmp_path / "hw").mkdir()
    assert main(["assignment", str(tmp_path / "hw")]) == 0
    assert len(list((tmp_path / "hw").iterdir())) == len(FILES)


@pytest.mark.parametrize(("make", "message"), [
    ("nonempty", "is not empty; give a new or empty folder (nothing is overwritten)"),
    ("file", "exists and is not a folder"),
    ("noparent", "does not exist"),
])
def test_refusals_are_one_line_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 make: str, message: str) -> None:
    target = tmp_path / "hw"
    if make == "nonempty":
        target.mkdir()
        (target / "mine.py").write_text("keep me", encoding="utf-8")
    elif make == "file":
        target.write_text("keep me", encoding="utf-8")
    else:
        target = tmp_path / "missing" / "hw"
    assert main(["assignment", str(target)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    if make == "nonempty":
        assert [p.name for p in target.iterdir()] == ["mine.py"]
    elif make == "file":
        assert target.read_text(encoding="utf-8") == "keep me"
    else:
        assert not target.parent.exists()


def test_the_handout_names_no_checkout_path() -> None:
    """The handout's files name each other by bare file names (they sit in one folder), never by a checkout
    path such as docs/examples/my_policy.py."""
    for name in FILES:
        text = (EXAMPLES / name).read_text(encoding="utf-8")
        assert not re.search(r"docs/examples/\w", text), name
    scenario = (EXAMPLES / "compare_mine.toml").read_text(encoding="utf-8")
    assert re.search(r'^policy = "my_policy\.py:MyPolicy"', scenario, re.M)
    for task in ("task1", "task2"):
        assert f'path = "{task}.csv"' in (EXAMPLES / f"{task}.toml").read_text(encoding="utf-8")


def _grading_command() -> list[str]:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^python -m simsched (compare .*--keep-going.*)$", readme, re.M)
    assert len(found) == 1, found
    return found[0].split()


@pytest.mark.slow
def test_from_a_wheel_in_a_fresh_venv_outside_the_checkout(tmp_path: Path) -> None:
    """``pip wheel --no-deps .``, installed into a new venv (its dependencies taken from this environment's
    site-packages by a .pth line, so no network is needed; simsched itself only from the wheel), then in a
    folder outside the checkout: ``simsched assignment hw/ && cd hw && <the README's grading command>``."""
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("simsched-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              "--force-reinstall", str(wheel)], capture_output=True, text=True, timeout=900,
                             env=environ)
    if install.returncode != 0 and "no such option: --python" in install.stderr:
        pytest.skip("this pip cannot install into another environment (--python needs pip 22.3)")
    assert install.returncode == 0, install.stderr
    # then the dependencies from here (appended after the venv's own site-packages: the wheel's simsched wins;
    # written after the install, so that pip does not see this environment's simsched as installed already)
    Path(purelib, "deps_from_test.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    environ["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{environ.get('PATH', '')}"
    where = subprocess.run([str(python), "-c", "import simsched; print(simsched.__file__)"], cwd=outside,
                           capture_output=True, text=True, env=environ)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(purelib), where.stdout  # the wheel's copy, not the checkout
    written = subprocess.run([str(env_dir / "bin" / "simsched"), "assignment", "hw/"], cwd=outside,
                             capture_output=True, text=True, env=environ, timeout=300)
    assert written.returncode == 0, written.stderr
    hw = outside / "hw"
    for name in FILES:
        assert (hw / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
    graded = subprocess.run([str(python), "-m", "simsched", *_grading_command()], cwd=hw, capture_output=True,
                            text=True, env=environ, timeout=3600)
    assert graded.returncode == 0, graded.stderr  # 4 only when some run failed; the template fails none
    assert "my_policy:MyPolicy" in graded.stdout and (hw / "grades" / "compare.csv").is_file()
    assert str(REPO) not in (hw / "grades" / "compare.csv").read_text(encoding="utf-8")
