"""The Python processes the tests start keep their compiled modules where the environment turns
bytecode off (tests/conftest.py, share_bytecode): not in the source tree, and not compiled
again by the next process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import share_bytecode

ROOT = Path(__file__).resolve().parent.parent


def _compiled_where(module: str) -> str:
    """The bytecode file a child of the tests (the tests' environment) reads ``module`` from
    ("" when it has none)."""
    probe = (f"import importlib.util, os, {module} as m; "
             "c = importlib.util.cache_from_source(m.__file__); print(c if os.path.exists(c) else '')")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60).stdout.strip()


def test_a_child_of_the_tests_finds_the_projects_modules_compiled_outside_the_source_tree():
    """A second process reads the module the first one compiled: with bytecode off and no
    shared cache it had none and compiled the source again at every start; a cache in the
    source tree (``__pycache__``) is not where it is kept."""
    _compiled_where("engine_service.bounded_read")
    cached = _compiled_where("engine_service.bounded_read")
    assert cached, "no bytecode for engine_service.bounded_read: each child compiles it again"
    assert not Path(cached).is_relative_to(ROOT) or not os.environ.get("PYTHONPYCACHEPREFIX"), cached


def test_bytecode_is_shared_only_where_the_environment_turns_it_off(tmp_path, monkeypatch):
    """A cache of the session's own replaces ``PYTHONDONTWRITEBYTECODE``; an environment that
    writes bytecode, or that names a cache already (an xdist worker, which inherits the
    session's), is left as it is."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    off = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    cache = share_bytecode(off)
    assert cache is not None and Path(cache).is_dir() and Path(cache).parent == tmp_path
    assert off == {"PYTHONPYCACHEPREFIX": cache, "PATH": "/bin"}
    for environ in ({"PATH": "/bin"}, {"PYTHONDONTWRITEBYTECODE": "", "PATH": "/bin"},
                    {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": cache}):
        before = dict(environ)
        assert share_bytecode(environ) is None and environ == before
