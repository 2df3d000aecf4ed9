"""The Go route of docs/api.md ("Generating stubs in another language"), built offline from
Debian's packages: the section's protoc command generates stubs that compile, and the example
client in clients/go (built by its build.sh from the same command) plays against a real
engine: it creates a Japanese Joker match with two open seats, joins both, watches, has an
illegal action, an action out of turn and a stale one refused with their google.rpc details
read, and submits a legal action that its watch stream reports.

The toolchain and libraries are Debian's (``make test`` installs them as root when ``go`` is missing: tests/system_tools.sh): Go's
module proxy is out of this project's reach, so the code builds in GOPATH mode against
/usr/share/gocode. A machine without them fails here, naming the packages.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from clients import cardgames_client as cg

from .conftest import run

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "clients" / "go"
API = (ROOT / "docs" / "api.md").read_text()
#: Where Debian's golang-*-dev packages install their sources (a GOPATH).
DEBIAN_GOCODE = Path("/usr/share/gocode")
#: The packages tests/system_tools.sh installs; golang-github-golang-protobuf-1-5-dev is named because apt
#: otherwise satisfies golang-google-grpc-dev with the 1.3 series, whose ptypes cannot unpack
#: the status details into the generated (APIv2) messages.
DEBIAN_PACKAGES = ("golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev "
                   "golang-google-genproto-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev")


def check_go_toolchain() -> None:
    """Fail, naming the Debian packages, unless the tools and libraries are installed."""
    missing = [tool for tool in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc") if not shutil.which(tool)]
    missing += [lib for lib in ("google.golang.org/grpc", "google.golang.org/protobuf",
                                "google.golang.org/genproto/googleapis/rpc/errdetails", "github.com/golang/protobuf")
                if not (DEBIAN_GOCODE / "src" / lib).is_dir()]
    assert not missing, f"missing {missing}: apt-get install --no-install-recommends {DEBIAN_PACKAGES}"
    # the 1.3 series has no google.golang.org/protobuf underneath: grpc's codec panics on the stubs
    golang_protobuf = (DEBIAN_GOCODE / "src" / "github.com" / "golang" / "protobuf" / "go.mod").read_text()
    assert "google.golang.org/protobuf" in golang_protobuf, \
        "github.com/golang/protobuf is the 1.3 series: apt-get install golang-github-golang-protobuf-1-5-dev"


def gopath_env(workspace: Path) -> dict[str, str]:
    """GOPATH mode with ``workspace`` first and Debian's sources after it, never the network."""
    return {**os.environ, "GO111MODULE": "off", "GOPATH": f"{workspace}{os.pathsep}{DEBIAN_GOCODE}",
            "GOFLAGS": "", "GOPROXY": "off"}


