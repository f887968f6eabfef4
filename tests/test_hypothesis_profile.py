"""No test depends on the machine's speed (issue 39, item 21): the hypothesis profile registered in
tests/conftest.py has no deadline, no test file sets one, and every @settings sits on a test."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent


def test_the_loaded_profile_has_no_deadline() -> None:
    assert settings().deadline is None


def test_ci_draws_the_same_examples_every_run() -> None:
    """.ci/run sets SIMSCHED_HYPOTHESIS=ci: a fixed seed per test, no example database, no deadline."""
    ci = settings.get_profile("simsched-ci")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    if os.environ.get("SIMSCHED_HYPOTHESIS") == "ci":
        assert settings().derandomize


def _settings_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "settings":
                    yield node, decorator


def test_no_test_sets_a_deadline_and_every_settings_decorates_a_hypothesis_test() -> None:
    wrong = []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function, call in _settings_calls(tree):
            for keyword in call.keywords:
                if keyword.arg == "deadline" and not (isinstance(keyword.value, ast.Constant)
                                                      and keyword.value.value is None):
                    wrong.append(f"{path.name}:{call.lineno}: deadline other than None")
            given = any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "given"
                        for d in function.decorator_list)
            if not given:
                wrong.append(f"{path.name}:{call.lineno}: @settings on {function.name}, which has no @given")
    assert not wrong, wrong
