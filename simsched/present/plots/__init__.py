"""Pictures of runs, comparisons, GP learning and experiments, and the self-contained HTML report.

matplotlib is an optional dependency (the ``plots`` extra): it is imported only
inside the functions that draw, so the core stays importable and fast without
it. :func:`pyplot` gives the non-interactive backend, or raises a one-line
:class:`~simsched.core.errors.InputError` naming the extra to install.

Every figure function takes plain data frames (as the output files hold them)
and returns a matplotlib ``Figure``; the data it draws stays readable from the
figure's artists, which the tests compare with values recomputed from the
output files.
"""

from __future__ import annotations

from typing import Any

from simsched.core.errors import InputError
from simsched.core.extras import install_hint

INSTALL_HINT = install_hint("plots")


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend; a clear error when matplotlib is missing.

    In a Jupyter kernel the kernel's own backend (inline) is kept, so the notebook API's figures
    show in the notebook (:mod:`simsched.present.notebook`)."""
    import sys

    try:
        import matplotlib
    except ImportError:
        raise InputError(f"plots need matplotlib, which is not installed: {INSTALL_HINT}") from None
    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def require() -> None:
    """Fail early (before any simulation) when plots are asked for but matplotlib is missing."""
    pyplot()
