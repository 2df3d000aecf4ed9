"""The committed generated code is exactly what ``make proto`` makes, and the protos lint clean.

A drift between proto/cardgames/v1/*.proto and engine_service/transport/generated means a
client built from the .proto files would speak another API than the server: regenerate with
``make proto`` and commit.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

from engine_service.transport import codegen

REPO = codegen.REPO


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    codegen.generate(out)
    fresh = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in codegen.GENERATED.iterdir() if p.suffix in (".py", ".pyi"))
    assert fresh == committed, "generated file set differs: run `make proto` and commit"
    differing = [name for name in fresh
                 if not filecmp.cmp(out / name, codegen.GENERATED / name, shallow=False)]
    assert differing == [], f"stale generated code {differing}: run `make proto` and commit"


def test_generated_package_imports_from_anywhere(tmp_path: Path) -> None:
    """The imports are relative: a copy of the package under another name still imports."""
    pkg = tmp_path / "elsewhere_api"
    shutil.copytree(codegen.GENERATED, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import elsewhere_api.card_games_pb2_grpc as g, elsewhere_api.admin_pb2_grpc as a;"
            "print(g.CardGamesServiceStub.__name__, a.AdminServiceStub.__name__)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CardGamesServiceStub", "AdminServiceStub"]


def _buf() -> str:
    exe = Path(sys.executable).with_name("buf")
    found = str(exe) if exe.exists() else shutil.which("buf")
    assert found, "buf is not installed: it comes with the dev extra (pip install -e '.[dev]')"
    return found


def test_buf_lint_passes() -> None:
    done = subprocess.run([_buf(), "lint"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_buf_lint_catches_an_undocumented_field(tmp_path: Path) -> None:
    """The lint configuration really checks something: a field without a comment fails."""
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    target = tmp_path / "proto" / "cardgames" / "v1" / "admin.proto"
    target.write_text(target.read_text().replace(
        "  // The card-transcript/1 document as JSON text (decks included: admin only).\n", ""))
    done = subprocess.run([_buf(), "lint"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "COMMENT_FIELD" in done.stdout + done.stderr or "comment" in (done.stdout + done.stderr).lower()


def test_protos_are_buf_formatted() -> None:
    done = subprocess.run([_buf(), "format", "--diff", "--exit-code"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, "run `buf format -w`:\n" + done.stdout + done.stderr


BASELINE = REPO / "proto" / "published" / "cardgames_v1.json"


def _breaking(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_buf(), "breaking", "--against", str(BASELINE)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_api_changes_since_the_published_baseline_are_additive() -> None:
    """docs/api.md promises that changes within v1 are additive only: ``buf breaking``
    (WIRE_JSON, buf.yaml) holds the protos to the API as published (``make api-baseline``), so
    a renumbered, retyped or removed field, message, enum value or method fails here before a
    client built from the old .proto files meets it."""
    done = _breaking(REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_breaking_check_refuses_a_break_and_lets_an_addition_through(tmp_path: Path) -> None:
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    cards = tmp_path / "proto" / "cardgames" / "v1" / "cards.proto"
    original = cards.read_text()
    assert "  SUIT_NO_TRUMP = 5;\n" in original
    cards.write_text(original.replace("  SUIT_NO_TRUMP = 5;\n", "  SUIT_NO_TRUMP = 5;\n  // Added.\n  SUIT_ADDED = 6;\n"))
    added = _breaking(tmp_path)
    assert added.returncode == 0, added.stdout + added.stderr
    cards.write_text(original.replace("  SUIT_NO_TRUMP = 5;\n", "  SUIT_NO_TRUMP = 7;\n"))
    renumbered = _breaking(tmp_path)
    assert renumbered.returncode != 0
    assert "cards.proto" in renumbered.stdout + renumbered.stderr


def test_the_go_command_of_docs_api_md_gives_every_proto_file_an_import_path() -> None:
    """docs/api.md's protoc command for Go hands protoc-gen-go and protoc-gen-go-grpc each
    .proto file's Go import path (an ``M`` option), since the protos set no ``go_package``:
    without either, protoc-gen-go stops with 'unable to determine Go import path', which the
    command the page showed did. The snippet runs as written, ``protoc`` replaced by a shell
    function that prints its arguments."""
    text = (REPO / "docs" / "api.md").read_text()
    snippet = text.split("for example Go", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(["bash", "-c", 'protoc() { printf "%s\\n" "$@"; }\n' + snippet],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    args = done.stdout.splitlines()
    options = {plugin: ",".join(a.split("=", 1)[1] for a in args if a.startswith(f"--{plugin}_opt="))
               for plugin in ("go", "go-grpc")}
    for proto in codegen.proto_files():
        if "option go_package" in proto.read_text():
            continue
        name = proto.relative_to(codegen.PROTO_ROOT).as_posix()
        for plugin, given in options.items():
            assert f"M{name}=" in given, f"--{plugin}_opt gives no import path for {name}: {given!r}"
