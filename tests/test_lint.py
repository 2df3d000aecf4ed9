"""Every Python file of the repository passes ruff's pyflakes checks (undefined names, unused
imports and variables, redefinitions, syntax errors) and has no bare expression statement or
comparison left where an ``assert`` was meant: a test that compares without asserting checks
nothing. The selection is ``[tool.ruff.lint]`` in pyproject.toml; ruff comes with the dev extra.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> str:
    exe = Path(sys.executable).with_name("ruff")
    found = str(exe) if exe.exists() else shutil.which("ruff")
    assert found, "ruff is not installed: it comes with the dev extra (pip install -e '.[dev]')"
    return found


def _check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_ruff(), "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=REPO, input=stdin, capture_output=True, text=True, timeout=120)


def test_the_python_sources_pass_the_lint() -> None:
    done = _check(".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_lint_checks_what_it_says() -> None:
    """The configuration really selects the checks: each planted fault is reported, under a
    test's name (where redefining an imported fixture is allowed) as elsewhere."""
    source = ("import os\n"
              "def test_x(value):\n"
              "    unused = 1\n"
              "    value == 2\n"
              "    value.count\n"
              "    return undefined_name\n")
    for name in ("tests/test_planted.py", "engine_service/planted.py"):
        done = _check("--stdin-filename", name, "-", stdin=source)
        assert done.returncode == 1, done.stdout + done.stderr
        for code in ("F401", "F841", "B015", "B018", "F821"):
            assert code in done.stdout, (name, code, done.stdout)
