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

import pytest

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


def test_proto_files_are_the_apis_sorted() -> None:
    """codegen.proto_files: every .proto file of proto/cardgames/v1, sorted (the order protoc
    sees them in)."""
    files = codegen.proto_files()
    assert files == sorted(files)
    assert {p.name for p in files} == {p.name for p in (codegen.PROTO_ROOT / codegen.PROTO_PACKAGE).iterdir()
                                       if p.suffix == ".proto"}
    assert {"admin.proto", "card_games.proto", "cards.proto"} <= {p.name for p in files}


def test_proto_files_are_the_proto_files_alone(tmp_path: Path, monkeypatch) -> None:
    """codegen.proto_files: the API's .proto files, not what an editor or a patch left beside
    them (``cards.proto.orig``, ``cards.proto~``, a ``.protobuf`` dump), which protoc would be
    handed as .proto files."""
    root = tmp_path / "proto"
    shutil.copytree(codegen.PROTO_ROOT, root)
    package = root / codegen.PROTO_PACKAGE
    for leftover in ("cards.proto.orig", "cards.proto~", "api.protobuf", "README.md"):
        (package / leftover).write_text("not a proto\n")
    monkeypatch.setattr(codegen, "PROTO_ROOT", root)
    assert [p.name for p in codegen.proto_files()] == sorted(
        p.name for p in (codegen.REPO / "proto" / codegen.PROTO_PACKAGE).glob("*.proto"))


def test_generate_creates_or_empties_its_output_and_returns_its_files(tmp_path: Path) -> None:
    """codegen.generate writes the package into ``out``, "created or emptied": a directory
    whose parents do not exist yet is made, a file an earlier run (or anything else) left there
    is gone; it returns the files it wrote, the package's every file."""
    out = tmp_path / "deeper" / "still" / "generated"
    written = codegen.generate(out)
    assert sorted(written) == sorted(out.iterdir())
    assert {"__init__.py", "descriptor_set.py", "card_games_pb2.py", "card_games_pb2_grpc.py",
            "card_games_pb2.pyi"} <= {p.name for p in written}
    stale = out / "removed_pb2.py"
    stale.write_text("# a module of a .proto file since removed\n")
    (out / "__pycache__").mkdir()
    again = codegen.generate(out)
    assert not stale.exists() and not (out / "__pycache__").exists()
    assert [p.name for p in again] == [p.name for p in written]


def _broken_protos(tmp_path: Path) -> Path:
    root = tmp_path / "proto"
    shutil.copytree(codegen.PROTO_ROOT, root)
    cards = root / codegen.PROTO_PACKAGE / "cards.proto"
    cards.write_text(cards.read_text() + "\nmessage Broken { not a field }\n")
    return root


def test_a_failing_protoc_fails_generate_and_leaves_the_package_as_it_was(tmp_path: Path, monkeypatch,
                                                                           capfd) -> None:
    """A .proto file protoc refuses: generate raises (``make proto`` fails) before it empties
    ``out``, so the committed package is not wiped by a broken edit."""
    monkeypatch.setattr(codegen, "PROTO_ROOT", _broken_protos(tmp_path))
    out = tmp_path / "generated"
    out.mkdir()
    (out / "kept.py").write_text("kept = True\n")
    with pytest.raises(RuntimeError, match="protoc failed"):
        codegen.generate(out)
    assert [p.name for p in out.iterdir()] == ["kept.py"]
    assert "cards.proto" in capfd.readouterr().err  # protoc's own messages, "above"


def test_a_failing_descriptor_set_run_fails_generate(tmp_path: Path, monkeypatch) -> None:
    """The second protoc run (descriptor_set.py, with source info) is checked as the first is:
    its failure is protoc's RuntimeError, not a missing file further on."""
    from grpc_tools import protoc

    real = protoc.main
    monkeypatch.setattr(protoc, "main", lambda args: 1 if "--include_source_info" in args else real(args))
    with pytest.raises(RuntimeError, match="protoc failed"):
        codegen.generate(tmp_path / "generated")


def test_the_command_writes_where_out_says_and_by_default_the_committed_package(tmp_path: Path, monkeypatch,
                                                                                capsys) -> None:
    """``python -m engine_service.transport.codegen [--out DIR]`` (the module docstring, ``make
    proto``): ``--out`` names the package written, without it the committed one; it says how
    many files it wrote where, and exits 0."""
    out = tmp_path / "elsewhere" / "generated"
    assert codegen.main(["--out", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert capsys.readouterr().out == f"generated {len(files)} files in {out}\n"
    assert "descriptor_set.py" in files
    given = []
    monkeypatch.setattr(codegen, "generate", lambda path: given.append(path) or [path / "__init__.py"])
    assert codegen.main([]) == 0
    assert given == [codegen.GENERATED] and codegen.GENERATED == codegen.REPO / "engine_service" / "transport" / "generated"
    assert capsys.readouterr().out == f"generated 1 files in {codegen.GENERATED}\n"