@pytest.fixture(scope="module")
def go_build() -> subprocess.CompletedProcess:
    """clients/go/build.sh test: the stubs generated, vetted, unit-tested, the client built.
    One build at a time: it regenerates clients/go/gen, which another xdist worker may be
    compiling."""
    check_go_toolchain()
    (GO_DIR / "build").mkdir(exist_ok=True)
    with open(GO_DIR / "build" / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(["sh", str(GO_DIR / "build.sh"), "test"], capture_output=True, text=True,
                                timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def go_client(go_build) -> str:
    return str(GO_DIR / "build" / "cardgames-go")


def test_go_client_builds_and_its_unit_tests_pass(go_build):
    """build.sh ran ``go test``: rpcerror_test.go reads every detail the engine sends (ErrorInfo,
    the generated View, RetryInfo, RequestInfo) from a status built with them."""
    assert re.search(r"^ok\s+example\.com/cardgames\b", go_build.stdout, re.MULTILINE), go_build.stdout
    generated = sorted(p.name for p in (GO_DIR / "gen" / "cardgames" / "v1").iterdir())
    protos = sorted(p.stem for p in (ROOT / "proto" / "cardgames" / "v1").glob("*.proto"))
    services = [stem for stem in protos if "\nservice " in (ROOT / "proto" / "cardgames" / "v1" / f"{stem}.proto")
                .read_text()]
    assert generated == sorted([f"{s}.pb.go" for s in protos] + [f"{s}_grpc.pb.go" for s in services])


def test_go_client_plays_against_a_real_engine(engine, go_client):
    result = subprocess.run([go_client, "--target", engine.target], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    steps = [json.loads(line) for line in result.stdout.splitlines()]
    assert [s["step"] for s in steps] == ["created", "joined", "joined", "snapshot", "refused", "refused",
                                          "submitted", "event", "refused"]
    created, joined_0, joined_1, snapshot, illegal, out_of_turn, submitted, event, stale = steps
    assert created["status"] == "MATCH_STATUS_WAITING"
    assert (joined_0["seat"], joined_1["seat"]) == (0, 1)  # docs/api.md: JoinMatch takes the first open seat
    actor = snapshot["seat"]
    # JJK-3.3: the declarer holds three cards and chooses among five trumps
    assert (snapshot["phase"], snapshot["seq"], snapshot["hand"], snapshot["legal"]) == ("trump_choice", 0, 3, 5)
    # an illegal action: the ErrorInfo's reason and metadata, and our x-request-id given back
    assert (illegal["code"], illegal["reason"], illegal["domain"]) == ("FailedPrecondition", "ILLEGAL_ACTION",
                                                                        "cardgames.v1")
    assert illegal["seat"] == actor and illegal["metadata"] == {"action": illegal["action"]}
    assert illegal["request_id"] == illegal["sent_request_id"] and len(illegal["request_id"]) == 32
    # the status message, as the README's example line shows it
    assert illegal["message"].startswith(f"{illegal['action']}: the declarer must first choose the trump: ")
    assert illegal["message"].endswith("(JJK-3.3)")
    assert (out_of_turn["seat"], out_of_turn["code"], out_of_turn["reason"]) == (1 - actor, "FailedPrecondition",
                                                                                  "NOT_YOUR_TURN")
    assert out_of_turn["metadata"] == {"to_act": str(actor)} and out_of_turn["request_id"]  # one the server made
    # the legal action, as the watch stream reports it
    assert submitted["seat"] == actor and submitted["seq"] == 1 and submitted["action"].startswith("trump:")
    assert event == {"step": "event", "kind": "EVENT_KIND_ACTION", "seq": 1, "seat": actor,
                     "action": submitted["action"], "by": "ACTOR_PLAYER"}
    # a stale decision: ABORTED with the caller's current View as a detail
    assert (stale["code"], stale["reason"]) == ("Aborted", "STALE_SEQUENCE")
    assert (stale["seat"], stale["action"]) == (actor, submitted["action"])  # JJK-2.5: the declarer leads next
    assert stale["metadata"] == {"expected_seq": "0", "seq": "1"} and stale["view_seq"] == 1

    async def summary():
        async with cg.connect(engine.target) as client:
            return await client.get_match(created["match_id"])

    match = run(summary())
    assert match.seq == 1 and match.status == cg.match_pb2.MATCH_STATUS_ACTIVE  # the refusals changed nothing


@pytest.mark.parametrize("argv, status, text", [
    (["--help"], 0, "-target host:port"),
    (["--bogus"], 2, "flag provided but not defined: -bogus"),
    # a stray argument is a usage error naming no value (it may be a secret), as the Python clients say it
    (["s3cret"], 2, "error: unrecognized arguments: (1 value not shown: it may hold a secret)\nUsage of"),
    (["s3cret", "--target", "h:1"], 2,
     "error: unrecognized arguments: --target (2 values not shown: they may hold a secret)\nUsage of"),
    (["--target", "127.0.0.1:1"], 1, "error: Unavailable"),  # nothing listens on port 1
    # a bad value is named by its flag, never shown: Go's flag package echoed a bad --timeout
    (["--timeout", "s3cret"], 2,
     "error: argument -timeout: not a duration such as 90s or 2m (the value is not shown)\nUsage of"),
    (["--timeout=-1s"], 2, "error: argument -timeout: must be a duration above 0 and at most 24h (the value is not shown)"),
    # the target is checked as the other clients check it: grpc-go dialled these as given
    (["--target", ""], 2, "error: argument -target: the target is empty (host:port, e.g. 127.0.0.1:50051)\nUsage of"),
    (["--target", "s3cret"], 2, "error: argument -target: the target is no host:port (host:port, e.g. "
                                "127.0.0.1:50051; the value is not shown)"),
    (["--target", "s3cret:"], 2, "error: argument -target: the target has no port after its ':'"),
    (["--target", "s3cret:http"], 2, "error: argument -target: the target has a port that is no number from 1 to 65535"),
    (["--target", "s3cret:65536"], 2, "error: argument -target: the target has a port that is no number from 1 to 65535"),
    (["---s3cret"], 2, "error: bad flag syntax: an argument begins with '---' or '-=' (not shown: it may hold a secret)"),
])
def test_go_client_command_line(go_client, argv, status, text):
    result = subprocess.run([go_client, *argv], capture_output=True, text=True, timeout=120)
    assert result.returncode == status and text in result.stderr, (result.returncode, result.stderr)
    assert "s3cret" not in result.stderr and "h:1" not in result.stderr


def _go_section_blocks() -> tuple[str, str]:
    """docs/api.md's protoc command for Go, and its Debian install and build commands."""
    gen = API[API.index("## Generating stubs in another language"):].split("\n### ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", gen, re.DOTALL)
    (generate,) = [b for b in blocks if "--go_out" in b]
    (build,) = [b for b in blocks if "GO111MODULE=off" in b]
    return generate, build


def test_docs_go_commands_generate_stubs_that_compile(go_build, tmp_path):
    """docs/api.md's protoc command for Go, run as written in a project whose import path is
    the one its PKG names, generates a package that ``go vet`` accepts and the section's
    ``go build`` line (GOPATH mode, ``$HOME/go`` then Debian's sources) builds into a program
    that uses what the section names: the client, a well-known type, the error details."""
    generate, build = _go_section_blocks()
    (import_path,) = re.findall(r'PKG="([^;"]+);cardgamesv1"', generate)
    package = import_path.removesuffix("/gen/cardgames/v1")
    project = tmp_path / "go" / "src" / package
    project.mkdir(parents=True)
    shutil.copytree(ROOT / "proto", project / "proto")
    done = subprocess.run(["sh", "-eu", "-c", generate], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (project / "gen" / "cardgames" / "v1" / "card_games_grpc.pb.go").exists()
    (project / "main.go").write_text(f"""package main

import (
\t"fmt"

\tcardgamesv1 "{import_path}"
\t"google.golang.org/genproto/googleapis/rpc/errdetails"
\t"google.golang.org/grpc"
\t"google.golang.org/grpc/status"
\t"google.golang.org/protobuf/types/known/durationpb"
)

func main() {{
\tconn, _ := grpc.Dial("127.0.0.1:1", grpc.WithInsecure())
\t_ = cardgamesv1.NewCardGamesServiceClient(conn)
\treq := &cardgamesv1.CreateMatchRequest{{Game: "japanese_joker", TurnTime: durationpb.New(30e9)}}
\tst, _ := status.New(5, "x").WithDetails(&errdetails.ErrorInfo{{Reason: "R"}}, &cardgamesv1.View{{Seq: 4}})
\tfmt.Println(req.GetTurnTime().AsDuration(), st.Details()[0].(*errdetails.ErrorInfo).Reason,
\t\tst.Details()[1].(*cardgamesv1.View).GetSeq())
}}
""")
    vet = subprocess.run(["go", "vet", f"{package}/..."], cwd=project, env=gopath_env(tmp_path / "go"),
                         capture_output=True, text=True, timeout=600)
    assert vet.returncode == 0, vet.stdout + vet.stderr
    go_line = build.strip().splitlines()[-1]
    assert go_line.startswith("GO111MODULE=off") and "apt-get" in build
    cache = subprocess.run(["go", "env", "GOCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "HOME": str(tmp_path), "GOCACHE": cache}  # the same build cache: no cold build
    done = subprocess.run(["sh", "-eu", "-c", go_line], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = subprocess.run([str(project / package.rsplit("/", 1)[1])], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == "30s R 4", ran.stdout + ran.stderr


def test_the_debian_packages_are_the_same_everywhere():
    """tests/system_tools.sh installs, and docs/api.md and clients/go/README.md tell readers to install, the
    packages this test needs: one list, golang-github-golang-protobuf-1-5-dev included."""
    tools = (ROOT / "tests" / "system_tools.sh").read_text()
    expected = set(DEBIAN_PACKAGES.split())
    assert set(" ".join(re.findall(r'cardgames_packages="\$cardgames_packages ([^"]+)"', tools)).split()) == expected
    for text in (API, (GO_DIR / "README.md").read_text()):
        (command,) = re.findall(r"apt-get install --no-install-recommends ((?:[\w.-]+ *(?:\\\n *)?)+)", text)
        assert set(command.replace("\\", " ").split()) == expected


def test_go_client_timeout_bounds_the_whole_run(go_client):
    """README "Run": ``--timeout`` is the time allowed for the whole run. Against a port that
    takes the connection but never answers (no HTTP/2), the run ends at it with exit status 1
    and DEADLINE_EXCEEDED, not at grpc-go's own 20 s connect timeout."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        started = time.monotonic()
        result = subprocess.run([go_client, "--target", f"127.0.0.1:{silent.getsockname()[1]}", "--timeout", "1s"],
                                capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
    assert result.returncode == 1 and result.stderr.startswith("error: DeadlineExceeded"), result.stderr
    assert 1 <= elapsed < 10, elapsed
