"""What the image's build stage does, without Docker: build the project's wheel, install it
into a fresh virtualenv from the package index, and run the image's own checks in it (the
build stage's import check, the HEALTHCHECK module, the entry point's --help)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile

from .promql import DEPLOY, ROOT


def test_wheel_installs_and_runs_like_the_image(tmp_path):
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w", str(wheels)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("engine_service/transport/generated/card_games_pb2.py", "engine_service/serve_cli.py",
                   "clients/health.py", "bot_plugins/__init__.py"):
        assert needed in names, f"the wheel lacks {needed}"
    assert not any(n.startswith("clients/node/") or n.startswith("tests/") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True,
                             timeout=600)
    assert install.returncode == 0, install.stderr
    # The build stage's own check, taken from the Dockerfile.
    (check,) = re.findall(r'python -c "([^"]+)"', (DEPLOY / "Dockerfile").read_text())
    for argv in ([str(python), "-c", check], [str(python), "-m", "clients.health", "--help"],
                 [str(python), "-m", "engine_service", "serve", "--help"]):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 0, f"{argv}: {result.stderr}"
    entry_points = subprocess.run([str(python), "-c", "from importlib.metadata import entry_points; "
                                   "[e.load() for e in entry_points(group='cardgames.bots')]; print('ok')"],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert entry_points.returncode == 0 and "ok" in entry_points.stdout, entry_points.stderr
