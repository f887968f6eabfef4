"""How to install an optional extra, in the form that fits how this simsched was installed.

A source checkout (an editable install, or the checkout on ``PYTHONPATH``) installs
extras with ``pip install -e '.[plots]'``; a wheel from an index with
``pip install 'simsched[plots]'``. Every hint simsched prints comes from
:func:`install_hint`, so none names the wrong form.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

#: the simsched package folder (this file is simsched/core/extras.py)
PACKAGE = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def from_checkout() -> bool:
    """Whether simsched runs from a source checkout: the package folder's parent holds the
    checkout's setup.cfg, or the installed distribution's ``direct_url.json`` says editable."""
    if (PACKAGE.parent / "setup.cfg").is_file():
        return True
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        text = distribution("simsched").read_text("direct_url.json")
    except (ImportError, PackageNotFoundError, OSError):
        return False
    if not text:
        return False
    try:
        info = json.loads(text)
    except ValueError:
        return False
    return isinstance(info, dict) and isinstance(info.get("dir_info"), dict) and \
        bool(info["dir_info"].get("editable"))


def install_hint(extra: str = "") -> str:
    """The pip command that installs simsched's optional ``extra`` ("" = simsched itself):
    ``pip install -e '.[plots]'`` in a checkout, ``pip install 'simsched[plots]'`` otherwise."""
    if from_checkout():
        return f"pip install -e '.[{extra}]'" if extra else "pip install -e ."
    return f"pip install 'simsched[{extra}]'" if extra else "pip install simsched"
